"""No reuse: every buffer its own slot, in problem order (TFLM's LinearMemoryPlanner).

The arena is the sum of aligned sizes: the ceiling every other planner is measured
against. Fixed-offset buffers keep their offsets; the others stack above them
(placement.stack_rest).
"""

from __future__ import annotations

import time

from arena_tool.plan.planners.params import Params
from arena_tool.plan.planners.placement import heuristic_plan, stack_rest
from arena_tool.core.problem import Plan, Problem


def plan(problem: Problem, params: Params) -> Plan:
    t0 = time.perf_counter()
    bufs = problem.buffers
    free = [i for i, b in enumerate(bufs) if b.fixed_offset is None]
    return heuristic_plan(problem, stack_rest(bufs, [b.fixed_offset for b in bufs], free), "naive", t0)
