"""The int8 fast paths (arena_tool/runtime/*_int8.c) give exactly onnxruntime's codes.

Random QLinearConv shapes (1x1, 3x3, KWS's 10x4, strided, padded, dilated, grouped, depthwise
in place and not, 1-D; depthwise Kx1 down 1-wide planes as a DS-TCN has them, 1xK, 5x5, 7x7,
channel multipliers), zero points, per-channel scales, biases and absorbed-Relu ranges, uint8
activations (onnxruntime's U8S8) and weight zero points other than 0 (per channel too), and
QGemm shapes (uint8 A, B's zero points), int8/uint8 MaxPool (padded, ceil mode, a plane too
wide for the fast path), same-shape QLinearAdd/QLinearMul, int8 and uint8 (and QLinearAdd large
enough for the integer tables cores without an FPU use), QLinearGlobalAveragePool (int8/uint8,
planes of 1 and past multiples of 8), Transposes (a channel shuffle's, merged dims), QLinearConcat
(tables and copies) and per-tensor
QuantizeLinear/DequantizeLinear, each with K not a multiple of 4 and odd pixel and channel
counts somewhere (the tails of the 2 x 2 blocks), plus the case the fast paths hand back to the
reference loop (a column longer than the stack buffer). All of them run in one host firmware
(the portable C path, AddressSanitizer + UBSan), under QEMU on mps2_an386 (Cortex-M4) and
mps2_an500 (Cortex-M7), the DSP path, on mps2_an385 (Cortex-M3: no DSP extension, no FPU), the
portable path on a target, and on mps3_an547 (Cortex-M55), the Helium path (K past multiples of
16, pixel and channel counts not multiples of 4): every output equal to onnxruntime's.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from conftest import require_tool
from onnx import TensorProto, helper, numpy_helper

import fwbuild
from arena_tool.core.problem import ModelOptions
from arena_tool.plan import planfile
from arena_tool.run import qemu, verify
from arena_tool.target import boards

I8 = np.int8


class _G:
    """A one-op graph builder with seeded random constants."""

    def __init__(self, seed: int) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[TensorProto] = []
        self.rng = np.random.default_rng(seed)

    def const(self, name: str, value: Any, dtype: Any) -> str:
        self.inits.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
        return name

    def model(self, x_shape: list[int], y_shape: list[int], x_type: int = TensorProto.INT8,
              y_type: int = TensorProto.INT8) -> onnx.ModelProto:
        graph = helper.make_graph(self.nodes, "g", [helper.make_tensor_value_info("x", x_type, x_shape)],
                                  [helper.make_tensor_value_info("y", y_type, y_shape)], self.inits)
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("com.microsoft", 1)])


def _out(n: int, k: int, s: int, d: int, p0: int, p1: int) -> int:
    return (n + p0 + p1 - ((k - 1) * d + 1)) // s + 1


def conv(seed: int, cin: int, cout: int, hw: tuple[int, ...], k: tuple[int, ...], stride: int = 1,
         pads: tuple[int, ...] | None = None, dil: int = 1, group: int = 1, x_zp: int = 3, y_zp: int = -5,
         w_zp: int = 0, per_channel: bool = True, bias: bool = True, chain: bool = False,
         u8: bool = False, w_zps: bool = False) -> onnx.ModelProto:
    """One QLinearConv (rank 4, or rank 3 when hw has one dim); chain: a 1x1 conv first, so the
    conv's input is an arena tensor that dies there (a depthwise conv then runs in place).
    u8: uint8 activations (onnxruntime's U8S8; the zero points x_zp + 128, y_zp + 128);
    w_zp: the weight zero point; w_zps: a random one per channel instead."""
    g = _G(seed)
    r = len(hw)
    act, off = (np.uint8, 128) if u8 else (I8, 0)
    x_zp, y_zp = x_zp + off, y_zp + off
    pads = pads if pads is not None else tuple([k[i] // 2 for i in range(r)] * 2)
    x_shape = [1, cin, *hw]
    x = "x"
    if chain:
        g.nodes.append(helper.make_node("QLinearConv", [
            "x", g.const("x_s", 0.05, np.float32), g.const("x_z", x_zp, act),
            g.const("w0", g.rng.integers(-90, 90, [cin, cin, *([1] * r)]), I8), g.const("w0_s", 0.004, np.float32),
            g.const("w0_z", 0, I8), g.const("h_s", 0.04, np.float32), g.const("h_z", x_zp, act)], ["h"]))
        x = "h"
    w = g.rng.integers(-127 + max(w_zp, 0), 128 + min(w_zp, 0), [cout, cin // group, *k])
    w_s = (0.001 + 0.003 * g.rng.random(cout)).astype(np.float32) if per_channel else np.float32(0.002)
    w_z = g.rng.integers(-20, 21, cout) if w_zps else np.full(cout, w_zp) if per_channel else np.asarray(w_zp)
    ins = [x, g.const("xs", 0.04 if chain else 0.05, np.float32), g.const("xz", x_zp, act), g.const("w", w, I8),
           g.const("w_s", w_s, np.float32), g.const("w_z", w_z, I8), g.const("y_s", 0.2, np.float32),
           g.const("y_z", y_zp, act)]
    if bias:
        ins.append(g.const("b", g.rng.integers(-4000, 4000, cout), np.int32))
    out_hw = [_out(hw[i], k[i], stride, dil, pads[i], pads[i + r]) for i in range(r)]
    g.nodes.append(helper.make_node("QLinearConv", ins, ["y"], strides=[stride] * r, pads=list(pads),
                                    dilations=[dil] * r, group=group, kernel_shape=list(k)))
    u8_type = TensorProto.UINT8 if u8 else TensorProto.INT8
    return g.model(x_shape, [1, cout, *out_hw], u8_type, u8_type)


def qgemm(seed: int, M: int, K: int, N: int, trans_b: int = 1, b_zp: int = 0, bias: bool = True,
          alpha: float = 1.0, per_column: bool = True, u8: bool = False, b_zps: bool = False) -> onnx.ModelProto:
    """One QGemm; u8: uint8 A and Y; b_zps: a different random zero point per column of B."""
    g = _G(seed)
    act, off = (np.uint8, 128) if u8 else (I8, 0)
    b = g.rng.integers(-100, 100, [N, K] if trans_b else [K, N])
    b_s = (0.001 + 0.003 * g.rng.random(N)).astype(np.float32) if per_column else np.float32(0.002)
    b_z = g.rng.integers(-27, 28, N) if b_zps else np.full(N, b_zp) if per_column else np.int8(b_zp)
    ins = ["x", g.const("a_s", 0.05, np.float32), g.const("a_z", -7 + off, act), g.const("b", b, I8),
           g.const("b_s", b_s, np.float32), g.const("b_z", b_z, I8),
           g.const("c", g.rng.integers(-4000, 4000, N), np.int32) if bias else "",
           g.const("y_s", 0.3, np.float32), g.const("y_z", 4 + off, act)]
    g.nodes.append(helper.make_node("QGemm", ins, ["y"], domain="com.microsoft", transA=0, transB=trans_b,
                                    alpha=alpha))
    u8_type = TensorProto.UINT8 if u8 else TensorProto.INT8
    return g.model([M, K], [M, N], u8_type, u8_type)


def binary(seed: int, op: str, shape: list[int], b_shape: list[int] | None = None) -> onnx.ModelProto:
    """QLinearAdd/QLinearMul of x and an int8 constant (same shape: the fast path; else the
    broadcasting reference), then QLinearAdd of that with x again (x dies there: in place)."""
    g = _G(seed)
    b = g.rng.integers(-128, 128, b_shape or shape)
    g.nodes.append(helper.make_node(op, ["x", g.const("x_s", 0.05, np.float32), g.const("x_z", 6, I8),
                                         g.const("b", b, I8), g.const("b_s", 0.03, np.float32),
                                         g.const("b_z", -9, I8), g.const("t_s", 0.07 if op == "QLinearAdd" else 0.4,
                                                                            np.float32),
                                         g.const("t_z", 3, I8)], ["t"], domain="com.microsoft"))
    g.nodes.append(helper.make_node("QLinearAdd", ["t", "t_s", "t_z", "x", "x_s", "x_z", g.const("y_s", 0.09, np.float32),
                                                   g.const("y_z", -2, I8)], ["y"], domain="com.microsoft"))
    return g.model(shape, shape)


def maxpool(seed: int, shape: list[int], k: tuple[int, int], stride: tuple[int, int],
            pads: tuple[int, int, int, int] = (0, 0, 0, 0), ceil: int = 0, u8: bool = False) -> onnx.ModelProto:
    """One MaxPool over an int8 (u8: uint8) input: arena's int8 MaxPool (max_pool_int8.c)."""
    g = _G(seed)
    g.nodes.append(helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=list(k), strides=list(stride),
                                    pads=list(pads), ceil_mode=ceil))
    h, w = shape[2:]
    oh = (h + pads[0] + pads[2] - k[0] + (stride[0] - 1 if ceil else 0)) // stride[0] + 1
    ow = (w + pads[1] + pads[3] - k[1] + (stride[1] - 1 if ceil else 0)) // stride[1] + 1
    t = TensorProto.UINT8 if u8 else TensorProto.INT8
    return g.model(shape, [*shape[:2], oh, ow], t, t)


def quantize(seed: int, shape: list[int], scale: float, zp: int) -> onnx.ModelProto:
    """float32 -> int8 -> float32: QuantizeLinear, QLinearConv 1x1, DequantizeLinear (per tensor)."""
    g = _G(seed)
    c = shape[1]
    g.nodes.append(helper.make_node("QuantizeLinear", ["x", g.const("q_s", scale, np.float32),
                                                      g.const("q_z", zp, I8)], ["q"]))
    g.nodes.append(helper.make_node("QLinearConv", ["q", "q_s", "q_z", g.const("w", g.rng.integers(-127, 128, [c, c, 1, 1]), I8),
                                                    g.const("w_s", 0.01, np.float32), g.const("w_z", 0, I8),
                                                    g.const("h_s", 0.1, np.float32), g.const("h_z", -1, I8)], ["h"]))
    g.nodes.append(helper.make_node("DequantizeLinear", ["h", "h_s", "h_z"], ["y"]))
    return g.model(shape, shape, TensorProto.FLOAT, TensorProto.FLOAT)


def quantize_u8(seed: int, shape: list[int], scale: float, zp: int) -> onnx.ModelProto:
    """float32 -> uint8 -> float32: QuantizeLinear (USAT on DSP cores), DequantizeLinear."""
    g = _G(seed)
    g.nodes.append(helper.make_node("QuantizeLinear", ["x", g.const("q_s", scale, np.float32),
                                                      g.const("q_z", zp, np.uint8)], ["q"]))
    g.nodes.append(helper.make_node("DequantizeLinear", ["q", "q_s", "q_z"], ["y"]))
    return g.model(shape, shape, TensorProto.FLOAT, TensorProto.FLOAT)


def global_pool(seed: int, shape: list[int], u8: bool = False, x_zp: int = 5, y_zp: int = -3,
                y_s: float = 0.011) -> onnx.ModelProto:
    """One QLinearGlobalAveragePool (u8: uint8, zero points + 128): plane sums four bytes a step."""
    g = _G(seed)
    act, off = (np.uint8, 128) if u8 else (I8, 0)
    g.nodes.append(helper.make_node("QLinearGlobalAveragePool", [
        "x", g.const("x_s", 0.05, np.float32), g.const("x_z", x_zp + off, act), g.const("y_s", y_s, np.float32),
        g.const("y_z", y_zp + off, act)], ["y"], domain="com.microsoft", channels_last=0))
    t = TensorProto.UINT8 if u8 else TensorProto.INT8
    return g.model(shape, [*shape[:2], *([1] * (len(shape) - 2))], t, t)


def binary_u8(seed: int, op: str, shape: list[int], b_shape: list[int] | None = None) -> onnx.ModelProto:
    """binary()'s QLinearAdd/QLinearMul of x and a constant, then + x, all uint8."""
    g = _G(seed)
    u8 = np.uint8
    b = g.rng.integers(0, 256, b_shape or shape)
    g.nodes.append(helper.make_node(op, ["x", g.const("x_s", 0.05, np.float32), g.const("x_z", 131, u8),
                                         g.const("b", b, u8), g.const("b_s", 0.03, np.float32),
                                         g.const("b_z", 120, u8), g.const("t_s", 0.07 if op == "QLinearAdd" else 0.4,
                                                                          np.float32),
                                         g.const("t_z", 127, u8)], ["t"], domain="com.microsoft"))
    g.nodes.append(helper.make_node("QLinearAdd", ["t", "t_s", "t_z", "x", "x_s", "x_z", g.const("y_s", 0.09, np.float32),
                                                   g.const("y_z", 140, u8)], ["y"], domain="com.microsoft"))
    return g.model(shape, shape, TensorProto.UINT8, TensorProto.UINT8)


def shuffle(seed: int, c: int, hw: tuple[int, int], u8: bool = False, groups: int = 2) -> onnx.ModelProto:
    """ShuffleNet's channel shuffle: Reshape to [1, g, C/g, H, W], Transpose (0, 2, 1, 3, 4), Reshape back."""
    g = _G(seed)
    shape = [1, c, *hw]
    g.nodes.append(helper.make_node("Reshape", ["x", g.const("s0", [1, groups, c // groups, *hw], np.int64)], ["r"]))
    g.nodes.append(helper.make_node("Transpose", ["r"], ["t"], perm=[0, 2, 1, 3, 4]))
    g.nodes.append(helper.make_node("Reshape", ["t", g.const("s1", shape, np.int64)], ["y"]))
    t = TensorProto.UINT8 if u8 else TensorProto.INT8
    return g.model(shape, shape, t, t)


def concat(seed: int, shape: list[int], c_shape: list[int], axis: int, u8: bool = False,
           same: bool = False) -> onnx.ModelProto:
    """QLinearConcat of x and a constant along axis, each requantized through its table (same: x
    already at the output's scale and zero point, copied)."""
    g = _G(seed)
    act, off = (np.uint8, 128) if u8 else (I8, 0)
    lo, hi = (0, 256) if u8 else (-128, 128)
    y_shape = [*shape[:axis], shape[axis] + c_shape[axis], *shape[axis + 1:]]
    ys, yz = (0.05, 3) if same else (0.07, -4)
    g.nodes.append(helper.make_node("QLinearConcat", [
        g.const("y_s", ys, np.float32), g.const("y_z", yz + off, act),
        "x", g.const("x_s", 0.05, np.float32), g.const("x_z", 3 + off, act),
        g.const("c", g.rng.integers(lo, hi, c_shape), act), g.const("c_s", 0.11, np.float32),
        g.const("c_z", -20 + off, act)], ["y"], domain="com.microsoft", axis=axis))
    t = TensorProto.UINT8 if u8 else TensorProto.INT8
    return g.model(shape, y_shape, t, t)


def fire(seed: int, cin: int, ca: int, cb: int, hw: tuple[int, int], same: bool = False, u8: bool = False,
         const: bool = False) -> onnx.ModelProto:
    """SqueezeNet's fire module: a 1x1 and a 3x3 QLinearConv of x, QLinearConcat of the two (and,
    const: a constant between them) along the channels: each conv's output written in place at
    its position of y (a concat view), a at y's scale (same: b too), b requantized else."""
    g = _G(seed)
    act, off = (np.uint8, 128) if u8 else (I8, 0)
    ys, yz = 0.09, -128 + off
    parts = []
    for name, cout, k, scale, zp in (("a", ca, 1, ys, yz), ("b", cb, 3, *((ys, yz) if same else (0.053, -100 + off)))):
        w = g.rng.integers(-127, 128, [cout, cin, k, k])
        g.nodes.append(helper.make_node("QLinearConv", [
            "x", g.const(f"{name}_xs", 0.05, np.float32), g.const(f"{name}_xz", 5 + off, act),
            g.const(f"{name}_w", w, I8), g.const(f"{name}_ws", (0.001 + 0.002 * g.rng.random(cout)).astype(np.float32), np.float32),
            g.const(f"{name}_wz", np.zeros(cout), I8), g.const(f"{name}_s", scale, np.float32),
            g.const(f"{name}_z", zp, act), g.const(f"{name}_b", g.rng.integers(-3000, 3000, cout), np.int32)],
            [name], pads=[k // 2] * 4, kernel_shape=[k, k]))
        parts.append((name, f"{name}_s", f"{name}_z"))
    if const:
        c = g.const("c", g.rng.integers(-128 + off, 128 + off, [1, 2, *hw]), act)
        parts.insert(1, (c, g.const("c_s", 0.03, np.float32), g.const("c_z", 7 + off, act)))
    g.nodes.append(helper.make_node("QLinearConcat", [g.const("y_s", ys, np.float32), g.const("y_z", yz, act),
                                                      *[n for p in parts for n in p]], ["y"],
                                    domain="com.microsoft", axis=1))
    t = TensorProto.UINT8 if u8 else TensorProto.INT8
    return g.model([1, cin, *hw], [1, ca + cb + (2 if const else 0), *hw], t, t)


def transpose(seed: int, shape: list[int], perm: list[int]) -> onnx.ModelProto:
    """One Transpose of an int8 tensor: dims of size 1 dropped, neighbours merged, rows strided or not."""
    g = _G(seed)
    g.nodes.append(helper.make_node("Transpose", ["x"], ["y"], perm=perm))
    return g.model(shape, [shape[p] for p in perm])


CASES: dict[str, Any] = {
    "pw_k8": lambda: conv(1, 8, 16, (7, 9), (1, 1)),
    "pw_k13_odd": lambda: conv(2, 13, 7, (5, 5), (1, 1), x_zp=-128, y_zp=127),
    "pw_k64": lambda: conv(3, 64, 10, (3, 3), (1, 1), per_channel=False),
    "pw_stride2": lambda: conv(4, 12, 6, (7, 8), (1, 1), stride=2, pads=(0, 0, 0, 0)),
    "pw_padded": lambda: conv(5, 6, 5, (4, 4), (1, 1), pads=(1, 0, 0, 1)),
    "c3_s1": lambda: conv(6, 5, 9, (8, 7), (3, 3)),
    "c3_s2_nobias": lambda: conv(7, 16, 8, (9, 9), (3, 3), stride=2, bias=False),
    "c3_dilated": lambda: conv(8, 4, 6, (9, 10), (3, 3), dil=2, pads=(2, 1, 2, 2)),
    "c3_grouped": lambda: conv(9, 6, 4, (6, 6), (3, 3), group=2, stride=2, pads=(1, 1, 0, 1)),
    "kws_first": lambda: conv(10, 1, 12, (20, 10), (10, 4), stride=2, pads=(4, 1, 5, 1), x_zp=0),
    "c5_big_zp": lambda: conv(11, 3, 5, (11, 11), (5, 5), x_zp=100, y_zp=-100),
    "conv1d": lambda: conv(12, 7, 6, (19,), (3,), stride=2, pads=(1, 1)),
    "dw3_s1": lambda: conv(13, 6, 6, (9, 11), (3, 3), group=6),
    "dw3_s1_in_place": lambda: conv(14, 5, 5, (8, 8), (3, 3), group=5, chain=True),
    "dw3_s2_chained": lambda: conv(15, 4, 4, (9, 8), (3, 3), group=4, stride=2, pads=(0, 0, 1, 1), chain=True),
    "dw3_tiny": lambda: conv(16, 3, 3, (2, 3), (3, 3), group=3),
    "dw5_dilated": lambda: conv(17, 4, 4, (12, 12), (5, 5), group=4, dil=2, pads=(4, 4, 4, 4)),
    "dw3_nopad": lambda: conv(18, 3, 3, (6, 9), (3, 3), group=3, pads=(0, 0, 0, 0), x_zp=-60),
    "dw_1d": lambda: conv(19, 5, 5, (17,), (3,), group=5),
    "c3_w_zp": lambda: conv(20, 4, 6, (5, 5), (3, 3), w_zp=3, per_channel=False),
    "ref_long_column": lambda: conv(21, 120, 3, (3, 3), (3, 3)),
    "gemm_m1": lambda: qgemm(22, 1, 13, 7),
    "gemm_m3": lambda: qgemm(23, 3, 64, 10, alpha=0.5),
    "gemm_nobias": lambda: qgemm(24, 2, 30, 3, bias=False),
    "gemm_ref_trans0": lambda: qgemm(25, 2, 9, 5, trans_b=0),
    "gemm_b_zp": lambda: qgemm(26, 1, 12, 4, b_zp=2),
    "gemm_n4_tail3": lambda: qgemm(27, 1, 21, 11),
    "gemm_per_tensor_tail1": lambda: qgemm(33, 2, 8, 9, per_column=False),
    "gemm_nobias_n8": lambda: qgemm(34, 1, 40, 8, bias=False),
    "add_same_shape": lambda: binary(28, "QLinearAdd", [1, 3, 5, 7]),
    "mul_same_shape": lambda: binary(29, "QLinearMul", [2, 9]),
    "add_ref_broadcast": lambda: binary(30, "QLinearAdd", [1, 4, 3, 3], [1, 4, 1, 1]),
    "quantize_dequantize": lambda: quantize(31, [1, 5, 4, 6], 0.02, -3),
    "quantize_saturates": lambda: quantize(32, [1, 3, 7, 2], 0.0005, 10),
    # uint8 activations (U8S8) and weight zero points other than 0, on every path
    "u8_pw_k13": lambda: conv(35, 13, 7, (5, 6), (1, 1), x_zp=-128, y_zp=127, u8=True),
    "u8_c3_s2_padded": lambda: conv(36, 6, 9, (9, 8), (3, 3), stride=2, x_zp=90, y_zp=-100, u8=True),
    "u8_kws_first": lambda: conv(37, 1, 12, (20, 10), (10, 4), stride=2, pads=(4, 1, 5, 1), u8=True),
    "u8_dw3_s1": lambda: conv(38, 6, 6, (9, 11), (3, 3), group=6, x_zp=-70, u8=True),
    "u8_dw3_in_place": lambda: conv(39, 5, 5, (8, 8), (3, 3), group=5, chain=True, u8=True),
    "u8_dw5_s2": lambda: conv(40, 4, 4, (11, 12), (5, 5), group=4, stride=2, u8=True),
    "wzp_pw_k9": lambda: conv(41, 9, 10, (4, 5), (1, 1), w_zps=True),
    "wzp_c3_s1_padded": lambda: conv(42, 7, 5, (7, 6), (3, 3), w_zps=True, x_zp=-40),
    "wzp_c3_chunks": lambda: conv(43, 8, 3, (10, 10), (3, 3), w_zps=True, u8=True),
    "wzp_dw3_s2": lambda: conv(44, 6, 6, (9, 9), (3, 3), group=6, stride=2, w_zps=True),
    "wzp_dw5_dilated": lambda: conv(45, 4, 4, (12, 12), (5, 5), group=4, dil=2, pads=(4, 4, 4, 4), w_zps=True),
    "u8_wzp_c3": lambda: conv(46, 5, 6, (6, 7), (3, 3), w_zps=True, u8=True, x_zp=60),
    "u8_wzp_dw3_in_place": lambda: conv(47, 5, 5, (7, 8), (3, 3), group=5, chain=True, u8=True, w_zps=True),
    "u8_wzp_dw_1d": lambda: conv(48, 6, 6, (23,), (5,), group=6, u8=True, w_zps=True),
    # depthwise shapes: Kx1 down 1-wide planes (a DS-TCN), 1xK, 5x5, strides, dilation, multipliers
    "dw_k3x1_wide1": lambda: conv(49, 7, 7, (30, 1), (3, 1), group=7, pads=(0, 0, 0, 0)),
    "dw_k5x1_wide1_padded": lambda: conv(50, 5, 5, (28, 1), (5, 1), group=5, pads=(2, 0, 2, 0)),
    "dw_k10x1_wide1": lambda: conv(51, 6, 6, (24, 1), (10, 1), group=6, pads=(0, 0, 0, 0)),
    "dw_k15x1_wide1_u8": lambda: conv(52, 6, 6, (15, 1), (15, 1), group=6, pads=(0, 0, 0, 0), u8=True),
    "dw_k7x1_wide1_s2_d2": lambda: conv(53, 4, 4, (40, 1), (7, 1), group=4, stride=2, dil=2, pads=(3, 0, 6, 0)),
    "dw_k5x1_wide1_in_place": lambda: conv(54, 5, 5, (26, 1), (5, 1), group=5, pads=(2, 0, 2, 0), chain=True),
    "dw_k1x7_high1": lambda: conv(55, 5, 5, (1, 33), (1, 7), group=5, pads=(0, 3, 0, 3)),
    "dw5_s1": lambda: conv(56, 6, 6, (13, 14), (5, 5), group=6),
    "dw5_s2_wzp": lambda: conv(57, 5, 5, (15, 12), (5, 5), group=5, stride=2, w_zps=True),
    "dw7_s1": lambda: conv(58, 3, 3, (11, 10), (7, 7), group=3),
    "dw_mult2": lambda: conv(59, 4, 8, (7, 9), (3, 3), group=4),
    "dw_mult3_k5x1_wide1_u8": lambda: conv(60, 3, 9, (20, 1), (5, 1), group=3, pads=(0, 0, 0, 0), u8=True),
    "gemm_u8": lambda: qgemm(61, 2, 30, 9, u8=True),
    "gemm_u8_b_zps": lambda: qgemm(62, 1, 37, 11, u8=True, b_zps=True),
    "gemm_b_zps_per_tensor": lambda: qgemm(63, 3, 16, 6, b_zp=-5, per_column=False),
    "gemm_b_zps_n4": lambda: qgemm(64, 1, 64, 12, b_zps=True),
    "maxpool_3x3_s2": lambda: maxpool(65, [1, 5, 13, 14], (3, 3), (2, 2)),
    "maxpool_3x3_s2_padded_u8": lambda: maxpool(66, [1, 4, 11, 10], (3, 3), (2, 2), (1, 1, 1, 1), u8=True),
    "maxpool_2x2_ceil": lambda: maxpool(67, [2, 3, 9, 9], (2, 2), (2, 2), ceil=1),
    "maxpool_5x1_wide1": lambda: maxpool(68, [1, 6, 20, 1], (5, 1), (2, 1), (2, 0, 2, 0)),
    "maxpool_wide_generic": lambda: maxpool(69, [1, 2, 3, 600], (1, 3), (1, 2)),
    "dw5_s1_in_place": lambda: conv(70, 6, 6, (9, 10), (5, 5), group=6, chain=True),
    "quantize_u8_saturates": lambda: quantize_u8(72, [1, 3, 7, 5], 0.0041, 120),
    "dw3_s2_blocks": lambda: conv(73, 3, 3, (40, 47), (3, 3), group=3, stride=2),
    "dw5_blocks_u8_wzp": lambda: conv(71, 3, 3, (36, 44), (5, 5), group=3, u8=True, w_zps=True),  # a band per block
    # 1024 elements or more: without an FPU, QLinearAdd through its integer tables (add_mul_int8.c's add_i)
    "add_same_shape_tables": lambda: binary(74, "QLinearAdd", [1, 8, 16, 16]),
    "add_channel_tables": lambda: binary(75, "QLinearAdd", [1, 4, 16, 20], [1, 4, 1, 1]),
    # Helium's tails: K past a multiple of 16 (the tail-predicated loops), pixel and output counts
    # not multiples of 4 (the last step of 4 pixels or outputs), strided gathers
    "pw_k37_tails": lambda: conv(174, 37, 5, (5, 7), (1, 1)),
    "pw_k200_chunks": lambda: conv(175, 200, 3, (3, 3), (1, 1), x_zp=-128),
    "c3_k45_s2": lambda: conv(76, 5, 7, (9, 7), (3, 3), stride=2),
    "u8_wzp_pw_k19": lambda: conv(77, 19, 6, (5, 5), (1, 1), w_zps=True, u8=True),
    "dw3_s2_w13": lambda: conv(78, 5, 5, (13, 13), (3, 3), group=5, stride=2),
    "dw3_s1_w18_wzp": lambda: conv(79, 7, 7, (5, 18), (3, 3), group=7, w_zps=True, x_zp=-128),
    "c3_k405_short_chunks": lambda: conv(82, 45, 4, (4, 5), (3, 3)),  # a few pixels a chunk: 2 x 2 blocks
    # weight zero points: column sums over chunks (Helium: arena_mve_gemm_row_wz, a last step of 4 partial)
    "u8_wzp_pw_k21_chunks": lambda: conv(102, 21, 9, (13, 12), (1, 1), w_zps=True, u8=True),
    "wzp_c3_k405_short_chunks": lambda: conv(103, 45, 5, (4, 5), (3, 3), w_zps=True),
    # Helium's 3x3 depthwise planes: uint8 flipped as read, taps of w - wz past int8 split in two
    "u8_dw3_s2_w13": lambda: conv(104, 5, 5, (13, 13), (3, 3), group=5, stride=2, u8=True, x_zp=-90),
    "u8_wzp_dw3_s1_direct": lambda: conv(105, 3, 3, (36, 40), (3, 3), group=3, u8=True, w_zps=True),
    # Helium: a product with a per-channel operand (binary_mve's planes), a 3x3 depthwise plane too
    # wide for dw_mve3's byte offsets (dw_mve_block's lanes)
    "mul_channel": lambda: binary(84, "QLinearMul", [1, 5, 6, 7], [1, 5, 1, 1]),
    "dw3_s1_w90": lambda: conv(83, 2, 2, (5, 90), (3, 3), group=2),
    # depthwise rows (dw_rows): every last-group width 1-4, one output a channel, multipliers, uint8 read
    # as stored (UXTAB16), weight zero points; Kx1 and dilated kernels on 2-D planes, uint8 padding
    "dw_k15x1_one_wzp": lambda: conv(85, 9, 9, (15, 1), (15, 1), group=9, pads=(0, 0, 0, 0), w_zps=True),
    "dw_k4x1_wide1_u8_wzp": lambda: conv(86, 7, 7, (19, 1), (4, 1), group=7, pads=(0, 0, 0, 0), u8=True, w_zps=True),
    "dw_k9x1_wide1_mult2_s2": lambda: conv(87, 5, 10, (31, 1), (9, 1), group=5, stride=2, pads=(0, 0, 0, 0)),
    "dw_k6x1_one_u8_mult3": lambda: conv(88, 3, 9, (6, 1), (6, 1), group=3, pads=(0, 0, 0, 0), u8=True, x_zp=-128),
    "dw_k1x5_high1_u8_padded": lambda: conv(89, 6, 6, (1, 21), (1, 5), group=6, pads=(0, 2, 0, 2), u8=True),
    "dw_k5x1_2d_u8_wzp": lambda: conv(90, 5, 5, (11, 7), (5, 1), group=5, pads=(2, 0, 2, 0), u8=True, w_zps=True),
    "dw_k1x3_2d_s2": lambda: conv(91, 6, 6, (9, 13), (1, 3), group=6, stride=2),
    "dw3_dilated_u8_mult2": lambda: conv(92, 3, 6, (10, 11), (3, 3), group=3, dil=2, pads=(2, 2, 2, 2), u8=True),
    # Helium: KWS's narrow 25 x 5 planes (dw_mve3_pad's padded copy: a border in every block), in
    # place, and an odd plane with asymmetric pads
    "dw3_s1_kws_in_place": lambda: conv(93, 5, 5, (25, 5), (3, 3), group=5, chain=True, x_zp=-17),
    "dw3_s1_odd_pads": lambda: conv(94, 3, 3, (7, 9), (3, 3), group=3, pads=(0, 2, 1, 0)),
    # Helium's max pool: 16 outputs a step (a row of 37, stride 1, both pads), a ceil-mode window past the row
    "maxpool_3x3_s1_w37_u8": lambda: maxpool(95, [1, 3, 9, 37], (3, 3), (1, 1), (1, 1, 1, 1), u8=True),
    "maxpool_3x3_s2_ceil_w20": lambda: maxpool(96, [1, 2, 8, 20], (3, 3), (2, 2), ceil=1),
    # Helium's gathers straight from the input rows (mve_pool): SqueezeNet's 3x3 stride 2 over two
    # blocks of 16, windows cut by pads on every side (clamped offsets) and ceil mode, 4x4
    "maxpool_3x3_s2_w45": lambda: maxpool(105, [1, 3, 9, 45], (3, 3), (2, 2)),
    "maxpool_3x2_s2x3_pads_ceil_u8": lambda: maxpool(106, [1, 2, 10, 21], (3, 2), (2, 3), (1, 1, 0, 1), ceil=1, u8=True),
    "maxpool_4x4_s3_padded": lambda: maxpool(107, [1, 3, 12, 17], (4, 4), (3, 3), (2, 1, 1, 2)),
    "gemm_k50_n7": lambda: qgemm(80, 2, 50, 7),
    "gemm_k17_n6_b_zps": lambda: qgemm(81, 2, 17, 6, b_zps=True),
    # the zoo's other ops: global average pools (a plane of 1, sums past multiples of 8), uint8
    # residual adds and products, channel shuffles (ShuffleNetV2) and other transposes
    "gap_i8_7x7": lambda: global_pool(85, [1, 11, 7, 7]),
    "gap_i8_plane1": lambda: global_pool(86, [1, 33, 1, 1], x_zp=-20),
    "gap_u8_3x3": lambda: global_pool(87, [1, 6, 3, 3], u8=True),
    "gap_u8_12x12_1d": lambda: global_pool(88, [2, 5, 144], u8=True, x_zp=-3, y_zp=0, y_s=0.005),
    "add_u8_same_shape": lambda: binary_u8(89, "QLinearAdd", [1, 5, 7, 7]),
    "add_u8_channel": lambda: binary_u8(90, "QLinearAdd", [1, 3, 6, 5], [1, 3, 1, 1]),
    "mul_u8_same_shape": lambda: binary_u8(91, "QLinearMul", [3, 13]),
    "shuffle_i8_12x12": lambda: shuffle(92, 24, (12, 12)),
    "shuffle_u8_3x3": lambda: shuffle(93, 18, (3, 3), u8=True),
    "shuffle_i8_g3_5x7": lambda: shuffle(94, 9, (5, 7), groups=3),
    "transpose_nhwc": lambda: transpose(95, [1, 5, 3, 7], [0, 2, 3, 1]),
    "transpose_merged_rows": lambda: transpose(96, [2, 1, 3, 4, 5], [1, 3, 4, 0, 2]),
    # concats (SqueezeNet's, ShuffleNetV2's): inputs requantized through tables, or copied; dense heads
    "concat_i8_channels": lambda: concat(97, [1, 5, 3, 5], [1, 3, 3, 5], 1),
    "concat_u8_rows_copy": lambda: concat(98, [2, 3, 7], [2, 2, 7], 1, u8=True, same=True),
    "concat_u8_last_axis": lambda: concat(99, [1, 4, 3, 3], [1, 4, 3, 2], 3, u8=True),
    # Helium depthwise: rows of up to 16 taps (dw_mve_rows: after a 1x1 conv, one output a
    # channel 4 channels a step with a tail, 16 taps, uint8), windows of up to 32 taps gathered
    # (dw_mve_window: 5x5 with odd pads and channel counts, strided, uint8, 3x5)
    "dw_k3x1_c19_chained": lambda: conv(176, 19, 19, (30, 1), (3, 1), group=19, pads=(0, 0, 0, 0), chain=True),
    "dw_k15x1_one_c17_u8_chained": lambda: conv(177, 17, 17, (15, 1), (15, 1), group=17, pads=(0, 0, 0, 0),
                                                 chain=True, u8=True),
    "dw_k16x1_wide1_s2": lambda: conv(178, 5, 5, (40, 1), (16, 1), group=5, stride=2, pads=(0, 0, 0, 0)),
    "dw5_s1_c19_odd_pads": lambda: conv(179, 19, 19, (9, 11), (5, 5), group=19, pads=(2, 1, 1, 2)),
    "dw5_s2_c17_u8": lambda: conv(180, 17, 17, (13, 12), (5, 5), group=17, stride=2, u8=True, x_zp=-90),
    "dw3x5_s1": lambda: conv(181, 5, 5, (10, 9), (3, 5), group=5),
    # SqueezeNet's fire modules: the convs write in place into the concat (mixed and equal scales;
    # each part a multiple of the 16 B alignment, as a view needs)
    "fire_i8_mixed": lambda: fire(102, 5, 16, 7, (5, 7)),
    "fire_i8_same": lambda: fire(103, 3, 4, 5, (4, 4), same=True),
    "fire_u8_mixed_const": lambda: fire(104, 4, 3, 5, (2, 8), u8=True, const=True),
    "gemm_k40_n10": lambda: qgemm(100, 1, 40, 10),
    "gemm_u8_k36_n10_b_zps": lambda: qgemm(101, 1, 36, 10, u8=True, b_zps=True),
    # dense heads' vector requantization (Helium): N = 1 and 5 (a last step of 1), per-tensor scale
    # and weight zero point, uint8, odd K, no bias
    "gemm_m4_k23_n1": lambda: qgemm(102, 4, 23, 1),
    "gemm_u8_k33_n5_b_zp_per_tensor": lambda: qgemm(103, 1, 33, 5, b_zp=3, per_column=False, u8=True),
    "gemm_k45_n13_b_zps_nobias": lambda: qgemm(104, 1, 45, 13, b_zps=True, bias=False),
}
SCRATCH = {"c3_s1": ("row", "full"), "c3_grouped": ("row",), "wzp_c3_chunks": ("full",)}


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Any]:
    """Every case planned and run in one host firmware: {'run', 'text', 'models': {sym: (path, plan)}}."""
    d = tmp_path_factory.mktemp("int8")
    entries = []
    for name, make in CASES.items():
        path = d / f"{name}.onnx"
        onnx.save(make(), str(path))
        for scratch in ("none", *SCRATCH.get(name, ())):
            sym = name if scratch == "none" else f"{name}_{scratch}"
            entries.append((sym, str(path), fwbuild.plan(str(path), "greedy_size", ModelOptions(scratch=scratch))))
    rc, text = fwbuild.run_host(fwbuild.build_host(d / "fw", fwbuild.generate(d / "fw", entries)))
    assert rc == 0 and "runtime error" not in text and "AddressSanitizer" not in text, text[-3000:]
    return {"run": verify.parse_output(text), "text": text, "models": {s: (p, doc) for s, p, doc in entries},
            "dir": d}


def _want(path: str, doc: planfile.PlanFile) -> np.ndarray:
    return verify.reference(path, doc, ["y"])["y"].reshape(-1)


@pytest.mark.parametrize("sym", sorted([n for n in CASES] + [f"{n}_{s}" for n, ss in SCRATCH.items() for s in ss]))
def test_host_portable_path_equals_onnxruntime(built, sym):
    path, doc = built["models"][sym]
    assert built["run"].status.get(sym) == 0, built["text"][-2000:]
    got, want = built["run"].outputs[sym]["y"], _want(path, doc)
    assert got.dtype == want.dtype and np.array_equal(got.view(np.uint8), want.view(np.uint8)), (sym, got, want)
    assert len(np.unique(want)) > 2, (sym, want)  # the case exercises a range of codes


def test_cases_reach_the_paths_they_name(built):
    """The in-place cases run in place (output at the input's address), the scratch ones have
    their workspace, the depthwise ones none."""
    for sym, (_, doc) in built["models"].items():
        step = doc.schedule[-1]
        bufs = doc.by_name
        if sym.endswith("in_place"):
            y, x = bufs[step.outputs[0]], bufs[step.inputs[0]]
            assert (y.alias_of or y.name) == (x.alias_of or x.name) or y.offset == x.offset, sym
        if sym.endswith(("_row", "_full")):
            assert step.workspace is not None, sym
        if sym.startswith("fire_"):  # each conv's output at its channels of the concat's
            y = bufs["y"]
            at = {"a": 0, "b": bufs["a"].elements + (2 * bufs["a"].elements // bufs["a"].shape[1]
                                                     if "const" in sym else 0)}
            assert all(bufs[n].alias_of == "y" and bufs[n].offset == y.offset + at[n] for n in at), sym


@pytest.mark.parametrize("sym", [n for n in CASES if n.startswith("fire_")])
def test_fire_lowered_equals_the_model_in_onnxruntime(built, sym):
    """The lowered fire module (its 3x3 conv writing the concat's codes through a table where the
    scales differ: lowering._concat_codes) is the model's in onnxruntime, on inputs over every
    code: what the firmware is compared with (verify.reference runs the lowered model) is the
    model's own QLinearConcat, rounding twice."""
    import onnxruntime as ort
    from arena_tool.model import lowering
    path, _ = built["models"][sym]
    lw = lowering.load(path)
    assert ["table" in op.attrs for op in lw.ops] == [False, "same" not in sym, False], sym
    x = np.random.default_rng(7).integers(0, 256, [16, *lw.types["x"].shape[1:]]).astype(np.uint8)
    x = x if "u8" in sym else x.view(I8)
    runs = [ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
            for m in (onnx.load(path), lowering.to_onnx(lw))]
    for i in range(len(x)):
        want, got = (r.run(["y"], {"x": x[i:i + 1]})[0] for r in runs)
        assert np.array_equal(want, got), (sym, i)


DSP_OPS = ("smlad", "sxtb16", "sxtab16")
# Helium: the dot products, the vector requantization (objdump writes VMLADAVA as its alias VMLAVA,
# the predicated VSTRB of a last step of 4 as VSTRBT)
MVE_OPS = ("vldrb", "vmlava", "vaddva", "vcvtn", "vstrbt")


def _ops(elf: Path, cpu: str, names: tuple[str, ...]) -> set[str]:
    """Which of the mnemonics ``names`` the ELF's code holds (objdump -d decodes Helium's
    instructions only when told the architecture, Armv8.1-M, of a Cortex-M55)."""
    arch = ["-m", "armv8.1-m.main"] if cpu == "cortex-m55" else []
    text = subprocess.run([require_tool("arm-none-eabi-objdump"), "-d", *arch, str(elf)], check=True,
                          capture_output=True, text=True).stdout
    return {line.split("\t")[2].split(".")[0] for line in text.splitlines()
            if line.count("\t") >= 2 and line.split("\t")[2].split(".")[0] in names}


@pytest.mark.parametrize("board", ["mps2_an386", "mps2_an500", "mps2_an385", "mps3_an547"])
def test_qemu_dsp_and_portable_paths_equal_the_host(built, board, tmp_path: Path):
    """The same tables on Cortex-M4 / Cortex-M7 (DSP extension: SXTB16, SMLAD, both in the ELF),
    on a Cortex-M3 (the portable C path and soft-float requantization: neither in the ELF) and on
    a Cortex-M55 (Helium: VLDRB, VMLADAVA, VADDVA, VCVTN, VSTRB in the ELF, no SMLAD): every status and
    every output identical to the host's, so to onnxruntime's."""
    require_tool("arm-none-eabi-gcc")
    require_tool("qemu-system-arm")
    target = boards.load_board(board)
    entries = [(sym, path, doc) for sym, (path, doc) in built["models"].items()]
    gen = fwbuild.generate(tmp_path, entries, board)
    elf = fwbuild.build_elf(tmp_path, gen, target, max(doc.arena_size for _, _, doc in entries))
    dsp = board in ("mps2_an386", "mps2_an500")  # the M55 has the DSP extension, but Helium does its sums
    assert _ops(elf, target.cpu.core, DSP_OPS) == (set(DSP_OPS) if dsp else set()), board
    assert _ops(elf, target.cpu.core, MVE_OPS) == (set(MVE_OPS) if board == "mps3_an547" else set()), board
    assert target.qemu is not None
    rc, text = qemu.run(str(elf), target.qemu, timeout=120)
    run = verify.parse_output(text)
    assert rc == 0 and run.status == built["run"].status, text[-2000:]
    for sym, outputs in built["run"].outputs.items():
        got, want = run.outputs[sym]["y"], outputs["y"]
        assert np.array_equal(got.view(np.uint8), want.view(np.uint8)), (board, sym, got, want)
