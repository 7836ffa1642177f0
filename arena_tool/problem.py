"""The vocabulary every stage shares: Buffer, Problem, Plan.

Lifetimes are inclusive op indices ``[start, end]``, as in the plan file and in
TFLite Micro; the half-open minimalloc CSV is converted once, in ``csvio``.
``Plan.offsets[i]`` belongs to ``Problem.buffers[i]``. Planners never mutate a
Problem: every type here is frozen.

Worked example (the design notes' chain T0->T1->T2->T3, 4/6/6/2 KB, MatMuls)::

    op:      0    1    2
    T0 4K  [====]                       start 0, end 0
    T1 6K  [=========]                  start 0, end 1
    T2 6K       [=========]             start 1, end 2
    T3 2K            [====]             start 2, end 2

    lower bound = max(4+6, 6+6, 6+2) = 12 KB; naive = 18 KB;
    one 12 KB plan: T1@0, T0@6K, T2@6K (T0 is dead by op 1), T3@0 (T1 is dead
    by op 2).
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Any, Mapping, Sequence

Bytes = int  # a size or an offset, in bytes
OpIndex = int  # an index into the schedule (0-based, inclusive ranges)


@dataclasses.dataclass(frozen=True)
class Buffer:
    """One block of arena memory.

    name: unique within its Problem.
    size: bytes, > 0 (already rounded up as planned).
    start, end: inclusive op indices of the live range, start <= end.
    alignment: bytes; the offset must be a multiple of it (>= 1).
    fixed_offset: bytes, or None; a pre-placed buffer keeps this offset.
    """

    name: str
    size: Bytes
    start: OpIndex
    end: OpIndex
    alignment: Bytes = 1
    fixed_offset: Bytes | None = None

    def overlaps_in_time(self, other: "Buffer") -> bool:
        return not (self.end < other.start or other.end < self.start)


@dataclasses.dataclass(frozen=True)
class Problem:
    """A set of buffers to place; capacity (bytes) is an optional hard limit."""

    buffers: tuple[Buffer, ...]
    capacity: Bytes | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.buffers, tuple):
            object.__setattr__(self, "buffers", tuple(self.buffers))

    @property
    def horizon(self) -> int:
        """Number of op slots: one past the last end."""
        return max((b.end for b in self.buffers), default=-1) + 1

    @property
    def total_size(self) -> Bytes:
        """What a no-reuse planner needs."""
        return sum(b.size for b in self.buffers)


class Status(enum.StrEnum):
    """Why a planner stopped: the one vocabulary of every planner, ``Plan`` and the plan
    file (schemas/plan.schema.json's ``status`` enum is tested against it). Str-valued,
    so JSON and comparisons with the plain strings are unchanged.
    """

    HEURISTIC = "heuristic"  # a one-pass planner, or a search exhausted only for a coarsened problem
    PROVEN = "proven"  # search exhausted, or the result equals a proven lower bound
    TIME_LIMIT = "time_limit"  # stopped at Params.time_limit: the best layout found so far
    SIZE_LIMIT = "size_limit"  # the search would not fit its memory budget (exact_cover's matrix)
    INFEASIBLE = "infeasible"  # provably nothing fits the problem's capacity


@dataclasses.dataclass(frozen=True)
class Plan:
    """A planner's answer.

    offsets: bytes, offsets[i] for problem.buffers[i].
    arena_size: bytes, max(offset + size), 0 for an empty problem.
    planner: registry name of the planner that produced it.
    optimal: True when proven minimal, False when known not proven, None when
      the planner makes no claim (heuristics).
    status: why the planner stopped (``Status``; a plain string is converted, an unknown
      one is a ValueError).
    lower_bound: bytes, the largest sum of live sizes at any op.
    best_bound: bytes, the best proven lower bound on the minimum (>= lower_bound).
    stats: planner-specific counters (search nodes, rows ...), for reports only.
    """

    offsets: tuple[Bytes, ...]
    arena_size: Bytes
    planner: str
    optimal: bool | None
    status: Status
    lower_bound: Bytes
    best_bound: Bytes | None = None
    seconds: float = 0.0
    stats: tuple[tuple[str, int], ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "status", Status(self.status))

    @property
    def gap(self) -> float:
        """Relative distance to the lower bound (0.0 = at the bound)."""
        return 0.0 if self.lower_bound == 0 else self.arena_size / self.lower_bound - 1.0


def lower_bound(buffers: Sequence[Buffer]) -> Bytes:
    """The largest sum of sizes live at one op (the 'load').

    Swept over start/end events: O(n log n).
    """
    events: list[tuple[int, int]] = []
    for b in buffers:
        events.append((b.start, b.size))
        events.append((b.end + 1, -b.size))
    events.sort(key=lambda e: (e[0], e[1]))  # frees before allocs at one time
    load = best = 0
    for _, delta in events:
        load += delta
        best = max(best, load)
    return best


def align_up(value: int, alignment: int) -> int:
    return -(-value // alignment) * alignment


def fmt_bytes(n: Bytes) -> str:
    """65536 -> '65,536 B': how every message and summary writes a byte count."""
    return f"{n:,} B"


def arena_size(buffers: Sequence[Buffer], offsets: Sequence[Bytes]) -> Bytes:
    return max((o + b.size for b, o in zip(buffers, offsets)), default=0)


# --- The model-level view: what liveness hands to the plan file and codegen ---

KINDS = ("input", "activation", "output", "scratch")


SCHEDULES = ("graph", "memory")
EXECUTIONS = ("sequential", "pipelined")


@dataclasses.dataclass(frozen=True)
class ModelOptions:
    """Everything that changes a model's planning problem.

    alignment: bytes; every offset and every planned size is a multiple of it.
    activation_dtype: None keeps the model's element types; e.g. 'int8' overrides
      every activation's element type (weights are not activations).
    bitwidths: tensor name -> bits per element (as a bitwidth search hands over);
      wins over activation_dtype for the named tensors.
    inplace: element-wise ops may write over an input that dies there, and
      Reshape-like ops are zero-copy views.
    inplace_depthwise: with inplace, a depthwise Conv may write over its input that
      dies there, through a one-channel workspace (TinyEngine's scheme; arena's
      runtime implements it, a runtime of your own must too).
    scratch: Conv im2col workspace model: 'none', 'row' or 'full'.
    schedule: 'graph' runs the ops in the model's order; 'memory' in the topological
      order with the smallest peak of live bytes (scheduling).
    input_shapes: graph input name -> static shape, pinning symbolic dims.
    execution: 'sequential' runs one op at a time; 'pipelined' lets op N+1 run while op N
      still runs (dual core, CPU + NPU): no aliases, and every live range extended by one op
      each way, so nothing an op touches is reused by its neighbours (double buffering).
    io_alignment: bytes, for the graph's inputs and outputs (the buffers a DMA or cache
      maintenance touches, e.g. 32 for the Cortex-M7 cache line): their offsets and sizes are
      multiples of it; None: the alignment.
    weights: 'flash' (read in place), or a RAM region of the board: linked into flash and
      copied there once at start-up (a .data-like section), counted against that region's budget.
    allow_external_data_outside: read external-data files outside the model's folder (a
      model from elsewhere could otherwise pull any file into the firmware's flash).

    The one definition of the options: ``to_doc``/``from_doc`` give the JSON form the
    plan file, the manifest (same keys) and the build's specs share.
    """

    alignment: int = 16
    activation_dtype: str | None = None
    bitwidths: tuple[tuple[str, int], ...] = ()
    inplace: bool = True
    inplace_depthwise: bool = True
    scratch: str = "none"
    schedule: str = "graph"
    input_shapes: tuple[tuple[str, tuple[int, ...]], ...] = ()
    execution: str = "sequential"
    io_alignment: int | None = None
    weights: str = "flash"
    allow_external_data_outside: bool = False

    def to_doc(self) -> dict[str, Any]:
        """Every option as JSON values, maps sorted by key."""
        return {
            "alignment": self.alignment,
            "activation_dtype": self.activation_dtype,
            "bitwidths": dict(sorted(self.bitwidths)),
            "inplace": self.inplace,
            "inplace_depthwise": self.inplace_depthwise,
            "scratch": self.scratch,
            "schedule": self.schedule,
            "input_shapes": {name: list(shape) for name, shape in sorted(self.input_shapes)},
            "execution": self.execution,
            "io_alignment": self.io_alignment,
            "weights": self.weights,
            "allow_external_data_outside": self.allow_external_data_outside,
        }

    @classmethod
    def from_doc(cls, doc: Mapping[str, Any]) -> "ModelOptions":
        """The inverse of to_doc; a missing key takes its default (older plan files)."""
        d = cls()
        return cls(
            alignment=int(doc.get("alignment", d.alignment)),
            activation_dtype=doc.get("activation_dtype", d.activation_dtype),
            bitwidths=tuple(sorted((str(k), int(v)) for k, v in (doc.get("bitwidths") or {}).items())),
            inplace=doc.get("inplace", d.inplace),
            inplace_depthwise=doc.get("inplace_depthwise", d.inplace_depthwise),
            scratch=doc.get("scratch", d.scratch),
            schedule=doc.get("schedule", d.schedule),
            input_shapes=tuple(sorted((str(k), tuple(int(n) for n in v))
                                      for k, v in (doc.get("input_shapes") or {}).items())),
            execution=doc.get("execution", d.execution),
            io_alignment=None if doc.get("io_alignment") is None else int(doc["io_alignment"]),
            weights=str(doc.get("weights", d.weights)),
            allow_external_data_outside=doc.get("allow_external_data_outside", d.allow_external_data_outside),
        )


@dataclasses.dataclass(frozen=True)
class Quant:
    """Affine quantization, real = scale * (q - zero_point); one entry per tensor, or
    per channel along ``axis`` (None: per tensor)."""

    scale: tuple[float, ...]
    zero_point: tuple[int, ...]
    axis: int | None = None


@dataclasses.dataclass(frozen=True)
class Step:
    """One scheduled op.

    node: index in graph.node; name/op_type as in the model.
    inputs/outputs: tensor names as in the model, weights included ('' = absent
      optional input), so codegen can wire kernels.
    workspace: name of this op's scratch tensor, or None.
    domain: the op's domain ('' = ai.onnx, 'com.microsoft', 'arena').
    fused: the other graph nodes this op replaces (lowering), ascending.
    """

    node: int
    name: str
    op_type: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    workspace: str | None = None
    domain: str = ""
    fused: tuple[int, ...] = ()


@dataclasses.dataclass(frozen=True)
class Tensor:
    """One arena-resident tensor or workspace.

    kind: one of KINDS.
    dtype: ONNX element type name in lower case ('float32', 'int8', ...), or
      'uint8' for scratch; 'int4'-style names for bitwidth overrides.
    shape: static dims; () for a scalar; (bytes,) for scratch.
    elements: product of shape.
    size: bytes as planned: ceil(elements * bits / 8) rounded up to alignment.
    first_op, last_op: inclusive schedule indices of this tensor's own life.
    alias_of: None, or the name of the root tensor whose bytes this one shares
      (views and in-place outputs; always a root, never a chain).
    quant: the quantization of an integer tensor, where the model states it.
    alignment: bytes its offset must be a multiple of, where above the model's (io_alignment).
    """

    name: str
    kind: str
    dtype: str
    shape: tuple[int, ...]
    elements: int
    size: int
    first_op: int
    last_op: int
    alias_of: str | None = None
    quant: Quant | None = None
    alignment: int | None = None


@dataclasses.dataclass(frozen=True)
class ModelProblem:
    """A model reduced to what planning and codegen need.

    model: the model path as given; model_sha256: hex digest of its bytes.
    schedule: the ops that run, in order (folded constant ops are absent).
    tensors: every arena tensor and workspace, in a deterministic order
      (graph inputs, then per step its outputs then its workspace).
    weights_bytes: bytes of the constants the ops read (flash), quantized weights at
      their integer size.
    integer_ops: steps whose activations in and out are all integer.
    qdq_fused: steps lowered from a DequantizeLinear -> op -> QuantizeLinear pattern.
    """

    model: str
    model_sha256: str
    options: ModelOptions
    schedule: tuple[Step, ...]
    tensors: tuple[Tensor, ...]
    weights_bytes: int
    integer_ops: int = 0
    qdq_fused: int = 0

    def without_aliases(self) -> "ModelProblem":
        """The same model with every tensor in a buffer of its own."""
        return dataclasses.replace(self, tensors=tuple(dataclasses.replace(t, alias_of=None) for t in self.tensors))

    def problem(self, capacity: int | None = None) -> Problem:
        """One Buffer per root tensor (alias_of None), in tensors order.

        A root's live range is the union of its group's ranges; its size the
        largest in the group.
        """
        groups: dict[str, list[Tensor]] = {}
        for t in self.tensors:
            groups.setdefault(t.alias_of or t.name, []).append(t)
        buffers = []
        for t in self.tensors:
            if t.alias_of is not None:
                continue
            g = groups[t.name]
            buffers.append(Buffer(
                name=t.name,
                size=max(m.size for m in g),
                start=min(m.first_op for m in g),
                end=max(m.last_op for m in g),
                alignment=max(m.alignment or self.options.alignment for m in g),
            ))
        return Problem(tuple(buffers), capacity)
