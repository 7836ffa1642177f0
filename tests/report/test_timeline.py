"""timeline: live bytes per op (an alias group once), their peak, and the text timeline of
``arena-tool explain --timeline``."""

from __future__ import annotations

import dataclasses
import re

import pytest

import models
from arena_tool.core.errors import ArenaBug
from arena_tool.core.problem import ModelOptions
from arena_tool.plan import planners, planning
from arena_tool.report import timeline
from arena_tool.cli import main

KB = 1024


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _rows(text: str) -> dict[int, str]:
    """The per-op rows of a timeline, by op index."""
    return {int(m.group(1)): line for line in text.splitlines() if (m := re.match(r"^\s*(\d+)  \S", line))}


@pytest.mark.parametrize("build, peak, live", [
    (models.chain, 1, [10 * KB, 12 * KB, 8 * KB]),  # the design notes' worked example
    (models.relu_chain, 0, [10 * KB, 6 * KB, 8 * KB]),  # the alias group T1+T2 counted once
])
def test_timeline_marks_the_peak_op(capsys, tmp_path, build, peak, live):
    path = models.save(build(), tmp_path / "m.onnx")
    code, out, err = run(capsys, "explain", path, "--timeline")
    assert code == 0, err
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= timeline.WIDTH
    marked = [line for line in lines if line.endswith(timeline.PEAK)]
    assert len(marked) == 1
    rows = _rows(out)
    assert sorted(rows) == list(range(len(live)))
    assert rows[peak] == marked[0]
    for i, b in enumerate(live):
        assert f" {b:,}  |" in rows[i]


def test_timeline_map_shows_the_layout(capsys, tmp_path):
    """At the peak of a plan that meets its lower bound the arena is full: no '.' in that row;
    each buffer's letter spans the share of the arena its bytes take."""
    path = models.save(models.chain(), tmp_path / "c.onnx")
    code, out, err = run(capsys, "explain", path, "--timeline")
    assert code == 0, err
    rows = _rows(out)
    arena_map = re.search(r"\|(.*)\|", rows[1]).group(1)
    assert len(arena_map) == timeline.MAP and "." not in arena_map
    assert sorted(arena_map.count(c) for c in set(arena_map)) == [21, 21]  # T1 and T2, 6 KB each of 12 KB
    assert "(+ T2)" not in out  # chain has no alias; relu_chain lists T2 with T1
    out2 = run(capsys, "explain", models.save(models.relu_chain(), tmp_path / "r.onnx"), "--timeline")[1]
    assert re.search(r"^  [A-Z]  T1 .*\(\+ T2\)$", out2, re.M)


def test_timeline_of_a_plan_file_equals_the_models(capsys, tmp_path):
    path = models.save(models.relu_chain(), tmp_path / "r.onnx")
    plan = tmp_path / "plan.json"
    assert run(capsys, "plan", path, "-o", str(plan))[0] == 0
    assert run(capsys, "explain", str(plan), "--timeline")[1] == run(capsys, "explain", path, "--timeline")[1]


def _plan(tmp_path, build) -> planning.PlannedModel:
    return planning.plan_model(models.save(build(), tmp_path / "m.onnx"), ModelOptions(), "optimal", planners.Params())


@pytest.mark.parametrize("build", [models.chain, models.relu_chain])
def test_the_peak_is_the_layouts_and_the_lower_bound(tmp_path, build) -> None:
    plan = _plan(tmp_path, build).plan_file
    at, lay = timeline.peak(plan), timeline.layout(plan)
    assert at.live == lay.live and at.op == lay.peak_op and at.bytes == max(lay.live) == plan.lower_bound
    assert (at.name, at.op_type) == (plan.schedule[at.op].name, plan.schedule[at.op].op_type)
    assert sum(row["size"] for row in at.live_at_peak) == at.bytes
    assert [row["size"] for row in at.largest] == sorted((g.size for g in lay.groups), reverse=True)[:timeline.TOP]


def test_a_peak_off_the_lower_bound_is_an_arena_bug(tmp_path) -> None:
    plan = _plan(tmp_path, models.chain).plan_file
    with pytest.raises(ArenaBug, match="is not the plan's lower bound"):
        timeline.peak(dataclasses.replace(plan, lower_bound=plan.lower_bound + 1))
