"""site_scons/site_tools/arena_sconsign.py, the SCons-specific part of arena's tool: the Decider
that reuses a target only while its file is the recorded one, and the signature database whose
write fails with one line. Nothing in arena_tool/ imports SCons."""

from __future__ import annotations

import pickle
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from conftest import ROOT

sys.path.insert(0, str(ROOT / "site_scons" / "site_tools"))
import arena_sconsign as sig  # noqa: E402


def test_no_module_of_arena_tool_imports_scons() -> None:
    found = [f"{p.relative_to(ROOT)}:{n}" for p in sorted((ROOT / "arena_tool").rglob("*.py"))
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             if line.lstrip().startswith(("import SCons", "from SCons"))]
    assert not found


def test_as_recorded() -> None:
    """A target is reused only while its file is the recorded one: same stamp, or same content."""
    hashes = {"n": 0}

    def content(value: str) -> Any:
        def h() -> str:
            hashes["n"] += 1
            return value
        return h

    verdicts: dict[tuple[str, Any], bool] = {}
    assert sig.as_recorded((None, None, None), (5, 10), content("x"), verdicts, "t")  # nothing recorded
    assert sig.as_recorded(("abc", 5, 10), (5, 10), content("x"), verdicts, "t") and hashes["n"] == 0
    assert sig.as_recorded(("abc", 5, 10), (6, 10), content("abc"), verdicts, "t")  # touched, same bytes
    assert not sig.as_recorded(("abc", 5, 10), (7, 10), content("new"), verdicts, "t")  # a killed build's
    assert not sig.as_recorded(("abc", 5, 10), (7, 10), content("new"), verdicts, "t") and hashes["n"] == 2


class _Node:
    """What the Decider reads of an SCons file node, through its methods."""

    def __init__(self, csig: str, stamp: tuple[int, int], content: str, built: bool = False,
                 recorded: tuple[int, int] = (5, 10)) -> None:
        self.info = SimpleNamespace(ninfo=SimpleNamespace(csig=csig, timestamp=recorded[0], size=recorded[1]))
        self.stamp, self.content, self.built, self.hashed = stamp, content, built, 0

    def get_stored_info(self) -> Any:
        return self.info

    def exists(self) -> bool:
        return True

    def get_timestamp(self) -> int:
        return self.stamp[0]

    def get_size(self) -> int:
        return self.stamp[1]

    def get_content_hash(self) -> str:
        self.hashed += 1
        return self.content

    def get_abspath(self) -> str:
        return f"/p/{id(self)}"

    def has_builder(self) -> bool:
        return self.built


def test_recorded_only_rebuilds_a_target_that_is_not_the_recorded_file() -> None:
    asked: list[str] = []

    def source(*a: Any) -> bool:
        asked.append("source")
        return False

    def target(*a: Any) -> bool:
        asked.append("target")
        return False

    decide = sig.recorded_only(source, target)
    src, dep = _Node("s", (5, 10), "s"), _Node("d", (5, 10), "d", built=True)
    same = _Node("abc", (5, 10), "abc")
    assert not decide(src, same, None) and not decide(dep, same, None) and asked == ["source", "target"]
    stale = _Node("abc", (7, 10), "new")  # written by a killed build after the record
    assert decide(src, stale, None) and decide(dep, stale, None) and stale.hashed == 1  # hashed once per target
    assert sig.recorded_only(lambda *a: True, target)(src, same, None)  # the inner decider still decides


def test_database_reads_scons_dblite_files_and_writes_them_whole(tmp_path: Path) -> None:
    import SCons.dblite

    old = SCons.dblite.open(str(tmp_path / "s"), "c")
    old["a"] = b"1"
    old.sync()
    db = sig.open(str(tmp_path / "s"), "c")
    assert db["a"] == b"1" and list(db) == ["a"] and "a" in db and len(db) == 1
    db["b"] = b"2"
    db.close()
    assert pickle.loads((tmp_path / "s.dblite").read_bytes()) == {"a": b"1", "b": b"2"}
    assert not (tmp_path / "s.tmp").exists() and sig.open(str(tmp_path / "s.dblite"), "r")["b"] == b"2"
    with pytest.raises(OSError):
        sig.open(str(tmp_path / "s"), "r")["c"] = b"3"  # read only
    with pytest.raises(FileNotFoundError):
        sig.open(str(tmp_path / "absent"), "r")
    sig.open(str(tmp_path / "new"), "c").close()
    assert pickle.loads((tmp_path / "new.dblite").read_bytes()) == {}


def test_a_failed_write_is_one_line_exit_2_and_keeps_the_old_file(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    db = sig.open(str(tmp_path / "s"), "c")
    db["a"] = b"1"
    db.sync()
    before = (tmp_path / "s.dblite").read_bytes()
    (tmp_path / "s.tmp").symlink_to("/dev/full")  # ENOSPC on every write, as on a full disk (root too)
    db["b"] = b"2"
    with pytest.raises(SystemExit) as e:
        db.sync()
    err = capsys.readouterr().err.strip().splitlines()
    assert e.value.code == 2 and len(err) == 1 and "cannot write SCons's signature database" in err[0], err
    assert "free some space on the disk of" in err[0]
    assert (tmp_path / "s.dblite").read_bytes() == before and not (tmp_path / "s.tmp").is_symlink()
    db.close()  # SCons closes it again: nothing more is written or said
    assert not capsys.readouterr().err


SCONSTRUCT = """
import dbm.dumb
import SCons.SConsign
env = Environment(tools=["arena"], toolpath=[%r])
import arena_sconsign  # loaded with the tool
first = SCons.SConsign.DB_Module is arena_sconsign
env.SConsignFile("build/.sconsign")  # as the example's SConstruct does, after the tool: the module stays
print(first, SCons.SConsign.DB_Module is arena_sconsign, SCons.SConsign.DB_Name.endswith(".sconsign"))
env.SConsignFile("build/.sconsign", dbm.dumb)  # a SConstruct's own module is kept by a later tool load
Environment(tools=["arena"], toolpath=[%r])
print(SCons.SConsign.DB_Module is dbm.dumb)
"""


def test_the_tool_makes_the_database_arenas_through_sconsignfile(tmp_path: Path) -> None:
    tools = str(ROOT / "site_scons" / "site_tools")
    (tmp_path / "SConstruct").write_text(SCONSTRUCT % (tools, tools))
    r = subprocess.run([sys.executable, "-m", "SCons", "-Q", "-n"], cwd=tmp_path, capture_output=True, text=True,
                       timeout=120)
    assert [w for w in r.stdout.split() if w in ("True", "False")] == ["True"] * 4, r.stdout + r.stderr
