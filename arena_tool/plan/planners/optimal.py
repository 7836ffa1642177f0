"""Planner ``optimal``: the minimum arena with a proof, or the best found and a bound.

Method (after minimalloc's ideas, our own code; see ``search.py`` and ``sections.py``):
1. Split the buffers into independent parts where the live set empties (a part's
   layout never constrains another's; the arena is the largest part's height).
2. Per part, start from the lowest of several greedy layouts -- the search only ever
   looks below it: the search's own first descents (``walk.py``, compiled:
   milliseconds at 20,000 buffers) under a list of preorders (``WALKS``), until every
   part is at its bound in one of them; only where there is no walk (a fixed buffer),
   first fit and best fit under several orders and the ``first_fit`` / ``greedy_size``
   planners' layouts.
3. With ``problem.capacity`` set and the greedy above it, first ask the decision
   search for a layout under the capacity (60 % of the time; all of it when the
   capacity equals the bound), then under the bound (40 % of what is left):
   tight capacities prune hardest. The decision search splits the rest of a
   part again whenever no unplaced buffer crosses a section boundary.
4. Repeatedly ask the decision search for a layout under (part's best - 1 unit),
   with restarts over several preorders. Found: a lower best, ask again.
   Exhausted: the part's best is proven minimal. A part stops as soon as its best
   is at or below the proven bound of the whole problem.
The arena is proven ('proven', optimal True) when it equals the best proven lower
bound: the load bound, a fixed buffer's top, the alignment-padded stack of one
section (``sections.stack_bound``), or a refuted capacity.
At ``params.time_limit`` the answer is the best layout found, optimal False,
status 'time_limit' and ``best_bound`` the best proven bound. The limit covers
the setup too: the walks and greedy seeds (past it, only those done; the first
walk runs up to ``FIRST_WALK_GRACE`` past it, then is cut too and stacks its rest; a limit
already that far behind when the planner starts gets the stack at once), the search instance
and the stack bound. With
``problem.capacity`` set, an arena provably above it gives status 'infeasible'.

Worked example (TFLite Micro's TestGreedyMedium, (size, first, last)):
  (10,0,1) (20,1,2) (30,2,3) (40,3,4) (50,0,1): greedy by size reaches 90,
  the load bound is 80 and ``optimal`` reaches it: 50@0, 10@50, 20@60, 30@0, 40@30.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from typing import TYPE_CHECKING, Callable, Sequence

import numpy as np

if TYPE_CHECKING:
    from arena_tool.plan.planners.search import Rules


from arena_tool.plan.planners.params import Params
from arena_tool.plan.planners import placement, walk
from arena_tool.plan.planners.clock import Deadline
from arena_tool.plan.planners.decision import Decision
from arena_tool.plan.planners.sections import Instance, columns, instance, preorder, stack_bound
from arena_tool.core.problem import Buffer, ColumnBuffers, Plan, Problem, Status


# the walks' preorders, in the order tried. Measured on issue 39's problems (bench/problems.py):
# of large_problem's 20k/50k/100k seeds 1-3, TWA (minimalloc's first) reaches the load bound
# on 8 of 9, TLW (T, then the earlier start: a left-to-right sweep) on all 9, OLA on 8;
# of syn_problem's 20k seeds 1 and 3, TAW reaches it. Every walk is ~0.1 s at 100,000 buffers.
WALKS = ("TWA", "TLW", "OLA", "TAW", "UWA", "LZW", "TOZ", "ALO", "TOW", "WAT", "LAW", "ZWT")
FIRST_WALK_GRACE = 0.9  # seconds the first walk may run past the clock: the time limit allows 1 over, and
# the clock already leaves the reserve for what comes after the planner (planners.planner_limit)
WALK_SHARE = 0.3  # share of the time limit the walks and, after them, the greedy seeds may take
CAP_SHARE = 0.6  # share of the remaining time a probe at problem.capacity may take
LOW_SHARE = 0.4  # share of the remaining time a probe at the lower bound may take


def load_bound(buffers: Sequence[Buffer]) -> int:
    """``problem.lower_bound`` by arrays (the same sweep: at one op frees before allocations);
    at 100,000 buffers 0.05 s where the Python sweep takes ~0.5 s."""
    if not buffers:
        return 0
    cols = columns(buffers)
    at = np.concatenate([cols.end + 1, cols.start])  # frees first: a stable sort keeps them first at one op
    delta = np.concatenate([-cols.size, cols.size])
    load = np.cumsum(delta[np.argsort(at, kind="stable")])  # radix: 10x lexsort's speed
    return max(int(load.max()), 0)


def components(buffers: Sequence[Buffer]) -> list[list[int]]:
    """Index groups whose live ranges chain together; groups never share an op. By arrays:
    a stable sort by start, a new group where a start passes every earlier end (at 100,000
    buffers 0.03 s where the loop took 0.3: it runs before the planner's first clock read)."""
    n = len(buffers)
    if not n:
        return []
    cols = columns(buffers)
    starts, ends = cols.start, cols.end
    order = np.argsort(starts, kind="stable")  # ties by index
    reach = np.maximum.accumulate(ends[order])
    cut = np.flatnonzero(starts[order][1:] > reach[:-1]) + 1
    return [np.sort(g).tolist() for g in np.split(order, cut)]


_ORDERS: dict[str, Callable[[Buffer, int], tuple[int, int, int]]] = {
    "size": lambda b, i: (-b.size, -(b.end - b.start), i),
    "width": lambda b, i: (-(b.end - b.start), -b.size, i),
    "area": lambda b, i: (-b.size * (b.end - b.start + 1), -b.size, i),
    "start": lambda b, i: (b.start, -b.size, i),
}


def greedy_layouts(buffers: Sequence[Buffer], deadline: Deadline | None = None) -> list[tuple[str, list[int]]]:
    """A handful of one-pass layouts (first and best fit under several orders).

    Past ``deadline``: the ones done so far; always at least one, its tail
    stacked without reuse if the deadline cut it (placement.place).
    """
    conf = placement.conflicts(buffers, deadline)
    out: list[tuple[str, list[int]]] = []
    for name, key in _ORDERS.items():
        order = sorted(range(len(buffers)), key=lambda i: key(buffers[i], i))
        for rule, fit in (("first", placement.FIRST_FIT), ("best", placement.BEST_FIT)):
            if out and deadline is not None and deadline.passed():
                return out
            out.append((f"{rule}/{name}", placement.place(buffers, order, fit, conf, deadline)))
    return out


def _greedy_planners(buffers: Sequence[Buffer], deadline: Deadline) -> list[list[int]]:
    """The first_fit and greedy_size planners' layouts, in the time left (each on its own
    deadline, as those planners run: one cut short does not mark the search's clock hit)."""
    out = []
    for order in (placement.start_order, placement.size_order):
        if deadline.left() <= 0:
            break
        own = Deadline(deadline.at)
        out.append(placement.place(buffers, order(buffers), placement.FIRST_FIT, deadline=own))
    return out


@dataclasses.dataclass
class _Part:
    """One independent part of the problem and what is known about it."""

    idx: list[int]  # its buffers' indices in the problem
    whole: Sequence[Buffer] = dataclasses.field(repr=False)  # the problem's buffers
    offsets: list[int]  # bytes, the best layout found
    best: int  # bytes, height of offsets
    bound: int  # bytes, proven lower bound on this part's height
    inst: Instance | None = None  # built when the part is first searched
    low_aborted: bool = False  # the probe at the bound ran out of its share: walk down instead
    cap_tried: bool = False  # the probe at problem.capacity was asked
    setup: float = 0.0  # seconds building the instance's lists took: about what a search run's setup takes

    @functools.cached_property
    def bufs(self) -> Sequence[Buffer]:
        """Its buffers, made when first asked: most parts end at their bound unsearched (on issue
        39's easy-20000, 358 parts, making them all took ~10 ms of a 0.25 CPU-s process)."""
        return _subset(self.whole, self.idx)


def _height(bufs: Sequence[Buffer], offs: Sequence[int]) -> int:
    """max(offset + size), by the buffers' arrays."""
    if not len(bufs):
        return 0
    return int((np.asarray(offs, dtype=np.int64) + columns(bufs).size).max())


def _subset(bufs: Sequence[Buffer], idx: list[int]) -> Sequence[Buffer]:
    """The buffers at ``idx`` (ascending): the sequence itself when that is all of them, a
    ColumnBuffers' rows as one (no Buffer per row), else a tuple."""
    if len(idx) == len(bufs):
        return bufs
    if isinstance(bufs, ColumnBuffers):
        return bufs.take(idx)
    return tuple(bufs[i] for i in idx)


def _seeds(problem: Problem, clock: Deadline, incumbents: Sequence[Sequence[int]],
           greedy: bool, walks: list[list[int]]) -> list[list[int]]:
    """The layouts to start from: the incumbents and the walks, else (no walk: a fixed
    buffer) the one-pass greedy ones, by ``clock``; at least one. Not both: at 20,000
    buffers the greedy ones' conflict lists (Python) took 2-8 CPU-s, and on issue 39's
    generators none was below the best walk (of the challenges, one: F, at 1 MiB anyway)."""
    layouts = [list(o) for o in incumbents] + walks
    if greedy and not walks:
        layouts += [o for _, o in greedy_layouts(problem.buffers, clock)]
        layouts += _greedy_planners(problem.buffers, clock)
    if not layouts:
        layouts = [greedy_layouts(problem.buffers, clock)[0][1]]
    return layouts


def _part_loads(bufs: Sequence[Buffer], label: np.ndarray, count: int) -> np.ndarray:
    """``load_bound`` of every part at once (parts never share an op, so each step of the one
    sweep belongs to one part): at 20,000 buffers in 362 parts 0.005 s where a sweep per part
    took 0.16."""
    cols = columns(bufs)
    at = np.concatenate([cols.end + 1, cols.start])  # as load_bound
    delta = np.concatenate([-cols.size, cols.size])
    order = np.argsort(at, kind="stable")
    out = np.zeros(count, dtype=np.int64)
    np.maximum.at(out, np.concatenate([label, label])[order], np.cumsum(delta[order]))
    return out


@dataclasses.dataclass(frozen=True)
class _Split:
    """The problem's independent parts by arrays: their buffers' indices (groups; by_part lists
    them part after part, each part starting at its cut) and each one's simple bound (load,
    fixed tops, largest buffer)."""

    groups: list[list[int]]
    by_part: np.ndarray
    cuts: np.ndarray
    simple: np.ndarray

    def heights(self, bufs: Sequence[Buffer], layout: Sequence[int]) -> np.ndarray:
        """Each part's height under ``layout`` (offsets by buffer index)."""
        return np.asarray(np.maximum.reduceat((np.asarray(layout, dtype=np.int64) + columns(bufs).size)[self.by_part],
                                              self.cuts))


def _split(bufs: Sequence[Buffer], lb: int) -> _Split:
    """The components of ``bufs`` and their simple bounds (``lb``: the whole one's load bound)."""
    groups = components(bufs)
    n = len(bufs)
    label = np.empty(n, dtype=np.int64)
    for k, idx in enumerate(groups):
        label[idx] = k
    cols = columns(bufs)
    size = cols.size
    fixed_top = np.where(cols.fixed < 0, 0, cols.fixed + size)
    by_part = np.argsort(label, kind="stable")  # each part's buffers in index order, parts in order
    cuts = np.concatenate([[0], np.cumsum([len(g) for g in groups])[:-1]]).astype(np.int64)
    if not groups:
        return _Split(groups, by_part, cuts, np.zeros(0, dtype=np.int64))
    loads = _part_loads(bufs, label, len(groups)) if len(groups) > 1 else np.array([lb], dtype=np.int64)
    simple = np.maximum(np.maximum(loads, np.maximum.reduceat(fixed_top[by_part], cuts)),
                        np.maximum.reduceat(size[by_part], cuts))
    return _Split(groups, by_part, cuts, simple)


def _parts(bufs: Sequence[Buffer], layouts: list[list[int]], split: _Split) -> list[_Part]:
    """One _Part per component, with its lowest seed and its simple bounds."""
    if not split.groups:
        return []
    heights = [split.heights(bufs, lay) for lay in layouts]
    best = np.argmin(np.stack(heights), axis=0)  # the first layout of the lowest height, per part
    parts: list[_Part] = []
    for k, idx in enumerate(split.groups):
        lay = layouts[int(best[k])]
        parts.append(_Part(idx, bufs, [lay[i] for i in idx], int(heights[int(best[k])][k]),
                           int(split.simple[k])))
    return parts


def _walk_seeds(bufs: Sequence[Buffer], inst: Instance, split: _Split, until: float,
                clock: Deadline) -> list[list[int]]:
    """The first descents under ``WALKS`` (bytes), stopping once every part is at its simple
    bound in one of them (``_parts`` takes each part's lowest), each walk after the first over
    the parts still above it only (trace-100000-s1, 2,477 parts: the first walk left a few
    open, and the whole problem was walked 11 more times, 0.25-0.5 CPU-s each, for the load
    bound as a whole), or, after the first, until ``until`` (perf_counter); a later one cut
    by ``clock`` stacks its rest and ends them. The first one runs ``FIRST_WALK_GRACE`` past the clock:
    it is the layout every run returns at worst, one O(E log n) pass in C (0.1-0.4 CPU-s at
    100,000 buffers, no more than building the instance), where a cut one stacks its rest
    without reuse (issue 39: a 3.6 GB arena for a 0.9 MB bound when the setup of a loaded
    machine had eaten the limit). Past the grace it is cut too: no run ends more than a
    second after its time limit. Empty for an instance with a fixed buffer."""
    out: list[list[int]] = []
    low = None  # each part's lowest height so far
    idx = None  # the buffers of the parts still above their bound (None: all)
    sub = inst
    for h in WALKS:
        if out and time.perf_counter() > until:
            break
        done = walk.walk(sub, preorder(sub, h), clock.at if out else clock.at + FIRST_WALK_GRACE)
        if done is None:
            break
        offs, cut = done
        if idx is None:
            out.append([o * inst.unit for o in offs])
        else:
            lay = np.array(out[-1], dtype=np.int64)
            lay[idx] = np.asarray(offs, dtype=np.int64) * inst.unit
            out.append(lay.tolist())
        if cut:
            clock.hit = True
            break
        tops = split.heights(bufs, out[-1])
        low = tops if low is None else np.minimum(low, tops)
        above = np.flatnonzero(low > split.simple)
        if not len(above):
            break
        if len(above) < len(split.groups):  # walk those parts only: the others' walks stay as they were
            idx = np.sort(np.concatenate([split.by_part[split.cuts[k]:split.cuts[k] + len(split.groups[k])]
                                          for k in above.tolist()]))
            sub = _take(inst, idx)
    return out


def _take(inst: Instance, idx: np.ndarray) -> Instance:
    """The buffers ``idx`` (ascending) of ``inst`` as an instance of their own, on the same sections:
    a part's walk does not depend on the buffers of other parts (they never meet), so it walks
    alike in either, and the rank keys (loads, widths, overlaps, index order) agree too."""
    return dataclasses.replace(inst, size=inst.size[idx], align=inst.align[idx], fixed=inst.fixed[idx],
                               s0=inst.s0[idx], s1=inst.s1[idx], start=inst.start[idx], end=inst.end[idx],
                               overlaps=None, cache={})


@dataclasses.dataclass(frozen=True)
class _Probe:
    """The next question for a part: a layout with height <= target, in ``share`` of the time left."""

    target: int  # bytes
    share: float
    at_cap: bool  # asks problem.capacity
    low: bool  # asks the bound (floor)


def _probe(p: _Part, capacity: int | None, floor: int) -> _Probe:
    """Tight capacities prune hardest: answer the problem's capacity first, then probe
    the bound, each with a share of the time; then walk down from the best."""
    at_cap = not p.cap_tried and capacity is not None and floor <= capacity < p.best
    if at_cap:
        assert capacity is not None
        share = 1.0 if capacity <= floor else CAP_SHARE  # at the bound: the only question left
        return _Probe(capacity, share, True, False)
    if not p.low_aborted and floor < p.best - 1:
        return _Probe(floor, LOW_SHARE, False, True)
    return _Probe(p.best - 1, 1.0, False, False)


def minimize(problem: Problem, params: Params, incumbents: Sequence[Sequence[int]] = (),
             planner: str = "optimal", rules: Rules | None = None, greedy: bool = True) -> Plan:
    """The search driver; ``plan`` and ``prove`` are thin wrappers around it.

    incumbents: valid layouts (offsets by buffer index) to start from. rules: the search's
    (default ``Rules()``).
    """
    t0 = time.perf_counter()
    clock = Deadline(t0 + params.time_limit)
    deadline = clock.at
    progress = params.progress
    bufs = problem.buffers
    lb = load_bound(bufs)
    if time.perf_counter() > clock.at + FIRST_WALK_GRACE and not incumbents:
        # the setup before the planner ate its limit and the grace: no walk can end in time,
        # so the layout every planner can make at once (issue 39: no run a second late)
        clock.hit = True
        stacked = placement.stack_rest(bufs, [b.fixed_offset for b in bufs],
                                       [i for i, b in enumerate(bufs) if b.fixed_offset is None])
        parts = _parts(bufs, [stacked], _split(bufs, lb))
        return _result(problem, parts, max((p.bound for p in parts), default=0), lb, planner, t0,
                       (("nodes", 0), ("decisions", 0), ("parts", len(parts))))
    split = _split(bufs, lb)
    whole = instance(bufs) if greedy and bufs else None
    walks = [] if whole is None else _walk_seeds(bufs, whole, split, t0 + WALK_SHARE * params.time_limit, clock)
    seeding = Deadline(t0 + WALK_SHARE * params.time_limit) if walks else clock  # the rest is the search's
    parts = _parts(bufs, _seeds(problem, seeding, incumbents, greedy, walks), split)
    if len(parts) == 1 and whole is not None:
        parts[0].inst = whole  # the part is the whole problem, its buffers in the same order
    global_bound = max((p.bound for p in parts), default=0)
    nodes = decisions = 0

    def report() -> None:
        if progress is not None:
            progress.report(best=max((q.best for q in parts), default=0), bound=max(global_bound, lb))
    report()
    while True:
        open_parts = [p for p in parts if p.best > max(global_bound, p.bound)]
        if not open_parts:
            break
        if problem.capacity is not None and global_bound > problem.capacity:
            break  # settled: nothing fits the capacity; the best layout found is reported
        if time.perf_counter() > deadline:
            break
        # the search, imported here: a problem whose walks reach its bound never runs it (a CSV
        # plan of 20,000 buffers: 2.5 ms of imports, 7.6 ms where Python compiles them)
        from arena_tool.plan.planners.search import Rules, decide_restarts, native_applies

        rules = Rules() if rules is None else rules
        p = max(open_parts, key=lambda q: (q.best, -q.idx[0]))
        if p.inst is None:
            p.inst = instance(p.bufs)
        if "lists" not in p.inst.cache and not native_applies(p.inst, rules):
            built = time.perf_counter()
            if not p.inst.neighbours(deadline):
                break  # the time ran out building them
            if deadline - time.perf_counter() < 2 * (time.perf_counter() - built):
                break  # the search's own setup (Instance.lists) takes about as long again: no time to search
            p.inst.lists()
            p.setup = time.perf_counter() - built
        if deadline - time.perf_counter() < p.setup:
            break  # a search run sets up (its pools, in Python) about as long as the lists took
        if "stack_bound" not in p.inst.cache:
            # alignment padding: often closes the gap to the load bound at no search
            pad = stack_bound(p.inst, deadline) * p.inst.unit
            if pad > p.bound:
                p.bound = min(pad, p.best)
                global_bound = max(global_bound, p.bound)
                report()
                continue
        inst = p.inst
        floor = max(global_bound, p.bound)
        probe = _probe(p, problem.capacity, floor)
        p.cap_tried = p.cap_tried or probe.at_cap
        cap = probe.target // inst.unit  # scaled units
        now = time.perf_counter()
        res = decide_restarts(inst, cap, now + probe.share * (deadline - now), rules, progress=progress)
        nodes += res.nodes
        decisions += 1
        if res.status == Decision.FOUND:
            assert res.offsets is not None
            offs = [int(o) * inst.unit for o in res.offsets]
            p.offsets, p.best = offs, _height(p.bufs, offs)
        elif res.status == Decision.INFEASIBLE:
            p.bound = max(p.bound, (cap + 1) * inst.unit)
            global_bound = max(global_bound, min(p.bound, p.best))
            p.bound = min(p.bound, p.best)
        elif probe.low or (probe.at_cap and probe.target <= floor):
            p.low_aborted = True  # (a capacity at the bound was that same probe)
        elif not probe.at_cap:
            break
        report()
    return _result(problem, parts, global_bound, lb, planner, t0,
                   (("nodes", nodes), ("decisions", decisions), ("parts", len(parts))))


def _result(problem: Problem, parts: list[_Part], global_bound: int, lb: int, planner: str, t0: float,
            stats: tuple[tuple[str, int], ...]) -> Plan:
    """The parts' layouts as one Plan, and what is proven about it."""
    bufs = problem.buffers
    if len(parts) == 1 and len(parts[0].idx) == len(bufs):
        offsets = list(parts[0].offsets)  # one part, its buffers the problem's, in order
    else:
        offsets = [0] * len(bufs)
        for p in parts:
            for i, o in zip(p.idx, p.offsets):
                offsets[i] = o
    arena = _height(bufs, offsets)
    proven = arena <= global_bound
    status = Status.PROVEN if proven else Status.TIME_LIMIT
    if problem.capacity is not None and arena > problem.capacity:
        if proven or global_bound > problem.capacity:
            status = Status.INFEASIBLE
    return Plan(
        offsets=tuple(offsets),
        arena_size=arena,
        planner=planner,
        optimal=proven,
        status=status,
        lower_bound=lb,
        best_bound=max(global_bound, lb) if not proven else arena,
        seconds=time.perf_counter() - t0,
        stats=stats,
    )


def plan(problem: Problem, params: Params) -> Plan:
    return minimize(problem, params)


def prove(problem: Problem, plan: Plan, params: Params, greedy: bool = False) -> Plan:
    """Prove ``plan`` minimal, or improve it, within ``params.time_limit``.

    For exact_cover: a coarsened (k > 1) result is a valid layout but not proven at
    byte granularity; this searches below its arena. The returned Plan keeps
    ``plan.planner``; optimal True/status 'proven' when nothing smaller exists,
    else the best layout found (never worse than ``plan``) with status 'time_limit'
    and ``best_bound``. greedy=True also seeds the search with the greedy layouts.
    """
    return minimize(problem, params, incumbents=[list(plan.offsets)], planner=plan.planner, greedy=greedy)
