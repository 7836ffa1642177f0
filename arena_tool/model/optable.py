"""One table per op: everything arena knows about an ONNX op, in one entry (``TABLE``).

Before this table, one op lived in eight places (lowering's attribute branches, liveness's
in-place and view sets, codegen.OPS, coverage.RULES, the C enum, the C dispatch, the
prototypes and the kernel) and nothing kept them in step. Now each stage reads its part of
an ``OpSpec``:

* lowering: ``attrs``, the normalizer (defaults, auto_pad, axes, constant inputs),
  ``weight``, the weight input of a convolution (kernel shape, im2col ``Workspace``), and
  for QDQ ``qoperator`` (the integer op it fuses to), ``moves_integers`` and ``quant_io``;
* liveness: ``view``, ``inplace``, ``depthwise`` (and ``onnx_only``: those roles hold in the
  ONNX domain only);
* codegen: ``runtime`` (the C op and its kernel), ``reads`` (the inputs the kernel reads, so
  the tables hold those constants only), ``spatial`` and ``c_fields`` (arena_attrs_t);
* runtime support: ``checks``, what the kernel requires of a model (``Check`` and its kinds);
* macs: ``macs``, the op's multiply-accumulates from its shapes (model/macs.py: ``run
  --profile``, ``explain``, the build report, bench/speed.py).

The C side is generated from ``RUNTIME`` (enum order, append only: enum values never change)
as the X-macro header runtime/arena_ops.h (``python3 -m arena_tool.model.optable`` rewrites it;
tests/model/test_optable.py fails when it differs), which the runtime uses for the enum, the dispatch
switch and the kernel prototypes. Adding an op: one ``OpSpec`` (and a ``Runtime`` when it
runs), its C kernel, and the regenerated header.
"""

from __future__ import annotations

import dataclasses
import enum
import sys
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from arena_tool import runtime_dir
from arena_tool.core.errors import fail
from arena_tool.model.onnx_fold import CONTRIB
from arena_tool.model.onnx_node import Graph, Node, Shape

ONNX_DOMAINS = ("", "ai.onnx")
MS = "com.microsoft"
FLOAT = frozenset({"float32"})
INT8 = frozenset({"int8", "uint8"})
ANY = frozenset({"float32", "int8", "uint8", "int32", "int64"})

# Integer encodings of string attributes in the tables (arena_attrs_t.ints / axis).
PAD_MODES = {"constant": 0, "reflect": 1, "edge": 2}
RESIZE_MODES = {"nearest": 0, "linear": 1}
COORDINATE_MODES = {"half_pixel": 0, "asymmetric": 1, "align_corners": 2, "pytorch_half_pixel": 3,
                    "tf_half_pixel_for_nn": 4, "half_pixel_symmetric": 5}
NEAREST_MODES = {"round_prefer_floor": 0, "round_prefer_ceil": 1, "floor": 2, "ceil": 3, "simple": 4}


# --- the C runtime's ops ---------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Runtime:
    """One op of the C runtime: its arena_op_type_t constant, the kernel function the dispatch
    calls, and the op-specific table fields it reads (the enum's comment)."""

    enum: str
    kernel: str
    doc: str = ""


RUNTIME: list[Runtime] = []  # enum order (= values): append only


def _rt(name: str, kernel: str, doc: str = "") -> Runtime:
    r = Runtime(f"ARENA_OP_{name}", f"arena_k_{kernel}", doc)
    RUNTIME.append(r)
    return r


IDENTITY = _rt("IDENTITY", "identity")
CONV = _rt("CONV", "conv")
GEMM = _rt("GEMM", "gemm")
MATMUL = _rt("MATMUL", "matmul")
RELU = _rt("RELU", "unary")
CLIP = _rt("CLIP", "unary", "min, max")
LEAKY_RELU = _rt("LEAKY_RELU", "unary", "alpha")
SIGMOID = _rt("SIGMOID", "unary")
ADD = _rt("ADD", "binary")
SUB = _rt("SUB", "binary")
MUL = _rt("MUL", "binary")
DIV = _rt("DIV", "binary")
MAX_POOL = _rt("MAX_POOL", "pool")
AVERAGE_POOL = _rt("AVERAGE_POOL", "pool")
GLOBAL_AVERAGE_POOL = _rt("GLOBAL_AVERAGE_POOL", "global_pool")
GLOBAL_MAX_POOL = _rt("GLOBAL_MAX_POOL", "global_pool")
SOFTMAX = _rt("SOFTMAX", "softmax", "axis, legacy_axis")
CONCAT = _rt("CONCAT", "concat", "axis")
BATCH_NORM = _rt("BATCH_NORM", "batch_norm", "epsilon")
QUANTIZE_LINEAR = _rt("QUANTIZE_LINEAR", "quantize", "axis")
DEQUANTIZE_LINEAR = _rt("DEQUANTIZE_LINEAR", "dequantize", "axis")
# Quantized (QOperator and lowered QDQ; the *_q8.c kernels, int8 fast paths in *_int8.c): scales and zero points are inputs
# in onnxruntime's QOperator order.
QLINEAR_CONV = _rt("QLINEAR_CONV", "qlinear_conv")
QLINEAR_MATMUL = _rt("QLINEAR_MATMUL", "qlinear_matmul")
QLINEAR_ADD = _rt("QLINEAR_ADD", "qlinear_binary")
QLINEAR_MUL = _rt("QLINEAR_MUL", "qlinear_binary")
QGEMM = _rt("QGEMM", "qgemm", "floats: alpha * a_scale * b_scale[j] / y_scale per entry of b_scale (int8 output; codegen)")
QLINEAR_AVERAGE_POOL = _rt("QLINEAR_AVERAGE_POOL", "qlinear_pool")
QLINEAR_GLOBAL_AVERAGE_POOL = _rt("QLINEAR_GLOBAL_AVERAGE_POOL", "qlinear_global_pool")
QLINEAR_CONCAT = _rt("QLINEAR_CONCAT", "qlinear_concat")
QLINEAR_SOFTMAX = _rt("QLINEAR_SOFTMAX", "qlinear_softmax")
QLINEAR_SIGMOID = _rt("QLINEAR_SIGMOID", "qlinear_unary")
QLINEAR_LEAKY_RELU = _rt("QLINEAR_LEAKY_RELU", "qlinear_unary")
QLINEAR_HARD_SWISH = _rt("QLINEAR_HARD_SWISH", "qlinear_unary")
# Layout and more element-wise ops (transpose.c, pad.c, ..., unary_f32.c, binary_f32.c).
TRANSPOSE = _rt("TRANSPOSE", "transpose", "ints: perm[rank]")
PAD = _rt("PAD", "pad", "ints: begin[rank], end[rank]; axis: mode 0 constant 1 reflect 2 edge; value")
SLICE = _rt("SLICE", "slice", "ints: per input dim d, interleaved: start[d], step[d] (normalized, in range)")
SPLIT = _rt("SPLIT", "split", "axis; the sizes are the outputs'")
RESIZE = _rt("RESIZE", "resize", "ints: mode (0 nearest 1 linear), coordinate transform, nearest mode "
             "(4 = Resize-10's round up when downsampling); floats: scale per dim")
REDUCE_MEAN = _rt("REDUCE_MEAN", "reduce_mean", "ints: 1 where dim d is reduced, per input dim")
HARD_SIGMOID = _rt("HARD_SIGMOID", "unary", "alpha, beta")
HARD_SWISH = _rt("HARD_SWISH", "unary")
TANH = _rt("TANH", "unary")
EXP = _rt("EXP", "unary")
NEG = _rt("NEG", "unary")
ABS = _rt("ABS", "unary")
SQRT = _rt("SQRT", "unary")
ERF = _rt("ERF", "unary")
ELU = _rt("ELU", "unary", "alpha")
MAX = _rt("MAX", "binary")
MIN = _rt("MIN", "binary")
PRELU = _rt("PRELU", "binary")
LRN = _rt("LRN", "lrn", "alpha, beta; ints: size; floats: bias")
SOFTSIGN = _rt("SOFTSIGN", "unary")
PATCH_WRITE = _rt("PATCH_WRITE", "patch_write", "ints: per dim the first index of the box input 0 fills; input 1, "
                  "when present, is the whole tensor so far (in place)")
QLINEAR_LOOKUP = _rt("QLINEAR_LOOKUP", "qlinear_lookup", "ints: the 256 output bytes by input byte, four a word "
                     "(little-endian)")
# TFLite's int8 ops, NHWC, with TFLite's fixed-point requantization (tfl_*_int8.c, support_tfl.h): what a
# .tflite lowers to (model/tflite_lower.py), bit for bit TFLite Micro's reference kernels.
TFL_CONV = _rt("TFL_CONV", "tfl_conv", "TFLite CONV_2D/DEPTHWISE_CONV_2D; ints: x_offset, y_zp, act_min, act_max, "
               "depth multiplier (0: a conv); input 3: (multiplier, shift) per output channel")
TFL_FULLY_CONNECTED = _rt("TFL_FULLY_CONNECTED", "tfl_fully_connected", "TFLite FULLY_CONNECTED; ints: x_offset, "
                          "w_offset, y_zp, act_min, act_max; input 3: (multiplier, shift) per output")
TFL_AVERAGE_POOL = _rt("TFL_AVERAGE_POOL", "tfl_average_pool", "TFLite AVERAGE_POOL_2D; ints: act_min, act_max")
TFL_SOFTMAX = _rt("TFL_SOFTMAX", "tfl_softmax", "TFLite SOFTMAX; ints: input multiplier, input left shift, diff_min")
TFL_BINARY = _rt("TFL_BINARY", "tfl_binary", "TFLite ADD/MUL; ints: mode (0 add, 1 mul), offsets 1 and 2, output "
                 "zero point, left shift, (multiplier, shift) of input 1, input 2, the output; act_min, act_max")
TFL_MAX_POOL = _rt("TFL_MAX_POOL", "tfl_max_pool", "TFLite MAX_POOL_2D; ints: act_min, act_max")
TFL_QUANTIZE = _rt("TFL_QUANTIZE", "tfl_quantize", "TFLite QUANTIZE float32 -> int8, DEQUANTIZE int8 -> float32; "
                   "ints: zero point; floats: scale")
TFL_MEAN = _rt("TFL_MEAN", "tfl_mean", "TFLite MEAN; ints: multiplier, shift, x_zp, y_zp (int8), then per input dim 1 "
               "where it is reduced")
# TFLite's float32 ops (tfl_*_f32.c): TFLM's reference loops in TFLM's order, so the same float bits.
TFL_CONV_F32 = _rt("TFL_CONV_F32", "tfl_conv_f32", "TFLite CONV_2D/DEPTHWISE_CONV_2D float32; ints: 0, 0, 0, 0, "
                   "depth multiplier (0: a conv); floats: act_min, act_max")
TFL_FULLY_CONNECTED_F32 = _rt("TFL_FULLY_CONNECTED_F32", "tfl_fully_connected_f32", "TFLite FULLY_CONNECTED float32; "
                              "floats: act_min, act_max")
TFL_BINARY_F32 = _rt("TFL_BINARY_F32", "tfl_binary_f32", "TFLite ADD/MUL float32; ints: mode (0 add, 1 mul); floats: "
                     "act_min, act_max")
TFL_AVERAGE_POOL_F32 = _rt("TFL_AVERAGE_POOL_F32", "tfl_average_pool_f32", "TFLite AVERAGE_POOL_2D float32; floats: "
                           "act_min, act_max")
TFL_MAX_POOL_F32 = _rt("TFL_MAX_POOL_F32", "tfl_max_pool_f32", "TFLite MAX_POOL_2D float32; floats: act_min, act_max")
TFL_SOFTMAX_F32 = _rt("TFL_SOFTMAX_F32", "tfl_softmax_f32", "TFLite SOFTMAX float32; floats: beta")
TFL_UNARY_F32 = _rt("TFL_UNARY_F32", "tfl_unary_f32", "TFLite LOGISTIC/TANH/HARD_SWISH float32; ints: function (0 "
                    "logistic, 1 tanh, 2 hard swish)")


# --- what a kernel requires of a model (runtime_support.py tests each against the model) -----------

class Check(enum.Enum):
    """A requirement without parameters (runtime_support.py implements each)."""

    SPATIAL = "a 1-D or 2-D kernel window"
    RESIZE = "nearest or linear, a known coordinate transform; linear on floats only"
    PAD_MODE = "pad mode constant, reflect or edge"
    AVG_DILATIONS = "no dilations (average pools)"
    FLOOR_MODE = "floor-mode windows (the quantized average pool)"
    CHANNELS_FIRST = "NCHW (the quantized pools)"
    EVERY_OUTPUT_NAMED = "every output named (Split writes them all)"
    INFERENCE_MODE = "inference: running statistics, Dropout as the identity"
    RESIZE_EXACT = "no antialias, aspect policy stretch (Resize-18)"
    PER_AXIS_ONLY = "per-tensor or per-axis scales, not blocked"
    MATRICES = "operands of rank 2 or more"
    ACCUMULATES = "products per output that one int32 accumulator holds"


@dataclasses.dataclass(frozen=True)
class Dtypes:
    """Input 0 and every output are of these element types."""

    allowed: frozenset[str]


@dataclasses.dataclass(frozen=True)
class Needs:
    """Normalized attributes that exist only when their inputs are constants."""

    keys: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class InputsAtMost:
    n: int


@dataclasses.dataclass(frozen=True)
class Converts:
    """Input 0 of one type set, output 0 of another (quantize, dequantize, QGemm)."""

    src: frozenset[str]
    dst: frozenset[str]


@dataclasses.dataclass(frozen=True)
class PerTensor:
    """These input positions are scales with one value."""

    scales: tuple[int, ...]


@dataclasses.dataclass(frozen=True)
class FirstOutputOnly:
    """The kernel computes output 0 only; ``what`` the others are."""

    what: str


CheckKind = Check | Dtypes | Needs | InputsAtMost | Converts | PerTensor | FirstOutputOnly


# --- the ONNX op --------------------------------------------------------------------------------

AttrFn = Callable[[Graph, Node, dict[str, Any]], dict[str, Any]]
CFieldFn = Callable[[Mapping[str, Any], int], dict[str, Any]]
# (normalized attributes, input shapes, output shapes; None where not static) -> MACs, or None
MacsFn = Callable[[Mapping[str, Any], Sequence["Shape | None"], Sequence["Shape | None"]], "int | None"]


@dataclasses.dataclass(frozen=True)
class Inplace:
    """Inputs an element-wise op may write its output over (liveness decides when it may):
    ``positions`` (None: every input); ``same_shape``: only inputs of the output's shape (a
    broadcast input element is read for several outputs); never while attribute ``unless`` is
    set (BatchNormalization's training_mode)."""

    positions: tuple[int, ...] | None
    same_shape: bool
    unless: str = ""


UNARY = Inplace((0,), same_shape=False)  # element-wise over input 0; the others are only read
BINARY = Inplace(None, same_shape=True)


@dataclasses.dataclass(frozen=True)
class QOperator:
    """The integer op that ``DequantizeLinear -> op [-> Relu|Clip] -> QuantizeLinear`` lowers to
    (lowering): its type and domain, the positions of the op's quantized operands (() = every
    input, Concat), and the op's attributes onnxruntime's op of that name takes (None: all;
    lowering.to_onnx)."""

    op_type: str
    domain: str
    operands: tuple[int, ...]
    attrs: tuple[str, ...] | None = None


# A QOperator signature: the (tensor, scale, zero point) input positions, and the output's
# (scale, zero point) positions (None: a float output).
QuantIO = tuple[tuple[tuple[int, int, int], ...], tuple[int, int] | None]


def _contrib(op_type: str) -> QuantIO:
    _, triples, result = CONTRIB[op_type]
    return triples, result


@dataclasses.dataclass(frozen=True)
class OpSpec:
    """One ONNX op type: how it is lowered, planned, emitted and checked (module docstring).

    runtime: the C op it runs as (None: arena plans it, its runtime has no kernel).
    reads: the input positions the kernel reads (None: all); codegen stores only those constants.
    attrs: normalizes the node's plain attributes (lowering); None keeps them as they are.
    weight: a convolution's weight input (its kernel shape, and the im2col workspace).
    spatial: the kernel reads kernel/strides/pads/dilations/group (a window over the input).
    view: the output may share the input's bytes (same elements and bits): nothing is written.
    inplace: element-wise in place (Inplace).
    depthwise: a depthwise form may run in place, one channel saved in its workspace (TinyEngine).
    onnx_only: view, inplace and depthwise hold only for the ONNX domain's op of this name.
    c_fields: the op-specific arena_attrs_t fields from the normalized attributes and input rank.
    checks: what the kernel requires of a model (runtime_support).
    qoperator: the integer op it lowers to between DequantizeLinear and QuantizeLinear (QOperator).
    moves_integers: it moves or selects elements unchanged, so between a DequantizeLinear and a
      QuantizeLinear of equal parameters it runs on the integers (Relu/Clip as an integer Clip).
    quant_io: a quantized op's signature (QuantIO): where its tensors' scales and zero points are.
    macs: its multiply-accumulates (None: the op has none; its cost is per element).
    """

    op_type: str
    runtime: Runtime | None = None
    reads: tuple[int, ...] | None = None
    attrs: AttrFn | None = None
    weight: int | None = None
    spatial: bool = False
    view: bool = False
    inplace: Inplace | None = None
    depthwise: bool = False
    onnx_only: bool = True
    c_fields: CFieldFn | None = None
    checks: tuple[CheckKind, ...] = ()
    qoperator: QOperator | None = None
    moves_integers: bool = False
    quant_io: QuantIO | None = None
    macs: MacsFn | None = None

    def applies(self, domain: str) -> bool:
        """Whether the liveness roles (view, inplace, depthwise) hold for a node of ``domain``."""
        return not self.onnx_only or domain in ONNX_DOMAINS


# --- attribute normalization (lowering) ----------------------------------------------------------

def opset(g: Graph) -> int:
    """The model's ONNX opset (13 for a graph without a model)."""
    if g.model is None:
        return 13
    return max((int(o.version) for o in g.model.opset_import if o.domain in ONNX_DOMAINS), default=1)


def _shape_fn(g: Graph) -> Callable[[str], Shape | None]:
    def shape(name: str) -> Shape | None:
        if name in g.types:
            return g.types[name].shape
        return g.constant_shapes.get(name)
    return shape


def _rank(g: Graph, name: str) -> int:
    return len(_shape_fn(g)(name) or ())


def _const_ints(g: Graph, node: Node, pos: int) -> list[int] | None:
    """A constant integer input as a list; [] when absent, None when not a constant."""
    if pos >= len(node.inputs) or not node.inputs[pos]:
        return []
    c = g.consts.get(node.inputs[pos])
    v = c.array() if c is not None else None
    return None if v is None else [int(x) for x in np.asarray(v).reshape(-1)]


def _window(a: Mapping[str, Any], kernel: list[int], x: Shape, y: Shape) -> dict[str, Any]:
    """kernel_shape, strides, dilations and explicit pads (auto_pad resolved), at the op's rank."""
    nd = len(kernel)
    strides = list(a.get("strides") or [1] * nd)
    dil = list(a.get("dilations") or [1] * nd)
    pads = list(a.get("pads") or [0] * (2 * nd))
    auto = a.get("auto_pad", "NOTSET")
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        for i in range(nd):
            total = max(0, (y[2 + i] - 1) * strides[i] + (kernel[i] - 1) * dil[i] + 1 - x[2 + i])
            small, big = total // 2, total - total // 2
            pads[i], pads[nd + i] = (small, big) if auto == "SAME_UPPER" else (big, small)
    elif auto == "VALID":
        pads = [0] * (2 * nd)
    return {"kernel_shape": kernel, "strides": strides, "dilations": dil, "pads": pads, "auto_pad": "NOTSET"}


def _spatial(g: Graph, node: Node, a: dict[str, Any]) -> dict[str, Any]:
    """A window's explicit geometry: the kernel from kernel_shape or the weight's shape."""
    if not (node.inputs and node.outputs):
        return a
    shape = _shape_fn(g)
    x, y = shape(node.inputs[0]), shape(node.outputs[0])
    pos = TABLE[node.op_type].weight
    w = node.inputs[pos] if pos is not None and len(node.inputs) > pos else ""
    kernel = list(a.get("kernel_shape") or (shape(w) or ())[2:])
    if kernel and x is not None and y is not None:
        a.update(_window(a, kernel, x, y))
    a.setdefault("group", 1)
    return a


def _average_pool(g: Graph, node: Node, a: dict[str, Any]) -> dict[str, Any]:
    a = _spatial(g, node, a)
    if node.inputs and node.outputs:
        a.setdefault("count_include_pad", 0)
    return a


def _gemm(g: Graph, node: Node, a: dict[str, Any]) -> dict[str, Any]:
    return {"alpha": float(a.get("alpha", 1.0)), "beta": float(a.get("beta", 1.0)),
            "transA": int(a.get("transA", 0)), "transB": int(a.get("transB", 0))}


def _leaky_relu(g: Graph, node: Node, a: dict[str, Any]) -> dict[str, Any]:
    a["alpha"] = float(a.get("alpha", 0.01))
    return a


def _clip(g: Graph, node: Node, a: dict[str, Any]) -> dict[str, Any]:
    """min/max from the attributes (opset < 11) or the constant inputs 1 and 2."""
    lo, hi = float(a.get("min", -np.inf)), float(a.get("max", np.inf))
    for pos in (1, 2):
        if len(node.inputs) > pos and node.inputs[pos]:
            v = g.consts.get(node.inputs[pos])
            arr = v.array() if v is not None else None
            if arr is None:
                fail(f"Clip {node.name!r}: min/max must be constants", field=f"graph.node[{node.index}]",
                     hint="fold them before export (e.g. onnxsim)")
            lo, hi = (float(arr.reshape(-1)[0]), hi) if pos == 1 else (lo, float(arr.reshape(-1)[0]))
    return {"min": lo, "max": hi}


def _softmax(g: Graph, node: Node, a: dict[str, Any]) -> dict[str, Any]:
    """The non-negative axis, and whether it flattens from there (before opset 13)."""
    rank = _rank(g, node.inputs[0])
    legacy = opset(g) < 13 if node.op_type != "QLinearSoftmax" else int(a.get("opset", 13)) < 13
    axis = int(a.get("axis", 1 if legacy else -1))
    return {"axis": axis % rank if rank else 0, "legacy_axis": int(legacy)}


def _concat(g: Graph, node: Node, a: dict[str, Any]) -> dict[str, Any]:
    rank = _rank(g, node.inputs[2 if node.op_type == "QLinearConcat" else 0])
    a["axis"] = int(a["axis"]) % rank if rank else 0
    return a


def _batch_norm(g: Graph, node: Node, a: dict[str, Any]) -> dict[str, Any]:
    a["epsilon"] = float(a.get("epsilon", 1e-5))
    return a


def _quant_axis(g: Graph, node: Node, a: dict[str, Any]) -> dict[str, Any]:
    rank = _rank(g, node.inputs[0])
    a["axis"] = int(a.get("axis", 1)) % rank if rank else 0
    return a


def _hard_sigmoid(g: Graph, node: Node, a: dict[str, Any]) -> dict[str, Any]:
    return {"alpha": float(a.get("alpha", 0.2)), "beta": float(a.get("beta", 0.5))}


def _transpose(g: Graph, node: Node, a: dict[str, Any]) -> dict[str, Any]:
    rank = _rank(g, node.inputs[0])
    a["perm"] = [int(p) % rank for p in a.get("perm", list(range(rank))[::-1])] if rank else []
    return a


def _pad(g: Graph, node: Node, a: dict[str, Any]) -> dict[str, Any]:
    """pads over every dim (begin..., end...), mode, value; no 'pads' when they are not constant."""
    rank = _rank(g, node.inputs[0])
    out: dict[str, Any] = {"mode": a.get("mode", "constant"), "value": float(a.get("value", 0.0))}
    if opset(g) < 11:
        pads: list[int] | None = [int(p) for p in a.get("pads", [0] * 2 * rank)]
        axes: list[int] | None = list(range(rank))
    else:
        pads, axes = _const_ints(g, node, 1), _const_ints(g, node, 3)
        if len(node.inputs) > 2 and node.inputs[2]:
            c = g.consts.get(node.inputs[2])
            v = c.array() if c is not None else None
            if v is None:
                return out
            out["value"] = float(np.asarray(v).reshape(-1)[0]) if np.asarray(v).size else 0.0
        axes = axes or list(range(rank))
    if pads is None or axes is None or len(pads) != 2 * len(axes):
        return out
    full = [0] * (2 * rank)
    for i, ax in enumerate(axes):
        full[ax % rank], full[rank + ax % rank] = pads[i], pads[len(axes) + i]
    out["pads"] = full
    return out


def _slice(g: Graph, node: Node, a: dict[str, Any]) -> dict[str, Any]:
    """Per input dim the first element read and the step (ONNX's clamping applied); nothing
    when starts/ends/axes/steps are not constants."""
    dims = _shape_fn(g)(node.inputs[0]) or ()
    rank = len(dims)
    if opset(g) < 10:
        starts, ends = list(a.get("starts", [])), list(a.get("ends", []))
        axes, steps = list(a.get("axes", range(len(starts)))), [1] * len(starts)
    else:
        c_starts, c_ends, c_axes, c_steps = (_const_ints(g, node, i) for i in (1, 2, 3, 4))
        if c_starts is None or c_ends is None or c_axes is None or c_steps is None:
            return {}
        starts, ends = c_starts, c_ends
        axes = c_axes or list(range(len(starts)))
        steps = c_steps or [1] * len(starts)
    first, step = [0] * rank, [1] * rank
    for ax, s0, e0, st in zip(axes, starts, ends, steps):
        ax %= rank
        d = dims[ax]
        s0 = s0 + d if s0 < 0 else s0
        first[ax] = min(max(s0, 0), d) if st > 0 else min(max(s0, 0), d - 1)
        step[ax] = st
    return {"starts": first, "steps": step}


def _reduce(g: Graph, node: Node, a: dict[str, Any]) -> dict[str, Any]:
    rank = _rank(g, node.inputs[0])
    axes: list[int] | None = [int(x) for x in a["axes"]] if "axes" in a else _const_ints(g, node, 1)
    if axes is None:
        return {"keepdims": int(a.get("keepdims", 1))}
    if not axes and not a.get("noop_with_empty_axes", 0):
        axes = list(range(rank))
    return {"axes": sorted({x % rank for x in axes}) if rank else [], "keepdims": int(a.get("keepdims", 1))}


def _resize(g: Graph, node: Node, a: dict[str, Any]) -> dict[str, Any]:
    """mode, coordinate transform, nearest rounding and one scale per dim (from scales, or
    sizes / input dims); no 'scales' when neither is a constant."""
    version = opset(g)
    x, y = _shape_fn(g)(node.inputs[0]) or (), _shape_fn(g)(node.outputs[0]) or ()
    out: dict[str, Any] = {
        "mode": a.get("mode", "nearest"),
        "coordinate_transformation_mode": a.get("coordinate_transformation_mode",
                                                "half_pixel" if version >= 11 else "asymmetric"),
        # Resize-10 and Upsample round up when downsampling, else down ('simple', onnxruntime's rule).
        "nearest_mode": a.get("nearest_mode", "round_prefer_floor" if version >= 11 else "simple"),
        "cubic_coeff_a": float(a.get("cubic_coeff_a", -0.75)),
        "exclude_outside": int(a.get("exclude_outside", 0)),
    }
    if node.op_type == "Upsample" and "scales" in a:
        scales = [float(v) for v in a["scales"]]
    else:
        pos = 2 if node.op_type == "Resize" and version >= 11 else 1
        c = g.consts.get(node.inputs[pos]) if pos < len(node.inputs) and node.inputs[pos] else None
        v = c.array() if c is not None else None
        scales = [float(s) for s in np.asarray(v).reshape(-1)] if v is not None else []
        if not scales and node.op_type == "Resize" and version >= 11:
            sizes = _const_ints(g, node, 3)
            if sizes and len(sizes) == len(x):
                scales = [sz / d for sz, d in zip(sizes, x)]
    if len(scales) == len(x) and len(y) == len(x):
        out["scales"] = scales
    return out


def _split(g: Graph, node: Node, a: dict[str, Any]) -> dict[str, Any]:
    rank = _rank(g, node.inputs[0])
    return {"axis": int(a.get("axis", 0)) % rank if rank else 0}


def _elu(g: Graph, node: Node, a: dict[str, Any]) -> dict[str, Any]:
    return {"alpha": float(a.get("alpha", 1.0))}


def _lrn(g: Graph, node: Node, a: dict[str, Any]) -> dict[str, Any]:
    return {"alpha": float(a.get("alpha", 1e-4)), "beta": float(a.get("beta", 0.75)),
            "bias": float(a.get("bias", 1.0)), "size": int(a["size"])}


# --- op-specific table fields (codegen; arena_model.h's arena_attrs_t) -----------------------------

def _c_clip(a: Mapping[str, Any], rank: int) -> dict[str, Any]:
    return {"min": max(float(a["min"]), -3.4e38), "max": min(float(a["max"]), 3.4e38)}


def _c_lookup(a: Mapping[str, Any], rank: int) -> dict[str, Any]:
    """The 256-byte table as 64 int32 words, byte 4k + j in bits 8j.. of word k (little-endian:
    the kernel reads the words' bytes in order)."""
    t = bytes(int(b) & 0xFF for b in a["table"])
    return {"ints": [int.from_bytes(t[i:i + 4], "little", signed=True) for i in range(0, len(t), 4)]}


def _c_requant(a: Mapping[str, Any], rank: int) -> dict[str, Any]:
    """A QLinearConv writing its concat's codes (lowering._concat_codes): its table, as a lookup's."""
    return _c_lookup(a, rank) if "table" in a else {}


def _c_transpose(a: Mapping[str, Any], rank: int) -> dict[str, Any]:
    return {"ints": list(a.get("perm", []))}


def _c_pad(a: Mapping[str, Any], rank: int) -> dict[str, Any]:
    if "pads" not in a:
        return {}
    return {"ints": list(a["pads"]), "axis": PAD_MODES.get(a.get("mode", "constant"), -1),
            "value": a.get("value", 0.0)}


def _c_slice(a: Mapping[str, Any], rank: int) -> dict[str, Any]:
    return {"ints": [v for pair in zip(a["starts"], a["steps"]) for v in pair]} if "starts" in a else {}


def _c_resize(a: Mapping[str, Any], rank: int) -> dict[str, Any]:
    if "scales" not in a:
        return {}
    return {"ints": [RESIZE_MODES.get(a["mode"], -1), COORDINATE_MODES.get(a["coordinate_transformation_mode"], -1),
                     NEAREST_MODES.get(a["nearest_mode"], -1)],
            "floats": list(a["scales"])}


def _c_lrn(a: Mapping[str, Any], rank: int) -> dict[str, Any]:
    return {"ints": [int(a["size"])], "floats": [float(a["bias"])]}


def _c_patch_write(a: Mapping[str, Any], rank: int) -> dict[str, Any]:
    return {"ints": list(a["starts"])}


def _tfl(g: Graph, node: Node, a: dict[str, Any]) -> dict[str, Any]:
    """A TFLite op's attributes come normalized from model/tflite_lower.py (TFLite's own padding and
    parameters, computed once there): kept as they are."""
    return a


def _c_tfl(a: Mapping[str, Any], rank: int) -> dict[str, Any]:
    """A TFLite op's integer parameters (model/tflite_lower.py computes them as TFLite does)."""
    return {"ints": list(a["tfl"]), **({"floats": list(a["tfl_floats"])} if "tfl_floats" in a else {})}


def _c_reduce_mean(a: Mapping[str, Any], rank: int) -> dict[str, Any]:
    return {"ints": [int(d in a["axes"]) for d in range(rank)]} if "axes" in a else {}


# --- multiply-accumulates (model/macs.py) --------------------------------------------------------------
# Conv and Gemm count as TFLM's conv and fully-connected do (../shared/tools/tflm_speed/macs.py);
# pools add one accumulate per window element read, as ``stedgeai analyze`` counts them in its MACC.

def _macs_conv(a: Mapping[str, Any], ins: Sequence[Shape | None], outs: Sequence[Shape | None]) -> int | None:
    """Output elements x Cin/group x the kernel window (depthwise and grouped convs too)."""
    x, y, kernel = ins[0] if ins else None, outs[0] if outs else None, a.get("kernel_shape")
    if x is None or y is None or not kernel or len(x) < 2:
        return None
    return int(np.prod(y)) * (int(x[1]) // (int(a.get("group", 1)) or 1)) * int(np.prod(kernel))


def _macs_gemm(a: Mapping[str, Any], ins: Sequence[Shape | None], outs: Sequence[Shape | None]) -> int | None:
    """Output elements x K, the inner dimension (A's columns, or its rows with transA)."""
    x, y = ins[0] if ins else None, outs[0] if outs else None
    if x is None or y is None or not x:
        return None
    k = x[0] if a.get("transA") and len(x) == 2 else x[-1]
    return int(np.prod(y)) * int(k)


def _macs_tfl_conv(a: Mapping[str, Any], ins: Sequence[Shape | None], outs: Sequence[Shape | None]) -> int | None:
    """NHWC: output elements x the filter's taps per output (KH x KW x its input depth; depthwise: KH x KW)."""
    y, w = outs[0] if outs else None, ins[1] if len(ins) > 1 else None
    if y is None or w is None or len(w) != 4:
        return None
    return int(np.prod(y)) * int(w[1]) * int(w[2]) * (1 if a.get("tfl", [0] * 5)[4] else int(w[3]))


def _macs_tfl_fc(a: Mapping[str, Any], ins: Sequence[Shape | None], outs: Sequence[Shape | None]) -> int | None:
    y, w = outs[0] if outs else None, ins[1] if len(ins) > 1 else None
    return None if y is None or w is None or len(w) != 2 else int(np.prod(y)) * int(w[1])


def _macs_window(a: Mapping[str, Any], ins: Sequence[Shape | None], outs: Sequence[Shape | None]) -> int | None:
    y, kernel = outs[0] if outs else None, a.get("kernel_shape")
    return None if y is None or not kernel else int(np.prod(y)) * int(np.prod(kernel))


def _macs_global(a: Mapping[str, Any], ins: Sequence[Shape | None], outs: Sequence[Shape | None]) -> int | None:
    x = ins[0] if ins else None
    return None if x is None else int(np.prod(x))


# --- the table -------------------------------------------------------------------------------------

MOVE = Dtypes(ANY)
WINDOW_ATTRS = ("auto_pad", "dilations", "group", "kernel_shape", "pads", "strides")
AVERAGE_POOL_ATTRS = ("auto_pad", "ceil_mode", "count_include_pad", "kernel_shape", "pads", "strides")
ELEMENTWISE_Q = Inplace((0,), same_shape=True)  # integer element-wise ops, any domain
BINARY_Q = Inplace((0, 3), same_shape=True)
X = (0,)  # the kernel reads input 0 only


def _specs(*specs: OpSpec) -> dict[str, OpSpec]:
    return {s.op_type: s for s in specs}


TABLE: dict[str, OpSpec] = _specs(
    # Views: the output is the input's bytes.
    *(OpSpec(t, IDENTITY, X, view=True, moves_integers=True, checks=(MOVE,))
      for t in ("Identity", "Reshape", "Flatten", "Squeeze", "Unsqueeze")),
    OpSpec("Dropout", IDENTITY, X, moves_integers=True,
           checks=(MOVE, Check.INFERENCE_MODE)),  # a mask output (bool) fails MOVE
    # Convolutions, matrix products.
    OpSpec("Conv", CONV, attrs=_spatial, weight=1, spatial=True, depthwise=True,
           qoperator=QOperator("QLinearConv", "", (0, 1), WINDOW_ATTRS), checks=(Dtypes(FLOAT), Check.SPATIAL),
           macs=_macs_conv),
    OpSpec("ConvInteger", attrs=_spatial, weight=1, macs=_macs_conv),
    OpSpec("QLinearConv", QLINEAR_CONV, attrs=_spatial, weight=3, spatial=True, depthwise=True, onnx_only=False,
           quant_io=(((0, 1, 2), (3, 4, 5)), (6, 7)), checks=(Dtypes(INT8), Check.SPATIAL, Check.ACCUMULATES),
           macs=_macs_conv, c_fields=_c_requant),
    OpSpec("Gemm", GEMM, attrs=_gemm, qoperator=QOperator("QGemm", MS, (0, 1), ("alpha", "transA", "transB")), checks=(Dtypes(FLOAT),),
           macs=_macs_gemm),
    OpSpec("QGemm", QGEMM, attrs=_gemm, quant_io=_contrib("QGemm"), checks=(Converts(INT8, INT8 | FLOAT),),
           macs=_macs_gemm),
    OpSpec("MatMul", MATMUL, qoperator=QOperator("QLinearMatMul", "", (0, 1)), checks=(Dtypes(FLOAT),),
           macs=_macs_gemm),
    OpSpec("QLinearMatMul", QLINEAR_MATMUL, quant_io=(((0, 1, 2), (3, 4, 5)), (6, 7)),
           checks=(Dtypes(INT8), Check.MATRICES, Check.ACCUMULATES), macs=_macs_gemm),
    # Element-wise, one input.
    OpSpec("Relu", RELU, inplace=UNARY, moves_integers=True, checks=(Dtypes(FLOAT | INT8),)),
    OpSpec("Clip", CLIP, X, attrs=_clip, inplace=UNARY, moves_integers=True, c_fields=_c_clip,
           checks=(Dtypes(FLOAT | INT8),)),
    OpSpec("LeakyRelu", LEAKY_RELU, attrs=_leaky_relu, inplace=UNARY,
           qoperator=QOperator("QLinearLeakyRelu", MS, (0,), ("alpha",)), checks=(Dtypes(FLOAT),)),
    OpSpec("Sigmoid", SIGMOID, inplace=UNARY, qoperator=QOperator("QLinearSigmoid", MS, (0,)),
           checks=(Dtypes(FLOAT),)),
    OpSpec("HardSigmoid", HARD_SIGMOID, X, attrs=_hard_sigmoid, inplace=UNARY, checks=(Dtypes(FLOAT),)),
    OpSpec("HardSwish", HARD_SWISH, X, inplace=UNARY,
           qoperator=QOperator("QLinearHardSwish", "arena", (0,)),  # no onnxruntime op; its signature
           checks=(Dtypes(FLOAT),)),
    OpSpec("Elu", ELU, X, attrs=_elu, inplace=UNARY, checks=(Dtypes(FLOAT),)),
    *(OpSpec(t, r, X, inplace=UNARY, checks=(Dtypes(FLOAT),))
      for t, r in (("Tanh", TANH), ("Exp", EXP), ("Neg", NEG), ("Abs", ABS), ("Sqrt", SQRT), ("Erf", ERF),
                   ("Softsign", SOFTSIGN))),
    OpSpec("PRelu", PRELU, inplace=UNARY, checks=(Dtypes(FLOAT),)),  # the slope is only read
    OpSpec("BatchNormalization", BATCH_NORM, (0, 1, 2, 3, 4), attrs=_batch_norm,
           inplace=Inplace((0,), same_shape=False, unless="training_mode"),
           checks=(Dtypes(FLOAT), FirstOutputOnly("a training statistic"), Check.INFERENCE_MODE)),
    OpSpec("QuantizeLinear", QUANTIZE_LINEAR, attrs=_quant_axis, inplace=UNARY, quant_io=((), (1, 2)),
           checks=(Converts(FLOAT, INT8), Check.PER_AXIS_ONLY)),
    OpSpec("DequantizeLinear", DEQUANTIZE_LINEAR, attrs=_quant_axis, inplace=UNARY, quant_io=(((0, 1, 2),), None),
           checks=(Converts(INT8 | {"int32"}, FLOAT), Check.PER_AXIS_ONLY)),
    *(OpSpec(t, inplace=UNARY) for t in ("Log", "Selu", "Celu", "Softplus", "Gelu", "Mish",
                                         "ThresholdedRelu", "Reciprocal", "Floor", "Ceil", "Round", "Sign", "Sin",
                                         "Cos", "Not", "Cast")),
    # Element-wise, several inputs (broadcasting).
    OpSpec("Add", ADD, inplace=BINARY, qoperator=QOperator("QLinearAdd", MS, (0, 1)),
           checks=(Dtypes(FLOAT), InputsAtMost(8))),
    OpSpec("Mul", MUL, inplace=BINARY, qoperator=QOperator("QLinearMul", MS, (0, 1)),
           checks=(Dtypes(FLOAT), InputsAtMost(8))),
    *(OpSpec(t, r, inplace=BINARY, checks=(Dtypes(FLOAT), InputsAtMost(8)))
      for t, r in (("Max", MAX), ("Min", MIN), ("Sum", ADD))),
    OpSpec("Sub", SUB, inplace=BINARY, checks=(Dtypes(FLOAT),)),
    OpSpec("Div", DIV, inplace=BINARY, checks=(Dtypes(FLOAT),)),
    OpSpec("Mean", inplace=BINARY),
    # Pools and reductions.
    OpSpec("MaxPool", MAX_POOL, attrs=_spatial, spatial=True, moves_integers=True,
           checks=(Dtypes(FLOAT | INT8), Check.SPATIAL),
           macs=_macs_window),  # an Indices output (int64) fails the dtype check
    OpSpec("AveragePool", AVERAGE_POOL, attrs=_average_pool, spatial=True,
           qoperator=QOperator("QLinearAveragePool", MS, (0,), AVERAGE_POOL_ATTRS),
           checks=(Dtypes(FLOAT), Check.SPATIAL, Check.AVG_DILATIONS), macs=_macs_window),
    OpSpec("LpPool", attrs=_spatial, macs=_macs_window),
    OpSpec("GlobalAveragePool", GLOBAL_AVERAGE_POOL, qoperator=QOperator("QLinearGlobalAveragePool", MS, (0,)),
           checks=(Dtypes(FLOAT),), macs=_macs_global),
    OpSpec("GlobalMaxPool", GLOBAL_MAX_POOL, moves_integers=True, checks=(Dtypes(FLOAT | INT8),), macs=_macs_global),
    OpSpec("ReduceMean", REDUCE_MEAN, X, attrs=_reduce, c_fields=_c_reduce_mean,
           checks=(Dtypes(FLOAT), Needs(("axes",)))),
    *(OpSpec(t, attrs=_reduce) for t in ("ReduceMax", "ReduceMin", "ReduceSum")),
    OpSpec("Softmax", SOFTMAX, attrs=_softmax, qoperator=QOperator("QLinearSoftmax", MS, (0,), ("axis",)),
           checks=(Dtypes(FLOAT),)),
    OpSpec("LogSoftmax", attrs=_softmax),
    OpSpec("LRN", LRN, X, attrs=_lrn, c_fields=_c_lrn, checks=(Dtypes(FLOAT),)),
    # Layout.
    OpSpec("Concat", CONCAT, attrs=_concat, qoperator=QOperator("QLinearConcat", MS, (), ("axis",)), checks=(MOVE,)),
    OpSpec("Transpose", TRANSPOSE, X, attrs=_transpose, moves_integers=True, c_fields=_c_transpose, checks=(MOVE,)),
    OpSpec("Pad", PAD, X, attrs=_pad, moves_integers=True, c_fields=_c_pad,
           checks=(MOVE, Needs(("pads",)), Check.PAD_MODE)),
    OpSpec("Slice", SLICE, X, attrs=_slice, moves_integers=True, c_fields=_c_slice, checks=(MOVE, Needs(("starts",)))),
    OpSpec("Split", SPLIT, X, attrs=_split, moves_integers=True, checks=(MOVE, Check.EVERY_OUTPUT_NAMED)),
    OpSpec("Resize", RESIZE, X, attrs=_resize, c_fields=_c_resize,
           checks=(MOVE, Needs(("scales",)), Check.RESIZE, Check.RESIZE_EXACT)),
    OpSpec("Upsample", RESIZE, X, attrs=_resize, c_fields=_c_resize, checks=(MOVE, Needs(("scales",)), Check.RESIZE)),
    # Quantized: QOperator ops (onnxruntime's contrib ops as onnx_fold types them), and lowered QDQ.
    *(OpSpec(t, r, inplace=BINARY_Q, onnx_only=False, quant_io=_contrib(t), checks=(Dtypes(INT8), PerTensor((1, 4, 6))))
      for t, r in (("QLinearAdd", QLINEAR_ADD), ("QLinearMul", QLINEAR_MUL))),
    OpSpec("QLinearAveragePool", QLINEAR_AVERAGE_POOL, attrs=_average_pool, spatial=True,
           quant_io=_contrib("QLinearAveragePool"),
           checks=(Dtypes(INT8), Check.SPATIAL, Check.CHANNELS_FIRST, Check.AVG_DILATIONS, Check.FLOOR_MODE),
           macs=_macs_window),
    OpSpec("QLinearGlobalAveragePool", QLINEAR_GLOBAL_AVERAGE_POOL, quant_io=_contrib("QLinearGlobalAveragePool"),
           checks=(Dtypes(INT8), Check.CHANNELS_FIRST), macs=_macs_global),
    OpSpec("QLinearConcat", QLINEAR_CONCAT, attrs=_concat, quant_io=_contrib("QLinearConcat"),  # triples from 2
           checks=(Dtypes(INT8),)),
    OpSpec("QLinearSoftmax", QLINEAR_SOFTMAX, attrs=_softmax, quant_io=_contrib("QLinearSoftmax"),
           checks=(Dtypes(INT8),)),
    OpSpec("QLinearSigmoid", QLINEAR_SIGMOID, inplace=ELEMENTWISE_Q, onnx_only=False,
           quant_io=_contrib("QLinearSigmoid"), checks=(Dtypes(INT8),)),
    OpSpec("QLinearLeakyRelu", QLINEAR_LEAKY_RELU, attrs=_leaky_relu, inplace=ELEMENTWISE_Q, onnx_only=False,
           quant_io=_contrib("QLinearLeakyRelu"), checks=(Dtypes(INT8),)),
    OpSpec("QLinearHardSwish", QLINEAR_HARD_SWISH, inplace=ELEMENTWISE_Q, onnx_only=False,
           quant_io=(((0, 1, 2),), (3, 4)), checks=(Dtypes(INT8),)),
    # An int8/uint8 element-wise chain folded into a 256-entry table (lowering._Lookups: DQ -> float ops ->
    # Q, a hard-swish's QLinearMul); no onnxruntime op, lowering.to_onnx writes its steps back.
    OpSpec("QLinearLookup", QLINEAR_LOOKUP, X, inplace=ELEMENTWISE_Q, onnx_only=False, c_fields=_c_lookup,
           quant_io=(((0, 1, 2),), (3, 4)), checks=(Dtypes(INT8),)),
    # TFLite's int8 ops (a lowered .tflite; the attributes come normalized from model/tflite_lower.py).
    OpSpec("TflConv2D", TFL_CONV, (0, 1, 2, 3), attrs=_tfl, spatial=True, c_fields=_c_tfl, checks=(Dtypes(frozenset({"int8"})),),
           macs=_macs_tfl_conv),
    OpSpec("TflDepthwiseConv2D", TFL_CONV, (0, 1, 2, 3, 4), attrs=_tfl, spatial=True, c_fields=_c_tfl,
           weight=1, depthwise=True, onnx_only=False, checks=(Dtypes(frozenset({"int8"})),), macs=_macs_tfl_conv),
    OpSpec("TflFullyConnected", TFL_FULLY_CONNECTED, (0, 1, 2, 3), c_fields=_c_tfl,
           checks=(Dtypes(frozenset({"int8"})),), macs=_macs_tfl_fc),
    OpSpec("TflAveragePool2D", TFL_AVERAGE_POOL, X, attrs=_tfl, spatial=True, c_fields=_c_tfl,
           checks=(Dtypes(frozenset({"int8"})),), macs=_macs_window),
    *(OpSpec(t, TFL_BINARY, inplace=Inplace((0, 1), same_shape=True), onnx_only=False, c_fields=_c_tfl,
             checks=(Dtypes(frozenset({"int8"})),)) for t in ("TflAdd", "TflMul")),  # ADD's input 2: its terms
    OpSpec("TflSoftmax", TFL_SOFTMAX, (0, 1), inplace=UNARY, onnx_only=False, c_fields=_c_tfl,
           checks=(Dtypes(frozenset({"int8"})),)),
    OpSpec("TflMaxPool2D", TFL_MAX_POOL, X, attrs=_tfl, spatial=True, c_fields=_c_tfl,
           checks=(Dtypes(frozenset({"int8"})),), macs=_macs_window),
    OpSpec("TflQuantize", TFL_QUANTIZE, X, c_fields=_c_tfl, checks=(Converts(FLOAT, frozenset({"int8"})),)),
    OpSpec("TflDequantize", TFL_QUANTIZE, X, c_fields=_c_tfl, checks=(Converts(frozenset({"int8"}), FLOAT),)),
    OpSpec("TflMean", TFL_MEAN, X, c_fields=_c_tfl, checks=(Dtypes(frozenset({"int8"}) | FLOAT),)),
    # float32 (the op types end in F32; the attributes as their int8 namesakes', the range in floats)
    *(OpSpec(t, TFL_CONV_F32, (0, 1, 2), attrs=_tfl, spatial=True, c_fields=_c_tfl, checks=(Dtypes(FLOAT),),
             macs=_macs_tfl_conv) for t in ("TflConv2DF32", "TflDepthwiseConv2DF32")),
    OpSpec("TflFullyConnectedF32", TFL_FULLY_CONNECTED_F32, (0, 1, 2), c_fields=_c_tfl, checks=(Dtypes(FLOAT),),
           macs=_macs_tfl_fc),
    *(OpSpec(t, r, X, attrs=_tfl, spatial=True, c_fields=_c_tfl, checks=(Dtypes(FLOAT),), macs=_macs_window)
      for t, r in (("TflAveragePool2DF32", TFL_AVERAGE_POOL_F32), ("TflMaxPool2DF32", TFL_MAX_POOL_F32))),
    *(OpSpec(t, TFL_BINARY_F32, inplace=Inplace(None, same_shape=True), onnx_only=False, c_fields=_c_tfl,
             checks=(Dtypes(FLOAT),)) for t in ("TflAddF32", "TflMulF32")),
    OpSpec("TflSoftmaxF32", TFL_SOFTMAX_F32, X, inplace=UNARY, onnx_only=False, c_fields=_c_tfl,
           checks=(Dtypes(FLOAT),)),
    OpSpec("TflUnaryF32", TFL_UNARY_F32, X, inplace=UNARY, onnx_only=False, c_fields=_c_tfl, checks=(Dtypes(FLOAT),)),
    # LOGISTIC, TANH, HARD_SWISH and int8 -> int8 QUANTIZE: TFLM's integer function of one byte as a table
    # (model/tflite_fixed.py), run by the QLinearLookup kernel.
    OpSpec("TflLookup", QLINEAR_LOOKUP, X, inplace=ELEMENTWISE_Q, onnx_only=False, c_fields=_c_lookup,
           checks=(Dtypes(frozenset({"int8"})),)),
    # Patch-based inference (model/patches.py): one tile into its box of the whole stage output,
    # written over the stage output so far (input 1).
    OpSpec("PatchWrite", PATCH_WRITE, inplace=Inplace((1,), same_shape=True), onnx_only=False,
           c_fields=_c_patch_write, checks=(MOVE,)),
)
WINDOWED = frozenset(t for t, s in TABLE.items() if s.spatial)  # kernels that read a window of input 0


def spec(op_type: str) -> OpSpec | None:
    """The table's entry for an op type (None: arena knows nothing particular of it)."""
    return TABLE.get(op_type)


# --- the C op list (runtime/arena_ops.h) --------------------------------------------------------------

HEADER = Path(runtime_dir()) / "arena_ops.h"


def c_header() -> str:
    """runtime/arena_ops.h: the X-macro lists of the runtime's ops and kernels, from RUNTIME."""
    onnx: dict[str, list[str]] = {}
    for s in TABLE.values():
        if s.runtime is not None:
            onnx.setdefault(s.runtime.enum, []).append(s.op_type)
    kernels = list(dict.fromkeys(r.kernel for r in RUNTIME))
    width = max(len(f"ARENA_OP({r.enum}, {r.kernel})") for r in RUNTIME)
    module = __spec__.name if __spec__ is not None else __name__  # also under python3 -m
    out = [f"/* arena_ops.h: the runtime's ops, generated from {module.replace('.', '/')}.py (python3 -m {module}).",
           " * Do not edit; test_optable.py fails when this file and the table differ.",
           " *",
           " * An X-macro list: define ARENA_OP(op, kernel) and/or ARENA_KERNEL(kernel), include this",
           " * file, undefine them. ARENA_OP is every arena_op_type_t constant in enum order (its value is",
           " * its position: new ops go last) with the kernel the dispatch calls, and the ONNX op types and",
           " * the op-specific arena_attrs_t fields it reads as a comment; ARENA_KERNEL each kernel once. */",
           "", "#ifdef ARENA_OP"]
    for r in RUNTIME:
        note = ", ".join(onnx.get(r.enum, [])) + (f"; {r.doc}" if r.doc else "")
        out.append(f"{f'ARENA_OP({r.enum}, {r.kernel})':<{width}} /* {note} */")
    out += ["#endif", "", "#ifdef ARENA_KERNEL", *(f"ARENA_KERNEL({k})" for k in kernels), "#endif", ""]
    return "\n".join(out)


def main(argv: list[str]) -> int:
    """Rewrite runtime/arena_ops.h (or the file named) from the table."""
    path = Path(argv[0]) if argv else HEADER
    path.write_text(c_header())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
