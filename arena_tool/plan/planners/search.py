"""The decision search behind ``optimal``: "does every buffer fit under capacity C?"

Designed after the ideas of minimalloc (Moffitt, ASPLOS'23) and written from its
description, not its code. It enumerates *canonical* solutions only: buffers are
placed in increasing (offset, rank) order, each exactly at its current
``min_off`` -- on the floor, or resting on a time-overlapping buffer below it.
Every valid layout, dropped by gravity, is such a sequence, so an exhausted
search proves infeasibility.

``Search`` holds one run's state as attributes; each pruning rule of ``Rules`` is
a method, called from the per-node sequence in the class docstring. To add a
rule: a field in ``Rules`` (with its one-line meaning), a method, one call in that
sequence. The soundness tests toggle every field of ``Rules``, so a new rule is
covered without touching them.

Per node the work is incremental: placing x touches x's sections and the buffers
overlapping x (plain Python lists, an undo trail). The unplaced buffers of a
part live in a ``_Pool`` of sorted lists (candidate order, dominance heights,
first sections), updated in place by each placement and its undo, so a node
reads its candidates and its dominance cap by bisection instead of scanning and
sorting the part, and keeps no copy of it: memory stays flat in the depth. The
depth-first search keeps its own stack (``_Node``, ``_AllOf`` frames), so a
20,000-buffer part needs no deep Python recursion.

``decide`` runs the compiled core (``search.c``, built by ``native.py``) where it
applies (no fixed buffer, no mixed alignments under the sections rule): the same tree
node for node, ~15 us a node where this Python one takes ~1 ms at 20,000 buffers
(a node here still scans its sections). This module stays the reference the tests
hold it equal to, and runs where the core does not.

Fixed-offset buffers take their turn in the same order, at their fixed offset,
and only while nothing placed below them collides.

Worked example (minimalloc's input.12, half-open -> inclusive):
  b1 4@0..2, b2 4@3..8, b3 4@0..8, b4 4@9..20, b5 4@0..20, C = 12:
  b5@0, b3@4, b1@8, b4@4, b2@8 -- the first canonical sequence found.
"""

from __future__ import annotations

import dataclasses
import math
import time
from bisect import bisect_left, bisect_right, insort
from typing import TYPE_CHECKING, ClassVar, Sequence

import numpy as np

from arena_tool.plan.planners import native
from arena_tool.plan.planners.decision import Decision
from arena_tool.plan.planners.sections import Instance, preorder, stack_height

if TYPE_CHECKING:
    from arena_tool.core.progress import Progress

CHECK_WORK = 16384  # node work (candidates scanned, plus 64 a node) between clock reads
_BIG = 1 << 62  # above any offset: "no bound"


@dataclasses.dataclass(frozen=True)
class Rules:
    """The pruning rules, each switchable (tests, benchmarks); none changes the answer.

    canonical: placements strictly increase in (offset, rank).
    dominance: never place at an offset >= min(min_off + size) over the unplaced
      non-fixed buffers: that buffer would have dropped below.
    sections: per section (a span of ops with a constant live set):
      max(top of placed, last offset) + unplaced size in it <= C; with mixed
      alignments, the lowest aligned stack of its unplaced buffers above the top of
      placed (``sections.stack_height``) <= C.
    hatless: if a placed buffer overlaps no unplaced one and its subtree fails, the
      siblings fail too (the placement changed nothing else).
    floor: per section, lowest min_off of its unplaced buffers + their size <= C
      (minimalloc's "unallocated floor"); checked per buffer as min_off + the
      largest unplaced load of its sections <= C.
    decompose: when no unplaced buffer crosses a section boundary any more, the
      unplaced buffers on either side never meet again: each side is solved on its
      own, and a failing side is never retried by backtracking into the other
      (minimalloc's dynamic decomposition).
    cover: (with canonical) a section whose unplaced load exactly fills the room
      above the current level L needs a candidate at exactly L spanning it, or the
      node fails; and a candidate at a higher level that leaves some section too
      full for that level is skipped without a node (its child would fail at once).
    """

    canonical: bool = True
    dominance: bool = True
    sections: bool = True
    hatless: bool = True
    floor: bool = True
    decompose: bool = True
    cover: bool = True

    REQUIRES: ClassVar[dict[str, tuple[str, ...]]] = {"cover": ("canonical",)}  # a rule -> rules it works on

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """Every rule, in declaration order."""
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def only(cls, *names: str) -> "Rules":
        """These rules on, every other off."""
        unknown = set(names) - set(cls.names())
        if unknown:
            raise ValueError(f"unknown rules {sorted(unknown)}: expected some of {cls.names()}")
        return cls(**{n: n in names for n in cls.names()})


@dataclasses.dataclass
class Result:
    status: Decision
    offsets: np.ndarray | None  # scaled units, when FOUND
    nodes: int


class _Abort(Exception):
    """Node limit or deadline reached."""


Group = tuple[list[int], int, int]  # unplaced buffers (by first section), first and last section
Key = tuple[int, int, int]  # (offset it would take, rank, buffer): the canonical order


class _Pool:
    """The unplaced buffers of one part as sorted lists, kept exact through the undo
    trail: ``keys`` (offset, rank, buffer) of every one, ``dom`` (min_off + size,
    buffer) of the free ones, ``fixed`` the keys of the fixed ones, ``by_s0``
    (first section, buffer)."""

    __slots__ = ("keys", "dom", "fixed", "by_s0")

    def __init__(self, ys: list[int], search: "Search") -> None:
        fx, mo, rk, size, s0 = search.fixed, search.mo, search.rank, search.size, search.s0
        self.keys: list[Key] = sorted((fx[y] if fx[y] >= 0 else mo[y], rk[y], y) for y in ys)
        self.dom = sorted((mo[y] + size[y], y) for y in ys if fx[y] < 0)
        self.fixed = [k for k in self.keys if fx[k[2]] >= 0]
        self.by_s0 = sorted((s0[y], y) for y in ys)


def _groups(part: list[int], s0: list[int], s1: list[int]) -> list[Group]:
    """Split ``part`` (sorted by first section) where no buffer crosses a boundary."""
    out: list[Group] = []
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


@dataclasses.dataclass(slots=True)
class _Node:
    """A search node: the unplaced ``pool`` (sections sa..sb); its candidates are the
    pool's keys after ``after`` below ``cap``, tried in order (``after`` moves to each
    one tried); mark/hat belong to the child being searched (the undo mark before
    its placement, and whether it was hatless)."""

    pool: _Pool
    sa: int
    sb: int
    cap: int  # the dominance cap: no candidate at or above it
    after: tuple[int, ...]
    top_sum: int  # largest unplaced load of sa..sb when the node opened (the cover rule)
    gate_e: int = -1  # the cover rule's gate (``Search._cover_gate``) holds for this level:
    gate: list[int] = dataclasses.field(default_factory=list)  # sections a candidate must span
    gate_size: int = -1  # and the size it needs to relieve them all (-1: not computed yet)
    mark: int = 0
    hat: bool = False


@dataclasses.dataclass(slots=True)
class _AllOf:
    """Independent groups that must all be placed (decompose, and the root): each
    is searched after the one before succeeded; one failure fails them all."""

    groups: list[tuple[list[int] | None, int, int]]  # members (None: ``pool``), sections
    pool: _Pool | None
    last_off: int
    last_rank: int
    next: int = 0
    fresh: bool = False  # (regroup) each group is re-ranked and starts at the floor


class Search:
    """One depth-first search for a canonical layout with every top <= capacity.

    Per node (``_open``), in this order:
      1. ``_count``              node limit; the clock, every CHECK_WORK of work
      2. level overfull          [sections, canonical] the level + some section's
                                 unplaced load > C: fail
      3. ``_dominance_cap``      [dominance] no candidate at or above it
      4. ``_candidates``         [canonical] unplaced buffers at their min_off after
                                 the last (offset, rank); a fixed one stranded below: fail
                                 (both read the part's ``_Pool`` by bisection)
      5. ``_uncovered_tight``    [cover] a full section no candidate at the level spans: fail
    Per candidate x at offset e, lowest (e, rank) first (``_advance``):
      6. ``_cover_gate``         [cover] x leaves a section too full for level e: skip
      7. ``_place``              x at e, then ``_sections_fit`` [sections],
                                 ``_padding_fits`` [sections, mixed alignments],
                                 ``_floor_after_place`` [floor], ``_raise_neighbours``
                                 (min_off of x's unplaced neighbours; ``_floor_after_raise`` [floor])
      8. the child: the rest as one node, or [decompose] its independent groups (``_AllOf``);
         given the preorder's name (``heuristic``), each group is searched as a problem of
         its own, as minimalloc solves a sub-partition: re-ranked by the preorder's keys
         with T on its remaining loads (``_rerank``), its canonical order from the floor
      9. on failure ``_undo_to``; [hatless] x overlapped no unplaced buffer: no more siblings
    Sizes, offsets and C are in the instance's scaled units.
    """

    def __init__(self, inst: Instance, capacity: int, rank: np.ndarray, rules: Rules = Rules(),
                 node_limit: int | None = None, deadline: float | None = None,
                 progress: "Progress | None" = None, heuristic: str | None = None) -> None:
        self.inst = inst
        self.heuristic = heuristic if rules.decompose else None  # regroup: with decompose
        self.keylists: dict[str, list[int]] = {}
        if self.heuristic is not None:
            keys = inst.cache["keys"]  # preorder() made them
            self.keylists = {c: keys[c].tolist() for c in self.heuristic if c != "T"}
        self.C = int(capacity)
        self.rank: list[int] = rank.tolist()
        self.rules = rules
        self.cover = rules.cover and rules.canonical
        self.level_check = rules.canonical and rules.sections
        self.limit = node_limit if node_limit is not None else _BIG
        self.deadline = deadline
        self.progress = progress
        n = inst.n
        self.size, self.align, self.fixed, self.s0, self.s1, self.ovl, self.members = inst.lists()
        self.sec_sum: list[int] = inst.section_loads().tolist()  # unplaced load per section
        self.sec_top = [0] * inst.n_sections  # top of the placed buffers per section
        self.mo = [0] * n  # min_off: lowest offset each unplaced buffer may take
        self.unplaced = [True] * n
        self.off = [-1] * n
        # cuts[b]: unplaced buffers live in both section b and b + 1 (one search per restart:
        # vectorized, as the sum of the spans is far above n on long-lived buffers)
        self.cuts: list[int] = inst.cuts().tolist()
        self.aligned = all(a == 1 for a in self.align)
        # sections with mixed alignments: the unplaced members of a section all sit
        # above its top, one above the other, so their lowest aligned stack must fit
        self.free_al = [self.align[y] if self.fixed[y] < 0 else 1 for y in range(n)]
        self.padding = rules.sections and len(set(self.free_al)) > 1
        self.pad_memo = inst.cache.setdefault("pad", {})
        # floor: wit[s] is an unplaced member y of section s with mo[y] + sec_sum[s] <= C
        # (a buffer that can still sit low enough), kept exact through the undo trail;
        # only a placed or raised witness needs a new one, and none left is a proof.
        self.wit = [m[0] if m else -1 for m in self.members]
        self.mo_trail: list[tuple[int, int]] = []
        self.wit_trail: list[tuple[int, int]] = []
        self.place_trail: list[tuple[int, list[int], int, int, _Pool]] = []
        self.nodes = 0
        self.work = CHECK_WORK
        self.ticked = 0

    # ------------------------------------------------------------------ driver

    def run(self) -> Result:
        """Search every independent group from the root; Result in scaled units."""
        if self._root_refuted():
            return Result(Decision.INFEASIBLE, None, 0)
        n = self.inst.n
        root = sorted(range(n), key=lambda y: (self.s0[y], y))
        groups = _groups(root, self.s0, self.s1) if self.rules.decompose else [(root, 0, self.inst.n_sections - 1)]
        try:
            found = self._search([(ys, lo, hi) for ys, lo, hi in groups])
        except _Abort:
            return Result(Decision.ABORTED, None, self.nodes)
        finally:
            if self.progress is not None:
                self.progress.tick(self.nodes - self.ticked)
        if not found:
            return Result(Decision.INFEASIBLE, None, self.nodes)
        return Result(Decision.FOUND, np.array(self.off, dtype=np.int64), self.nodes)

    def _search(self, groups: list[tuple[list[int] | None, int, int]]) -> bool:
        """Depth first over an explicit stack: a frame's step gives a child frame to
        push, or True/False, its subtree's answer, handed to the frame below."""
        stack: list[_Node | _AllOf] = [_AllOf(groups, None, -1, -1)]
        result: bool | None = None  # None: the top frame was just pushed
        while stack:
            frame = stack[-1]
            step: _Node | _AllOf | bool
            if isinstance(frame, _AllOf):
                step = False if result is False else self._next_group(frame)
            elif result is None:
                step = self._advance(frame)
            elif result:
                step = True
            else:  # its child failed: take the placement back, try the next sibling
                self._undo_to(frame.mark)
                step = False if self.rules.hatless and frame.hat else self._advance(frame)
            if isinstance(step, bool):
                stack.pop()
                result = step
            else:
                stack.append(step)
                result = None
        return bool(result)

    def _next_group(self, frame: _AllOf) -> "_Node | bool":
        """The node of frame's next group; True when every group is placed."""
        if frame.next == len(frame.groups):
            return True
        ys, sa, sb = frame.groups[frame.next]
        frame.next += 1
        if frame.fresh:
            assert ys is not None
            self._rerank(ys)
            child = self._open(_Pool(ys, self), sa, sb, -1, -1)
            return False if child is None else child
        pool = frame.pool if ys is None else _Pool(ys, self)
        assert pool is not None
        child = self._open(pool, sa, sb, frame.last_off, frame.last_rank)
        return False if child is None else child

    def _open(self, pool: _Pool, sa: int, sb: int, last_off: int, last_rank: int) -> _Node | None:
        """Steps 1-5: the node for ``pool`` after (last_off, last_rank), or None when refuted."""
        self._count(sb - sa + 1)
        top = max(self.sec_sum[sa:sb + 1]) if self.level_check or self.cover else 0
        if self.level_check and last_off + top > self.C:  # _level_overfull
            return None
        cap = self._dominance_cap(pool) if self.rules.dominance else _BIG
        after = self._candidates(pool, last_off, last_rank)
        if after is None:
            return None
        if self.cover and top >= self.C - max(last_off, 0) and self._uncovered_tight(pool, after, cap, sa, sb, last_off):
            return None
        return _Node(pool, sa, sb, cap, after, top if self.cover else 0)

    def _advance(self, node: _Node) -> "_Node | _AllOf | bool":
        """Steps 6-9 over node's remaining candidates: the child to search, True when
        the last buffer is placed, False when no candidate is left."""
        s0, s1, size = self.s0, self.s1, self.size
        pool = node.pool
        keys = pool.keys
        while True:
            i = bisect_right(keys, node.after)
            if i == len(keys):
                break
            key = keys[i]
            e, r, x = key
            if e >= node.cap:
                break
            node.after = key
            if self.cover and e + node.top_sum > self.C:
                if e != node.gate_e:
                    self._cover_gate(node, e)
                gate = node.gate
                if s0[x] > gate[0] or s1[x] < gate[-1]:
                    continue  # [cover] its child would fail at once: not even a node
                if node.gate_size < 0:
                    node.gate_size = max(map(self.sec_sum.__getitem__, gate)) - (self.C - e)
                if size[x] < node.gate_size:
                    continue
            mark = len(self.place_trail)
            ok, hat, zero = self._place(x, e, pool)
            if ok:
                if not keys:
                    return True
                node.mark, node.hat = mark, hat
                if self.rules.decompose and zero:
                    return self._split(node, x, e, r)
                child = self._open(pool, node.sa, node.sb, e, r)
                if child is not None:
                    return child
            self._undo_to(mark)
            if self.rules.hatless and hat:
                break
        return False

    def _rerank(self, ys: list[int]) -> None:
        """Regroup: rank a group's buffers by the preorder's keys, T on the remaining
        loads; the old ranks go on the trail (the parent's pool is keyed by them)."""
        assert self.heuristic is not None
        sec_sum, s0, s1, kl = self.sec_sum, self.s0, self.s1, self.keylists
        cols = [[max(sec_sum[s0[y]:s1[y] + 1]) for y in ys] if c == "T" else [kl[c][y] for y in ys]
                for c in self.heuristic]
        order = sorted(range(len(ys)), key=lambda i: tuple(-col[i] for col in cols) + (ys[i],))
        rank = self.rank
        self.place_trail.append((-2, [rank[y] for y in ys] + ys, len(self.mo_trail), len(self.wit_trail),
                                 _Pool([], self)))
        for k, i in enumerate(order):
            rank[ys[i]] = k

    def _split(self, node: _Node, x: int, e: int, r: int) -> _AllOf:
        """[decompose] Placing x left boundaries in its span crossed by no unplaced
        buffer: the pool's buffers fall into the segments between them, searched one
        after the other. The largest keeps the pool; the others leave it (a trail entry
        puts them back on undo) and get pools of their own when opened."""
        pool, cuts = node.pool, self.cuts
        segs, lo = [], node.sa
        for b in range(self.s0[x], self.s1[x]):
            if not cuts[b]:
                segs.append((lo, b))
                lo = b + 1
        segs.append((lo, node.sb))
        by = pool.by_s0
        found = []
        for a, b in segs:
            i, j = bisect_left(by, (a, -1)), bisect_left(by, (b + 1, -1))
            if j > i:
                found.append((a, b, i, j))
        if self.heuristic is not None and len(found) > 1:  # regroup: fresh pools; the parent's waits
            return _AllOf([([y for _, y in by[i:j]], a, b) for a, b, i, j in found], None, -1, -1, fresh=True)
        big = max(range(len(found)), key=lambda k: (found[k][3] - found[k][2], -k))
        groups: list[tuple[list[int] | None, int, int]] = []
        out: list[int] = []
        for k, (a, b, i, j) in enumerate(found):
            if k == big:
                groups.append((None, a, b))
            else:
                ys = [y for _, y in by[i:j]]
                groups.append((ys, a, b))
                out += ys
        if out:
            for y in out:
                self._pool_remove(pool, y)
            self.place_trail.append((-1, out, len(self.mo_trail), len(self.wit_trail), pool))
        return _AllOf(groups, pool, e, r)

    def _count(self, scanned: int) -> None:
        """Step 1: one more node; the clock is read by work done (the sections a node
        reads, plus 64), not by nodes."""
        self.nodes += 1
        if self.nodes > self.limit:
            raise _Abort
        self.work -= scanned + 64
        if self.work <= 0:
            self.work = CHECK_WORK
            if self.progress is not None:
                self.progress.tick(self.nodes - self.ticked)
                self.ticked = self.nodes
            if self.deadline is not None and time.perf_counter() > self.deadline:
                raise _Abort

    # ------------------------------------------------------------------ rules at a node

    def _root_refuted(self) -> bool:
        """Before any node: a buffer taller than C, or [sections, floor] a section's load."""
        size, fixed, C = self.size, self.fixed, self.C
        if any(size[i] > C or (fixed[i] >= 0 and fixed[i] + size[i] > C) for i in range(self.inst.n)):
            return True
        return (self.rules.sections or self.rules.floor) and max(self.sec_sum) > C

    def _dominance_cap(self, pool: _Pool) -> int:
        """[dominance] min(min_off + size) over the unplaced free buffers: a candidate at
        or above it leaves room below it for that buffer, which gravity would drop there."""
        return pool.dom[0][0] if pool.dom else _BIG

    def _candidates(self, pool: _Pool, last_off: int, last_rank: int) -> tuple[int, ...] | None:
        """[canonical] The key the candidates come after: the buffers that may come next
        are the pool's keys past it (below the dominance cap), in order; None when a
        fixed buffer is stranded below the level (it can never be placed)."""
        if not self.rules.canonical:
            return (-_BIG,)
        after = (last_off, last_rank, _BIG)
        if pool.fixed and pool.fixed[0] <= after:
            return None
        return after

    def _uncovered_tight(self, pool: _Pool, after: tuple[int, ...], cap: int, sa: int, sb: int,
                         last_off: int) -> bool:
        """[cover] A section whose unplaced load exactly fills the room above the level
        needs its cell at the level covered now, by a candidate at exactly that level
        (called when the largest load of sa..sb reaches that room). A candidate spanning
        section s is one of its members, so each tight section reads its members only."""
        lvl = max(last_off, 0)
        need = self.C - lvl
        keys = pool.keys
        i = bisect_right(keys, after)
        if i == len(keys) or keys[i][0] >= cap:
            return False  # no candidate: the node fails on its own
        window = self.sec_sum[sa:sb + 1]
        unplaced, fixed, mo, rk = self.unplaced, self.fixed, self.mo, self.rank
        j = -1
        at_level = lvl < cap  # else no candidate is at the level: nothing covers a section
        while True:
            try:
                j = window.index(need, j + 1)
            except ValueError:
                return False
            for y in self.members[sa + j]:
                if at_level and unplaced[y] and (fixed[y] if fixed[y] >= 0 else mo[y]) == lvl \
                        and (lvl, rk[y], y) > after:
                    break
            else:
                return True
    def _cover_gate(self, node: _Node, e: int) -> None:
        """[cover] At level e (above the node's room for some section) the sections whose
        unplaced load exceeds the room C - e: a candidate at e must span all of them and
        bring each within the room, or its child fails at once. Set on the node, per level
        (the node's state is the same for every candidate it tries)."""
        sec_sum, room = self.sec_sum, self.C - e
        node.gate_e, node.gate_size = e, -1  # the size is computed once a candidate spans the gate
        node.gate = [s for s in range(node.sa, node.sb + 1) if sec_sum[s] > room]

    # ------------------------------------------------------------------ placing and undoing

    def _place(self, x: int, o: int, pool: _Pool) -> tuple[bool, bool, bool]:
        """Step 7: x at o, then the rules' checks; (consistent, x overlaps no unplaced
        buffer, some cut reached zero). Always undone by ``_undo_to`` on failure."""
        zero = self._commit(x, o, pool)
        ok = (not self.rules.sections or self._sections_fit(x)) \
            and (not self.padding or self._padding_fits(x)) \
            and (not self.rules.floor or self._floor_after_place(x))
        if not ok:
            unplaced = self.unplaced
            return False, not any(unplaced[y] for y in self.ovl[x]), zero
        ok, hat = self._raise_neighbours(x, o + self.size[x], pool)
        return ok, hat, zero

    def _pool_remove(self, pool: _Pool, y: int) -> None:
        fx = self.fixed[y]
        key = (fx if fx >= 0 else self.mo[y], self.rank[y], y)
        keys = pool.keys
        del keys[bisect_left(keys, key)]
        if fx >= 0:
            del pool.fixed[bisect_left(pool.fixed, key)]
        else:
            dom = pool.dom
            del dom[bisect_left(dom, (key[0] + self.size[y], y))]
        by = pool.by_s0
        del by[bisect_left(by, (self.s0[y], y))]

    def _pool_add(self, pool: _Pool, y: int) -> None:
        fx = self.fixed[y]
        key = (fx if fx >= 0 else self.mo[y], self.rank[y], y)
        insort(pool.keys, key)
        if fx >= 0:
            insort(pool.fixed, key)
        else:
            insort(pool.dom, (key[0] + self.size[y], y))
        insort(pool.by_s0, (self.s0[y], y))

    def _pool_move(self, pool: _Pool, y: int, old: int, new: int) -> None:
        """y's min_off changes from old to new (keys of free buffers only depend on it)."""
        if self.fixed[y] >= 0:
            return
        r, sz = self.rank[y], self.size[y]
        keys, dom = pool.keys, pool.dom
        del keys[bisect_left(keys, (old, r, y))]
        insort(keys, (new, r, y))
        del dom[bisect_left(dom, (old + sz, y))]
        insort(dom, (new + sz, y))

    def _commit(self, x: int, o: int, pool: _Pool) -> bool:
        """The state change of placing x at o, recorded on the trail; True when some
        boundary inside x's span is crossed by no unplaced buffer any more."""
        s0, s1, sec_sum, sec_top, cuts = self.s0, self.s1, self.sec_sum, self.sec_top, self.cuts
        a0, a1 = s0[x], s1[x] + 1
        sx = self.size[x]
        top = o + sx
        self._pool_remove(pool, x)
        self.place_trail.append((x, sec_top[a0:a1], len(self.mo_trail), len(self.wit_trail), pool))
        self.unplaced[x] = False
        self.off[x] = o
        for s in range(a0, a1):
            sec_sum[s] -= sx
            if sec_top[s] < top:
                sec_top[s] = top
        zero = False
        for b in range(a0, a1 - 1):
            cuts[b] -= 1
            if not cuts[b]:
                zero = True
        return zero

    def _sections_fit(self, x: int) -> bool:
        """[sections] In x's sections the unplaced load still fits above the placed top."""
        sec_sum, sec_top, C = self.sec_sum, self.sec_top, self.C
        for s in range(self.s0[x], self.s1[x] + 1):
            if sec_sum[s] and sec_top[s] + sec_sum[s] > C:
                return False
        return True

    def _padding_fits(self, x: int) -> bool:
        """[sections] With mixed alignments, the same for the lowest aligned stack."""
        sec_sum, C = self.sec_sum, self.C
        for s in range(self.s0[x], self.s1[x] + 1):
            if sec_sum[s] and self._padded(s) > C:
                return False
        return True

    def _padded(self, s: int) -> int:
        """Lowest top of section s's unplaced members stacked above sec_top[s] (memoized
        per member set and residue of the top)."""
        unplaced, size, free_al = self.unplaced, self.size, self.free_al
        us = tuple(y for y in self.members[s] if unplaced[y])
        entry = self.pad_memo.get(us)
        if entry is None:
            items = sorted((size[y], free_al[y]) for y in us)
            entry = self.pad_memo[us] = (items, math.lcm(*(a for _, a in items)), {})
        items, period, tops = entry
        b = self.sec_top[s]
        r = b % period
        h = tops.get(r)
        if h is None:
            h = tops[r] = stack_height(items, r)
        return b - r + h if h >= 0 else b + self.sec_sum[s]

    def _floor_after_place(self, x: int) -> bool:
        """[floor] The sections x witnessed need a new witness."""
        a0, a1 = self.s0[x], self.s1[x] + 1
        wit, sec_sum = self.wit, self.sec_sum
        if x not in wit[a0:a1]:
            return True
        for s in range(a0, a1):
            if wit[s] == x and sec_sum[s] and not self._rewitness(s, x):
                return False
        return True

    def _raise_neighbours(self, x: int, top: int, pool: _Pool) -> tuple[bool, bool]:
        """x's unplaced time-neighbours now rest at or above x's top: raise their min_off;
        (still consistent, x had no unplaced neighbour)."""
        unplaced, mo, size, fixed, align = self.unplaced, self.mo, self.size, self.fixed, self.align
        s0, s1, wit, sec_sum = self.s0, self.s1, self.wit, self.sec_sum
        aligned, C, floor = self.aligned, self.C, self.rules.floor
        hat = True
        for y in self.ovl[x]:
            if not unplaced[y]:
                continue
            hat = False
            m = mo[y]
            t = top if aligned else -(-top // align[y]) * align[y]
            if m >= t:
                continue
            self.mo_trail.append((y, m))
            self._pool_move(pool, y, m, t)
            mo[y] = t
            if t + size[y] > C or (fixed[y] >= 0 and t > fixed[y]):
                return False, hat
            if floor:
                b0, b1 = s0[y], s1[y] + 1
                if y not in wit[b0:b1] or t + max(sec_sum[b0:b1]) <= C:
                    continue  # it witnesses no section it may have left (inline: the common case)
                if not self._floor_after_raise(y, t):
                    return False, hat
        return True, hat

    def _floor_after_raise(self, y: int, t: int) -> bool:
        """[floor] y, raised to t, witnessed a section now too full for it: replace it there."""
        b0, b1 = self.s0[y], self.s1[y] + 1
        wit, sec_sum, C = self.wit, self.sec_sum, self.C
        for s in range(b0, b1):
            if wit[s] == y and t + sec_sum[s] > C and not self._rewitness(s, y):
                return False
        return True

    def _rewitness(self, s: int, old: int) -> bool:
        """[floor] Section s loses its witness ``old`` (on the trail): the first unplaced
        member that can still sit low enough takes over; False when none is left."""
        self.wit_trail.append((s, old))
        thr = self.C - self.sec_sum[s]
        unplaced, mo = self.unplaced, self.mo
        for y in self.members[s]:
            if unplaced[y] and mo[y] <= thr:
                self.wit[s] = y
                return True
        self.wit[s] = -1
        return False

    def _undo_to(self, mark: int) -> None:
        """Take back every placement after the first ``mark`` ones, with their trails."""
        place_trail, mo_trail, wit_trail = self.place_trail, self.mo_trail, self.wit_trail
        mo, wit, sec_sum, sec_top, cuts = self.mo, self.wit, self.sec_sum, self.sec_top, self.cuts
        s0, s1, size = self.s0, self.s1, self.size
        while len(place_trail) > mark:
            x, tops, k, k2, pool = place_trail.pop()
            if x == -1:  # a decompose: its groups go back into the pool
                for y in tops:
                    self._pool_add(pool, y)
                continue
            if x == -2:  # a regroup: the old ranks
                half = len(tops) // 2
                for y, r in zip(tops[half:], tops[:half]):
                    self.rank[y] = r
                continue
            while len(mo_trail) > k:
                y, m = mo_trail.pop()
                self._pool_move(pool, y, mo[y], m)
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
            self.unplaced[x] = True
            self.off[x] = -1
            self._pool_add(pool, x)


def decide(inst: Instance, capacity: int, rank: np.ndarray, rules: Rules = Rules(),
           node_limit: int | None = None, deadline: float | None = None,
           progress: "Progress | None" = None, heuristic: str | None = None) -> Result:
    """Is there a canonical layout with every top <= capacity (scaled units)?

    ``deadline`` is a time.perf_counter() value; ``progress`` gets the node count
    at each clock read. ``heuristic``: the name ``rank`` came from (``preorder``);
    given, the groups of a decompose are re-ranked under it (regroup, ``Search``).
    """
    if inst.n == 0:
        return Result(Decision.FOUND, np.zeros(0, dtype=np.int64), 0)
    if deadline is not None and time.perf_counter() > deadline:
        return Result(Decision.ABORTED, None, 0)
    done = native_decide(inst, capacity, rank, rules, node_limit, deadline, heuristic)
    if done is not None:
        if progress is not None:
            progress.tick(done.nodes)
        return done
    return Search(inst, capacity, rank, rules, node_limit, deadline, progress, heuristic).run()


_STATUS = (Decision.FOUND, Decision.INFEASIBLE, Decision.ABORTED)


def native_applies(inst: Instance, rules: Rules = Rules()) -> bool:
    """The compiled core searches this instance (no fixed buffer, no padding rule), given a
    compiler: then the search needs no ``Instance.lists``."""
    mixed = inst.n > 0 and bool((inst.align != inst.align[0]).any())  # (np.unique would import numpy.ma)
    return not (inst.fixed >= 0).any() and not (rules.sections and mixed) \
        and native.load() is not None


def native_decide(inst: Instance, capacity: int, rank: np.ndarray, rules: Rules = Rules(),
                  node_limit: int | None = None, deadline: float | None = None,
                  heuristic: str | None = None) -> Result | None:
    """``Search(...).run()`` by the compiled core (search.c): the same tree, status, nodes
    and offsets. None where it does not apply -- no compiler, a fixed buffer, mixed
    alignments under the sections rule (its padding check), out of memory -- and the
    Python search runs instead."""
    lib = native.load()
    if lib is None or not native_applies(inst, rules):
        return None
    mask = sum(1 << k for k, name in enumerate(Rules.names()) if getattr(rules, name))
    keys = [] if heuristic is None or not rules.decompose else \
        [None if c == "T" else inst.cache["keys"][c] for c in heuristic]
    status, off, nodes = native.search(lib, inst.n_sections, inst.s0, inst.s1, inst.size, inst.align, rank,
                                       int(capacity), mask, node_limit, deadline, keys)
    if status >= len(_STATUS):
        return None
    found = _STATUS[status] == Decision.FOUND
    return Result(_STATUS[status], off if found else None, nodes)


# minimalloc's three defaults plus sweep orders: among buffers at the same min_off,
# U takes the one reaching latest first, L the one starting earliest (time-mirrored
# twins); on zero-slack packings one of them often walks straight to a solution
# (challenge A: 154 nodes with UWA, B: 265 with LZW, where WAT needs 250k on A).
REGROUPED = ("TWA", "WAT", "TAW")  # minimalloc's defaults, searched regrouped first in each round
HEURISTICS = ("UWA", "LZW", "TOW", "TWO", "UTW", "WAT", "TAW", "TWA", "LAW", "ZWT")


def decide_restarts(inst: Instance, capacity: int, deadline: float | None,
                    rules: Rules = Rules(), heuristics: Sequence[str] = HEURISTICS,
                    progress: "Progress | None" = None) -> Result:
    """Round robin over minimalloc's three regrouped (``Search``: its own first round, as
    it solves), then every preorder plain (on challenge F only the plain TWA order is quick,
    on I only the regrouped one), with a node limit doubling each round (2n first). Regrouped
    first: at 20,000 buffers (log-uniform sizes up to 256x the smallest, issue 39) the probe at
    the load bound reached it in a 20 s run where plain first ended 0.51 % above.

    Any run that finishes settles the question (every run searches a superset of the
    same canonical space); only the deadline ends it unsettled (ABORTED), or the time
    left being less than the last run took (a run's setup is O(n log n) in Python: at
    50,000 buffers a run started just before the deadline overran it by seconds). A preorder
    is ranked when first used (``preorder`` caches it on the instance).
    """
    limit = max(2 * inst.n, 64)
    total = 0
    runs = [(h, True) for h in REGROUPED if rules.decompose] + [(h, False) for h in heuristics]
    last = 0.0  # seconds the last run took: the next one sets up as much and may search more
    while True:
        for h, regroup in runs:
            if deadline is not None and time.perf_counter() + last > deadline:
                return Result(Decision.ABORTED, None, total)
            rank = preorder(inst, h)
            began = time.perf_counter()
            res = decide(inst, capacity, rank, rules, node_limit=limit, deadline=deadline, progress=progress,
                         heuristic=h if regroup else None)
            last = time.perf_counter() - began
            total += res.nodes
            if res.status != Decision.ABORTED:
                return Result(res.status, res.offsets, total)
        limit *= 2
