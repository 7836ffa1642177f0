"""A TensorFlow Lite flatbuffer -> ModelProblem, under TensorFlow Lite Micro's rules.

Detected by content: a TFLite flatbuffer carries the file identifier ``TFL3`` at
bytes 4..8. Parsed with the flatbuffer object API of the tflite-micro wheel
(``schema_py_generated``: ``ModelT`` reads and, in ``tflite_write``, packs).

What TFLM plans in its arena ("head") and what arena plans here are the same set:
every tensor of the one subgraph that has no buffer data (weights, in flash, are
counted in ``weights_bytes``), is not a variable (variables are persistent: TFLM
keeps them in its tail; listed in ``TfliteProblem.variables``) and has bytes
(a zero-element tensor is never allocated). Sizes are elements x element size of
``shape``, rounded up to the alignment (TFLM's MicroArenaBufferAlignment is 16).

Live ranges are TFLM's allocation scopes (micro_allocation_info.cc,
MarkAllocationLifetimes), inclusive: the subgraph's inputs (and outputs) are
created at scope 0, operator k of the schedule runs at scope k + 1, where its
outputs are created and its inputs and outputs used, so an op's inputs and outputs
are live together; the subgraph's outputs are used up to the last scope. So for a
.tflite model ``first_op``/``last_op`` index scopes: 0 is "the subgraph's inputs",
``schedule[k]`` is scope k + 1. No aliasing: TFLM never shares a tensor's bytes
(``inplace`` has no effect). Tensors are listed in descending flatbuffer index order:
TFLM adds them to its GreedyMemoryPlanner by index, which fills its size-sorted array
from the tail, so its stable sort breaks ties of equal size by descending index; in
that order arena's ``greedy_size`` reproduces TFLM's own head exactly (vww_96 int8
73,728 B; ascending order would give 64,512 B).

Refused, each with one ArenaError naming the file (exit 2): a truncated or corrupt
flatbuffer, a wrong file identifier, control flow (WHILE, IF, CALL_ONCE) or more
than one subgraph, dynamic shapes (a -1 in ``shape_signature`` other than a batch
dimension 0 that ``shape`` pins to 1, which is how TFLM runs every converted model),
string / resource / variant tensors, a hybrid model (float activations into an op
with int8 weights, which TFLM refuses), an operator order that reads a tensor before
any operator writes it (TFLM does not check its order; arena does).
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import os
from typing import Any, NoReturn, Sequence

import numpy as np

from arena_tool.core import dtypes
from arena_tool.core.errors import ArenaError, require_regular
from arena_tool.core.problem import ModelOptions, ModelProblem, Quant, Step, Tensor, align_up
from arena_tool.model import tflm_scratch

IDENTIFIER = b"TFL3"
KIND = "tflite"
DOMAIN = "tflite"  # Step.domain of a TFLite builtin (or custom) operator
TFLM_ALIGNMENT = 16  # tflite::MicroArenaBufferAlignment()
CONTROL_FLOW = ("WHILE", "IF", "CALL_ONCE")
# Ops with weights that TFLM refuses when their activations are float and weights int8/uint8/int4.
HYBRID_OPS = frozenset({"CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "TRANSPOSE_CONV", "BATCH_MATMUL",
                        "SVDF", "UNIDIRECTIONAL_SEQUENCE_LSTM", "LSTM", "UNIDIRECTIONAL_SEQUENCE_RNN", "RNN",
                        "BIDIRECTIONAL_SEQUENCE_LSTM", "BIDIRECTIONAL_SEQUENCE_RNN"})
INT_WEIGHTS = frozenset({"int8", "uint8", "int4", "int2"})
# Per tensor index: arena dtype name, bytes per element (None: packed int4/int2), shape, element count.
TensorInfo = tuple[str, int | None, tuple[int, ...], int]

# TensorType name (schema) -> arena's element type name (dtypes) and bytes per element in TFLM's
# arena (TfLiteTypeSizeOf); int4/int2 exist only as packed weights.
_TYPES = {
    "FLOAT32": ("float32", 4), "FLOAT16": ("float16", 2), "BFLOAT16": ("bfloat16", 2), "FLOAT64": ("float64", 8),
    "INT8": ("int8", 1), "UINT8": ("uint8", 1), "INT16": ("int16", 2), "UINT16": ("uint16", 2),
    "INT32": ("int32", 4), "UINT32": ("uint32", 4), "INT64": ("int64", 8), "UINT64": ("uint64", 8),
    "BOOL": ("bool", 1), "COMPLEX64": ("complex64", 8), "COMPLEX128": ("complex128", 16),
    "INT4": ("int4", None), "INT2": ("int2", None),
}
_NO_SIZE = {"STRING": "a string tensor, which has no static size",
            "RESOURCE": "a resource tensor (resource variables need CALL_ONCE and a second subgraph)",
            "VARIANT": "a variant tensor (TensorFlow lists), which TFLM cannot plan"}


def schema() -> Any:
    """The tflite-micro wheel's flatbuffer object API (tflite_micro...schema_py_generated)."""
    try:
        from tflite_micro.tensorflow.lite.micro.python import schema_py_generated as fb
    except ImportError as e:  # pragma: no cover - tflite-micro is a dependency
        raise ArenaError("the tflite-micro package is not installed", hint="pip install tflite-micro") from e
    return fb


def _enum_names(cls: Any) -> dict[int, str]:
    return {v: k for k, v in vars(cls).items() if not k.startswith("_") and isinstance(v, int)}


def op_names() -> dict[int, str]:
    return _enum_names(schema().BuiltinOperator)


def type_names() -> dict[int, str]:
    return _enum_names(schema().TensorType)


def is_tflite(path: str) -> bool:
    """A TFLite flatbuffer by content (TFL3 at bytes 4..8); a .tflite file name also counts, so a
    .tflite without the identifier gets the TFLite reader's error rather than ONNX's."""
    if not os.path.isfile(path):  # a FIFO's open() would wait for a writer: the reader refuses it
        return str(path).lower().endswith(".tflite")
    try:
        with open(path, "rb") as f:
            head = f.read(8)
    except OSError:
        return str(path).lower().endswith(".tflite")
    return head[4:8] == IDENTIFIER or str(path).lower().endswith(".tflite")


def read_bytes(path: str) -> bytes:
    require_regular(path, "the model")
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError as e:
        raise ArenaError("model not found", file=path, hint="check the path") from e
    except OSError as e:
        raise ArenaError(f"cannot read the model: {e.strerror}", file=path) from e


_SHARED: dict[bytes, Any] = {}  # the models parse() last unpacked, by their bytes
SHARED_MODELS = 2  # verify reads a model and its planned copy, each about eight times


def parse(data: bytes, path: str) -> Any:
    """bytes -> schema ModelT, shared by every caller that parses the same bytes: read it, never change
    it (``unpack`` gives a model of one's own). Unpacking is most of the cost of a big model (100,000
    tensors: 5 s), and verify needs the model and its planned copy in several places."""
    key = bytes(data)
    model = _SHARED.get(key)
    if model is None:
        model = unpack(key, path)
        while len(_SHARED) >= SHARED_MODELS:
            del _SHARED[next(iter(_SHARED))]
        _SHARED[key] = model
    return model


def unpack(data: bytes, path: str) -> Any:
    """bytes -> a new schema ModelT the caller may change; truncated, corrupt or foreign files are one
    ArenaError."""
    fb = schema()
    if len(data) < 8:
        raise ArenaError(f"truncated TFLite file: {len(data)} bytes, not even a flatbuffer header", file=path,
                         hint="the file was cut short; copy or convert the model again")
    if data[4:8] != IDENTIFIER:
        raise ArenaError(f"not a TFLite flatbuffer: file identifier {bytes(data[4:8])!r}, expected b'TFL3' at "
                         f"bytes 4..8", file=path,
                         hint="give a .tflite model made by the TFLite converter (or an ONNX model)")
    try:
        root = fb.Model.GetRootAsModel(data, 0)
        model = fb.ModelT.InitFromObj(root)
    except Exception as e:  # noqa: BLE001 - flatbuffers raises struct.error, IndexError, ValueError ...
        raise ArenaError(f"truncated or corrupt TFLite flatbuffer ({type(e).__name__}: {e}); {len(data):,} bytes",
                         file=path, hint="the file was cut short or damaged; copy or convert the model again") from e
    for i, b in enumerate(model.buffers or []):
        if b.offset and b.offset > 1 and b.offset + b.size > len(data):
            raise ArenaError(f"truncated TFLite file: buffer {i} ends at byte {b.offset + b.size:,}, the file has "
                             f"{len(data):,}", file=path, hint="the file was cut short; copy or convert it again")
    if not model.subgraphs:
        raise ArenaError("the TFLite model has no subgraph", file=path, hint="convert the model again")
    _check_indices(model, path)
    return model


MAX_RANK = 6  # TFLM's RuntimeShape::kMaxSmallSize: its kernels copy dimensions into 6 fixed slots
METADATA_NAME = "OfflineMemoryAllocation"


def _check_indices(model: Any, path: str) -> None:
    """Every index and count TFLM uses unchecked (it indexes flatbuffer vectors as they are, so a bad
    one is a crash in the interpreter, not an error): operator codes, tensors of operators and of
    the subgraph, tensor buffers, metadata buffers, ranks, and one offline plan at most."""
    def bad(msg: str) -> NoReturn:
        raise ArenaError(msg, file=path, hint="the file was edited or damaged; convert the model again")

    n_codes, n_buffers = len(model.operatorCodes or []), len(model.buffers or [])
    for s, sg in enumerate(model.subgraphs):
        tensors = sg.tensors or []
        n = len(tensors)
        for i, t in enumerate(tensors):
            if not 0 <= int(t.buffer) < max(n_buffers, 1):
                bad(f"tensor {i} of subgraph {s} uses buffer {t.buffer}; the model has {n_buffers} buffers")
            rank = len(t.shape) if t.shape is not None else 0
            if rank > MAX_RANK:
                bad(f"tensor {i} of subgraph {s} has {rank} dimensions; TFLM's kernels take at most {MAX_RANK}")
        for what, vector in (("input", sg.inputs), ("output", sg.outputs)):
            for x in (vector if vector is not None else []):
                if not 0 <= int(x) < n:
                    bad(f"subgraph {s} {what} is tensor {int(x)}; the subgraph has {n} tensors (0..{n - 1})")
        if s == 0 and (sg.outputs is None or not len(sg.outputs)):
            bad("the subgraph has no outputs, so nothing it computes is kept")
        for k, op in enumerate(sg.operators or []):
            if not 0 <= int(op.opcodeIndex) < n_codes:
                bad(f"operator {k} of subgraph {s} has opcode index {op.opcodeIndex}; the model has {n_codes} "
                    f"operator codes")
            for what, vector, least in (("input", op.inputs, -1), ("output", op.outputs, 0),
                                        ("intermediate", op.intermediates, 0)):
                for x in (vector if vector is not None else []):
                    if not least <= int(x) < n:
                        bad(f"operator {k} of subgraph {s} has {what} tensor {int(x)}; the subgraph has {n} "
                            f"tensors (0..{n - 1})")
    entries = 0
    for md in model.metadata or []:
        if not 0 <= int(md.buffer) < n_buffers:
            bad(f"metadata {_text(md.name)!r} uses buffer {md.buffer}; the model has {n_buffers} buffers")
        if _text(md.name) == METADATA_NAME:
            entries += 1
            data = model.buffers[md.buffer].data
            words = len(data) // 4 if data is not None else 0
            if entries > 1:
                bad(f"{entries} {METADATA_NAME} metadata entries; TFLM reads one offline plan")
            if words < 3 or words < 3 + int(np.frombuffer(bytes(np.asarray(data[8:12], np.uint8)), "<i4")[0]):
                bad(f"the {METADATA_NAME} buffer ({words * 4} B) is shorter than its header says")


def offline_offsets(model: Any) -> list[int] | None:
    """The offsets of the model's OfflineMemoryAllocation entry (checked by parse), or None."""
    for md in model.metadata or []:
        if _text(md.name) == METADATA_NAME:
            words = np.frombuffer(np.asarray(model.buffers[md.buffer].data, dtype=np.uint8).tobytes(), dtype="<i4")
            return [int(w) for w in words[3:3 + int(words[2])]]
    return None


def builtin_name(model: Any, op: Any) -> str:
    code = model.operatorCodes[op.opcodeIndex]
    c = max(code.builtinCode, code.deprecatedBuiltinCode)
    name = op_names().get(c, f"BUILTIN_{c}")
    if name == "CUSTOM":
        custom = code.customCode.decode() if isinstance(code.customCode, bytes) else code.customCode
        return f"CUSTOM:{custom}"
    return name


def _text(s: Any) -> str:
    if s is None:
        return ""
    return s.decode("utf-8", "replace") if isinstance(s, (bytes, bytearray)) else str(s)


def has_data(model: Any, buffer_index: int) -> bool:
    """A tensor with buffer data is a weight (TFLM points at the flatbuffer; never planned)."""
    if not buffer_index or buffer_index >= len(model.buffers or []):
        return False
    b = model.buffers[buffer_index]
    return (b.data is not None and len(b.data) > 0) or bool(b.offset and b.offset > 1)


def buffer_bytes(model: Any, buffer_index: int) -> int:
    b = model.buffers[buffer_index]
    return len(b.data) if b.data is not None and len(b.data) else int(b.size or 0)


def unique_names(tensors: Sequence[Any]) -> list[str]:
    """Flatbuffer tensor names, made unique: an empty name is 'tensor<i>', a repeated one '<name>#<i>'."""
    seen: set[str] = set()
    out = []
    for i, t in enumerate(tensors):
        base = _text(t.name) or f"tensor{i}"
        name = base if base not in seen else f"{base}#{i}"
        while name in seen:
            name += "_"
        seen.add(name)
        out.append(name)
    return out


@dataclasses.dataclass(frozen=True)
class TfliteProblem(ModelProblem):
    """A ModelProblem of a .tflite model, with what writing it back needs.

    kind: 'tflite' (the plan file's model_kind).
    names: unique name of every flatbuffer tensor of subgraph 0, by tensor index.
    order: the flatbuffer operator indices in schedule order (a permutation).
    variables: variable tensors (persistent, TFLM's tail, never in the arena).
    unreferenced: tensors TFLM allocates although no operator, input or output uses
      them (TFLM gives them an empty lifetime); the writer places them at offset 0.
    subgraph_tensors: the tensor count over all subgraphs (the offline plan's N).
    unknown_scratch: operators whose scratch requests arena cannot size before running them
      (tflm_scratch.requests is None): a plan of this problem omits their bytes.
    """

    kind: str = KIND
    names: tuple[str, ...] = ()
    order: tuple[int, ...] = ()
    variables: tuple[str, ...] = ()
    unreferenced: tuple[str, ...] = ()
    subgraph_tensors: int = 0
    unknown_scratch: tuple[str, ...] = ()
    unknown_ops: tuple[int, ...] = ()  # the schedule indices of unknown_scratch's operators

    def index_of(self) -> dict[str, int]:
        return {n: i for i, n in enumerate(self.names)}


def model_problem(path: str, options: ModelOptions, order: Sequence[int] | None = None) -> TfliteProblem:
    """Load the .tflite at ``path`` and reduce it to a TfliteProblem under ``options``.

    order: operator indices in the order to run them (a topological permutation of the
    model's operators); default the model's own order.
    """
    data = read_bytes(path)
    try:
        return problem_from_bytes(data, path, options, order)
    except ArenaError as e:
        raise e.located(file=path)


def problem_from_bytes(data: bytes, path: str, options: ModelOptions,
                       order: Sequence[int] | None = None) -> TfliteProblem:
    model = parse(data, path)
    return _Builder(model, data, path, options).build(order)


class _Builder:
    def __init__(self, model: Any, data: bytes, path: str, options: ModelOptions) -> None:
        self.m = model
        self.data = data
        self.path = path
        self.opt = options
        self.types = type_names()

    def fail(self, msg: str, hint: str, field: str | None = None) -> NoReturn:
        raise ArenaError(msg, file=self.path, hint=hint, field=field)

    # --- checks of the whole model ---

    def _check_structure(self) -> None:
        m = self.m
        for s, sg in enumerate(m.subgraphs):
            for k, op in enumerate(sg.operators or []):
                name = builtin_name(m, op)
                if name in CONTROL_FLOW:
                    self.fail(f"control flow: operator {k} of subgraph {s} is {name}, which runs other subgraphs "
                              f"({len(m.subgraphs)} in this model); arena plans one subgraph",
                              "convert the model without control flow (unroll loops, fold conditions)")
        if len(m.subgraphs) != 1:
            self.fail(f"{len(m.subgraphs)} subgraphs; arena plans models of exactly one subgraph",
                      "convert the model to a single subgraph (no control flow, no signatures of their own)")
        if self.opt.alignment % TFLM_ALIGNMENT:
            self.fail(f"alignment {self.opt.alignment} is not a multiple of TFLM's {TFLM_ALIGNMENT}-byte buffer "
                      f"alignment", f"use --alignment {TFLM_ALIGNMENT} (the default) for a .tflite model",
                      field="alignment")
        if self.opt.scratch != "none":
            self.fail(f"scratch {self.opt.scratch!r}: TFLM's kernels request their own scratch buffers, which "
                      f"arena plans from the kernels option", "use --scratch none (and --kernels) for a .tflite model",
                      field="scratch")
        if self.opt.input_shapes:
            self.fail("input shapes of a .tflite model are fixed in the flatbuffer",
                      "drop --input-shape (or convert the model at the shape you want)", field="input_shapes")

    def _dtype(self, i: int, t: Any, what: str) -> tuple[str, int | None]:
        tname = self.types.get(t.type, f"type {t.type}")
        if tname in _NO_SIZE:
            self.fail(f"tensor {what} is {_NO_SIZE[tname]}", "arena plans tensors of static size: numbers and bools")
        if tname not in _TYPES:
            self.fail(f"tensor {what} has element type {tname}, unknown to arena",
                      f"arena knows {', '.join(sorted(_TYPES))}")
        return _TYPES[tname]

    def _shape(self, i: int, t: Any, what: str) -> tuple[int, ...]:
        shape = tuple(int(d) for d in (t.shape if t.shape is not None else ()))
        sig = tuple(int(d) for d in t.shapeSignature) if t.shapeSignature is not None else None
        if any(d < 0 for d in shape):
            self.fail(f"tensor {what} has a dynamic shape {list(shape)}", "convert the model with static shapes")
        if sig is not None and len(sig):
            dyn = [k for k, d in enumerate(sig) if d < 0 and not (k == 0 and len(shape) and shape[0] == 1)]
            if dyn:
                self.fail(f"dynamic shape: tensor {what} has shape_signature {list(sig)} (dimension "
                          f"{', '.join(map(str, dyn))} unknown until run time); TFLM needs static shapes",
                          "convert the model with fixed input shapes (only a batch dimension of 1 may be -1)")
        return shape

    # --- the problem ---

    def build(self, order: Sequence[int] | None) -> TfliteProblem:
        self._check_structure()
        m, sg = self.m, self.m.subgraphs[0]
        tensors = sg.tensors or []
        ops = sg.operators or []
        names = unique_names(tensors)
        n_ops = len(ops)
        if not n_ops:
            self.fail("the subgraph has no operators", "convert a model that computes something")
        if order is None:
            order = tuple(range(n_ops))
        order = tuple(int(k) for k in order)
        if sorted(order) != list(range(n_ops)):
            self.fail(f"operator order {list(order)} is not a permutation of the model's {n_ops} operators "
                      f"(0..{n_ops - 1})", "give every operator index exactly once", field="schedule")
        inputs = [int(x) for x in (sg.inputs if sg.inputs is not None else [])]
        outputs = [int(x) for x in (sg.outputs if sg.outputs is not None else [])]
        weight = [has_data(m, t.buffer) for t in tensors]
        variable = [bool(t.isVariable) for t in tensors]
        op_type = {k: builtin_name(m, ops[k]) for k in range(n_ops)}

        info: dict[int, TensorInfo] = {}
        for i, t in enumerate(tensors):
            what = f"{i} ({names[i]})"
            dtype, esize = self._dtype(i, t, what)
            shape = self._shape(i, t, what)
            elements = math.prod(shape)
            if esize is None and not weight[i] and elements:
                self.fail(f"tensor {what} is {dtype} but not a weight; TFLM keeps {dtype} only as packed weights",
                          "quantize activations to int8 or int16")
            info[i] = (dtype, esize, shape, elements)
            dtypes.check_tensor_bytes(names[i], elements * (esize or 1), self.path)
            self._check_quant(t, what, shape)

        self._check_hybrid(ops, op_type, tensors, weight, info, names)

        # TFLM's lifetimes (MarkAllocationLifetimes), scope 0 = the subgraph's inputs.
        first: dict[int, int] = {}
        last: dict[int, int] = {}
        for x in inputs + outputs:
            first[x] = last[x] = 0
        written_by: dict[int, int] = {}
        variables_seen: list[int] = []
        for s, k in enumerate(order, start=1):
            op = ops[k]
            outs = [int(x) for x in (op.outputs if op.outputs is not None else [])]
            ins = [int(x) for x in (op.inputs if op.inputs is not None else [])]
            for x in ins:
                if x < 0 or weight[x] or variable[x] or x in inputs:
                    continue
                if x not in written_by:
                    produced = [j for j in range(n_ops) if ops[j].outputs is not None and x in [int(y) for y in ops[j].outputs]]
                    where = (f"operator {produced[0]} ({op_type[produced[0]]}) writes it later in this order"
                             if produced else "no operator writes it and it is not a subgraph input")
                    self.fail(f"operator {k} ({op_type[k]}) reads tensor {names[x]} before it exists: {where}",
                              "the operators must be in a topological order (each tensor written before it is "
                              "read); TFLM does not check this and would plan the tensor wrongly",
                              field="schedule" if order != tuple(range(n_ops)) else None)
            for x in outs:
                if x in written_by:
                    self.fail(f"tensor {names[x]} is written by operators {written_by[x]} and {k}",
                              "each tensor must have one writer")
                if x in inputs:
                    self.fail(f"operator {k} ({op_type[k]}) writes the subgraph input {names[x]}",
                              "a subgraph input must not be an operator output")
                written_by[x] = k
                first[x] = last[x] = s
            for x in ins:
                if x >= 0:
                    last[x] = s
            for x in outs:
                last[x] = s
            if any(x >= 0 and variable[x] for x in ins + outs):
                variables_seen.append(k)
        end = n_ops
        for x in outputs:
            last[x] = end
        self._check_stateful_order(order, variables_seen)

        a = self.opt.alignment
        bitwidths = dict(self.opt.bitwidths)
        for name in sorted(bitwidths):
            if name not in names:
                self.fail(f"no tensor {name!r} in the model", "bitwidth names must be tensor names of the model",
                          field=f"bitwidths.{name}")
        referenced = set(first) | {x for op in ops for x in (op.inputs if op.inputs is not None else []) if x >= 0}
        out_tensors: list[Tensor] = []
        unreferenced: list[str] = []
        for i, t in enumerate(tensors):
            dtype, esize, shape, elements = info[i]
            if weight[i] or variable[i] or elements == 0:
                continue
            if i not in referenced:
                unreferenced.append(names[i])
                continue
            run_dtype = dtype
            if names[i] in bitwidths:
                run_dtype = dtypes.with_bits(dtype, bitwidths[names[i]])
            elif self.opt.activation_dtype:
                run_dtype = self.opt.activation_dtype
            assert esize is not None  # build() failed above on a sized non-weight tensor without an element size
            nbytes = elements * esize if run_dtype == dtype else dtypes.nbytes(elements, dtypes.bits(run_dtype))
            size = max(align_up(nbytes, a), a)
            kind = "input" if i in inputs else "output" if i in outputs else "activation"
            quant = self._quant(t) if run_dtype == dtype and dtype not in ("float32", "float16", "float64") else None
            out_tensors.append(Tensor(names[i], kind, run_dtype, shape, elements, size, first[i], last[i], None, quant))
        scratch, unknown = self._scratch(order, ops, op_type, set(names))
        self._check_offline_plan(tensors, weight, info, sum(b.size for b in scratch))

        steps = []
        integer_ops = 0
        floatish = ("float", "bfloat", "complex")
        for k in order:
            op = ops[k]
            step_ins = tuple(names[x] if x >= 0 else "" for x in (op.inputs if op.inputs is not None else []))
            step_outs = tuple(names[x] for x in (op.outputs if op.outputs is not None else []))
            acts = [int(x) for x in list(op.inputs if op.inputs is not None else []) +
                    list(op.outputs if op.outputs is not None else []) if x >= 0 and not weight[x]]
            if acts and not any(info[x][0].startswith(floatish) for x in acts):
                integer_ops += 1
            steps.append(Step(node=k, name=step_outs[0] if step_outs else f"operator{k}", op_type=op_type[k],
                              inputs=step_ins, outputs=step_outs, domain=DOMAIN))

        weight_buffers = {t.buffer for i, t in enumerate(tensors) if weight[i]}
        weights_bytes = sum(buffer_bytes(m, b) for b in weight_buffers)
        return TfliteProblem(
            model=self.path, model_sha256=hashlib.sha256(self.data).hexdigest(), options=self.opt,
            schedule=tuple(steps), tensors=tuple(reversed(out_tensors + scratch)), weights_bytes=weights_bytes,
            integer_ops=integer_ops, qdq_fused=0,
            names=tuple(names), order=order,
            variables=tuple(names[i] for i in range(len(tensors)) if variable[i]),
            unreferenced=tuple(unreferenced),
            subgraph_tensors=sum(len(s.tensors or []) for s in m.subgraphs),
            unknown_scratch=tuple(u for u, _ in unknown), unknown_ops=tuple(s for _, s in unknown),
        )

    def _scratch(self, order: Sequence[int], ops: Sequence[Any], op_type: dict[int, str],
                 taken: set[str]) -> tuple[list[Tensor], list[tuple[str, int]]]:
        """The kernels' scratch buffers (tflm_scratch), each live at its op's scope, in TFLM's request
        order (operator by operator); and the operators whose requests arena cannot size (with their
        schedule index)."""
        out: list[Tensor] = []
        unknown: list[tuple[str, int]] = []
        stated = dict(self.opt.op_scratch)
        for key in sorted(stated):
            if not (key.isdigit() and int(key) < len(ops)):
                self.fail(f"op_scratch names operator {key}; the model has {len(ops)} operators (0..{len(ops) - 1})",
                          "give the index of the operator whose kernel requests the scratch (arena-tool verify "
                          "names it)", field="op_scratch")
        for s, k in enumerate(order, start=1):
            sizes = (list(stated[str(k)]) if str(k) in stated else
                     tflm_scratch.requests(self.m, ops[k], op_type[k], self.opt.kernels, self.types))
            if sizes is None:
                unknown.append((f"operator {k} ({op_type[k]})", s - 1))
                continue
            for j, nbytes in enumerate(sizes):
                name = f"scratch:{k}.{j}"
                while name in taken:
                    name += "_"
                taken.add(name)
                out.append(Tensor(name, "scratch", "uint8", (nbytes,), nbytes,
                                  align_up(nbytes, self.opt.alignment), s, s))
        return out, unknown

    def _check_hybrid(self, ops: Sequence[Any], op_type: dict[int, str], tensors: Sequence[Any],
                      weight: list[bool], info: dict[int, TensorInfo], names: list[str]) -> None:
        for k, op in enumerate(ops):
            if op_type[k] not in HYBRID_OPS:
                continue
            ins = [int(x) for x in (op.inputs if op.inputs is not None else [])]
            acts = [x for x in ins if x >= 0 and not weight[x]]
            ws = [x for x in ins if x >= 0 and weight[x] and info[x][0] in INT_WEIGHTS]
            if acts and ws and info[acts[0]][0].startswith(("float", "bfloat")):
                self.fail(f"hybrid model: operator {k} ({op_type[k]}) takes {info[acts[0]][0]} activations "
                          f"({names[acts[0]]}) with {info[ws[0]][0]} weights ({names[ws[0]]}), "
                          f"dynamic-range quantization, which TFLite Micro refuses ('Hybrid models are not "
                          f"supported on TFLite Micro')",
                          "convert with full integer quantization (a representative dataset: int8 activations "
                          "and weights) or keep float32 weights")

    def _check_offline_plan(self, tensors: Sequence[Any], weight: list[bool], info: dict[int, TensorInfo],
                            scratch: int = 0) -> None:
        """An offline plan TFLM can use as it is: one offset per tensor, each -1 (TFLM places it) or
        inside the no-reuse total (TFLM frees a negative one twice and sizes its head by the largest),
        the kernels' scratch buffers (``scratch`` bytes, planned beside the tensors) included."""
        offsets = offline_offsets(self.m)
        if offsets is None:
            return
        n = sum(len(s.tensors or []) for s in self.m.subgraphs)
        if len(offsets) != n:
            self.fail(f"the {METADATA_NAME} plan has {len(offsets)} offsets for {n} tensors",
                      "re-plan with arena-tool plan MODEL.tflite -o PLANNED.tflite")
        sizes = [0 if weight[i] else align_up(info[i][3] * (info[i][1] or 1), TFLM_ALIGNMENT)
                 for i in range(len(tensors))]
        room = sum(sizes) + scratch
        for i, o in enumerate(offsets[:len(tensors)]):
            if o != -1 and not 0 <= o <= room - sizes[i]:
                self.fail(f"the {METADATA_NAME} plan puts tensor {i} at offset {o}; an offset is -1 (TFLM places "
                          f"the tensor) or from 0 to {room - sizes[i]:,} (inside the {room:,} B all tensors take)",
                          "re-plan with arena-tool plan MODEL.tflite -o PLANNED.tflite")

    def _check_stateful_order(self, order: Sequence[int], touching: list[int]) -> None:
        """Operators that read or write variable tensors keep their model order among themselves."""
        if touching != sorted(touching):
            self.fail(f"operators {touching} use variable (stateful) tensors and must keep their relative order",
                      "reorder only operators that do not touch variable tensors", field="schedule")

    def _check_quant(self, t: Any, what: str, shape: tuple[int, ...]) -> None:
        """Scales finite and > 0, one zero point per scale, a per-channel list as long as its axis
        (TFLM's kernels divide by the scales and index the lists by channel unchecked)."""
        q = t.quantization
        if q is None or q.scale is None or not len(q.scale):
            return
        scale = np.asarray(q.scale, np.float64)
        hint = "quantize the model again (the converter with a representative dataset)"
        if not np.all(np.isfinite(scale) & (scale > 0)):
            self.fail(f"tensor {what} has quantization scale {float(scale[~(np.isfinite(scale) & (scale > 0))][0])}; "
                      f"a scale is finite and > 0", hint)
        zeros = len(q.zeroPoint) if q.zeroPoint is not None else 0
        if zeros and zeros != len(scale):
            self.fail(f"tensor {what} has {len(scale)} quantization scales and {zeros} zero points", hint)
        if len(scale) > 1:
            axis = int(q.quantizedDimension)
            if not 0 <= axis < len(shape) or shape[axis] != len(scale):
                self.fail(f"tensor {what} of shape {list(shape)} has {len(scale)} per-channel scales along "
                          f"dimension {axis}", hint)

    @staticmethod
    def _quant(t: Any) -> Quant | None:
        q = t.quantization
        if q is None or q.scale is None or not len(q.scale):
            return None
        scale = tuple(float(s) for s in q.scale)
        zp = tuple(int(z) for z in q.zeroPoint) if q.zeroPoint is not None and len(q.zeroPoint) else (0,) * len(scale)
        axis = int(q.quantizedDimension) if len(scale) > 1 else None
        return Quant(scale, zp, axis)


def planned_path_for(output: str) -> str:
    """PLANNED.tflite -> PLANNED.plan.json, the plan written beside a planned model."""
    root, _ = os.path.splitext(output)
    return root + ".plan.json"
