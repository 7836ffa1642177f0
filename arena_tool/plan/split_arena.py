"""Split arena: every buffer in one of several RAM regions, the most-accessed bytes in the fastest.

Why: a board's fastest RAM (a TCM) is often too small for the whole arena, while a slower
one is large; a model that fits neither alone may fit both, and the buffers the kernels touch
most should sit in the fast one. The manifest lists the regions fastest first
(``region: [DTCM, SRAM1]``, or ``split: true`` for the board's regions by ``speed``), each with
a capacity in bytes (``BoardTarget.region_limit``: the budget share of the region less the stack and
heap reserve of the data region; less the model's own weights when ``weights:`` names it).

Cost model (``access_bytes``; bytes moved per inference, from the lowered ops):

- every op reads each arena input once and writes each output once (bytes = the planned size);
- a windowed op (Conv, QLinearConv, MaxPool, AveragePool, QLinearAveragePool) reads its data
  input kh*kw/(sh*sw) times, at least once (each output pixel reads its window; the reuse over
  output channels is left to registers and not counted);
- an im2col workspace is written once and read once;
- an alias group (views, in-place outputs) is one buffer: its members' accesses add up.

An assignment's cost is sum(access(b) * rank(region(b))), rank 0 the fastest: with two
regions, the bytes accessed outside the fast region. It is feasible when each region's
buffers pack (the planner's layout, validated) within the region's capacity.

Method (``assign``):

1. Four greedy seeds, each buffer in turn into the fastest region whose load (the largest sum
   of live sizes at one op) stays within capacity, else the one it overflows least: by access
   density (access / size, descending: the knapsack greedy), by size ascending
   (``small_first``, the baseline the floor is measured against), by size descending and in
   order of birth. Each region is then packed; one that does not pack gives a buffer live at
   its peak op (the least dense first) to another region with load room (slower ones first)
   until every region packs (repair), or no move is left (the seed does not fit).
2. Exact, for at most ``EXACT_MAX`` buffers (and for any number when no seed fits): branch and
   bound over assignments, the buffers in descending access order, fastest region first,
   starting from the best seed. A branch is cut when a region's load passes its capacity or
   when its cost plus, for every buffer left, its access times the rank of the fastest region
   its range still has room in, reaches the best. A leaf that improves is packed (greedy by
   size and first fit, then ``optimal`` under the capacity for at most ``LEAF_LIMIT`` s).
   Exhausted: 'proven' (no cheaper feasible assignment exists; 'infeasible' with method
   exact: none fits at all); cut by the time limit (``SEARCH_SHARE`` of it): 'time_limit',
   the best found. Load pruning is strong: MLPerf Tiny's 34-buffer vww_96 finishes in 0.1 s.
3. Each region is planned by the chosen planner under its capacity (kept when it fits, else
   the packing that proved the region feasible).

The answer is never costlier than any seed that fits, so never below the small-first baseline.
A split plan is a plan file with ``regions`` (per region: capacity, arena size, accessed bytes)
and ``split`` (method, status, cost) and a ``region`` on every buffer; ``arena_size`` is the sum
of the region arenas, each buffer's ``offset`` is inside its region's arena.

Worked example (example_firmware kws, 16 B alignment, two regions of 20 KiB): the chain of
16,000 B activations t1 -> t5 -> t9 -> t13 needs 32,000 B at every hand-over, more than either
region; the search (proven) puts t5 and t13 with their views, the input, the three 512 B
workspaces and the small tail in FAST (16,512 B) and t1, t9 in SLOW (16,000 B): 2,327,408 of
the 2,839,408 accessed bytes per inference (82 %) in FAST; small buffers first, 535,408.
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Any, Callable, Mapping, Sequence

from arena_tool.model import optable
from arena_tool.plan import validate
from arena_tool.plan.planners import first_fit, greedy_size, optimal
from arena_tool.plan.planners.params import Params
from arena_tool.core.errors import ArenaBug, ArenaError
from arena_tool.plan.planfile import PlanFile, PlanRegion, PlanSplit
from arena_tool.core.problem import Buffer, ModelProblem, Plan, Problem, Status, align_up, lower_bound

EXACT_MAX = 64  # buffers: the assignment search runs (exact when it finishes in time) up to this many
SEARCH_SHARE = 0.5  # of the time limit, for the assignment search (the rest: the final plans)
LEAF_LIMIT = 0.25  # seconds: one optimal packing probe at a leaf
CONST_SLACK = 8  # bytes per weight array: alignment padding in a weights section, at worst
COST_MODEL = ("reads + writes per inference: each op reads every arena input once and writes every output "
              "once; Conv/QLinearConv/MaxPool/AveragePool/QLinearAveragePool read their data input "
              "kh*kw/(sh*sw) times (at least once); a workspace is written and read once; an alias group "
              "adds up its members")


@dataclasses.dataclass(frozen=True)
class RegionCap:
    """One region a split plan may use. name: the board's RAM region; capacity: bytes."""

    name: str
    capacity: int


@dataclasses.dataclass(frozen=True)
class Assignment:
    """A region per buffer. regions[i]: index into the caps for problem.buffers[i].

    cost: sum(access * rank); method: 'exact' | 'heuristic'; status: 'proven',
    'time_limit', 'heuristic' or 'infeasible' (some region does not pack even after repair);
    seed: which start the answer came from ('density', 'small_first', 'largest_first', 'in_time'
      or 'search').
    """

    regions: tuple[int, ...]
    cost: int
    method: str
    status: str
    seed: str


# ---------------------------------------------------------------- the cost model


def access_bytes(mp: ModelProblem, lowered: Any) -> tuple[int, ...]:
    """Bytes read + written per inference of each buffer of ``mp.problem()`` (see the module
    docstring); ``lowered``: the lowering.Lowered the problem was built from (for kernel
    shapes and strides), or None (every op then reads its inputs once)."""
    by_node = {op.node: op for op in getattr(lowered, "ops", ())}
    root = {t.name: t.alias_of or t.name for t in mp.tensors}
    size = {t.name: t.size for t in mp.tensors}
    total: dict[str, int] = {}

    def add(name: str, n: int) -> None:
        total[root[name]] = total.get(root[name], 0) + n

    for step in mp.schedule:
        op = by_node.get(step.node)
        for pos, name in enumerate(step.inputs):
            if name in root:
                add(name, _window_reads(size[name], op) if pos == 0 and step.op_type in optable.WINDOWED else size[name])
        for name in step.outputs:
            if name in root:
                add(name, size[name])
        if step.workspace and step.workspace in root:
            add(step.workspace, 2 * size[step.workspace])
    return tuple(total.get(b.name, 0) for b in mp.problem().buffers)


def _window_reads(size: int, op: Any) -> int:
    attrs = getattr(op, "attrs", None) or {}
    area = math.prod(int(k) for k in attrs.get("kernel_shape") or [1])
    step = math.prod(max(1, int(s)) for s in attrs.get("strides") or [1])
    return max(size, size * area // step)


def accessed_per_region(assignment: Sequence[int], access: Sequence[int], n_regions: int) -> list[int]:
    out = [0] * n_regions
    for r, a in zip(assignment, access):
        out[r] += a
    return out


def cost_of(assignment: Sequence[int], access: Sequence[int]) -> int:
    return sum(r * a for r, a in zip(assignment, access))


# ---------------------------------------------------------------- packing


class _Packer:
    """Whether a set of buffers packs within a region's capacity; answers cached per set.

    A set packs when first fit or greedy by size places it within the capacity, else when
    ``optimal`` finds a layout within it (at most LEAF_LIMIT s). ``unsure`` counts the sets
    refused without a proof (the probe ran out of time), so the caller cannot claim 'proven'.
    """

    def __init__(self, buffers: Sequence[Buffer], caps: Sequence[RegionCap]) -> None:
        self.buffers = buffers
        self.caps = caps
        self.cache: dict[tuple[int, tuple[int, ...]], tuple[int, ...] | None] = {}
        self.unsure = 0

    def offsets(self, r: int, members: Sequence[int]) -> tuple[int, ...] | None:
        """Offsets (in members' order) within capacity r, or None."""
        key = (r, tuple(members))
        if key not in self.cache:
            self.cache[key] = self._pack(self.caps[r].capacity, [self.buffers[i] for i in members])
        return self.cache[key]

    def _pack(self, cap: int, bufs: list[Buffer]) -> tuple[int, ...] | None:
        if not bufs:
            return ()
        if lower_bound(bufs) > cap:
            return None
        problem = Problem(tuple(bufs), cap)
        quick = Params(time_limit=LEAF_LIMIT)  # no progress line: the planners run as the registry would
        for heuristic in (greedy_size.plan, first_fit.plan):
            plan = heuristic(problem, quick)
            if plan.arena_size <= cap:
                return plan.offsets
        plan = optimal.plan(problem, quick)
        if plan.arena_size <= cap:
            return plan.offsets
        if plan.status != "infeasible":
            self.unsure += 1
        return None


def _loads(buffers: Sequence[Buffer], assignment: Sequence[int], n_regions: int) -> list[list[int]]:
    horizon = max((b.end for b in buffers), default=-1) + 1
    loads = [[0] * horizon for _ in range(n_regions)]
    for b, r in zip(buffers, assignment):
        if r >= 0:
            for t in range(b.start, b.end + 1):
                loads[r][t] += b.size
    return loads


def _room(load: list[int], b: Buffer, cap: int) -> bool:
    return max(load[b.start:b.end + 1]) + b.size <= cap


def _place(load: list[int], b: Buffer, sign: int) -> None:
    for t in range(b.start, b.end + 1):
        load[t] += sign * b.size


# ---------------------------------------------------------------- the assignment


def greedy(buffers: Sequence[Buffer], caps: Sequence[RegionCap], order: Sequence[int],
           density: Sequence[float], packer: _Packer) -> tuple[list[int], bool]:
    """(assignment, feasible): each buffer in ``order`` into the fastest region with load room
    (else the one it overflows least), then repair (module docstring, step 1)."""
    n_regions, n = len(caps), len(buffers)
    loads = _loads(buffers, [-1] * n, n_regions)
    assign = [n_regions - 1] * n
    for i in order:
        b = buffers[i]
        fits = [r for r in range(n_regions) if _room(loads[r], b, caps[r].capacity)]
        r = fits[0] if fits else min(range(n_regions), key=lambda r: (
            max(loads[r][b.start:b.end + 1]) + b.size - caps[r].capacity, -r))
        assign[i] = r
        _place(loads[r], b, 1)
    for _ in range(n * n_regions + 1):
        bad = next((r for r in range(n_regions)
                    if packer.offsets(r, [i for i in range(n) if assign[i] == r]) is None), None)
        if bad is None:
            return assign, True
        peak = max(range(len(loads[bad])), key=lambda t: (loads[bad][t], -t))
        live = sorted((i for i in range(n) if assign[i] == bad and buffers[i].start <= peak <= buffers[i].end),
                      key=lambda i: (density[i], -buffers[i].size, i))
        moves = ((i, t) for i in live for t in [*range(bad + 1, n_regions), *range(bad - 1, -1, -1)]
                 if _room(loads[t], buffers[i], caps[t].capacity))
        move = next(moves, None)
        if move is None:
            return assign, False
        i, t = move
        assign[i] = t
        _place(loads[bad], buffers[i], -1)
        _place(loads[t], buffers[i], 1)
    return assign, False


def small_first(buffers: Sequence[Buffer], caps: Sequence[RegionCap], access: Sequence[int],
                packer: _Packer | None = None) -> tuple[list[int], bool]:
    """The baseline: ``greedy`` with the buffers by size ascending (ties: index)."""
    packer = packer or _Packer(buffers, caps)
    order = sorted(range(len(buffers)), key=lambda i: (buffers[i].size, i))
    return greedy(buffers, caps, order, _density(buffers, access), packer)


def _density(buffers: Sequence[Buffer], access: Sequence[int]) -> list[float]:
    return [a / max(1, b.size) for b, a in zip(buffers, access)]


def assign(buffers: Sequence[Buffer], access: Sequence[int], caps: Sequence[RegionCap],
           time_limit: float = 5.0) -> Assignment:
    """The cheapest feasible assignment found within ``time_limit`` seconds (module docstring)."""
    if not caps:
        raise ArenaError("a split arena needs at least one region", field="region")
    t0 = time.perf_counter()
    packer = _Packer(buffers, caps)
    dens = _density(buffers, access)
    idx = range(len(buffers))
    orders = {"density": sorted(idx, key=lambda i: (-dens[i], -access[i], i)),
              "largest_first": sorted(idx, key=lambda i: (-buffers[i].size, -dens[i], i)),
              "in_time": sorted(idx, key=lambda i: (buffers[i].start, -dens[i], i))}
    seeds = [(name, *greedy(buffers, caps, order, dens, packer)) for name, order in orders.items()]
    seeds.insert(1, ("small_first", *small_first(buffers, caps, access, packer)))
    feasible = [(cost_of(a, access), k, name, a) for k, (name, a, ok) in enumerate(seeds) if ok]
    best_cost, _, seed, best = min(feasible) if feasible else (math.inf, 0, "density", seeds[0][1])
    if best_cost == 0:
        return Assignment(tuple(best), 0, "exact", "proven", seed)
    if len(buffers) > EXACT_MAX and feasible:
        return Assignment(tuple(best), int(best_cost), "heuristic", "heuristic", seed)
    unsure = packer.unsure  # a seed's unproven refusal does not weaken the search's proof
    found, done = _search(buffers, access, caps, packer, best_cost, t0 + time_limit)
    if found is not None:
        best, best_cost, seed = found, cost_of(found, access), "search"
    if best_cost == math.inf:
        return Assignment(tuple(best), cost_of(best, access), "exact" if done else "heuristic",
                          "infeasible", seed)
    proven = done and packer.unsure == unsure
    return Assignment(tuple(best), int(best_cost), "exact" if done else "heuristic",
                      "proven" if proven else "time_limit", seed)


def _search(buffers: Sequence[Buffer], access: Sequence[int], caps: Sequence[RegionCap], packer: _Packer,
            incumbent: float, deadline: float) -> tuple[list[int] | None, bool]:
    """(a feasible assignment cheaper than ``incumbent`` or None, whether the search finished)."""
    n, n_regions = len(buffers), len(caps)
    order = sorted(range(n), key=lambda i: (-access[i], -buffers[i].size, i))
    loads = _loads(buffers, [-1] * n, n_regions)
    assign = [-1] * n
    best: list[int] | None = None
    best_cost = incumbent
    nodes = 0
    timed_out = False

    def fastest_room(i: int) -> int | None:
        return next((r for r in range(n_regions) if _room(loads[r], buffers[i], caps[r].capacity)), None)

    def visit(k: int, cost: int) -> None:
        nonlocal best, best_cost, nodes, timed_out
        nodes += 1
        if timed_out or (nodes & 255 == 0 and time.perf_counter() > deadline):
            timed_out = True
            return
        bound = cost
        for j in order[k:]:
            r = fastest_room(j)
            if r is None:
                return  # some buffer has room nowhere: no feasible completion
            bound += r * access[j]
        if bound >= best_cost:
            return
        if k == n:
            members = [[i for i in range(n) if assign[i] == r] for r in range(n_regions)]
            if all(packer.offsets(r, m) is not None for r, m in enumerate(members)):
                best, best_cost = list(assign), cost
            return
        i = order[k]
        for r in range(n_regions):
            if _room(loads[r], buffers[i], caps[r].capacity):
                assign[i] = r
                _place(loads[r], buffers[i], 1)
                visit(k + 1, cost + r * access[i])
                _place(loads[r], buffers[i], -1)
                assign[i] = -1
                if best_cost == 0 or timed_out:
                    return

    visit(0, 0)
    return best, not timed_out


# ---------------------------------------------------------------- the plan


def weights_ram_bytes(mp: ModelProblem) -> int:
    """What the model's weights take in a RAM region (``weights: <region>``): their bytes plus
    CONST_SLACK per weight array for alignment, rounded up to 16 (an upper bound of the
    ``.weights_<region>`` section the tables fill). The gate counts the same from the plan
    (``weights_ram_bytes_plan``)."""
    names = {t.name for t in mp.tensors}
    consts = {n for s in mp.schedule for n in s.inputs if n and n not in names}
    return align_up(int(mp.weights_bytes) + CONST_SLACK * len(consts), 16)


def weights_ram_bytes_plan(plan: "PlanFile") -> int:
    """``weights_ram_bytes`` of a plan file (planfile.load)."""
    names = {b.name for b in plan.buffers}
    consts = {n for s in plan.schedule for n in s.inputs if n and n not in names}
    return align_up(plan.weights_bytes + CONST_SLACK * len(consts), 16)


@dataclasses.dataclass(frozen=True)
class Split:
    """What the split planner adds to one model's plan: the combined plan (each offset inside its
    region's arena), per region its plan, the split itself, and each alias root's region."""

    plan: Plan
    regions: tuple[PlanRegion, ...]
    split: PlanSplit
    region_of: Mapping[str, str]


def plan_split(mp: ModelProblem, lowered: Any, problem: Problem, caps: Sequence[RegionCap], planner: str,
               run: Callable[[Problem, float], Plan], time_limit: float) -> Split:
    """The split planner over one model's problem (``planning.plan_split`` builds the plan file
    around it): ``run(sub, seconds)`` plans a region's buffers with the chosen planner, validated.
    Over capacity even after repair is an answer: the plan says status 'infeasible' and the gate
    reports the region."""
    if mp.options.weights != "flash":
        cut = weights_ram_bytes(mp)
        caps = [RegionCap(c.name, max(0, c.capacity - cut)) if c.name == mp.options.weights else c for c in caps]
    bufs = problem.buffers
    access = access_bytes(mp, lowered)
    t0 = time.perf_counter()
    a = assign(bufs, access, caps, time_limit * SEARCH_SHARE)
    seconds = time.perf_counter() - t0
    packer = _Packer(bufs, caps)
    offsets = [0] * len(bufs)
    region_plans: list[PlanRegion] = []
    all_optimal = a.status == "proven"
    rest = max(0.05, (time_limit - seconds) / max(1, len(caps)))
    for r, cap in enumerate(caps):
        members = [i for i in range(len(bufs)) if a.regions[i] == r]
        sub = Problem(tuple(bufs[i] for i in members), cap.capacity)
        plan = run(sub, rest) if members else None
        used = planner
        offs = plan.offsets if plan is not None else ()
        if plan is not None and plan.arena_size > cap.capacity:
            fits = packer.offsets(r, members)
            if fits is not None:
                offs, used = fits, "packing"
                bad = validate.violations(sub, offs, max((o + b.size for o, b in zip(offs, sub.buffers)), default=0))
                if bad:  # the packing planners broke their contract
                    raise ArenaBug(f"packing region {cap.name} gave an invalid layout: {bad[0].message}")
        for i, o in zip(members, offs):
            offsets[i] = o
        size = max((o + bufs[i].size for i, o in zip(members, offs)), default=0)
        all_optimal = all_optimal and (plan is None or bool(plan.optimal)) and used == planner
        region_plans.append(PlanRegion(
            name=cap.name, capacity=cap.capacity, arena_size=size,
            lower_bound=lower_bound([bufs[i] for i in members]),
            accessed_bytes=sum(access[i] for i in members), buffers=len(members),
            planner=used, status=Status(plan.status) if plan is not None else Status.PROVEN,
        ))
    total = sum(r.arena_size for r in region_plans)
    combined = Plan(offsets=tuple(offsets), arena_size=total, planner=planner, optimal=all_optimal,
                    status=Status(a.status), lower_bound=lower_bound(bufs), seconds=time.perf_counter() - t0)
    base, base_ok = small_first(bufs, caps, access)
    root_region = {b.name: caps[a.regions[i]].name for i, b in enumerate(bufs)}
    split = PlanSplit(method=a.method, status=Status(a.status), seed=a.seed, cost=a.cost, cost_model=COST_MODEL,
                      accessed_bytes=sum(access),
                      small_first_accessed=tuple(accessed_per_region(base, access, len(caps))) if base_ok else None)
    return Split(combined, tuple(region_plans), split, root_region)
