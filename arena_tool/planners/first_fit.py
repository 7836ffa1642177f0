"""First fit in order of birth: each buffer at the lowest aligned offset where it fits.

Buffers are taken by birth (start), the longer-lived first among buffers born
at the same op (end descending), then index; fixed-offset buffers are placed
first, as constants. The end-descending tie matters: an op's input and output
are born together at op 0, and putting the short-lived one first strands the
long-lived one above it (the chain below would need 16 KB instead of 12).

A buffer only has to avoid the bytes of placed buffers that overlap it in time,
so each placement walks just those neighbours sorted by offset:
O(n log n + n * overlapping), with placement.conflicts for the neighbours. The
helpers here (``lowest_fit``, ``place_in_order``) are shared with greedy_size,
which differs only in the order.

Example (the design notes' chain, 4/6/6/2 KB over ops [0,0] [0,1] [1,2] [2,2]):
T1@0 (born with T0, lives longer), T0@6K, T2@6K (T0 is dead at op 1), T3@0
(T1 is dead at op 2); arena 12 KB = the lower bound.
"""

from __future__ import annotations

import time
from typing import Sequence

from arena_tool.planners import Params
from arena_tool.planners.placement import conflicts, heuristic_plan
from arena_tool.problem import Buffer, Plan, Problem


def lowest_fit(occupied: Sequence[tuple[int, int]], size: int, alignment: int) -> int:
    """Lowest offset, a multiple of alignment, where [offset, offset+size) avoids
    every [lo, hi) of ``occupied`` (sorted by lo).

    TFLite Micro's walk: the candidate rises past each occupied block; the first
    gap before the next block that holds the buffer wins, else the top.
    """
    candidate = 0
    for lo, hi in occupied:
        pos = -(-candidate // alignment) * alignment
        if lo >= pos + size:
            return pos
        if hi > candidate:
            candidate = hi
    return -(-candidate // alignment) * alignment


def place_in_order(buffers: Sequence[Buffer], order: Sequence[int]) -> list[int]:
    """Offsets: fixed buffers at their offsets, then ``order`` (the non-fixed
    indices) each at its lowest fit among the placed time-neighbours."""
    nbrs = conflicts(buffers)
    offsets = [-1] * len(buffers)
    ends = [0] * len(buffers)
    for i, b in enumerate(buffers):
        if b.fixed_offset is not None:
            offsets[i] = b.fixed_offset
            ends[i] = b.fixed_offset + b.size
    for i in order:
        b = buffers[i]
        occupied = sorted([(offsets[j], ends[j]) for j in nbrs[i] if offsets[j] >= 0])
        o = lowest_fit(occupied, b.size, max(b.alignment, 1))
        offsets[i] = o
        ends[i] = o + b.size
    return offsets


def plan(problem: Problem, params: Params) -> Plan:
    t0 = time.perf_counter()
    bufs = problem.buffers
    order = sorted((i for i, b in enumerate(bufs) if b.fixed_offset is None),
                   key=lambda i: (bufs[i].start, -bufs[i].end, i))
    return heuristic_plan(problem, place_in_order(bufs, order), "first_fit", t0)
