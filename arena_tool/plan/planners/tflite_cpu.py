"""TFLite (CPU) ArenaPlanner + SimpleMemoryArena best fit.

Source: ``tensorflow/lite/arena_planner.cc`` and ``simple_memory_arena.cc`` as
described in research/planners.md section g. Rules:
  * order: tensors alive for the whole run first (by index), then size
    descending, then first use ascending, then index;
  * ``SimpleMemoryArena::Allocate``: among the allocations live at the same time,
    sorted by offset, take the smallest gap that holds the tensor at an aligned
    offset (best fit), else the aligned end of the highest one.
TFLite aligns to 64 bytes by default; here each buffer's own alignment applies.
Fixed offsets are placed first.

Worked example (size, first, last) with ops 0..3: a (8,0,3) lives throughout, so it
goes first although b (40,0,1) is larger: a@0, b@8, c (16,2,3)@8, d (8,2,2)@24.
"""

from __future__ import annotations

import time

from arena_tool.plan.planners.params import Params
from arena_tool.plan.planners.clock import Deadline
from arena_tool.plan.planners.placement import BEST_FIT, heuristic_plan, place
from arena_tool.core.problem import Plan, Problem


def order(problem: Problem) -> list[int]:
    bufs = problem.buffers
    if not bufs:
        return []
    first = min(b.start for b in bufs)
    last = max(b.end for b in bufs)

    def key(i: int) -> tuple[int, int, int, int]:
        b = bufs[i]
        whole = b.start == first and b.end == last
        return (0, i, 0, 0) if whole else (1, -b.size, b.start, i)

    return sorted(range(len(bufs)), key=key)


def plan(problem: Problem, params: Params) -> Plan:
    t0 = time.perf_counter()
    deadline = Deadline(t0 + params.time_limit)
    offsets = place(problem.buffers, order(problem), BEST_FIT, deadline=deadline)
    return heuristic_plan(problem, offsets, "tflite_cpu", t0, deadline=deadline)
