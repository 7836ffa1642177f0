"""The plan checker: a plan against the model it claims to plan, re-derived from the model file.

Apart from the plan-file format (planfile), which knows no pipeline: checking a plan lowers
the model and re-runs liveness, so this sits above the model stage. ``check`` trusts nothing
in the file; ``verified`` is what the build makes tables from.
"""

from __future__ import annotations

import bisect
import dataclasses
import os
from collections.abc import Sequence

import numpy as np

from arena_tool.model import liveness, patches, tflite_model, tflm_scratch
from arena_tool.core.errors import ArenaError, CheckFailed
from arena_tool.model.lowering import Lowered
from arena_tool.plan.planfile import PlanBuffer, PlanFile, group_buffers, load, model_kind, quant_doc
from arena_tool.core.problem import ModelProblem, Problem, Status, Tensor, lower_bound
from arena_tool.plan.planners import greedy_size
from arena_tool.plan.planners.params import Params


def lowered_model(model_path: str, plan: PlanFile) -> Lowered:
    """The lowered model a plan was made from (same input shapes), for codegen."""
    if plan.kind != "onnx":
        raise ArenaError(f"arena's C tables are made from ONNX models; this is a {plan.kind} plan",
                         file=model_path, field="model_kind",
                         hint="a .tflite model runs in TFLite Micro: write its plan into the model with "
                              "'arena-tool plan MODEL.tflite -o PLANNED.tflite' (and use runtime: tflm)")
    try:
        lowered = patches.tiled(liveness.lower(model_path, plan.options), plan.options.patches)
    except ArenaError as e:
        raise e.located(file=model_path)
    if plan.options.patches == "auto" and plan.patches is not None and plan.patches.detail:  # auto's stages
        try:
            stages = [patches.StageSpec(str(d["split_after"]), int(d["rows"]), int(d["cols"]))
                      for d in plan.patches.detail]
        except (KeyError, TypeError, ValueError) as e:
            raise ArenaError(f"patches.detail: {e}", file=model_path, field="patches",
                             hint=REPLAN_HINT) from e
        lowered = patches.apply(lowered, stages)
    return lowered


def derived_problem(model_path: str, plan: PlanFile) -> ModelProblem:
    """The model's problem under the plan's options and the stages it runs tile by tile."""
    lowered = None if plan.kind != "onnx" else lowered_model(model_path, plan)
    return liveness.model_problem(model_path, plan.options, lowered=lowered)


def patch_problems(plan: PlanFile, lowered: Lowered) -> list[str]:
    """The plan's account of its patched stages against the stages re-derived from the model."""
    if plan.patches is None:
        return ["options.patches is set, but the plan has no patches section"] if plan.options.patches != "off" else []
    if plan.patches.stages != patches.text([s.spec for s in lowered.stages]):
        return [f"patches: stages {plan.patches.stages!r}, its detail says "
                f"{patches.text([s.spec for s in lowered.stages])!r}"]
    want = [patches.describe(s) for s in lowered.stages]
    got = [dict(d) for d in plan.patches.detail]
    if got != want:
        return [f"patches: the stages' tiles and boxes are not the model's (re-derived: "
                f"{patches.text([s.spec for s in lowered.stages])})"]
    if plan.patches.macs != patches.total_macs(lowered):
        return [f"patches: macs {plan.patches.macs}, the model's is {patches.total_macs(lowered)}"]
    return []


def check(plan: PlanFile, mp: ModelProblem, plan_path: str, pairs: bool = True) -> list[str]:
    """Every way the plan disagrees with the model it claims to plan; [] when it holds.

    mp is the model re-derived with the plan's own options. Everything codegen and
    the gate take from the plan is compared with it: the schedule (order, names,
    op types, inputs, outputs, workspaces), each buffer's kind, shape, elements,
    dtype, quant, size, live range and alias (an alias at its root's offset), the
    offsets (aligned, inside arena_size), lower_bound and the model-wide totals.
    Pairs are checked with each tensor's own live range (``overlaps``); two tensors of one alias
    group share bytes by design and are not compared. pairs=False leaves the pairs out (verify
    replays the plan to name the tensor an overlap clobbers).
    """
    problems: list[str] = []
    kind = plan.kind
    if kind != model_kind(mp):
        return [f"the plan is for a{'n' if kind == 'onnx' else ''} {kind} model, the model is {model_kind(mp)}"]
    mp, problem = _in_plan_order(plan, mp)
    if problem:
        return [problem]
    if plan.model_sha256 != mp.model_sha256:
        problems.append(f"model bytes changed since planning (sha256 {plan.model_sha256[:12]}… vs {mp.model_sha256[:12]}…)")
    problems += _totals(plan, mp)
    align = plan.alignment
    arena = plan.arena_size
    bufs = plan.buffers
    planned = plan.by_name
    problems += _duplicates(bufs)
    for name in sorted(set(planned) - {t.name for t in mp.tensors}):
        problems.append(f"buffer {name} is not an arena tensor of the model")
    for t in mp.tensors:
        b = planned.get(t.name)
        if b is None:
            problems.append(f"tensor {t.name} has no buffer in the plan")
            continue
        if b.size < t.size:
            problems.append(f"{t.name}: size {b.size} B < {t.size} B the tensor needs")
        if b.first_op > t.first_op or b.last_op < t.last_op:
            problems.append(f"{t.name}: live range [{b.first_op}, {b.last_op}] is shorter than "
                            f"[{t.first_op}, {t.last_op}] the model implies")
        if b.alias_of is not None and b.alias_of != t.alias_of:  # dropping an alias is always safe
            problems.append(f"{t.name}: alias_of {b.alias_of!r}, the model allows {t.alias_of!r}")
        elif b.alias_of is not None and (root := planned.get(b.alias_of)) is not None \
                and b.offset - root.offset != t.alias_offset:
            problems.append(f"{t.name}: offset {b.offset}, {b.offset - root.offset} B into its alias_of "
                            f"{b.alias_of}; the model puts it {t.alias_offset} B in")
        if b.dtype != t.dtype:
            problems.append(f"{t.name}: dtype {b.dtype}, the model runs it as {t.dtype}")
        problems += _described(t, b)
        need = max(align, t.alignment or 1)
        if mp.caller_owned(t):  # in a buffer of its own the application passes: offset 0, shares nothing
            if b.offset != 0:
                problems.append(f"{t.name}: offset {b.offset} in its caller-owned buffer, not 0")
            if b.alias_of is not None:
                problems.append(f"{t.name}: caller-owned, but alias_of {b.alias_of!r} puts it in the arena")
            continue
        if b.offset % need:
            problems.append(f"{t.name}: offset {b.offset} is not a multiple of the alignment {need}")
        if b.offset + b.size > arena:
            problems.append(f"{t.name}: ends at {b.offset + b.size} B, past arena_size {arena} B")
    problems += _alias_offsets(bufs)
    caller = {t.name for t in mp.tensors if mp.caller_owned(t)}
    problems += [f"{b.name}: alias_of {b.alias_of!r}, a caller-owned buffer outside the arena"
                 for b in bufs if b.alias_of in caller]
    group = [b.root for b in bufs]
    first, last, off, size = _extents(bufs)
    names = sorted({b.region or "" for b in bufs})  # a split plan: pairs meet only in one region
    reg = np.array([names.index(b.region or "") if b.name not in caller else -1 - i  # each its own buffer
                    for i, b in enumerate(bufs)], dtype=np.int64)
    clashes = overlaps(first, last, off, size, reg, group) if pairs else []
    for i, j in clashes:
        a, c = bufs[i], bufs[j]
        problems.append(
            f"{a.name} [{a.offset}, {a.offset + a.size}) and {c.name} "
            f"[{c.offset}, {c.offset + c.size}) overlap while both are live "
            f"(ops {max(a.first_op, c.first_op)}..{min(a.last_op, c.last_op)})")
    planned_as = mp if any(b.alias_of for b in bufs) else mp.without_aliases()  # see planning.plan_model
    bound = lower_bound(planned_as.problem().buffers)
    if arena < bound:
        problems.append(f"arena_size {arena} B is below the lower bound {bound} B")
    if plan.lower_bound != bound:
        problems.append(f"lower_bound {plan.lower_bound} B, the model's is {bound} B")
    problems += _claims(plan, planned_as, optimal=pairs)
    problems += _tflm_scratch(plan, mp)
    if plan.is_split:
        problems += check_split(plan)
    return problems


OVERLAPS_SHOWN = 10  # clashing pairs reported: a plan of 100,000 buffers at one offset has 5e9 of them


def overlaps(first: np.ndarray, last: np.ndarray, off: np.ndarray, size: np.ndarray, reg: np.ndarray,
             group: Sequence[object], limit: int = OVERLAPS_SHOWN) -> list[tuple[int, int]]:
    """Up to ``limit`` pairs (i < j) live together in one region whose bytes overlap, outside one alias group.

    A sweep over the ops, O(n log n) whatever the plan: the buffers live at an op, per region, are
    kept sorted by offset, each alias group's live members at one offset as one entry whose end is
    its largest member's. Entries admitted are disjoint, so a buffer starting to live is compared
    with the entries beside its offset only; one that clashes is reported and not admitted. (Every
    pair of a buffer with its predecessors in the pair matrix grew to 17.6 GiB on 100,022 buffers at
    one offset.) A range with last < first is live at no op (check refuses it as shorter than the
    model's); an alias member off its root's offset is compared like a buffer of its own group
    (check refuses that offset too).
    """
    n = len(first)
    starts = sorted((int(first[i]), i) for i in range(n) if first[i] <= last[i] and size[i] > 0)
    ends = sorted((int(last[i]), i) for _, i in starts)
    live: dict[int, tuple[list[int], list[tuple[object, int, dict[int, int]]]]] = {}  # region -> offsets, entries
    admitted: dict[int, tuple[int, int]] = {}  # buffer -> (region, offset) of its entry
    found: list[tuple[int, int]] = []
    gone = 0
    for t, i in starts:
        while gone < len(ends) and ends[gone][0] < t:
            _leave(live, admitted, ends[gone][1])
            gone += 1
        clash = _admit(live, admitted, i, int(reg[i]), int(off[i]), int(off[i] + size[i]), (group[i], int(off[i])))
        if clash is not None:
            found.append((min(i, clash), max(i, clash)))
            if len(found) >= limit:
                break
    return sorted(found)


def _admit(live: dict[int, tuple[list[int], list[tuple[object, int, dict[int, int]]]]],
           admitted: dict[int, tuple[int, int]], i: int, region: int, lo: int, hi: int, key: object) -> int | None:
    """Buffer ``i`` ([lo, hi) in ``region``, alias group and offset ``key``) into the live entries; or the
    live buffer it clashes with (then it stays out)."""
    offsets, entries = live.setdefault(region, ([], []))
    k = bisect.bisect_left(offsets, lo)
    if k < len(offsets) and offsets[k] == lo:
        same_key, _, members = entries[k]
        if same_key != key:
            return max(members, key=members.__getitem__)
        nxt = k + 1
    else:
        if k > 0 and entries[k - 1][1] > lo:  # the entry below reaches into [lo, hi)
            members = entries[k - 1][2]
            return max(members, key=members.__getitem__)
        nxt = k
    if nxt < len(offsets) and offsets[nxt] < hi:
        return min(entries[nxt][2])
    if k < len(offsets) and offsets[k] == lo:
        same_key, end, members = entries[k]
        members[i] = hi
        entries[k] = (same_key, max(end, hi), members)
    else:
        offsets.insert(k, lo)
        entries.insert(k, (key, hi, {i: hi}))
    admitted[i] = (region, lo)
    return None


def _leave(live: dict[int, tuple[list[int], list[tuple[object, int, dict[int, int]]]]],
           admitted: dict[int, tuple[int, int]], i: int) -> None:
    """Buffer ``i`` ends its live range: out of its entry (the entry's end shrinks to its other members')."""
    where = admitted.pop(i, None)
    if where is None:
        return
    offsets, entries = live[where[0]]
    k = bisect.bisect_left(offsets, where[1])
    key, _, members = entries[k]
    del members[i]
    if members:
        entries[k] = (key, max(members.values()), members)
    else:
        del offsets[k]
        del entries[k]


def model_at_hand(plan: PlanFile, plan_path: str) -> str | None:
    """The model file the plan names (``model``: relative to the folder the plan was made in, which
    is the current one or the plan's), when it is there."""
    for base in (os.curdir, os.path.dirname(plan_path)):
        path = os.path.join(base, plan.model)
        if "\0" not in path and os.path.isfile(path):
            return path
    return None


def checked_alone(plan: PlanFile, plan_path: str) -> tuple[list[str], str | None]:
    """A plan read without a model named on the command line (explain PLAN.json): every problem
    ``check`` finds against the model the plan names when it is at hand, else ``consistent``'s;
    and that model (None: the plan was checked against itself only)."""
    model = model_at_hand(plan, plan_path)
    if model is None:
        return consistent(plan), None
    problems = check(plan, derived_problem(model, plan), plan_path)
    if plan.kind == "onnx":
        problems += patch_problems(plan, lowered_model(model, plan))
    return problems, model


def consistent(plan: PlanFile) -> list[str]:
    """What a plan file says of itself that does not hold, checked without its model (explain PLAN.json):
    names listed twice, aliases off their root, offsets off the alignment, buffers live together in
    the same bytes, arena_size and lower_bound not those of its buffers, an optimal claim greedy_size
    disproves. ``check`` (with the model) is the whole check; this is what a report may rely on."""
    bufs = plan.buffers
    problems = _duplicates(bufs) + _alias_offsets(bufs)
    problems += [f"{b.name}: offset {b.offset} is not a multiple of the alignment {plan.alignment}"
                 for b in plan.in_arena if b.offset % plan.alignment]
    arena = plan.in_arena
    first, last, off, size = _extents(arena)
    regions = sorted({b.region or "" for b in arena})
    reg = np.array([regions.index(b.region or "") for b in arena], dtype=np.int64)
    for i, j in overlaps(first, last, off, size, reg, [b.root for b in arena]):
        a, c = arena[i], arena[j]
        problems.append(f"{a.name} [{a.offset}, {a.offset + a.size}) and {c.name} [{c.offset}, {c.offset + c.size}) "
                        f"overlap while both are live")
    grouped = group_buffers(arena, plan.alignment)
    bound = lower_bound(grouped)
    if plan.lower_bound != bound:
        problems.append(f"lower_bound {plan.lower_bound} B, but its buffers peak at {bound} B")
    if plan.arena_size < bound:
        problems.append(f"arena_size {plan.arena_size} B is below the lower bound {bound} B")
    if plan.is_split:
        return problems + check_split(plan)
    top = max((b.offset + b.size for b in arena), default=0)
    if plan.arena_size != top:
        problems.append(f"arena_size {plan.arena_size} B, but its buffers end at {top} B")
    elif plan.optimal is True and not problems:
        greedy = greedy_size.plan(Problem(tuple(grouped)), Params(time_limit=2.0))
        if greedy.status != Status.TIME_LIMIT and greedy.arena_size < plan.arena_size:
            problems.append(f"optimal: true, but greedy_size fits the same buffers in {greedy.arena_size} B "
                            f"< arena_size {plan.arena_size} B")
    return problems


def _claims(plan: PlanFile, mp: ModelProblem, optimal: bool) -> list[str]:
    """What the plan says of itself: arena_size is where its buffers end (the gate reserves it), and
    an optimal claim is not above what greedy_size reaches on the same buffers (a cheap disproof)."""
    if plan.is_split:
        return []  # check_split: each region's arena_size and the sum
    top = max((b.offset + b.size for b in plan.in_arena), default=0)  # caller-owned I/O is not in it
    if plan.arena_size != top:
        return [f"arena_size {plan.arena_size} B, but its buffers end at {top} B"]
    if plan.optimal is not True or not optimal:
        return []
    greedy = greedy_size.plan(mp.problem(), Params(time_limit=2.0))
    if greedy.status != Status.TIME_LIMIT and greedy.arena_size < plan.arena_size:
        return [f"optimal: true, but greedy_size fits the same buffers in {greedy.arena_size} B < arena_size "
                f"{plan.arena_size} B"]
    return []


def _tflm_scratch(plan: PlanFile, mp: ModelProblem) -> list[str]:
    """A .tflite plan's kernel scratch buffers sit where TFLM puts them around the planned tensors
    (it takes offline offsets for tensors only), so the head TFLM uses is arena_size; and a plan
    that omits scratch arena cannot size does not claim to be optimal."""
    if plan.kind != tflite_model.KIND or plan.is_split:
        return []
    assert isinstance(mp, tflite_model.TfliteProblem)
    out = []
    if mp.unknown_scratch and plan.optimal:
        out.append(f"optimal: true, but the plan omits the scratch buffers of {', '.join(mp.unknown_scratch)}, "
                   f"which arena cannot size")
    kind = {t.name: t.kind for t in mp.tensors}
    bufs = [b for b in plan.buffers if b.name in kind]
    if not any(kind[b.name] == "scratch" for b in bufs):
        return out
    where = tflm_scratch.tflm_placement([b.size for b in bufs], [b.first_op for b in bufs],
                                        [b.last_op for b in bufs],
                                        [None if kind[b.name] == "scratch" else b.offset for b in bufs])
    for b, o in zip(bufs, where):
        if kind[b.name] == "scratch" and b.offset != o:
            out.append(f"{b.name}: offset {b.offset}, but TFLM places this kernel scratch buffer at {o} around "
                       f"the planned tensors")
    return out


def _totals(plan: PlanFile, mp: ModelProblem) -> list[str]:
    """The plan's model-wide numbers: the gate checks the flash with weights_bytes."""
    out = []
    for key in ("weights_bytes", "integer_ops", "qdq_fused"):  # the last two optional in the schema
        value = getattr(plan, key)
        if value is not None and value != getattr(mp, key):
            out.append(f"{key} {value}, the model's is {getattr(mp, key)}")
    return out


def _duplicates(bufs: Sequence[PlanBuffer]) -> list[str]:
    """Buffer names listed twice: codegen would give one tensor two rows."""
    counts: dict[str, int] = {}
    for b in bufs:
        counts[b.name] = counts.get(b.name, 0) + 1
    return [f"buffer {name} is listed {n} times" for name, n in sorted(counts.items()) if n > 1]


def _described(t: Tensor, b: PlanBuffer) -> list[str]:
    """What codegen copies into the tables as it stands: kind, shape, elements and quant (as the
    file spells them, for the message)."""
    pairs = {"kind": (b.kind, t.kind), "shape": (list(b.shape), list(t.shape)),
             "elements": (b.elements, t.elements), "quant": (quant_doc(b.quant), quant_doc(t.quant))}
    return [f"{t.name}: {key} {got!r}, the model's is {want!r}" for key, (got, want) in pairs.items() if got != want]


def _alias_offsets(bufs: Sequence[PlanBuffer]) -> list[str]:
    """An alias shares its root's bytes: outside them the pair check (which skips a group) would
    not see the two overlap. A member is at its root's offset, or (a concat's input written in
    place) inside its root's bytes."""
    roots = {b.name: b for b in bufs if b.alias_of is None}
    out = []
    for b in bufs:
        root = roots.get(b.alias_of or "")
        if b.alias_of is not None and (root is None or not (root.offset <= b.offset and (
                b.offset == root.offset or b.offset + b.size <= root.offset + root.size))):
            where = "is not a root buffer of the plan" if root is None else \
                f"is at offset {root.offset} ({root.size} B)"
            out.append(f"{b.name}: offset {b.offset}, but its alias_of {b.alias_of} {where}")
    return out


def _extents(bufs: Sequence[PlanBuffer]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """first_op, last_op, offset and size of each buffer as the pair check (overlaps) compares
    them: a member past its root's offset (a concat view) from its root's offset to its own end,
    so its group stays one entry of the sweep (its group is one rectangle in the planner too)."""
    roots = {b.name: b.offset for b in bufs if b.alias_of is None}
    first, last, off, size = (np.array([getattr(b, k) for b in bufs], dtype=np.int64)
                              for k in ("first_op", "last_op", "offset", "size"))
    for i, b in enumerate(bufs):
        at = roots.get(b.alias_of or "")
        if at is not None and b.offset > at:
            off[i], size[i] = at, b.offset - at + b.size
    return first, last, off, size


def _in_plan_order(plan: PlanFile, mp: ModelProblem) -> tuple[ModelProblem, str | None]:
    """A plan may run the ops in another topological order (schedule[k].node: the node or
    operator index): the live ranges are those of that order, re-derived from the model."""
    order = plan.order
    if order != [s.node for s in mp.schedule]:
        try:
            mp = liveness.model_problem(mp.model, mp.options, order=order)
        except ArenaError as e:
            return mp, f"schedule: {e.msg}"
    if len(plan.schedule) != len(mp.schedule):
        return mp, f"schedule: {len(plan.schedule)} steps, the model runs {len(mp.schedule)} ops"
    for k, (s, t) in enumerate(zip(plan.schedule, mp.schedule)):
        got_step = dataclasses.replace(s, domain=s.domain or "", fused=s.fused or ())  # both optional
        for key in ("name", "op_type", "domain", "fused", "inputs", "outputs", "workspace"):
            got, want = getattr(got_step, key), getattr(t, key)
            if got != want:
                show = list(got) if isinstance(got, tuple) else got  # as the file spells it
                want = list(want) if isinstance(want, tuple) else want
                return mp, f"schedule[{k}]: {key} {show!r}, the model's op {t.node} has {want!r}"
    return mp, None


REPLAN_HINT = "delete the plan file and build again (arena re-plans the model), or re-plan it with 'arena-tool plan'"


def verified(plan_path: str, model_path: str) -> tuple[PlanFile, Lowered]:
    """The plan at ``plan_path`` and the lowered model it plans, once ``check`` finds nothing wrong.

    What the build makes tables from: a plan edited by hand, damaged, or left by an
    interrupted build is one CheckFailed (exit 1) naming the plan file, never C tables.
    """
    plan = load(plan_path)
    lowered = lowered_model(model_path, plan)
    problems = check(plan, _derived(lowered, plan), plan_path) + patch_problems(plan, lowered)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise CheckFailed(f"the plan does not match {model_path}: {problems[0]}{more}", file=plan_path,
                          hint=REPLAN_HINT)
    return plan, lowered


def _derived(lowered: Lowered, plan: PlanFile) -> ModelProblem:
    """The model's problem under the plan's options, in the plan's op order where that is one
    (else in the model's: ``check`` then says what is wrong with the order)."""
    try:
        return liveness.build(lowered, plan.options, order=plan.order)
    except ArenaError:
        return liveness.build(lowered, plan.options)


def require_valid(plan: PlanFile, mp: ModelProblem, plan_path: str) -> None:
    problems = check(plan, mp, plan_path)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise CheckFailed(problems[0] + more, file=plan_path)


def check_split(plan: PlanFile) -> list[str]:
    """What a split plan says that does not add up (the pairs are checked per region by
    check): every buffer in a listed region and inside its arena, each
    region's arena_size the top of its buffers, the total their sum."""
    problems: list[str] = []
    regions = {r.name: r for r in plan.regions or ()}
    tops = {name: 0 for name in regions}
    region_of = {b.name: b.region for b in plan.buffers}
    for b in plan.in_arena:  # caller-owned inputs and outputs are the application's, in no region
        name = b.region
        if b.alias_of is not None and region_of.get(b.alias_of) != name:
            problems.append(f"{b.name}: region {name!r}, but its alias root {b.alias_of} is in "
                            f"{region_of.get(b.alias_of)!r}")
        if name not in regions:
            problems.append(f"{b.name}: region {name!r} is not one of the plan's regions "
                            f"({', '.join(regions)})")
            continue
        end = b.offset + b.size
        tops[name] = max(tops[name], end)
        if end > regions[name].arena_size:
            problems.append(f"{b.name}: ends at {end} B, past region {name}'s arena_size "
                            f"{regions[name].arena_size} B")
    for name, r in regions.items():
        if r.arena_size != tops[name]:
            problems.append(f"region {name}: arena_size {r.arena_size} B, its buffers end at {tops[name]} B")
    total = sum(r.arena_size for r in regions.values())
    if plan.arena_size != total:
        problems.append(f"arena_size {plan.arena_size} B is not the sum of the regions' {total} B")
    return problems
