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

import dataclasses
import hashlib
import math
from typing import Any, Callable

import numpy as np

from arena_tool.core.errors import fail
from arena_tool.core.problem import ModelOptions, Quant
from arena_tool.model import tflite_fixed, tflite_model
from arena_tool.model.tflite_fixed import quantize_multiplier, round_away
from arena_tool.model.onnx_node import Const, Graph, Node, TensorType, Weight

DOMAIN = "tflite"
# arena dtype -> ONNX TensorProto element type (Const.elem) and numpy type, for the types a lowered
# .tflite keeps as constants
_ELEM = {"float32": (1, np.float32), "uint8": (2, np.uint8), "int8": (3, np.int8), "int16": (5, np.int16),
         "int32": (6, np.int32), "int64": (7, np.int64)}
SAME, VALID = 0, 1  # tflite Padding
RELU, RELU_N1_TO_1, RELU6 = 1, 2, 3  # tflite ActivationFunctionType (NONE = 0)
# The float32 builtins lowered to their own kernels (tfl_*_f32.c), and the op each becomes (MEAN, QUANTIZE,
# DEQUANTIZE and the moves take float32 as they are).
LOWERED_F32 = {"CONV_2D": "TflConv2DF32", "DEPTHWISE_CONV_2D": "TflDepthwiseConv2DF32",
               "FULLY_CONNECTED": "TflFullyConnectedF32", "AVERAGE_POOL_2D": "TflAveragePool2DF32",
               "MAX_POOL_2D": "TflMaxPool2DF32", "ADD": "TflAddF32", "MUL": "TflMulF32", "SOFTMAX": "TflSoftmaxF32",
               "LOGISTIC": "TflUnaryF32", "TANH": "TflUnaryF32", "HARD_SWISH": "TflUnaryF32"}
FLT_MAX = float(np.finfo(np.float32).max)
# TFLite ops that move bytes, lowered to arena's generic (any element type) kernels: the method of each
_MOVES = {"TRANSPOSE": "transpose", "PAD": "pad", "PADV2": "pad", "CONCATENATION": "concatenation",
          "STRIDED_SLICE": "strided_slice"}
SOFTMAX_DIFF_BITS = 5  # kScaledDiffIntegerBits
# The TFLite builtins lowered to arena's runtime ops (int8; the moves any type), and the op each becomes.
LOWERED = {"CONV_2D": "TflConv2D", "DEPTHWISE_CONV_2D": "TflDepthwiseConv2D", "FULLY_CONNECTED": "TflFullyConnected",
           "AVERAGE_POOL_2D": "TflAveragePool2D", "MAX_POOL_2D": "TflMaxPool2D", "SOFTMAX": "TflSoftmax",
           "ADD": "TflAdd", "MUL": "TflMul", "MEAN": "TflMean", "QUANTIZE": "TflQuantize",
           "DEQUANTIZE": "TflDequantize", "LOGISTIC": "TflLookup", "TANH": "TflLookup", "HARD_SWISH": "TflLookup",
           "RESHAPE": "Reshape", "TRANSPOSE": "Transpose", "PAD": "Pad", "PADV2": "Pad", "CONCATENATION": "Concat",
           "STRIDED_SLICE": "Slice"}


def softmax_params(beta: float, input_scale: float) -> tuple[int, int, int]:
    """(input multiplier, left shift, diff_min): PreprocessSoftmaxScaling and CalculateInputRadius."""
    real = min(beta * input_scale * float(1 << (31 - SOFTMAX_DIFF_BITS)), float((1 << 31) - 1))
    mult, shift = quantize_multiplier(real)
    radius = math.floor(1.0 * ((1 << SOFTMAX_DIFF_BITS) - 1) * float(1 << (31 - SOFTMAX_DIFF_BITS)) / float(1 << shift))
    return mult, shift, -int(radius)


def softmax_exps(mult: int, shift: int, diff_min: int) -> list[int]:
    """exp of each difference to the row's maximum, 0 .. -255, as TFLite's int8 Softmax computes it
    (MultiplyByQuantizedMultiplierGreaterThanOne, exp_on_negative_values in Q5.26); 0 below diff_min,
    where TFLite skips the term (runtime/tfl_softmax_int8.c reads them by -difference)."""
    def exp(diff: int) -> int:
        rescaled = tflite_fixed.srdhm(tflite_fixed.w32(diff * (1 << shift)), mult)
        return tflite_fixed.exp_on_negative_values(rescaled, SOFTMAX_DIFF_BITS)

    return [exp(-d) if -d >= diff_min else 0 for d in range(256)]


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
        self.extra: list[Node] = []
        self.why = ""  # why the op being lowered keeps its TFLite name: the runtime check's line

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
        nodes = []
        for k, op in enumerate(self.sg.operators or []):
            self.extra = []
            nodes += [self.node(k, op), *self.extra]  # a view after the op (STRIDED_SLICE's shrunk dims)
        nodes = [dataclasses.replace(n, index=i) for i, n in enumerate(nodes)]
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
        self.why = ""
        if kind == "RESHAPE" and ins:
            return Node(k, name, "Reshape", "", in_names[:1], out_names, {})
        if int8 and kind in ("CONV_2D", "DEPTHWISE_CONV_2D") and len(ins) >= 2:
            return self.conv(k, name, kind, ins, outs, opts)
        if int8 and kind == "FULLY_CONNECTED" and len(ins) >= 2 and self.dtype(ins[1]) == "int8":
            return self.fully_connected(k, name, ins, outs, opts)
        if int8 and kind in ("AVERAGE_POOL_2D", "MAX_POOL_2D") and ins and outs:
            self.why = self.pool_quant(ins[0], outs[0])
            if not self.why:
                return self.pool(k, name, "TflAveragePool2D" if kind == "AVERAGE_POOL_2D" else "TflMaxPool2D", ins,
                                 outs, opts)
        if int8 and kind in ("ADD", "MUL") and len(ins) == 2 and all(self.dtype(x) == "int8" for x in ins):
            return self.binary(k, name, kind, ins, outs, opts)
        if int8 and kind == "SOFTMAX":
            mult, shift, diff_min = softmax_params(float(np.float32(opts.beta)), self.scale_zp(ins[0])[0][0])
            exps = self.const(f"{name}::exp", np.asarray(softmax_exps(mult, shift, diff_min), np.int32))
            return Node(k, name, "TflSoftmax", DOMAIN, (in_names[0], exps), out_names, {"tfl": [mult, shift, diff_min]})
        f32 = all(self.dtype(x) == "float32" for x in (ins[:1] + outs[:1]) if x >= 0)
        if f32 and kind in LOWERED_F32 and ins and outs:
            node = self.float_op(k, name, kind, ins, outs, opts)
            if node is not None:
                return node
        if kind in _MOVES and ins and outs:
            self.why = self.same_quant(ins, outs[0]) if kind == "CONCATENATION" else ""
            move: dict[str, Callable[[int, str, list[int], list[int], Any], Node | None]] = {
                "transpose": self.transpose, "pad": self.pad, "concatenation": self.concatenation,
                "strided_slice": self.strided_slice}
            node = None if self.why else move[_MOVES[kind]](k, name, ins, outs, opts)
            if node is not None:
                return node
        if kind in ("QUANTIZE", "DEQUANTIZE") and len(ins) == 1 and len(outs) == 1:
            node = self.quantize(k, name, ins[0], outs[0])
            if node is not None:
                return node
        if int8 and kind in ("LOGISTIC", "TANH", "HARD_SWISH") and len(ins) == 1:
            table = self.activation_table(kind, ins[0], outs[0])
            if table is not None:
                return Node(k, name, "TflLookup", DOMAIN, in_names[:1], out_names, {"table": table})
        if (int8 or f32) and kind == "MEAN" and len(ins) == 2:
            node = self.mean(k, name, ins, outs, opts)
            if node is not None:
                return node
        # no kernel (yet): the runtime check names it, one line per op (why, where the op has a kernel)
        return Node(k, name, kind, DOMAIN, in_names, out_names, {"why": self.why} if self.why else {})

    def float_range(self, opts: Any) -> list[float] | None:
        """CalculateActivationRange (float): the fused activation as [min, max] (None: one arena lacks)."""
        act = int(opts.fusedActivationFunction) if opts is not None else 0
        ranges = {0: [-FLT_MAX, FLT_MAX], RELU: [0.0, FLT_MAX], RELU6: [0.0, 6.0], RELU_N1_TO_1: [-1.0, 1.0]}
        if act not in ranges:
            self.why = f"fused activation {act} (arena takes NONE, RELU, RELU6, RELU_N1_TO_1)"
        return ranges.get(act)

    def float_op(self, k: int, name: str, kind: str, ins: list[int], outs: list[int], opts: Any) -> Node | None:
        """A float32 op: the int8 op's geometry, the activation range as floats, no requantization."""
        x, y = ins[0], outs[0]
        xn, yn = self.names[x], self.names[y]
        if kind in ("LOGISTIC", "TANH", "HARD_SWISH"):
            return Node(k, name, "TflUnaryF32", DOMAIN, (xn,), (yn,),
                        {"tfl": [("LOGISTIC", "TANH", "HARD_SWISH").index(kind)]})
        if kind == "SOFTMAX":
            return Node(k, name, "TflSoftmaxF32", DOMAIN, (xn,), (yn,), {"tfl": [], "tfl_floats": [float(opts.beta)]})
        rng = self.float_range(opts)
        if rng is None:
            return None
        if kind in ("ADD", "MUL"):
            if len(ins) != 2 or self.dtype(ins[1]) != "float32":
                return None
            return Node(k, name, "TflAddF32" if kind == "ADD" else "TflMulF32", DOMAIN, (xn, self.names[ins[1]]), (yn,),
                        {"tfl": [int(kind == "MUL")], "tfl_floats": rng})
        if kind in ("AVERAGE_POOL_2D", "MAX_POOL_2D"):
            node = self.pool(k, name, "TflAveragePool2DF32" if kind == "AVERAGE_POOL_2D" else "TflMaxPool2DF32", ins,
                             outs, opts, quantized=False)
            return dataclasses.replace(node, attrs={**node.attrs, "tfl": [], "tfl_floats": rng})
        if len(ins) < 2 or self.dtype(ins[1]) != "float32" or (len(ins) > 2 and ins[2] >= 0
                                                               and self.dtype(ins[2]) != "float32"):
            self.why = "its weights or bias are not float32 (a hybrid model: arena runs float32 or int8 ones)"
            return None
        bias = self.names[ins[2]] if len(ins) > 2 and ins[2] >= 0 else ""
        if kind == "FULLY_CONNECTED":
            if len(self.shape(ins[1])) != 2 or (opts is not None and int(getattr(opts, "weightsFormat", 0))):
                return None
            return Node(k, name, "TflFullyConnectedF32", DOMAIN, (xn, self.names[ins[1]], bias), (yn,),
                        {"tfl": [], "tfl_floats": rng})
        node = self.conv(k, name, kind, ins, outs, opts, quantized=False)
        return dataclasses.replace(node, op_type=node.op_type + "F32", inputs=node.inputs[:3],
                                   attrs={**node.attrs, "tfl": [0, 0, 0, 0, node.attrs["tfl"][4]], "tfl_floats": rng})

    def requant(self, name: str, x: int, w: int, y: int, channels: int) -> str:
        """(multiplier, shift) per output channel, as TFLite's PopulateConvolutionQuantizationParams."""
        sx, sy = self.scale_zp(x)[0][0], self.scale_zp(y)[0][0]
        sw = self.scale_zp(w)[0]
        rows = [quantize_multiplier(sx * sw[c if len(sw) > 1 else 0] / sy) for c in range(channels)]
        return self.const(f"{name}::requant", np.asarray(rows, np.int32).reshape(channels, 2))

    def conv(self, k: int, name: str, kind: str, ins: list[int], outs: list[int], opts: Any,
             quantized: bool = True) -> Node:
        x, w, y = ins[0], ins[1], outs[0]
        b = ins[2] if len(ins) > 2 and ins[2] >= 0 else -1
        xs, ws, ys = self.shape(x), self.shape(w), self.shape(y)
        (_, zx), (sy, zy) = self.scale_zp(x) if quantized else ([1.0], [0]), self.scale_zp(y) if quantized else ([1.0], [0])
        dilation = (int(opts.dilationHFactor) or 1, int(opts.dilationWFactor) or 1)
        stride = (int(opts.strideH), int(opts.strideW))
        _, top, bottom = _padding(int(opts.padding), stride[0], dilation[0], xs[1], ws[1])
        _, left, right = _padding(int(opts.padding), stride[1], dilation[1], xs[2], ws[2])
        lo, hi = activation_range(int(opts.fusedActivationFunction), sy[0], zy[0])
        dm = (ys[3] // xs[3] or 1) if kind == "DEPTHWISE_CONV_2D" else 0
        attrs = {"kernel_shape": [ws[1], ws[2]], "strides": list(stride), "dilations": list(dilation),
                 "pads": [top, left, bottom, right], "group": 1 if dm else xs[3] // (ws[3] or 1),
                 "tfl": [-zx[0], zy[0], lo, hi, dm]}
        op_type = "TflDepthwiseConv2D" if dm else "TflConv2D"
        inputs: tuple[str, ...] = (self.names[x], self.names[w], self.names[b] if b >= 0 else "",
                                   self.requant(name, x, w, y, ys[3]) if quantized else "")
        if dm and quantized and xs[3] >= 4:
            inputs += (self.depthwise_taps(name, w, xs[3], dm),)
        return Node(k, name, op_type, DOMAIN, inputs, (self.names[y],), attrs)

    def depthwise_taps(self, name: str, w: int, c: int, dm: int) -> str:
        """A depthwise conv's taps as runtime/tfl_conv_int8.c's 4-channel step reads them, in flash (no
        unpacking at run time, no RAM): per output j of an input channel, per 4 input channels m .. m + 3
        (outputs (m + i) dm + j), per tap the words (w0 | w2 << 16, w1 | w3 << 16) of int16 halves."""
        wv = np.asarray(self.consts[self.names[w]].value, np.int32)
        taps = wv.reshape(-1, c * dm)  # [KH KW, M]
        q = c // 4 * 4
        v = taps[:, :q * dm].reshape(-1, q // 4, 4, dm).transpose(3, 1, 0, 2)  # [dm, groups, taps, 4]
        lo, hi = v[..., [0, 1]] & 0xFFFF, (v[..., [2, 3]] & 0xFFFF) << 16
        return self.const(f"{name}::taps", (lo | hi).astype(np.uint32).view(np.int32))

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
            # each input's scaled term by its byte (0..255 as uint8: codes 0..127, then -128..-1), as AddFunc
            terms = [[tflite_fixed.mbqm(tflite_fixed.w32((code - 256 * (code > 127) - z) << left), *mult)
                      for code in range(256)] for z, mult in ((z1[0], m1), (z2[0], m2))]
            table = self.const(f"{name}::terms", np.asarray(terms, np.int32).reshape(-1))
            return Node(k, name, "TflAdd", DOMAIN, (self.names[ins[0]], self.names[ins[1]], table),
                        (self.names[outs[0]],), {"tfl": ints})
        else:
            mo = quantize_multiplier(s1[0] * s2[0] / so[0])
            ints = [1, -z1[0], -z2[0], zo[0], 0, 0, 0, 0, 0, *mo, lo, hi]
        return Node(k, name, "TflAdd" if kind == "ADD" else "TflMul", DOMAIN,
                    (self.names[ins[0]], self.names[ins[1]]), (self.names[outs[0]],), {"tfl": ints})

    def pool(self, k: int, name: str, op_type: str, ins: list[int], outs: list[int], opts: Any,
             quantized: bool = True) -> Node:
        x, y = ins[0], outs[0]
        xs = self.shape(x)
        sy, zy = self.scale_zp(y) if quantized else ([1.0], [0])
        kernel = (int(opts.filterHeight), int(opts.filterWidth))
        stride = (int(opts.strideH), int(opts.strideW))
        _, top, bottom = _padding(int(opts.padding), stride[0], 1, xs[1], kernel[0])
        _, left, right = _padding(int(opts.padding), stride[1], 1, xs[2], kernel[1])
        lo, hi = activation_range(int(opts.fusedActivationFunction), sy[0], zy[0])
        attrs = {"kernel_shape": list(kernel), "strides": list(stride), "dilations": [1, 1],
                 "pads": [top, left, bottom, right], "group": 1, "tfl": [lo, hi]}
        return Node(k, name, op_type, DOMAIN, (self.names[x],), (self.names[y],), attrs)


    # --- ops that move bytes (any element type; int8 with equal quantization in and out) -------------

    def ints_of(self, i: int) -> list[int] | None:
        """A constant integer tensor's values (None: not a constant)."""
        c = self.consts.get(self.names[i]) if i >= 0 else None
        return None if c is None or c.value is None else [int(v) for v in np.asarray(c.value).reshape(-1)]

    def same_quant(self, ins: list[int], y: int) -> str:
        """Why CONCATENATION cannot move int8 bytes ('' when it can): TFLM requires its inputs and output
        quantized alike (PAD, TRANSPOSE and STRIDED_SLICE copy the bytes whatever the quantization, as
        TFLM does)."""
        if self.dtype(y) != "int8":
            return ""
        q = [(tuple(self.scale_zp(i)[0]), tuple(self.scale_zp(i)[1])) for i in (*ins, y) if i >= 0]
        return "" if len(set(q)) == 1 else "its int8 inputs and output are quantized differently (TFLM requires them equal)"

    def pool_quant(self, x: int, y: int) -> str:
        """Why an int8 pool cannot run ('' when it can): TFLM's Prepare requires the input's and output's
        scales within 1e-6 and equal zero points (pooling_common.cc), so the reference refuses the model."""
        (sx, zx), (sy, zy) = self.scale_zp(x), self.scale_zp(y)
        if abs(sx[0] - sy[0]) <= 1.0e-6 and zx[0] == zy[0]:
            return ""
        return (f"its int8 input and output are quantized differently (scale {sx[0]:g} zero point {zx[0]} -> "
                f"{sy[0]:g} {zy[0]}; TFLM requires them equal)")

    def onnx_const(self, name: str, values: list[int]) -> str:
        return self.const(name, np.asarray(values, np.int64))

    def transpose(self, k: int, name: str, ins: list[int], outs: list[int], opts: Any) -> Node | None:
        perm = self.ints_of(ins[1]) if len(ins) > 1 else None
        if perm is None or sorted(perm) != list(range(len(self.shape(ins[0])))):
            self.why = "its permutation is not a constant permutation of the input's dims"
            return None
        return Node(k, name, "Transpose", "", (self.names[ins[0]],), (self.names[outs[0]],), {"perm": perm})

    def pad(self, k: int, name: str, ins: list[int], outs: list[int], opts: Any) -> Node | None:
        """PAD/PADV2: the constant is input 2 (PADV2) or zero (the output zero point on int8)."""
        pads = self.ints_of(ins[1]) if len(ins) > 1 else None
        rank = len(self.shape(ins[0]))
        if pads is None or len(pads) != 2 * rank or min(pads, default=0) < 0:
            self.why = "its paddings are not constant, one non-negative (before, after) pair per dim"
            return None
        if len(ins) > 2 and ins[2] >= 0:
            c = self.consts.get(self.names[ins[2]])
            if c is None or c.value is None or np.asarray(c.value).size != 1:
                self.why = "its pad value is not a constant"
                return None
            v = float(np.asarray(c.value).reshape(-1)[0])
        else:
            v = float(self.scale_zp(outs[0])[1][0]) if self.dtype(outs[0]) == "int8" else 0.0
        onnx_pads = [pads[2 * d] for d in range(rank)] + [pads[2 * d + 1] for d in range(rank)]
        inputs = (self.names[ins[0]], self.onnx_const(f"{name}::pads", onnx_pads),
                  self.const(f"{name}::value", np.asarray([v], np.float32)))
        return Node(k, name, "Pad", "", inputs, (self.names[outs[0]],), {"mode": "constant"})

    def concatenation(self, k: int, name: str, ins: list[int], outs: list[int], opts: Any) -> Node | None:
        if opts is None or int(opts.fusedActivationFunction) != 0 or any(i < 0 or self.names[i] in self.consts
                                                                          for i in ins):
            self.why = "a fused activation or a constant input (arena concatenates activations only)"
            return None
        rank = len(self.shape(outs[0]))
        return Node(k, name, "Concat", "", tuple(self.names[i] for i in ins), (self.names[outs[0]],),
                    {"axis": int(opts.axis) % rank if rank else 0})

    def strided_slice(self, k: int, name: str, ins: list[int], outs: list[int], opts: Any) -> Node | None:
        """STRIDED_SLICE as TFLM's reference computes its ranges (StridedSliceStartForAxis / EndForAxis,
        the begin, end and shrink masks, offset): a Slice of the first element and step per dim, and the
        shrunk dims dropped by a view."""
        x, y = ins[0], outs[0]
        begin, end, strides = (self.ints_of(i) if len(ins) > 3 else None for i in ins[1:4])
        dims = self.shape(x)
        r = len(dims)
        if begin is None or end is None or strides is None or opts is None or int(opts.ellipsisMask) \
                or int(opts.newAxisMask) or not (len(begin) == len(end) == len(strides) <= r) or 0 in strides:
            self.why = "begin, end and strides must be constants, no ellipsis or new-axis mask (as TFLM)"
            return None
        pad = r - len(begin)  # StridedSlicePadIndices: leading dims whole
        begin, end, strides = [0] * pad + begin, [1] * pad + end, [1] * pad + strides
        bmask = (int(opts.beginMask) << pad) | ((1 << pad) - 1)
        emask = (int(opts.endMask) << pad) | ((1 << pad) - 1)
        smask = int(opts.shrinkAxisMask) << pad
        starts, counts = [], []
        for d in range(r):
            size, st = dims[d], strides[d]
            s0 = begin[d] + size if begin[d] < 0 else begin[d]
            s0 = min(max(s0, 0), size) if st > 0 else min(max(s0, -1), size - 1)
            if bmask >> d & 1:
                s0 = 0 if st > 0 else size - 1
            if smask >> d & 1:
                e0 = s0 if s0 >= size else s0 + 1
            else:
                e0 = end[d] + (s0 if getattr(opts, "offset", False) else 0)
                e0 = e0 + size if e0 < 0 else e0
                e0 = min(max(e0, 0), size) if st > 0 else min(max(e0, -1), size - 1)
                if emask >> d & 1:
                    e0 = size if st > 0 else -1
            n = max(0, -(-(e0 - s0) // st)) if st > 0 else max(0, -(-(s0 - e0) // -st))
            starts.append(s0 if n else 0)
            counts.append(n)
        ys = self.shape(y)
        if [c for d, c in enumerate(counts) if not smask >> d & 1] != list(ys) and counts != list(ys) \
                or any(c == 0 for c in counts):
            self.why = f"the slice TFLite's rules give ({counts}) is not the output's shape {list(ys)}, or is empty"
            return None
        xn, yn = self.names[x], self.names[y]
        sliced = yn if tuple(counts) == ys else f"{yn}::sliced"
        if sliced != yn:
            self.types[sliced] = TensorType(self.dtype(y), tuple(counts))
            if yn in self.quant:
                self.quant[sliced] = self.quant[yn]
        inputs = (xn, self.onnx_const(f"{name}::starts", starts), self.onnx_const(f"{name}::ends", [s + 1 for s in starts]),
                  self.onnx_const(f"{name}::axes", list(range(r))), self.onnx_const(f"{name}::steps", strides))
        node = Node(k, name, "Slice", "", inputs, (sliced,), {})
        if sliced == yn:
            return node
        self.extra.append(Node(k, f"{name}::view", "Reshape", "", (sliced,), (yn,), {}))
        return node

    # --- element-wise and reductions ------------------------------------------------------------

    def quantize(self, k: int, name: str, x: int, y: int) -> Node | None:
        """QUANTIZE float32 -> int8 and DEQUANTIZE int8 -> float32 (per tensor): TflQuantize /
        TflDequantize; QUANTIZE int8 -> int8 (a requantization) as a table."""
        kinds = (self.dtype(x), self.dtype(y))
        if kinds == ("int8", "int8"):
            (sx, zx), (sy, zy) = self.scale_zp(x), self.scale_zp(y)
            if len(sx) != 1 or len(sy) != 1:
                self.why = "per-channel quantization"
                return None
            table = tflite_fixed.requantize_table(sx[0], zx[0], sy[0], zy[0])
            return Node(k, name, "TflLookup", DOMAIN, (self.names[x],), (self.names[y],), {"table": table})
        if kinds not in (("float32", "int8"), ("int8", "float32")):
            self.why = f"{kinds[0]} -> {kinds[1]}; arena runs float32 -> int8, int8 -> int8 and int8 -> float32"
            return None
        scale, zp = self.scale_zp(y if kinds[1] == "int8" else x)
        if len(scale) != 1:
            self.why = "per-channel quantization"
            return None
        op_type = "TflQuantize" if kinds[1] == "int8" else "TflDequantize"
        return Node(k, name, op_type, DOMAIN, (self.names[x],), (self.names[y],),
                    {"tfl": [zp[0]], "tfl_floats": [float(np.float32(scale[0]))]})

    def activation_table(self, kind: str, x: int, y: int) -> list[int] | None:
        """LOGISTIC, TANH and HARD_SWISH on int8, per tensor: TFLM's integer functions as a table
        (model/tflite_fixed.py). LOGISTIC's output is TFLite's 1/256 scale at zero point -128 (TFLM
        requires the zero point), TANH's 1/128 at 0."""
        (sx, zx), (sy, zy) = self.scale_zp(x), self.scale_zp(y)
        if len(sx) != 1 or len(sy) != 1:
            self.why = "per-channel quantization"
            return None
        if kind == "LOGISTIC":
            self.why = "" if zy[0] == -128 else f"its output zero point is {zy[0]}; TFLM's int8 LOGISTIC requires -128"
            return tflite_fixed.logistic_table(sx[0], zx[0]) if zy[0] == -128 else None
        if kind == "TANH":
            return tflite_fixed.tanh_table(sx[0], zx[0])
        table = tflite_fixed.hard_swish_table(sx[0], zx[0], sy[0], zy[0])
        self.why = "" if table is not None else "its output multiplier is above 1, which TFLM's HARD_SWISH refuses"
        return table

    def mean(self, k: int, name: str, ins: list[int], outs: list[int], opts: Any) -> Node | None:
        """MEAN over constant axes: int8 with QuantizedMeanOrSum's multiplier (x_scale / y_scale,
        folded with the count as TFLite does: the largest shift up to 32 and 31 + shift)."""
        x, y = ins[0], outs[0]
        axes = self.ints_of(ins[1])
        dims = self.shape(x)
        r = len(dims)
        self.why = "its axes are not constant axes of the input, or the output's size is not the reduced one"
        if axes is None or not r:
            return None
        flags = [0] * r
        for a in axes:
            if not -r <= a < r:
                return None
            flags[a % r] = 1
        count = int(np.prod([d for d, f in zip(dims, flags) if f], dtype=np.int64))
        if count <= 0 or int(np.prod(self.shape(y), dtype=np.int64)) * count != int(np.prod(dims, dtype=np.int64)):
            return None
        self.why = ""
        ints = [0, 0, 0, 0]
        if self.dtype(x) == "int8":
            (sx, zx), (sy, zy) = self.scale_zp(x), self.scale_zp(y)
            mult, shift = quantize_multiplier(float(sx[0]) / float(sy[0]))
            extra = min(count.bit_length() - 1, 32, 31 + shift)
            mult = tflite_fixed.w32((mult << extra) // count)  # both positive: C's division
            ints = [mult, shift - extra, zx[0], zy[0]]
        return Node(k, name, "TflMean", DOMAIN, (self.names[x],), (self.names[y],), {"tfl": ints + flags})

