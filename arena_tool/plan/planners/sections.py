"""The sections of a problem and what they bound: the instance the decision search
(``search.py``) runs on, like minimalloc's sweeper.

A *section* is a span of ops with a constant live set; a buffer spans an interval
of sections. ``instance`` scales a problem by the largest unit that loses nothing
(every size, fixed offset and alignment a whole number of units, or an alignment
that divides the unit), numbers the sections, and lists each buffer's
time-neighbours. ``stack_bound`` is a lower bound on the height that counts the
padding mixed alignments force; ``preorder`` ranks the buffers under one of
minimalloc's key strings. Everything derived is cached on the instance, so the
restarts of one search and the searches of one part share it.

Worked example: buffers a 0..1, b 1..2, c 2..2 (inclusive ops) give the section
points 0, 1, 2, 3 and sections [0], [1], [2]: a spans sections 0..1, b 1..2,
c 2..2; the live set of section 1 is {a, b}.
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Any, Sequence

import numpy as np

from arena_tool.core.problem import Buffer, ColumnBuffers, Columns


# size, align, fixed, s0, s1 by buffer; overlaps by buffer; members by section
Lists = tuple[list[int], list[int], list[int], list[int], list[int], list[list[int]], list[list[int]]]


@dataclasses.dataclass
class Instance:
    """A problem scaled by a common unit of all sizes, alignments and fixed offsets.

    size/align/fixed are in units of ``unit`` bytes (fixed = -1 when free);
    s0/s1: first and last section index of each buffer (inclusive);
    overlaps[i]: indices of the buffers live together with i.
    """

    unit: int
    size: np.ndarray
    align: np.ndarray
    fixed: np.ndarray
    s0: np.ndarray
    s1: np.ndarray
    n_sections: int
    start: np.ndarray
    end: np.ndarray
    overlaps: list[np.ndarray] | None = None  # built by ``neighbours`` (only the search reads them)
    cache: dict[Any, Any] = dataclasses.field(default_factory=dict, repr=False)

    @property
    def n(self) -> int:
        return len(self.size)

    def section_loads(self) -> np.ndarray:
        load = np.zeros(self.n_sections + 1, dtype=np.int64)
        np.add.at(load, self.s0, self.size)
        np.add.at(load, self.s1 + 1, -self.size)
        return np.cumsum(load)[:-1]

    def cuts(self) -> np.ndarray:
        """Per boundary b (between sections b and b + 1), the buffers that span it."""
        diff = np.zeros(self.n_sections + 1, dtype=np.int64)
        np.add.at(diff, self.s0, 1)
        np.add.at(diff, self.s1, -1)
        return np.cumsum(diff)[:self.n_sections]

    def neighbours(self, deadline: float | None = None) -> bool:
        """Build ``overlaps``; False when ``deadline`` (perf_counter) passes first.

        A sweep in start order: buffer i meets those starting in [.., end_i] (a slice
        of the start order) that end at or after start_i, and the slice begins where
        the running maximum of ends reaches start_i, so each row costs about its
        neighbourhood, not n.
        """
        if self.overlaps is not None:
            return True
        start, end = self.start, self.end
        by_start = np.argsort(start, kind="stable")
        reach = np.maximum.accumulate(end[by_start]) if self.n else end
        lo = np.searchsorted(reach, start, side="left").tolist()
        hi = np.searchsorted(start[by_start], end, side="right").tolist()
        overlaps = []
        for i in range(self.n):
            if deadline is not None and i % 64 == 0 and time.perf_counter() > deadline:
                return False
            cand = by_start[lo[i]:hi[i]]
            cand = cand[(end[cand] >= start[i]) & (cand != i)]
            cand.sort()
            overlaps.append(cand)
        self.overlaps = overlaps
        return True

    def lists(self) -> "Lists":
        """The arrays as Python lists (the search indexes them one at a time)."""
        if "lists" not in self.cache:
            self.neighbours()
            assert self.overlaps is not None
            members: list[list[int]] = [[] for _ in range(self.n_sections)]
            for y, (a, b) in enumerate(zip(self.s0.tolist(), self.s1.tolist())):
                for s in range(a, b + 1):
                    members[s].append(y)
            self.cache["lists"] = (self.size.tolist(), self.align.tolist(), self.fixed.tolist(),
                                   self.s0.tolist(), self.s1.tolist(),
                                   [o.tolist() for o in self.overlaps], members)
        lists: Lists = self.cache["lists"]
        return lists


_last: tuple[Sequence[Buffer], Columns] | None = None


def columns(buffers: Sequence[Buffer]) -> Columns:
    """The buffers' fields as arrays: a ColumnBuffers' own, or made once for the sequence last
    asked about (issue 39: the load bound, the parts and the instance each read 100,000 buffers'
    fields, ~0.03 CPU-s a field a pass, before the planner's first clock read)."""
    global _last
    if isinstance(buffers, ColumnBuffers):
        return buffers.columns
    if _last is not None and _last[0] is buffers:  # a tuple (a list may change in between)
        return _last[1]
    n = len(buffers)

    def field(get: Any) -> np.ndarray:
        return np.fromiter(map(get, buffers), dtype=np.int64, count=n)

    cols = Columns(field(lambda b: b.size), field(lambda b: b.start), field(lambda b: b.end),
                   field(lambda b: b.alignment),
                   field(lambda b: -1 if b.fixed_offset is None else b.fixed_offset))
    for a in (cols.size, cols.start, cols.end, cols.align, cols.fixed):
        a.flags.writeable = False  # shared by every caller
    if isinstance(buffers, tuple):
        _last = (buffers, cols)
    return cols


def _unit(cols: Columns) -> int:
    """Largest g dividing every size and fixed offset such that every alignment
    either divides g (always met) or is a multiple of it (scales to a/g)."""
    g = int(np.gcd.reduce(np.concatenate([cols.size, np.maximum(cols.fixed, 0)]))) if len(cols.size) else 0
    g = g or 1
    values, first = np.unique(cols.align, return_index=True)
    aligns = values[np.argsort(first)].tolist()  # in the buffers' order, as the fixpoint was reached
    changed = True
    while changed:
        changed = False
        for a in aligns:
            if g % a and a % g:
                g = math.gcd(g, a)
                changed = True
    return g


def instance(buffers: Sequence[Buffer]) -> Instance:
    """The scaled instance, its sections numbered (vectorized: the overlaps wait for
    ``Instance.neighbours``)."""
    cols = columns(buffers)
    n = len(buffers)
    g = _unit(cols)
    size = cols.size // g
    align = np.where(cols.align % g == 0, np.maximum(cols.align // g, 1), 1)
    fixed = np.where(cols.fixed < 0, -1, cols.fixed // g)
    start, end = cols.start, cols.end
    points = np.sort(np.concatenate([start, end + 1]))  # np.unique's: its hash table is 2x slower
    points = points[np.concatenate([[True], points[1:] != points[:-1]])] if n else points  # and imports numpy.ma
    s0 = np.searchsorted(points, start)
    s1 = np.searchsorted(points, end + 1) - 1
    return Instance(g, size, align, fixed, s0.astype(np.int64), s1.astype(np.int64),
                    max(len(points) - 1, 0), start, end)


def span_max(values: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """max(values[lo[i]:hi[i] + 1]) for every i, by a sparse table: O(S log S + n)."""
    if not len(lo):
        return np.zeros(0, dtype=values.dtype)
    table = [values]
    width = 1
    while 2 * width <= len(values):
        prev = table[-1]
        table.append(np.maximum(prev[:-width], prev[width:]))
        width *= 2
    length = hi - lo + 1
    k = np.floor(np.log2(length)).astype(np.int64)
    out = np.empty(len(lo), dtype=values.dtype)
    for j in np.flatnonzero(np.bincount(k)).tolist():  # the k present (np.unique would import numpy.ma)
        sel = k == j
        row = table[j]
        out[sel] = np.maximum(row[lo[sel]], row[hi[sel] - (1 << j) + 1])
    return out


def overlap_counts(start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """How many other buffers each one meets: all but those ending before it starts
    or starting after it ends."""
    ends, starts = np.sort(end), np.sort(start)
    before = np.searchsorted(ends, start, side="left")
    after = len(start) - np.searchsorted(starts, end, side="right")
    return np.asarray(len(start) - before - after - 1, dtype=np.int64)


STACK_STATES = 4096  # largest multiset DP per section; bigger sections use their load


def stack_height(items: list[tuple[int, int]], base: int = 0) -> int:
    """Lowest top of a stack of (size, alignment) items above ``base``, each aligned.

    Items live at a common op, so in any layout they sit one above the other and
    each at best at its alignment above the one below: the minimum over orders
    of that stack, by dynamic programming over the multiset of items used
    (align_up(h) + size grows with h, so the lowest top per multiset suffices).
    Returns -1 when the multiset has more than STACK_STATES states.
    """
    kinds = sorted(set(items))
    counts = [items.count(k) for k in kinds]
    radix = [1]
    for c in counts:
        radix.append(radix[-1] * (c + 1))
    if radix[-1] > STACK_STATES:
        return -1
    f = [base] + [-1] * (radix[-1] - 1)
    for code in range(radix[-1] - 1):
        h = f[code]
        if h < 0:
            continue
        for j, (sz, al) in enumerate(kinds):
            if code // radix[j] % (counts[j] + 1) < counts[j]:
                v = -(-h // al) * al + sz
                nxt = code + radix[j]
                if f[nxt] < 0 or v < f[nxt]:
                    f[nxt] = v
    return f[-1]


def stack_bound(inst: Instance, deadline: float | None = None) -> int:
    """A lower bound (scaled units) on the height, alignment padding included.

    The load bound ignores the padding mixed alignments force between buffers
    live at one op; this takes, per section, the lowest aligned stack of its
    members (``stack_height``; the load where that is too big to enumerate).
    A fixed buffer counts with alignment 1 (its offset need not be aligned), so
    the stack stays a relaxation. Too big to enumerate, or one alignment shared:
    every offset is a multiple of g, the gcd of the alignments, so each buffer
    but the top one takes align_up(size, g) -- the top one being the one that
    pads most. With g = 1 that is the load bound. Past ``deadline`` (perf_counter): the
    bound of the sections seen so far.
    """
    if "stack_bound" in inst.cache:
        cached: int = inst.cache["stack_bound"]
        return cached
    if not (inst.align > 1).any():  # every stack is its load: the load bound, by the array
        inst.cache["stack_bound"] = int(inst.section_loads().max(initial=0))
        return int(inst.cache["stack_bound"])
    size, align, fixed, _, _, _, members = inst.lists()
    best = 0
    seen: set[tuple[tuple[int, int], ...]] = set()
    for k, m in enumerate(members):
        if deadline is not None and k % 64 == 0 and time.perf_counter() > deadline:
            return best  # the sections seen so far: still a bound, not cached
        items = sorted((size[y], align[y] if fixed[y] < 0 else 1) for y in m)
        if not items or tuple(items) in seen:
            continue
        seen.add(tuple(items))
        g = 0
        for _, a in items:
            g = math.gcd(g, a)
        up = [-(-sz // g) * g for sz, _ in items]
        h = sum(up) - max(u - sz for u, (sz, _) in zip(up, items))
        if any(a != g for _, a in items):
            h = max(h, stack_height(items))
        if h > best:
            best = h
    inst.cache["stack_bound"] = best
    return best


def preorder(inst: Instance, heuristic: str) -> np.ndarray:
    """Rank of each buffer under a key string, each key descending, index last.

    Keys (as minimalloc names them): W width in ops, A area (size x width),
    T total (largest section load the buffer spans), Z size, O overlaps, L start
    (earliest first), U end (latest first), S start (latest first), E end (earliest first),
    C sections spanned. The key arrays and each ranking are computed once per instance.
    """
    if ("rank", heuristic) in inst.cache:
        ranked: np.ndarray = inst.cache["rank", heuristic]
        return ranked
    keys = inst.cache.get("keys")
    if keys is None:
        total = span_max(inst.section_loads(), inst.s0, inst.s1)
        width = inst.end - inst.start + 1
        keys = inst.cache["keys"] = {
            "W": width, "A": width * inst.size, "T": total, "Z": inst.size,
            "O": overlap_counts(inst.start, inst.end), "L": -inst.start,
            "U": inst.end, "S": inst.start, "E": -inst.end, "C": inst.s1 - inst.s0 + 1}
    cols = [np.arange(inst.n)] + [-keys[c] for c in reversed(heuristic)]
    order = np.lexsort(cols)
    rank = np.empty(inst.n, dtype=np.int64)
    rank[order] = np.arange(inst.n)
    inst.cache["rank", heuristic] = rank
    return rank
