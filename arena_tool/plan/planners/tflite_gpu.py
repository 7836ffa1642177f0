"""TFLite GPU delegate's greedy by size for offset calculation (Pisarchyk & Lee 2020).

Source: ``tensorflow/lite/delegates/gpu/common/memory_management/
greedy_by_size_assignment.cc`` (GreedyBySizeAssignment), as described in
research/planners.md section c. Rules:
  * order: size descending (TFLite uses an unstable std::sort; ties here go by
    buffer index so the result is deterministic);
  * scan the placed, time-overlapping tensors in offset order, keeping
    prev = running max of align_up(offset + size); each gap ``cur.offset - prev``
    that holds the tensor is a candidate;
  * take the smallest fitting gap (best fit; the lowest one among equals),
    otherwise prev (on top of the highest overlapping tensor).
Alignment: TFLite aligns the ends of earlier tensors to ``base_addr_align_bytes``;
here each buffer's own alignment plays that part. Fixed offsets are placed first.

Worked example (size, first, last): a (32,0,1) b (8,1,2) c (24,2,3) d (16,2,2):
order a, c, d, b. a@0; c@0 (a is dead by op 2); d@24 (on c); b overlaps a, c and
d and no gap between them holds it: b@40. Arena 48.
"""

from __future__ import annotations

import time

from arena_tool.plan.planners.params import Params
from arena_tool.plan.planners.clock import Deadline
from arena_tool.plan.planners.placement import BEST_FIT, heuristic_plan, place
from arena_tool.core.problem import Plan, Problem


def order(problem: Problem) -> list[int]:
    return sorted(range(len(problem.buffers)), key=lambda i: (-problem.buffers[i].size, i))


def plan(problem: Problem, params: Params) -> Plan:
    t0 = time.perf_counter()
    deadline = Deadline(t0 + params.time_limit)
    offsets = place(problem.buffers, order(problem), BEST_FIT, deadline=deadline)
    return heuristic_plan(problem, offsets, "tflite_gpu", t0, deadline=deadline)
