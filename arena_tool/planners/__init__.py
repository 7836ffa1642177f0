"""Planner registry: the one place a name maps to a planner.

A planner is a pure function ``plan(problem, params) -> Plan``: it never mutates
the Problem, honours each buffer's alignment and fixed_offset, and says in
``Plan.status`` why it stopped. A new planner is one module, one line here and
one test file.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

from arena_tool.problem import Plan, Problem


@dataclasses.dataclass(frozen=True)
class Params:
    """Planner options.

    k: bytes, coarsening unit of exact_cover (sizes rounded up to multiples of k).
    time_limit: seconds of search for the exact planners.
    max_rows: exact_cover's cap on the cover matrix size (rows), to bound memory.
    seed: for planners with randomness (hill_climb).
    """

    k: int = 1
    time_limit: float = 10.0
    max_rows: int = 2_000_000
    seed: int = 0


PlannerFn = Callable[[Problem, Params], Plan]

from arena_tool.planners import naive  # noqa: E402
from arena_tool.planners import exact_cover, first_fit, greedy_size  # noqa: E402
from arena_tool.planners import greedy_conflicts, hill_climb, optimal, tflite_cpu, tflite_gpu, xla_best_fit  # noqa: E402

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
    """Plan with the named planner; the caller validates (see validate.check)."""
    return PLANNERS[name](problem, params)
