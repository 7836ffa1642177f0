"""Every real model that ships inside the onnx package (and the MLPerf Tiny models
where ../shared has them) plans with every registered planner; each plan passes
the independent validator and the plan-file check, and none beats the lower bound
or the proven optimum."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from arena_tool.model import liveness
from arena_tool.plan import plancheck, planfile, planners, planning
from arena_tool.core.problem import ModelOptions
from conftest import MLPERF, SHARED_REQUIRED, light_models

if SHARED_REQUIRED and not MLPERF.is_dir():  # named and absent: the run errors, never skips the models
    raise FileNotFoundError(f"{MLPERF} is absent but ARENA_SHARED is set and ARENA_REQUIRE_TOOLS=1")
MODELS = light_models() + sorted(MLPERF.glob("*.onnx"))


@pytest.mark.parametrize("path", MODELS, ids=lambda p: Path(p).stem)
def test_every_planner_gives_a_valid_plan(path):
    mp = liveness.model_problem(str(path), ModelOptions())
    problem = mp.problem()
    params = planners.Params(time_limit=2.0)
    arenas = {}
    for name in sorted(planners.PLANNERS):
        plan = planning.run_planner(name, problem, params)  # raises ArenaBug on an invalid plan
        built = planfile.build(mp, plan, problem)
        assert plancheck.check(built, mp, os.fspath(path)) == [], name
        assert plan.arena_size >= plan.lower_bound
        arenas[name] = plan.arena_size
    assert arenas["optimal"] == min(arenas.values())
    assert arenas["exact_cover"] <= arenas["greedy_size"]
    assert arenas["naive"] == problem.total_size
