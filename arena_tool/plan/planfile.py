"""The plan file: one model's arena plan as JSON (schemas/plan.schema.json).

Written and read only through this module, validated both ways. Every arena
tensor is listed with its own inclusive live range; an alias (view or in-place
output) carries its root's offset and names the root in ``alias_of`` (a concat's input written
in place: its position's offset inside the concat's output, its root).
``plancheck.check`` re-derives everything from the model and trusts nothing in the file.

``PlanFile`` (with ``PlanStep``, ``PlanBuffer``, ``PlanRegion`` ...) is the plan as frozen
values, and the one thing passed around: ``build`` makes one, ``write`` / ``load`` and
``PlanFile.to_json`` / ``from_json`` (schema-checked) are the only places the JSON document
exists, and a plan written and loaded again is the same bytes. A schema-valid plan can still
be wrong (overlaps, swapped steps, wrong sizes): it loads, and ``plancheck.check`` refuses it.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from typing import Any, Callable

from arena_tool import __version__
from arena_tool.core.errors import ArenaError
from arena_tool.core.files import project_path, read_json, write_atomic
from arena_tool.core.problem import Buffer, ModelOptions, ModelProblem, Plan, Problem, Quant, Status, Tensor, \
    lower_bound
from arena_tool.core.schema import check_json

FORMAT_VERSION = 1


def model_kind(mp: ModelProblem) -> str:
    """'onnx', or 'tflite' for a tflite_model.TfliteProblem."""
    return getattr(mp, "kind", "onnx")


def build(mp: ModelProblem, plan: Plan, problem: Problem, k: int = 1,
          baselines: PlanBaselines | None = None) -> PlanFile:
    """The plan file of mp planned as ``problem`` (mp.problem()) by ``plan``; baselines: the
    lower bounds without scheduling / in-place depthwise (planning._baselines). The model is
    named relative to the current folder when inside it (files.project_path)."""
    root_offset = {b.name: o for b, o in zip(problem.buffers, plan.offsets)}
    root_size = {b.name: b.size for b in problem.buffers}
    kind = model_kind(mp)
    return PlanFile(
        format_version=FORMAT_VERSION,
        arena_tool_version=__version__,
        model=project_path(mp.model),
        model_kind=kind,
        persistent=tuple(getattr(mp, "variables", ())) if kind == "tflite" else None,  # TFLM's tail
        unknown_scratch=tuple(getattr(mp, "unknown_scratch", ())) or None,
        model_sha256=mp.model_sha256,
        planner=plan.planner,
        k=k,
        options=mp.options,
        arena_size=plan.arena_size,
        lower_bound=plan.lower_bound,
        best_bound=plan.best_bound,
        optimal=plan.optimal,
        status=Status(plan.status),
        weights_bytes=mp.weights_bytes,
        baselines=baselines or PlanBaselines(),
        integer_ops=mp.integer_ops,
        qdq_fused=mp.qdq_fused,
        schedule=tuple(PlanStep(node=s.node, name=s.name, op_type=s.op_type, domain=s.domain,
                                fused=tuple(s.fused), inputs=tuple(s.inputs), outputs=tuple(s.outputs),
                                workspace=s.workspace) for s in mp.schedule),
        buffers=tuple(PlanBuffer(name=t.name, kind=t.kind, dtype=t.dtype, shape=tuple(t.shape),
                                 elements=t.elements,
                                 size=root_size[t.name] if t.alias_of is None and not mp.caller_owned(t) else t.size,
                                 offset=0 if mp.caller_owned(t) else root_offset[t.alias_of or t.name] + t.alias_offset,
                                 first_op=t.first_op,
                                 last_op=t.last_op, alias_of=t.alias_of, quant=t.quant,
                                 alignment=t.alignment or None) for t in mp.tensors),
    )


def quant_doc(q: Quant | None) -> dict[str, Any] | None:
    if q is None:
        return None
    return {"scale": list(q.scale), "zero_point": list(q.zero_point), "axis": q.axis}


TOP_LEVEL_OPTIONS = ("alignment",)  # options the plan states at its top level, not in ``options``


def options_doc(opts: ModelOptions) -> dict[str, Any]:
    """The plan's ``options``: every option but TOP_LEVEL_OPTIONS."""
    return {k: v for k, v in opts.to_doc().items() if k not in TOP_LEVEL_OPTIONS}


def dumps(doc: Mapping[str, Any]) -> str:
    """A plan document (``PlanFile.to_json``) as the file's text."""
    return json.dumps(doc, indent=1, sort_keys=False) + "\n"


def write(path: str, plan: PlanFile) -> None:
    """The plan file at ``path``, atomically, once its document is valid against the schema."""
    doc = plan.to_json()
    check_json(doc, "plan", path)
    write_atomic(path, dumps(doc))


READ_HINT = "make one with 'arena-tool plan MODEL -o PLAN'"


# --- the plan file as typed values (issue 14 item 3) ------------------------
#
# ``PlanFile.from_json`` (schema-checked) and ``to_json`` are the one conversion between the
# file and the values everything else reads. ``to_json`` gives back the document ``build``
# writes, key order included, so a plan read and written again is byte-identical. A field the
# schema makes optional is None where the file leaves it out, with two exceptions ``build``
# always writes: ``best_bound`` and a buffer's ``quant`` (null and absent read alike).


def _opt(**fields: Any) -> dict[str, Any]:
    """The fields that are not None (the schema's optional keys, where present)."""
    return {k: v for k, v in fields.items() if v is not None}


@dataclasses.dataclass(frozen=True)
class PlanStep:
    """One ``schedule`` entry: the op the plan runs at this index."""

    node: int
    name: str
    op_type: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    workspace: str | None
    domain: str | None = None  # absent: ai.onnx
    fused: tuple[int, ...] | None = None

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> "PlanStep":
        fused = doc.get("fused")
        return cls(node=int(doc["node"]), name=str(doc["name"]), op_type=str(doc["op_type"]),
                   inputs=tuple(doc["inputs"]), outputs=tuple(doc["outputs"]), workspace=doc["workspace"],
                   domain=doc.get("domain"), fused=None if fused is None else tuple(int(i) for i in fused))

    def to_json(self) -> dict[str, Any]:
        return {"node": self.node, "name": self.name, "op_type": self.op_type,
                **_opt(domain=self.domain, fused=None if self.fused is None else list(self.fused)),
                "inputs": list(self.inputs), "outputs": list(self.outputs), "workspace": self.workspace}


@dataclasses.dataclass(frozen=True)
class PlanBuffer:
    """One ``buffers`` entry: an arena tensor (or workspace), its bytes and live range."""

    name: str
    kind: str
    dtype: str
    shape: tuple[int, ...]
    elements: int
    size: int
    offset: int
    first_op: int
    last_op: int
    alias_of: str | None
    quant: Quant | None = None
    alignment: int | None = None  # above the plan's (io_alignment)
    region: str | None = None  # split plans

    @property
    def root(self) -> str:
        """The alias group: the root buffer's name."""
        return self.alias_of or self.name

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> "PlanBuffer":
        q = doc.get("quant")
        quant = None if q is None else Quant(tuple(q["scale"]), tuple(q["zero_point"]), q["axis"])
        return cls(name=str(doc["name"]), kind=str(doc["kind"]), dtype=str(doc["dtype"]),
                   shape=tuple(int(d) for d in doc["shape"]), elements=int(doc["elements"]), size=int(doc["size"]),
                   offset=int(doc["offset"]), first_op=int(doc["first_op"]), last_op=int(doc["last_op"]),
                   alias_of=doc["alias_of"], quant=quant, alignment=doc.get("alignment"), region=doc.get("region"))

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "dtype": self.dtype, "shape": list(self.shape),
                "elements": self.elements, "size": self.size, "offset": self.offset, "first_op": self.first_op,
                "last_op": self.last_op, "alias_of": self.alias_of, "quant": quant_doc(self.quant),
                **_opt(alignment=self.alignment, region=self.region)}


@dataclasses.dataclass(frozen=True)
class PlanBaselines:
    """``baselines``: the lower bounds without the options that lower the peak (None: off)."""

    graph_order: int | None = None
    no_inplace_depthwise: int | None = None
    sequential: int | None = None

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> "PlanBaselines":
        return cls(doc.get("graph_order"), doc.get("no_inplace_depthwise"), doc.get("sequential"))

    def to_json(self) -> dict[str, Any]:
        return {"graph_order": self.graph_order, "no_inplace_depthwise": self.no_inplace_depthwise,
                "sequential": self.sequential}


@dataclasses.dataclass(frozen=True)
class PlanRegion:
    """One ``regions`` entry of a split plan (split_arena.py)."""

    name: str
    capacity: int
    arena_size: int
    lower_bound: int
    accessed_bytes: int
    buffers: int
    planner: str
    status: Status

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> "PlanRegion":
        return cls(name=str(doc["name"]), capacity=int(doc["capacity"]), arena_size=int(doc["arena_size"]),
                   lower_bound=int(doc["lower_bound"]), accessed_bytes=int(doc["accessed_bytes"]),
                   buffers=int(doc["buffers"]), planner=str(doc["planner"]), status=Status(doc["status"]))

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "capacity": self.capacity, "arena_size": self.arena_size,
                "lower_bound": self.lower_bound, "accessed_bytes": self.accessed_bytes, "buffers": self.buffers,
                "planner": self.planner, "status": str(self.status)}


@dataclasses.dataclass(frozen=True)
class PlanSplit:
    """``split``: how a split plan assigned its buffers to regions."""

    method: str
    status: Status
    seed: str
    cost: int
    cost_model: str
    accessed_bytes: int
    small_first_accessed: tuple[int, ...] | None

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> "PlanSplit":
        sfa = doc["small_first_accessed"]
        return cls(method=str(doc["method"]), status=Status(doc["status"]), seed=str(doc["seed"]),
                   cost=int(doc["cost"]), cost_model=str(doc["cost_model"]), accessed_bytes=int(doc["accessed_bytes"]),
                   small_first_accessed=None if sfa is None else tuple(int(v) for v in sfa))

    def to_json(self) -> dict[str, Any]:
        return {"method": self.method, "status": str(self.status), "seed": self.seed, "cost": self.cost,
                "cost_model": self.cost_model, "accessed_bytes": self.accessed_bytes,
                "small_first_accessed": None if self.small_first_accessed is None else list(self.small_first_accessed)}


@dataclasses.dataclass(frozen=True)
class PlanPatches:
    """``patches``: the stages run tile by tile (model/patches.py) and what they cost: the
    arena and lower bound without patches, the MACs with and without (the halos recomputed),
    and per stage its tiles, each op's input and output box and tile-local pads, which
    ``check`` re-derives from the model."""

    stages: str  # the option's text form, 'NODE:RxC;...' ('off': auto kept the untiled plan)
    untiled_arena: int
    untiled_lower_bound: int
    macs_untiled: int
    macs: int
    status: Status  # proven: every candidate weighed; time_limit: the search stopped early
    candidates: int
    detail: tuple[Mapping[str, Any], ...] = ()

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> "PlanPatches":
        return cls(stages=str(doc["stages"]), untiled_arena=int(doc["untiled_arena"]),
                   untiled_lower_bound=int(doc["untiled_lower_bound"]), macs_untiled=int(doc["macs_untiled"]),
                   macs=int(doc["macs"]), status=Status(doc["status"]), candidates=int(doc["candidates"]),
                   detail=tuple(doc.get("detail", ())))

    def to_json(self) -> dict[str, Any]:
        return {"stages": self.stages, "untiled_arena": self.untiled_arena,
                "untiled_lower_bound": self.untiled_lower_bound, "macs_untiled": self.macs_untiled,
                "macs": self.macs, "status": str(self.status), "candidates": self.candidates,
                "detail": [dict(d) for d in self.detail]}


@dataclasses.dataclass(frozen=True)
class PlanFile:
    """A plan file (schemas/plan.schema.json), every top-level field; ``options`` carries the
    plan's ``alignment`` too (``options.alignment``), as ModelOptions does."""

    format_version: int
    model: str
    model_sha256: str
    planner: str
    k: int
    options: ModelOptions
    arena_size: int
    lower_bound: int
    best_bound: int | None
    optimal: bool | None
    status: Status
    weights_bytes: int
    schedule: tuple[PlanStep, ...]
    buffers: tuple[PlanBuffer, ...]
    arena_tool_version: str | None = None
    model_kind: str | None = None  # absent: onnx
    persistent: tuple[str, ...] | None = None  # tflite
    unknown_scratch: tuple[str, ...] | None = None  # tflite: ops whose kernel scratch the plan omits
    baselines: PlanBaselines | None = None
    integer_ops: int | None = None
    qdq_fused: int | None = None
    regions: tuple[PlanRegion, ...] | None = None  # split plans
    split: PlanSplit | None = None
    seconds: float | None = None
    patches: PlanPatches | None = None

    @property
    def alignment(self) -> int:
        return self.options.alignment

    @property
    def kind(self) -> str:
        """'onnx' or 'tflite' (``model_kind``, absent: onnx)."""
        return self.model_kind or "onnx"

    @property
    def in_arena(self) -> tuple[PlanBuffer, ...]:
        """The buffers the arena holds: all but the caller-owned inputs and outputs (io_buffers:
        caller), which live in the application's own buffers."""
        if self.options.io_buffers != "caller":
            return self.buffers
        return tuple(b for b in self.buffers if b.kind not in ("input", "output"))

    @property
    def caller_io(self) -> int:
        """Bytes of the graph inputs and outputs the application owns (io_buffers: caller), 0
        otherwise: counted apart from the arena and its budget (they live wherever the application
        puts them), but RAM all the same."""
        if self.options.io_buffers != "caller":
            return 0
        return sum(b.size for b in self.buffers if b.kind in ("input", "output"))

    @property
    def by_name(self) -> dict[str, PlanBuffer]:
        """Buffer name -> its entry (a name listed twice: the last; ``check`` refuses that)."""
        return {b.name: b for b in self.buffers}

    @property
    def order(self) -> list[int]:
        """The node (or operator) index of each schedule step: the plan's op order."""
        return [s.node for s in self.schedule]

    @property
    def is_split(self) -> bool:
        """A split plan: a region per buffer (split_arena.py)."""
        return bool(self.regions)

    def offsets(self) -> dict[str, int]:
        """Tensor name -> byte offset in the model's arena."""
        return {b.name: b.offset for b in self.buffers}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any], path: str = "<plan>") -> "PlanFile":
        """The plan in ``doc``, once it is valid against the schema (else ArenaError naming ``path``)."""
        check_json(dict(doc), "plan", path)
        return cls._parse(doc)

    @classmethod
    def _parse(cls, doc: Mapping[str, Any]) -> "PlanFile":
        """from_json of a document already checked against the schema."""
        persistent, baselines = doc.get("persistent"), doc.get("baselines")
        unknown = doc.get("unknown_scratch")
        regions, split = doc.get("regions"), doc.get("split")
        return cls(
            format_version=int(doc["format_version"]), model=str(doc["model"]),
            model_sha256=str(doc["model_sha256"]), planner=str(doc["planner"]), k=int(doc["k"]),
            options=ModelOptions.from_doc({**doc["options"], "alignment": doc["alignment"]}),
            arena_size=int(doc["arena_size"]),
            lower_bound=int(doc["lower_bound"]), best_bound=doc.get("best_bound"), optimal=doc["optimal"],
            status=Status(doc["status"]), weights_bytes=int(doc["weights_bytes"]),
            schedule=tuple(PlanStep.from_json(s) for s in doc["schedule"]),
            buffers=tuple(PlanBuffer.from_json(b) for b in doc["buffers"]),
            arena_tool_version=doc.get("arena_tool_version"), model_kind=doc.get("model_kind"),
            persistent=None if persistent is None else tuple(persistent),
            unknown_scratch=None if unknown is None else tuple(unknown),
            baselines=None if baselines is None else PlanBaselines.from_json(baselines),
            integer_ops=doc.get("integer_ops"), qdq_fused=doc.get("qdq_fused"),
            regions=None if regions is None else tuple(PlanRegion.from_json(r) for r in regions),
            split=None if split is None else PlanSplit.from_json(split), seconds=doc.get("seconds"),
            patches=None if doc.get("patches") is None else PlanPatches.from_json(doc["patches"]))

    def to_json(self) -> dict[str, Any]:
        """The plan document, as ``build`` (and planning.plan_split) write it, key order included."""
        return {
            "format_version": self.format_version,
            **_opt(arena_tool_version=self.arena_tool_version),
            "model": self.model,
            **_opt(model_kind=self.model_kind,
                   persistent=None if self.persistent is None else list(self.persistent),
                   unknown_scratch=None if self.unknown_scratch is None else list(self.unknown_scratch)),
            "model_sha256": self.model_sha256,
            "planner": self.planner,
            "k": self.k,
            "alignment": self.options.alignment,
            "options": options_doc(self.options),
            "arena_size": self.arena_size,
            "lower_bound": self.lower_bound,
            "best_bound": self.best_bound,
            "optimal": self.optimal,
            "status": str(self.status),
            "weights_bytes": self.weights_bytes,
            **_opt(baselines=None if self.baselines is None else self.baselines.to_json(),
                   integer_ops=self.integer_ops, qdq_fused=self.qdq_fused),
            "schedule": [s.to_json() for s in self.schedule],
            "buffers": [b.to_json() for b in self.buffers],
            **_opt(regions=None if self.regions is None else [r.to_json() for r in self.regions],
                   split=None if self.split is None else self.split.to_json(), seconds=self.seconds,
                   patches=None if self.patches is None else self.patches.to_json()),
        }


def load(path: str, hint: str | None = None) -> PlanFile:
    """The plan file at ``path``, checked against the schema, as a PlanFile; hint: how to make a
    good one, for the messages (READ_HINT by default)."""
    doc = read_json(path, "plan file", hint or READ_HINT, schema="plan")
    plan = PlanFile._parse(doc)
    steps = len(plan.schedule)
    for b in plan.buffers:  # what explain and timeline loop over, before any of them trusts it
        if not 0 <= b.first_op <= b.last_op <= steps:
            raise ArenaError(f"buffer {b.name}: live range [{b.first_op}, {b.last_op}] is not inside the "
                             f"schedule's {steps} ops", file=path, field="buffers", hint=hint or READ_HINT)
    return plan


# ---------------------------------------------------------------- alias groups (explain, timeline)


def alias_groups(buffers: Sequence[PlanBuffer]) -> dict[str, list[PlanBuffer]]:
    """Root name -> its members (root first), in plan order: an alias group shares its root's bytes."""
    groups: dict[str, list[PlanBuffer]] = {}
    for b in buffers:
        if b.alias_of is None:
            groups.setdefault(b.name, []).insert(0, b)
        else:
            groups.setdefault(b.alias_of, []).append(b)
    return groups



def group_buffers(buffers: Sequence[PlanBuffer], alignment: int,
                   size_of: Callable[[PlanBuffer], int] | None = None) -> list[Buffer]:
    """One Buffer per alias group: the root's planned size (or the largest re-sized member),
    over the union of the members' live ranges (as ModelProblem.problem)."""
    out = []
    for root, g in alias_groups(buffers).items():
        at = g[0].offset if g[0].alias_of is None else None  # a concat view's member lies past it
        size = max((m.offset - at if at is not None and m.alias_of else 0) + size_of(m) for m in g) \
            if size_of else g[0].size
        out.append(Buffer(root, size, min(m.first_op for m in g), max(m.last_op for m in g), alignment))
    return out

