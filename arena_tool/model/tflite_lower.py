"""A .tflite flatbuffer -> Lowered: the ops arena's own runtime runs, with TFLite's semantics.

``tflite_model`` plans a .tflite the way TensorFlow Lite Micro runs it (``kernels: reference`` or
CMSIS-NN); this module is for ``kernels: arena``, a .tflite run by arena's C runtime: every
operator becomes one op of the op table whose kernel computes what TFLM's reference kernel
computes, bit for bit, so the lowered model is planned, emitted and run like an ONNX model
(liveness, codegen, the firmware) and compared with TFLM's host interpreter.

What is TFLite's and not ONNX's, decided here once, at build time:

* Requantization: TFLite multiplies an int32 accumulator by a fixed-point multiplier (QuantizeMultiplier:
  the double ``s_x * s_w[c] / s_y`` as a Q31 significand and a shift, the significand rounded half
  away from zero) with gemmlowp's double rounding; ONNX multiplies by a float and rounds half to
  even. The two differ, so a lowered .tflite never runs the QLinear kernels: its ops are the
  ``Tfl*`` ops (runtime/tfl_*_int8.c), each with a constant ``<op>::requant`` input holding
  (multiplier, shift) per output channel as TFLite computes them (``quantize_multiplier``).
* Fused activations: the output range TFLite's CalculateActivationRangeQuantized gives (its
  ``Quantize`` divides in float32 and rounds half away from zero).
* Padding: TFLite's SAME/VALID (ComputePaddingHeightWidth), top/left the smaller half.
* Layout: NHWC throughout, weights in TFLite's order (conv OHWI, depthwise 1HWC, fully connected
  [M, K]); the model's inputs and outputs are its own tensors.
* Softmax: the input multiplier, left shift and diff_min of PreprocessSoftmaxScaling.
* RESHAPE is a view (the bytes do not move in NHWC).

Every other operator keeps its TFLite name (domain ``tflite``) and has no kernel, so the runtime
check refuses it at build time, one line per op, as for ONNX. Float32 operators are not lowered
yet (TFLite's float kernels accumulate in their own order; arena's would not match bit for bit).
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

import numpy as np

from arena_tool.core.errors import fail
from arena_tool.core.problem import ModelOptions, Quant
from arena_tool.model import tflite_model
from arena_tool.model.onnx_node import Const, Graph, Node, TensorType, Weight

DOMAIN = "tflite"
# arena dtype -> ONNX TensorProto element type (Const.elem) and numpy type, for the types a lowered
# .tflite keeps as constants
_ELEM = {"float32": (1, np.float32), "uint8": (2, np.uint8), "int8": (3, np.int8), "int16": (5, np.int16),
         "int32": (6, np.int32), "int64": (7, np.int64)}
SAME, VALID = 0, 1  # tflite Padding
RELU, RELU_N1_TO_1, RELU6 = 1, 2, 3  # tflite ActivationFunctionType (NONE = 0)
SOFTMAX_DIFF_BITS = 5  # kScaledDiffIntegerBits
# The TFLite builtins lowered to arena's runtime ops (int8), and the op table's op each becomes.
LOWERED = {"CONV_2D": "TflConv2D", "DEPTHWISE_CONV_2D": "TflDepthwiseConv2D", "FULLY_CONNECTED": "TflFullyConnected",
           "AVERAGE_POOL_2D": "TflAveragePool2D", "SOFTMAX": "TflSoftmax", "ADD": "TflAdd", "MUL": "TflMul",
           "RESHAPE": "Reshape"}


def round_away(v: float) -> int:
    """TfLiteRound (std::round): to the nearest integer, ties away from zero, exactly."""
    a = abs(v)
    f = math.floor(a)
    r = f + 1 if a - f >= 0.5 else f
    return int(math.copysign(r, v))


def quantize_multiplier(m: float) -> tuple[int, int]:
    """tflite::QuantizeMultiplier: (Q31 significand, shift) with m = significand * 2^(shift - 31)."""
    if m == 0.0:
        return 0, 0
    q, shift = math.frexp(m)
    fixed = round_away(q * float(1 << 31))
    if fixed == 1 << 31:
        fixed //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    return fixed, shift


def softmax_params(beta: float, input_scale: float) -> tuple[int, int, int]:
    """(input multiplier, left shift, diff_min): PreprocessSoftmaxScaling and CalculateInputRadius."""
    real = min(beta * input_scale * float(1 << (31 - SOFTMAX_DIFF_BITS)), float((1 << 31) - 1))
    mult, shift = quantize_multiplier(real)
    radius = math.floor(1.0 * ((1 << SOFTMAX_DIFF_BITS) - 1) * float(1 << (31 - SOFTMAX_DIFF_BITS)) / float(1 << shift))
    return mult, shift, -int(radius)


def activation_range(act: int, scale: float, zp: int, lo: int = -128, hi: int = 127) -> tuple[int, int]:
    """CalculateActivationRangeQuantized: the fused activation as output codes."""
    def q(f: float) -> int:  # tflite Quantize: f / scale in float32, TfLiteRound, + zero point
        return zp + round_away(float(np.float32(f) / np.float32(scale)))

    if act == RELU:
        return max(lo, q(0.0)), hi
    if act == RELU6:
        return max(lo, q(0.0)), min(hi, q(6.0))
    if act == RELU_N1_TO_1:
        return max(lo, q(-1.0)), min(hi, q(1.0))
    return lo, hi


def _padding(padding: int, stride: int, dilation: int, size: int, kernel: int) -> tuple[int, int, int]:
    """(output size, pad before, pad after): ComputeOutSize and ComputePaddingWithOffset."""
    eff = (kernel - 1) * dilation + 1
    out = (size + stride - 1) // stride if padding == SAME else (size - eff + stride) // stride
    total = max((out - 1) * stride + eff - size, 0)
    return out, total // 2, total // 2 + total % 2


def load(path: str) -> tuple[Graph, dict[str, Quant]]:
    """The .tflite at ``path`` as a graph of arena's ops (``lowering.lower`` makes it a Lowered:
    liveness.lower) and the quantization of its tensors; tflite_model's checks first, the same
    refusals, one line each."""
    data = tflite_model.read_bytes(path)
    tflite_model.problem_from_bytes(data, path, ModelOptions())
    return _Lowering(tflite_model.parse(data, path), data, path).run()


class _Lowering:
    def __init__(self, model: Any, data: bytes, path: str) -> None:
        self.m = model
        self.data = data
        self.path = path
        self.sg = model.subgraphs[0]
        self.tensors = self.sg.tensors or []
        self.names = tflite_model.unique_names(self.tensors)
        self.type_names = tflite_model.type_names()
        self.consts: dict[str, Const] = {}
        self.types: dict[str, TensorType] = {}
        self.quant: dict[str, Quant] = {}

    def dtype(self, i: int) -> str:
        return {"FLOAT32": "float32", "INT8": "int8", "UINT8": "uint8", "INT16": "int16", "INT32": "int32",
                "INT64": "int64", "BOOL": "bool"}.get(self.type_names[self.tensors[i].type], "other")

    def shape(self, i: int) -> tuple[int, ...]:
        t = self.tensors[i]
        return tuple(int(d) for d in (t.shape if t.shape is not None else ()))

    def scale_zp(self, i: int) -> tuple[list[float], list[int]]:
        q = self.tensors[i].quantization
        if q is None or q.scale is None or not len(q.scale):
            fail(f"tensor {self.names[i]} has no quantization parameters; arena's int8 kernels need them",
                 file=self.path, hint="convert the model with full-integer quantization (a representative dataset)")
        scale = [float(s) for s in q.scale]
        zp = [int(z) for z in q.zeroPoint] if q.zeroPoint is not None and len(q.zeroPoint) else [0] * len(scale)
        return scale, zp

    def run(self) -> tuple[Graph, dict[str, Quant]]:
        for i, t in enumerate(self.tensors):
            name, dtype, shape = self.names[i], self.dtype(i), self.shape(i)
            if tflite_model.has_data(self.m, t.buffer):
                if dtype not in _ELEM:
                    fail(f"weight {name} is {self.type_names[t.type]}, a type arena's runtime does not store",
                         file=self.path, hint="convert the model with int8 weights")
                elem, np_type = _ELEM[dtype]
                raw = bytes(self.m.buffers[t.buffer].data)
                value = np.frombuffer(raw, dtype=np.dtype(np_type).newbyteorder("<")).astype(np_type).reshape(shape)
                self.consts[name] = Const(elem, shape, value=value)
            else:
                self.types[name] = TensorType(dtype, shape)
            q = t.quantization
            if q is not None and q.scale is not None and len(q.scale):
                scale, zp = self.scale_zp(i)
                self.quant[name] = Quant(tuple(scale), tuple(zp), int(q.quantizedDimension) if len(scale) > 1 else None)
        nodes = [self.node(k, op) for k, op in enumerate(self.sg.operators or [])]
        inputs = tuple(self.names[int(i)] for i in self.sg.inputs)
        outputs = tuple(self.names[int(i)] for i in self.sg.outputs)
        used = [x for n in nodes for x in n.inputs if x in self.consts]
        weights = tuple(Weight(n, self._const_dtype(n), self.consts[n].shape) for n in dict.fromkeys(used))
        g = Graph(path=self.path, sha256=hashlib.sha256(self.data).hexdigest(), nodes=tuple(nodes),
                  schedule=tuple(range(len(nodes))), folded=(), inputs=inputs, outputs=outputs, types=self.types,
                  weights=weights, constant_shapes={n: c.shape for n, c in self.consts.items() if c.shape is not None},
                  consts=self.consts, model=None)
        return g, self.quant

    def _const_dtype(self, name: str) -> str:
        return next(k for k, (e, _) in _ELEM.items() if e == self.consts[name].elem)

    def const(self, name: str, value: np.ndarray) -> str:
        elem = next(e for k, (e, t) in _ELEM.items() if np.dtype(t) == value.dtype)
        self.consts[name] = Const(elem, tuple(value.shape), value=value)
        return name

    def node(self, k: int, op: Any) -> Node:
        kind = tflite_model.builtin_name(self.m, op)
        ins = [int(x) for x in (op.inputs if op.inputs is not None else [])]
        outs = [int(x) for x in (op.outputs if op.outputs is not None else [])]
        out_names = tuple(self.names[x] for x in outs)
        in_names = tuple(self.names[x] if x >= 0 else "" for x in ins)
        name = out_names[0] if out_names else f"op{k}"
        int8 = all(self.dtype(x) == "int8" for x in (ins[:1] + outs[:1]) if x >= 0)
        opts = op.builtinOptions
        if kind == "RESHAPE" and ins:
            return Node(k, name, "Reshape", "", in_names[:1], out_names, {})
        if int8 and kind in ("CONV_2D", "DEPTHWISE_CONV_2D") and len(ins) >= 2:
            return self.conv(k, name, kind, ins, outs, opts)
        if int8 and kind == "FULLY_CONNECTED" and len(ins) >= 2 and self.dtype(ins[1]) == "int8":
            return self.fully_connected(k, name, ins, outs, opts)
        if int8 and kind == "AVERAGE_POOL_2D":
            return self.average_pool(k, name, ins, outs, opts)
        if int8 and kind in ("ADD", "MUL") and len(ins) == 2 and all(self.dtype(x) == "int8" for x in ins):
            return self.binary(k, name, kind, ins, outs, opts)
        if int8 and kind == "SOFTMAX":
            mult, shift, diff_min = softmax_params(float(np.float32(opts.beta)), self.scale_zp(ins[0])[0][0])
            return Node(k, name, "TflSoftmax", DOMAIN, in_names[:1], out_names, {"tfl": [mult, shift, diff_min]})
        # no kernel (yet): the runtime check names it, one line per op
        return Node(k, name, kind, DOMAIN, in_names, out_names, {})

    def requant(self, name: str, x: int, w: int, y: int, channels: int) -> str:
        """(multiplier, shift) per output channel, as TFLite's PopulateConvolutionQuantizationParams."""
        sx, sy = self.scale_zp(x)[0][0], self.scale_zp(y)[0][0]
        sw = self.scale_zp(w)[0]
        rows = [quantize_multiplier(sx * sw[c if len(sw) > 1 else 0] / sy) for c in range(channels)]
        return self.const(f"{name}::requant", np.asarray(rows, np.int32).reshape(channels, 2))

    def conv(self, k: int, name: str, kind: str, ins: list[int], outs: list[int], opts: Any) -> Node:
        x, w, y = ins[0], ins[1], outs[0]
        b = ins[2] if len(ins) > 2 and ins[2] >= 0 else -1
        xs, ws, ys = self.shape(x), self.shape(w), self.shape(y)
        (_, zx), (sy, zy) = self.scale_zp(x), self.scale_zp(y)
        dilation = (int(opts.dilationHFactor) or 1, int(opts.dilationWFactor) or 1)
        stride = (int(opts.strideH), int(opts.strideW))
        _, top, bottom = _padding(int(opts.padding), stride[0], dilation[0], xs[1], ws[1])
        _, left, right = _padding(int(opts.padding), stride[1], dilation[1], xs[2], ws[2])
        lo, hi = activation_range(int(opts.fusedActivationFunction), sy[0], zy[0])
        dm = (ys[3] // xs[3] or 1) if kind == "DEPTHWISE_CONV_2D" else 0
        attrs = {"kernel_shape": [ws[1], ws[2]], "strides": list(stride), "dilations": list(dilation),
                 "pads": [top, left, bottom, right], "group": 1, "tfl": [-zx[0], zy[0], lo, hi, dm]}
        op_type = "TflDepthwiseConv2D" if dm else "TflConv2D"
        inputs = (self.names[x], self.names[w], self.names[b] if b >= 0 else "", self.requant(name, x, w, y, ys[3]))
        return Node(k, name, op_type, DOMAIN, inputs, (self.names[y],), attrs)

    def fully_connected(self, k: int, name: str, ins: list[int], outs: list[int], opts: Any) -> Node:
        x, w, y = ins[0], ins[1], outs[0]
        b = ins[2] if len(ins) > 2 and ins[2] >= 0 else -1
        (_, zx), (_, zw), (sy, zy) = self.scale_zp(x), self.scale_zp(w), self.scale_zp(y)
        lo, hi = activation_range(int(opts.fusedActivationFunction), sy[0], zy[0])
        m = self.shape(w)[0]
        inputs = (self.names[x], self.names[w], self.names[b] if b >= 0 else "", self.requant(name, x, w, y, m))
        return Node(k, name, "TflFullyConnected", DOMAIN, inputs, (self.names[y],),
                    {"tfl": [-zx[0], -zw[0], zy[0], lo, hi]})

    def binary(self, k: int, name: str, kind: str, ins: list[int], outs: list[int], opts: Any) -> Node:
        """ADD and MUL: the offsets and multipliers of TFLite's PrepareAdd / mul's Prepare (int8)."""
        (s1, z1), (s2, z2), (so, zo) = self.scale_zp(ins[0]), self.scale_zp(ins[1]), self.scale_zp(outs[0])
        act = int(opts.fusedActivationFunction) if opts is not None else 0
        lo, hi = activation_range(act, so[0], zo[0])
        if kind == "ADD":
            left = 20
            twice_max = 2 * max(s1[0], s2[0])
            m1, m2 = quantize_multiplier(s1[0] / twice_max), quantize_multiplier(s2[0] / twice_max)
            mo = quantize_multiplier(twice_max / (float(1 << left) * so[0]))
            ints = [0, -z1[0], -z2[0], zo[0], left, *m1, *m2, *mo, lo, hi]
        else:
            mo = quantize_multiplier(s1[0] * s2[0] / so[0])
            ints = [1, -z1[0], -z2[0], zo[0], 0, 0, 0, 0, 0, *mo, lo, hi]
        return Node(k, name, "TflAdd" if kind == "ADD" else "TflMul", DOMAIN,
                    (self.names[ins[0]], self.names[ins[1]]), (self.names[outs[0]],), {"tfl": ints})

    def average_pool(self, k: int, name: str, ins: list[int], outs: list[int], opts: Any) -> Node:
        x, y = ins[0], outs[0]
        xs = self.shape(x)
        sy, zy = self.scale_zp(y)
        kernel = (int(opts.filterHeight), int(opts.filterWidth))
        stride = (int(opts.strideH), int(opts.strideW))
        _, top, bottom = _padding(int(opts.padding), stride[0], 1, xs[1], kernel[0])
        _, left, right = _padding(int(opts.padding), stride[1], 1, xs[2], kernel[1])
        lo, hi = activation_range(int(opts.fusedActivationFunction), sy[0], zy[0])
        attrs = {"kernel_shape": list(kernel), "strides": list(stride), "dilations": [1, 1],
                 "pads": [top, left, bottom, right], "group": 1, "tfl": [lo, hi]}
        return Node(k, name, "TflAveragePool2D", DOMAIN, (self.names[x],), (self.names[y],), attrs)

