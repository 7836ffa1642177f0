"""TFLite Micro's GreedyMemoryPlanner, reproduced (greedy_memory_planner.cc).

1. Fixed-offset ("offline planned") buffers first, at their offsets.
2. The others by size descending; ties keep problem order (TFLM's stable bubble
   sort), so large buffers go low and small ones fill the gaps.
3. Each buffer walks the placed buffers that overlap it in time, in offset order,
   and takes the first gap that holds it, else the top of the highest-ending one.

TFLM does no alignment (its sizes arrive rounded to 16); here the candidate is
rounded up to the buffer's alignment, which changes nothing when sizes are
multiples of it. TFLM's list walk is O(n^2); walking only the time-neighbours
(placement.place with FIRST_FIT) gives the same offsets in O(n * overlapping).
Not optimal: the problem is NP-hard (exact_cover and optimal search for the
minimum).

TFLM's TestGreedyMedium, (size, first, last): (10,0,1) (20,1,2) (30,2,3)
(40,3,4) (50,0,1) -> offsets 50, 70, 40, 0, 0 and arena 90 (the minimum is 80).
"""

from __future__ import annotations

import time

from arena_tool.plan.planners.params import Params
from arena_tool.plan.planners.clock import Deadline
from arena_tool.plan.planners.placement import FIRST_FIT, heuristic_plan, place, size_order
from arena_tool.core.problem import Plan, Problem


def plan(problem: Problem, params: Params) -> Plan:
    t0 = time.perf_counter()
    deadline = Deadline(t0 + params.time_limit)
    bufs = problem.buffers
    order = size_order(bufs)
    return heuristic_plan(problem, place(bufs, order, FIRST_FIT, deadline=deadline), "greedy_size", t0,
                          deadline=deadline)
