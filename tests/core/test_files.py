"""files: paths as outputs record them, the one JSON reader, the one atomic writer.

(A full disk, a failing os.replace and a folder that is a file: tests/test_hardening.py.)
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from arena_tool.core import files
from arena_tool.core.errors import ArenaError

ROOT = Path(__file__).resolve().parents[2]


def test_a_path_inside_the_project_is_relative_with_forward_slashes(tmp_path: Path) -> None:
    inside = tmp_path / "models" / "kws.onnx"
    assert files.project_path(str(inside), str(tmp_path)) == "models/kws.onnx"
    assert files.project_path(str(tmp_path), str(tmp_path)) == "."
    outside = tmp_path.parent / "elsewhere.onnx"
    assert files.project_path(str(outside), str(tmp_path)) == str(outside).replace(os.sep, "/")


def test_the_project_is_the_current_folder_by_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert files.project_path(str(tmp_path / "a" / "b.json")) == "a/b.json"
    assert files.project_path("a/../c.json") == "c.json"


def test_read_json_says_what_is_wrong_with_the_file(tmp_path: Path) -> None:
    with pytest.raises(ArenaError) as e:
        files.read_json(str(tmp_path / "none.json"), "plan file", "re-plan it")
    assert (e.value.msg, e.value.hint) == ("plan file not found", "re-plan it")
    bad = tmp_path / "bad.json"
    bad.write_text('{"a": 1,\n  "b": }\n')
    with pytest.raises(ArenaError) as e:
        files.read_json(str(bad), "plan file", "re-plan it")
    assert e.value.msg.startswith("not JSON: ") and (e.value.line, e.value.file) == (2, str(bad))
    bad.write_text('{"a": NaN}')
    with pytest.raises(ArenaError, match="NaN is not a JSON number"):
        files.read_json(str(bad), "plan file", "re-plan it")


def test_read_json_checks_the_schema_when_named(tmp_path: Path) -> None:
    doc = tmp_path / "bits.json"
    doc.write_text('{"t": 8}')
    assert files.read_json(str(doc), "bitwidth file", "fix it", schema="bitwidths") == {"t": 8}
    doc.write_text('{"t": "eight"}')
    with pytest.raises(ArenaError, match=r"schema bitwidths\.schema\.json"):
        files.read_json(str(doc), "bitwidth file", "fix it", schema="bitwidths")


def test_write_atomic_writes_text_and_bytes_as_ordinary_files(tmp_path: Path) -> None:
    text, data = tmp_path / "sub" / "a.c", tmp_path / "b.bin"
    files.write_atomic(text, "int x;\n")
    files.write_atomic(str(data), b"\x00\x01")
    assert text.read_bytes() == b"int x;\n" and data.read_bytes() == b"\x00\x01"
    assert stat.S_IMODE(text.stat().st_mode) == 0o644
    files.write_atomic(text, "int y;\r\n")  # replaced whole, newlines as given
    assert text.read_bytes() == b"int y;\r\n"
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == ["a.c", "b.bin"]  # no temporary left


def test_package_files_are_every_module_and_schema() -> None:
    names = {os.path.relpath(f, ROOT).replace(os.sep, "/") for f in files.package_files()}
    for needed in ("arena_tool/core/schema.py", "arena_tool/target/manifest.py", "arena_tool/plan/planners/__init__.py",
                   "schemas/manifest.schema.json", "schemas/board.schema.json"):
        assert needed in names
    assert {n for n in names if n.startswith("arena_tool/") and n.endswith(".py")} == {
        p.relative_to(ROOT).as_posix() for p in (ROOT / "arena_tool").rglob("*.py") if "__pycache__" not in p.parts}


def test_files_digest_follows_the_bytes_and_the_last_two_path_parts(tmp_path: Path) -> None:
    a, b = tmp_path / "one" / "core" / "x.py", tmp_path / "two" / "core" / "x.py"
    for p in (a, b):
        p.parent.mkdir(parents=True)
        p.write_text("x = 1\n")
    assert files.files_digest([str(a)]) == files.files_digest([str(b)])  # the same for every clone
    b.write_text("x = 2\n")
    assert files.files_digest([str(a)]) != files.files_digest([str(b)])
    moved = tmp_path / "two" / "emit" / "x.py"
    moved.parent.mkdir()
    moved.write_text("x = 1\n")
    assert files.files_digest([str(a)]) != files.files_digest([str(moved)])


def test_waiting_lock_waits_for_the_other_process_and_tflm_lib_builds_under_it(tmp_path: Path) -> None:
    """Two processes filling one cache folder (arena-tool run's TFLM library, two xdist workers)
    take turns: the second enters only when the first has let go."""
    import inspect
    import subprocess
    import sys
    import threading

    from arena_tool.builder import tflm_lib

    lock = tmp_path / "cache" / files.LOCK_NAME
    os.makedirs(lock.parent)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, os, sys\n"
         f"fd = os.open({str(lock)!r}, os.O_RDWR | os.O_CREAT)\nfcntl.flock(fd, fcntl.LOCK_EX)\n"
         "print('held', flush=True)\nsys.stdin.readline()\n"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdin is not None
    assert holder.stdout.readline() == "held\n"
    entered = threading.Event()

    def enter() -> None:
        with files.waiting_lock(str(lock)):
            entered.set()

    waiter = threading.Thread(target=enter)
    waiter.start()
    assert not entered.wait(0.3)  # the other process holds it
    holder.stdin.write("\n")
    holder.stdin.flush()
    assert entered.wait(30)
    waiter.join()
    assert holder.wait(30) == 0
    # the TFLM library's builder takes it on its folder
    assert "waiting_lock(os.path.join(out_dir, files.LOCK_NAME))" in inspect.getsource(tflm_lib.build)
