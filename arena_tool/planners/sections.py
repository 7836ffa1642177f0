"""The decision search behind ``optimal``: "does every buffer fit under capacity C?"

Designed after the ideas of minimalloc (Moffitt, ASPLOS'23) and written from its
description, not its code. It enumerates *canonical* solutions only: buffers are
placed in increasing (offset, rank) order, each exactly at its current
``min_off`` -- on the floor, or resting on a time-overlapping buffer below it.
Every valid layout, dropped by gravity, is such a sequence, so an exhausted
search proves infeasibility.

Pruning rules (each can be switched off, see ``Rules``; none changes the answer):
  canonical  -- placements strictly increase in (offset, rank).
  dominance  -- never place at an offset >= min(min_off + size) over the unplaced
                non-fixed buffers: that buffer would have dropped below.
  sections   -- per section (a span of ops with a constant live set):
                max(top of placed, last offset) + unplaced size in it <= C;
                with mixed alignments, the lowest aligned stack of its unplaced
                buffers above the top of placed (``_stack_height``) <= C.
  floor      -- per section: lowest min_off of its unplaced buffers + their size <= C
                (minimalloc's "unallocated floor"); checked per buffer as
                min_off + the largest unplaced load of its sections <= C.
  hatless    -- if a placed buffer overlaps no unplaced one and its subtree fails,
                the siblings fail too (the placement changed nothing else).
  decompose  -- when no unplaced buffer crosses a section boundary any more, the
                unplaced buffers on either side never meet again: each side is
                solved on its own, and a failing side is never retried by
                backtracking into the other (minimalloc's dynamic decomposition).
  cover      -- (with canonical) a section whose unplaced load exactly fills the
                room above the current level L needs a candidate at exactly L
                spanning it, or the node fails; and a candidate at a higher level
                that leaves some section too full for that level is skipped
                without a node (its child would fail at once).

Per node the work is incremental: placing x touches x's sections and the buffers
overlapping x (plain Python lists, an undo trail), and only the unplaced buffers
of the current part are scanned for candidates.

Fixed-offset buffers take their turn in the same order, at their fixed offset,
and only while nothing placed below them collides.

Worked example (minimalloc's input.12, half-open -> inclusive):
  b1 4@0..2, b2 4@3..8, b3 4@0..8, b4 4@9..20, b5 4@0..20, C = 12:
  b5@0, b3@4, b1@8, b4@4, b2@8 -- the first canonical sequence found.
"""

from __future__ import annotations

import dataclasses
import math
import sys
import time
from typing import Sequence

import numpy as np

from arena_tool.problem import Buffer


@dataclasses.dataclass(frozen=True)
class Rules:
    canonical: bool = True
    dominance: bool = True
    sections: bool = True
    hatless: bool = True
    floor: bool = True
    decompose: bool = True
    cover: bool = True


class _Abort(Exception):
    """Node limit or deadline reached."""


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
    overlaps: list[np.ndarray]
    start: np.ndarray
    end: np.ndarray
    cache: dict = dataclasses.field(default_factory=dict, repr=False)

    @property
    def n(self) -> int:
        return len(self.size)

    def section_loads(self) -> np.ndarray:
        load = np.zeros(self.n_sections + 1, dtype=np.int64)
        np.add.at(load, self.s0, self.size)
        np.add.at(load, self.s1 + 1, -self.size)
        return np.cumsum(load)[:-1]

    def lists(self) -> tuple:
        """The arrays as Python lists (the search indexes them one at a time)."""
        if "lists" not in self.cache:
            members: list[list[int]] = [[] for _ in range(self.n_sections)]
            for y, (a, b) in enumerate(zip(self.s0.tolist(), self.s1.tolist())):
                for s in range(a, b + 1):
                    members[s].append(y)
            self.cache["lists"] = (self.size.tolist(), self.align.tolist(), self.fixed.tolist(),
                                   self.s0.tolist(), self.s1.tolist(),
                                   [o.tolist() for o in self.overlaps], members)
        return self.cache["lists"]


def _unit(buffers: Sequence[Buffer]) -> int:
    """Largest g dividing every size and fixed offset such that every alignment
    either divides g (always met) or is a multiple of it (scales to a/g)."""
    g = 0
    for b in buffers:
        g = math.gcd(g, b.size, b.fixed_offset or 0)
    g = g or 1
    changed = True
    while changed:
        changed = False
        for b in buffers:
            if g % b.alignment and b.alignment % g:
                g = math.gcd(g, b.alignment)
                changed = True
    return g


def instance(buffers: Sequence[Buffer]) -> Instance:
    n = len(buffers)
    g = _unit(buffers)
    size = np.array([b.size // g for b in buffers], dtype=np.int64)
    align = np.array([max(b.alignment // g, 1) if b.alignment % g == 0 else 1 for b in buffers],
                     dtype=np.int64)
    fixed = np.array([-1 if b.fixed_offset is None else b.fixed_offset // g for b in buffers], dtype=np.int64)
    start = np.array([b.start for b in buffers], dtype=np.int64)
    end = np.array([b.end for b in buffers], dtype=np.int64)
    points = np.unique(np.concatenate([start, end + 1])) if n else np.zeros(0, dtype=np.int64)
    s0 = np.searchsorted(points, start)
    s1 = np.searchsorted(points, end + 1) - 1
    overlaps = []
    for i in range(n):
        m = (start <= end[i]) & (start[i] <= end)
        m[i] = False
        overlaps.append(np.flatnonzero(m))
    return Instance(g, size, align, fixed, s0.astype(np.int64), s1.astype(np.int64),
                    max(len(points) - 1, 0), overlaps, start, end)


STACK_STATES = 4096  # largest multiset DP per section; bigger sections use their load


def _stack_height(items: list[tuple[int, int]], base: int = 0) -> int:
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


def stack_bound(inst: Instance) -> int:
    """A lower bound (scaled units) on the height, alignment padding included.

    The load bound ignores the padding mixed alignments force between buffers
    live at one op; this takes, per section, the lowest aligned stack of its
    members (``_stack_height``; the load where that is too big to enumerate).
    A fixed buffer counts with alignment 1 (its offset need not be aligned), so
    the stack stays a relaxation. Too big to enumerate, or one alignment shared:
    every offset is a multiple of g, the gcd of the alignments, so each buffer
    but the top one takes align_up(size, g) -- the top one being the one that
    pads most. With g = 1 that is the load bound.
    """
    if "stack_bound" in inst.cache:
        return inst.cache["stack_bound"]
    size, align, fixed, _, _, _, members = inst.lists()
    best = 0
    seen: set[tuple[tuple[int, int], ...]] = set()
    for m in members:
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
            h = max(h, _stack_height(items))
        if h > best:
            best = h
    inst.cache["stack_bound"] = best
    return best


def preorder(inst: Instance, heuristic: str) -> np.ndarray:
    """Rank of each buffer under a key string, each key descending, index last.

    Keys (as minimalloc names them): W width in ops, A area (size x width),
    T total (largest section load the buffer spans), Z size, O overlaps, L start
    (earliest first), U end (latest first), S start (latest first), E end (earliest first),
    C sections spanned.
    """
    load = inst.section_loads()
    total = np.array([load[a:b + 1].max() for a, b in zip(inst.s0, inst.s1)], dtype=np.int64) if inst.n else np.zeros(0, np.int64)
    width = inst.end - inst.start + 1
    keys = {"W": width, "A": width * inst.size, "T": total, "Z": inst.size,
            "O": np.array([len(o) for o in inst.overlaps], dtype=np.int64), "L": -inst.start,
            "U": inst.end, "S": inst.start, "E": -inst.end, "C": inst.s1 - inst.s0 + 1}
    cols = [np.arange(inst.n)] + [-keys[c] for c in reversed(heuristic)]
    order = np.lexsort(cols)
    rank = np.empty(inst.n, dtype=np.int64)
    rank[order] = np.arange(inst.n)
    return rank


@dataclasses.dataclass
class Result:
    status: str  # 'found', 'infeasible', 'aborted'
    offsets: np.ndarray | None  # scaled units
    nodes: int


def _groups(part: list[int], s0: list[int], s1: list[int]) -> list[tuple[list[int], int, int]]:
    """Split ``part`` (sorted by first section) where no buffer crosses a boundary."""
    out: list[tuple[list[int], int, int]] = []
    cur: list[int] = []
    lo = reach = -1
    for y in part:
        if s0[y] > reach:
            if cur:
                out.append((cur, lo, reach))
            cur, lo = [], s0[y]
        cur.append(y)
        if s1[y] > reach:
            reach = s1[y]
    if cur:
        out.append((cur, lo, reach))
    return out


def decide(inst: Instance, capacity: int, rank: np.ndarray, rules: Rules = Rules(),
           node_limit: int | None = None, deadline: float | None = None) -> Result:
    """Depth-first search for a canonical layout with every top <= capacity (scaled units)."""
    n = inst.n
    if n == 0:
        return Result("found", np.zeros(0, dtype=np.int64), 0)
    size, align, fixed, s0, s1, ovl, members = inst.lists()
    C = int(capacity)
    rk = rank.tolist()
    if any(size[i] > C or (fixed[i] >= 0 and fixed[i] + size[i] > C) for i in range(n)):
        return Result("infeasible", None, 0)
    n_sec = inst.n_sections
    sec_sum = inst.section_loads().tolist()
    use_sections, use_floor, canonical = rules.sections, rules.floor, rules.canonical
    dominance, hatless, decompose = rules.dominance, rules.hatless, rules.decompose
    cover = rules.cover and canonical
    if (use_sections or use_floor) and max(sec_sum) > C:
        return Result("infeasible", None, 0)
    aligned = all(a == 1 for a in align)
    # sections with mixed alignments: the unplaced members of a section all sit
    # above its top, one above the other, so their lowest aligned stack must fit
    free_al = [align[y] if fixed[y] < 0 else 1 for y in range(n)]
    padding = use_sections and len(set(free_al)) > 1
    pad_memo = inst.cache.setdefault("pad", {})

    def padded(s: int) -> int:
        """Lowest top of section s's unplaced members stacked above sec_top[s]."""
        us = tuple(y for y in members[s] if unplaced[y])
        entry = pad_memo.get(us)
        if entry is None:
            items = sorted((size[y], free_al[y]) for y in us)
            entry = pad_memo[us] = (items, math.lcm(*(a for _, a in items)), {})
        items, period, tops = entry
        b = sec_top[s]
        r = b % period
        h = tops.get(r)
        if h is None:
            h = tops[r] = _stack_height(items, r)
        return b - r + h if h >= 0 else b + sec_sum[s]
    mo = [0] * n  # min_off: lowest offset each unplaced buffer may take
    unplaced = [True] * n
    off = [-1] * n
    sec_top = [0] * n_sec
    cuts = [0] * n_sec  # cuts[b]: unplaced buffers live in both section b and b + 1
    for y in range(n):
        for b in range(s0[y], s1[y]):
            cuts[b] += 1
    # floor: wit[s] is an unplaced member y of section s with mo[y] + sec_sum[s] <= C
    # (a buffer that can still sit low enough), kept exact through the undo trail;
    # only a placed or raised witness needs a new one, and none left is a proof.
    wit = [m[0] if m else -1 for m in members]
    mo_trail: list[tuple[int, int]] = []
    wit_trail: list[tuple[int, int]] = []
    place_trail: list[tuple[int, list[int], int, int]] = []

    def rewitness(s: int) -> int:
        thr = C - sec_sum[s]
        for y in members[s]:
            if unplaced[y] and mo[y] <= thr:
                return y
        return -1
    big = 1 << 62
    state = {"nodes": 0}
    check_every = 256
    limit = node_limit if node_limit is not None else big

    def place(x: int, o: int) -> tuple[bool, bool, bool]:
        """Put x at o; returns (consistent, hatless, some cut reached zero)."""
        a0, a1 = s0[x], s1[x] + 1
        top = o + size[x]
        place_trail.append((x, sec_top[a0:a1], len(mo_trail), len(wit_trail)))
        unplaced[x] = False
        off[x] = o
        ok = True
        zero = False
        sx = size[x]
        for s in range(a0, a1):
            sec_sum[s] -= sx
            if sec_top[s] < top:
                sec_top[s] = top
            if use_sections and sec_sum[s] and sec_top[s] + sec_sum[s] > C:
                ok = False
        if padding and ok:
            for s in range(a0, a1):
                if sec_sum[s] and padded(s) > C:
                    ok = False
                    break
        if use_floor and ok and x in wit[a0:a1]:
            for s in range(a0, a1):
                if wit[s] == x and sec_sum[s]:
                    wit_trail.append((s, x))
                    wit[s] = w = rewitness(s)
                    if w < 0:
                        ok = False
                        break
        for b in range(a0, a1 - 1):
            cuts[b] -= 1
            if not cuts[b]:
                zero = True
        hat = True
        if ok:
            for y in ovl[x]:
                if not unplaced[y]:
                    continue
                hat = False
                m = mo[y]
                t = top if aligned else -(-top // align[y]) * align[y]
                if m >= t:
                    continue
                mo_trail.append((y, m))
                mo[y] = t
                if t + size[y] > C or (fixed[y] >= 0 and t > fixed[y]):
                    ok = False
                    break
                if use_floor:
                    b0, b1 = s0[y], s1[y] + 1
                    if y not in wit[b0:b1] or t + max(sec_sum[b0:b1]) <= C:
                        continue  # it witnesses no section it may have left
                    for s in range(b0, b1):
                        if wit[s] == y and t + sec_sum[s] > C:
                            wit_trail.append((s, y))
                            wit[s] = w = rewitness(s)
                            if w < 0:
                                ok = False
                                break
                    if not ok:
                        break
        else:
            hat = not any(unplaced[y] for y in ovl[x])
        return ok, hat, zero

    def undo_to(mark: int) -> None:
        while len(place_trail) > mark:
            x, tops, k, k2 = place_trail.pop()
            while len(mo_trail) > k:
                y, m = mo_trail.pop()
                mo[y] = m
            while len(wit_trail) > k2:
                s, w = wit_trail.pop()
                wit[s] = w
            a0, a1 = s0[x], s1[x] + 1
            sx = size[x]
            for s in range(a0, a1):
                sec_sum[s] += sx
            for b in range(a0, a1 - 1):
                cuts[b] += 1
            sec_top[a0:a1] = tops
            unplaced[x] = True
            off[x] = -1

    def solve(part: list[int], sa: int, sb: int, last_off: int, last_rank: int) -> bool:
        state["nodes"] += 1
        nodes = state["nodes"]
        if nodes > limit:
            raise _Abort
        if deadline is not None and nodes % check_every == 0 and time.perf_counter() > deadline:
            raise _Abort
        if canonical and use_sections and last_off + max(sec_sum[sa:sb + 1]) > C:
            return False
        min_h = big
        if dominance:
            for y in part:
                if fixed[y] < 0:
                    h = mo[y] + size[y]
                    if h < min_h:
                        min_h = h
        cands = []
        for y in part:
            e = fixed[y] if fixed[y] >= 0 else mo[y]
            if canonical and (e < last_off or (e == last_off and rk[y] <= last_rank)):
                if fixed[y] >= 0:
                    return False
                continue
            if e < min_h:
                cands.append((e, rk[y], y))
        cands.sort()
        if cover and cands:
            # a section with no room to spare above the current level needs its
            # cell at that level covered now: by a candidate at exactly last_off
            lvl = max(last_off, 0)
            need = C - lvl
            tight = [s for s in range(sa, sb + 1) if sec_sum[s] == need]
            if tight:
                hit = set()
                for e, r, x in cands:
                    if e != lvl:
                        break
                    hit.update(range(s0[x], s1[x] + 1))
                if any(s not in hit for s in tight):
                    return False
        top_sum = max(sec_sum[sa:sb + 1]) if cover else 0
        over_e = -1
        over: list[int] = []
        for e, r, x in cands:
            if cover and e + top_sum > C:
                # the child would fail at once unless x takes every section too full
                # for the new level (skipped, not counted as a node)
                if e != over_e:
                    over_e = e
                    over = [s for s in range(sa, sb + 1) if sec_sum[s] > C - e]
                if over[0] < s0[x] or over[-1] > s1[x]:
                    continue
                if any(sec_sum[s] - size[x] > C - e for s in over):
                    continue
            mark = len(place_trail)
            ok, hat, zero = place(x, e)
            if ok:
                rest = [y for y in part if y != x]
                if not rest:
                    return True
                if decompose and zero:
                    ok = all(solve(g, ga, gb, e, r) for g, ga, gb in _groups(rest, s0, s1))
                else:
                    ok = solve(rest, sa, sb, e, r)
                if ok:
                    return True
            undo_to(mark)
            if hatless and hat:
                break
        return False

    root = sorted(range(n), key=lambda y: (s0[y], y))
    parts = _groups(root, s0, s1) if decompose else [(root, 0, n_sec - 1)]
    old_limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old_limit, 4 * n + 1000))
    try:
        found = all(solve(g, ga, gb, -1, -1) for g, ga, gb in parts)
    except _Abort:
        return Result("aborted", None, state["nodes"])
    finally:
        sys.setrecursionlimit(old_limit)
    return Result("found" if found else "infeasible",
                  np.array(off, dtype=np.int64) if found else None, state["nodes"])


# minimalloc's three defaults plus sweep orders: among buffers at the same min_off,
# U takes the one reaching latest first, L the one starting earliest (time-mirrored
# twins); on zero-slack packings one of them often walks straight to a solution
# (challenge A: 154 nodes with UWA, B: 265 with LZW, where WAT needs 250k on A).
HEURISTICS = ("UWA", "LZW", "TOW", "TWO", "UTW", "WAT", "TAW", "TWA", "LAW", "ZWT")


def decide_restarts(inst: Instance, capacity: int, deadline: float | None,
                    rules: Rules = Rules(), heuristics: Sequence[str] = HEURISTICS) -> Result:
    """Round robin over preorders with a node limit doubling each round (2n first).

    Any run that finishes settles the question (every preorder searches the same
    space); only the deadline ends it unsettled ('aborted').
    """
    ranks = [preorder(inst, h) for h in heuristics]
    limit = max(2 * inst.n, 64)
    total = 0
    while True:
        for rank in ranks:
            res = decide(inst, capacity, rank, rules, node_limit=limit, deadline=deadline)
            total += res.nodes
            if res.status != "aborted":
                return Result(res.status, res.offsets, total)
            if deadline is not None and time.perf_counter() > deadline:
                return Result("aborted", None, total)
        limit *= 2
