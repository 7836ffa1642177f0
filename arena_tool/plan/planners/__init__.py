"""Planner registry: the one place a name maps to a planner.

A planner is a pure function ``plan(problem, params) -> Plan``: it never mutates
the Problem, honours each buffer's alignment and fixed_offset, and says in
``Plan.status`` why it stopped. A new planner is one module, one line here and
one test file.
"""

from __future__ import annotations

from typing import Callable

from arena_tool.plan.planners.params import Params as Params, check_time_limit as check_time_limit  # re-exported: callers say planners.Params
from arena_tool.core.problem import Plan, Problem

PlannerFn = Callable[[Problem, Params], Plan]

from arena_tool.plan.planners import naive  # noqa: E402
from arena_tool.plan.planners import exact_cover, first_fit, greedy_size  # noqa: E402
from arena_tool.plan.planners import greedy_conflicts, hill_climb, optimal, tflite_cpu, tflite_gpu, xla_best_fit  # noqa: E402

PLANNERS: dict[str, PlannerFn] = {
    "naive": naive.plan,
    "first_fit": first_fit.plan,
    "greedy_size": greedy_size.plan,
    "exact_cover": exact_cover.plan,
    "optimal": optimal.plan,
    "greedy_conflicts": greedy_conflicts.plan,
    "hill_climb": hill_climb.plan,
    "xla_best_fit": xla_best_fit.plan,
    "tflite_gpu": tflite_gpu.plan,
    "tflite_cpu": tflite_cpu.plan,
}


def run(name: str, problem: Problem, params: Params = Params()) -> Plan:
    """Plan with the named planner; the caller validates (see validate.check).

    With ``params.progress`` the status line is started here and erased on return.
    """
    progress = params.progress
    if progress is None:
        return PLANNERS[name](problem, params)
    progress.start(name)
    try:
        return PLANNERS[name](problem, params)
    finally:
        progress.finish()
