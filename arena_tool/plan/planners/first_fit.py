"""First fit in order of birth: each buffer at the lowest aligned offset where it fits.

Buffers are taken by birth (start), the longer-lived first among buffers born
at the same op (end descending), then index; fixed-offset buffers are placed
first, as constants. The end-descending tie matters: an op's input and output
are born together at op 0, and putting the short-lived one first strands the
long-lived one above it (the chain below would need 16 KB instead of 12).

A buffer only has to avoid the bytes of placed buffers that overlap it in time,
so each placement walks just those neighbours sorted by offset:
O(n log n + n * overlapping) (placement.place with placement.FIRST_FIT, shared with
greedy_size, which differs only in the order).

Example (the design notes' chain, 4/6/6/2 KB over ops [0,0] [0,1] [1,2] [2,2]):
T1@0 (born with T0, lives longer), T0@6K, T2@6K (T0 is dead at op 1), T3@0
(T1 is dead at op 2); arena 12 KB = the lower bound.
"""

from __future__ import annotations

import time

from arena_tool.plan.planners.params import Params
from arena_tool.plan.planners.clock import Deadline
from arena_tool.plan.planners.placement import FIRST_FIT, heuristic_plan, place, start_order
from arena_tool.core.problem import Plan, Problem


def plan(problem: Problem, params: Params) -> Plan:
    t0 = time.perf_counter()
    deadline = Deadline(t0 + params.time_limit)
    bufs = problem.buffers
    order = start_order(bufs)
    return heuristic_plan(problem, place(bufs, order, FIRST_FIT, deadline=deadline), "first_fit", t0,
                          deadline=deadline)
