"""XLA's GlobalDecreasingSizeBestFitHeap, run spatial and temporal, keeping the smaller.

Source: ``xla/service/heap_simulator/heap_simulator.cc`` and
``buffer_assignment.cc`` (ChooseBestHeapAlgorithm), as described in
research/planners.md section g. Rules:
  * spatial order: size desc, duration desc, id asc;
    temporal order: duration desc, size desc, id asc;
  * free chunks = the gaps between the time-overlapping committed chunks, plus
    the room between the highest overlapping chunk and the current heap top;
  * take the smallest free chunk that fits (best fit; the lowest among equals),
    else grow from the end of the highest overlapping chunk;
  * chunk ends are rounded up to the alignment (here: the buffer's own).
Both orders run (placement.place with HEAP_BEST_FIT); the smaller heap wins
(spatial on ties). Fixed offsets first.

Worked example (size, first, last): a (30,1,1) b (20,2,3) c (10,1,2) d (20,3,5).
Spatial a, d, b, c: a@0, d@0, b@20, c@40 -> 50. Temporal d, b, c, a: d@0, b@20,
c@0 (the gap below b), a@10 (the room up to the heap top 40) -> 40, which wins.
"""

from __future__ import annotations

import time
from typing import Sequence

from arena_tool.plan.planners.params import Params
from arena_tool.plan.planners.clock import Deadline
from arena_tool.plan.planners.placement import HEAP_BEST_FIT, conflicts, heuristic_plan, place
from arena_tool.core.problem import Buffer, Plan, Problem


def spatial(buffers: Sequence[Buffer]) -> list[int]:
    return sorted(range(len(buffers)), key=lambda i: (-buffers[i].size, -(buffers[i].end - buffers[i].start), i))


def temporal(buffers: Sequence[Buffer]) -> list[int]:
    return sorted(range(len(buffers)), key=lambda i: (-(buffers[i].end - buffers[i].start), -buffers[i].size, i))


def plan(problem: Problem, params: Params) -> Plan:
    t0 = time.perf_counter()
    deadline = Deadline(t0 + params.time_limit)
    bufs = problem.buffers
    conf = conflicts(bufs, deadline)
    best = None
    for name, order in (("spatial", spatial(bufs)), ("temporal", temporal(bufs))):
        if best is not None and deadline.hit:
            break  # out of time: the spatial heap (stacked where cut) is the answer
        offs = place(bufs, order, HEAP_BEST_FIT, conf, deadline)
        h = max((o + b.size for b, o in zip(bufs, offs)), default=0)
        if best is None or h < best[0]:
            best = (h, name, offs)
    assert best is not None
    return heuristic_plan(problem, best[2], "xla_best_fit", t0, (("temporal", int(best[1] == "temporal")),),
                          deadline=deadline)
