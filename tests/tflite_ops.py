"""Random int8 .tflite models for the op tests of arena's runtime against TFLite Micro: one model per
seed whose branches run every lowered op from one input (and a small second one), each with random
shapes, strides, paddings, fused activations and quantization parameters, so one firmware build
checks them all (tests/run/test_tflite_arena.py)."""

from __future__ import annotations

import flatbuffers
import numpy as np

from arena_tool.model import tflite_model

fb = tflite_model.schema()


class Model:
    """A flatbuffer under construction: tensors with quantization, operators with options."""

    def __init__(self) -> None:
        self.m = fb.ModelT()
        self.m.version = 3
        self.m.buffers = [fb.BufferT()]
        self.sg = fb.SubGraphT()
        self.sg.tensors, self.sg.operators = [], []
        self.codes: list[int] = []

    def tensor(self, name: str, tname: str, shape: list[int], data: np.ndarray | None = None,
               scale: list[float] | None = None, zp: list[int] | None = None, dim: int = 0) -> int:
        t = fb.TensorT()
        t.name, t.type, t.shape, t.buffer = name, getattr(fb.TensorType, tname), np.array(shape, np.int32), 0
        if data is not None:
            b = fb.BufferT()
            b.data = np.frombuffer(np.ascontiguousarray(data).tobytes(), np.uint8).copy()
            self.m.buffers.append(b)
            t.buffer = len(self.m.buffers) - 1
        if scale is not None:
            q = fb.QuantizationParametersT()
            q.scale = np.array(scale, np.float32)
            q.zeroPoint = np.array(zp if zp is not None else [0] * len(scale), np.int64)
            q.quantizedDimension = dim
            t.quantization = q
        self.sg.tensors.append(t)
        return len(self.sg.tensors) - 1

    def op(self, name: str, ins: list[int], outs: list[int], kind: str | None = None, **fields: object) -> None:
        c = getattr(fb.BuiltinOperator, name)
        if c not in self.codes:
            self.codes.append(c)
        op = fb.OperatorT()
        op.opcodeIndex, op.inputs, op.outputs = self.codes.index(c), np.array(ins, np.int32), np.array(outs, np.int32)
        if kind is not None:
            o = getattr(fb, kind + "T")()
            for k, v in fields.items():
                setattr(o, k, v)
            op.builtinOptionsType, op.builtinOptions = getattr(fb.BuiltinOptions, kind), o
        self.sg.operators.append(op)

    def pack(self, inputs: list[int], outputs: list[int]) -> bytes:
        self.m.operatorCodes = []
        for c in self.codes:
            oc = fb.OperatorCodeT()
            oc.builtinCode, oc.deprecatedBuiltinCode, oc.version = c, min(c, 127), 1
            self.m.operatorCodes.append(oc)
        self.sg.inputs, self.sg.outputs = np.array(inputs, np.int32), np.array(outputs, np.int32)
        self.m.subgraphs = [self.sg]
        b = flatbuffers.Builder(1024)
        b.Finish(self.m.Pack(b), file_identifier=b"TFL3")
        return bytes(b.Output())


def _out_size(padding: int, size: int, k: int, stride: int, dilation: int) -> int:
    eff = (k - 1) * dilation + 1
    return (size + stride - 1) // stride if padding == 0 else (size - eff + stride) // stride


def random_ops_model(seed: int) -> bytes:
    """x [1, H, W, C] int8 and z [1, 1, 1, C] int8 into CONV_2D (per-channel), DEPTHWISE_CONV_2D
    (depth multiplier 1 or 2), AVERAGE_POOL_2D, ADD and MUL (z broadcast) and RESHAPE ->
    FULLY_CONNECTED -> SOFTMAX, each branch a graph output."""
    r = np.random.default_rng(seed)
    m = Model()
    H, W, C = int(r.integers(3, 9)), int(r.integers(3, 9)), int(r.integers(1, 6))
    sx, zx = float(r.uniform(0.01, 0.1)), int(r.integers(-128, 100))
    x = m.tensor("x", "INT8", [1, H, W, C], scale=[sx], zp=[zx])
    z = m.tensor("z", "INT8", [1, 1, 1, C], scale=[float(r.uniform(0.01, 0.1))], zp=[int(r.integers(-20, 20))])
    outs = []

    def act() -> int:
        return int(r.choice([0, 1, 3]))  # NONE, RELU, RELU6

    def window() -> tuple[int, int, int, int, int]:  # kh, kw, stride, padding, dilation
        return int(r.integers(1, 4)), int(r.integers(1, 4)), int(r.integers(1, 3)), int(r.integers(0, 2)), 1

    for kind in ("conv", "depthwise"):
        kh, kw, st, pad, dil = window()
        dm = int(r.integers(1, 3)) if kind == "depthwise" else 0
        M = C * dm if dm else int(r.integers(1, 9))
        oh, ow = _out_size(pad, H, kh, st, dil), _out_size(pad, W, kw, st, dil)
        if oh < 1 or ow < 1:
            kh = kw = 1
            oh, ow = _out_size(pad, H, 1, st, 1), _out_size(pad, W, 1, st, 1)
        wshape = [1, kh, kw, M] if dm else [M, kh, kw, C]
        sw = list(r.uniform(0.002, 0.02, M))
        w = m.tensor(f"{kind}_w", "INT8", wshape, r.integers(-127, 128, wshape).astype(np.int8), sw, [0] * M,
                     3 if dm else 0)
        bscale = [np.float32(sx) * np.float32(s) for s in sw]
        b = m.tensor(f"{kind}_b", "INT32", [M], r.integers(-3000, 3000, M).astype(np.int32), bscale, [0] * M)
        taps = kh * kw * (1 if dm else C)
        sy = float(sx * np.mean(sw) * 60 * 60 * np.sqrt(taps) / 40)
        y = m.tensor(f"{kind}_y", "INT8", [1, oh, ow, M], scale=[sy], zp=[int(r.integers(-60, 60))])
        if dm:
            m.op("DEPTHWISE_CONV_2D", [x, w, b], [y], "DepthwiseConv2DOptions", padding=pad, strideW=st, strideH=st,
                 depthMultiplier=dm, fusedActivationFunction=act(), dilationWFactor=dil, dilationHFactor=dil)
        else:
            m.op("CONV_2D", [x, w, b], [y], "Conv2DOptions", padding=pad, strideW=st, strideH=st,
                 fusedActivationFunction=act(), dilationWFactor=dil, dilationHFactor=dil)
        outs.append(y)
    kh, kw, st, pad, _ = window()
    oh, ow = _out_size(pad, H, kh, st, 1), _out_size(pad, W, kw, st, 1)
    if oh < 1 or ow < 1:
        kh = kw = 1
        oh, ow = _out_size(pad, H, 1, st, 1), _out_size(pad, W, 1, st, 1)
    p = m.tensor("pool_y", "INT8", [1, oh, ow, C], scale=[sx], zp=[zx])
    m.op("AVERAGE_POOL_2D", [x], [p], "Pool2DOptions", padding=pad, strideW=st, strideH=st, filterWidth=kw,
         filterHeight=kh, fusedActivationFunction=act())
    outs.append(p)
    for name in ("ADD", "MUL"):
        y = m.tensor(f"{name.lower()}_y", "INT8", [1, H, W, C], scale=[float(r.uniform(0.02, 0.2))],
                     zp=[int(r.integers(-30, 30))])
        m.op(name, [x, z], [y], "AddOptions" if name == "ADD" else "MulOptions", fusedActivationFunction=act())
        outs.append(y)
    K, N = H * W * C, int(r.integers(2, 12))
    flat = m.tensor("flat", "INT8", [1, K], scale=[sx], zp=[zx])
    shape = m.tensor("flat_shape", "INT32", [2], np.array([1, K], np.int32))
    m.op("RESHAPE", [x, shape], [flat], "ReshapeOptions", newShape=np.array([1, K], np.int32))
    sw1 = float(r.uniform(0.002, 0.02))
    fw = m.tensor("fc_w", "INT8", [N, K], r.integers(-127, 128, (N, K)).astype(np.int8), [sw1], [0])
    fb_ = m.tensor("fc_b", "INT32", [N], r.integers(-3000, 3000, N).astype(np.int32), [np.float32(sx) * np.float32(sw1)])
    logits = m.tensor("fc_y", "INT8", [1, N], scale=[float(sx * sw1 * 3600 * np.sqrt(K) / 40)],
                      zp=[int(r.integers(-20, 20))])
    m.op("FULLY_CONNECTED", [flat, fw, fb_], [logits], "FullyConnectedOptions", fusedActivationFunction=0)
    prob = m.tensor("softmax_y", "INT8", [1, N], scale=[1.0 / 256], zp=[-128])
    m.op("SOFTMAX", [logits], [prob], "SoftmaxOptions", beta=float(r.choice([1.0, 0.5, 2.0])))
    outs += [logits, prob]
    return m.pack([x, z], outs)
