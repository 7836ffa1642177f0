"""Model -> validated plan: the one pipeline the CLI and the SCons tool share.

Every plan is checked by the independent validator before anyone sees it; a
planner that returns an invalid plan is an arena bug (exit status 3), never a
result.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

from arena_tool.model import liveness, optable, patches, tflite_model, tflm_scratch
from arena_tool.plan import planfile, planners, split_arena, validate
from arena_tool.plan.planners import (LEAST_SECONDS as LEAST_SECONDS, RESERVE_SECONDS_PER_BUFFER as RESERVE_SECONDS_PER_BUFFER,
                                    check_planner_name as check_planner_name, planner_limit as planner_limit,
                                    planner_names as planner_names, run_planner as run_planner)
from arena_tool.core.errors import ArenaBug, ArenaError
from arena_tool.model.lowering import Lowered
from arena_tool.plan.planfile import PlanBaselines, PlanFile, PlanPatches, model_kind
from arena_tool.core.problem import ARENA_KERNELS, ModelOptions, ModelProblem, Plan, Problem, Status, arena_size, lower_bound


@dataclasses.dataclass(frozen=True)
class PlannedModel:
    """mp: the model's problem; problem: mp.problem(); plan: the validated plan; plan_file: the
    plan file (planfile.build; planfile.write writes it)."""

    mp: ModelProblem
    problem: Problem
    plan: Plan
    plan_file: PlanFile


def plan_model(path: str, options: ModelOptions, planner: str, params: planners.Params,
               regions: Sequence[tuple[str, int]] = ()) -> PlannedModel:
    """regions: (name, capacity in bytes) fastest first, for a split arena (plan_split);
    empty: one arena."""
    if options.kernels == "cmsis_nn":  # a build resolves it by the board's core; without a board, say which
        raise ArenaError("kernels cmsis_nn is CMSIS-NN as a board's core runs it, and no board is given",
                         field="--kernels", hint="give --board B, or name the variant: cmsis_nn_dsp (Cortex-M4/M7/M33), "
                         "cmsis_nn_nodsp (M0/M3) or cmsis_nn_mve (M55/M85)")
    if regions:
        return plan_split(path, options, planner, params, [split_arena.RegionCap(n, int(c)) for n, c in regions])
    check_planner_name(planner)
    lowered = None if tflite_model.is_tflite(path) and options.kernels != ARENA_KERNELS else _lower(path, options)
    mp, problem, plan = _plan_lowered(path, options, lowered, planner, params)
    patched = None
    if lowered is not None and options.patches != "off":
        lowered, mp, problem, plan, patched = _patched(path, options, lowered, (mp, problem, plan), planner, params)
    one = planfile.build(mp, plan, problem, k=params.k, baselines=_baselines(path, mp, lowered))
    return PlannedModel(mp, problem, plan, dataclasses.replace(one, patches=patched))


def plan_tflite(path: str, options: ModelOptions, planner: str, params: planners.Params,
                order: Sequence[int] | None = None) -> PlannedModel:
    """plan_model for a .tflite in a given operator order (None: the model's)."""
    if order is None:
        return plan_model(path, options, planner, params)
    check_planner_name(planner)
    mp = tflite_model.model_problem(path, options, order=order)
    problem = mp.problem()
    result = tflm_settled(mp, problem, run_planner(planner, problem, params))  # no aliases in TFLM
    return PlannedModel(mp, problem, result, planfile.build(mp, result, problem, k=params.k))


def _lower(path: str, options: ModelOptions) -> Lowered:
    """The lowered model with the stages options.patches names run tile by tile."""
    try:
        return patches.tiled(liveness.lower(path, options), options.patches)
    except ArenaError as e:
        raise e.located(file=path)


def _plan_lowered(path: str, options: ModelOptions, lowered: Lowered | None, planner: str,
                  params: planners.Params) -> tuple[ModelProblem, Problem, Plan]:
    mp = liveness.model_problem(path, options, lowered=lowered)
    problem = mp.problem()
    plan = tflm_settled(mp, problem, run_planner(planner, problem, params))
    if any(t.alias_of for t in mp.tensors):
        # An alias group is one rectangle, so sharing can in rare layouts pack worse than
        # separate buffers; when the plan is above what separate buffers could need at best,
        # plan those too and keep the smaller: in-place never costs bytes.
        flat = mp.without_aliases()
        flat_problem = flat.problem()
        if plan.arena_size > lower_bound(flat_problem.buffers):
            alt = run_planner(planner, flat_problem, params)
            if alt.arena_size < plan.arena_size:
                mp, problem, plan = flat, flat_problem, alt
    return mp, problem, plan


def _patched(path: str, options: ModelOptions, lowered: Lowered, planned: tuple[ModelProblem, Problem, Plan],
             planner: str, params: planners.Params
             ) -> tuple[Lowered, ModelProblem, Problem, Plan, PlanPatches]:
    """Patch-based inference: the untiled plan beside the patched one. Under auto the stages
    are chosen (patches.choose) and the untiled plan is kept unless the patched one is smaller;
    stages the user named are planned as named. The PlanPatches says what each cost."""
    untiled = lowered.untiled or lowered
    if lowered.untiled is None:
        off = planned
    else:
        off = _plan_lowered(path, options, untiled, planner, params)
    macs0 = patches.total_macs(untiled)
    status, candidates = Status.PROVEN, 0
    chosen: Lowered = lowered
    if options.patches == "auto":
        choice = patches.choose(untiled, off[0], params.time_limit)
        status, candidates = choice.status, choice.candidates
        chosen = patches.apply(untiled, choice.stages) if choice.stages else untiled
    result = planned if chosen is lowered else _plan_lowered(path, options, chosen, planner, params) \
        if chosen.stages else off
    if options.patches == "auto" and result[2].arena_size >= off[2].arena_size:
        chosen, result = untiled, off  # auto never returns a larger plan than off
    info = PlanPatches(stages=patches.text([s.spec for s in chosen.stages]), untiled_arena=off[2].arena_size,
                       untiled_lower_bound=off[2].lower_bound, macs_untiled=macs0, macs=patches.total_macs(chosen),
                       status=status, candidates=candidates,
                       detail=tuple(patches.describe(s) for s in chosen.stages))
    return (chosen, *result, info)


def tflm_settled(mp: ModelProblem, problem: Problem, plan: Plan) -> Plan:
    """A .tflite plan with its kernel scratch buffers where TFLM will put them.

    TFLM takes the offline plan's offsets for tensors only: it places every scratch buffer
    itself, after the tensors, first fit (tflm_scratch.tflm_placement). So the plan keeps the
    planner's tensor offsets and takes TFLM's for the scratch: the head TFLM uses is then the
    plan's arena_size. A single scratch buffer per op (or equal sizes) never lands above the
    planner's; where TFLM's first fit of unequal buffers lands higher, the optimality claim
    goes (best_bound keeps the planner's proof). A plan that omits scratch arena cannot size
    (``unknown_scratch``) claims no optimality either.
    """
    if model_kind(mp) != tflite_model.KIND:
        return plan
    assert isinstance(mp, tflite_model.TfliteProblem)
    kinds = {t.name: t.kind for t in mp.tensors}
    scratch = [kinds[b.name] == "scratch" for b in problem.buffers]
    if any(scratch):
        bufs = problem.buffers
        offsets = tuple(tflm_scratch.tflm_placement([b.size for b in bufs], [b.start for b in bufs],
                                                     [b.end for b in bufs],
                                                     [None if s else o for s, o in zip(scratch, plan.offsets)]))
        size = arena_size(bufs, offsets)
        bad = validate.violations(dataclasses.replace(problem, capacity=None), offsets, size)
        if bad:
            raise ArenaBug(f"TFLM's placement of the scratch buffers overlaps: {bad[0].message}")
        if size > plan.arena_size:
            best = max(plan.best_bound or plan.lower_bound, plan.arena_size if plan.optimal else 0)
            plan = dataclasses.replace(plan, offsets=offsets, arena_size=size, optimal=False,
                                       status=Status.HEURISTIC, best_bound=best)
        else:  # first fit can only be lower than a non-optimal planner's (it is a valid placement)
            proven = size == plan.lower_bound
            plan = dataclasses.replace(plan, offsets=offsets, arena_size=size,
                                       optimal=True if proven else plan.optimal,
                                       status=Status.PROVEN if proven else plan.status)
    if mp.unknown_scratch:
        plan = dataclasses.replace(plan, optimal=False, status=Status.HEURISTIC)
    return plan


def left_after_copies(regions: Sequence[tuple[str, int]],
                      copied: Sequence[tuple[str, str, ModelOptions]]) -> list[tuple[str, int]]:
    """A split arena's (region, capacity) less what other models' weights copied into a region
    take there (``weights: <region>``, (region, model path, its options)): they stay resident
    while this model runs, so its split is planned against what is left. (The model's own
    copied weights are ``split_arena.plan_split``'s to take off.)"""
    out = list(regions)
    for region, path, options in copied:
        cut = split_arena.weights_ram_bytes(liveness.model_problem(path, options))
        out = [(n, max(0, c - cut) if n == region else c) for n, c in out]
    return out


def plan_split(path: str, options: ModelOptions, planner: str, params: planners.Params,
               caps: Sequence[split_arena.RegionCap]) -> PlannedModel:
    """``plan_model`` for a split arena: a PlannedModel whose plan file carries a region per
    buffer (split_arena.plan_split, the split planner, says how)."""
    check_planner_name(planner)
    if not caps:
        raise ArenaError("a split arena needs at least one region", field="region")
    if options.patches == "auto":
        raise ArenaError("patches: auto is not chosen for a split arena", field="patches",
                         hint="name the stages (patches: {split_after: NODE, tiles: N}), or plan one region")
    lowered = _lower(path, options)
    mp = liveness.model_problem(path, options, lowered=lowered)
    problem = mp.problem()
    s = split_arena.plan_split(mp, lowered, problem, caps, planner,
                         lambda sub, seconds: run_planner(planner, sub, dataclasses.replace(params, time_limit=seconds)),
                         params.time_limit)
    one = planfile.build(mp, s.plan, problem, k=params.k, baselines=_baselines(path, mp, lowered))
    in_arena = set(one.in_arena)  # caller-owned inputs and outputs (io_buffers: caller) are in no region
    plan_file = dataclasses.replace(
        one, buffers=tuple(dataclasses.replace(b, region=s.region_of[b.root]) if b in in_arena else b
                           for b in one.buffers),
        regions=s.regions, split=s.split)
    if options.patches != "off":  # the stages named: what they cost against the untiled model in one arena
        plan_file = dataclasses.replace(
            plan_file, patches=_patched(path, options, lowered, (mp, problem, s.plan), planner, params)[4])
    return PlannedModel(mp, problem, s.plan, plan_file)


def _baselines(path: str, mp: ModelProblem, lowered: Lowered | None) -> PlanBaselines:
    """The lower bounds without the options that change the peak itself, so explain can say
    what each saved: the graph's own order (under schedule: memory) and no in-place depthwise
    (where a depthwise Conv works in place), and sequential execution (under pipelined: what
    pipelining costs). None where the option is off or changes nothing."""
    opts = mp.options
    order = [s.node for s in mp.schedule]
    graph = None
    if opts.schedule == "memory":
        graph = _bound(liveness.model_problem(path, dataclasses.replace(opts, schedule="graph"), lowered=lowered))
    aliased = {t.name for t in mp.tensors if t.alias_of is not None}
    depthwise = None
    if getattr(mp, "kind", "onnx") == "onnx" and any(
            (spec := optable.spec(s.op_type)) is not None and spec.depthwise and s.outputs[0] in aliased
            for s in mp.schedule):
        plain = dataclasses.replace(opts, inplace_depthwise=False)
        depthwise = _bound(liveness.model_problem(path, plain, order=order, lowered=lowered))
    sequential = None
    if opts.execution == "pipelined":  # what double buffering costs
        sequential = _bound(liveness.model_problem(path, dataclasses.replace(opts, execution="sequential"),
                                                   order=order, lowered=lowered))
    return PlanBaselines(graph_order=graph, no_inplace_depthwise=depthwise, sequential=sequential)


def _bound(mp: ModelProblem) -> int:
    return lower_bound(mp.problem().buffers)
