"""Pipelined execution (op N+1 may run while op N still does) and per-buffer alignment for the
buffers a DMA or cache maintenance touches: both honoured by every planner, proven by check and
by an independent hazard check written here."""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path

import onnx
import pytest

import models as M
import zoo
from arena_tool.model import liveness
from arena_tool.plan import plancheck, planfile, planners, planning
from arena_tool.report import explain
from arena_tool.cli import main
from arena_tool.core.problem import ModelOptions, lower_bound

PIPELINED = ModelOptions(execution="pipelined")
PARAMS = planners.Params(time_limit=2.0)


@pytest.fixture(scope="module")
def mobilenet(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("zoo") / "mobilenet_v2.onnx"
    onnx.save(zoo.build("mobilenet_v2"), str(path))
    return str(path)


def _touched(step: planfile.PlanStep) -> set[str]:
    return {n for n in (*step.inputs, *step.outputs, step.workspace) if n}


def hazards(plan: planfile.PlanFile) -> list[str]:
    """Bytes two neighbouring ops both touch although they belong to different tensors: what a
    pipelined runtime would corrupt. Independent of liveness: from the schedule's own names."""
    bufs = plan.by_name
    out = []
    steps = plan.schedule
    for k in range(len(steps) - 1):
        names = sorted(n for n in _touched(steps[k]) | _touched(steps[k + 1]) if n in bufs)
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                x, y = bufs[a], bufs[b]
                if x.offset < y.offset + y.size and y.offset < x.offset + x.size:
                    out.append(f"ops {k},{k + 1}: {a} and {b} overlap")
    return out


def test_pipelined_plans_never_alias_and_have_no_hazards(mobilenet: str) -> None:
    for planner in ("greedy_size", "first_fit", "optimal"):
        pm = planning.plan_model(mobilenet, PIPELINED, planner, PARAMS)
        assert not any(b.alias_of for b in pm.plan_file.buffers)
        assert hazards(pm.plan_file) == [], planner
        mp = liveness.model_problem(mobilenet, PIPELINED)
        assert plancheck.check(pm.plan_file, mp, "p.json") == []


def test_a_sequential_in_place_plan_fails_the_pipelined_check(mobilenet: str) -> None:
    pipelined = liveness.model_problem(mobilenet, PIPELINED)
    seq = planning.plan_model(mobilenet, ModelOptions(), "greedy_size", PARAMS).plan_file
    assert any(b.alias_of for b in seq.buffers) and hazards(seq)  # in place: neighbours share bytes
    assert any("workspace" in p for p in plancheck.check(seq, pipelined, "p.json"))  # depthwise in place
    seq = planning.plan_model(mobilenet, ModelOptions(inplace_depthwise=False), "greedy_size", PARAMS).plan_file
    problems = plancheck.check(seq, pipelined, "p.json")
    assert any("alias_of" in p for p in problems) and any("live range" in p for p in problems)


def test_pipelining_cost_is_stated(mobilenet: str) -> None:
    pm = planning.plan_model(mobilenet, PIPELINED, "greedy_size", PARAMS)
    seq = lower_bound(liveness.model_problem(mobilenet, ModelOptions()).problem().buffers)
    assert pm.plan_file.baselines is not None
    assert pm.plan_file.baselines.sequential == seq < pm.plan.lower_bound
    ex = explain.explain(pm.plan_file, "greedy_size", PARAMS)
    rows = {t["technique"]: t for t in ex["savings"]["alone"]}
    assert rows["pipelining"]["saved"] == seq - pm.plan.lower_bound < 0


def test_pipelined_worked_example_ranges() -> None:
    """The chain T0 -> T1 -> T2 -> T3: every range one op wider each way, clamped."""
    path = M.save(M.chain(), Path(__file__).parent / "_chain_exec.onnx")
    try:
        seq = {t.name: (t.first_op, t.last_op) for t in liveness.model_problem(path, ModelOptions()).tensors}
        pipe = {t.name: (t.first_op, t.last_op) for t in liveness.model_problem(path, PIPELINED).tensors}
        last = max(e for _, e in seq.values())
        assert pipe == {n: (max(0, s - 1), min(last, e + 1)) for n, (s, e) in seq.items()}
    finally:
        Path(path).unlink()


@pytest.mark.parametrize("planner", sorted(planners.PLANNERS))
def test_io_alignment_is_honoured_by_every_planner(tmp_path: Path, planner: str) -> None:
    path = M.save(M.conv(), tmp_path / "conv.onnx")
    opts = ModelOptions(alignment=4, io_alignment=64)
    pm = planning.plan_model(path, opts, planner, PARAMS)
    doc = pm.plan_file.to_json()  # the file: alignment stated only where it is above the plan's
    io = [b for b in doc["buffers"] if b["kind"] in ("input", "output")]
    assert io and all(b["offset"] % 64 == 0 and b["size"] % 64 == 0 and b["alignment"] == 64 for b in io)
    assert all("alignment" not in b for b in doc["buffers"] if b["kind"] not in ("input", "output"))
    mp = liveness.model_problem(path, opts)
    assert plancheck.check(pm.plan_file, mp, "p.json") == []
    bad = copy.deepcopy(doc)
    victim = next(b for b in bad["buffers"] if b["kind"] == "output")
    victim["offset"] += 4  # still a multiple of the plan's alignment, not of the buffer's
    bad["arena_size"] += 64
    bad = planfile.PlanFile.from_json(bad)
    assert any("not a multiple of the alignment 64" in p for p in plancheck.check(bad, mp, "p.json"))


def test_io_alignment_options_are_checked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = M.save(M.conv(), tmp_path / "conv.onnx")
    assert main(["plan", path, "--io-alignment", "48"]) == 2
    assert "io_alignment must be a power of two" in capsys.readouterr().err
    assert main(["plan", path, "--execution", "pipelined", "--io-alignment", "32", "--planner", "first_fit"]) == 0


def test_io_aligned_pipelined_model_runs_on_the_host(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from conftest import require_tool
    from arena_tool.run import firmware

    require_tool("gcc")
    path = M.save(M.conv(), tmp_path / "conv.onnx")
    opts = dataclasses.replace(PIPELINED, io_alignment=64)
    rc = firmware.run(path, "host", opts, "optimal", PARAMS, build_dir=str(tmp_path / "b"))
    assert rc == 0, capsys.readouterr().out
