"""arena_tool.build_steps: the build graph's actions run without SCons, in the graph's order, on a
tiny project; a gate that fails; the reuse check of the tool's Decider; the one error rendering."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from arena_tool.builder import build_graph as bg
from arena_tool import build_steps
from arena_tool.builder import board_report
from arena_tool.target import manifest
from arena_tool.core.errors import EXIT_BUG, EXIT_CHECK_FAILED, ArenaError, CheckFailed
from models import relu_chain, save


def project(tmp_path: Path, budget: str = "100%") -> tuple[bg.BuildGraph, build_steps.Build]:
    save(relu_chain(), tmp_path / "m.onnx")
    (tmp_path / "arena.yaml").write_text(f"models: [{{name: m, path: m.onnx}}]\n"
                                         f"boards: [{{name: mps2_an500, budget: {budget}}}]\n")
    doc = manifest.to_doc(manifest.load("arena.yaml"))
    g = bg.graph_of(doc, "build", bg.Toolchain(root=str(tmp_path)), generator="digest")
    build = build_steps.Build({t["name"]: t for t in doc["targets"]})
    for b in g.boards:
        build.gates[b.gate] = build_steps.Gate(b.name, b.deleted, b.report)
    build.needs.update({n.targets[0]: n.gates for n in g.nodes if n.gates})
    return g, build


def run(g: bg.BuildGraph, build: build_steps.Build, kind: str) -> None:
    """Run the nodes of ``kind`` as the SCons tool does: targets and sources as paths, a Value as its text."""
    for n in g.of_kind(kind):
        sources = [s.text if isinstance(s, bg.Value) else s for s in n.sources]
        step = getattr(build_steps, {"report": "final_report"}.get(kind, kind))
        step(build, list(n.targets), sources)


def test_steps_make_every_file_of_the_graph(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    g, build = project(tmp_path)
    for kind in ("plan", "gate", "tables", "report", "status"):  # the graph's order without a cross gcc
        run(g, build, kind)
    assert all(os.path.isfile(t) for t in g.targets()), [t for t in g.targets() if not os.path.isfile(t)]
    ld = Path("build/mps2_an500/mps2_an500.ld").read_text()
    rep = board_report.read("build/mps2_an500/arena_report.json")
    assert rep.passed and f"arena: {rep.arena_size} B in" in ld and "options" not in rep.to_json()
    assert build.written == set()  # only a failure records its report
    assert build.target("mps2_an500") is build.target("mps2_an500")  # made once per build


def test_a_failing_gate_writes_its_report_and_deletes_the_boards_files(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    g, build = project(tmp_path, budget="16B")  # a unit: a bare 16 is asked "did you mean 16%?"
    run(g, build, "plan")
    stale = Path("build/mps2_an500/mps2_an500.ld")
    stale.parent.mkdir(parents=True, exist_ok=True)
    stale.write_text("a script of an earlier build")
    run(g, build, "gate")  # a verdict, not a failed step: the other boards build on
    assert capsys.readouterr().err.startswith("arena: mps2_an500: model m needs ")
    assert not stale.exists() and build.written == {"build/mps2_an500/arena_report.json"}
    assert list(build.failed) == ["mps2_an500"] and not build.ready(g.of_kind("tables")[0].targets[0])
    report = Path("build/mps2_an500/arena_report.json")
    written = report.read_bytes()
    report.unlink()  # as SCons removes a target before its step
    run(g, build, "report")
    doc = json.loads(report.read_text())
    assert report.read_bytes() == written and doc["status"] == "over" and Path("build/mps2_an500/arena_report.html").is_file()
    status = g.node(g.alias("boards").targets[-1])
    Path(status.targets[0]).write_text("an earlier build's")
    with pytest.raises(SystemExit) as e:  # the alias's last step gives the build its exit status
        build_steps.status(build, list(status.targets), [str(s) for s in status.sources])
    assert e.value.code == EXIT_CHECK_FAILED and not Path(status.targets[0]).exists()


def test_guarded_renders_once_with_the_exit_code(capsys: pytest.CaptureFixture[str]) -> None:
    def over() -> None:
        raise CheckFailed("arena: b: over")

    def located() -> None:
        raise ArenaError("bad", file="x.json", line=3)

    def bug() -> None:
        raise KeyError("k")

    for body, code, text in ((over, EXIT_CHECK_FAILED, "arena: b: over\n"), (located, 2, "x.json:3: error: bad\n"),
                             (bug, EXIT_BUG, "arena: this is an arena bug; please report it\n")):
        with pytest.raises(SystemExit) as e:
            build_steps.guarded(body)
        err = capsys.readouterr().err
        assert e.value.code == code and err.endswith(text), err
