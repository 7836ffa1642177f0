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
                max(top of placed, last offset) + unplaced size in it <= C.
  floor      -- per section: lowest min_off of its unplaced buffers + their size <= C
                (minimalloc's "unallocated floor").
  hatless    -- if a placed buffer overlaps no unplaced one and its subtree fails,
                the siblings fail too (the placement changed nothing else).

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


class _Abort(Exception):
    """Node limit or deadline reached."""


@dataclasses.dataclass
class Instance:
    """A problem scaled by the gcd of all sizes, alignments and fixed offsets.

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

    @property
    def n(self) -> int:
        return len(self.size)

    def section_loads(self) -> np.ndarray:
        load = np.zeros(self.n_sections + 1, dtype=np.int64)
        np.add.at(load, self.s0, self.size)
        np.add.at(load, self.s1 + 1, -self.size)
        return np.cumsum(load)[:-1]


def instance(buffers: Sequence[Buffer]) -> Instance:
    n = len(buffers)
    g = 0
    for b in buffers:
        g = math.gcd(g, b.size, b.alignment, b.fixed_offset or 0)
    g = g or 1
    size = np.array([b.size // g for b in buffers], dtype=np.int64)
    align = np.array([max(b.alignment // g, 1) for b in buffers], dtype=np.int64)
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


def preorder(inst: Instance, heuristic: str) -> np.ndarray:
    """Rank of each buffer under a key string, each key descending, index last.

    Keys (as minimalloc names them): W width in ops, A area (size x width),
    T total (largest section load the buffer spans), Z size, O overlaps, L start.
    """
    load = inst.section_loads()
    total = np.array([load[a:b + 1].max() for a, b in zip(inst.s0, inst.s1)], dtype=np.int64) if inst.n else np.zeros(0, np.int64)
    width = inst.end - inst.start + 1
    keys = {"W": width, "A": width * inst.size, "T": total, "Z": inst.size,
            "O": np.array([len(o) for o in inst.overlaps], dtype=np.int64), "L": -inst.start}
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


def decide(inst: Instance, capacity: int, rank: np.ndarray, rules: Rules = Rules(),
           node_limit: int | None = None, deadline: float | None = None) -> Result:
    """Depth-first search for a canonical layout with every top <= capacity (scaled units)."""
    n = inst.n
    size, align, fixed = inst.size, inst.align, inst.fixed
    is_fixed = fixed >= 0
    free = ~is_fixed
    aligned = bool(np.all(align == 1))
    if n == 0:
        return Result("found", np.zeros(0, dtype=np.int64), 0)
    if np.any(size > capacity) or np.any(is_fixed & (fixed + size > capacity)):
        return Result("infeasible", None, 0)
    min_off = np.zeros(n, dtype=np.int64)
    unplaced = np.ones(n, dtype=bool)
    offsets = np.full(n, -1, dtype=np.int64)
    sec_sum = inst.section_loads()
    if (rules.sections or rules.floor) and np.any(sec_sum > capacity):
        return Result("infeasible", None, 0)
    sec_top = np.zeros(inst.n_sections, dtype=np.int64)
    eff_fixed = np.where(is_fixed, fixed, 0)
    cover = np.zeros((n, inst.n_sections), dtype=bool)
    for i in range(n):
        cover[i, inst.s0[i]:inst.s1[i] + 1] = True
    nodes = 0
    big = np.int64(1) << 62
    check_every = 256

    def dfs(last_off: int, last_rank: int, left: int) -> bool:
        nonlocal nodes
        nodes += 1
        if node_limit is not None and nodes > node_limit:
            raise _Abort
        if deadline is not None and nodes % check_every == 0 and time.perf_counter() > deadline:
            raise _Abort
        if left == 0:
            return True
        u = np.flatnonzero(unplaced)
        m = min_off[u]
        fx = is_fixed[u]
        eff = np.where(fx, eff_fixed[u], m)
        if np.any(eff + size[u] > capacity):
            return False
        if fx.any() and np.any(m[fx] > eff[fx]):
            return False
        if rules.sections or rules.floor:
            floor = np.zeros(inst.n_sections, dtype=np.int64)
            if rules.sections:
                floor = np.maximum(sec_top, last_off) if rules.canonical else sec_top
            if rules.floor:
                # every unplaced buffer of a section sits at or above the lowest min_off among them
                low = np.where(cover[u], m[:, None], big).min(axis=0)
                floor = np.maximum(floor, np.where(sec_sum > 0, low, 0))
            if np.any(floor + sec_sum > capacity):
                return False
        r = rank[u]
        ok = np.ones(len(u), dtype=bool)
        if rules.canonical:
            later = (eff > last_off) | ((eff == last_off) & (r > last_rank))
            if np.any(fx & ~later):
                return False
            ok &= later
        if rules.dominance:
            fr = ~fx
            min_height = (m[fr] + size[u][fr]).min() if fr.any() else big
            ok &= eff < min_height
        cand = np.flatnonzero(ok)
        if len(cand) == 0:
            return False
        cand = cand[np.lexsort((r[cand], eff[cand]))]
        for c in cand.tolist():
            x = int(u[c])
            o = int(eff[c])
            top = o + int(size[x])
            ov = inst.overlaps[x]
            ovu = ov[unplaced[ov]]
            old = min_off[ovu]
            if aligned:
                min_off[ovu] = np.maximum(old, top)
            else:
                a = align[ovu]
                min_off[ovu] = np.maximum(old, -(-top // a) * a)
            a0, a1 = int(inst.s0[x]), int(inst.s1[x]) + 1
            old_top = sec_top[a0:a1].copy()
            np.maximum(old_top, top, out=sec_top[a0:a1])
            sec_sum[a0:a1] -= size[x]
            unplaced[x] = False
            offsets[x] = o
            if dfs(o, int(rank[x]), left - 1):
                return True
            unplaced[x] = True
            offsets[x] = -1
            sec_sum[a0:a1] += size[x]
            sec_top[a0:a1] = old_top
            min_off[ovu] = old
            if rules.hatless and len(ovu) == 0:
                break
        return False

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 4 * n + 1000))
    try:
        found = dfs(-1, -1, n)
    except _Abort:
        return Result("aborted", None, nodes)
    finally:
        sys.setrecursionlimit(limit)
    return Result("found" if found else "infeasible", offsets.copy() if found else None, nodes)


HEURISTICS = ("WAT", "TAW", "TWA", "ZWT")


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
