"""An int8 QOperator ONNX model as the same int8 network in a .tflite, for TFLite Micro to run.

    python3 bench/onnx2tflite.py MODEL.onnx OUT.tflite [--check]

Why: bench/speed.py compares arena with TFLM + CMSIS-NN on networks that ship as ONNX only (the
zoo's, quantized here by tests/quantized.py); TFLM needs a .tflite of the same network. Each
tensor keeps its codes, scales and zero points; activations are NHWC (4-D tensors), weights in
TFLite's order (CONV_2D OHWI, DEPTHWISE_CONV_2D 1HWO, FULLY_CONNECTED OI), per-channel.

Ops: QuantizeLinear/DequantizeLinear (QUANTIZE/DEQUANTIZE), QLinearConv (CONV_2D, or
DEPTHWISE_CONV_2D for one input channel per group), QGemm and QLinearMatMul (FULLY_CONNECTED),
QLinearAdd/QLinearMul (ADD/MUL), MaxPool (MAX_POOL_2D), QLinearGlobalAveragePool (AVERAGE_POOL_2D,
then a QUANTIZE to its output's scale where it differs: CMSIS-NN's pool; TFLM's MEAN, which could
requantize in one op, is reference code: MobileNetV3's pools 3,368,280 instructions against 199,440),
QLinearConcat (CONCATENATION, whose inputs TFLM requires quantized as its output: a conv read only
there is written at the concat's scale, as TFLite's converter writes it, another input requantized
by a QUANTIZE), Reshape, Flatten, Transpose and Split (RESHAPE, TRANSPOSE, SPLIT/SPLIT_V, the
layout followed through them), QLinearSoftmax (SOFTMAX), and onnxruntime's DequantizeLinear ->
HardSigmoid -> QuantizeLinear -> QLinearMul(x, .) chain: HARD_SWISH when it multiplies the
HardSigmoid's own input, else the float HardSigmoid as ADD (fused RELU6) and MUL between a
DEQUANTIZE and a QUANTIZE. Padding TFLite's SAME/VALID cannot express (ONNX pads the top of a
stride-2 layer on an even size; TFLite pads the bottom) is an explicit PAD (PADV2 with -128 before
a MaxPool) and a VALID layer.

What is not the same network is said in ``Converted.notes``: uint8 activations become int8 ones
(codes and zero points minus 128: exact), weights with zero points other than 0 become symmetric
int8 (q - zp, exact where it fits in int8; else that channel rescaled to 127, approximate), as
TFLM's int8 kernels take only symmetric weights; a conv written at the scale of the concat it
feeds rounds once where onnxruntime rounds twice.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import Any, Sequence

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

NHWC = (0, 2, 3, 1)  # a 4-D ONNX tensor (NCHW) as TFLite holds it: tflite = onnx.transpose(NHWC)


class ConvertError(Exception):
    """The model holds something this converter does not write (an op, an attribute)."""


def _canonical(rank: int) -> tuple[int, ...]:
    """The layout of a rank-``rank`` activation: channels last for 4-D and for the 5-D of a
    channel shuffle (N, G, C/G, H, W -> N, H, W, G, C/G); as in ONNX otherwise."""
    if rank == 4:
        return NHWC
    if rank == 5:
        return (0, 3, 4, 1, 2)
    return tuple(range(rank))


def _inverse(p: Sequence[int]) -> tuple[int, ...]:
    inv = [0] * len(p)
    for i, j in enumerate(p):
        inv[j] = i
    return tuple(inv)


@dataclasses.dataclass
class Tens:
    """An ONNX tensor as written: the TFLite tensor's index, the layout (tflite = onnx.transpose(perm)),
    the ONNX shape and its quantization (None: float32)."""

    index: int
    perm: tuple[int, ...]
    shape: tuple[int, ...]
    quant: tuple[float, int] | None


@dataclasses.dataclass
class Converted:
    data: bytes
    notes: list[str]
    input_perm: tuple[int, ...]  # the TFLite input is the ONNX input transposed by this
    probes: dict[str, tuple[int, tuple[int, ...]]]  # extra output: (output index, its layout)


class _Writer:
    def __init__(self, model: Any) -> None:
        from onnx import numpy_helper

        from arena_tool.model import tflite_model

        self.fb = tflite_model.schema()
        self.g = model.graph
        self.init = {i.name: numpy_helper.to_array(i) for i in self.g.initializer}
        self.m = self.fb.ModelT()
        self.m.version = 3
        self.m.description = "bench/onnx2tflite.py"
        self.m.buffers = [self.fb.BufferT()]
        self.sg = self.fb.SubGraphT()
        self.sg.tensors, self.sg.operators = [], []
        self.codes: list[int] = []
        self.t: dict[str, Tens] = {}
        self.notes: list[str] = []
        self.shift = 0  # -128 when the activations are uint8
        self.consumers: dict[str, list[Any]] = {}
        self.producer: dict[str, Any] = {}
        for n in self.g.node:
            for x in n.input:
                self.consumers.setdefault(x, []).append(n)
            for y in n.output:
                self.producer[y] = n
        self.skip: set[int] = set()  # ids of nodes folded into another one
        self.hard_swish: set[int] = set()  # ids of the QLinearMul nodes written as HARD_SWISH
        self.names: set[str] = set()
        self.approx_channels = 0
        self.retargeted = 0  # convs written at the scale of the concat they feed
        self.exact_channels = 0

    # --- tensors and ops ---------------------------------------------------------------------

    def tensor(self, name: str, dtype: str, shape: Sequence[int], data: np.ndarray | None = None,
               scale: Any = None, zp: Any = None, qdim: int = 0) -> int:
        fb = self.fb
        t = fb.TensorT()
        base, k = name, 1
        while name in self.names:
            k += 1
            name = f"{base}_{k}"
        self.names.add(name)
        t.name, t.type, t.shape = name, getattr(fb.TensorType, dtype), np.array(shape, np.int32)
        t.buffer = 0
        if data is not None:
            b = fb.BufferT()
            b.data = np.frombuffer(np.ascontiguousarray(data).tobytes(), np.uint8).copy()
            self.m.buffers.append(b)
            t.buffer = len(self.m.buffers) - 1
        if scale is not None:
            q = fb.QuantizationParametersT()
            q.scale = np.atleast_1d(np.asarray(scale, np.float32)).copy()
            q.zeroPoint = np.atleast_1d(np.asarray(zp, np.int64)).copy()
            q.quantizedDimension = qdim
            t.quantization = q
        self.sg.tensors.append(t)
        return len(self.sg.tensors) - 1

    def const_i32(self, name: str, values: Sequence[int]) -> int:
        a = np.array(values, np.int32)
        return self.tensor(name, "INT32", a.shape, a)

    def op(self, kind: str, ins: Sequence[int], outs: Sequence[int], options: str | None = None, **fields: Any) -> None:
        fb = self.fb
        c = getattr(fb.BuiltinOperator, kind)
        if c not in self.codes:
            self.codes.append(c)
        o = fb.OperatorT()
        o.opcodeIndex, o.inputs, o.outputs = self.codes.index(c), np.array(ins, np.int32), np.array(outs, np.int32)
        if options is not None:
            opt = getattr(fb, options + "T")()
            for k, v in fields.items():
                if not hasattr(opt, k):
                    raise AssertionError(f"{options} has no field {k}")
                setattr(opt, k, v)
            o.builtinOptionsType, o.builtinOptions = getattr(fb.BuiltinOptions, options), opt
        self.sg.operators.append(o)

    def act(self, name: str, shape: Sequence[int], quant: tuple[float, int] | None,
            perm: tuple[int, ...] | None = None) -> Tens:
        """A new activation tensor for ONNX tensor ``name`` (shape in ONNX order)."""
        perm = _canonical(len(shape)) if perm is None else perm
        tshape = [shape[i] for i in perm]
        if quant is None:
            idx = self.tensor(name, "FLOAT32", tshape)
        else:
            idx = self.tensor(name, "INT8", tshape, scale=quant[0], zp=quant[1])
        t = Tens(idx, perm, tuple(int(s) for s in shape), quant)
        self.t[name] = t
        return t

    # --- quantization parameters ---------------------------------------------------------------

    def qparam(self, s_name: str, zp_name: str) -> tuple[float, int]:
        """An activation's (scale, zero point) as int8: a uint8 zero point minus 128."""
        s = float(np.asarray(self.init[s_name]).reshape(-1)[0])
        zp_arr = np.asarray(self.init[zp_name]) if zp_name else np.array(0, np.int8)
        zp = int(zp_arr.reshape(-1)[0])
        if zp_arr.dtype == np.uint8:
            if not self.shift:
                self.shift = -128
                self.notes.append("uint8 activations written as int8: every code and zero point minus 128 (exact)")
            zp -= 128
        return s, zp

    def weights(self, w: np.ndarray, s: np.ndarray, zp: np.ndarray, x_scale: float,
                bias: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per output channel (axis 0): symmetric int8 codes, their scales and the int32 bias.
        Zero points other than 0 are subtracted; a channel whose codes then leave [-127, 127]
        is rescaled (bias rescaled with it)."""
        cout = w.shape[0]
        s = np.broadcast_to(np.asarray(s, np.float32).reshape(-1), (cout,)).astype(np.float64)
        zp = np.broadcast_to(np.asarray(zp).reshape(-1).astype(np.int64), (cout,))
        b = np.zeros(cout, np.int64) if bias is None else bias.astype(np.int64)
        if w.dtype != np.int8:
            raise ConvertError(f"weights of type {w.dtype}: only int8 weights are written")
        q = w.astype(np.int64) - zp.reshape((cout,) + (1,) * (w.ndim - 1))
        if not zp.any():
            return w.astype(np.int8), s.astype(np.float32), b.astype(np.int32)
        out_q = np.empty(w.shape, np.int8)
        out_s = np.empty(cout, np.float64)
        out_b = np.empty(cout, np.int64)
        for c in range(cout):
            m = int(np.abs(q[c]).max()) if q[c].size else 0
            if m <= 127:
                out_q[c], out_s[c], out_b[c] = q[c], s[c], b[c]
                self.exact_channels += 1
            else:
                ns = s[c] * m / 127.0
                out_q[c] = np.clip(np.round(q[c] * (s[c] / ns)), -127, 127)
                out_s[c] = ns
                out_b[c] = np.round(b[c] * (s[c] / ns))
                self.approx_channels += 1
        return out_q, out_s.astype(np.float32), np.clip(out_b, -2**31, 2**31 - 1).astype(np.int32)

    # --- layout ---------------------------------------------------------------------------------

    def relayout(self, x: Tens, perm: tuple[int, ...], name: str) -> Tens:
        """``x`` in layout ``perm`` (a TRANSPOSE when it is not already)."""
        if x.perm == perm:
            return x
        r = [_inverse(x.perm)[p] for p in perm]
        out = self.act(name + "_relayout", x.shape, x.quant, perm)
        self.op("TRANSPOSE", [x.index, self.const_i32(name + "_perm", r)], [out.index], "TransposeOptions")
        return out

    def reshape(self, x: Tens, shape: Sequence[int], name: str) -> None:
        """ONNX Reshape of ``x`` to ``shape`` as one RESHAPE when the TFLite layouts allow it
        (checked on an index array), else TRANSPOSE to ONNX order, RESHAPE, TRANSPOSE back."""
        shape = tuple(int(s) for s in shape)
        n = int(np.prod(x.shape))
        idx = np.arange(n).reshape(x.shape)
        flat_in = idx.transpose(x.perm).reshape(-1)
        onnx_out = idx.reshape(shape)
        for perm in dict.fromkeys([_canonical(len(shape)), tuple(range(len(shape)))]):
            if np.array_equal(flat_in, onnx_out.transpose(perm).reshape(-1)):
                out = self.act(name, shape, x.quant, perm)
                tshape = [shape[i] for i in perm]
                self.op("RESHAPE", [x.index, self.const_i32(name + "_shape", tshape)], [out.index],
                        "ReshapeOptions", newShape=np.array(tshape, np.int32))
                return
        plain = self.relayout(x, tuple(range(len(x.shape))), name + "_in")
        mid = self.act(name + "_plain", shape, x.quant, tuple(range(len(shape))))
        self.op("RESHAPE", [plain.index, self.const_i32(name + "_shape", shape)], [mid.index],
                "ReshapeOptions", newShape=np.array(shape, np.int32))
        final = self.relayout(mid, _canonical(len(shape)), name)
        self.t[name] = final

    # --- padding --------------------------------------------------------------------------------

    def padding(self, x: Tens, kernel: Sequence[int], strides: Sequence[int], dilations: Sequence[int],
                pads: Sequence[int], name: str, pad_value: int | None) -> tuple[Tens, int, tuple[int, int]]:
        """(input, TFLite Padding, output H W): SAME or VALID where they compute ONNX's pads, else
        an explicit PAD (PADV2 of ``pad_value`` when given) and VALID."""
        fb = self.fb
        H, W = x.shape[2], x.shape[3]
        pt, pl, pb, pr = pads
        outs = []
        same = valid = True
        for size, k, s, d, a, b in ((H, kernel[0], strides[0], dilations[0], pt, pb),
                                    (W, kernel[1], strides[1], dilations[1], pl, pr)):
            dk = (k - 1) * d + 1
            o = (size + a + b - dk) // s + 1
            outs.append(o)
            total = max((o - 1) * s + dk - size, 0)
            same &= o == (size + s - 1) // s and a == total // 2
            valid &= a == 0 and o == (size - dk) // s + 1
        if valid:
            return x, fb.Padding.VALID, (outs[0], outs[1])
        if same:
            return x, fb.Padding.SAME, (outs[0], outs[1])
        shape = (x.shape[0], x.shape[1], H + pt + pb, W + pl + pr)
        out = self.act(name + "_pad", shape, x.quant)
        pad = np.array([[0, 0], [pt, pb], [pl, pr], [0, 0]], np.int32)
        ins = [self.relayout(x, NHWC, name).index, self.tensor(name + "_pads", "INT32", pad.shape, pad)]
        if pad_value is None:
            self.op("PAD", ins, [out.index], "PadOptions")
        else:
            assert x.quant is not None
            ins.append(self.tensor(name + "_padvalue", "INT8", [1], np.array([pad_value], np.int8),
                                   scale=x.quant[0], zp=x.quant[1]))
            self.op("PADV2", ins, [out.index], "PadV2Options")
        return out, fb.Padding.VALID, (outs[0], outs[1])

    # --- ops ------------------------------------------------------------------------------------

    def attrs(self, n: Any) -> dict[str, Any]:
        from onnx import helper

        return {a.name: helper.get_attribute_value(a) for a in n.attribute}

    def convert(self, probes: Sequence[str] = ()) -> None:
        g = self.g
        inputs = [i for i in g.input if i.name not in self.init]
        if len(inputs) != 1:
            raise ConvertError(f"{len(inputs)} graph inputs: one is written")
        dims = [d.dim_value for d in inputs[0].type.tensor_type.shape.dim]
        x = self.act(inputs[0].name, [d if d > 0 else 1 for d in dims], None)
        self.sg.inputs = np.array([x.index], np.int32)
        self.input_perm = x.perm
        for n in g.node:
            chain = self._hard_swish(n) if n.op_type == "QLinearMul" else None
            if chain is not None:
                self.hard_swish.add(id(n))
                self.skip.update(id(c) for c in chain)
        for n in g.node:
            if id(n) in self.skip:
                continue
            fn = getattr(self, "op_" + n.op_type, None)
            if fn is None:
                raise ConvertError(f"node {n.name or n.output[0]}: {n.op_type} is not written")
            fn(n, self.attrs(n))
        outs = []
        for o in g.output:
            t = self.t[o.name]
            outs.append(self.relayout(t, tuple(range(len(t.shape))), o.name).index)
        self.probes = {}
        for name in probes:
            if name in self.t:
                self.probes[name] = (len(outs), self.t[name].perm)
                outs.append(self.t[name].index)
        self.sg.outputs = np.array(outs, np.int32)

    def op_QuantizeLinear(self, n: Any, a: dict[str, Any]) -> None:
        x = self.t[n.input[0]]
        q = self.qparam(n.input[1], n.input[2] if len(n.input) > 2 else "")
        out = self.act(n.output[0], x.shape, q, x.perm)
        self.op("QUANTIZE", [x.index], [out.index], "QuantizeOptions")

    def op_DequantizeLinear(self, n: Any, a: dict[str, Any]) -> None:
        x = self.t[n.input[0]]
        out = self.act(n.output[0], x.shape, None, x.perm)
        self.op("DEQUANTIZE", [x.index], [out.index], "DequantizeOptions")

    def op_QLinearConv(self, n: Any, a: dict[str, Any]) -> None:
        fb = self.fb
        if a.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
            raise ConvertError(f"node {n.name}: auto_pad {a['auto_pad']!r} is not written")
        x = self.relayout(self.t[n.input[0]], NHWC, n.output[0])
        xs, _ = self.qparam(n.input[1], n.input[2])
        w = self.init[n.input[3]]
        q = self.qparam(n.input[6], n.input[7])
        bias = self.init[n.input[8]] if len(n.input) > 8 and n.input[8] else None
        cout, cin_g, kh, kw = w.shape
        group = int(a.get("group", 1))
        cin = x.shape[1]
        strides = a.get("strides", [1, 1])
        dil = a.get("dilations", [1, 1])
        pads = a.get("pads", [0, 0, 0, 0])
        wq, ws, b = self.weights(w, self.init[n.input[4]], self.init[n.input[5]], xs, bias)
        xin, padding, (oh, ow) = self.padding(x, (kh, kw), strides, dil, pads, n.output[0], None)
        out = self.act(n.output[0], (x.shape[0], cout, oh, ow), q)
        bscale = (np.float64(xs) * ws.astype(np.float64)).astype(np.float32)
        if group == 1:
            wt = self.tensor(n.input[3], "INT8", [cout, kh, kw, cin], wq.transpose(0, 2, 3, 1), ws, np.zeros(cout), 0)
            bt = self.tensor(n.output[0] + "_bias", "INT32", [cout], b, bscale, np.zeros(cout), 0)
            self.op("CONV_2D", [xin.index, wt, bt], [out.index], "Conv2DOptions", padding=padding,
                    strideH=strides[0], strideW=strides[1], dilationHFactor=dil[0], dilationWFactor=dil[1])
        elif group == cin and cin_g == 1:
            wt = self.tensor(n.input[3], "INT8", [1, kh, kw, cout], wq.transpose(1, 2, 3, 0), ws, np.zeros(cout), 3)
            bt = self.tensor(n.output[0] + "_bias", "INT32", [cout], b, bscale, np.zeros(cout), 0)
            self.op("DEPTHWISE_CONV_2D", [xin.index, wt, bt], [out.index], "DepthwiseConv2DOptions",
                    padding=padding, strideH=strides[0], strideW=strides[1], depthMultiplier=cout // cin,
                    dilationHFactor=dil[0], dilationWFactor=dil[1])
        else:
            raise ConvertError(f"node {n.name}: a grouped conv of {group} groups is not written")

    def _fc(self, n: Any, x: Tens, xs: float, w: np.ndarray, ws: Any, wzp: Any, bias: np.ndarray | None,
            q: tuple[float, int]) -> None:
        if len(x.shape) != 2:
            raise ConvertError(f"node {n.name}: a {len(x.shape)}-D input to a dense layer is not written")
        wq, s, b = self.weights(w, ws, wzp, xs, bias)
        cout, k = wq.shape
        wt = self.tensor(n.output[0] + "_weights", "INT8", [cout, k], wq, s, np.zeros(cout), 0)
        bscale = (np.float64(xs) * s.astype(np.float64)).astype(np.float32)
        bt = self.tensor(n.output[0] + "_bias", "INT32", [cout], b, bscale, np.zeros(cout), 0)
        out = self.act(n.output[0], (x.shape[0], cout), q)
        self.op("FULLY_CONNECTED", [x.index, wt, bt], [out.index], "FullyConnectedOptions")

    def op_QGemm(self, n: Any, a: dict[str, Any]) -> None:
        if a.get("transA", 0) or abs(float(a.get("alpha", 1.0)) - 1.0) > 0 or len(n.input) < 9:
            raise ConvertError(f"node {n.name}: QGemm with transA, alpha != 1 or a float output is not written")
        x = self.t[n.input[0]]
        xs, _ = self.qparam(n.input[1], n.input[2])
        w = self.init[n.input[3]]
        w = w if a.get("transB", 0) else w.T
        bias = self.init[n.input[6]] if n.input[6] else None
        self._fc(n, x, xs, w, self.init[n.input[4]], self.init[n.input[5]], bias, self.qparam(n.input[7], n.input[8]))

    def op_QLinearMatMul(self, n: Any, a: dict[str, Any]) -> None:
        x = self.t[n.input[0]]
        xs, _ = self.qparam(n.input[1], n.input[2])
        self._fc(n, x, xs, self.init[n.input[3]].T, self.init[n.input[4]], self.init[n.input[5]], None,
                 self.qparam(n.input[6], n.input[7]))

    def _binary(self, n: Any, kind: str) -> None:
        a, b = self.t[n.input[0]], self.t[n.input[3]]
        b = self.relayout(b, a.perm, n.output[0] + "_b") if len(b.shape) == len(a.shape) else b
        q = self.qparam(n.input[6], n.input[7])
        shape = tuple(max(u, v) for u, v in zip(a.shape, b.shape))
        out = self.act(n.output[0], shape, q, a.perm)
        self.op(kind, [a.index, b.index], [out.index], kind.capitalize() + "Options")

    def op_QLinearAdd(self, n: Any, a: dict[str, Any]) -> None:
        self._binary(n, "ADD")

    def op_QLinearMul(self, n: Any, a: dict[str, Any]) -> None:
        if id(n) in self.hard_swish:
            x = self.t[n.input[0]]
            out = self.act(n.output[0], x.shape, self.qparam(n.input[6], n.input[7]), x.perm)
            self.op("HARD_SWISH", [x.index], [out.index], "HardSwishOptions")
            return
        self._binary(n, "MUL")

    def _hard_swish(self, n: Any) -> tuple[Any, Any, Any] | None:
        """The DequantizeLinear -> HardSigmoid -> QuantizeLinear chain feeding QLinearMul ``n``'s
        second input when its DequantizeLinear reads ``n``'s first input (x * hardsigmoid(x), the
        standard 1/6 and 1/2), each node used only there; its nodes are then skipped."""
        q = self.producer.get(n.input[3])
        hs = self.producer.get(q.input[0]) if q is not None and q.op_type == "QuantizeLinear" else None
        dq = self.producer.get(hs.input[0]) if hs is not None and hs.op_type == "HardSigmoid" else None
        if q is None or hs is None or dq is None or dq.op_type != "DequantizeLinear" or dq.input[0] != n.input[0]:
            return None
        at = self.attrs(hs)
        if not (np.isclose(at.get("alpha", 0.2), 1 / 6) and np.isclose(at.get("beta", 0.5), 0.5)):
            return None
        if any(len(self.consumers.get(t.output[0], [])) != 1 for t in (q, hs, dq)):
            return None
        return (dq, hs, q)

    def op_HardSigmoid(self, n: Any, a: dict[str, Any]) -> None:
        """A float HardSigmoid: max(0, min(1, alpha x + beta)) = relu6(6 alpha x + 6 beta) / 6."""
        x = self.t[n.input[0]]
        alpha, beta = float(a.get("alpha", 0.2)), float(a.get("beta", 0.5))
        y = x.index
        if np.float32(6 * alpha) != np.float32(1):
            t = self.act(n.output[0] + "_scaled", x.shape, None, x.perm)
            c = self.tensor(n.output[0] + "_alpha6", "FLOAT32", [1], np.array([6 * alpha], np.float32))
            self.op("MUL", [y, c], [t.index], "MulOptions")
            y = t.index
        t = self.act(n.output[0] + "_relu6", x.shape, None, x.perm)
        c = self.tensor(n.output[0] + "_beta6", "FLOAT32", [1], np.array([6 * beta], np.float32))
        self.op("ADD", [y, c], [t.index], "AddOptions", fusedActivationFunction=self.fb.ActivationFunctionType.RELU6)
        out = self.act(n.output[0], x.shape, None, x.perm)
        c = self.tensor(n.output[0] + "_sixth", "FLOAT32", [1], np.array([1 / 6], np.float32))
        self.op("MUL", [t.index, c], [out.index], "MulOptions")

    def op_MaxPool(self, n: Any, a: dict[str, Any]) -> None:
        fb = self.fb
        if a.get("ceil_mode", 0) or a.get("storage_order", 0) or a.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
            raise ConvertError(f"node {n.name}: MaxPool with ceil_mode, storage_order or auto_pad is not written")
        x = self.relayout(self.t[n.input[0]], NHWC, n.output[0])
        k = a["kernel_shape"]
        s = a.get("strides", [1, 1])
        xin, padding, (oh, ow) = self.padding(x, k, s, a.get("dilations", [1, 1]), a.get("pads", [0, 0, 0, 0]),
                                              n.output[0], -128)
        out = self.act(n.output[0], (x.shape[0], x.shape[1], oh, ow), x.quant)
        self.op("MAX_POOL_2D", [xin.index], [out.index], "Pool2DOptions", padding=padding, strideH=s[0],
                strideW=s[1], filterHeight=k[0], filterWidth=k[1])

    def op_QLinearGlobalAveragePool(self, n: Any, a: dict[str, Any]) -> None:
        if a.get("channels_last", 0):
            raise ConvertError(f"node {n.name}: channels_last QLinearGlobalAveragePool is not written")
        x = self.relayout(self.t[n.input[0]], NHWC, n.output[0])
        q = self.qparam(n.input[3], n.input[4])
        N, C, H, W = x.shape
        pooled = self.act(n.output[0] + ("_pooled" if q != x.quant else ""), (N, C, 1, 1), x.quant)
        self.op("AVERAGE_POOL_2D", [x.index], [pooled.index], "Pool2DOptions", padding=self.fb.Padding.VALID,
                strideH=1, strideW=1, filterHeight=H, filterWidth=W)
        if q != x.quant:  # TFLM's AVERAGE_POOL_2D keeps its input's scale: requantized after it
            out = self.act(n.output[0], (N, C, 1, 1), q)
            self.op("QUANTIZE", [pooled.index], [out.index], "QuantizeOptions")

    def op_QLinearConcat(self, n: Any, a: dict[str, Any]) -> None:
        q = self.qparam(n.input[0], n.input[1])
        ins = [self.t[n.input[i]] for i in range(2, len(n.input), 3)]
        perm = ins[0].perm
        ready = []
        for i, (name, x) in enumerate(zip(n.input[2::3], ins)):
            x = self.relayout(x, perm, f"{n.output[0]}_in{i}")
            producer = self.producer.get(name)
            if (x.quant != q and producer is not None and producer.op_type == "QLinearConv"
                    and len(self.consumers.get(name, [])) == 1 and x is self.t[name]):
                # a conv read only here requantizes to the concat's scale, as TFLite's converter writes it
                qp = self.sg.tensors[x.index].quantization
                qp.scale, qp.zeroPoint = np.array([q[0]], np.float32), np.array([q[1]], np.int64)
                x.quant = q
                self.retargeted += 1
            if x.quant != q:  # TFLM's CONCATENATION takes its inputs quantized as its output
                r = self.act(f"{n.output[0]}_in{i}_requantized", x.shape, q, perm)
                self.op("QUANTIZE", [x.index], [r.index], "QuantizeOptions")
                x = r
            ready.append(x)
        axis = int(a["axis"]) % len(perm)
        shape = list(ins[0].shape)
        shape[axis] = sum(x.shape[axis] for x in ins)
        out = self.act(n.output[0], shape, q, perm)
        self.op("CONCATENATION", [x.index for x in ready], [out.index], "ConcatenationOptions",
                axis=perm.index(axis))

    def op_Reshape(self, n: Any, a: dict[str, Any]) -> None:
        x = self.t[n.input[0]]
        shape = [int(v) for v in self.init[n.input[1]]]
        total = int(np.prod(x.shape))
        shape = [x.shape[i] if v == 0 and not a.get("allowzero", 0) else v for i, v in enumerate(shape)]
        if -1 in shape:
            known = int(np.prod([v for v in shape if v != -1]))
            shape[shape.index(-1)] = total // known
        self.reshape(x, shape, n.output[0])

    def op_Flatten(self, n: Any, a: dict[str, Any]) -> None:
        x = self.t[n.input[0]]
        axis = int(a.get("axis", 1)) % max(len(x.shape), 1)
        self.reshape(x, [int(np.prod(x.shape[:axis])), int(np.prod(x.shape[axis:]))], n.output[0])

    def op_Transpose(self, n: Any, a: dict[str, Any]) -> None:
        x = self.t[n.input[0]]
        q = [int(v) for v in a.get("perm", list(reversed(range(len(x.shape)))))]
        shape = tuple(x.shape[i] for i in q)
        out_perm = _canonical(len(shape))
        r = [_inverse(x.perm)[q[p]] for p in out_perm]
        out = self.act(n.output[0], shape, x.quant, out_perm)
        self.op("TRANSPOSE", [x.index, self.const_i32(n.output[0] + "_perm", r)], [out.index], "TransposeOptions")

    def op_Split(self, n: Any, a: dict[str, Any]) -> None:
        x = self.t[n.input[0]]
        axis = int(a.get("axis", 0)) % len(x.shape)
        if len(n.input) > 1 and n.input[1]:
            sizes = [int(v) for v in self.init[n.input[1]]]
        else:
            sizes = [int(v) for v in a.get("split", [])] or [x.shape[axis] // len(n.output)] * len(n.output)
        outs = []
        for name, size in zip(n.output, sizes):
            shape = list(x.shape)
            shape[axis] = size
            outs.append(self.act(name, shape, x.quant, x.perm).index)
        taxis = x.perm.index(axis)
        if len(set(sizes)) == 1:
            self.op("SPLIT", [self.const_i32(n.output[0] + "_axis", [taxis]), x.index], outs, "SplitOptions",
                    numSplits=len(outs))
        else:
            self.op("SPLIT_V", [x.index, self.const_i32(n.output[0] + "_sizes", sizes),
                                self.const_i32(n.output[0] + "_axis", [taxis])], outs, "SplitVOptions",
                    numSplits=len(outs))

    def op_QLinearSoftmax(self, n: Any, a: dict[str, Any]) -> None:
        x = self.t[n.input[0]]
        axis = int(a.get("axis", -1)) % len(x.shape)
        if x.perm.index(axis) != len(x.shape) - 1:
            raise ConvertError(f"node {n.name}: a softmax over an axis that is not the last is not written")
        out = self.act(n.output[0], x.shape, self.qparam(n.input[3], n.input[4]), x.perm)
        self.op("SOFTMAX", [x.index], [out.index], "SoftmaxOptions", beta=1.0)

    # --- result ---------------------------------------------------------------------------------

    def finish(self) -> bytes:
        import flatbuffers

        from arena_tool.emit import tflite_write

        fb = self.fb
        self.m.operatorCodes = []
        for c in self.codes:
            oc = fb.OperatorCodeT()
            oc.builtinCode, oc.deprecatedBuiltinCode, oc.version = c, min(c, 127), 1
            self.m.operatorCodes.append(oc)
        self.m.subgraphs = [self.sg]
        b = flatbuffers.Builder(1 << 20)
        b.Finish(self.m.Pack(b), file_identifier=b"TFL3")
        if self.retargeted:
            self.notes.append(f"{self.retargeted} conv outputs read only by a concat written at its scale "
                              "(requantized once, as TFLite's converter writes a concat; onnxruntime rounds twice)")
        if self.approx_channels:
            self.notes.append(f"weights with zero points other than 0 written symmetric: {self.exact_channels} "
                              f"channels exact (q - zp), {self.approx_channels} rescaled to fit int8 (approximate)")
        elif self.exact_channels:
            self.notes.append(f"weights with zero points other than 0 written symmetric (q - zp): all "
                              f"{self.exact_channels} channels exact")
        return tflite_write.realign(bytes(b.Output()))


def convert(model: Any, probes: Sequence[str] = ()) -> Converted:
    """The .tflite of int8 QOperator ONNX ``model`` (an onnx.ModelProto); ``probes``: ONNX tensors
    to make outputs too (for compare)."""
    w = _Writer(model)
    w.convert(probes)
    return Converted(w.finish(), w.notes, w.input_perm, w.probes)


def compare(model: Any, samples: int = 2) -> dict[str, int]:
    """Max abs difference in codes between onnxruntime on QOperator ``model`` and TFLM's host
    interpreter on its conversion, over ``samples`` seeded normal inputs, for the input of each
    QLinearSoftmax (the logits: a softmax's codes differ more, TFLM's exp being fixed point) and
    the model's output (in the codes of its last DequantizeLinear)."""
    import onnx
    import onnxruntime as ort
    from onnx import helper, numpy_helper
    from tflite_micro.python.tflite_micro import runtime

    m = onnx.ModelProto()
    m.CopyFrom(model)
    init = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
    probes: dict[str, tuple[float, int]] = {}  # int8 tensor -> (scale, uint8 shift)
    for n in m.graph.node:
        if n.op_type == "QLinearSoftmax":
            zp = init[n.input[2]]
            probes[n.input[0]] = (float(init[n.input[1]].reshape(-1)[0]), 128 if zp.dtype == np.uint8 else 0)
            m.graph.output.append(helper.make_tensor_value_info(
                n.input[0], onnx.TensorProto.UINT8 if zp.dtype == np.uint8 else onnx.TensorProto.INT8, None))
    c = convert(model, list(probes))
    out_scale = 1.0
    last = next(n for n in m.graph.node if n.output[0] == m.graph.output[0].name)
    if last.op_type == "DequantizeLinear":
        out_scale = float(init[last.input[1]].reshape(-1)[0])
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    inp = sess.get_inputs()[0]
    shape = [d if isinstance(d, int) and d > 0 else 1 for d in inp.shape]
    names = [o.name for o in sess.get_outputs()]
    it = runtime.Interpreter.from_bytes(c.data)
    worst: dict[str, int] = {}
    for k in range(samples):
        x = np.random.default_rng(k).standard_normal(shape).astype(np.float32)
        want = dict(zip(names, sess.run(None, {inp.name: x})))
        it.set_input(np.ascontiguousarray(x.transpose(c.input_perm)), 0)
        it.invoke()
        got = it.get_output(0).reshape(want[names[0]].shape).astype(np.float64)
        d = int(np.round(np.abs(got - want[names[0]]).max() / out_scale))
        worst["output"] = max(worst.get("output", 0), d)
        for name, (index, perm) in c.probes.items():
            g = it.get_output(index).astype(np.int64).transpose(_inverse(perm))
            w = want[name].astype(np.int64) - probes[name][1]
            worst[name] = max(worst.get(name, 0), int(np.abs(g - w).max()))
        it.reset()
    return worst


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", help="an int8 QOperator ONNX model")
    ap.add_argument("out", help="the .tflite to write")
    ap.add_argument("--check", action="store_true",
                    help="run both (onnxruntime, TFLM's host interpreter) on two seeded inputs and print the "
                         "largest output difference")
    args = ap.parse_args(argv)
    import onnx

    try:
        c = convert(onnx.load(args.model))
    except ConvertError as e:
        print(f"onnx2tflite: error: {args.model}: {e}", file=sys.stderr)
        return 2
    out = Path(args.out)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_bytes(c.data)
    tmp.replace(out)
    print(f"onnx2tflite: wrote {out} ({len(c.data):,} B)")
    for note in c.notes:
        print(f"onnx2tflite: note: {note}")
    if args.check:
        for name, d in compare(onnx.load(args.model)).items():
            print(f"onnx2tflite: TFLM host interpreter vs onnxruntime: {name}: max abs difference {d} codes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
