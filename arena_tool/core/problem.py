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
import operator
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, Sequence, overload

if TYPE_CHECKING:
    import numpy as np

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
class Columns:
    """Buffers' fields as int64 arrays, read-only (bytes, inclusive ops; fixed -1 when free)."""

    size: np.ndarray
    start: np.ndarray
    end: np.ndarray
    align: np.ndarray
    fixed: np.ndarray


class ColumnBuffers(Sequence[Buffer]):
    """Buffers held as columns (csvio's compiled reader), their ids where they are in the file's
    bytes: a Buffer is made only when one is indexed, or all of them once when the sequence is
    iterated. A CSV plan's arrays go from the file to the planner, the validator and the writer
    without a Python object per buffer (issue 39: at 100,000 rows making them took ~0.25 CPU-s and
    reading their fields back into arrays as long again). Equal to, and hashed as, the tuple of
    its Buffers."""

    def __init__(self, columns: Columns, text: bytes, name_at: np.ndarray, name_len: np.ndarray) -> None:
        self.columns = columns
        self.text = text  # ASCII
        self.name_at = name_at  # each id's offset in text
        self.name_len = name_len
        self._buffers: tuple[Buffer, ...] | None = None

    def name(self, i: int) -> str:
        at = int(self.name_at[i])
        return self.text[at:at + int(self.name_len[i])].decode("ascii")

    def names(self) -> list[str]:
        text = self.text
        return [text[a:a + n].decode("ascii") for a, n in zip(self.name_at.tolist(), self.name_len.tolist())]

    def buffers(self) -> tuple[Buffer, ...]:
        """Every Buffer, made once."""
        if self._buffers is None:
            c = self.columns
            fixed = [None if f < 0 else f for f in c.fixed.tolist()]
            self._buffers = tuple(map(Buffer, self.names(), c.size.tolist(), c.start.tolist(), c.end.tolist(),
                                      c.align.tolist(), fixed))
        return self._buffers

    def take(self, idx: Sequence[int]) -> "ColumnBuffers":
        """The buffers at ``idx``, in that order, as columns."""
        c = self.columns
        return ColumnBuffers(Columns(c.size[idx], c.start[idx], c.end[idx], c.align[idx], c.fixed[idx]),
                             self.text, self.name_at[idx], self.name_len[idx])

    def __len__(self) -> int:
        return len(self.name_at)

    @overload
    def __getitem__(self, i: int) -> Buffer: ...

    @overload
    def __getitem__(self, i: slice) -> tuple[Buffer, ...]: ...

    def __getitem__(self, i: int | slice) -> Buffer | tuple[Buffer, ...]:
        if isinstance(i, slice) or self._buffers is not None:
            return self.buffers()[i]
        n = len(self)
        i = operator.index(i)
        if not -n <= i < n:
            raise IndexError("buffer index out of range")
        i %= n
        c = self.columns
        fixed = int(c.fixed[i])
        return Buffer(self.name(i), int(c.size[i]), int(c.start[i]), int(c.end[i]), int(c.align[i]),
                      None if fixed < 0 else fixed)

    def __iter__(self) -> Iterator[Buffer]:
        return iter(self.buffers())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (tuple, ColumnBuffers)):
            return self.buffers() == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.buffers())

    def __repr__(self) -> str:
        return f"ColumnBuffers({len(self)} buffers)"


@dataclasses.dataclass(frozen=True)
class Problem:
    """A set of buffers to place; capacity (bytes) is an optional hard limit. ``buffers`` is a
    tuple, or a ColumnBuffers (a CSV problem read by the compiled reader)."""

    buffers: Sequence[Buffer]
    capacity: Bytes | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.buffers, (tuple, ColumnBuffers)):
            object.__setattr__(self, "buffers", tuple(self.buffers))

    @property
    def horizon(self) -> int:
        """Number of op slots: one past the last end."""
        if isinstance(self.buffers, ColumnBuffers):
            return int(self.buffers.columns.end.max(initial=-1)) + 1
        return max((b.end for b in self.buffers), default=-1) + 1

    @property
    def total_size(self) -> Bytes:
        """What a no-reuse planner needs."""
        if isinstance(self.buffers, ColumnBuffers):
            return int(self.buffers.columns.size.sum())
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
    events.sort()  # by time, frees (negative) before allocs at one time
    load = best = 0
    for _, delta in events:
        load += delta
        best = max(best, load)
    return best


def align_up(value: int, alignment: int) -> int:
    return -(-value // alignment) * alignment


NAME_WIDTH = 48  # a tensor or op name in a table or picture (tflite2onnx's run past 200 characters)


def elide(text: str, width: int = NAME_WIDTH) -> str:
    """``text`` in at most ``width`` characters: a long name keeps its start and its end (where
    converted models put the distinguishing part) around ``...``."""
    if len(text) <= width:
        return text
    keep = max(width - 3, 2)
    return text[:(keep + 1) // 2] + "..." + text[len(text) - keep // 2:]


def elide_apart(texts: Sequence[str], width: int = NAME_WIDTH) -> list[str]:
    """``elide`` of each of ``texts`` (one table's column), wider where two different texts would
    read the same (names that differ only in the middle: two rows that looked like one tensor)."""
    while True:
        shown = [elide(t, width) for t in texts]
        first: dict[str, str] = {}
        if all(first.setdefault(s, t) == t for s, t in zip(shown, texts)):
            return shown
        width += 8


def fmt_bytes(n: Bytes) -> str:
    """65536 -> '65,536 B': how every message and summary writes a byte count."""
    return f"{n:,} B"


def arena_size(buffers: Sequence[Buffer], offsets: Sequence[Bytes]) -> Bytes:
    return max((o + b.size for b, o in zip(buffers, offsets)), default=0)


# --- The model-level view: what liveness hands to the plan file and codegen ---

KINDS = ("input", "activation", "output", "scratch")


SCHEDULES = ("graph", "memory")
EXECUTIONS = ("sequential", "pipelined")
SCRATCHES = ("none", "row", "full")
IOS = ("model", "int8")  # ModelOptions.io
IO_BUFFERS = ("arena", "caller")  # ModelOptions.io_buffers
KERNELS = ("reference", "cmsis_nn_dsp", "cmsis_nn_nodsp", "cmsis_nn_mve", "arena")  # ModelOptions.kernels (tflm_scratch)
ARENA_KERNELS = "arena"  # a .tflite run by arena's own runtime (model/tflite_lower.py), not by TFLM
# what the manifest's kernels:, tflm.kernels and the CLI's --kernels accept: one vocabulary. cmsis_nn is
# CMSIS-NN as the board's core runs it (tflm_scratch.kernels_for: DSP, no DSP or Helium), resolved
# to one of KERNELS before planning, so a plan names the variant its scratch buffers were sized for.
KERNEL_NAMES = ("reference", "cmsis_nn", *KERNELS[1:])
CLI_KINDS = ("text", "positive", "switch", "input_shape", "bitwidths_file", "op_scratch")  # Option.cli


def _same(value: Any) -> Any:
    return value


@dataclasses.dataclass(frozen=True)
class Option:
    """How one ModelOptions field is spelled outside Python: the one definition the CLI
    flags, the manifest's hints and checks, the JSON schemas and to_doc/from_doc derive from.

    flag: the command-line flag; a boolean option's flag flips its default ('--no-inplace').
    help: its --help text (argparse's, so '%(default)s' is the default); metavar, choices: argparse's.
    cli: how the flag's text becomes the value (cli.py turns each into argparse keywords):
      'text' (as written, or one of choices), 'positive' (an integer > 0), 'switch' (a
      boolean flag), 'input_shape' (repeatable NAME=D0,D1,...), 'bitwidths_file' (a JSON file).
    cli_rank: where the flag stands in --help (the order the flags were added in; ties: field order).
    hint: the manifest's fix when its schema refuses a value; None where the schema's own
      message says it (an enum lists its values).
    power_of_two: the manifest refuses a value that is not one.
    schema: the JSON Schema of the value in a manifest (schemas/manifest.schema.json,
      ``$defs.model_option_fields``); plan_schema: in a plan file's ``options``
      (schemas/plan.schema.json), looser where the CLI takes more (any dtype, any io_alignment).
    plan_required: every plan file carries it (the others came later: a plan without them
      takes the defaults).
    encode, decode: the field's value to its JSON value and back (default: as is).
    omit_default: to_doc leaves the field out at its default, so the plans, specs and cache keys
      made before it existed keep their bytes.
    """

    flag: str
    help: str
    cli: str = "text"
    metavar: str | None = None
    choices: tuple[str, ...] | None = None
    cli_rank: int = 100
    hint: str | None = None
    power_of_two: bool = False
    schema: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    plan_schema: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    plan_required: bool = False
    encode: Callable[[Any], Any] = _same
    decode: Callable[[Any], Any] = _same
    omit_default: bool = False

    def __post_init__(self) -> None:
        if self.cli not in CLI_KINDS:
            raise ValueError(f"option {self.flag}: cli {self.cli!r} is not one of {', '.join(CLI_KINDS)}")

    @property
    def dest(self) -> str:
        """argparse's attribute for the flag ('--no-inplace' -> 'no_inplace')."""
        return self.flag[2:].replace("-", "_")


def option(default: Any, **spec: Any) -> Any:
    """A ModelOptions field: its default and its Option (keywords as Option's)."""
    return dataclasses.field(default=default, metadata={"option": Option(**spec)})


def option_fields(cls: type[Any]) -> tuple[tuple[dataclasses.Field[Any], Option], ...]:
    """(field, Option) of every option of ``cls`` (ModelOptions or a subclass), in field order."""
    return tuple((f, f.metadata["option"]) for f in dataclasses.fields(cls))


def _bitwidths_doc(pairs: tuple[tuple[str, int], ...]) -> dict[str, int]:
    return dict(sorted(pairs))


def _shapes_doc(pairs: tuple[tuple[str, tuple[int, ...]], ...]) -> dict[str, list[int]]:
    return {name: list(shape) for name, shape in sorted(pairs)}


def _bitwidths_from(doc: Mapping[str, Any] | None) -> tuple[tuple[str, int], ...]:
    return tuple(sorted((str(k), int(v)) for k, v in (doc or {}).items()))


def _shapes_from(doc: Mapping[str, Any] | None) -> tuple[tuple[str, tuple[int, ...]], ...]:
    return tuple(sorted((str(k), tuple(int(n) for n in v)) for k, v in (doc or {}).items()))


_PATCH_STAGE: dict[str, Any] = {  # the manifest's form of one patched stage
    "type": "object", "additionalProperties": False, "required": ["split_after", "tiles"],
    "description": "one patched stage: the ops up to split_after (from the graph input, or the previous stage's "
                   "output) run in a grid of tiles",
    "properties": {"split_after": {"type": "string", "minLength": 1,
                                   "description": "the op (or the tensor it writes) the stage ends after"},
                   "tiles": {"description": "N (an N x N grid) or [rows, cols]",
                             "anyOf": [{"type": "integer", "minimum": 1, "maximum": 64},
                                       {"type": "array", "minItems": 2, "maxItems": 2,
                                        "items": {"type": "integer", "minimum": 1, "maximum": 64}}]}}}


def _patches_from(doc: Any) -> str:
    """The patches option as its one text form: off, auto, or 'NODE:RxC' per stage joined by ';'
    (from the manifest's {split_after, tiles} objects; a value of another shape is left for the
    option check to name)."""
    if isinstance(doc, dict):
        doc = [doc]
    if isinstance(doc, list):
        parts = []
        for d in doc:
            if not isinstance(d, dict):
                return str(d)
            t = d.get("tiles", 1)
            grid = f"{t[0]}x{t[1]}" if isinstance(t, list) and len(t) == 2 else f"{t}x{t}"
            parts.append(f"{d.get('split_after', '')}:{grid}")
        return ";".join(parts)
    return str(doc)


def _int_or_none(value: Any) -> int | None:
    return None if value is None else int(value)


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
    io: 'model' keeps the graph's inputs and outputs; 'int8' removes a quantized model's boundary
      QuantizeLinear/DequantizeLinear, so they are the integer tensors (lowering.integer_io).
    patches: 'off', 'auto', or stages 'NODE:RxC;...' run tile by tile (model/patches.py; its
      ``choose`` picks them under auto).
    io_buffers: 'arena' plans the graph inputs and outputs in the arena; 'caller' leaves them out,
      in buffers the application owns (never aliased with an arena tensor; ``problem`` skips them).
    kernels: the TFLM kernels a .tflite model runs on ('reference', or CMSIS-NN for a core with
      the DSP extension, without it, or with Helium): the scratch buffers they request are
      buffers of the plan, and their sizes differ (model/tflm_scratch.py); or 'arena': arena's own
      runtime runs it (model/tflite_lower.py: its plan is an arena plan, like an ONNX model's).
      No effect on ONNX.
    op_scratch: a .tflite operator index (as text) -> the bytes of each scratch buffer its kernel
      requests, in request order: for a kernel arena cannot size (a custom op; ``verify``
      measures them), in place of arena's rule for that operator.
    io_alignment: bytes, for the graph's inputs and outputs (the buffers a DMA or cache
      maintenance touches, e.g. 32 for the Cortex-M7 cache line): their offsets and sizes are
      multiples of it; None: the alignment.
    weights: 'flash' (read in place), an external flash of the board (``external_flash``: a
      QSPI NOR read memory-mapped, in place), or a RAM region of the board: linked into flash and
      copied there once at start-up (a .data-like section), counted against that region's budget.
    allow_external_data_outside: read external-data files outside the model's folder (a
      model from elsewhere could otherwise pull any file into the firmware's flash).

    The one definition of the options: each field carries its Option (flag, hints, schemas),
    and ``to_doc``/``from_doc`` give the JSON form the plan file, the manifest (same keys)
    and the build's specs share. The field order is the JSON's (plan files keep their bytes).
    An option added here reaches the CLI, the manifest and the plan file; the two schemas are
    static files that tests/core/test_options.py (``python3 -m arena_tool.target.option_schemas``) keeps equal.
    """

    alignment: int = option(
        16, flag="--alignment", cli="positive", cli_rank=11, power_of_two=True,
        help="offset and size alignment in bytes (default %(default)s)",
        hint="alignment is in bytes, a power of two such as 4, 8 or 16",
        schema={"type": "integer", "minimum": 1, "maximum": 1048576,
                "description": "bytes, a power of two; every tensor offset is a multiple of it"},
        plan_schema={"type": "integer", "minimum": 1}, plan_required=True, decode=int)
    activation_dtype: str | None = option(
        None, flag="--activation-dtype", metavar="DTYPE", cli_rank=1,
        help="plan every activation as this element type, e.g. int8",
        schema={"description": "element type of every activation; null keeps the model's",
                "enum": [None, "float32", "float16", "bfloat16", "int8", "uint8", "int16", "uint16", "int32"]},
        plan_schema={"type": ["string", "null"]}, plan_required=True)
    bitwidths: tuple[tuple[str, int], ...] = option(
        (), flag="--bitwidths", cli="bitwidths_file", metavar="FILE.json", cli_rank=2,
        help="per-tensor bits per element: {\"tensor\": 4, ...}",
        hint="map tensor names to bits per element, e.g. {conv1_out: 4}",
        schema={"description": "tensor name -> bits per element, overriding activation_dtype for those tensors",
                "type": "object", "additionalProperties": {"type": "integer", "minimum": 1, "maximum": 64}},
        plan_schema={"type": "object", "additionalProperties": {"type": "integer", "minimum": 1, "maximum": 64}},
        plan_required=True, encode=_bitwidths_doc, decode=_bitwidths_from)
    inplace: bool = option(
        True, flag="--no-inplace", cli="switch", cli_rank=3, help="no in-place ops and no zero-copy views",
        hint="write true or false",
        schema={"type": "boolean", "description": "element-wise ops may overwrite an input that dies there"},
        plan_schema={"type": "boolean"}, plan_required=True)
    inplace_depthwise: bool = option(
        True, flag="--no-inplace-depthwise", cli="switch", cli_rank=4,
        help="depthwise Convs never write over their input (for a runtime without that kernel)",
        hint="write true or false",
        schema={"type": "boolean", "description": "with inplace, a depthwise Conv may overwrite its input that dies "
                "there (one-channel workspace; arena's runtime supports it)"},
        plan_schema={"type": "boolean"})
    scratch: str = option(
        "none", flag="--scratch", choices=SCRATCHES, cli_rank=10,
        help="Conv im2col workspace planned in the arena (default %(default)s)",
        schema={"enum": list(SCRATCHES), "description": "Conv im2col workspace: none, row or full"},
        plan_schema={"enum": list(SCRATCHES)}, plan_required=True)
    schedule: str = option(
        "graph", flag="--schedule", choices=SCHEDULES, cli_rank=9,
        help="op order: graph (the model's, default) or memory (the smallest peak of live bytes)",
        hint="write graph (the model's op order) or memory (the order with the smallest peak)",
        schema={"enum": list(SCHEDULES),
                "description": "op order: the model's (graph) or the one with the smallest peak of live bytes (memory)"},
        plan_schema={"enum": list(SCHEDULES)})
    input_shapes: tuple[tuple[str, tuple[int, ...]], ...] = option(
        (), flag="--input-shape", cli="input_shape", metavar="NAME=D0,D1,...", cli_rank=0,
        help="pin a graph input's shape (repeatable), e.g. data=1,3,224,224",
        hint="give each input its static shape as positive integers, e.g. {input: [1, 1, 49, 10]}",
        schema={"description": "graph input name -> static shape", "type": "object",
                "additionalProperties": {"type": "array", "minItems": 1,
                                         "items": {"type": "integer", "minimum": 1, "maximum": 2147483647},
                                         "x-expected": "a list of positive dimensions like [1, 1, 49, 10]"}},
        plan_schema={"type": "object",
                     "additionalProperties": {"type": "array", "items": {"type": "integer", "minimum": 1}}},
        plan_required=True, encode=_shapes_doc, decode=_shapes_from)
    execution: str = option(
        "sequential", flag="--execution", choices=EXECUTIONS, cli_rank=5,
        help="pipelined: op N+1 may run while op N does (no in-place, double-buffered ranges)",
        hint="write sequential (one op at a time) or pipelined (op N+1 may overlap op N)",
        schema={"enum": list(EXECUTIONS), "description": "sequential: one op at a time; pipelined: op N+1 may run "
                "while op N still runs (no in-place, live ranges widened by one op each way)"},
        plan_schema={"enum": list(EXECUTIONS)})
    io_alignment: int | None = option(
        None, flag="--io-alignment", cli="positive", metavar="BYTES", cli_rank=6, power_of_two=True,
        help="offset/size alignment of the graph inputs and outputs (DMA, cache lines), e.g. 32",
        hint="write a power of two in bytes, e.g. 32 (the Cortex-M7 cache line)",
        schema={"type": ["integer", "null"], "minimum": 1, "maximum": 4096,
                "description": "bytes, a power of two: offset and size alignment of the graph inputs and outputs "
                "(DMA, cache lines; 32 on a Cortex-M7)"},
        plan_schema={"type": ["integer", "null"], "minimum": 1}, decode=_int_or_none)
    weights: str = option(
        "flash", flag="--weights", metavar="REGION", cli_rank=7,
        help="flash (default), or a RAM region of the board the weights are copied to at start-up",
        hint="write flash, a RAM region name of the board the weights are copied to at start-up, or the "
             "name of one of its external_flash",
        schema={"type": "string", "minLength": 1,
                "description": "flash (the weights are read in place), an external flash of the board "
                "(its external_flash name, like QSPI: read in place from there, checked against its length), "
                "or a RAM region of the board: linked into "
                "flash and copied there once at start-up, counted against that region's budget next to the arena",
                "x-expected": "flash, an external_flash name or a RAM region name of the board"},
        plan_schema={"type": "string", "minLength": 1,
                     "description": "flash, an external flash of the board, or the RAM region the weights are "
                     "copied to at start-up"},
        decode=str)
    allow_external_data_outside: bool = option(
        False, flag="--allow-external-data-outside", cli="switch", cli_rank=8,
        help="read external-data files outside the model's folder (refused by default)",
        hint="write true to read external data outside the model's folder",
        schema={"type": "boolean",
                "description": "read external-data files outside the model's folder (off: such a model is refused)"},
        plan_schema={"type": "boolean"})
    io: str = option(
        "model", flag="--io", choices=IOS, cli_rank=12, omit_default=True,
        help="model: the graph's own inputs and outputs; int8: a quantized model's boundary "
             "QuantizeLinear/DequantizeLinear removed, the firmware takes and gives the integers",
        schema={"enum": list(IOS), "description": "model: the graph's inputs and outputs as they are; int8: a "
                "quantized model's boundary QuantizeLinear/DequantizeLinear are removed, so the firmware's inputs "
                "and outputs are the integer tensors (the header gives their scale and zero point)"},
        plan_schema={"enum": list(IOS)})
    io_buffers: str = option(
        "arena", flag="--io-buffers", choices=IO_BUFFERS, cli_rank=13, omit_default=True,
        help="arena: the graph inputs and outputs live in the arena (default); caller: in buffers the "
             "application owns, outside it (arena_run_io takes their pointers)",
        schema={"enum": list(IO_BUFFERS), "description": "arena: graph inputs and outputs are planned in the arena; "
                "caller: they live in buffers the application owns (a camera DMA buffer), outside the arena"},
        plan_schema={"enum": list(IO_BUFFERS)})
    kernels: str = option(
        "reference", flag="--kernels", choices=KERNEL_NAMES, cli_rank=14, omit_default=True,
        help="the TFLM kernels a .tflite model runs on, whose scratch buffers the plan holds: reference "
             "(default, the host interpreter's), cmsis_nn (the board's core picks the variant: needs a board), "
             "cmsis_nn_dsp (Cortex-M4/M7/M33), cmsis_nn_nodsp (M0/M3), cmsis_nn_mve (M55/M85); or arena: arena's "
             "own runtime runs it (no TFLM)",
        schema={"enum": list(KERNEL_NAMES), "description": "the TFLite Micro kernels a .tflite model runs on: their "
                "scratch buffers (RequestScratchBufferInArena) are planned, and their sizes depend on the kernels: "
                "reference, or CMSIS-NN: cmsis_nn for the board's core, or the variant for a core with the DSP "
                "extension, without it, or with Helium (MVE); or arena: "
                "arena's own runtime runs the model, planned like an ONNX model (in-place, scheduling)"},
        plan_schema={"enum": list(KERNELS)})
    op_scratch: tuple[tuple[str, tuple[int, ...]], ...] = option(
        (), flag="--op-scratch", cli="op_scratch", metavar="OP=BYTES,...", cli_rank=15, omit_default=True,
        help="a .tflite operator's kernel scratch requests in bytes, for a kernel arena cannot size (repeatable; "
             "arena-tool verify measures them), e.g. 3=1024,64",
        hint="map a .tflite operator index (quoted) to the bytes of each scratch buffer it requests, e.g. {'3': [1024]}",
        schema={"description": "a .tflite operator index -> the bytes of each scratch buffer its kernel requests "
                "(RequestScratchBufferInArena), for kernels arena cannot size (custom ops): arena-tool verify measures "
                "them", "type": "object", "propertyNames": {"pattern": "^[0-9]+(?!\\n)$"},
                "additionalProperties": {"type": "array", "items": {"type": "integer", "minimum": 1,
                                                                      "maximum": 2147483647},
                                         "x-expected": "a list of byte counts like [1024, 64]"}},
        plan_schema={"type": "object", "additionalProperties": {"type": "array",
                                                                "items": {"type": "integer", "minimum": 1}}},
        encode=_shapes_doc, decode=_shapes_from)
    patches: str = option(
        "off", flag="--patches", metavar="off|auto|NODE:RxC[;NODE:RxC]", cli_rank=16, omit_default=True,
        help="patch-based inference (MCUNetV2): off (default), auto (the stages and tile grids with the "
             "smallest peak, MACs at most 20 %% above untiled), or NODE:RxC, a stage ending after op NODE "
             "run in a rows x cols grid of tiles (';' between stages)",
        hint="write off, auto, or {split_after: NODE, tiles: N} (an N x N grid; tiles: [rows, cols])",
        schema={"description": "patch-based inference: off; auto (stages and tile grids chosen for the smallest "
                "peak, MACs at most 20 % above untiled); or a stage {split_after: op name, tiles: N or [rows, cols]}, "
                "or a list of them (each starts where the previous ends)",
                "anyOf": [{"enum": ["off", "auto"]}, _PATCH_STAGE,
                          {"type": "array", "minItems": 1, "items": _PATCH_STAGE},
                          {"type": "string", "pattern": "^.+:[0-9]+(x[0-9]+)?(;.+:[0-9]+(x[0-9]+)?)*(?!\\n)$"}],
                "x-expected": "off, auto, or {split_after: NODE, tiles: N} (N >= 1, or tiles: [rows, cols]), or a list "
                              "of those"},
        plan_schema={"type": "string", "minLength": 1}, encode=_same, decode=_patches_from)

    def to_doc(self) -> dict[str, Any]:
        """Every option as JSON values, maps sorted by key (an omit_default one only when set)."""
        return {f.name: o.encode(getattr(self, f.name)) for f, o in option_fields(type(self))
                if not (o.omit_default and getattr(self, f.name) == f.default)}

    @classmethod
    def from_doc(cls, doc: Mapping[str, Any]) -> "ModelOptions":
        """The inverse of to_doc; a missing key takes its default (older plan files)."""
        return cls(**{f.name: o.decode(doc[f.name]) for f, o in option_fields(cls) if f.name in doc})


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
    alias_offset: bytes into its root where this one starts: 0 but for a concat's input written
      in place at its position of the concat's output (liveness: a concat view).
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
    alias_offset: int = 0


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

    def caller_owned(self, t: Tensor) -> bool:
        """A graph input or output the application owns (io_buffers: caller): not in the arena."""
        return self.options.io_buffers == "caller" and t.kind in ("input", "output")

    def without_aliases(self) -> "ModelProblem":
        """The same model with every tensor in a buffer of its own."""
        return dataclasses.replace(self, tensors=tuple(dataclasses.replace(t, alias_of=None, alias_offset=0)
                                                             for t in self.tensors))

    def problem(self, capacity: int | None = None) -> Problem:
        """One Buffer per root tensor (alias_of None), in tensors order.

        A root's live range is the union of its group's ranges; its size the
        largest end (alias_offset + size) in the group.
        """
        groups: dict[str, list[Tensor]] = {}
        for t in self.tensors:
            groups.setdefault(t.alias_of or t.name, []).append(t)
        buffers = []
        for t in self.tensors:
            if t.alias_of is not None or self.caller_owned(t):
                continue
            g = groups[t.name]
            buffers.append(Buffer(
                name=t.name,
                size=max(m.alias_offset + m.size for m in g),
                start=min(m.first_op for m in g),
                end=max(m.last_op for m in g),
                alignment=max(m.alignment or self.options.alignment for m in g),
            ))
        return Problem(tuple(buffers), capacity)
