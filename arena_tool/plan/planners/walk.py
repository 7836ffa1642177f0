"""The decision search's first descent, as a greedy layout: ``optimal``'s cheapest seeds.

The canonical search (``search.py``) places, at each node, the unplaced buffer
with the lowest (min_off, rank) at its min_off, then raises the min_off of the
buffers it meets above its top. Never backtracking, that path is a one-pass
layout in O(E log n) (E overlapping pairs): gravity packing in the preorder's
priority. On network-like problems it reaches the load bound where first fit in
the same order does not (issue 39: the project's generator at 20,000 buffers,
seeds 1-3, all at the bound under TWA; first fit by size 1.3 %, 0.8 %, 0 % above).

Two implementations give the same offsets: ``walk_py`` (the reference) and the
C one in ``walk.c``, compiled on first use (``native.py``); ``walk`` takes the C
one when it is available. Fixed-offset buffers are not walked (the search's
stranding rule would be a backtrack): ``walk`` returns None for such a part.

Worked example (minimalloc's input.12, sizes 4, TWA): b5 (ops 0..20) and b3 (0..8)
go to 0 and 4, then b1 (0..2) to 8; b2 (3..8) rests on b3 at 8 and b4 (9..20) on
b5 at 4: height 12, the load bound.
"""

from __future__ import annotations

import heapq

import numpy as np

from arena_tool.plan.planners import native
from arena_tool.plan.planners.sections import Instance


def walk_py(inst: Instance, rank: np.ndarray) -> list[int]:
    """Offsets (scaled units) of the first descent, in Python: the reference."""
    size, align, _, _, _, ovl, _ = inst.lists()
    rk = rank.tolist()
    n = inst.n
    mo = [0] * n
    off = [-1] * n
    heap = [(0, rk[y], y) for y in range(n)]
    heapq.heapify(heap)
    while heap:
        e, _, x = heapq.heappop(heap)
        if off[x] >= 0 or e != mo[x]:
            continue
        off[x] = e
        top = e + size[x]
        for y in ovl[x]:
            t = -(-top // align[y]) * align[y]
            if off[y] < 0 and mo[y] < t:
                mo[y] = t
                heapq.heappush(heap, (t, rk[y], y))
    return off


def walk(inst: Instance, rank: np.ndarray) -> list[int] | None:
    """The first descent's offsets (scaled units); None when the instance has a fixed buffer."""
    if (inst.fixed >= 0).any():
        return None
    lib = native.load()
    if lib is None:
        return walk_py(inst, rank)
    return native.walk(lib, inst.s0, inst.s1, inst.size, inst.align, rank)
