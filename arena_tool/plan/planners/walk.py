"""The decision search's first descent, as a greedy layout: ``optimal``'s cheapest seeds.

The canonical search (``search.py``) places, at each node, the unplaced buffer
with the lowest (min_off, rank) at its min_off, then raises the min_off of the
buffers it meets above its top. Never backtracking, that path is a one-pass
layout in O(E + R log n) (E overlapping pairs, R re-queued buffers): gravity
packing in the preorder's priority. The heap holds each unplaced buffer once, keyed
at most at its min_off: a raise only writes min_off, and a stale entry popped goes
back in at its current one, so the first fresh entry popped is the true lowest. On network-like problems it reaches the load bound where first fit in
the same order does not (issue 39: the project's generator at 20,000 buffers,
seeds 1-3, all at the bound under TWA; first fit by size 1.3 %, 0.8 %, 0 % above).

Two implementations give the same offsets: ``walk_py`` (the reference) and the
C one in ``walk.c``, compiled on first use (``native.py``); ``walk`` takes the C
one when it is available. Past a deadline the buffers not yet placed are stacked
above the rest (as a cut one-pass planner does). Fixed-offset buffers are not walked (the search's
stranding rule would be a backtrack): ``walk`` returns None for such a part.

Worked example (minimalloc's input.12, sizes 4, TWA): b5 (ops 0..20) and b3 (0..8)
go to 0 and 4, then b1 (0..2) to 8; b2 (3..8) rests on b3 at 8 and b4 (9..20) on
b5 at 4: height 12, the load bound.
"""

from __future__ import annotations

import heapq
import time

import numpy as np

from arena_tool.plan.planners import native
from arena_tool.plan.planners.sections import Instance

CLOCK_EVERY = 4096  # placements between clock reads (walk.c reads it as often)


def walk_py(inst: Instance, rank: np.ndarray, deadline: float | None = None) -> tuple[list[int], bool]:
    """Offsets (scaled units) of the first descent, in Python: the reference. Past
    ``deadline`` (perf_counter) the rest is stacked in rank order: (offsets, cut)."""
    size, align, _, _, _, ovl, _ = inst.lists()
    rk = rank.tolist()
    n = inst.n
    mo = [0] * n
    off = [-1] * n
    heap = [(0, rk[y], y) for y in range(n)]
    heapq.heapify(heap)
    polls = 0
    while heap:
        polls += 1
        if deadline is not None and polls % CLOCK_EVERY == 0 and time.perf_counter() > deadline:
            top = max((o + size[y] for y, o in enumerate(off) if o >= 0), default=0)
            for _, _, x in sorted((0, r, x) for _, r, x in heap):
                off[x] = -(-top // align[x]) * align[x]
                top = off[x] + size[x]
            return off, True
        e, r, x = heapq.heappop(heap)
        if e != mo[x]:  # raised since it was pushed: back in at its min_off
            heapq.heappush(heap, (mo[x], r, x))
            continue
        off[x] = e
        top = e + size[x]
        for y in ovl[x]:
            t = -(-top // align[y]) * align[y]
            if off[y] < 0 and mo[y] < t:
                mo[y] = t
    return off, False


def walk(inst: Instance, rank: np.ndarray, deadline: float | None = None) -> tuple[list[int], bool] | None:
    """The first descent's (offsets in scaled units, cut by ``deadline``); None when the
    instance has a fixed buffer."""
    if (inst.fixed >= 0).any():
        return None
    lib = native.load()
    if lib is None:
        return walk_py(inst, rank, deadline)
    return native.walk(lib, inst.s0, inst.s1, inst.size, inst.align, rank, deadline)
