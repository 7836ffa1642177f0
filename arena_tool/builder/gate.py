"""The budget gate: one board's plans against its RAM budget, its flash and its runtime.

``gate(target, plans, fastest, runtime_problems)`` combines one board's model
plans into the board's arena: ``sequential`` models share one arena sized to
the largest (every base is 0); ``concurrent`` models each get a slice, placed
one after the other at the largest model alignment. It then resolves the
region (``auto`` = the fastest region that fits), the budget (bytes, or a
percentage of that region) and the room left beside the stack+heap reserve,
checks the weights against the board's flash, adds what the runtime cannot
run (``runtime_problems``, from ``runtime_support``), and returns a board_report.BoardReport whatever
the outcome (its ``status``: see ``board_report``).

``board_report.failure(report)`` is the CheckFailed (exit status 1) to raise when the
status is not ok/warn; its message is one line per problem, such as::

    arena: nucleo_f746: models kws+vww need 71,680 B in DTCM, budget 65,536 B
    (over by 6,144 B, lower bound 70,144 B); try region SRAM1, or planner optimal

Suggestions (``hints``) are only those that could help: another region only when the
budget is a percentage or the reserve is what binds (a byte budget does not grow
with the region); ``planner optimal`` only for a model above its lower bound
whose plan is not proven optimal; a longer ``time_limit`` for an ``optimal``
search that stopped on it; for a float model, how to quantize it (an
onnxruntime ``quantize_static`` command line): ``activation_dtype`` is a what-if
that re-sizes the plan, not the model, so it is never the advice.

A split arena (``target.split``) and weights copied to RAM (``weights: <region>``) add
``regions`` (``region_uses``, ``region_problems`` below): per RAM region its arena and weights against its limit
(``BoardTarget.region_limit``: the budget, no more than the room beside the reserve); then the top-level
arena is the regions' sum and each region over its limit is one problem.

With ``runtime: tflm`` (``.tflite`` models run by TFLite Micro, which the firmware
brings) a model's ``arena_size`` is its ``tensor_arena``: ``head`` (arena's plan,
TFLM's non-persistent section) plus ``tail`` (TFLM's persistent section, measured by
``tflm.tflm_measure`` in the wheel's host interpreter), rounded up to 16; the budget counts
both, plus the persistent bytes the firmware's kernels (CMSIS-NN) allocate beyond the
reference kernels' (``model.tflm_persistent``).
"""

from __future__ import annotations

import dataclasses
import os
from typing import TYPE_CHECKING, AbstractSet, Any, Callable, Mapping, Sequence

from arena_tool.plan import split_arena
from arena_tool.emit import codegen, runtime_support
from arena_tool.emit.linker import failed_asserts, overflows
from arena_tool.builder import hints
from arena_tool.builder.board_report import ModelUse, OpMacs, BoardProblem, BoardReport, Usage, status_of, \
    tflm_arena_size, with_problem
from arena_tool.emit.linker_fragment import RegionUse, arena_section, weights_section
from arena_tool.core.files import project_path
from arena_tool.model.lowering import Lowered
from arena_tool.model import macs as op_macs
from arena_tool.plan.planfile import PlanFile
from arena_tool.core.problem import align_up, fmt_bytes

if TYPE_CHECKING:
    from arena_tool.target.manifest_data import BoardTarget

_FLOAT = ("float32", "float16", "bfloat16", "float64", "double", "float")


def model_use(name: str, plan_path: str, plan: PlanFile) -> ModelUse:
    weights_region = plan.options.weights or "flash"
    return ModelUse(
        regions=tuple((r.name, r.arena_size) for r in plan.regions or ()),
        weights_region=weights_region,
        weights_ram=0 if weights_region == "flash" else split_arena.weights_ram_bytes_plan(plan),
        name=name, planner=plan.planner, arena_size=plan.arena_size, lower_bound=plan.lower_bound,
        optimal=plan.optimal, status=str(plan.status), base=0, plan=project_path(plan_path),
        model=project_path(plan.model), model_sha256=plan.model_sha256, weights_bytes=plan.weights_bytes,
        caller_io=plan.caller_io, unknown_scratch=plan.unknown_scratch or (),
        patches=None if plan.patches is None else (plan.patches.stages, plan.patches.untiled_arena,
                                                   plan.patches.macs_untiled, plan.patches.macs),
    )


def plan_alignment(plan: PlanFile) -> int:
    """The alignment a model's slice needs: the plan's, or a buffer's above it."""
    return max([plan.alignment] + [b.alignment or 1 for b in plan.buffers])

def float_model(plan: PlanFile) -> bool:
    """A model that runs in float: quantizing it is what shrinks it (not a QDQ/QOperator model)."""
    return any(b.dtype in _FLOAT for b in plan.buffers if b.kind != "scratch") and not plan.integer_ops

def tflm_use(u: ModelUse, alloc: Mapping[str, Any]) -> ModelUse:
    """The model as TFLM runs it: its arena is head (the plan) + tail, rounded up to 16; its flash
    (``weights_bytes``) the planned .tflite the firmware holds as a C array."""
    tail = int(alloc["tail"])
    return dataclasses.replace(u, arena_size=tflm_arena_size(u.arena_size, tail),
                               lower_bound=tflm_arena_size(u.lower_bound, tail), head=u.arena_size, tail=tail,
                               weights_bytes=int(alloc["planned_bytes"]))

def _layout(sharing: str, uses: list[ModelUse], align: int) -> tuple[list[ModelUse], int, int]:
    """(uses with bases, arena size, lower bound) for the sharing mode; align: the slices' alignment."""
    if sharing == "sequential":
        size = max((u.arena_size for u in uses), default=0)
        lb = max((u.lower_bound for u in uses), default=0)
        return uses, size, lb
    placed: list[ModelUse] = []
    end = lb = 0
    for u in uses:
        base = align_up(end, align)
        placed.append(dataclasses.replace(u, base=base))
        end = base + u.arena_size
        lb += align_up(u.lower_bound, align)
    return placed, end, lb

def _name_clashes(board: str, plans: Sequence[tuple[str, str, PlanFile]]) -> list[BoardProblem]:
    """Models whose generated headers define the same name (codegen.header_ids): one firmware
    includes them all, so it would not compile; said here, with the fix, before any C is made."""
    owner: dict[str, str] = {}
    out: list[BoardProblem] = []
    for name, _, plan in plans:
        for ident in codegen.header_ids(name, plan):
            other = owner.setdefault(ident, name)
            if other != name:
                out.append(BoardProblem(
                    "names", f"arena: {board}: models '{other}' and '{name}' would both define {ident} in their "
                    f"generated C headers (model_{other}.h, model_{name}.h); rename one of them in the manifest "
                    f"(a name that does not start with '{other}_t', in any case)", model=name))
                break
    return out

def macs_rows(plan: PlanFile, lowered: Lowered) -> tuple[OpMacs, ...]:
    """The report's MACs per op of a plan (arena_tool.model.macs), in its schedule's order."""
    counts = op_macs.plan_macs(plan.schedule, lowered)
    return tuple(OpMacs(i, s.name, s.op_type, n) for i, (s, n) in enumerate(zip(plan.schedule, counts)))


def gate(target: BoardTarget, plans: Sequence[tuple[str, str, PlanFile]],
         fastest: Callable[[int, int], str | None] | None = None,
         runtime_problems: Sequence[BoardProblem] = (),
         tflm: Mapping[str, Mapping[str, Any]] | None = None,
         macs: Mapping[str, Sequence[OpMacs]] | None = None,
         remedy: Callable[[BoardTarget, Sequence[str], int], str] | None = None,
         tables: Mapping[str, int] | None = None, code: int | None = None) -> BoardReport:
    """Check one board (a manifest_data.BoardTarget): RAM budget, flash for the weights, runtime coverage.

    plans: (model name, plan path, plan file: planfile.load), in manifest order.
    fastest: (min_size, reserve) -> name of the fastest region with that much
    room (reserve counted in the data region), or None; only for ``region: auto``.
    runtime_problems: what the runtime cannot run (``runtime_problems`` per model).
    tflm: runtime tflm: model name -> its allocation document (``tflm_measure``); each model
    then needs its tensor_arena, head + tail rounded up to 16, and its planned model's bytes
    of flash (the C array holds the whole model, not only the weights: ``tflm_use``).
    macs: model name -> its MACs per op (``macs_rows``), for the report to show; a model without
    an entry has none (a .tflite model).
    remedy: (target, the models that set the peak, the arena's limit) -> the configurations that
    would fit (``builder.fit.remedy``, time-bounded), added to the RAM problem's hints.
    tables: model name -> its generated tables' flash besides the weights (``table_bytes``);
    code: the runtime code the board links (``code_size.code_bytes``), None when not counted.
    The flash must hold weights, tables and code together.
    Never raises for a board that does not fit: see ``BoardReport.status`` and ``failure``.
    """
    uses0 = [dataclasses.replace(model_use(n, p, d), ops=None if macs is None or n not in macs else tuple(macs[n]),
                                 table_bytes=(tables or {}).get(n, 0))
             for n, p, d in plans]
    if tflm is not None:
        uses0 = [tflm_use(u, tflm[u.name]) for u in uses0]
    align = max((plan_alignment(d) for _, _, d in plans), default=16)
    floats = {n for n, _, d in plans if float_model(d)}
    float_inputs = {n: share for n, _, d in plans if (share := hints.float_input_share(d)) is not None}
    uses, need, lb = _layout(target.sharing, uses0, align)
    reserve = target.reserve
    auto = target.region == "auto"
    names = "+".join(u.name for u in uses)
    problems: list[BoardProblem] = []

    def room(region_name: str) -> int:
        return target.region_room(region_name)

    region = target.region
    if auto:
        chosen = fastest(need, reserve) if fastest else None
        if chosen is None or room(chosen) < need:
            largest = max(target.board.ram, key=lambda r: (room(r.name), r.name))
            peak = [u for u in uses if target.sharing == "concurrent" or u.arena_size > room(largest.name)]
            tries = hints.tries(target, peak, floats, need, lb, region=None, float_inputs=float_inputs)
            found = remedy(target, [u.name for u in peak], room(largest.name)) if remedy is not None and \
                target.sharing == "sequential" else ""
            region = largest.name
            problems.append(BoardProblem(
                "ram", f"arena: {target.name}: {_who(uses)} {fmt_bytes(need)}, more than any region of the board "
                f"(largest {largest.name}, {fmt_bytes(room(largest.name))} usable; lower bound {fmt_bytes(lb)})"
                + _advice(tries, found), region=region, need=need, limit=room(largest.name)))
        else:
            region = chosen
    info = target.board.region(region)
    budget = target.budget.resolve(info.length, region)
    usable = room(region)
    limit = min(budget, usable)
    split = bool(target.split)
    placed = region_uses(target, uses, region, need)
    if split:  # the arena is the regions' together; each region is checked on its own below
        need = sum(r.arena for r in placed)
        limit = sum(r.limit for r in placed if r.arena_section is not None)
    bare = _bare_budget(target, uses, info.length)
    if bare and need > limit and not problems and not split:
        problems.append(BoardProblem("ram", f"arena: {target.name}: {bare}", region=region, need=need, limit=limit))
    elif need > limit and not problems and not split:
        over = need - limit
        offending = [u for u in uses if target.sharing == "concurrent" or u.arena_size > limit]
        alt = hints.better_region(target, need, region, room) if (
            target.budget.percent is not None or usable < budget) else None
        tries = hints.tries(target, offending, floats, need, lb, region=alt, limit=limit, float_inputs=float_inputs)
        found = remedy(target, [u.name for u in offending], limit) if remedy is not None and \
            target.sharing == "sequential" else ""
        why = f"budget {fmt_bytes(budget)}"
        if usable < budget:
            why = f"room {fmt_bytes(usable)} ({fmt_bytes(info.length)} less the {fmt_bytes(reserve)} stack+heap reserve)"
        problems.append(BoardProblem(
            "ram", f"arena: {target.name}: {_who(offending)} {fmt_bytes(need)} in {region}, {why} "
            f"(over by {fmt_bytes(over)}, lower bound {fmt_bytes(lb)})" + _advice(tries, found),
            region=region, need=need, limit=limit))
    problems += region_problems(target, placed, uses, arena_over=bool(problems))
    inside = [u for u in uses if target.board.external(u.weights_region) is None]  # weights in the internal flash
    weights = sum(u.weights_bytes for u in inside)
    flash_need = weights + sum(u.table_bytes for u in uses) + (code or 0)
    flash = target.board.flash
    if flash.length and weights > flash.length:
        problems.append(_flash_problem(target, inside, floats, weights))
    elif flash.length and flash_need > flash.length:
        problems.append(_tables_problem(target, uses, code, flash_need, weights))
    problems += external_problems(target, placed, uses)
    problems += runtime_problems
    if target.runtime != "tflm":
        problems += _name_clashes(target.name, plans)
    warning = None
    pct = 100.0 * need / limit if limit else 100.0
    warned = not problems and target.warn_above is not None and pct > target.warn_above
    if warned:
        warning = (f"arena: {target.name}: warning: {names} use {pct:.1f}% of the {fmt_bytes(limit)} budget in "
                   f"{region} (warn_above {target.warn_above:g}%)")
    ram_total = sum(r.length for r in target.board.ram)
    return BoardReport(
        board=target.name, region=region, region_origin=info.origin, region_length=info.length,
        region_auto=auto, sharing=target.sharing, arena_size=need, lower_bound=lb, alignment=align,
        budget=budget, budget_spec=target.budget.text, limit=limit, reserve_stack=target.reserve_stack,
        reserve_heap=target.reserve_heap, warn_above=target.warn_above, models=tuple(uses),
        status=status_of(problems, warned), warning=warning, runtime=target.runtime,
        options=tuple(target.options.chosen().items()),
        fit=target.fit_choice,
        ram=Usage(need + reserve + sum(u.weights_ram for u in inside if u.weights_region != "flash"), ram_total, "plan"),
        flash=Usage(flash_need, flash.length if flash is not None else 0, "plan"), problems=tuple(problems),
        regions=placed, code_bytes=code,
    )

def _bare_budget(target: BoardTarget, uses: Sequence[ModelUse], region_length: int) -> str:
    """Why a budget written without a unit (``budget: 90``: 90 bytes) is a slip, when it is below
    every model's lower bound (no plan could fit it): the percentage or kilobytes it likely meant;
    else ''."""
    text = target.budget.text
    if target.budget.size is None or not text.isdigit() or not 0 < int(text) <= 100 or not uses:
        return ""  # a byte count above 100 is a budget like any other (the gate's line, its hints)
    least = min(uses, key=lambda u: (u.lower_bound, u.name))
    if target.budget.size >= least.lower_bound:
        return ""
    n = int(text)
    return (f"budget {text} is {fmt_bytes(n)} (a number without a unit is bytes), less than the smallest model's "
            f"lower bound ({least.name}: {fmt_bytes(least.lower_bound)}); did you mean {n}% "
            f"({fmt_bytes(region_length * n // 100)} of the region) or {n}K?")


def _tables_problem(target: BoardTarget, uses: Sequence[ModelUse], code: int | None, need: int,
                    weights: int) -> BoardProblem:
    """Weights that fit, but not with the tables and the runtime code beside them: name the
    model with the most tables. weights: those in the internal flash."""
    flash = target.board.flash
    who = max(uses, key=lambda u: (u.table_bytes, u.name))
    parts = " + ".join([f"{fmt_bytes(weights)} of weights",
                        f"{fmt_bytes(sum(u.table_bytes for u in uses))} of tables ({who.name}'s {fmt_bytes(who.table_bytes)})",
                        *([f"{fmt_bytes(code)} of runtime code"] if code is not None else [])])
    return BoardProblem(
        "flash", f"arena: {target.name}: models {'+'.join(u.name for u in uses)} need {parts} = {fmt_bytes(need)} "
        f"of flash, {flash.name} has {fmt_bytes(flash.length)} (over by {fmt_bytes(need - flash.length)}, before "
        "the application's own code); try optimize: size, or a board with more flash",
        region=flash.name, need=need, limit=flash.length, model=who.name)


def _flash_problem(target: BoardTarget, uses: Sequence[ModelUse], floats: AbstractSet[str],
                   weights: int) -> BoardProblem:
    """Weights above the flash: name the model whose weights do not fit."""
    flash = target.board.flash
    alone = [u for u in uses if u.weights_bytes > flash.length]
    if alone:
        who = max(alone, key=lambda u: (u.weights_bytes, u.name))
        what = f"model {who.name}'s weights need {fmt_bytes(who.weights_bytes)} of flash"
        also = [u for u in uses if u in alone and u is not who]
        if also:
            what += " (" + ", ".join(f"{u.name}'s {fmt_bytes(u.weights_bytes)}" for u in also) + " do not fit either)"
        need = who.weights_bytes
    else:  # together: the model in manifest order whose weights cross the end of the flash
        total = 0
        who = uses[-1]
        for u in uses:
            total += u.weights_bytes
            if total > flash.length:
                who = u
                break
        what = (f"model {who.name}'s weights ({fmt_bytes(who.weights_bytes)}) do not fit beside the others: "
                f"models {'+'.join(u.name for u in uses)} need {fmt_bytes(weights)} of weights")
        need = weights
    by_weights = [u for u in sorted(uses, key=lambda u: (-u.weights_bytes, u.name)) if u.name in floats]
    tries = []
    if by_weights:
        tries.append(hints.quantize_hint(target, by_weights, "int8 weights take a quarter of float32's"))
    roomy = [f for f in target.board.external_flash if f.length >= who.weights_bytes]
    if roomy:
        tries.append(f"weights: {roomy[0].name} for model {who.name} (the board's external flash, "
                     f"{fmt_bytes(roomy[0].length)}: read in place)")
    else:
        board_file = os.path.basename(target.board.file) or "the board file"
        tries.append(f"a board with more flash, or an external flash: declare the board's QSPI/OSPI NOR under "
                     f"external_flash: in {board_file} and set weights: QSPI for model {who.name}")
    return BoardProblem(
        "flash", f"arena: {target.name}: {what}, {flash.name} has {fmt_bytes(flash.length)} "
        f"(over by {fmt_bytes(need - flash.length)}, before any code); try " + ", or ".join(tries),
        region=flash.name, need=need, limit=flash.length, model=who.name)

def external_problems(target: BoardTarget, placed: Sequence[RegionUse],
                      models: Sequence[ModelUse]) -> list[BoardProblem]:
    """Each external flash against its own length (``placed``: ``region_uses``' in_place entries):
    one problem naming the models whose weights it holds, the board file's field, and the fix."""
    out = []
    for r in placed:
        if not r.in_place or r.weights <= r.length:
            continue
        who = [m for m in models if m.weights_region == r.name]
        index = [f.name for f in target.board.external_flash].index(r.name)
        where = f"{os.path.basename(target.board.file) or target.board.name} external_flash[{index}].length"
        others = [f.name for f in target.board.external_flash if f.name != r.name and f.length >= r.weights]
        tries = [f"weights: {others[0]}" if others else "weights: flash",
                 f"or a larger flash chip (its size in {where})"]
        names = "+".join(m.name for m in who)
        out.append(BoardProblem(
            "flash", f"arena: {target.name}: {'model' if len(who) == 1 else 'models'} {names} with weights: {r.name} "
            f"{'needs' if len(who) == 1 else 'need'} {fmt_bytes(r.weights)} of {r.name}, which has "
            f"{fmt_bytes(r.length)} ({where}; over by {fmt_bytes(r.weights - r.length)}); try "
            + (f"for {who[0].name} " if len(who) == 1 else "for some of them ") + ", ".join(tries),
            region=r.name, need=r.weights, limit=r.length, model=max(who, key=lambda m: (m.weights_ram, m.name)).name))
    return out


def _advice(tries: str, found: str) -> str:
    """The hints' remedies after "try", then the fit search's verdict as its own clause: it reads
    "configurations that fit for m: ..." or "nothing meets it for m: ...", never "try nothing"."""
    return (f"; try {tries}" if tries else "") + (f"; {found}" if found else "")


def _who(uses: Sequence[ModelUse]) -> str:
    names = "+".join(u.name for u in uses)
    return f"model {names} needs" if len(uses) == 1 else f"models {names} need"


# ---------------------------------------------------------------- per region (a split arena, weights copied to RAM or in external flash)


def region_uses(target: BoardTarget, models: Sequence[ModelUse], arena_region: str, arena_size: int) -> tuple[RegionUse, ...]:
    """The regions holding arena bytes or copied weights: a split arena's in its order, then
    weight-only regions in board order, then each external flash weights are read from in place
    (``in_place``, its limit its length); () when one arena holds everything and every weight is
    in the internal flash.

    models: ModelUse (``regions``: a split plan's (region, bytes); ``weights_region``,
    ``weights_ram``); arena_region/arena_size: the gate's one arena (ignored when split).
    """
    split = tuple(target.split)
    weights: dict[str, int] = {}
    for m in models:
        if m.weights_region != "flash":
            weights[m.weights_region] = weights.get(m.weights_region, 0) + m.weights_ram
    external = tuple(RegionUse(name=f.name, origin=f.origin, length=f.length, arena=0, weights=weights.pop(f.name),
                               reserve=0, limit=f.length, arena_section=None, weights_section=weights_section(f.name),
                               in_place=True) for f in target.board.external_flash if f.name in weights)
    if not split and not weights:
        return external
    arena: dict[str, int] = {}
    if split:
        for m in models:
            for name, size in m.regions:
                arena[name] = max(arena.get(name, 0), size)
        order = list(split)
    else:
        arena[arena_region] = arena_size
        order = [arena_region]
    order += [r.name for r in target.board.ram if r.name in weights and r.name not in order]
    reserve = target.reserve
    out = []
    for name in order:
        info = target.board.region(name)
        held = name in arena
        out.append(RegionUse(
            name=name, origin=info.origin, length=info.length, arena=arena.get(name, 0),
            weights=weights.get(name, 0), reserve=reserve if name == target.board.data_region else 0,
            limit=target.region_limit(name) if held else target.region_room(name),
            arena_section=arena_section(name, bool(split)) if held else None,
            weights_section=weights_section(name) if name in weights else None))
    return tuple(out) + external

def region_problems(target: BoardTarget, regions: Sequence[RegionUse], models: Sequence[ModelUse],
                    arena_over: bool) -> list[BoardProblem]:
    """One BoardProblem per region over its limit; arena_over: the gate already reported the one
    arena over (then only the weights' share is news)."""
    split = bool(target.split)
    out = []
    for r in regions:
        if r.in_place or r.used <= r.limit or (arena_over and not split and r.arena_section is not None and r.arena > r.limit):
            continue
        parts = []
        if r.arena:
            who = [m.name for m in models if dict(m.regions).get(r.name, 0) > 0] if split else [m.name for m in models]
            parts.append(f"{fmt_bytes(r.arena)} of arena ({'+'.join(who)})")
        if r.weights:
            who = [m.name for m in models if m.weights_region == r.name]
            parts.append(f"{fmt_bytes(r.weights)} of weights ({'+'.join(who)})")
        why = f"limit {fmt_bytes(r.limit)}" + (f" (the region less the {fmt_bytes(r.reserve)} stack+heap reserve)"
                                               if r.reserve else "")
        tries = []
        if r.weights:
            tries.append("weights: flash for " + "+".join(m.name for m in models if m.weights_region == r.name))
        if split:
            tries.append("another region in region: [...] (a larger or a further one)")
        out.append(BoardProblem(
            "ram", f"arena: {target.name}: {' and '.join(parts)} need {fmt_bytes(r.used)} in {r.name}, {why} "
            f"(over by {fmt_bytes(r.used - r.limit)})" + (f"; try {', or '.join(tries)}" if tries else ""),
            region=r.name, need=r.used, limit=r.limit))
    return out


def runtime_problems(board: str, model: str, plan: PlanFile, lowered: Lowered) -> list[BoardProblem]:
    """What arena's runtime cannot run of one model: every coverage gap, and a plan that is a what-if.

    A plan whose activations are of another type than the lowered model's (``activation_dtype``,
    ``bitwidths``) sizes a model that does not exist: its tables would hold float kernels over
    int8-sized buffers. lowered: ``plancheck.lowered_model(path, plan)``.
    """
    out = [BoardProblem("unsupported", f"arena: {board}: {g.message(model)}", model=model, op_index=g.index,
                   node=g.name, op_type=g.op_type, why=g.why) for g in runtime_support.gaps(lowered)]
    for b in plan.buffers:
        t = lowered.types.get(b.name)
        if b.kind != "scratch" and t is not None and b.dtype != t.dtype:
            why = (f"the plan sizes {b.name!r} as {b.dtype} but the model computes it in {t.dtype} "
                   "(activation_dtype/bitwidths are a what-if that re-sizes the plan, not the model)")
            out.append(BoardProblem(
                "unsupported", f"arena: {board}: model {model}: {why}; quantize the model instead "
                f"({hints.quantize_command(plan.model, planfile_shapes(plan))}), "
                "or drop the option to build it", model=model, why=why))
            break
    return out

def planfile_shapes(plan: PlanFile) -> dict[str, list[int]]:
    """The plan's pinned input shapes, as the quantize command spells them."""
    return {name: list(shape) for name, shape in plan.options.input_shapes}


def link_failure(rep: BoardReport, ld_output: str, flash_name: str, region_lengths: Mapping[str, int]) -> BoardReport:
    """The report after a failed link: each region ld says overflowed (flash: over; RAM: over),
    each failed ``arena:`` ASSERT of the script, else one 'link' problem."""
    board = rep.board
    for region, over in overflows(ld_output):
        if region == flash_name:
            total = rep.flash.total
            rep = with_problem(rep, BoardProblem(
                "flash", f"arena: {board}: code, constants and weights overflow {region} by {fmt_bytes(over)} "
                f"(flash {fmt_bytes(total)}, of which the weights take {fmt_bytes(rep.weights)})",
                region=region, need=total + over, limit=total))
        else:
            length = region_lengths.get(region, 0)
            rep = with_problem(rep, BoardProblem(
                "ram", f"arena: {board}: the firmware's RAM sections overflow {region} by {fmt_bytes(over)} "
                f"({fmt_bytes(length)}; .data, .bss, the arena and the stack/heap reserve)",
                region=region, need=length + over, limit=length))
    for text in failed_asserts(ld_output):
        if not any(text in p.message for p in rep.problems):
            kind = "ram" if "overflow" in text or "larger" in text else "link"
            rep = with_problem(rep, BoardProblem(kind, f"arena: {board}: the link refused the firmware: {text}"))
    if rep.passed:
        why = "the linker's messages above say why"
        if rep.runtime == "none" and "undefined reference to `arena_" in ld_output:
            why += ("; with runtime: none the firmware defines arena_run, arena_tensor_data and what else it "
                    "calls itself: link your kernels, or use runtime: arena")
        rep = with_problem(rep, BoardProblem("link", f"arena: {board}: the link failed ({why})"))
    return rep
