"""An independent check of a plan, in O(n log n).

It shares no code with the planners (not even the lower-bound sweep), so a
planner bug cannot hide behind the same helper. Overlaps are found by a sweep
over time: the buffers live at the current op are kept in offset order
(``_Ordered``), and each buffer, when it comes alive, is compared with its
neighbours in that order only. That is enough: if x overlapped some live y,
the live buffer just below x (or just above it) overlaps x too, since the live
set is kept overlap-free (a buffer found overlapping is reported and left
out). So every plan with an overlap gets at least one OVERLAP, a valid plan
none; a buffer that only overlaps a left-out one is not reported again.
The same sweep runs compiled (``validate.c``, built on first use by ``core.native``) where a
C compiler is: at 100,000 buffers ~0.03 CPU-s where this Python one takes ~1 (issue 39: the
time limit covers validation), which the tests hold equal to it; the pairwise check it
replaced (still the reference in tests/plan/test_validate.py) took 11.
Returns the violations with their reasons; an empty list means valid.
"""

from __future__ import annotations

import ctypes
import dataclasses
import enum
from bisect import bisect_left, bisect_right, insort
from pathlib import Path
from typing import Sequence

import numpy as np

from arena_tool.core import native
from arena_tool.core.cache import machine_cache
from arena_tool.core.problem import ColumnBuffers, Problem

SOURCE = Path(__file__).with_name("validate.c")


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
    """Largest sum of sizes live at one op: sizes added at each start and taken off
    after each end, summed in time order (a take-off sorts before an add at one op: the
    take-offs come first and the sort is stable, a radix sort 10x faster than lexsort)."""
    if not len(size):
        return 0
    at = np.concatenate([end + 1, start])
    delta = np.concatenate([-size, size])
    order = np.argsort(at, kind="stable")
    return max(0, int(np.cumsum(delta[order]).max()))


class _Ordered:
    """A sorted list of (offset, index) keys cut into chunks of at most CHUNK, so an
    insertion or removal moves one chunk, not the whole live set; ``mins`` holds each
    chunk's first key for the bisection that finds the chunk."""

    CHUNK = 512

    def __init__(self) -> None:
        self.chunks: list[list[tuple[int, int]]] = []
        self.mins: list[tuple[int, int]] = []

    def _find(self, key: tuple[int, int]) -> int:
        """The chunk that holds ``key`` or would: the last one starting at or below it."""
        return max(0, bisect_right(self.mins, key) - 1)

    def neighbours(self, key: tuple[int, int]) -> tuple[tuple[int, int] | None, tuple[int, int] | None]:
        """The largest key below ``key`` and the smallest above it."""
        chunks = self.chunks
        if not chunks:
            return None, None
        c = self._find(key)
        ch = chunks[c]
        i = bisect_left(ch, key)
        below = ch[i - 1] if i else (chunks[c - 1][-1] if c else None)
        above = ch[i] if i < len(ch) else (chunks[c + 1][0] if c + 1 < len(chunks) else None)
        return below, above

    def add(self, key: tuple[int, int]) -> None:
        chunks, mins = self.chunks, self.mins
        if not chunks:
            chunks.append([key])
            mins.append(key)
            return
        c = self._find(key)
        ch = chunks[c]
        insort(ch, key)
        mins[c] = ch[0]
        if len(ch) > self.CHUNK:
            half = len(ch) // 2
            chunks.insert(c + 1, ch[half:])
            mins.insert(c + 1, ch[half])
            del ch[half:]

    def remove(self, key: tuple[int, int]) -> None:
        c = self._find(key)
        ch = self.chunks[c]
        del ch[bisect_left(ch, key)]
        if ch:
            self.mins[c] = ch[0]
        else:
            del self.chunks[c]
            del self.mins[c]


def _library() -> ctypes.CDLL | None:
    """validate.c compiled, or None (no compiler, ARENA_NATIVE=0)."""
    lib = native.library("arena_validate", (SOURCE,), machine_cache())
    if lib is not None and lib.arena_overlaps.restype is not ctypes.c_int64:
        p = ctypes.POINTER(ctypes.c_int64)
        lib.arena_overlaps.restype = ctypes.c_int64
        lib.arena_overlaps.argtypes = [ctypes.c_int64, p, p, p, p, p]
    return lib


def _overlaps_c(lib: ctypes.CDLL, start: np.ndarray, end: np.ndarray, size: np.ndarray,
                offsets: np.ndarray) -> list[tuple[int, int]] | None:
    """``_overlaps`` by validate.c: the same pairs; None when it ran out of memory."""
    n = len(size)
    pairs = np.empty(2 * n + 2, dtype=np.int64)
    p = ctypes.POINTER(ctypes.c_int64)
    arrays = [np.ascontiguousarray(a, dtype=np.int64) for a in (start, end, size, offsets)]
    found = lib.arena_overlaps(n, *(a.ctypes.data_as(p) for a in arrays), pairs.ctypes.data_as(p))
    if found < 0:
        return None
    return sorted(set(zip(pairs[0:2 * found:2].tolist(), pairs[1:2 * found:2].tolist())))


def _overlaps(problem: Problem, offsets: Sequence[int]) -> list[tuple[int, int]]:
    """Pairs (i, j) of buffers live at a common op with intersecting bytes, by the sweep
    of the module docstring. Zero-size buffers hold no bytes and are skipped."""
    bufs = problem.buffers
    order = sorted((b.start, i) for i, b in enumerate(bufs) if b.size > 0)
    ends = sorted((b.end, i) for i, b in enumerate(bufs) if b.size > 0)
    live = _Ordered()
    inside = [False] * len(bufs)
    out: list[tuple[int, int]] = []
    k = 0
    for t, i in order:
        while k < len(ends) and ends[k][0] < t:
            j = ends[k][1]
            if inside[j]:
                live.remove((offsets[j], j))
            k += 1
        key = (offsets[i], i)
        below, above = live.neighbours(key)
        lo, hi = offsets[i], offsets[i] + bufs[i].size
        bad = [n[1] for n in (below, above)
               if n is not None and n[0] < hi and lo < n[0] + bufs[n[1]].size]
        if bad:
            out.extend((min(i, j), max(i, j)) for j in bad)
            continue
        live.add(key)
        inside[i] = True
    return sorted(set(out))


def violations(problem: Problem, offsets: Sequence[int], arena_size: int, compiled: bool = True) -> list[Violation]:
    """Every violation of the plan; ``compiled``: the overlap sweep by validate.c where it
    builds (the same pairs), else in Python."""
    bufs = problem.buffers
    out: list[Violation] = []
    if len(offsets) != len(bufs):
        return [Violation(Reason.COUNT, f"{len(offsets)} offsets for {len(bufs)} buffers")]
    n = len(bufs)
    off = np.array(offsets, dtype=np.int64)
    if isinstance(bufs, ColumnBuffers):  # the problem's own arrays, as read (no Buffer per row)
        cols = bufs.columns
        size, align, start, end = cols.size, np.maximum(cols.align, 1), cols.start, cols.end
        fixed = cols.fixed >= 0
    else:
        size = np.fromiter((b.size for b in bufs), dtype=np.int64, count=n)
        align = np.fromiter((max(b.alignment, 1) for b in bufs), dtype=np.int64, count=n)
        start = np.fromiter((b.start for b in bufs), dtype=np.int64, count=n)
        end = np.fromiter((b.end for b in bufs), dtype=np.int64, count=n)
        fixed = np.fromiter((b.fixed_offset is not None for b in bufs), dtype=bool, count=n)
    top = off + size
    flagged = (off < 0) | (off % align != 0) | (top > arena_size) | fixed  # a fixed one: checked below
    if problem.capacity is not None:
        flagged |= top > problem.capacity
    for i in np.flatnonzero(flagged).tolist():  # the per-buffer checks, only where one may fail
        b, o = bufs[i], int(off[i])
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
    lib = _library() if compiled else None
    pairs = None if lib is None else _overlaps_c(lib, start, end, size, off)
    if pairs is None:
        pairs = _overlaps(problem, off.tolist())
    for i, j in pairs:
        a, oa, b, ob = bufs[i], int(off[i]), bufs[j], int(off[j])
        out.append(Violation(
            Reason.OVERLAP,
            f"{a.name} [{oa}, {oa + a.size}) ops {a.start}..{a.end} and "
            f"{b.name} [{ob}, {ob + b.size}) ops {b.start}..{b.end}",
        ))
    highest = int(top.max()) if n else 0
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
