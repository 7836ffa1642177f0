"""TVM USMP ``greedy_by_conflicts``: most-conflicted first, stacked without gap filling.

Source: ``src/tir/usmp/algo/greedy.cc`` (apache/tvm), as described in
research/planners.md section b. Rules:
  * order: number of conflicts (time-overlapping buffers) desc, then size desc,
    then name desc (string order, as TVM's name_hint);
  * offset = max over the already-placed conflicts of
    round_up(conflict.offset + conflict.size, conflict.alignment) -- TVM rounds
    with the *conflict's* alignment; there is no gap filling.
Deviation for validity: the result is also rounded up to the buffer's own
alignment (TVM leaves that to the pools). One pool; fixed offsets are placed
first and count as conflicts.

Worked example (size, first, last): a (10,0,1) b (20,1,2) c (30,2,3) d (40,3,3):
conflicts a1 b2 c2 d1 -> order c, b, d, a: c@0, b@30, d@30, a@50: arena 70, the
load bound (c + d at op 3).
"""

from __future__ import annotations

import time

from arena_tool.plan.planners.params import Params
from arena_tool.plan.planners.clock import Deadline
from arena_tool.plan.planners.placement import ON_TOP, conflicts, heuristic_plan, place
from arena_tool.core.problem import Plan, Problem


def order(problem: Problem, conf: list[list[int]]) -> list[int]:
    bufs = problem.buffers
    idx = sorted(range(len(bufs)), key=lambda i: i)
    # name descending = reverse string order; a stable sort chain keeps it exact
    idx.sort(key=lambda i: bufs[i].name, reverse=True)
    idx.sort(key=lambda i: (-len(conf[i]), -bufs[i].size))
    return idx


def plan(problem: Problem, params: Params) -> Plan:
    t0 = time.perf_counter()
    deadline = Deadline(t0 + params.time_limit)
    conf = conflicts(problem.buffers, deadline)
    offsets = place(problem.buffers, order(problem, conf), ON_TOP, conf, deadline)
    return heuristic_plan(problem, offsets, "greedy_conflicts", t0, deadline=deadline)
