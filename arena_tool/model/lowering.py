"""Graph -> Lowered: the ops the firmware executes, which liveness plans and codegen emits.

onnx_graph says what the model computes; this module says what will run. Three
things happen here, once, for every later stage:

* Attributes are normalized by each op's entry in the op table (``optable.OpSpec.attrs``):
  defaults filled in, ``auto_pad`` resolved to explicit pads, axes made non-negative,
  Clip bounds read from their constant inputs; and each convolution's im2col
  workspace need declared (``Op.workspace``; liveness sizes it under the ``scratch``
  option).
* QDQ is lowered to integer ops, as a deployment runs it (and as onnxruntime's own
  QDQ -> QOperator fusion does). ``DequantizeLinear -> op [-> Relu|Clip] ->
  QuantizeLinear`` with integer tensors at both ends becomes one QOperator op
  (QLinearConv, QLinearMatMul, QGemm, QLinearAdd ...; the op table's ``qoperator``), its output
  named after the QuantizeLinear output it replaces, a Relu/Clip absorbed as the
  output range (``attrs['output_min'/'output_max']``, quantized). Data-movement ops
  between a DequantizeLinear and a QuantizeLinear of equal parameters run on the
  integers directly (``moves_integers``). A DequantizeLinear over a constant weight is a
  weight stored at its integer size. Whatever does not match stays a float island
  with its explicit Q/DQ at the border. Every tensor the lowered graph names is a
  tensor of the original model, so onnxruntime on the original gives every value.
* Constant values are available to later stages on demand (``Lowered.value``):
  initializers, Constant outputs and folded outputs at full size, evaluated with
  onnx's reference evaluator, never onnxruntime.

Example (onnxruntime's quantize_static, QDQ format)::

    x_q -DQ-> x -Conv(W=DQ(w_q), B=DQ(b_i32))-> y -Relu-> r -Q-> r_q
    lowered: QLinearConv(x_q, xs, xz, w_q, ws, wz, rs, rz, b_i32) -> r_q, output_min = rz
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

import numpy as np

from arena_tool.core import dtypes
from arena_tool.model import onnx_graph, optable
from arena_tool.core.errors import fail
from arena_tool.model.onnx_graph import Graph, Node, Shape, TensorType
from arena_tool.core.problem import Quant
from arena_tool.model.onnx_fold import _run_node

if TYPE_CHECKING:
    import onnx

INTEGER = dtypes.QUANTIZED
_QRANGE = {"int8": (-128, 127), "uint8": (0, 255), "int16": (-32768, 32767), "uint16": (0, 65535)}
_ONNX = ("", "ai.onnx")

ACTIVATIONS = frozenset({"Relu", "Clip"})  # absorbed as a fused op's output range (_bounds)


@dataclasses.dataclass(frozen=True)
class Workspace:
    """An op's im2col need in elements of its input type: the whole column matrix
    (``full``) or one output row of it (``row``). A TFLite conv's (column: one column's bytes)
    is planned at ``row`` and grown a column at a time up to ``full`` where the plan's peak
    leaves room (liveness)."""

    full: int
    row: int
    column: int = 0


@dataclasses.dataclass(frozen=True)
class Op:
    """One op that runs.

    node: index in graph.nodes of the op it stands for (the anchor of a fusion).
    fused: the other graph nodes this op replaces (an absorbed Relu/Clip and the
      QuantizeLinear), ascending; a DequantizeLinear every reader absorbed just goes.
    inputs/outputs: tensor names of the original model ('' = absent optional input).
    attrs: normalized (see the module docstring); plain Python values.
    """

    node: int
    name: str
    op_type: str
    domain: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    attrs: Mapping[str, Any]
    fused: tuple[int, ...] = ()
    workspace: Workspace | None = None
    origin: int | None = None  # a tile of this graph node (model/patches.py), with tile-local pads


@dataclasses.dataclass(frozen=True)
class Constant:
    """A weight: flash, never arena. dtype '' and shape None where unknown (no size)."""

    name: str
    dtype: str
    shape: Shape | None


@dataclasses.dataclass(frozen=True)
class Lowered:
    """A model as it runs.

    ops: in schedule order. types: static type of every activation (graph inputs and
    op outputs). constants: the weights ops read (and constant graph outputs), in
    first-use order. quant: quantization of integer activations and weights, where
    the graph states it. qdq_fused: ops made from QDQ patterns.
    """

    path: str
    sha256: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    ops: tuple[Op, ...]
    types: Mapping[str, TensorType]
    constants: Mapping[str, Constant]
    quant: Mapping[str, Quant]
    qdq_fused: int
    graph: Graph = dataclasses.field(compare=False, repr=False)
    _cache: dict[str, np.ndarray] = dataclasses.field(default_factory=dict, compare=False, repr=False)
    untiled: "Lowered | None" = dataclasses.field(default=None, compare=False, repr=False)  # before patches.apply
    stages: tuple[Any, ...] = ()  # the patched stages, patches.Stage (model/patches.py imports this module)
    layout: str = "NCHW"  # the images' layout: an ONNX model's NCHW, a lowered .tflite's NHWC (tflite_lower)

    @property
    def integer_ops(self) -> int:
        """Ops whose activations in and out are all integer (Q/DQ borders are not)."""
        return sum(1 for op in self.ops if self._integer(op))

    def _integer(self, op: Op) -> bool:
        acts = [x for x in (*op.inputs, *op.outputs) if x in self.types]
        return bool(acts) and all(self.types[x].dtype in INTEGER for x in acts)

    def value(self, name: str) -> np.ndarray:
        """The full value of a constant, evaluated once (folded chains through onnx.reference)."""
        if name not in self._cache:
            self._cache[name] = _evaluate(self.graph, name, self._cache)
        return self._cache[name]

    def small_value(self, name: str) -> np.ndarray | None:
        """A constant's value when known without evaluating anything big (scales, axes, bounds)."""
        c = self.graph.consts.get(name)
        return None if c is None else c.array()


def load(path: str, input_shapes: Sequence[tuple[str, Sequence[int]]] = (), *,
         allow_external_data_outside: bool = False) -> Lowered:
    """Load the ONNX model at ``path`` and lower it."""
    return lower(onnx_graph.load(path, input_shapes, allow_external_data_outside=allow_external_data_outside))


def lower(g: Graph) -> Lowered:
    _check_qparams(g)
    ops = [_op(g, g.nodes[i]) for i in g.schedule]
    ops, fused = _Fusion(g, ops).run()
    ops, looked_up = _Lookups(g, ops).run()
    ops = _concat_codes(g, ops)
    ops = [dataclasses.replace(op, workspace=_workspace(g, op)) for op in ops]
    return Lowered(
        path=g.path, sha256=g.sha256, inputs=g.inputs, outputs=g.outputs, ops=tuple(ops), types=g.types,
        constants=_constants(g, ops), quant=_quant(g, ops), qdq_fused=fused + looked_up, graph=g,
    )


def _channel_axis(node: Node, t: int, axis: int) -> int:
    """The axis a per-channel scale of input t runs along: B's columns for QGemm (axis 1 of a
    K x N B, 0 of a transposed N x K one) and QLinearMatMul (its last dim), else ``axis``."""
    if t == 3 and node.op_type == "QGemm":
        return 0 if int(node.attrs.get("transB", 0) or 0) else 1
    if t == 3 and node.op_type == "QLinearMatMul":
        return -1
    return axis


def _check_qparams(g: Graph) -> None:
    """Every constant scale and zero point a quantized node states (folded weight DequantizeLinears
    too): scales finite and > 0 (a zero divides by zero, a negative one flips every value), one
    zero point per scale, and a per-channel list as long as its tensor's axis."""
    for node in g.nodes:
        spec = optable.spec(node.op_type)
        if spec is None or spec.quant_io is None:
            continue
        triples, result = spec.quant_io
        if node.op_type == "QLinearConcat":
            triples = tuple((i, i + 1, i + 2) for i in range(2, len(node.inputs), 3))
        at = [(t, s, z) for t, s, z in triples]
        if result is not None and node.outputs:
            at.append((-1, *result))
        qdq = node.op_type in ("QuantizeLinear", "DequantizeLinear")
        axis = int(node.attrs.get("axis", 1)) if qdq and isinstance(node.attrs.get("axis", 1), int) else 0
        for t, si, zi in at:
            s = node.inputs[si] if si < len(node.inputs) else ""
            z = node.inputs[zi] if zi < len(node.inputs) else ""
            sc, zc = g.consts.get(s) if s else None, g.consts.get(z) if z else None
            sv = sc.array() if sc is not None else None
            if sv is None:
                continue
            scale = np.asarray(sv, np.float64).reshape(-1)
            where = f"node {node.name!r} ({node.op_type}): scale {s!r}"
            if not scale.size or not np.all(np.isfinite(scale)) or not np.all(scale > 0):
                bad = scale[~(np.isfinite(scale) & (scale > 0))] if scale.size else scale
                fail(f"{where} is {float(bad[0]) if bad.size else 'empty'}; a quantization scale is finite and > 0",
                     file=g.path, hint="quantize the model again (calibrate on real samples)")
            zv = zc.array() if zc is not None else None
            if zv is not None and np.asarray(zv).size != scale.size:
                fail(f"{where} has {scale.size} value(s) but zero point {z!r} has {np.asarray(zv).size}; one zero "
                     f"point per scale", file=g.path, hint="quantize the model again")
            name = node.outputs[0] if t == -1 else node.inputs[t] if t < len(node.inputs) else ""
            shape = g.types[name].shape if name in g.types else g.constant_shapes.get(name)
            blocked = bool(node.attrs.get("block_size"))  # blocked quantization: a scale per block (coverage refuses it)
            if scale.size > 1 and not blocked and shape is not None and all(isinstance(d, int) for d in shape):
                ax = _channel_axis(node, t, axis)
                ax = ax + len(shape) if ax < 0 else ax
                if not 0 <= ax < len(shape) or shape[ax] != scale.size:
                    fail(f"{where} has {scale.size} per-channel values for tensor {name!r} of shape {list(shape)} "
                         f"(axis {axis}); one scale per channel of the axis", file=g.path,
                         hint="quantize the model again")

# --- integer inputs and outputs (io: int8) ----------------------------------------------------

IO_HINT = ("quantize the model (onnxruntime.quantization.quantize_static, QDQ or QOperator) so each float "
           "input goes straight into a QuantizeLinear and each output comes out of a DequantizeLinear, "
           "or drop io: int8 (io: model runs the graph's own inputs and outputs)")


@dataclasses.dataclass(frozen=True)
class Boundary:
    """One graph input or output io: int8 changed: the model's float tensor and the integer
    tensor the firmware takes or gives instead (its Quant: scale, zero point)."""

    model: str
    integer: str
    dtype: str
    quant: Quant


def boundary(lw: Lowered) -> tuple[tuple[Boundary, ...], tuple[Boundary, ...]]:
    """The boundary QuantizeLinear of every float input and DequantizeLinear of every float
    output, as (inputs, outputs); a tensor already integer has none. A float input not read by
    exactly one per-tensor QuantizeLinear (and nothing else), or a float output not made by one
    per-tensor DequantizeLinear read by nothing else, cannot become an integer: an error
    naming it (field io)."""
    readers: dict[str, list[Op]] = {}
    producer: dict[str, Op] = {}
    for op in lw.ops:
        for x in dict.fromkeys(op.inputs):
            if x:
                readers.setdefault(x, []).append(op)
        for y in op.outputs:
            if y:
                producer[y] = op

    def per_tensor(name: str, what: str) -> Quant:
        q = lw.quant.get(name)
        if q is None or len(q.scale) != 1:
            fail(f"{what}: its quantization is {'per channel' if q else 'not constant'}, so one scale "
                 f"and zero point cannot describe it", field="io", file=lw.path, hint=IO_HINT)
        return q

    ins: list[Boundary] = []
    for x in lw.inputs:
        if lw.types[x].dtype in INTEGER:
            continue
        rs = readers.get(x, [])
        what = f"int8 I/O: input {x!r} ({lw.types[x].dtype})"
        if len(rs) != 1 or rs[0].op_type != "QuantizeLinear" or x in lw.outputs:
            used = ", ".join(sorted({f"{op.op_type} {op.name}" for op in rs})) or "nothing"
            fail(f"{what} is not quantized at the boundary: it is read by {used}, not by one QuantizeLinear",
                 field="io", file=lw.path, hint=IO_HINT)
        y = rs[0].outputs[0]
        ins.append(Boundary(x, y, lw.types[y].dtype, per_tensor(y, what)))
    outs: list[Boundary] = []
    for y in lw.outputs:
        if y not in lw.types or lw.types[y].dtype in INTEGER:
            continue
        made_by = producer.get(y)
        what = f"int8 I/O: output {y!r} ({lw.types[y].dtype})"
        if made_by is None or made_by.op_type != "DequantizeLinear" or made_by.inputs[0] not in lw.types \
                or readers.get(y):
            made = f"{made_by.op_type} {made_by.name}" if made_by is not None else "no op"
            fail(f"{what} is not dequantized at the boundary: it is made by {made}"
                 f"{' and read by other ops' if readers.get(y) else ''}, not by a DequantizeLinear",
                 field="io", file=lw.path, hint=IO_HINT)
        q = made_by.inputs[0]
        outs.append(Boundary(y, q, lw.types[q].dtype, per_tensor(q, what)))
    return tuple(ins), tuple(outs)


def integer_io(lw: Lowered) -> Lowered:
    """``lw`` without its boundary QuantizeLinear/DequantizeLinear (``boundary``): the integer
    tensors become the graph's inputs and outputs (io: int8). The tensors keep the model's
    names, so onnxruntime on the model still gives every value."""
    ins, outs = boundary(lw)
    if not ins and not outs:
        return lw
    swap = {b.model: b.integer for b in (*ins, *outs)}
    removed = {("QuantizeLinear", b.model) for b in ins} | {("DequantizeLinear", b.integer) for b in outs}
    ops_ = tuple(op for op in lw.ops if (op.op_type, op.inputs[0] if op.inputs else "") not in removed)
    inputs = tuple(swap.get(x, x) for x in lw.inputs)
    outputs = tuple(dict.fromkeys(swap.get(y, y) for y in lw.outputs))
    gone = set(swap)
    types = {k: v for k, v in lw.types.items() if k not in gone}
    return dataclasses.replace(lw, inputs=inputs, outputs=outputs, ops=ops_, types=types,
                               constants=_constants(lw.graph, ops_), _cache=lw._cache)


# --- constants ------------------------------------------------------------------------------

def _constants(g: Graph, ops: Sequence[Op]) -> dict[str, Constant]:
    out: dict[str, Constant] = {}
    for name in [x for op in ops for x in op.inputs] + list(g.outputs):
        c = g.consts.get(name)
        if not name or c is None or name in out:
            continue
        known = c.elem and c.elem != 8  # 8: string, no static size
        out[name] = Constant(name, dtypes.from_onnx(c.elem, what=f"weight {name!r}") if known else "", c.shape)
    return out


SHARED_MAX = 4096  # bytes: constants up to this size are compared for equal values
# (op type, input position) of the per-channel weight zero points whose kernels read one entry
# for every channel as well (arena_q_zp, support_int8.h's cparams: "1 or n entries")
BROADCAST_ZERO_POINTS = frozenset({("QLinearConv", 5), ("QLinearMatMul", 5), ("QGemm", 5)})


@dataclasses.dataclass(frozen=True)
class Stored:
    """How the firmware stores a model's small constants (codegen writes them so, and the plan's
    weights_bytes counts them so).

    one: a per-channel weight zero point whose entries are all equal (symmetric quantization: all
    zero) and that only kernels taking one entry for all channels read -> that one entry;
    shared: a constant whose stored value equals an earlier one's (element type, shape, bytes) ->
    that earlier one, whose array and tensor row it uses, as a .tflite stores one buffer for equal
    tensors. MLPerf Tiny's VWW int8: 172 constants in 124 rows, 28 zero points of one entry."""

    one: dict[str, np.ndarray]
    shared: dict[str, str]


def stored_constants(model: Lowered, names: Sequence[str]) -> Stored:
    """``Stored`` for the constants ``names`` in table order. Only constants of up to SHARED_MAX
    bytes stored in the model file are looked at (``small_value``): no large weight is read to
    find its twin (two layers' weights are equal by chance only) and planning reads no external
    data."""
    uses: dict[str, set[tuple[str, int]]] = {}
    for op in model.ops:
        for pos, x in enumerate(op.inputs):
            if x:
                uses.setdefault(x, set()).add((op.op_type, pos))
    first: dict[tuple[str, tuple[int, ...], bytes], str] = {}
    one: dict[str, np.ndarray] = {}
    shared: dict[str, str] = {}
    for n in names:
        c = model.constants.get(n)
        if c is None or c.shape is None or not c.dtype or \
                math.prod(c.shape) * dtypes.bits(c.dtype) > 8 * SHARED_MAX:
            continue
        small = model.small_value(n)  # stored in the model file: nothing folded or external is read here
        if small is None:
            continue
        v = np.ascontiguousarray(small)
        if v.size > 1 and uses.get(n) and uses[n] <= BROADCAST_ZERO_POINTS and bool(np.all(v == v.flat[0])):
            v = one[n] = np.ascontiguousarray(v.reshape(-1)[:1].reshape(()))
        key = (str(v.dtype), tuple(int(d) for d in v.shape), v.tobytes())
        if key in first:
            shared[n] = first[key]
        else:
            first[key] = n
    return Stored(one, shared)


def _evaluate(g: Graph, name: str, cache: dict[str, np.ndarray]) -> np.ndarray:
    from onnx import numpy_helper

    c = g.consts.get(name)
    if c is None:
        fail(f"{name!r} is not a constant of the model", file=g.path)
    if c.value is not None:
        return np.asarray(c.value)
    if c.proto is not None:
        return numpy_helper.to_array(c.proto, base_dir=str(Path(g.path).parent))
    producer = next((g.nodes[i] for i in g.folded if name in g.nodes[i].outputs), None)
    if producer is None or g.model is None:
        fail(f"constant {name!r} has no value (a sparse or custom constant)", file=g.path,
             hint="store it as a dense initializer")
    args = {}
    for x in producer.inputs:
        if x and x not in args:
            if x not in cache:
                cache[x] = _evaluate(g, x, cache)
            args[x] = cache[x]
    try:
        values = _run_node(g.model, producer, args)
    except Exception as e:  # the reference evaluator's own error types vary by op
        fail(f"cannot evaluate constant {name!r} from {producer.op_type} {producer.name!r}: {e}", file=g.path,
             hint="fold the constant subgraph before export (e.g. onnxsim)")
    for k, out in enumerate(producer.outputs):
        if out:
            cache[out] = np.asarray(values[k])
    return cache[name]


# --- attribute normalization ----------------------------------------------------------------

def _op(g: Graph, node: Node) -> Op:
    return Op(node.index, node.name, node.op_type, node.domain, node.inputs, node.outputs, _attrs(g, node))


def _plain(v: Any) -> Any:
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, (int, float, str)):
        return v
    return None  # tensors, graphs: not attributes a kernel reads


def _attrs(g: Graph, node: Node) -> dict[str, Any]:
    """The node's plain attributes, normalized by its table entry (optable.OpSpec.attrs)."""
    a = {k: p for k, v in sorted(node.attrs.items()) if (p := _plain(v)) is not None}
    spec = optable.spec(node.op_type)
    return spec.attrs(g, node, a) if spec is not None and spec.attrs is not None else a


def _workspace(g: Graph, op: Op) -> Workspace | None:
    return workspace_of(g.types, op)


def workspace_of(types: Mapping[str, TensorType], op: Op) -> Workspace | None:
    """Conv im2col columns: Cin/group * prod(K) per output pixel.

    None for 1x1 stride-1 unpadded convs (the input already is the column matrix)
    and for depthwise convs (group == Cin > 1: a small stencil per channel, no GEMM).
    """
    if op.op_type in TFL_SCRATCH:
        return _tfl_workspace(types, op)
    spec = optable.spec(op.op_type)
    if spec is None or spec.weight is None or op.domain not in _ONNX or "kernel_shape" not in op.attrs:
        return None
    x, y = op.inputs[0], op.outputs[0]
    if x not in types or y not in types:
        return None
    cin, out_spatial = types[x].shape[1], types[y].shape[2:]
    kernel, strides, pads = op.attrs["kernel_shape"], op.attrs["strides"], op.attrs["pads"]
    group = int(op.attrs.get("group", 1))
    if not out_spatial or (all(k == 1 for k in kernel) and all(s == 1 for s in strides) and not any(pads)):
        return None
    if group > 1 and group == cin:
        return None
    per_pixel = cin // group * math.prod(kernel)
    return Workspace(full=per_pixel * math.prod(out_spatial), row=per_pixel * out_spatial[-1])


TFL_COL_BYTES = 2048  # a TFLite conv's im2col columns (bytes) the planned scratch holds, at least 2 pixels
TFL_SCRATCH = ("TflConv2D",)  # a lowered .tflite's int8 ops with a kernel scratch


def _tfl_workspace(types: Mapping[str, TensorType], op: Op) -> Workspace | None:
    """The bytes runtime/tfl_conv_int8.c works in, planned whatever the scratch mode (the kernel's
    own need, never the stack): a conv's im2col columns, two (its GEMM's 2 x 2 step) and up to
    TFL_COL_BYTES of them where the peak leaves room (fewer, longer GEMM calls), none where the
    input's pixels are the columns (1x1, stride 1, one group). (A depthwise conv reads its taps
    unpacked in flash: tflite_lower.depthwise_taps.)"""
    x, y = op.inputs[0], op.outputs[0]
    if x not in types or y not in types or len(types[x].shape) != 4 or len(types[y].shape) != 4:
        return None
    (_, h, w, c), (_, oh, ow, m) = types[x].shape, types[y].shape
    kh, kw = op.attrs["kernel_shape"]
    group = int(op.attrs.get("group", 1)) or 1
    if group == 1 and kh == kw == 1 and list(op.attrs["strides"]) == [1, 1] and (oh, ow) == (h, w):
        return None
    k = kh * kw * (c // group)
    return Workspace(full=k * min(oh * ow, max(2, TFL_COL_BYTES // k)), row=k * min(oh * ow, 2), column=k)


# --- QDQ -> integer ops ---------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class _Q:
    """A quantized operand: the integer tensor and its scale / zero-point names ('' = absent)."""

    tensor: str
    scale: str
    zero_point: str
    dq: int | None  # index of the activation DequantizeLinear in the op list, None for a weight


class _Fusion:
    """One lower() call's pattern matching over the op list (never shared)."""

    def __init__(self, g: Graph, ops: list[Op]) -> None:
        self.g = g
        self.ops = ops
        self.outputs = set(g.outputs)
        self.consumers: dict[str, list[int]] = {}
        for k, op in enumerate(ops):
            for x in dict.fromkeys(op.inputs):
                if x:
                    self.consumers.setdefault(x, []).append(k)
        self.producer = {y: k for k, op in enumerate(ops) for y in op.outputs if y}
        self.folded_by = {y: g.nodes[i] for i in g.folded for y in g.nodes[i].outputs if y}

    def run(self) -> tuple[list[Op], int]:
        new: dict[int, Op] = {}  # anchor position -> lowered op
        gone: set[int] = set()   # positions absorbed into a lowered op
        for k, op in enumerate(self.ops):
            if op.domain not in _ONNX or k in gone:
                continue
            spec = optable.spec(op.op_type)
            got = (None if spec is None else self._fuse(k, op, spec.qoperator) if spec.qoperator is not None
                   else self._movement(k, op) if spec.moves_integers else None)
            if got is not None:
                lowered, absorbed = got
                new[k] = lowered
                gone.update(absorbed)
        # An activation DequantizeLinear disappears once every reader is lowered.
        readers_left: dict[int, int] = {}
        for k, op in enumerate(self.ops):
            if k in gone:
                continue
            for x in dict.fromkeys((new[k] if k in new else op).inputs):
                p = self.producer.get(x)
                if p is not None and self.ops[p].op_type == "DequantizeLinear":
                    readers_left[p] = readers_left.get(p, 0) + 1
        dead_dq = {k for k, op in enumerate(self.ops) if op.op_type == "DequantizeLinear" and k not in gone
                   and any(k2 in new for k2 in self.consumers.get(op.outputs[0], []))
                   and readers_left.get(k, 0) == 0 and op.outputs[0] not in self.outputs}
        out = [new.get(k, op) for k, op in enumerate(self.ops) if k not in gone and k not in dead_dq]
        return out, len(new)

    # -- operands --

    def _const(self, name: str) -> np.ndarray | None:
        c = self.g.consts.get(name)
        return None if c is None else c.array()

    def _int_type(self, name: str) -> str | None:
        if name in self.g.types:
            t = self.g.types[name].dtype
        elif name in self.g.consts:
            elem = self.g.consts[name].elem
            t = dtypes.from_onnx(elem) if elem and elem != 8 else ""
        else:
            return None
        return t if t in INTEGER or t == "int32" else None

    def _dq_operands(self, dq: Node | Op) -> tuple[str, str, str] | None:
        ins = list(dq.inputs) + ["", ""]
        x, s, z = ins[0], ins[1], ins[2]
        if not x or self._const(s) is None or (z and self._const(z) is None) or self._int_type(x) is None:
            return None
        return x, s, z

    def _operand(self, name: str) -> _Q | None:
        """The integer source of a float tensor produced by a DequantizeLinear, if any."""
        p = self.producer.get(name)
        if p is not None:
            op = self.ops[p]
            if op.op_type != "DequantizeLinear" or op.domain not in _ONNX:
                return None
            got = self._dq_operands(op)
            return _Q(*got, dq=p) if got and got[0] in self.g.types else None
        node = self.folded_by.get(name)  # a weight: DequantizeLinear over a constant, folded
        if node is not None and node.op_type == "DequantizeLinear" and node.domain in _ONNX:
            got = self._dq_operands(node)
            return _Q(*got, dq=None) if got and got[0] in self.g.consts else None
        return None

    def _single_reader(self, name: str) -> Op | None:
        readers = self.consumers.get(name, [])
        if name in self.outputs or len(readers) != 1:
            return None
        return self.ops[readers[0]]

    def _quantize_after(self, y: str) -> tuple[int, int | None] | None:
        """(position of the QuantizeLinear that takes y, position of an absorbed Relu/Clip)."""
        r = self._single_reader(y)
        if r is None:
            return None
        k = self.consumers[y][0]
        act = None
        if r.op_type in ACTIVATIONS and r.domain in _ONNX and r.inputs[0] == y:
            act, y2 = k, r.outputs[0]
            r = self._single_reader(y2)
            if r is None:
                return None
            k = self.consumers[y2][0]
        if r.op_type != "QuantizeLinear" or r.domain not in _ONNX or len(r.inputs) < 2 \
                or r.inputs[0] != (y if act is None else self.ops[act].outputs[0]):
            return None
        s = r.inputs[1]
        z = r.inputs[2] if len(r.inputs) > 2 else ""
        sv = self._const(s)
        if sv is None or sv.size != 1 or (z and self._const(z) is None):
            return None  # a per-axis activation quantization is not a kernel's output
        if self.g.types.get(r.outputs[0], TensorType("", ())).dtype not in INTEGER:
            return None
        return k, act

    def _qparams(self, s: str, z: str) -> tuple[float, int]:
        sv = self._const(s)
        zv = self._const(z) if z else None
        return float(np.asarray(sv).reshape(-1)[0]), int(np.asarray(zv).reshape(-1)[0]) if zv is not None else 0

    def _range(self, act: int | None, q: Op) -> dict[str, int]:
        """The absorbed Relu/Clip as output bounds in the quantized domain."""
        if act is None:
            return {}
        s, z = self._qparams(q.inputs[1], q.inputs[2] if len(q.inputs) > 2 else "")
        dtype = self.g.types[q.outputs[0]].dtype
        fmin, fmax = _bounds(self.ops[act])
        return {"output_min": _quantize(fmin, s, z, dtype), "output_max": _quantize(fmax, s, z, dtype)}

    # -- patterns --

    def _fuse(self, k: int, op: Op, qoperator: optable.QOperator) -> tuple[Op, set[int]] | None:
        ys = [y for y in op.outputs if y]
        if len(ys) != 1:
            return None
        after = self._quantize_after(ys[0])
        if after is None:
            return None
        qk, act = after
        q = self.ops[qk]
        qop, domain, positions = qoperator.op_type, qoperator.domain, qoperator.operands
        present = [i for i, x in enumerate(op.inputs) if x]
        need = present if op.op_type == "Concat" else list(positions)
        found = {i: self._operand(op.inputs[i]) for i in need if i < len(op.inputs)}
        operands = {i: v for i, v in found.items() if v is not None}
        if len(operands) != len(need):
            return None
        qs, qz = q.inputs[1], q.inputs[2] if len(q.inputs) > 2 else ""

        def triple(o: _Q) -> list[str]:
            return [o.tensor, o.scale, o.zero_point]

        bias = ""
        if op.op_type in ("Conv", "Gemm") and len(op.inputs) > 2 and op.inputs[2]:
            bias = self._bias(op.inputs[2], operands[0], operands[1])
            if not bias:
                return None
        if op.op_type == "Gemm" and (op.attrs.get("beta", 1.0) != 1.0 and bias):
            return None
        if op.op_type == "Conv":
            inputs = [*triple(operands[0]), *triple(operands[1]), qs, qz, bias]
        elif op.op_type == "Gemm":
            inputs = [*triple(operands[0]), *triple(operands[1]), bias, qs, qz]
        elif op.op_type == "Concat":
            inputs = [qs, qz] + [x for i in present for x in triple(operands[i])]
        else:
            rest = [x for i in sorted(operands) for x in triple(operands[i])]
            inputs = rest + [qs, qz]
        while inputs and not inputs[-1]:
            inputs.pop()
        attrs = dict(op.attrs)
        if op.op_type in ("AveragePool", "GlobalAveragePool"):
            attrs["channels_last"] = 0
        attrs.update(self._range(act, q))
        absorbed = {qk} | ({act} if act is not None else set())
        fused = tuple(sorted(self.ops[i].node for i in absorbed))
        return Op(op.node, op.name, qop, domain, tuple(inputs), (q.outputs[0],), attrs, fused), absorbed

    def _bias(self, name: str, x: _Q, w: _Q) -> str:
        """The int32 bias a QOperator kernel adds, when the DQ bias has scale x_scale * w_scale."""
        b = self._operand(name)
        if b is None or b.dq is not None or self._int_type(b.tensor) != "int32":
            return ""
        bs, xs, ws = self._const(b.scale), self._const(x.scale), self._const(w.scale)
        bz = self._const(b.zero_point) if b.zero_point else np.zeros(1)
        if bs is None or xs is None or ws is None or bz is None or np.any(bz != 0):
            return ""
        want = np.asarray(xs, np.float64).reshape(-1) * np.asarray(ws, np.float64).reshape(-1)
        got = np.asarray(bs, np.float64).reshape(-1)
        if got.size not in (1, want.size) or not np.allclose(got, want, rtol=1e-5, atol=0):
            return ""
        return b.tensor

    def _movement(self, k: int, op: Op) -> tuple[Op, set[int]] | None:
        ys = [y for y in op.outputs if y]
        if not ys or not op.inputs:
            return None
        x = self._operand(op.inputs[0])
        if x is None or x.dq is None:
            return None
        xs, xz = self._const(x.scale), self._const(x.zero_point) if x.zero_point else np.zeros(1)
        if xs is None or xz is None or xs.size != 1:
            return None
        qk: dict[str, int] = {}  # every output (Split has several) goes through its own Q
        for y in ys:
            after = self._quantize_after(y)
            if after is None or after[1] is not None:
                return None
            q = self.ops[after[0]]
            if self.g.types[q.outputs[0]].dtype != self.g.types[x.tensor].dtype:
                return None
            qs, qz = self._qparams(q.inputs[1], q.inputs[2] if len(q.inputs) > 2 else "")
            if not (math.isclose(float(xs.reshape(-1)[0]), qs, rel_tol=1e-6) and int(xz.reshape(-1)[0]) == qz):
                return None  # a requantizing move is arithmetic, not movement
            qk[y] = after[0]
        attrs = dict(op.attrs)
        op_type = op.op_type
        dtype = self.g.types[x.tensor].dtype
        inputs: tuple[str, ...]
        if op_type in ACTIVATIONS:
            fmin, fmax = _bounds(op)
            attrs = {"min": _quantize(fmin, qs, qz, dtype), "max": _quantize(fmax, qs, qz, dtype)}
            op_type, inputs = "Clip", (x.tensor,)
        elif op_type == "Pad":  # the float pad value becomes its quantized integer
            if len(op.inputs) > 2 and op.inputs[2]:
                v = self._const(op.inputs[2])
                if v is None:
                    return None
                attrs["value"] = float(v.reshape(-1)[0])
            attrs["value"] = _quantize(float(attrs.get("value", 0.0)), qs, qz, dtype)
            ins = [x.tensor, *op.inputs[1:]]
            if len(ins) > 2:
                ins[2] = ""
            while ins and not ins[-1]:
                ins.pop()
            inputs = tuple(ins)
        else:
            inputs = (x.tensor, *op.inputs[1:])
        outputs = tuple(self.ops[qk[y]].outputs[0] if y in qk else "" for y in op.outputs)
        fused = tuple(sorted(self.ops[i].node for i in qk.values()))
        return Op(op.node, op.name, op_type, op.domain, inputs, outputs, attrs, fused), set(qk.values())


def _bounds(op: Op) -> tuple[float, float]:
    """A Relu's or Clip's float output range."""
    return (0.0, np.inf) if op.op_type == "Relu" else (op.attrs["min"], op.attrs["max"])


def _quantize(v: float, scale: float, zp: int, dtype: str) -> int:
    """v on the integer grid (scale, zp), saturated to dtype's range; an infinite v is its end."""
    lo, hi = _QRANGE[dtype]
    if v == -np.inf:
        return lo
    if v == np.inf:
        return hi
    return int(np.clip(np.rint(v / scale) + zp, lo, hi))


# --- int8 -> int8 element-wise chains as one table lookup ----------------------------------

# Float ops whose float32 arithmetic numpy repeats exactly as onnxruntime's CPU kernels do it (one
# rounding per multiply, add and divide): a chain of them between a DequantizeLinear and a
# QuantizeLinear is a function of one byte, so it runs as a 256-entry table.
LOOKUP_FLOAT = frozenset({"HardSigmoid", "HardSwish", "Relu", "Clip", "LeakyRelu"})
LOOKUP = "QLinearLookup"
_F32 = np.float32


def _scalar(g: Graph, name: str, default: float = 0.0) -> float | None:
    """A one-value constant (absent: default), else None."""
    if not name:
        return default
    c = g.consts.get(name)
    v = c.array() if c is not None else None
    return None if v is None or np.size(v) != 1 else float(np.asarray(v).reshape(-1)[0])


def _quantized(g: Graph, v: np.ndarray, s: str, z: str, dtype: str) -> np.ndarray:
    """onnxruntime's QuantizeLinear (MlasQuantizeLinear): rint(v / scale) + zero point, saturated."""
    lo, hi = _QRANGE[dtype]
    zp = int(_scalar(g, z) or 0)
    q: np.ndarray = np.rint(v.astype(_F32) / _F32(_scalar(g, s))).astype(np.float64) + zp
    out: np.ndarray = np.clip(q, lo, hi).astype(np.int64)
    return out


def _float_step(op: Op, v: np.ndarray) -> np.ndarray:
    """One LOOKUP_FLOAT op over float32 values, as onnxruntime computes it (HardSwish as the
    HardSigmoid -> Mul its ONNX function body is)."""
    a = op.attrs
    out: np.ndarray
    if op.op_type in ("HardSigmoid", "HardSwish"):
        alpha, beta = (a["alpha"], a["beta"]) if op.op_type == "HardSigmoid" else (1 / 6, 0.5)
        h = np.maximum(np.minimum(_F32(alpha) * v + _F32(beta), _F32(1)), _F32(0))
        out = h if op.op_type == "HardSigmoid" else v * h
    elif op.op_type == "Relu":
        out = np.maximum(v, _F32(0))
    elif op.op_type == "Clip":
        out = np.minimum(np.maximum(v, _F32(a["min"])), _F32(a["max"]))
    elif op.op_type == "LeakyRelu":
        out = np.where(v >= 0, v, v * _F32(a["alpha"])).astype(_F32)
    else:
        raise AssertionError(op.op_type)
    return out


def lookup_table(g: Graph, steps: Sequence[Op], x: str) -> tuple[int, ...]:
    """The output byte of ``steps`` (a QLinearLookup's) for each input byte 0..255 of ``x``,
    the arithmetic of onnxruntime's kernels repeated in numpy: DequantizeLinear (code - zero
    point) * scale, the float ops, QuantizeLinear, QLinearMul (MlasQLinearMul: the zero-point-free
    product times a_scale * b_scale / y_scale plus the output zero point, in float32, rounded half
    to even: adding the zero point before rounding decides some ties, arena's qlinear_add_mul_q8.c
    adds it after and is one step off there)."""
    dtype = g.types[x].dtype
    codes = np.arange(256, dtype=np.uint8).view(np.int8 if dtype == "int8" else np.uint8).astype(np.int64)
    env: dict[str, np.ndarray] = {x: codes}
    for op in steps:
        ins, y = op.inputs, op.outputs[0]
        if op.op_type == "DequantizeLinear":
            env[y] = (env[ins[0]] - int(_scalar(g, ins[2] if len(ins) > 2 else "") or 0)).astype(_F32) \
                * _F32(_scalar(g, ins[1]))
        elif op.op_type == "QuantizeLinear":
            env[y] = _quantized(g, env[ins[0]], ins[1], ins[2] if len(ins) > 2 else "", g.types[y].dtype)
        elif op.op_type == "QLinearMul":
            u = env[ins[0]] - int(_scalar(g, ins[2]) or 0)
            v = env[ins[3]] - int(_scalar(g, ins[5]) or 0)
            rm = _F32(_F32(_F32(_scalar(g, ins[1])) * _F32(_scalar(g, ins[4]))) / _F32(_scalar(g, ins[6])))
            lo, hi = _QRANGE[g.types[y].dtype]
            lo, hi = op.attrs.get("output_min", lo), op.attrs.get("output_max", hi)
            q = np.rint(rm * (u * v).astype(_F32) + _F32(_scalar(g, ins[7]) or 0))  # the zero point added in float
            env[y] = np.clip(q, lo, hi).astype(np.int64)
        else:
            env[y] = _float_step(op, env[ins[0]])
    return tuple(int(b) & 0xFF for b in env[steps[-1].outputs[0]])


def requant_table(g: Graph, xs: str, xz: str, ys: str, yz: str, dtype: str) -> tuple[int, ...]:
    """The byte onnxruntime's QLinearConcat writes for each input byte 0..255 (its lookup table:
    DequantizeLinear at (xs, xz), QuantizeLinear at (ys, yz), in float32)."""
    codes = np.arange(256, dtype=np.uint8).view(np.int8 if dtype == "int8" else np.uint8).astype(np.int64)
    v = (codes - int(_scalar(g, xz) or 0)).astype(_F32) * _F32(_scalar(g, xs))
    return tuple(int(b) & 0xFF for b in _quantized(g, v, ys, yz, dtype))


def _concat_codes(g: Graph, ops: list[Op]) -> list[Op]:
    """A QLinearConv read only by a QLinearConcat that requantizes it writes the concat's codes
    itself: its own codes through the concat's table for it (attrs ``table``, as a lookup's; and
    ``requant``, the concat's scale and zero point the output then has), and the concat reads
    it at its own scale, so copies it, or (a concat view, liveness) copies nothing. The
    codes are onnxruntime's: its QLinearConcat requantizes through the same table. SqueezeNet's
    fire modules: the 3x3 expand conv at its own scale, the concat at the 1x1's."""
    readers: dict[str, int] = {}
    for op in ops:
        for x in dict.fromkeys(op.inputs):
            readers[x] = readers.get(x, 0) + 1
    producer = {y: k for k, op in enumerate(ops) for y in op.outputs if y}
    out = list(ops)
    for k, cat in enumerate(ops):
        if cat.op_type != "QLinearConcat" or cat.domain != "com.microsoft" or "output_min" in cat.attrs:
            continue
        ins = list(cat.inputs)
        ys, yz = ins[0], ins[1] if len(ins) > 1 else ""
        y = cat.outputs[0]
        for i in range(2, len(ins) - 2, 3):
            x, xs, xz = ins[i:i + 3]
            p = producer.get(x, -1)
            conv = out[p] if p >= 0 else None
            if (conv is None or conv.op_type != "QLinearConv" or conv.fused or "table" in conv.attrs
                    or conv.outputs != (x,) or readers.get(x) != 1 or x in g.outputs or ins.count(x) != 1
                    or g.types[x].dtype != g.types[y].dtype or g.types[y].dtype not in ("int8", "uint8")
                    or any(_scalar(g, n) is None for n in (xs, ys) + tuple(n for n in (xz, yz) if n))
                    or (_scalar(g, xs), _scalar(g, xz) or 0) == (_scalar(g, ys), _scalar(g, yz) or 0)):
                continue
            table = requant_table(g, xs, xz, ys, yz, g.types[y].dtype)
            out[p] = dataclasses.replace(conv, attrs={**conv.attrs, "table": table, "requant": (ys, yz)})
            ins[i + 1:i + 3] = [ys, yz]
        out[k] = dataclasses.replace(cat, inputs=tuple(ins))
    return out


class _Lookups:
    """One lower() call's folding of int8/uint8 element-wise chains into QLinearLookup ops:
    ``DequantizeLinear -> LOOKUP_FLOAT ops -> QuantizeLinear`` (per-tensor parameters, every
    float tensor read by the next op only; a DequantizeLinear -> QuantizeLinear pair of equal
    parameters is an Identity, a view), then a lookup whose only reader is a QLinearMul of
    the lookup's own input by its output (a hard-swish: x * HardSigmoid(x)) or another lookup.
    attrs: ``table`` (256 output bytes by input byte) and ``steps`` (the ops replaced, in order,
    for lowering.to_onnx and the table)."""

    def __init__(self, g: Graph, ops: list[Op]) -> None:
        self.g = g
        self.ops: list[Op | None] = list(ops)
        self.outputs = set(g.outputs)

    def _readers(self, name: str) -> list[int]:
        return [k for k, op in enumerate(self.ops) if op is not None and name in op.inputs]

    def _byte(self, name: str) -> bool:
        return name in self.g.types and self.g.types[name].dtype in ("int8", "uint8")

    def _only_reader(self, name: str) -> int | None:
        readers = self._readers(name)
        return readers[0] if len(readers) == 1 and name not in self.outputs else None

    def _const_inputs(self, op: Op, skip: int) -> bool:
        return all(not x or x in self.g.consts for i, x in enumerate(op.inputs) if i != skip)

    def _chain(self, dq: Op, first: int) -> tuple[list[int], Op] | None:
        """The positions of the float ops and the QuantizeLinear from reader ``first`` of ``dq``'s
        output on, and the lookup op they become."""
        g = self.g
        ins = list(dq.inputs) + ["", ""]
        if not self._byte(ins[0]) or _scalar(g, ins[1]) is None or _scalar(g, ins[2]) is None:
            return None
        cur, k, chain = dq.outputs[0], first, []
        while True:
            op = self.ops[k]
            assert op is not None
            if op.domain not in _ONNX or not op.inputs or op.inputs[0] != cur or cur in op.inputs[1:]:
                return None
            if op.op_type == "QuantizeLinear":
                qi = list(op.inputs) + ["", ""]
                if not self._byte(op.outputs[0]) or _scalar(g, qi[1]) is None or _scalar(g, qi[2]) is None:
                    return None
                chain.append(k)
                break
            if op.op_type not in LOOKUP_FLOAT or not self._const_inputs(op, 0) or len(op.outputs) != 1:
                return None
            chain.append(k)
            cur = op.outputs[0]
            nxt = self._only_reader(cur)
            if nxt is None:
                return None
            k = nxt
        steps = [dq, *(s for i in chain if (s := self.ops[i]) is not None)]
        q = steps[-1]
        inputs = [ins[0], ins[1], ins[2], q.inputs[1], q.inputs[2] if len(q.inputs) > 2 else ""]
        if len(steps) == 2 and g.types[ins[0]].dtype == g.types[q.outputs[0]].dtype \
                and _scalar(g, ins[1]) == _scalar(g, inputs[3]) and _scalar(g, ins[2]) == _scalar(g, inputs[4]):
            # a pair that cancels: Q(DQ(x)) = x, a view of x's bytes
            return chain, Op(q.node, q.name, "Identity", "", (ins[0],), (q.outputs[0],), {}, ())
        return chain, self._lookup(steps, inputs, q)

    def _lookup(self, steps: list[Op], inputs: list[str], last: Op) -> Op:
        """The QLinearLookup of ``steps`` from ``inputs[0]`` to ``last``'s output, anchored at
        ``last``'s node; the other nodes but the DequantizeLinears (which just go) are fused."""
        while inputs and not inputs[-1]:
            inputs.pop()
        nodes = {n for s in steps for n in (s.node, *s.fused) if s.op_type != "DequantizeLinear"}
        table = lookup_table(self.g, steps, inputs[0])
        return Op(last.node, last.name, LOOKUP, "arena", tuple(inputs), (last.outputs[0],),
                  {"table": table, "steps": tuple(steps)}, tuple(sorted(nodes - {last.node})))

    def run(self) -> tuple[list[Op], int]:
        made = 0
        for k, dq in enumerate(list(self.ops)):
            if dq is None or dq.op_type != "DequantizeLinear" or dq.domain not in _ONNX:
                continue
            for r in self._readers(dq.outputs[0]):
                got = self._chain(dq, r)
                if got is None:
                    continue
                chain, op = got
                for i in chain[:-1]:
                    self.ops[i] = None
                self.ops[chain[-1]] = op
                made += 1
            if not self._readers(dq.outputs[0]) and dq.outputs[0] not in self.outputs:
                self.ops[k] = None
        changed = True
        while changed:  # a lookup feeding x * lookup(x), or another lookup, is one lookup
            changed = False
            for k, lk in enumerate(self.ops):
                if lk is None or lk.op_type != LOOKUP:
                    continue
                at = self._only_reader(lk.outputs[0])
                nxt = self.ops[at] if at is not None else None
                if at is None or nxt is None or not self._byte(nxt.outputs[0]):
                    continue
                op = lk
                x, h = op.inputs[0], op.outputs[0]
                xi, ni = list(op.inputs) + ["", ""], list(nxt.inputs) + ["", ""]
                if nxt.op_type == LOOKUP:
                    steps = [*op.attrs["steps"], *nxt.attrs["steps"]]
                    inputs = [xi[0], xi[1], xi[2], ni[3], ni[4]]
                elif nxt.op_type == "QLinearMul" and len(nxt.inputs) == 8 and {nxt.inputs[0], nxt.inputs[3]} == {x, h} \
                        and self.g.types[x].shape == self.g.types[h].shape == self.g.types[nxt.outputs[0]].shape:
                    steps = [*op.attrs["steps"], nxt]
                    inputs = [xi[0], xi[1], xi[2], nxt.inputs[6], nxt.inputs[7]]
                else:
                    continue
                self.ops[at] = self._lookup(steps, inputs, nxt)
                self.ops[k] = None
                changed = True
        return [op for op in self.ops if op is not None], made


# --- quantization parameters per tensor ------------------------------------------------------

def _quant(g: Graph, ops: Sequence[Op]) -> dict[str, Quant]:
    """Scale and zero point of every integer tensor the ops state them for."""
    out: dict[str, Quant] = {}

    def params(s: str, z: str, axis: int | None) -> Quant | None:
        c = g.consts.get(s)
        sv = c.array() if c is not None else None
        if sv is None:
            return None
        zc = g.consts.get(z) if z else None
        zv = zc.array() if zc is not None else None
        scale = tuple(float(v) for v in np.asarray(sv, np.float64).reshape(-1))
        zp = tuple(int(v) for v in np.asarray(zv).reshape(-1)) if zv is not None else (0,) * len(scale)
        return Quant(scale, zp, axis if len(scale) > 1 else None)

    def note(t: str, s: str, z: str, axis: int | None = None) -> None:
        if t and t not in out and s:
            q = params(s, z, axis)
            if q is not None:
                out[t] = q

    def at(op: Op, i: int) -> str:
        return op.inputs[i] if i < len(op.inputs) else ""

    # The model's own Q/DQ nodes first, also those lowering absorbed: their tensors remain.
    original = [_op(g, g.nodes[i]) for i in g.schedule if g.nodes[i].op_type in ("QuantizeLinear", "DequantizeLinear")]
    for op in [*original, *ops]:
        spec = optable.spec(op.op_type)
        io = spec.quant_io if spec is not None else None
        if io is None:
            if spec is not None and spec.moves_integers and op.inputs and op.inputs[0] in out:
                for y in op.outputs:  # integers moved, parameters kept
                    if y and g.types.get(y, TensorType("", ())).dtype in INTEGER:
                        out.setdefault(y, out[op.inputs[0]])
            continue
        triples, result = io
        if op.op_type == "QLinearConcat":
            triples = tuple((i, i + 1, i + 2) for i in range(2, len(op.inputs), 3))
        axis = op.attrs.get("axis") if op.op_type in ("QuantizeLinear", "DequantizeLinear") else None
        for t, s, z in triples:
            note(at(op, t), at(op, s), at(op, z), axis if op.op_type == "DequantizeLinear" else 0)
        if "requant" in op.attrs and op.outputs[0]:  # a conv writing its concat's codes (_concat_codes)
            note(op.outputs[0], *op.attrs["requant"])
        if result is not None and op.outputs and op.outputs[0]:
            note(op.outputs[0], at(op, result[0]), at(op, result[1]), axis)
    # Weights of lowered QDQ: the folded DequantizeLinear states them.
    for i in g.folded:
        n = g.nodes[i]
        if n.op_type == "DequantizeLinear" and n.domain in _ONNX and len(n.inputs) > 1:
            rank = len(g.constant_shapes.get(n.inputs[0], ()))
            axis = int(n.attrs.get("axis", 1)) % rank if rank else 0
            note(n.inputs[0], n.inputs[1], n.inputs[2] if len(n.inputs) > 2 else "", axis)
    return out


# --- the lowered model as ONNX, for onnxruntime to run the same integer ops ------------------

def to_onnx(lw: Lowered) -> "onnx.ModelProto":
    """The lowered ops as an ONNX model onnxruntime runs: QOperator ops where lowering fused QDQ,
    the integer Clip of an absorbed Relu/Clip, QLinearHardSwish as DQ -> HardSwish -> Q (no
    onnxruntime op), every other op as the model has it. Tensor names are the model's, so its
    values compare one to one with the firmware's."""
    import onnx
    from onnx import helper, numpy_helper

    g = lw.graph
    assert g.model is not None
    src = g.model.graph
    nodes: list[onnx.NodeProto] = []
    extra: dict[str, np.ndarray] = {}

    def const(name: str, value: np.ndarray) -> str:
        extra[name] = value
        return name

    def itype(x: str) -> np.dtype:
        return np.dtype(np.int8 if lw.types[x].dtype == "int8" else np.uint8)

    for op in lw.ops:
        if op.domain == "arena" and op.op_type == "PatchWrite":  # a tile into its box: ScatterND
            tile = lw.types[op.inputs[0]]
            whole = lw.types[op.outputs[0]]
            data = op.inputs[1] if len(op.inputs) > 1 else const(
                f"{op.outputs[0]}::zeros", np.zeros(whole.shape, np.dtype(whole.dtype)))
            grid = np.indices(tile.shape, dtype=np.int64)
            for d, s in enumerate(op.attrs["starts"]):
                grid[d] += s
            idx = const(f"{op.outputs[0]}::indices", np.moveaxis(grid, 0, -1))
            nodes.append(helper.make_node("ScatterND", [data, idx, op.inputs[0]], list(op.outputs), name=op.name))
            continue
        if op.op_type == LOOKUP:  # its steps again, intermediates renamed after the output
            nodes += _lookup_nodes(op, src, const, itype)
            continue
        if op.origin is None and op.node >= len(src.node):  # a tile's input window (patches)
            a = op.attrs
            ends = [s + n for s, n in zip(a["starts"], lw.types[op.outputs[0]].shape)]
            nodes.append(helper.make_node("Slice", [op.inputs[0], const(f"{op.outputs[0]}::starts", np.array(a["starts"])),
                                                    const(f"{op.outputs[0]}::ends", np.array(ends))],
                                          list(op.outputs), name=op.name))
            continue
        original = src.node[op.node if op.origin is None else op.origin]
        if "requant" in op.attrs:  # a conv writing its concat's codes: its own, then the concat's table
            raw = f"{op.outputs[0]}::raw"
            conv = helper.make_node(op.op_type, list(op.inputs), [raw], name=op.name, domain=original.domain or None)
            conv.attribute.extend(original.attribute if op.origin is None else _tile_attrs(original.attribute, op))
            nodes += [conv, helper.make_node("DequantizeLinear", [raw, op.inputs[6], op.inputs[7]], [f"{raw}::dq"]),
                      helper.make_node("QuantizeLinear", [f"{raw}::dq", *op.attrs["requant"]], list(op.outputs))]
            continue
        if (op.op_type == original.op_type == "QLinearConcat" and op.origin is None
                and tuple(original.input) != op.inputs):  # the model's own, inputs renamed (a QDQ concat is fused)
            node = helper.make_node(op.op_type, list(op.inputs), list(op.outputs), name=op.name,
                                    domain=original.domain or None)
            node.attribute.extend(original.attribute)
            nodes.append(node)
            continue
        if not op.fused and op.op_type == original.op_type:
            if op.origin is None:
                nodes.append(original)
                continue
            tiled = helper.make_node(op.op_type, list(op.inputs), list(op.outputs), name=op.name,
                                     domain=original.domain or None)
            tiled.attribute.extend(_tile_attrs(original.attribute, op))
            nodes.append(tiled)
            continue
        out = op.outputs[0]
        if op.op_type == "Identity":  # a DequantizeLinear -> QuantizeLinear pair that cancels
            nodes.append(helper.make_node("Identity", list(op.inputs), list(op.outputs), name=op.name))
            continue
        if op.op_type == "QLinearHardSwish":
            x, xs, xz, ys, yz = (list(op.inputs) + [""] * 5)[:5]
            nodes += [helper.make_node("DequantizeLinear", [x, xs, xz], [f"{out}::dq"]),
                      helper.make_node("HardSwish", [f"{out}::dq"], [f"{out}::f"]),
                      helper.make_node("QuantizeLinear", [f"{out}::f", ys, yz], [out])]
            continue
        if op.op_type == "Clip" and op.domain in _ONNX:  # integer bounds as constants of the type
            t = itype(op.inputs[0])
            lo = const(f"{out}::min", np.array(op.attrs["min"], t))
            hi = const(f"{out}::max", np.array(op.attrs["max"], t))
            nodes.append(helper.make_node("Clip", [op.inputs[0], lo, hi], op.outputs, name=op.name))
            continue
        inputs = list(op.inputs)
        if op.op_type == "Pad" and "value" in op.attrs:
            while len(inputs) < 3:
                inputs.append("")
            inputs[2] = const(f"{out}::value", np.array(op.attrs["value"], itype(op.inputs[0])))
        anchor = optable.spec(original.op_type)
        qop = anchor.qoperator if anchor is not None else None
        keep = qop.attrs if qop is not None and qop.op_type == op.op_type else None
        attrs = [a for a in original.attribute if keep is None or a.name in keep]
        ranged = "output_min" in op.attrs
        y = f"{out}::unclipped" if ranged else out
        node = helper.make_node(op.op_type, inputs, [y] if len(op.outputs) == 1 else list(op.outputs),
                                name=op.name, domain=op.domain or None)
        node.attribute.extend(attrs if op.origin is None else _tile_attrs(attrs, op))
        if op.op_type == "QLinearSoftmax":
            node.attribute.append(helper.make_attribute("opset", optable.opset(g)))
        if op.op_type in ("QLinearAveragePool", "QLinearGlobalAveragePool"):
            node.attribute.append(helper.make_attribute("channels_last", 0))
        nodes.append(node)
        if ranged:
            t = itype(out)
            nodes.append(helper.make_node("Clip", [y, const(f"{out}::min", np.array(op.attrs["output_min"], t)),
                                                   const(f"{out}::max", np.array(op.attrs["output_max"], t))], [out]))
    used = {x for n in nodes for x in n.input if x} | set(lw.outputs)
    inits = [t for t in src.initializer if t.name in used]
    have = {t.name for t in inits} | set(lw.inputs)
    inits += [numpy_helper.from_array(np.asarray(lw.value(n)), n) for n in sorted(used - have) if n in g.consts]
    inits += [numpy_helper.from_array(v, n) for n, v in extra.items()]
    graph = helper.make_graph(nodes, src.name or "lowered", [v for v in src.input if v.name in lw.inputs],
                              list(src.output), inits)
    opsets = [o for o in g.model.opset_import if o.domain not in ("com.microsoft",)]
    opsets.append(helper.make_opsetid("com.microsoft", 1))
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = g.model.ir_version
    return model


def _lookup_nodes(op: Op, src: "onnx.GraphProto", const: Callable[[str, np.ndarray], str],
                  itype: Callable[[str], np.dtype]) -> list["onnx.NodeProto"]:
    """A QLinearLookup (or a tile of one) as the ops it replaced: each step with its original
    attributes, reading the lookup's input and writing its output, the tensors between named
    ``<output>::<tensor>``; a QLinearMul's absorbed range as a Clip."""
    from onnx import helper

    steps: Sequence[Op] = op.attrs["steps"]
    out = op.outputs[0]
    x, y_last = steps[0].inputs[0], steps[-1].outputs[0]
    moved = {x, *(s.outputs[0] for s in steps)}  # the activations; every other input is a constant

    def name(t: str) -> str:
        return t if t not in moved else op.inputs[0] if t == x else out if t == y_last else f"{out}::{t}"

    nodes = []
    for s in steps:
        y = name(s.outputs[0])
        ranged = "output_min" in s.attrs
        node = helper.make_node(s.op_type, [name(t) for t in s.inputs], [f"{y}::unclipped" if ranged else y],
                                domain=s.domain or None)
        original = src.node[s.node]
        if s.op_type == original.op_type and not s.fused:
            node.attribute.extend(original.attribute)
        nodes.append(node)
        if ranged:
            t = itype(s.outputs[0])
            nodes.append(helper.make_node("Clip", [f"{y}::unclipped", const(f"{y}::min", np.array(s.attrs["output_min"], t)),
                                                   const(f"{y}::max", np.array(s.attrs["output_max"], t))], [y]))
    return nodes


def _tile_attrs(attrs: Sequence["onnx.AttributeProto"], op: Op) -> list["onnx.AttributeProto"]:
    """A tile's attributes: the node's, with the tile-local pads (explicit, no auto_pad)."""
    from onnx import helper

    out = [a for a in attrs if a.name not in ("pads", "auto_pad")]
    if "pads" in op.attrs:
        out.append(helper.make_attribute("pads", [int(p) for p in op.attrs["pads"]]))
    return out
