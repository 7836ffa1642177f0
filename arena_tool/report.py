"""The budget gate and the per-board report (schemas/report.schema.json).

``gate(target, plans, fastest, runtime_problems)`` combines one board's model
plans into the board's arena: ``sequential`` models share one arena sized to
the largest (every base is 0); ``concurrent`` models each get a slice, placed
one after the other at the largest model alignment. It then resolves the
region (``auto`` = the fastest region that fits), the budget (bytes, or a
percentage of that region) and the room left beside the stack+heap reserve,
checks the weights against the board's flash, adds what the runtime cannot
run (``runtime_problems``, from ``coverage``), and returns a Report whatever
the outcome. Its ``status``:

- ``ok``, ``warn`` (above ``warn_above``): the board passed the gate;
- ``over``: the arena does not fit its RAM budget, or the weights (later: the
  linked code and data) do not fit the flash; each Problem names the region,
  what it needs, its limit and by how much it is over;
- ``unsupported``: an op of a model that arena's runtime cannot execute (or a
  plan that is only a what-if: see ``runtime_problems``);
- ``error``: the link failed for another reason, or the ELF check found the
  firmware disagreeing with the plan.

``failure(report)`` is the CheckFailed (exit status 1) to raise when the
status is not ok/warn; its message is one line per problem, such as::

    arena: nucleo_f746: models kws+vww need 71,680 B in DTCM, budget 65,536 B
    (over by 6,144 B, lower bound 70,144 B); try region SRAM1, or planner optimal

Suggestions are only those that could help: another region only when the
budget is a percentage or the reserve is what binds (a byte budget does not grow
with the region); ``planner optimal`` only for a model above its lower bound
whose plan is not proven optimal; a longer ``time_limit`` for an ``optimal``
search that stopped on it; for a float model, how to quantize it (an
onnxruntime ``quantize_static`` command line): ``activation_dtype`` is a what-if
that re-sizes the plan, not the model, so it is never the advice.

A split arena (``target.split``) and weights copied to RAM (``weights: <region>``) add
``regions`` (``region_gate``): per RAM region its arena and weights against its limit
(``BoardTarget.region_limit``: the budget, no more than the room beside the reserve); then the top-level
arena is the regions' sum and each region over its limit is one problem.

The report is written at two stages (``stage``): ``planned`` by the gate
(RAM = arena + stack/heap reserve; flash = the weights), then ``linked`` from
the ELF (``with_elf``: RAM and flash as the sections take them). ``usage_lines``
prints both in PlatformIO's style::

    RAM:   [===       ]  31.2% (used 20,480 bytes from 65,536 bytes)
    Flash: [=         ]   8.1% (used 85,123 bytes from 1,048,576 bytes)

With ``runtime: tflm`` (``.tflite`` models run by TFLite Micro, which the firmware
brings) a model's ``arena_size`` is its ``tensor_arena``: ``head`` (arena's plan,
TFLM's non-persistent section) plus ``tail`` (TFLM's persistent section, measured by
``tflm_measure`` in the wheel's host interpreter), rounded up to 16; the budget counts
both, and ``TFLM_NOTE`` says that kernel-specific persistent data (CMSIS-NN's, say)
can differ on the target.

``Report`` is the report as a value (ModelUse, Problem, Usage and region_gate.RegionUse
below it); ``Report.from_json`` (schema-checked) and ``to_json`` are the one conversion
between it and the file, key order and optional keys included, so ``read`` then ``write``
gives the same bytes. ``with_problem``, ``with_elf`` and ``link_failure`` return a new Report.

The report document holds no times and no absolute paths, so two builds of the
same inputs write the same bytes. The headroom, percentage and bar are against
the effective limit: min(budget, region length - reserve when the stack and
heap share the region); over budget the headroom is negative.
"""

from __future__ import annotations

import dataclasses
import json
from typing import TYPE_CHECKING, AbstractSet, Any, Callable, Mapping, Sequence

from arena_tool import __version__, flags, region_gate
from arena_tool.errors import CheckFailed
from arena_tool.files import project_path
from arena_tool.problem import align_up, fmt_bytes

if TYPE_CHECKING:
    from arena_tool.lowering import Lowered
    from arena_tool.manifest import BoardTarget
    from arena_tool.planfile import PlanFile

FORMAT_VERSION = 2
STATUSES = ("ok", "warn", "over", "unsupported", "error")
KINDS = ("ram", "flash", "unsupported", "names", "link", "elf")
_FLOAT = ("float32", "float16", "bfloat16", "float64", "double", "float")
TFLM_ALIGNMENT = 16  # tflite::MicroArenaBufferAlignment()
TFLM_NOTE = ("tensor_arena = arena's plan (TFLM's head) + TFLM's persistent tail as measured on the host with "
             "TFLM's reference kernels, rounded up to 16 B; kernel-specific persistent data (e.g. CMSIS-NN's) "
             "can differ on the target")


@dataclasses.dataclass(frozen=True)
class ModelUse:
    """One model's share of the board arena. Sizes and base are bytes."""

    name: str
    planner: str
    arena_size: int
    lower_bound: int
    optimal: bool | None
    status: str
    base: int
    plan: str
    model: str
    model_sha256: str
    weights_bytes: int
    head: int | None = None  # runtime tflm: arena's plan, TFLM's non-persistent head (bytes)
    tail: int | None = None  # runtime tflm: TFLM's persistent tail measured on the host (bytes)
    regions: tuple[tuple[str, int], ...] = ()  # a split plan: (region, arena bytes there), fastest first
    weights_region: str = "flash"  # where the weights run from (weights: <region> copies them there)
    weights_ram: int = 0  # bytes they take in that region (regions.weights_ram_bytes), 0 in flash

    @property
    def proven(self) -> bool:
        """Nothing smaller exists: the planner proved it, or it sits at the lower bound."""
        return bool(self.optimal) or self.status == "proven" or self.arena_size <= self.lower_bound

    def to_json(self) -> dict[str, Any]:
        """The report's ``models`` entry: head/tail only for runtime tflm, regions only for a split
        plan, the weights' region only when they are copied to RAM."""
        return {"name": self.name, "planner": self.planner, "arena_size": self.arena_size,
                "lower_bound": self.lower_bound, "optimal": self.optimal, "status": self.status, "base": self.base,
                "plan": self.plan, "model": self.model, "model_sha256": self.model_sha256,
                "weights_bytes": self.weights_bytes,
                **({"head": self.head, "tail": self.tail} if self.head is not None else {}),
                **({"regions": dict(self.regions)} if self.regions else {}),
                **({"weights_region": self.weights_region, "weights_ram": self.weights_ram}
                   if self.weights_region != "flash" else {})}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> ModelUse:
        """From a ``models`` entry the report schema has checked."""
        return cls(name=str(doc["name"]), planner=str(doc["planner"]), arena_size=int(doc["arena_size"]),
                   lower_bound=int(doc["lower_bound"]), optimal=doc["optimal"], status=str(doc["status"]),
                   base=int(doc["base"]), plan=str(doc["plan"]), model=str(doc["model"]),
                   model_sha256=str(doc["model_sha256"]), weights_bytes=int(doc["weights_bytes"]),
                   head=doc.get("head"), tail=doc.get("tail"),
                   regions=tuple((str(k), int(v)) for k, v in (doc.get("regions") or {}).items()),
                   weights_region=str(doc.get("weights_region", "flash")), weights_ram=int(doc.get("weights_ram", 0)))


@dataclasses.dataclass(frozen=True)
class Problem:
    """Why a board does not build. ``message`` is the one line printed (``arena: <board>: ...``).

    kind: ram | flash (over: region, need, limit in bytes) | unsupported (model, op_index,
    node, op_type, why) | names (two models' generated C would define one name) | link | elf. model: the model it is about, when one is.
    """

    kind: str
    message: str
    region: str | None = None
    need: int | None = None
    limit: int | None = None
    model: str | None = None
    op_index: int | None = None
    node: str | None = None
    op_type: str | None = None
    why: str | None = None

    @property
    def over_by(self) -> int | None:
        return None if self.need is None or self.limit is None else self.need - self.limit

    def to_json(self) -> dict[str, Any]:
        """The report's ``problems`` entry (every key, ``over_by`` derived)."""
        return {"kind": self.kind, "message": self.message, "region": self.region, "need": self.need,
                "limit": self.limit, "over_by": self.over_by, "model": self.model, "op_index": self.op_index,
                "node": self.node, "op_type": self.op_type, "why": self.why}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Problem:
        return cls(kind=str(doc["kind"]), message=str(doc["message"]), region=doc["region"], need=doc["need"],
                   limit=doc["limit"], model=doc["model"], op_index=doc["op_index"], node=doc["node"],
                   op_type=doc["op_type"], why=doc["why"])


@dataclasses.dataclass(frozen=True)
class Usage:
    """Bytes used of a memory (all RAM regions together, or the flash); source: plan | elf."""

    used: int
    total: int
    source: str

    @property
    def percent(self) -> float:
        """100 * used / total as the report holds it (rounded to 2 decimals)."""
        return round(100.0 * self.used / self.total, 2) if self.total else 100.0

    def to_json(self) -> dict[str, Any]:
        return {"used": self.used, "total": self.total, "percent": self.percent, "source": self.source}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Usage:
        return cls(int(doc["used"]), int(doc["total"]), str(doc["source"]))


@dataclasses.dataclass(frozen=True)
class Report:
    """One board's report (schemas/report.schema.json) after the gate, the link or the ELF
    check. All sizes in bytes. ``region_*`` and ``reserve_*`` are the document's ``region`` and
    ``reserve`` objects; ``headroom``, ``percent``, ``over_by``, each percent of ram/flash,
    ``flash.weights`` and ``tflm_note`` are derived, not held.

    limit: min(budget, room beside the reserve); headroom = limit - arena_size;
    percent: 100 * arena_size / limit; status: see the module docstring; stage: planned
    (the gate's numbers) or linked (``with_elf``); ram/flash: what the board uses (before
    linking: arena + reserve, and the weights; linked: the ELF's sections).
    """

    board: str
    region: str
    region_origin: int
    region_length: int
    region_auto: bool
    sharing: str
    arena_size: int
    lower_bound: int
    alignment: int
    budget: int
    budget_spec: str
    limit: int
    reserve_stack: int
    reserve_heap: int
    warn_above: float | None
    models: tuple[ModelUse, ...]
    status: str
    warning: str | None
    runtime: str = "arena"
    ram: Usage = Usage(0, 0, "plan")
    flash: Usage = Usage(0, 0, "plan")
    problems: tuple[Problem, ...] = ()
    regions: tuple[region_gate.RegionUse, ...] = ()  # a split arena's regions, regions with copied weights
    stage: str = "planned"
    arena_tool_version: str = __version__
    optimize: str | None = None  # the level the manifest chose (arena_tool.flags), None: the default

    @property
    def headroom(self) -> int:
        return self.limit - self.arena_size

    @property
    def percent(self) -> float:
        """100 * arena_size / limit as the report holds it (rounded to 2 decimals)."""
        return round(100.0 * self.arena_size / self.limit, 2) if self.limit else 100.0

    @property
    def weights(self) -> int:
        """The models' weights (``flash.weights``)."""
        return sum(m.weights_bytes for m in self.models)

    @property
    def bases(self) -> list[tuple[str, int]]:
        return [(m.name, m.base) for m in self.models]

    @property
    def passed(self) -> bool:
        return self.status in ("ok", "warn")

    def to_json(self) -> dict[str, Any]:
        """The report document, key order included; optional keys (``optimize``, ``tflm_note``,
        ``regions``) present exactly when they apply."""
        return {
            "format_version": FORMAT_VERSION,
            "arena_tool_version": self.arena_tool_version,
            "board": self.board,
            "status": self.status,
            "stage": self.stage,
            "runtime": self.runtime,
            **({"optimize": {"level": self.optimize, "flag": flags.LEVELS[self.optimize]}} if self.optimize else {}),
            "problems": [p.to_json() for p in self.problems],
            "region": {"name": self.region, "origin": self.region_origin, "length": self.region_length,
                       "auto": self.region_auto},
            "sharing": self.sharing,
            "arena_size": self.arena_size,
            "lower_bound": self.lower_bound,
            "alignment": self.alignment,
            "budget": self.budget,
            "budget_spec": self.budget_spec,
            "limit": self.limit,
            "headroom": self.headroom,
            "percent": self.percent,
            "reserve": {"stack": self.reserve_stack, "heap": self.reserve_heap},
            "warn_above": self.warn_above,
            "warning": self.warning,
            "ram": self.ram.to_json(),
            "flash": dict(self.flash.to_json(), weights=self.weights),
            "models": [m.to_json() for m in self.models],
            **({"tflm_note": TFLM_NOTE} if self.runtime == "tflm" else {}),
            **({"regions": [u.to_json() for u in self.regions]} if self.regions else {}),
        }

    @classmethod
    def from_json(cls, doc: Mapping[str, Any], path: str = "<report>") -> Report:
        """The report in ``doc``, once it is valid against the schema (else ArenaError naming ``path``)."""
        from arena_tool.schema import check_json

        check_json(doc, "report", path)
        region, reserve = doc["region"], doc["reserve"]
        return cls(
            board=str(doc["board"]), region=str(region["name"]), region_origin=int(region["origin"]),
            region_length=int(region["length"]), region_auto=bool(region["auto"]), sharing=str(doc["sharing"]),
            arena_size=int(doc["arena_size"]), lower_bound=int(doc["lower_bound"]), alignment=int(doc["alignment"]),
            budget=int(doc["budget"]), budget_spec=str(doc["budget_spec"]), limit=int(doc["limit"]),
            reserve_stack=int(reserve["stack"]), reserve_heap=int(reserve["heap"]), warn_above=doc["warn_above"],
            models=tuple(ModelUse.from_json(m) for m in doc["models"]), status=str(doc["status"]),
            warning=doc["warning"], runtime=str(doc["runtime"]), ram=Usage.from_json(doc["ram"]),
            flash=Usage.from_json(doc["flash"]), problems=tuple(Problem.from_json(p) for p in doc["problems"]),
            regions=tuple(region_gate.RegionUse.from_json(r) for r in doc.get("regions") or ()),
            stage=str(doc["stage"]), arena_tool_version=str(doc["arena_tool_version"]),
            optimize=doc["optimize"]["level"] if "optimize" in doc else None)


def model_use(name: str, plan_path: str, plan: PlanFile) -> ModelUse:
    from arena_tool import regions

    weights_region = plan.options.weights or "flash"
    return ModelUse(
        regions=tuple((r.name, r.arena_size) for r in plan.regions or ()),
        weights_region=weights_region,
        weights_ram=0 if weights_region == "flash" else regions.weights_ram_bytes_plan(plan),
        name=name, planner=plan.planner, arena_size=plan.arena_size, lower_bound=plan.lower_bound,
        optimal=plan.optimal, status=str(plan.status), base=0, plan=project_path(plan_path),
        model=project_path(plan.model), model_sha256=plan.model_sha256, weights_bytes=plan.weights_bytes,
    )


def plan_alignment(plan: PlanFile) -> int:
    """The alignment a model's slice needs: the plan's, or a buffer's above it."""
    return max([plan.alignment] + [b.alignment or 1 for b in plan.buffers])


def float_model(plan: PlanFile) -> bool:
    """A model that runs in float: quantizing it is what shrinks it (not a QDQ/QOperator model)."""
    return any(b.dtype in _FLOAT for b in plan.buffers if b.kind != "scratch") and not plan.integer_ops


def tflm_arena_size(head: int, tail: int) -> int:
    """TFLM's tensor_arena for a planned head and a measured persistent tail: their sum, rounded up to 16."""
    return align_up(head + tail, TFLM_ALIGNMENT)


def tflm_use(u: ModelUse, alloc: Mapping[str, Any]) -> ModelUse:
    """The model as TFLM runs it: its arena is head (the plan) + tail, rounded up to 16; its flash
    (``weights_bytes``) the planned .tflite the firmware holds as a C array."""
    tail = int(alloc["tail"])
    return dataclasses.replace(u, arena_size=tflm_arena_size(u.arena_size, tail),
                               lower_bound=tflm_arena_size(u.lower_bound, tail), head=u.arena_size, tail=tail,
                               weights_bytes=int(alloc["planned_bytes"]))


def tflm_measure(model_path: str, plan: PlanFile, plan_path: str) -> tuple[bytes, dict[str, Any]]:
    """(the planned .tflite, its allocation) for one plan of a .tflite model, for ``runtime: tflm``.

    The planned bytes are tflite_write's (the plan checked first, then written as TFLM's
    OfflineMemoryAllocation metadata). TFLM's host interpreter (tflite-micro wheel, reference
    kernels) loads them and runs one seeded input: its head must be the plan's arena_size
    (else the plan and TFLM disagree: CheckFailed), its tail is the persistent part
    (interpreter structs, kernel data, variables). The allocation document:
    {"model", "model_sha256", "planned_sha256", "planned_bytes", "head", "tail", "tensor_arena_size", "note"}.
    """
    import hashlib

    from arena_tool import tflite_model, tflite_write, tflm

    mp = tflite_write.check_plan(model_path, plan, plan_path)
    data = tflite_write.planned_bytes(tflite_model.read_bytes(model_path), model_path,
                                      tflite_write.offsets_for(mp, plan), mp.order)
    ins, _ = tflm.io_specs(tflite_model.parse(data, model_path))
    run = tflm.run_tflm(data, model_path, tflm.random_inputs(ins, 1, 0))
    head = plan.arena_size
    if run.allocation.head != head:
        raise CheckFailed(f"TFLM's head is {fmt_bytes(run.allocation.head)} for the planned model, arena's plan "
                          f"says {fmt_bytes(head)}", file=model_path,
                          hint="TFLM did not take the offline plan as written; check with arena-tool verify")
    tail = run.allocation.tail
    return data, {"model": plan.model.replace("\\", "/"), "model_sha256": plan.model_sha256,
                  "planned_sha256": hashlib.sha256(data).hexdigest(), "planned_bytes": len(data), "head": head,
                  "tail": tail, "tensor_arena_size": tflm_arena_size(head, tail), "note": TFLM_NOTE}


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


def status_of(problems: Sequence[Problem], warned: bool) -> str:
    """over before unsupported before error; else warn or ok."""
    kinds = {p.kind for p in problems}
    if kinds & {"ram", "flash"}:
        return "over"
    if "unsupported" in kinds:
        return "unsupported"
    if kinds:
        return "error"
    return "warn" if warned else "ok"


def _name_clashes(board: str, plans: Sequence[tuple[str, str, PlanFile]]) -> list[Problem]:
    """Models whose generated headers define the same name (codegen.header_ids): one firmware
    includes them all, so it would not compile; said here, with the fix, before any C is made."""
    from arena_tool import codegen

    owner: dict[str, str] = {}
    out: list[Problem] = []
    for name, _, plan in plans:
        for ident in codegen.header_ids(name, plan):
            other = owner.setdefault(ident, name)
            if other != name:
                out.append(Problem(
                    "names", f"arena: {board}: models '{other}' and '{name}' would both define {ident} in their "
                    f"generated C headers (model_{other}.h, model_{name}.h); rename one of them in the manifest "
                    f"(a name that does not start with '{other}_t', in any case)", model=name))
                break
    return out


def gate(target: BoardTarget, plans: Sequence[tuple[str, str, PlanFile]],
         fastest: Callable[[int, int], str | None] | None = None,
         runtime_problems: Sequence[Problem] = (),
         tflm: Mapping[str, Mapping[str, Any]] | None = None) -> Report:
    """Check one board (a manifest.BoardTarget): RAM budget, flash for the weights, runtime coverage.

    plans: (model name, plan path, plan file: planfile.load), in manifest order.
    fastest: (min_size, reserve) -> name of the fastest region with that much
    room (reserve counted in the data region), or None; only for ``region: auto``.
    runtime_problems: what the runtime cannot run (``runtime_problems`` per model).
    tflm: runtime tflm: model name -> its allocation document (``tflm_measure``); each model
    then needs its tensor_arena, head + tail rounded up to 16, and its planned model's bytes
    of flash (the C array holds the whole model, not only the weights: ``tflm_use``).
    Never raises for a board that does not fit: see ``Report.status`` and ``failure``.
    """
    uses0 = [model_use(n, p, d) for n, p, d in plans]
    if tflm is not None:
        uses0 = [tflm_use(u, tflm[u.name]) for u in uses0]
    align = max((plan_alignment(d) for _, _, d in plans), default=16)
    floats = {n for n, _, d in plans if float_model(d)}
    uses, need, lb = _layout(target.sharing, uses0, align)
    reserve = target.reserve
    auto = target.region == "auto"
    names = "+".join(u.name for u in uses)
    problems: list[Problem] = []

    def room(region_name: str) -> int:
        return target.region_room(region_name)

    region = target.region
    if auto:
        chosen = fastest(need, reserve) if fastest else None
        if chosen is None or room(chosen) < need:
            largest = max(target.board.ram, key=lambda r: (room(r.name), r.name))
            tries = _tries(target, uses, floats, need, lb, region=None)
            region = largest.name
            problems.append(Problem(
                "ram", f"arena: {target.name}: {_who(uses)} {fmt_bytes(need)}, more than any region of the board "
                f"(largest {largest.name}, {fmt_bytes(room(largest.name))} usable; lower bound {fmt_bytes(lb)})"
                + (f"; try {tries}" if tries else ""), region=region, need=need, limit=room(largest.name)))
        else:
            region = chosen
    info = target.board.region(region)
    budget = target.budget.resolve(info.length)
    usable = room(region)
    limit = min(budget, usable)
    split = bool(target.split)
    placed = region_gate.uses(target, uses, region, need)
    if split:  # the arena is the regions' together; each region is checked on its own below
        need = sum(r.arena for r in placed)
        limit = sum(r.limit for r in placed if r.arena_section is not None)
    if need > limit and not problems and not split:
        over = need - limit
        offending = [u for u in uses if target.sharing == "concurrent" or u.arena_size > limit]
        alt = _better_region(target, need, region, room) if (
            target.budget.percent is not None or usable < budget) else None
        tries = _tries(target, offending, floats, need, lb, region=alt, limit=limit)
        why = f"budget {fmt_bytes(budget)}"
        if usable < budget:
            why = f"room {fmt_bytes(usable)} ({fmt_bytes(info.length)} less the {fmt_bytes(reserve)} stack+heap reserve)"
        problems.append(Problem(
            "ram", f"arena: {target.name}: {_who(offending)} {fmt_bytes(need)} in {region}, {why} "
            f"(over by {fmt_bytes(over)}, lower bound {fmt_bytes(lb)})" + (f"; try {tries}" if tries else ""),
            region=region, need=need, limit=limit))
    problems += region_gate.problems(target, placed, uses, arena_over=bool(problems))
    weights = sum(u.weights_bytes for u in uses)
    flash = target.board.flash
    if flash.length and weights > flash.length:
        problems.append(_flash_problem(target, uses, floats, weights))
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
    return Report(
        board=target.name, region=region, region_origin=info.origin, region_length=info.length,
        region_auto=auto, sharing=target.sharing, arena_size=need, lower_bound=lb, alignment=align,
        budget=budget, budget_spec=target.budget.text, limit=limit, reserve_stack=target.reserve_stack,
        reserve_heap=target.reserve_heap, warn_above=target.warn_above, models=tuple(uses),
        status=status_of(problems, warned), warning=warning, runtime=target.runtime, optimize=target.optimize,
        ram=Usage(need + reserve + sum(u.weights_ram for u in uses), ram_total, "plan"),
        flash=Usage(weights, flash.length if flash is not None else 0, "plan"), problems=tuple(problems),
        regions=placed,
    )


def failure(rep: Report) -> CheckFailed | None:
    """The CheckFailed of a board that did not pass (one line per problem), or None."""
    lines = [p.message for p in rep.problems]
    return CheckFailed("\n".join(lines)) if lines else None


def _flash_problem(target: BoardTarget, uses: Sequence[ModelUse], floats: AbstractSet[str], weights: int) -> Problem:
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
        tries.append(_quantize_hint(target, by_weights, "int8 weights take a quarter of float32's"))
    tries.append("a board with more flash")
    return Problem(
        "flash", f"arena: {target.name}: {what}, {flash.name} has {fmt_bytes(flash.length)} "
        f"(over by {fmt_bytes(need - flash.length)}, before any code); try " + ", or ".join(tries),
        region=flash.name, need=need, limit=flash.length, model=who.name)


def _who(uses: Sequence[ModelUse]) -> str:
    names = "+".join(u.name for u in uses)
    return f"model {names} needs" if len(uses) == 1 else f"models {names} need"


def _better_region(target: BoardTarget, need: int, current: str, room: Callable[[str], int]) -> str | None:
    """The smallest other region with room for ``need`` (ties: board order)."""
    fits = [(room(r.name), i, r.name) for i, r in enumerate(target.board.ram)
            if r.name != current and room(r.name) >= need]
    return min(fits)[2] if fits else None


def _tries(target: BoardTarget, uses: Sequence[ModelUse], floats: AbstractSet[str], need: int, lb: int, *,
           region: str | None, limit: int | None = None) -> str:
    """'region X, planner optimal for a, or quantizing b to int8: <command>': only what could help.
    floats: the names of the float models (``float_model``)."""
    out: list[str] = []
    if region:
        out.append(f"region {region}")
    specs = {m.name: m for m in target.models}
    reachable = limit is None or lb <= limit  # a better plan can only help down to the lower bound
    open_ = [u for u in uses if not u.proven]
    heuristic = [u.name for u in open_ if u.planner != "optimal"]
    if reachable and heuristic:
        out.append(f"planner optimal for {'+'.join(heuristic)}")
    stopped = [u for u in open_ if u.planner == "optimal" and u.status == "time_limit" and u.name in specs]
    if reachable and stopped:
        out.append("a time_limit above " + ", ".join(f"{specs[u.name].time_limit:g} s for {u.name}" for u in stopped))
    by_arena = [u for u in sorted(uses, key=lambda u: (-u.arena_size, u.name))
                if u.name in floats and u.name in specs]
    if by_arena:
        out.append(_quantize_hint(target, by_arena, "int8 activations take a quarter of float32's"))
    if len(out) > 1:
        return ", ".join(out[:-1]) + ", or " + out[-1]
    return out[0] if out else ""


def _quantize_hint(target: BoardTarget, floats: Sequence[ModelUse], why: str) -> str:
    """How to quantize the float models (the command for the first): activation_dtype int8 is a
    what-if that re-sizes the plan, so it is not the advice."""
    specs = {m.name: m for m in target.models}
    first = floats[0]
    shapes = dict(specs[first.name].options.input_shapes) if first.name in specs else {}
    names = first.name + (f" (and likewise {'+'.join(u.name for u in floats[1:])})" if len(floats) > 1 else "")
    return (f"quantizing {names} to int8 ({why}): {quantize_command(first.model, shapes)}; "
            "activation_dtype int8 alone only re-sizes the plan, the model still runs float32")


def quantize_command(model: str, input_shapes: Mapping[str, Sequence[int]] | None = None) -> str:
    """A shell command that writes ``<model>.int8.onnx`` with onnxruntime's quantize_static (QDQ).

    Calibration reads 8 seeded random inputs: replace them with real samples for accuracy.
    """
    base = model[:-5] if model.endswith(".onnx") else model
    shapes = {str(k): [int(d) for d in v] for k, v in sorted((input_shapes or {}).items())}
    return ("python3 -c \"import numpy as np, onnx; from onnxruntime.quantization import CalibrationDataReader as C, "
            f"QuantFormat, quantize_static; m, s = '{model}', {shapes!r}; g = onnx.load(m).graph; "
            "w = {i.name for i in g.initializer}; r = iter([{x.name: np.random.default_rng(k).random(s.get(x.name) "
            "or [d.dim_value or 1 for d in x.type.tensor_type.shape.dim], 'float32') for x in g.input "
            "if x.name not in w} for k in range(8)]); "
            f"quantize_static(m, '{base}.int8.onnx', type('R', (C,), {{'get_next': lambda self: next(r, None)}})(), "
            "quant_format=QuantFormat.QDQ)\" (calibrates on random inputs: use real samples)")


def runtime_problems(board: str, model: str, plan: PlanFile, lowered: Lowered) -> list[Problem]:
    """What arena's runtime cannot run of one model: every coverage gap, and a plan that is a what-if.

    A plan whose activations are of another type than the lowered model's (``activation_dtype``,
    ``bitwidths``) sizes a model that does not exist: its tables would hold float kernels over
    int8-sized buffers. lowered: ``plancheck.lowered_model(path, plan)``.
    """
    from arena_tool import coverage

    out = [Problem("unsupported", f"arena: {board}: {g.message(model)}", model=model, op_index=g.index,
                   node=g.name, op_type=g.op_type, why=g.why) for g in coverage.gaps(lowered)]
    for b in plan.buffers:
        t = lowered.types.get(b.name)
        if b.kind != "scratch" and t is not None and b.dtype != t.dtype:
            why = (f"the plan sizes {b.name!r} as {b.dtype} but the model computes it in {t.dtype} "
                   "(activation_dtype/bitwidths are a what-if that re-sizes the plan, not the model)")
            out.append(Problem(
                "unsupported", f"arena: {board}: model {model}: {why}; quantize the model instead "
                f"({quantize_command(plan.model, planfile_shapes(plan))}), "
                "or drop the option to build it", model=model, why=why))
            break
    return out


def planfile_shapes(plan: PlanFile) -> dict[str, list[int]]:
    """The plan's pinned input shapes, as the quantize command spells them."""
    return {name: list(shape) for name, shape in plan.options.input_shapes}


# ---------------------------------------------------------------- documents


def with_problem(rep: Report, problem: Problem) -> Report:
    """The report after a later stage failed (link, ELF check): the problem added, the status updated."""
    problems = rep.problems + (problem,)
    return dataclasses.replace(rep, problems=problems, status=status_of(problems, rep.status == "warn"), warning=None)


def with_elf(rep: Report, ram_used: int, flash_used: int, flash_name: str = "FLASH") -> Report:
    """The linked report: RAM and flash as the ELF's sections take them; over the flash -> status over."""
    total = rep.flash.total
    out = dataclasses.replace(rep, stage="linked", ram=Usage(ram_used, rep.ram.total, "elf"),
                              flash=Usage(flash_used, total, "elf"))
    if total and flash_used > total:
        out = with_problem(out, Problem(
            "flash", f"arena: {rep.board}: the firmware takes {fmt_bytes(flash_used)} of flash, {flash_name} has "
            f"{fmt_bytes(total)} (over by {fmt_bytes(flash_used - total)})",
            region=flash_name, need=flash_used, limit=total))
    return out


def link_failure(rep: Report, ld_output: str, flash_name: str, region_lengths: Mapping[str, int]) -> Report:
    """The report after a failed link: each region ld says overflowed (flash: over; RAM: over),
    each failed ``arena:`` ASSERT of the script, else one 'link' problem."""
    from arena_tool import linker

    board = rep.board
    for region, over in linker.overflows(ld_output):
        if region == flash_name:
            total = rep.flash.total
            rep = with_problem(rep, Problem(
                "flash", f"arena: {board}: code, constants and weights overflow {region} by {fmt_bytes(over)} "
                f"(flash {fmt_bytes(total)}, of which the weights take {fmt_bytes(rep.weights)})",
                region=region, need=total + over, limit=total))
        else:
            length = region_lengths.get(region, 0)
            rep = with_problem(rep, Problem(
                "ram", f"arena: {board}: the firmware's RAM sections overflow {region} by {fmt_bytes(over)} "
                f"({fmt_bytes(length)}; .data, .bss, the arena and the stack/heap reserve)",
                region=region, need=length + over, limit=length))
    for text in linker.failed_asserts(ld_output):
        if not any(text in p.message for p in rep.problems):
            kind = "ram" if "overflow" in text or "larger" in text else "link"
            rep = with_problem(rep, Problem(kind, f"arena: {board}: the link refused the firmware: {text}"))
    if rep.passed:
        why = "the linker's messages above say why"
        if rep.runtime == "none" and "undefined reference to `arena_" in ld_output:
            why += ("; with runtime: none the firmware defines arena_run, arena_tensor_data and what else it "
                    "calls itself: link your kernels, or use runtime: arena")
        rep = with_problem(rep, Problem("link", f"arena: {board}: the link failed ({why})"))
    return rep


def dumps(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=1) + "\n"


def write(path: str, rep: Report) -> None:
    """Schema-check, then write atomically."""
    from arena_tool.files import write_atomic
    from arena_tool.schema import check_json

    doc = rep.to_json()
    check_json(doc, "report", path)
    write_atomic(path, dumps(doc))


def read(path: str) -> Report:
    """The report at ``path``, checked against the schema (one ArenaError naming the file if not)."""
    from arena_tool.files import read_json

    return Report.from_json(read_json(path, "report", "build the board first (scons board=NAME)"), path)


def bar(percent: float, width: int = 10) -> str:
    """'[=====     ]' for 48.2 (rounded to the nearest cell, '>' past 100%)."""
    filled = min(width, max(0, round(percent * width / 100.0)))
    return "[" + "=" * filled + " " * (width - filled) + ("]" if percent <= 100.0 else ">")


def usage_line(label: str, used: int, total: int) -> str:
    """PlatformIO's line: 'RAM:   [===       ]  31.2% (used 20,480 bytes from 65,536 bytes)'."""
    pct = 100.0 * used / total if total else 100.0
    return f"{label + ':':<6} {bar(pct)} {pct:5.1f}% (used {used:,} bytes from {total:,} bytes)"


def usage_lines(rep: Report) -> list[str]:
    """The RAM and Flash lines of a report; before linking they say what they count."""
    lines = [usage_line("RAM", rep.ram.used, rep.ram.total), usage_line("Flash", rep.flash.used, rep.flash.total)]
    if rep.stage != "linked":
        lines[0] += " [arena + stack/heap reserve, before linking]"
        lines[1] += " [weights only, before linking]"
    return lines


def summary(reps: Sequence[Report]) -> str:
    """The end-of-build table: one block per board."""
    lines: list[str] = []
    for d in reps:
        region = d.region + (" (auto)" if d.region_auto else "")
        split = [r.name for r in d.regions if (r.arena_section or ".arena") != ".arena"]
        if split:
            region = "a split arena over " + "+".join(split)
        budget = f"{d.budget_spec} of each region" if split else f"{fmt_bytes(d.budget)} ({d.budget_spec})"
        lines.append(f"arena: {d.board}: {d.sharing} in {region}, budget {budget}"
                     + ("" if d.runtime == "arena" else f", runtime {d.runtime}"))
        rows = [("model", "planner", "arena", "lower bound", "base")]
        for m in d.models:
            rows.append((m.name, m.planner, fmt_bytes(m.arena_size), fmt_bytes(m.lower_bound), str(m.base)))
        widths = [max(len(r[c]) for r in rows) for c in range(5)]
        for j, r in enumerate(rows):
            cells = [r[0].ljust(widths[0]), r[1].ljust(widths[1])] + [r[c].rjust(widths[c]) for c in (2, 3, 4)]
            lines.append("  " + "  ".join(cells))
        room = "headroom" if d.headroom >= 0 else "over by"
        lines.append(f"  arena {fmt_bytes(d.arena_size)}, lower bound {fmt_bytes(d.lower_bound)}, "
                     f"{room} {fmt_bytes(abs(d.headroom))}  {'+'.join(split) or d.region} {bar(d.percent)} "
                     f"{d.percent:.1f}%" + ("  WARNING" if d.status == "warn" else ""))
        lines += region_gate.summary_lines(d)
        lines += ["  " + ln for ln in usage_lines(d)]
        if d.runtime == "tflm":
            lines += [f"  tflm {m.name}: tensor_arena {fmt_bytes(m.arena_size)} = head {fmt_bytes(m.head)}"
                      f" + tail {fmt_bytes(m.tail or 0)}" for m in d.models if m.head is not None]
            lines.append("  note: " + TFLM_NOTE)
        if not d.passed:
            n = len(d.problems)
            lines.append(f"  FAILED: {d.status} ({n} problem{'s' if n != 1 else ''}; arena_report.json lists them)")
    return "\n".join(lines)
