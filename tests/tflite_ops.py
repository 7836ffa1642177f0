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


def random_gap_ops_model(seed: int) -> bytes:
    """The int8 shapes and ops whose fast paths came last, random per seed: grouped CONV_2D (1x1 and
    3x3), DEPTHWISE_CONV_2D with depth multiplier 2 or 3, with a 9x9 kernel (81 taps) and in place (its
    input a 1x1 conv's output read by it alone, 32x32 by 9 or 13 channels: the peak), a CONV_2D whose
    im2col column is over 2 KB (its planned workspace holds two), FULLY_CONNECTED with a weight zero
    point, AVERAGE_POOL_2D and MAX_POOL_2D (4 channels a step and the rest, a window over 256 taps),
    ADD and MUL on equal shapes, a per-channel and a scalar broadcast, SOFTMAX on rows, each a graph
    output."""
    m = Model()
    ins, outs = _gap_ops(m, np.random.default_rng(seed), "")
    return m.pack(ins, outs)


def _conv_tail(m: Model, r: np.random.Generator, name: str, x: int, wshape: list[int], sx: float, M: int,
               out: tuple[int, int], stride: int, pad: int, dil: int, dm: int) -> int:
    """A CONV_2D (groups: x's channels / the weights' depth) or DEPTHWISE_CONV_2D (dm) of x into an output
    of ``out`` pixels, per-channel weights, random bias, activation and output quantization: its output."""
    sw = list(r.uniform(0.002, 0.02, M))
    w = m.tensor(f"{name}_w", "INT8", wshape, r.integers(-127, 128, wshape).astype(np.int8), sw, [0] * M,
                 3 if dm else 0)
    b = m.tensor(f"{name}_b", "INT32", [M], r.integers(-3000, 3000, M).astype(np.int32),
                 [np.float32(sx) * np.float32(s) for s in sw], [0] * M)
    taps = wshape[1] * wshape[2] * (1 if dm else wshape[3])
    sy = float(sx * np.mean(sw) * 60 * 60 * np.sqrt(taps) / 40)
    y = m.tensor(f"{name}_y", "INT8", [1, *out, M], scale=[sy], zp=[int(r.integers(-60, 60))])
    act = int(r.choice([0, 1, 3]))
    if dm:
        m.op("DEPTHWISE_CONV_2D", [x, w, b], [y], "DepthwiseConv2DOptions", padding=pad, strideW=stride,
             strideH=stride, depthMultiplier=dm, fusedActivationFunction=act, dilationWFactor=dil, dilationHFactor=dil)
    else:
        m.op("CONV_2D", [x, w, b], [y], "Conv2DOptions", padding=pad, strideW=stride, strideH=stride,
             fusedActivationFunction=act, dilationWFactor=dil, dilationHFactor=dil)
    return y


def _gap_ops(m: Model, r: np.random.Generator, pre: str) -> tuple[list[int], list[int]]:
    """random_gap_ops_model's ops on m, tensor names prefixed with ``pre``."""
    C = int(r.choice([6, 9, 12]))
    H, W = int(r.integers(4, 10)), int(r.integers(4, 10))
    sx, zx = float(r.uniform(0.01, 0.1)), int(r.integers(-128, 100))
    x = m.tensor(pre + "x", "INT8", [1, H, W, C], scale=[sx], zp=[zx])
    outs = []

    def geometry(kh: int, kw: int, dil: int = 1) -> tuple[tuple[int, int], int, int, int]:
        st, pad = int(r.integers(1, 3)), int(r.integers(0, 2))
        if _out_size(pad, H, kh, st, dil) < 1 or _out_size(pad, W, kw, st, dil) < 1:
            pad = 0  # SAME
        return (_out_size(pad, H, kh, st, dil), _out_size(pad, W, kw, st, dil)), st, pad, dil

    groups = int(r.choice([g for g in (2, 3, 4, 6) if C % g == 0]))
    for name, k in (("grouped1x1", 1), ("grouped3x3", 3)):
        M = groups * int(r.integers(1, 4))
        out, st, pad, dil = geometry(k, k) if k > 1 else ((H, W), 1, 1, 1)
        outs.append(_conv_tail(m, r, pre + name, x, [M, k, k, C // groups], sx, M, out, st, pad, dil, 0))
    dm = int(r.integers(2, 4))
    kh, kw = int(r.choice([2, 3])), 3
    out, st, pad, dil = geometry(kh, kw, int(r.choice([1, 2])))
    outs.append(_conv_tail(m, r, pre + "multiplier", x, [1, kh, kw, C * dm], sx, C * dm, out, st, pad, dil, dm))
    out, st, pad, dil = geometry(9, 9)
    outs.append(_conv_tail(m, r, pre + "dw9x9", x, [1, 9, 9, C], sx, C, out, st, pad, 1, 1))
    Cw = int(r.integers(230, 260))  # 3x3 x Cw > 2048 bytes per im2col column
    xw = m.tensor(pre + "xw", "INT8", [1, 3, 4, Cw], scale=[sx], zp=[zx])
    Mw = int(r.integers(3, 7))
    outs.append(_conv_tail(m, r, pre + "wide", xw, [Mw, 3, 3, Cw], sx, Mw, (3, 4), 1, 0, 1, 0))
    K, N = H * W * C, int(r.integers(5, 15))
    flat = m.tensor(pre + "flat", "INT8", [1, K], scale=[sx], zp=[zx])
    m.op("RESHAPE", [x, m.tensor(pre + "flat_shape", "INT32", [2], np.array([1, K], np.int32))], [flat],
         "ReshapeOptions", newShape=np.array([1, K], np.int32))
    sw1 = float(r.uniform(0.002, 0.02))
    fw = m.tensor(pre + "fc_w", "INT8", [N, K], r.integers(-100, 100, (N, K)).astype(np.int8), [sw1],
                  [int(r.integers(-20, 20))])
    fy = m.tensor(pre + "fc_y", "INT8", [1, N], scale=[float(sx * sw1 * 3600 * np.sqrt(K) / 40)],
                  zp=[int(r.integers(-20, 20))])
    m.op("FULLY_CONNECTED", [flat, fw, -1], [fy], "FullyConnectedOptions", fusedActivationFunction=int(r.choice([0, 1])))
    outs.append(fy)
    for kind in ("AVERAGE_POOL_2D", "MAX_POOL_2D"):
        kh, kw = int(r.integers(1, 4)), int(r.integers(1, 4))
        out, st, pad, _ = geometry(kh, kw)
        y = m.tensor(pre + kind.lower(), "INT8", [1, *out, C], scale=[sx], zp=[zx])
        m.op(kind, [x], [y], "Pool2DOptions", padding=pad, strideW=st, strideH=st, filterWidth=kw, filterHeight=kh,
             fusedActivationFunction=int(r.choice([0, 1, 3])))
        outs.append(y)
    xg = m.tensor(pre + "xg", "INT8", [1, 18, 17, 5], scale=[sx], zp=[zx])  # 306 taps, one window
    y = m.tensor(pre + "global_pool", "INT8", [1, 1, 1, 5], scale=[sx], zp=[zx])
    m.op("AVERAGE_POOL_2D", [xg], [y], "Pool2DOptions", padding=1, strideW=1, strideH=1, filterWidth=17,
         filterHeight=18, fusedActivationFunction=0)
    outs.append(y)
    x2 = m.tensor(pre + "x2", "INT8", [1, H, W, C], scale=[float(r.uniform(0.01, 0.1))], zp=[int(r.integers(-100, 100))])
    zc = m.tensor(pre + "zc", "INT8", [C], scale=[float(r.uniform(0.01, 0.1))], zp=[int(r.integers(-20, 20))])
    zs = m.tensor(pre + "zs", "INT8", [1, 1, 1, 1], scale=[float(r.uniform(0.01, 0.1))], zp=[int(r.integers(-20, 20))])
    for name in ("ADD", "MUL"):
        for other, tag in ((x2, "same"), (zc, "channel"), (zs, "scalar")):
            y = m.tensor(f"{pre}{name.lower()}_{tag}", "INT8", [1, H, W, C], scale=[float(r.uniform(0.02, 0.2))],
                         zp=[int(r.integers(-30, 30))])
            pair = [other, x] if tag == "scalar" and name == "ADD" else [x, other]
            m.op(name, pair, [y], "AddOptions" if name == "ADD" else "MulOptions",
                 fusedActivationFunction=int(r.choice([0, 1, 3])))
            outs.append(y)
    rows = m.tensor(pre + "softmax_y", "INT8", [1, H, W, C], scale=[1.0 / 256], zp=[-128])
    m.op("SOFTMAX", [x], [rows], "SoftmaxOptions", beta=float(r.choice([1.0, 0.5, 2.0])))
    outs.append(rows)
    # the largest images, last: in place the depthwise conv lowers the peak, so the plan keeps it
    Ci = int(r.choice([9, 13]))
    xi = m.tensor(pre + "xi", "INT8", [1, 32, 32, 8], scale=[sx], zp=[zx])
    mid = _conv_tail(m, r, pre + "pre_dw", xi, [Ci, 1, 1, 8], sx, Ci, (32, 32), 1, 1, 1, 0)  # read by the dw only
    smid = float(m.sg.tensors[mid].quantization.scale[0])
    outs.append(_conv_tail(m, r, pre + "in_place", mid, [1, 3, 3, Ci], smid, Ci, (32, 32), 1, 0, 1, 1))
    return [x, xw, xg, x2, zc, zs, xi], outs


def random_ops_model(seed: int) -> bytes:
    """x [1, H, W, C] int8 and z [1, 1, 1, C] int8 into CONV_2D (per-channel), DEPTHWISE_CONV_2D
    (depth multiplier 1 or 2), AVERAGE_POOL_2D, ADD and MUL (z broadcast) and RESHAPE ->
    FULLY_CONNECTED -> SOFTMAX, each branch a graph output."""
    m = Model()
    ins, outs = _first_ops(m, np.random.default_rng(seed))
    return m.pack(ins, outs)


def random_every_op_model(seed: int) -> bytes:
    """random_ops_model's, random_more_ops_model's, random_float_ops_model's, random_fast_paths_model's
    (two of its variants: 3x3 depthwise; 5x5 with TFLite's left shift) and random_gap_ops_model's ops in
    one model (one firmware runs them all)."""
    m = Model()
    r = np.random.default_rng(seed)
    ins, outs = _first_ops(m, r)
    ins2, outs2 = _more_ops(m, r, "m_")
    ins3, outs3 = _float_ops(m, r, "f_")
    ins4, outs4 = _fast_ops(m, r, "p_", 0)
    ins5, outs5 = _fast_ops(m, r, "q_", 5)
    ins6, outs6 = _gap_ops(m, r, "g_")
    return m.pack(ins + ins2 + ins3 + ins4 + ins5 + ins6, outs + outs2 + outs3 + outs4 + outs5 + outs6)


def random_fast_paths_model(seed: int) -> bytes:
    """The int8 fast paths of tfl_conv_int8.c and tfl_fully_connected_int8.c with channel counts that are
    not multiples of 4: x [1, H, W, C] into a 1x1 stride-1 CONV_2D (the input's pixels as GEMM columns), a
    CONV_2D through im2col (3x3 or 2x3, stride 1 or 2, SAME or VALID, dilation 1 or 2), a multiplier-1
    DEPTHWISE_CONV_2D (4 channels a step and the rest one at a time; 3x3, 5x5, 1x3, dilated) and a
    FULLY_CONNECTED (four rows a step and the tail), some with an output scale that makes TFLite's shift a
    left shift (the long requantization), each a graph output."""
    m = Model()
    ins, outs = _fast_ops(m, np.random.default_rng(seed), "", seed)
    return m.pack(ins, outs)


VALID_ = 1  # tflite Padding.VALID


def _fast_ops(m: Model, r: np.random.Generator, pre: str, variant: int) -> tuple[list[int], list[int]]:
    H, W, C = int(r.integers(4, 11)), int(r.integers(4, 11)), int(r.integers(5, 20))
    sx, zx = float(r.uniform(0.01, 0.1)), int(r.integers(-128, 100))
    x = m.tensor(pre + "x", "INT8", [1, H, W, C], scale=[sx], zp=[zx])
    outs = []
    cases = [("pointwise", 1, 1, 1, VALID_, 1), ("im2col", int(r.choice([2, 3])), 3, int(r.integers(1, 3)),
                                                 int(r.integers(0, 2)), int(r.choice([1, 1, 2]))),
             ("depthwise", *[(3, 3), (5, 5), (1, 3), (3, 3)][variant % 4], int(r.integers(1, 3)), int(r.integers(0, 2)),
              2 if variant % 4 == 3 else 1)]
    for name, kh, kw, st, pad, dil in cases:
        dm = name == "depthwise"
        M = C if dm else int(r.integers(3, 14))
        if _out_size(pad, H, kh, st, dil) < 1 or _out_size(pad, W, kw, st, dil) < 1:
            pad = 0  # SAME
        oh, ow = _out_size(pad, H, kh, st, dil), _out_size(pad, W, kw, st, dil)
        wshape = [1, kh, kw, M] if dm else [M, kh, kw, C]
        sw = list(r.uniform(0.002, 0.02, M))
        w = m.tensor(f"{pre}{name}_w", "INT8", wshape, r.integers(-127, 128, wshape).astype(np.int8), sw, [0] * M,
                     3 if dm else 0)
        b = m.tensor(f"{pre}{name}_b", "INT32", [M], r.integers(-3000, 3000, M).astype(np.int32),
                     [np.float32(sx) * np.float32(s) for s in sw], [0] * M)
        taps = kh * kw * (1 if dm else C)
        # variant 2 (mod 3): s_x s_w / s_y >= 1.5 (TFLite's left shift); 1: up to 0.7 (shift 0 and below)
        sy = float(sx * (np.min(sw) / 1.5 if variant % 3 == 2 else np.max(sw) / 0.7 if variant % 3 == 1
                         else np.mean(sw) * 60 * 60 * np.sqrt(taps) / 40))
        y = m.tensor(f"{pre}{name}_y", "INT8", [1, oh, ow, M], scale=[sy], zp=[int(r.integers(-60, 60))])
        if dm:
            m.op("DEPTHWISE_CONV_2D", [x, w, b], [y], "DepthwiseConv2DOptions", padding=pad, strideW=st, strideH=st,
                 depthMultiplier=1, fusedActivationFunction=int(r.choice([0, 1, 3])), dilationWFactor=dil,
                 dilationHFactor=dil)
        else:
            m.op("CONV_2D", [x, w, b], [y], "Conv2DOptions", padding=pad, strideW=st, strideH=st,
                 fusedActivationFunction=int(r.choice([0, 1, 3])), dilationWFactor=dil, dilationHFactor=dil)
        outs.append(y)
    K, N = H * W * C, int(r.integers(5, 15))
    flat = m.tensor(pre + "flat", "INT8", [1, K], scale=[sx], zp=[zx])
    shape = m.tensor(pre + "flat_shape", "INT32", [2], np.array([1, K], np.int32))
    m.op("RESHAPE", [x, shape], [flat], "ReshapeOptions", newShape=np.array([1, K], np.int32))
    sw1 = float(r.uniform(0.002, 0.02))
    fw = m.tensor(pre + "fc_w", "INT8", [N, K], r.integers(-127, 128, (N, K)).astype(np.int8), [sw1], [0])
    fb_ = m.tensor(pre + "fc_b", "INT32", [N], r.integers(-3000, 3000, N).astype(np.int32),
                   [np.float32(sx) * np.float32(sw1)])
    fy = m.tensor(pre + "fc_y", "INT8", [1, N], scale=[float(sx * sw1 * 3600 * np.sqrt(K) / 40)],
                  zp=[int(r.integers(-20, 20))])
    m.op("FULLY_CONNECTED", [flat, fw, fb_], [fy], "FullyConnectedOptions",
         fusedActivationFunction=int(r.choice([0, 1])))
    return [x], outs + [fy]


def _first_ops(m: Model, r: np.random.Generator) -> tuple[list[int], list[int]]:
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
    return [x, z], outs


def random_more_ops_model(seed: int) -> bytes:
    """x [1, H, W, C] int8 (and y2 [1, H, W, C2] of x's quantization for CONCATENATION) into
    MAX_POOL_2D, MEAN (random axes, keep_dims or not), PAD, PADV2, TRANSPOSE, STRIDED_SLICE (random begin,
    end, strides and masks, a shrunk axis), CONCATENATION, LOGISTIC, TANH, HARD_SWISH, QUANTIZE
    int8 -> int8, and DEQUANTIZE -> QUANTIZE (float32 in between), each a graph output."""
    m = Model()
    ins, outs = _more_ops(m, np.random.default_rng(seed), "")
    return m.pack(ins, outs)


def _more_ops(m: Model, r: np.random.Generator, pre: str) -> tuple[list[int], list[int]]:
    """random_more_ops_model's ops on m, tensor names prefixed with ``pre``."""
    H, W, C = int(r.integers(2, 8)), int(r.integers(2, 8)), int(r.integers(1, 6))
    sx, zx = float(r.uniform(0.01, 0.2)), int(r.integers(-100, 100))
    x = m.tensor(pre + "x", "INT8", [1, H, W, C], scale=[sx], zp=[zx])
    C2 = int(r.integers(1, 4))
    x2 = m.tensor(pre + "x2", "INT8", [1, H, W, C2], scale=[sx], zp=[zx])
    outs = []

    def q(name: str, shape: list[int], scale: float | None = None, zp: int | None = None) -> int:
        return m.tensor(name, "INT8", shape, scale=[scale if scale is not None else float(r.uniform(0.01, 0.2))],
                        zp=[zp if zp is not None else int(r.integers(-60, 60))])

    def i32(name: str, values: list[int]) -> int:
        return m.tensor(name, "INT32", [len(values)], np.array(values, np.int32))

    kh, kw, st, pad = int(r.integers(1, 4)), int(r.integers(1, 4)), int(r.integers(1, 3)), int(r.integers(0, 2))
    oh, ow = _out_size(pad, H, kh, st, 1), _out_size(pad, W, kw, st, 1)
    if oh < 1 or ow < 1:
        kh = kw = 1
        oh, ow = _out_size(pad, H, 1, st, 1), _out_size(pad, W, 1, st, 1)
    y = q(pre + "maxpool_y", [1, oh, ow, C], sx, zx)
    m.op("MAX_POOL_2D", [x], [y], "Pool2DOptions", padding=pad, strideW=st, strideH=st, filterWidth=kw,
         filterHeight=kh, fusedActivationFunction=int(r.choice([0, 1, 3])))
    outs.append(y)
    axes = sorted(int(a) for a in r.choice(4, size=int(r.integers(1, 4)), replace=False))
    keep = bool(r.integers(0, 2))
    shape = [1 if d in axes else n for d, n in enumerate([1, H, W, C]) if keep or d not in axes]
    y = q(pre + "mean_y", shape)
    m.op("MEAN", [x, i32(pre + "mean_axes", [a - 4 if r.integers(0, 2) else a for a in axes])], [y], "ReducerOptions",
         keepDims=keep)
    outs.append(y)
    pads = [[0, 0]] + [[int(r.integers(0, 3)), int(r.integers(0, 3))] for _ in range(3)]
    # PAD and TRANSPOSE copy bytes whatever the output's quantization (PAD fills with its zero point)
    y = q(pre + "pad_y", [1 + 0, H + sum(pads[1]), W + sum(pads[2]), C + sum(pads[3])])
    m.op("PAD", [x, m.tensor(pre + "pad_p", "INT32", [4, 2], np.array(pads, np.int32))], [y], "PadOptions")
    outs.append(y)
    perm = [0] + [int(p) + 1 for p in r.permutation(3)]
    y = q(pre + "transpose_y", [[1, H, W, C][p] for p in perm])
    m.op("TRANSPOSE", [x, i32(pre + "transpose_perm", perm)], [y], "TransposeOptions")
    outs.append(y)
    dims = [1, H, W, C]
    begin = [0] + [int(r.integers(-d, d)) for d in dims[1:]]
    end = [1] + [int(r.integers(-d, d + 1)) for d in dims[1:]]
    strides = [1] + [int(r.choice([1, 2, -1])) for _ in dims[1:]]
    bmask, emask = int(r.integers(0, 16)), int(r.integers(0, 16))
    shrink = 1 << int(r.integers(1, 4)) if r.integers(0, 2) else 0
    counts = []
    for d in range(4):  # the slice TFLite's rules give, to declare the output shape
        n, s = dims[d], strides[d]
        b = begin[d] + n if begin[d] < 0 else begin[d]
        b = min(max(b, 0), n) if s > 0 else min(max(b, -1), n - 1)
        if bmask >> d & 1:
            b = 0 if s > 0 else n - 1
        if shrink >> d & 1:
            b = min(max(begin[d] + n if begin[d] < 0 else begin[d], 0), n - 1)
            begin[d], strides[d] = b, 1
            counts.append(1)
            continue
        e = end[d] + n if end[d] < 0 else end[d]
        e = min(max(e, 0), n) if s > 0 else min(max(e, -1), n - 1)
        if emask >> d & 1:
            e = n if s > 0 else -1
        counts.append(max(0, -(-(e - b) // s)) if s > 0 else max(0, -(-(b - e) // -s)))
    if 0 in counts:  # an empty slice: take it whole instead
        begin, end, strides, bmask, emask, shrink, counts = [0] * 4, dims, [1] * 4, 0, 0, 0, dims
    y = q(pre + "slice_y", [c for d, c in enumerate(counts) if not shrink >> d & 1], sx, zx)
    m.op("STRIDED_SLICE", [x, i32(pre + "slice_b", begin), i32(pre + "slice_e", end), i32(pre + "slice_s", strides)], [y],
         "StridedSliceOptions", beginMask=bmask & ~shrink, endMask=emask & ~shrink, shrinkAxisMask=shrink)
    outs.append(y)
    y = q(pre + "concat_y", [1, H, W, C + C2], sx, zx)
    m.op("CONCATENATION", [x, x2], [y], "ConcatenationOptions", axis=int(r.choice([3, -1])))
    outs.append(y)
    y = q(pre + "logistic_y", [1, H, W, C], 1.0 / 256, -128)
    m.op("LOGISTIC", [x], [y])
    outs.append(y)
    y = q(pre + "tanh_y", [1, H, W, C], 1.0 / 128, 0)
    m.op("TANH", [x], [y])
    outs.append(y)
    y = q(pre + "hard_swish_y", [1, H, W, C], float(sx * r.uniform(0.5, 1.5)))
    m.op("HARD_SWISH", [x], [y])
    outs.append(y)
    y = q(pre + "requantize_y", [1, H, W, C])
    m.op("QUANTIZE", [x], [y])
    outs.append(y)
    f = m.tensor(pre + "dequantize_y", "FLOAT32", [1, H, W, C])
    m.op("DEQUANTIZE", [x], [f])
    y = q(pre + "quantize_y", [1, H, W, C], float(sx * r.uniform(0.3, 3)))
    m.op("QUANTIZE", [f], [y])
    outs += [f, y]
    pads = [[0, 0], [int(r.integers(0, 3)), int(r.integers(0, 3))], [0, 0], [int(r.integers(0, 3)), 0]]
    y = q(pre + "padv2_y", [1, H + sum(pads[1]), W, C + sum(pads[3])], sx, zx)
    value = m.tensor(pre + "padv2_v", "INT8", [], np.array(int(r.integers(-128, 128)), np.int8), [sx], [zx])
    m.op("PADV2", [x, m.tensor(pre + "padv2_p", "INT32", [4, 2], np.array(pads, np.int32)), value], [y],
         "PadV2Options")
    outs.append(y)
    return [x, x2], outs


def random_float_ops_model(seed: int) -> bytes:
    """x [1, H, W, C] float32 and z [1, 1, 1, C] into every float32 op: CONV_2D, DEPTHWISE_CONV_2D,
    AVERAGE_POOL_2D, MAX_POOL_2D, ADD and MUL (z broadcast), RESHAPE -> FULLY_CONNECTED -> SOFTMAX,
    MEAN, LOGISTIC, TANH, HARD_SWISH, PAD, TRANSPOSE, STRIDED_SLICE, CONCATENATION and QUANTIZE ->
    DEQUANTIZE, random shapes, strides, paddings and fused activations, each a graph output."""
    m = Model()
    ins, outs = _float_ops(m, np.random.default_rng(seed), "")
    return m.pack(ins, outs)


def _float_ops(m: Model, r: np.random.Generator, pre: str) -> tuple[list[int], list[int]]:
    """random_float_ops_model's ops on m, tensor names prefixed with ``pre``."""
    H, W, C = int(r.integers(3, 8)), int(r.integers(3, 8)), int(r.integers(1, 6))
    x = m.tensor(pre + "x", "FLOAT32", [1, H, W, C])
    z = m.tensor(pre + "z", "FLOAT32", [1, 1, 1, C])
    outs = []

    def f32(name: str, shape: list[int], data: np.ndarray | None = None) -> int:
        return m.tensor(name, "FLOAT32", shape, None if data is None else data.astype(np.float32))

    def act() -> int:
        return int(r.choice([0, 1, 2, 3]))  # NONE, RELU, RELU_N1_TO_1, RELU6

    for kind in ("conv", "depthwise"):
        kh, kw, st, pad = int(r.integers(1, 4)), int(r.integers(1, 4)), int(r.integers(1, 3)), int(r.integers(0, 2))
        dil = int(r.integers(1, 3)) if kind == "conv" else 1
        dm = int(r.integers(1, 3)) if kind == "depthwise" else 0
        M = C * dm if dm else int(r.integers(1, 7))
        oh, ow = _out_size(pad, H, kh, st, dil), _out_size(pad, W, kw, st, dil)
        if oh < 1 or ow < 1:
            kh = kw = dil = 1
            oh, ow = _out_size(pad, H, 1, st, 1), _out_size(pad, W, 1, st, 1)
        wshape = [1, kh, kw, M] if dm else [M, kh, kw, C]
        w = f32(pre + f"{kind}_w", wshape, r.normal(0, 0.5, wshape))
        # a conv may go without its bias; TFLM's float DEPTHWISE_CONV_2D crashes without one
        b = f32(pre + f"{kind}_b", [M], r.normal(0, 0.5, M)) if r.integers(0, 2) or dm else -1
        y = f32(pre + f"{kind}_y", [1, oh, ow, M])
        if dm:
            m.op("DEPTHWISE_CONV_2D", [x, w, b], [y], "DepthwiseConv2DOptions", padding=pad, strideW=st, strideH=st,
                 depthMultiplier=dm, fusedActivationFunction=act(), dilationWFactor=1, dilationHFactor=1)
        else:
            m.op("CONV_2D", [x, w, b], [y], "Conv2DOptions", padding=pad, strideW=st, strideH=st,
                 fusedActivationFunction=act(), dilationWFactor=dil, dilationHFactor=dil)
        outs.append(y)
    for kind in ("AVERAGE_POOL_2D", "MAX_POOL_2D"):
        kh, kw, st, pad = int(r.integers(1, 4)), int(r.integers(1, 4)), int(r.integers(1, 3)), int(r.integers(0, 2))
        oh, ow = _out_size(pad, H, kh, st, 1), _out_size(pad, W, kw, st, 1)
        if oh < 1 or ow < 1:
            kh = kw = 1
            oh, ow = _out_size(pad, H, 1, st, 1), _out_size(pad, W, 1, st, 1)
        y = f32(pre + kind.lower(), [1, oh, ow, C])
        m.op(kind, [x], [y], "Pool2DOptions", padding=pad, strideW=st, strideH=st, filterWidth=kw, filterHeight=kh,
             fusedActivationFunction=act())
        outs.append(y)
    for kind in ("ADD", "MUL"):
        y = f32(pre + kind.lower(), [1, H, W, C])
        m.op(kind, [x, z], [y], "AddOptions" if kind == "ADD" else "MulOptions", fusedActivationFunction=act())
        outs.append(y)
    K, N = H * W * C, int(r.integers(2, 10))
    flat = f32(pre + "flat", [1, K])
    m.op("RESHAPE", [x, m.tensor(pre + "flat_shape", "INT32", [2], np.array([1, K], np.int32))], [flat], "ReshapeOptions",
         newShape=np.array([1, K], np.int32))
    fc = f32(pre + "fc", [1, N])
    m.op("FULLY_CONNECTED", [flat, f32(pre + "fc_w", [N, K], r.normal(0, 0.3, (N, K))), f32(pre + "fc_b", [N], r.normal(0, 1, N))],
         [fc], "FullyConnectedOptions", fusedActivationFunction=act())
    sm = f32(pre + "softmax", [1, N])
    beta = float(r.choice([1.0, 0.5, 2.0]))
    m.op("SOFTMAX", [fc], [sm], "SoftmaxOptions", beta=beta)
    outs += [fc, sm]
    axes = sorted(int(a) for a in r.choice(4, size=int(r.integers(1, 4)), replace=False))
    keep = bool(r.integers(0, 2))
    y = f32(pre + "mean", [1 if d in axes else n for d, n in enumerate([1, H, W, C]) if keep or d not in axes])
    m.op("MEAN", [x, m.tensor(pre + "mean_axes", "INT32", [len(axes)], np.array(axes, np.int32))], [y], "ReducerOptions",
         keepDims=keep)
    outs.append(y)
    for kind in ("LOGISTIC", "TANH", "HARD_SWISH"):
        y = f32(pre + kind.lower(), [1, H, W, C])
        m.op(kind, [x], [y])
        outs.append(y)
    pads = [[0, 0]] + [[int(r.integers(0, 3)), int(r.integers(0, 3))] for _ in range(3)]
    y = f32(pre + "pad", [1, H + sum(pads[1]), W + sum(pads[2]), C + sum(pads[3])])
    m.op("PAD", [x, m.tensor(pre + "pad_p", "INT32", [4, 2], np.array(pads, np.int32))], [y], "PadOptions")
    outs.append(y)
    perm = [0] + [int(p) + 1 for p in r.permutation(3)]
    y = f32(pre + "transpose", [[1, H, W, C][p] for p in perm])
    m.op("TRANSPOSE", [x, m.tensor(pre + "perm", "INT32", [4], np.array(perm, np.int32))], [y], "TransposeOptions")
    outs.append(y)
    y = f32(pre + "slice", [1, (H - 1 + 1) // 2, W - 1, C])  # begin (0, 1, 1, 0), strides (1, 2, 1, 1), end masked
    m.op("STRIDED_SLICE", [x, m.tensor(pre + "sb", "INT32", [4], np.array([0, 1, 1, 0], np.int32)),
                           m.tensor(pre + "se", "INT32", [4], np.array([1, 0, 0, 0], np.int32)),
                           m.tensor(pre + "ss", "INT32", [4], np.array([1, 2, 1, 1], np.int32))], [y],
         "StridedSliceOptions", beginMask=9, endMask=14)
    outs.append(y)
    y = f32(pre + "concat", [1, H, W, 2 * C])
    m.op("CONCATENATION", [x, outs[4]], [y], "ConcatenationOptions", axis=3)  # x and ADD's output
    outs.append(y)
    q = m.tensor(pre + "quantize", "INT8", [1, H, W, C], scale=[float(r.uniform(0.01, 0.05))], zp=[int(r.integers(-20, 20))])
    m.op("QUANTIZE", [x], [q])
    y = f32(pre + "dequantize", [1, H, W, C])
    m.op("DEQUANTIZE", [q], [y])
    outs += [q, y]
    wide = f32(pre + "wide", [1, H, W, C])  # x (uniform in [-1, 1]) times up to 30: expf and tanhf far from 0
    m.op("MUL", [x, f32(pre + "wide_c", [C], r.uniform(-30, 30, C))], [wide], "MulOptions",
         fusedActivationFunction=0)
    for kind in ("LOGISTIC", "TANH", "SOFTMAX"):
        y = f32(pre + f"wide_{kind.lower()}", [1, H, W, C])
        m.op(kind, [wide], [y], *(("SoftmaxOptions",) if kind == "SOFTMAX" else ()),
             **({"beta": 1.0} if kind == "SOFTMAX" else {}))
        outs.append(y)
    return [x, z], outs


def patch_stage_model(seed: int) -> bytes:
    """A high-resolution int8 stage and a small head, for patches on arena's runtime: x [1, 20, 18, 3] ->
    CONV_2D 3x3 SAME -> DEPTHWISE_CONV_2D 3x3 stride 2 SAME (asymmetric pads) -> LOGISTIC and, beside it,
    AVERAGE_POOL_2D 3x3 SAME (its count excludes the image border's pad) -> ADD of the two -> MAX_POOL_2D
    2x2 stride 2 -> CONV_2D 1x1 ('stage_end', the stage output) -> RESHAPE ('flat', an output) ->
    FULLY_CONNECTED ('y'), random quantization; the untiled peak is the first two images, which a tiled
    stage never holds whole."""
    r = np.random.default_rng(seed)
    m = Model()

    def q() -> dict[str, list[float] | list[int]]:
        return {"scale": [float(r.uniform(0.02, 0.1))], "zp": [int(r.integers(-40, 40))]}

    def conv(name: str, x: int, cin: int, cout: int, k: int, st: int, hw: tuple[int, int], depthwise: bool) -> int:
        sw = list(r.uniform(0.002, 0.02, cout))
        wshape = [1, k, k, cout] if depthwise else [cout, k, k, cin]
        w = m.tensor(f"{name}_w", "INT8", wshape, r.integers(-127, 128, wshape).astype(np.int8), sw, [0] * cout,
                     3 if depthwise else 0)
        sx = float(m.sg.tensors[x].quantization.scale[0])
        b = m.tensor(f"{name}_b", "INT32", [cout], r.integers(-2000, 2000, cout).astype(np.int32),
                     [np.float32(sx) * np.float32(s) for s in sw], [0] * cout)
        taps = k * k * (1 if depthwise else cin)
        y = m.tensor(name, "INT8", [1, *hw, cout], scale=[float(sx * np.mean(sw) * 3600 * np.sqrt(taps) / 40)],
                     zp=[int(r.integers(-40, 40))])
        if depthwise:
            m.op("DEPTHWISE_CONV_2D", [x, w, b], [y], "DepthwiseConv2DOptions", padding=0, strideW=st, strideH=st,
                 depthMultiplier=1, fusedActivationFunction=1, dilationWFactor=1, dilationHFactor=1)
        else:
            m.op("CONV_2D", [x, w, b], [y], "Conv2DOptions", padding=0, strideW=st, strideH=st,
                 fusedActivationFunction=int(r.choice([1, 3])), dilationWFactor=1, dilationHFactor=1)
        return y

    x = m.tensor("x", "INT8", [1, 20, 18, 3], **q())
    c1 = conv("conv1", x, 3, 8, 3, 1, (20, 18), False)
    dw = conv("dw", c1, 8, 8, 3, 2, (10, 9), True)
    sig = m.tensor("sig", "INT8", [1, 10, 9, 8], scale=[1.0 / 256], zp=[-128])
    m.op("LOGISTIC", [dw], [sig])
    avg = m.tensor("avg", "INT8", [1, 10, 9, 8], **m_q(m, dw))  # TFLM pools keep the quantization
    m.op("AVERAGE_POOL_2D", [dw], [avg], "Pool2DOptions", padding=0, strideW=1, strideH=1, filterWidth=3,
         filterHeight=3, fusedActivationFunction=0)
    add = m.tensor("add", "INT8", [1, 10, 9, 8], **q())
    m.op("ADD", [sig, avg], [add], "AddOptions", fusedActivationFunction=0)
    mp = m.tensor("maxpool", "INT8", [1, 5, 4, 8], **m_q(m, add))
    m.op("MAX_POOL_2D", [add], [mp], "Pool2DOptions", padding=1, strideW=2, strideH=2, filterWidth=2,
         filterHeight=2, fusedActivationFunction=0)
    end = conv("stage_end", mp, 8, 4, 1, 1, (5, 4), False)
    K = 5 * 4 * 4
    flat = m.tensor("flat", "INT8", [1, K], **m_q(m, end))
    shape = m.tensor("flat_shape", "INT32", [2], np.array([1, K], np.int32))
    m.op("RESHAPE", [end, shape], [flat], "ReshapeOptions", newShape=np.array([1, K], np.int32))
    sf = float(m.sg.tensors[flat].quantization.scale[0])
    sw1 = float(r.uniform(0.002, 0.02))
    fw = m.tensor("fc_w", "INT8", [6, K], r.integers(-127, 128, (6, K)).astype(np.int8), [sw1], [0])
    fb_ = m.tensor("fc_b", "INT32", [6], r.integers(-2000, 2000, 6).astype(np.int32), [np.float32(sf) * np.float32(sw1)])
    y = m.tensor("y", "INT8", [1, 6], scale=[float(sf * sw1 * 3600 * np.sqrt(K) / 40)], zp=[int(r.integers(-20, 20))])
    m.op("FULLY_CONNECTED", [flat, fw, fb_], [y], "FullyConnectedOptions", fusedActivationFunction=0)
    return m.pack([x], [flat, y])


def m_q(m: Model, t: int) -> dict[str, list[float] | list[int]]:
    """Tensor t's quantization (an op that moves int8 values keeps it)."""
    qp = m.sg.tensors[t].quantization
    return {"scale": [float(qp.scale[0])], "zp": [int(qp.zeroPoint[0])]}
