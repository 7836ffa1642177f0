"""An independent, deliberately naive check of a plan.

O(n^2) over all pairs (numpy runs each row of the pair matrix) and shares no
code with the planners (not even the lower-bound sweep), so a planner bug
cannot hide behind the same helper.
Returns every violation with its reason; an empty list means valid.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Sequence

import numpy as np

from arena_tool.core.problem import Problem


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


def _live_load_peak(start: np.ndarray, end: np.ndarray, size: np.ndarray) -> int:
    """Sum of sizes live at each buffer's start (where the peak must be), by brute force."""
    return max((int(size[(start <= t) & (end >= t)].sum()) for t in np.unique(start)), default=0)


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
    # Every pair, naively; numpy only runs the inner loop (one row of the pair matrix at a time).
    start = np.array([b.start for b in bufs], dtype=np.int64)
    end = np.array([b.end for b in bufs], dtype=np.int64)
    size = np.array([b.size for b in bufs], dtype=np.int64)
    off = np.array(offsets, dtype=np.int64)
    for i in range(len(bufs)):
        rest = slice(i + 1, None)
        live_together = (start[i] <= end[rest]) & (start[rest] <= end[i])
        share_bytes = (off[i] < off[rest] + size[rest]) & (off[rest] < off[i] + size[i])
        for j in (i + 1 + np.flatnonzero(live_together & share_bytes)).tolist():
            a, oa, b, ob = bufs[i], offsets[i], bufs[j], offsets[j]
            out.append(Violation(
                Reason.OVERLAP,
                f"{a.name} [{oa}, {oa + a.size}) ops {a.start}..{a.end} and "
                f"{b.name} [{ob}, {ob + b.size}) ops {b.start}..{b.end}",
            ))
    highest = max((o + b.size for b, o in zip(bufs, offsets)), default=0)
    if highest != arena_size and not out:
        out.append(Violation(Reason.ARENA_SIZE, f"arena_size {arena_size}, highest end {highest}"))
    peak = _live_load_peak(start, end, size)
    if arena_size < peak:
        out.append(Violation(Reason.BELOW_BOUND, f"arena_size {arena_size} < lower bound {peak}"))
    return out


def check(problem: Problem, offsets: Sequence[int], arena_size: int) -> None:
    """Raise AssertionError naming every violation; for tests and planner self-checks."""
    found = violations(problem, offsets, arena_size)
    if found:
        raise AssertionError("; ".join(f"{v.reason.value}: {v.message}" for v in found[:10]))
