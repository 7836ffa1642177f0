"""Shared pieces of the one-pass placement planners: conflicts and gap search.

Every peer planner (TFLite GPU/CPU, XLA, TVM, Vela) is "sort the buffers, then put
each one into a gap between the already-placed buffers it overlaps in time"; they
differ in the sort key, in first fit vs best fit, and in how alignment is applied.
This module holds the part they share; each planner module states its own rules.

Invariants: lifetimes are inclusive ``[start, end]``; fixed-offset buffers are
placed first, at their offsets, and the others are fitted around them.

Worked example (first fit, sizes already in placement order)::

    a: 4 B, ops 0..1 -> 0
    b: 4 B, ops 1..2 -> 4 (a occupies [0, 4) at op 1)
    c: 4 B, ops 2..3 -> 0 (a is dead by op 2)
"""

from __future__ import annotations

import heapq
from typing import Callable, Sequence

from arena_tool.problem import Buffer, align_up


def conflicts(buffers: Sequence[Buffer]) -> list[list[int]]:
    """For each buffer, the indices of the other buffers live at some common op (ascending).

    One sweep in start order with a heap of ends: the work is proportional to the
    number of overlapping pairs, not n^2.
    """
    out: list[list[int]] = [[] for _ in buffers]
    active: dict[int, None] = {}  # insertion ordered: deterministic
    ends: list[tuple[int, int]] = []
    for i in sorted(range(len(buffers)), key=lambda i: (buffers[i].start, i)):
        start = buffers[i].start
        while ends and ends[0][0] < start:
            del active[heapq.heappop(ends)[1]]
        for j in active:
            out[i].append(j)
            out[j].append(i)
        active[i] = None
        heapq.heappush(ends, (buffers[i].end, i))
    for row in out:
        row.sort()
    return out


def gaps(placed: Sequence[tuple[int, int]], size: int, alignment: int,
         end_align: Callable[[int, int], int] | None = None) -> tuple[list[tuple[int, int]], int]:
    """Candidate offsets for a buffer of ``size`` among ``placed`` (offset, end) blocks.

    Returns (fitting gaps as (offset, gap_bytes) in ascending offset, top) where top
    is the lowest offset above every placed block. ``end_align(end, alignment)``
    rounds a block's end up before it bounds the next gap (default: align_up to the
    new buffer's alignment).
    """
    fit: list[tuple[int, int]] = []
    cand = 0
    for off, end in sorted(placed):
        if off - cand >= size:
            fit.append((cand, off - cand))
        nxt = end_align(end, alignment) if end_align else align_up(end, alignment)
        cand = max(cand, nxt)
    return fit, cand


def place(buffers: Sequence[Buffer], order: Sequence[int], rule: str,
          conf: list[list[int]] | None = None) -> list[int]:
    """Place buffers in ``order`` ('first' = lowest fitting gap, 'best' = smallest fitting gap).

    Fixed-offset buffers are placed before everything else. Returns offsets by index.
    """
    conf = conflicts(buffers) if conf is None else conf
    offsets: list[int | None] = [None] * len(buffers)
    for i, b in enumerate(buffers):
        if b.fixed_offset is not None:
            offsets[i] = b.fixed_offset
    for i in order:
        b = buffers[i]
        if b.fixed_offset is not None:
            continue
        placed = [(offsets[j], offsets[j] + buffers[j].size) for j in conf[i] if offsets[j] is not None]
        fit, top = gaps(placed, b.size, b.alignment)
        if not fit:
            offsets[i] = top
        elif rule == "first":
            offsets[i] = fit[0][0]
        else:
            offsets[i] = min(fit, key=lambda g: (g[1], g[0]))[0]
    return [int(o) for o in offsets]  # type: ignore[arg-type]


def heuristic_plan(problem, offsets: Sequence[int], planner: str, t0: float, stats=()):
    """Wrap a one-pass layout as a Plan (optimal None: a heuristic makes no claim)."""
    import time

    from arena_tool.problem import Plan, arena_size, lower_bound

    return Plan(
        offsets=tuple(int(o) for o in offsets),
        arena_size=arena_size(problem.buffers, offsets),
        planner=planner,
        optimal=None,
        status="heuristic",
        lower_bound=lower_bound(problem.buffers),
        seconds=time.perf_counter() - t0,
        stats=tuple(stats),
    )
