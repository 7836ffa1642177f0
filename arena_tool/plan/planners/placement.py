"""The one placement loop of the one-pass planners, and the fit rules they choose from.

Every peer planner (TFLite Micro/GPU/CPU, XLA, TVM, Vela) is "sort the buffers, then
put each one among the already-placed buffers it overlaps in time". They differ in
the order (each planner module owns its own) and in the rule that picks the
offset; ``place`` is the loop, a ``Fit`` the rule:
  * ``FIRST_FIT``   the lowest gap that holds it (TFLite Micro; first_fit, greedy_size,
                    hill_climb);
  * ``BEST_FIT``    the smallest gap that holds it, the lowest among equals (TFLite GPU/CPU);
  * ``HEAP_BEST_FIT`` best fit where the room between the highest neighbour and the
                    height so far also counts as a gap (XLA's heap);
  * ``ON_TOP``      above every neighbour, each neighbour's end rounded up to its own
                    alignment, no gap filling (TVM greedy_by_conflicts).
A new rule is one small ``Fit`` subclass.

Invariants: lifetimes are inclusive ``[start, end]``; fixed-offset buffers are
placed first, at their offsets, and the others are fitted around them; offsets are
multiples of the buffer's alignment.

Time limit: every loop here polls a ``clock.Deadline``; past it a pass stacks
the buffers it has not placed above the rest without reuse (``stack_rest``),
a valid layout in O(n), and the planner reports status 'time_limit'.

Worked example (first fit, sizes already in placement order)::

    a: 4 B, ops 0..1 -> 0
    b: 4 B, ops 1..2 -> 4 (a occupies [0, 4) at op 1)
    c: 4 B, ops 2..3 -> 0 (a is dead by op 2)
"""

from __future__ import annotations

import heapq
import time
from typing import Sequence

from arena_tool.plan.planners.clock import Deadline
from arena_tool.core.problem import Buffer, Plan, Problem, Status, align_up, arena_size, lower_bound

Block = tuple[int, int]  # (offset, end) in bytes: what a placed time-neighbour occupies


def conflicts(buffers: Sequence[Buffer], deadline: Deadline | None = None) -> list[list[int]]:
    """For each buffer, the indices of the other buffers live at some common op (ascending).

    One sweep in start order with a heap of ends: the work is proportional to the
    number of overlapping pairs, not n^2. Past ``deadline`` the sweep stops and the
    lists are incomplete; ``deadline.hit`` then tells, and every placement helper
    here stacks instead of reading them.
    """
    out: list[list[int]] = [[] for _ in buffers]
    active: dict[int, None] = {}  # insertion ordered: deterministic
    ends: list[tuple[int, int]] = []
    for i in sorted(range(len(buffers)), key=lambda i: (buffers[i].start, i)):
        if deadline is not None and deadline.expired():
            return out
        start = buffers[i].start
        while ends and ends[0][0] < start:
            del active[heapq.heappop(ends)[1]]
        for j in active:
            out[i].append(j)
            out[j].append(i)
        active[i] = None
        heapq.heappush(ends, (buffers[i].end, i))
    for k, row in enumerate(out):
        if deadline is not None and k % 64 == 63 and deadline.passed():
            break
        row.sort()
    return out


def gaps(placed: Sequence[Block], size: int, alignment: int) -> tuple[list[tuple[int, int]], int]:
    """Candidate offsets for a buffer of ``size`` among ``placed`` blocks.

    Returns (fitting gaps as (offset, gap_bytes) in ascending offset, top) where top
    is the lowest aligned offset above every placed block. Each gap starts at the
    aligned end of the blocks below it.
    """
    fit: list[tuple[int, int]] = []
    cand = 0
    for off, end in sorted(placed):
        if off - cand >= size:
            fit.append((cand, off - cand))
        cand = max(cand, align_up(end, alignment))
    return fit, cand


class Fit:
    """Where a buffer goes among its placed time-neighbours (one planner's rule)."""

    def end(self, offset: int, b: Buffer) -> int:
        """What a buffer placed at ``offset`` blocks for the ones placed after it: its end."""
        return offset + b.size

    def offset(self, b: Buffer, placed: list[Block], height: int) -> int:
        """The offset for ``b``; ``placed``: its placed neighbours (any order); ``height``:
        the top of everything placed so far, neighbours or not."""
        raise NotImplementedError


class FirstFit(Fit):
    """The lowest aligned offset clear of every neighbour (TFLite Micro's walk: the
    candidate rises past each block in offset order; the first gap before the next
    block that holds the buffer wins, else the top)."""

    def offset(self, b: Buffer, placed: list[Block], height: int) -> int:
        return lowest_fit(sorted(placed), b.size, max(b.alignment, 1))


def lowest_fit(occupied: Sequence[Block], size: int, alignment: int) -> int:
    """FirstFit's walk over ``occupied`` sorted by offset."""
    candidate = 0
    for lo, hi in occupied:
        pos = -(-candidate // alignment) * alignment
        if lo >= pos + size:
            return pos
        if hi > candidate:
            candidate = hi
    return -(-candidate // alignment) * alignment


class BestFit(Fit):
    """The smallest gap that holds the buffer, the lowest among equals; else the top."""

    def offset(self, b: Buffer, placed: list[Block], height: int) -> int:
        fit, top = gaps(placed, b.size, b.alignment)
        return min(fit, key=lambda g: (g[1], g[0]))[0] if fit else top


class HeapBestFit(Fit):
    """Best fit where the room from the top of the neighbours up to the height so far
    is one more free chunk (XLA's heap, which grows only when nothing fits)."""

    def offset(self, b: Buffer, placed: list[Block], height: int) -> int:
        fit, top = gaps(placed, b.size, b.alignment)
        if height - top >= b.size:
            fit.append((top, height - top))
        return min(fit, key=lambda g: (g[1], g[0]))[0] if fit else top


class OnTop(Fit):
    """Above every neighbour, each one's end rounded up to *its* alignment (TVM), then
    to the buffer's own; no gap filling."""

    def end(self, offset: int, b: Buffer) -> int:
        return align_up(offset + b.size, b.alignment)

    def offset(self, b: Buffer, placed: list[Block], height: int) -> int:
        return align_up(max((end for _, end in placed), default=0), b.alignment)


FIRST_FIT, BEST_FIT, HEAP_BEST_FIT, ON_TOP = FirstFit(), BestFit(), HeapBestFit(), OnTop()


def place(buffers: Sequence[Buffer], order: Sequence[int], fit: Fit,
          conf: list[list[int]] | None = None, deadline: Deadline | None = None) -> list[int]:
    """Offsets by index: the fixed buffers at their offsets, then the others in ``order``
    (fixed ones in it are skipped), each where ``fit`` puts it among its placed
    time-neighbours (``conf``, from ``conflicts``). Past ``deadline`` the rest is
    stacked (``stack_rest``) and ``deadline.hit`` is set.
    """
    conf = conflicts(buffers, deadline) if conf is None else conf
    offsets = [-1] * len(buffers)  # -1: not placed yet
    ends = [0] * len(buffers)
    height = 0
    for i, b in enumerate(buffers):
        if b.fixed_offset is not None:
            offsets[i] = b.fixed_offset
            ends[i] = fit.end(b.fixed_offset, b)
            height = max(height, b.fixed_offset + b.size)
    for k, i in enumerate(order):
        b = buffers[i]
        if b.fixed_offset is not None:
            continue
        if deadline is not None and deadline.expired():
            rest = [j for j in order[k:] if buffers[j].fixed_offset is None]
            return stack_rest(buffers, [o if o >= 0 else None for o in offsets], rest)
        o = fit.offset(b, [(offsets[j], ends[j]) for j in conf[i] if offsets[j] >= 0], height)
        offsets[i] = o
        ends[i] = fit.end(o, b)
        height = max(height, o + b.size)
    return offsets


def stack_rest(buffers: Sequence[Buffer], offsets: list[int | None], rest: Sequence[int]) -> list[int]:
    """Finish a layout: ``rest`` (unplaced, non-fixed buffers) stacked in that order above
    every placed one without reuse -- what ``naive`` does, and how a pass the deadline
    cut short ends. Always valid, whatever is placed; O(n). Returns ``offsets`` completed.
    """
    todo = set(rest)
    top = max((o + b.size for i, (b, o) in enumerate(zip(buffers, offsets))
               if o is not None and i not in todo), default=0)
    for i in rest:
        b = buffers[i]
        o = align_up(top, b.alignment)
        offsets[i] = o
        top = o + b.size
    return [int(o) for o in offsets]  # type: ignore[arg-type]  # every one is set now


def start_order(buffers: Sequence[Buffer]) -> list[int]:
    """first_fit's order: by first op, the longer-lived first (a linear scan's arrivals)."""
    return sorted(range(len(buffers)), key=lambda i: (buffers[i].start, -buffers[i].end, i))


def size_order(buffers: Sequence[Buffer]) -> list[int]:
    """greedy_size's order (TFLite Micro's greedy planner): the largest first."""
    return sorted(range(len(buffers)), key=lambda i: (-buffers[i].size, i))


def heuristic_plan(problem: Problem, offsets: Sequence[int], planner: str, t0: float,
                   stats: Sequence[tuple[str, int]] = (), deadline: Deadline | None = None,
                   lb: int | None = None) -> Plan:
    """Wrap a one-pass layout as a Plan (optimal None: a heuristic makes no claim).

    A deadline that cut the pass short (``deadline.hit``) makes the status TIME_LIMIT.
    lb: the load bound if the planner has it already (O(n log n) to recompute).
    """
    return Plan(
        offsets=tuple(int(o) for o in offsets),
        arena_size=arena_size(problem.buffers, offsets),
        planner=planner,
        optimal=None,
        status=Status.TIME_LIMIT if deadline is not None and deadline.hit else Status.HEURISTIC,
        lower_bound=lower_bound(problem.buffers) if lb is None else lb,
        seconds=time.perf_counter() - t0,
        stats=tuple(stats),
    )
