"""arena_tool.target.flags: one compile/link flag policy for a SCons build (build_graph) and
``arena-tool run`` (firmware), and the manifest's ``optimize:`` level through both."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

import arena_tool
from arena_tool.builder import build_graph as bg
from arena_tool import cli
from arena_tool.builder import board_report
from arena_tool.target import flags, manifest
from arena_tool.builder import execute, gate
from arena_tool.run import firmware
from arena_tool.report import htmlreport
from arena_tool.core.errors import ArenaError
from conftest import ROOT

APP = Path(arena_tool.runtime_dir()) / "example"
KWS = ROOT / "example_firmware" / "models" / "kws.onnx"


def project(tmp_path: Path, top: str = "", boards: str = "[mps2_an500, nucleo_f746]") -> manifest.Manifest:
    (tmp_path / "m.onnx").write_bytes(b"")
    (tmp_path / "arena.yaml").write_text(f"{top}models: [{{name: m, path: m.onnx}}]\nboards: {boards}\n")
    return manifest.load(str(tmp_path / "arena.yaml"))


def graph(m: manifest.Manifest, root: Path) -> bg.BuildGraph:
    tc = bg.Toolchain(link=True, sources=(str(APP / "startup.c"),), cpppath=(str(APP),), root=str(root))
    return bg.graph_of(manifest.to_doc(m), "build", tc, generator="digest")


def test_scons_and_run_compile_and_link_with_the_same_flags(tmp_path: Path) -> None:
    """A board's SCons compile is its core flags, then exactly the flags ``arena-tool run`` adds
    to them, then the project's prefix map; the link likewise; one stack default."""
    g = graph(project(tmp_path), tmp_path)
    env = g.env("cortex-m7_fpv5-sp-d16_hard")
    core = ("-mcpu=cortex-m7", "-mthumb", "-mfpu=fpv5-sp-d16", "-mfloat-abi=hard")
    assert env.ccflags == (*core, *firmware.TARGET_CFLAGS, "$(", bg.prefix_map(str(tmp_path)), "$)")
    assert env.linkflags[:len(core) + len(firmware.TARGET_LDFLAGS)] == (*core, *firmware.TARGET_LDFLAGS)
    assert tuple(f"-l{lib}" for lib in env.libs) == firmware.TARGET_LIBS
    assert firmware.STACK == manifest.DEFAULT_STACK == project(tmp_path).targets[0].reserve_stack
    assert firmware.TARGET_CFLAGS[0] == "-O2" and firmware.HOST_CFLAGS[0] == "-O2"  # the defaults: speed


def test_levels() -> None:
    assert flags.cflags() == flags.cflags("speed") == ("-O2", *flags.cflags("size")[1:])
    assert flags.cflags("size")[0] == "-Os" and flags.host_cflags("size")[0] == "-Os"
    assert (flags.env_suffix(None), flags.env_suffix("speed"), flags.env_suffix("size")) == ("", "", "_Os")
    with pytest.raises(ArenaError) as e:
        flags.cflags("fast")
    assert e.value.msg == "unknown optimize level 'fast'" and e.value.hint.endswith("expected one of: size, speed")


def test_optimize_per_board_and_top_level(tmp_path: Path) -> None:
    m = project(tmp_path, "optimize: size\n",
                "[mps2_an500, nucleo_f746, {name: nucleo_h743, optimize: speed}]")  # an500, h743: one core
    assert [t.options.optimize for t in m.targets] == ["size", "size", "speed"]
    assert manifest.from_doc(manifest.to_doc(m)).targets == m.targets
    g = graph(m, tmp_path)
    # the level keys the compile environment: -O2 objects never mix with -Os ones
    assert {e.key: e.ccflags[len(e.ccflags) - len(firmware.TARGET_CFLAGS) - 3] for e in g.envs
            if "_validate_" not in e.key} == {  # (mps2_an500's validation main.c: its core's, and its UART)
        "cortex-m7_fpv5-d16_hard_Os": "-Os", "cortex-m7_fpv5-sp-d16_hard_Os": "-Os", "cortex-m7_fpv5-d16_hard": "-O2"}
    assert g.node("build/nucleo_h743/firmware.elf").env == "cortex-m7_fpv5-d16_hard"
    plan = g.boards[0].plans[0].split("/")[-1][:-len(".plan.json")]
    assert {f"build/common/cortex-m7_fpv5-d16_hard{s}/tables/{plan}.o" for s in ("", "_Os")} <= set(g.targets())
    # the gate re-runs when the level changes (its Value is the board's key); unset keeps the old key
    (tmp_path / "p").mkdir()
    plain = project(tmp_path / "p")
    assert "options" not in plain.targets[0].key() and '"optimize":"size"' in m.targets[0].key()


def test_unknown_optimize_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(ArenaError) as e:
        project(tmp_path, "optimize: fast\n")
    assert e.value.render().endswith("arena.yaml:1:11: error: optimize: invalid value 'fast' "
                                     "(hint: expected one of: size, speed)")


def report_of(tmp_path: Path, top: str) -> board_report.BoardReport:
    from builders import plan_doc, plans

    t = project(tmp_path, top, "[nucleo_f746]").targets[0]
    return gate.gate(t, plans(t, plan_doc(1000, 1000, planner="optimal", dtype="int8")))


def test_report_states_the_level_the_manifest_chose(tmp_path: Path) -> None:
    schema = json.loads((ROOT / "schemas" / "report.schema.json").read_text())
    rep = report_of(tmp_path, "optimize: speed\n")
    doc = rep.to_json()
    jsonschema.validate(doc, schema)
    assert doc["options"] == {"optimize": "speed"}
    assert board_report.BoardReport.from_json(doc) == rep
    view = htmlreport.build(rep, {}, htmlreport.Memory.of_board(project(tmp_path, "", "[nucleo_f746]").targets[0].board))
    assert 'data-key="options.optimize"' in htmlreport.render_html(view) and "| optimize | speed |" in htmlreport.render_markdown(view)
    plain = report_of(tmp_path, "").to_json()  # a manifest that says nothing: the document it always was
    assert "optimize" not in plain
    jsonschema.validate(plain, schema)


@pytest.mark.parametrize("argv,first", [((), "-O2"), (("--optimize", "size"), "-Os"), (("--optimize", "speed"), "-O2")])
def test_run_compiles_at_the_level_asked(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                                         tmp_path: Path, argv: tuple[str, ...], first: str) -> None:
    """``arena-tool run --optimize``: the compile command and the report's cflags (no compiler run:
    each command's output is an empty file, in a cache of the test's own)."""
    seen: list[list[str]] = []

    def compile(self: execute.Executor, command: list[str]) -> None:
        seen.append(command)
        Path(self.root, command[command.index("-o") + 1]).write_bytes(b"")

    monkeypatch.setenv(execute.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setattr(execute.Executor, "_run", compile)
    monkeypatch.setattr(firmware, "run_host", lambda exe, timeout=0: (1, "status kws 1\n"))
    rc = cli.main(["run", str(KWS), "--board", "host", "--json", str(tmp_path / "r.json"), *argv])
    capsys.readouterr()
    assert rc == 3
    doc: dict[str, Any] = json.loads((tmp_path / "r.json").read_text())
    assert doc["cflags"][0] == first and seen[0][0] == "gcc" and seen[0][4] == first
