"""No reuse: every buffer its own slot, in problem order (TFLM's LinearMemoryPlanner).

The arena is the sum of aligned sizes: the ceiling every other planner is measured
against. Fixed-offset buffers keep their offsets; the others stack above them.
"""

from __future__ import annotations

import time

from arena_tool.planners import Params
from arena_tool.problem import Plan, Problem, align_up, arena_size, lower_bound


def plan(problem: Problem, params: Params) -> Plan:
    t0 = time.perf_counter()
    top = max((b.fixed_offset + b.size for b in problem.buffers if b.fixed_offset is not None), default=0)
    offsets = []
    for b in problem.buffers:
        if b.fixed_offset is not None:
            offsets.append(b.fixed_offset)
            continue
        o = align_up(top, b.alignment)
        offsets.append(o)
        top = o + b.size
    return Plan(
        offsets=tuple(offsets),
        arena_size=arena_size(problem.buffers, offsets),
        planner="naive",
        optimal=None,
        status="heuristic",
        lower_bound=lower_bound(problem.buffers),
        seconds=time.perf_counter() - t0,
    )
