"""arena_tool.build_steps: the build graph's actions run without SCons, in the graph's order, on a
tiny project; a gate that fails; the reuse check of the tool's Decider; the one error rendering."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from arena_tool.builder import build_graph as bg
from arena_tool import build_steps
from arena_tool.target import board_report, manifest
from arena_tool.core.errors import EXIT_BUG, EXIT_CHECK_FAILED, ArenaError, CheckFailed
from models import relu_chain, save


def project(tmp_path: Path, budget: str = "100%") -> tuple[bg.BuildGraph, build_steps.Build]:
    save(relu_chain(), tmp_path / "m.onnx")
    (tmp_path / "arena.yaml").write_text(f"models: [{{name: m, path: m.onnx}}]\n"
                                         f"boards: [{{name: mps2_an500, budget: {budget}}}]\n")
    doc = manifest.to_doc(manifest.load("arena.yaml"))
    g = bg.plan(doc, "build", bg.Toolchain(root=str(tmp_path)), generator="digest")
    build = build_steps.Build({t["name"]: t for t in doc["targets"]})
    for b in g.boards:
        build.gates[b.gate] = build_steps.Gate(b.name, b.deleted, b.report)
    return g, build


def run(g: bg.BuildGraph, build: build_steps.Build, kind: str) -> bg.Node:
    """Run the first node of ``kind`` as the SCons tool does: targets and sources as paths, a Value as its text."""
    n = g.of_kind(kind)[0]
    sources = [s.text if isinstance(s, bg.Value) else s for s in n.sources]
    step = getattr(build_steps, {"report": "final_report"}.get(kind, kind))
    step(build, list(n.targets), sources)
    return n


def test_steps_make_every_file_of_the_graph(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    g, build = project(tmp_path)
    for kind in ("plan", "gate", "tables", "report"):  # the graph's order without a cross gcc
        run(g, build, kind)
    assert all(os.path.isfile(t) for t in g.targets()), [t for t in g.targets() if not os.path.isfile(t)]
    ld = Path("build/mps2_an500/mps2_an500.ld").read_text()
    rep = board_report.read("build/mps2_an500/arena_report.json")
    assert rep.passed and f"arena: {rep.arena_size} B in" in ld and "optimize" not in rep.to_json()
    assert build.written == set()  # only a failure records its report
    assert build.target("mps2_an500") is build.target("mps2_an500")  # made once per build


def test_a_failing_gate_writes_its_report_and_deletes_the_boards_files(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    g, build = project(tmp_path, budget="16")
    run(g, build, "plan")
    stale = Path("build/mps2_an500/mps2_an500.ld")
    stale.parent.mkdir(parents=True, exist_ok=True)
    stale.write_text("a script of an earlier build")
    with pytest.raises(CheckFailed) as e:
        run(g, build, "gate")
    assert e.value.exit_code == EXIT_CHECK_FAILED and e.value.msg.startswith("arena: mps2_an500: model m needs ")
    assert not stale.exists() and build.written == {"build/mps2_an500/arena_report.json"}
    doc = json.loads(Path("build/mps2_an500/arena_report.json").read_text())
    assert doc["status"] == "over" and Path("build/mps2_an500/arena_report.html").is_file()


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


def test_as_recorded() -> None:
    """A target is reused only while its file is the recorded one: same stamp, or same content."""
    hashes = {"n": 0}

    def content(value: str) -> object:
        def h() -> str:
            hashes["n"] += 1
            return value
        return h

    verdicts: dict[tuple[str, object], bool] = {}
    assert build_steps.as_recorded((None, None, None), (5, 10), content("x"), verdicts, "t")  # nothing recorded
    assert build_steps.as_recorded(("abc", 5, 10), (5, 10), content("x"), verdicts, "t") and hashes["n"] == 0
    assert build_steps.as_recorded(("abc", 5, 10), (6, 10), content("abc"), verdicts, "t")  # touched, same bytes
    assert not build_steps.as_recorded(("abc", 5, 10), (7, 10), content("new"), verdicts, "t")  # a killed build's
    assert not build_steps.as_recorded(("abc", 5, 10), (7, 10), content("new"), verdicts, "t") and hashes["n"] == 2
