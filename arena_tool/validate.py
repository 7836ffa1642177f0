"""An independent, deliberately naive check of a plan.

O(n^2) over all pairs and shares no code with the planners (not even the
lower-bound sweep), so a planner bug cannot hide behind the same helper.
Returns every violation with its reason; an empty list means valid.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Sequence

from arena_tool.problem import Buffer, Problem


class Reason(enum.Enum):
    OVERLAP = "overlap"
    MISALIGNED = "misaligned"
    NEGATIVE = "negative offset"
    BEYOND_ARENA = "beyond arena_size"
    BEYOND_CAPACITY = "beyond capacity"
    FIXED_MOVED = "fixed offset moved"
    ARENA_SIZE = "arena_size is not the highest buffer end"
    BELOW_BOUND = "arena below the lower bound"
    COUNT = "offset count differs from buffer count"


@dataclasses.dataclass(frozen=True)
class Violation:
    reason: Reason
    message: str


def _live_load_peak(buffers: Sequence[Buffer]) -> int:
    """Sum of sizes live at each buffer's start (where the peak must be), by brute force."""
    starts = sorted({b.start for b in buffers})
    return max((sum(b.size for b in buffers if b.start <= t <= b.end) for t in starts), default=0)


def violations(problem: Problem, offsets: Sequence[int], arena_size: int) -> list[Violation]:
    bufs = problem.buffers
    out: list[Violation] = []
    if len(offsets) != len(bufs):
        return [Violation(Reason.COUNT, f"{len(offsets)} offsets for {len(bufs)} buffers")]
    for b, o in zip(bufs, offsets):
        if o < 0:
            out.append(Violation(Reason.NEGATIVE, f"{b.name} at {o}"))
        if o % max(b.alignment, 1):
            out.append(Violation(Reason.MISALIGNED, f"{b.name} at {o} is not a multiple of {b.alignment}"))
        if o + b.size > arena_size:
            out.append(Violation(Reason.BEYOND_ARENA, f"{b.name} ends at {o + b.size} > arena_size {arena_size}"))
        if problem.capacity is not None and o + b.size > problem.capacity:
            out.append(Violation(Reason.BEYOND_CAPACITY, f"{b.name} ends at {o + b.size} > capacity {problem.capacity}"))
        if b.fixed_offset is not None and o != b.fixed_offset:
            out.append(Violation(Reason.FIXED_MOVED, f"{b.name} at {o}, fixed at {b.fixed_offset}"))
    for i in range(len(bufs)):
        a, oa = bufs[i], offsets[i]
        for j in range(i + 1, len(bufs)):
            b, ob = bufs[j], offsets[j]
            live_together = a.start <= b.end and b.start <= a.end
            share_bytes = oa < ob + b.size and ob < oa + a.size
            if live_together and share_bytes:
                out.append(Violation(
                    Reason.OVERLAP,
                    f"{a.name} [{oa}, {oa + a.size}) ops {a.start}..{a.end} and "
                    f"{b.name} [{ob}, {ob + b.size}) ops {b.start}..{b.end}",
                ))
    highest = max((o + b.size for b, o in zip(bufs, offsets)), default=0)
    if highest != arena_size and not out:
        out.append(Violation(Reason.ARENA_SIZE, f"arena_size {arena_size}, highest end {highest}"))
    peak = _live_load_peak(bufs)
    if arena_size < peak:
        out.append(Violation(Reason.BELOW_BOUND, f"arena_size {arena_size} < lower bound {peak}"))
    return out


def check(problem: Problem, offsets: Sequence[int], arena_size: int) -> None:
    """Raise AssertionError naming every violation; for tests and planner self-checks."""
    found = violations(problem, offsets, arena_size)
    if found:
        raise AssertionError("; ".join(f"{v.reason.value}: {v.message}" for v in found[:10]))
