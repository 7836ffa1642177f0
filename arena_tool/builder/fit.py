"""Which configurations of a board's models fit its RAM: the candidates ``arena-tool fit`` weighs,
each planned, and the RAM each needs (the plan's, so exact).

Per model the candidates vary ``io`` (model, and int8 where the model allows it:
``hints.int8_io_applies``), ``io_buffers`` (arena, caller), ``schedule`` (graph, memory) and
``patches`` (off, and the rungs of ``patches.ladder``: auto's smallest peak first, then larger
peaks that recompute fewer MACs). An option the manifest sets is fixed (``ModelSpec.fixed``).
Cheap bounds come first: a variant that runs the same ops as one already planned (io_buffers
caller, schedule memory) is planned only when its lower bound (plus, for caller, the I/O bytes
it keeps outside the arena) is below that plan's RAM, since it cannot be faster; a patched rung
only when the untiled plan does not already fit the largest region. The board's RAM of a
combination is its arena (``sequential``: the largest model's; ``concurrent``: the sum, each
slice aligned) plus the stack+heap reserve and the caller-owned I/O; it fits where the gate
would pass it: the arena within a region's limit (``BoardTarget.region_limit``).

The gate's hints read ``ram_fits`` (time-bounded); run/fit.py adds flash and time and proves a
pick on QEMU.
"""

from __future__ import annotations

import dataclasses
import itertools
import shlex
import time
from typing import TYPE_CHECKING, Sequence

from arena_tool.builder import hints
from arena_tool.core.errors import ArenaError
from arena_tool.core.problem import ModelOptions, ModelProblem, align_up, fmt_bytes, lower_bound
from arena_tool.model import liveness, patches
from arena_tool.plan import planners, planning

if TYPE_CHECKING:
    from arena_tool.plan.planfile import PlanFile
    from arena_tool.target.boards import Region
    from arena_tool.target.manifest_data import BoardTarget, ModelSpec

# the options the search turns, in the order a configuration is spelled
SEARCHED = ("io", "io_buffers", "schedule", "patches")
RUNGS = 4  # patched rungs planned per model variant besides off: ladder[0] and evenly spaced above it


@dataclasses.dataclass(frozen=True)
class Candidate:
    """One model's planned configuration: its options and what the plan says it needs.

    ram: arena + caller-owned I/O (the model's share of RAM beside the reserve);
    macs: per inference with its patches (halos recomputed)."""

    model: str
    path: str
    options: ModelOptions
    planner: str
    arena: int
    lower_bound: int
    caller_io: int
    weights: int
    macs: int
    alignment: int
    plan: PlanFile
    params: planners.Params

    @property
    def split(self) -> tuple[tuple[str, int], ...]:
        """A split plan's (region, arena bytes there), fastest first; () for one arena."""
        return tuple((r.name, r.arena_size) for r in self.plan.regions or ())

    @property
    def ram(self) -> int:
        return self.arena + self.caller_io

    def changes(self, base: ModelOptions) -> dict[str, str]:
        """The searched options that differ from ``base`` (the manifest's), as the manifest spells them."""
        return {k: str(getattr(self.options, k)) for k in SEARCHED if getattr(self.options, k) != getattr(base, k)}

    def label(self, base: ModelOptions) -> str:
        ch = [f"{k}: {v}" for k, v in self.changes(base).items()]
        if self.split:
            ch.append("region: [" + ", ".join(n for n, _ in self.split) + "]")
        return ", ".join(ch) or "as the manifest says"


@dataclasses.dataclass(frozen=True)
class Pruned:
    """A variant not planned, and why (its bound against what an equally fast plan already needs)."""

    model: str
    options: ModelOptions
    why: str


@dataclasses.dataclass(frozen=True)
class ModelSpace:
    """One model's planned candidates (manifest options first) and what the bounds pruned."""

    spec: ModelSpec
    candidates: tuple[Candidate, ...]
    pruned: tuple[Pruned, ...]
    complete: bool  # False: the time bound stopped the search


def _variants(spec: ModelSpec, int8_ok: bool) -> list[ModelOptions]:
    """The unpatched option sets to plan (fixed options kept), the manifest's own first."""
    o = dataclasses.replace(spec.options, patches="off") if "patches" not in spec.fixed else spec.options
    choices = {
        "io": ["model", "int8"] if int8_ok else ["model"],
        "io_buffers": ["arena", "caller"],
        "schedule": ["graph", "memory"],
    }
    axes = [[getattr(o, k)] if k in spec.fixed else choices[k] for k in ("io", "io_buffers", "schedule")]
    out = [dataclasses.replace(o, io=a, io_buffers=b, schedule=c) for a, b, c in itertools.product(*axes)]
    out.sort(key=lambda v: v != spec.options)
    return out


def _candidate(spec: ModelSpec, options: ModelOptions, params: planners.Params,
               regions: Sequence[tuple[str, int]] = ()) -> Candidate:
    pm = planning.plan_model(spec.path, options, spec.planner, params, regions or spec.regions)
    pf = pm.plan_file
    macs = pf.patches.macs if pf.patches is not None else patches.total_macs(liveness.lower(spec.path, options))
    return Candidate(spec.name, spec.path, options, spec.planner, pf.arena_size, pf.lower_bound, pf.caller_io,
                     pf.weights_bytes, macs, max([pf.alignment] + [b.alignment or 1 for b in pf.buffers]), pf, params)


def _io_bytes(options: ModelOptions, mp: ModelProblem) -> int:
    return sum(t.size for t in mp.tensors if t.kind in ("input", "output")) if options.io_buffers == "caller" else 0


def model_space(spec: ModelSpec, room: int, deadline: float | None = None,
                split: Sequence[tuple[str, int]] = ()) -> ModelSpace:
    """Plan ``spec``'s candidates (module docstring); room: the largest arena any region allows
    (a patched rung is planned only when the untiled plans need more); split: the board's
    regions fastest first with their limits, when its arena may be split (``region: auto``): an
    untiled plan over ``room`` but within their sum is planned split too."""
    params = planners.Params(k=spec.k, time_limit=spec.time_limit)
    first = _candidate(spec, spec.options, params)
    int8_ok = first.plan.integer_ops is not None and first.plan.integer_ops > 0 and (
        spec.options.io == "int8" or hints.int8_io_applies(first.plan))
    out: list[Candidate] = [first]
    pruned: list[Pruned] = []
    complete = True
    planned_flat: dict[tuple[str, str], int] = {}  # (io, patches) -> least RAM planned so far
    for v in _variants(spec, int8_ok):
        if deadline is not None and time.monotonic() > deadline:
            complete = False
            break
        same = (v.io, v.patches)
        mp = liveness.model_problem(spec.path, v)
        bound = lower_bound(mp.problem().buffers) + _io_bytes(v, mp)
        best = planned_flat.get(same)
        if v != spec.options and best is not None and bound >= best:
            pruned.append(Pruned(spec.name, v, f"its lower bound {fmt_bytes(bound)} is not below "
                                                f"{fmt_bytes(best)}, planned for the same ops"))
            continue
        c = first if v == spec.options else _candidate(spec, v, params)
        if c is not first:
            out.append(c)
        planned_flat[same] = min(c.ram, best if best is not None else c.ram)
    if split and not spec.regions:
        for c in [c for c in out if c.options.patches == "off" and room < c.arena <= sum(n for _, n in split)]:
            if deadline is not None and time.monotonic() > deadline:
                complete = False
                break
            s = _candidate(spec, c.options, params, split)
            if all(r.arena_size <= r.capacity for r in s.plan.regions or ()):
                out.append(s)
    if "patches" not in spec.fixed and not spec.regions:
        for io in sorted({c.options.io for c in out}):
            if deadline is not None and time.monotonic() > deadline:
                complete = False
                break
            base = min((c for c in out if c.options.io == io and c.options.patches == "off"),
                       key=lambda c: (c.ram, c.options.to_doc().__repr__()), default=None)
            if base is None or base.ram <= room:
                continue  # untiled already fits: a patched rung only adds MACs
            lw = liveness.lower(spec.path, base.options)
            rungs = patches.ladder(lw, liveness.model_problem(spec.path, base.options, lowered=lw), spec.time_limit)
            tiled = [r for r in rungs if r.stages]
            picks = sorted({round(i * (len(tiled) - 1) / max(1, RUNGS - 1)) for i in range(min(RUNGS, len(tiled)))})
            for i in picks:
                if deadline is not None and time.monotonic() > deadline:
                    complete = False
                    break
                opts = dataclasses.replace(base.options, patches=patches.text(tiled[i].stages))
                try:
                    out.append(_candidate(spec, opts, params))
                except ArenaError as e:  # a rung the runtime's stage rules refuse: said, not fatal
                    pruned.append(Pruned(spec.name, opts, e.msg))
    return ModelSpace(spec, tuple(out), tuple(pruned), complete)


@dataclasses.dataclass(frozen=True)
class Combo:
    """One candidate per model of a board, and where its arena goes.

    arena: the board's arena (sequential: the largest; concurrent: the aligned sum);
    ram: arena + reserve + caller-owned I/O; region: the fastest region whose limit holds the
    arena (None: none does); peak: the models that set the arena (sequential: the largest)."""

    picks: tuple[Candidate, ...]
    arena: int
    ram: int
    region: str | None
    peak: tuple[str, ...]


def combine(target: BoardTarget, picks: Sequence[Candidate]) -> Combo:
    if target.sharing == "sequential":
        arena = max((c.arena for c in picks), default=0)
        peak = tuple(c.model for c in picks if c.arena == arena)
    else:
        align = max((c.alignment for c in picks), default=16)
        end = 0
        for c in picks:
            end = align_up(end, align) + c.arena
        arena, peak = end, tuple(c.model for c in picks)
    if any(c.split for c in picks):  # a split arena: every model's, each region within its limit
        used: dict[str, int] = {}
        for c in picks:
            for name, size in c.split or ((None, c.arena),):
                key = name or "?"
                used[key] = max(used.get(key, 0), size)
        ok = target.sharing == "sequential" and "?" not in used and all(
            n <= target.region_limit(r) for r, n in used.items())
        return Combo(tuple(picks), arena, arena + target.reserve + sum(c.caller_io for c in picks),
                     "+".join(used) if ok else None, peak)
    regions = [target.region] if target.region != "auto" else [r.name for r in _by_speed(target)]
    region = next((r for r in regions if arena <= target.region_limit(r)), None)
    return Combo(tuple(picks), arena, arena + target.reserve + sum(c.caller_io for c in picks), region, peak)


def _by_speed(target: BoardTarget) -> list[Region]:
    """The regions usable at reset by speed rank (unranked last), then file order (as ``split: true``)."""
    ram = target.board.ram
    return sorted((r for r in ram if not r.needs_init), key=lambda r: (r.speed is None, r.speed or 0, ram.index(r)))


def scoped(target: BoardTarget) -> BoardTarget:
    """The board as the build's search may turn it: under the board's ``fit:`` every option its
    models leave unset; under models' ``fit:`` alone those models' options, the other models'
    fixed as the manifest says (``ModelSpec.fixed`` holds every searched option). The board's own
    settings (optimize, a split) are turned only under the board's ``fit:`` (``run.fit.fit``'s
    ``board_wide``)."""
    if target.fit is not None:
        return target
    return dataclasses.replace(target, models=tuple(
        m if m.fit else dataclasses.replace(m, fixed=tuple(dict.fromkeys(m.fixed + SEARCHED))) for m in target.models))


def split_caps(target: BoardTarget) -> tuple[tuple[str, int], ...]:
    """The regions a split arena may take, fastest first, with their limits: a board with more
    than one RAM region whose manifest leaves the region to arena (``region: auto``)."""
    if target.region != "auto" or target.split or len(target.board.ram) < 2 or target.sharing != "sequential":
        return ()
    return tuple((r.name, target.region_limit(r.name)) for r in _by_speed(target))


def room(target: BoardTarget) -> int:
    """The largest arena any region the target may use allows."""
    names = [target.region] if target.region != "auto" else [r.name for r in target.board.ram]
    return max(target.region_limit(n) for n in names)


def combos(target: BoardTarget, spaces: Sequence[ModelSpace]) -> list[Combo]:
    """Every combination of the models' candidates (product), sorted by RAM then by label."""
    out = [combine(target, picks) for picks in itertools.product(*(s.candidates for s in spaces))]
    return sorted(out, key=lambda c: (c.ram, [x.label(s.spec.options) for x, s in zip(c.picks, spaces)]))


def ram_fits(target: BoardTarget, seconds: float = 30.0) -> tuple[list[Combo], list[ModelSpace]]:
    """The combinations that fit the board's RAM (fewest changes, then least RAM, first) and
    every model's space; searched for at most about ``seconds`` (the gate's hints)."""
    deadline = time.monotonic() + seconds
    spaces = [model_space(m, room(target), deadline, split_caps(target)) for m in target.models]
    fitting = [c for c in combos(target, spaces) if c.region is not None]
    fitting.sort(key=lambda c: (sum(len(p.changes(s.spec.options)) for p, s in zip(c.picks, spaces)), c.ram))
    return fitting, spaces


SHOWN = 3  # configurations a hint lists


def _flags(c: Candidate, base: ModelOptions) -> str:
    return " ".join(f"--{k.replace('_', '-')} {shlex.quote(v)}" for k, v in c.changes(base).items())


def remedies(spec: ModelSpec, limit: int, seconds: float = 20.0, cli: bool = False) -> tuple[bool, str]:
    """What the search finds for one model over ``limit`` bytes of arena: (True, up to ``SHOWN``
    configurations that fit, fewest changes then least RAM first, as manifest options or with
    ``cli`` as flags), or (False, the smallest arena it reached when none fits); '' when it found
    nothing to say."""
    space = model_space(spec, limit, time.monotonic() + seconds)
    fitting = sorted((c for c in space.candidates if c.arena <= limit),
                     key=lambda c: (len(c.changes(spec.options)), c.ram, c.label(spec.options)))
    shown = [c for c in fitting if c.changes(spec.options)][:SHOWN]

    def say(c: Candidate) -> str:
        what = _flags(c, spec.options) if cli else c.label(spec.options)
        extra = f" + {fmt_bytes(c.caller_io)} caller-owned I/O" if c.caller_io else ""
        return f"{what} ({fmt_bytes(c.arena)}{extra})"

    if shown:
        return True, f"configurations that fit for {spec.name}: " + "; ".join(say(c) for c in shown)
    least = min(space.candidates, key=lambda c: (c.arena, c.label(spec.options)))
    stopped = "" if space.complete else " (the search stopped at its time bound)"
    return False, f"nothing meets it for {spec.name}{stopped}: the smallest arena reached is " + say(least)


def remedy(target: BoardTarget, names: Sequence[str], limit: int, seconds: float = 20.0) -> str:
    """``remedies`` for each model of the board named (the models that set the peak)."""
    parts = []
    for m in target.models:
        if m.name in names:
            try:
                parts.append(remedies(m, limit, seconds / max(1, len(names)))[1])
            except ArenaError:  # a variant the model refuses: the gate's own lines still stand
                continue
    return "; ".join(p for p in parts if p)
