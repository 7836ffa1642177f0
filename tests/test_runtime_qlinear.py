"""The quantized kernels (arena_tool/runtime/*_q8.c, quant_support.c) compute what
onnxruntime computes, within one quantization step, for int8 and uint8 tensors.

Small models built here, QOperator (com.microsoft contrib ops, as onnxruntime's quantizer
writes them) and QDQ (lowered by arena to the same QOperator kernels), all planned and run
in ONE host firmware (AddressSanitizer + UBSan; each build compiles the runtime, so one
build keeps the file fast), and the same tables once more under QEMU where the Arm toolchain
exists. Graph inputs come from verify.input_pattern, the values main.c feeds: int8 in
[-125, 125], uint8 in [0, 250].
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import numpy as np
import onnx
import pytest
from conftest import require_tool
from onnx import TensorProto, helper, numpy_helper

import fwbuild
from arena_tool.model import lowering
from arena_tool.plan import plancheck, planners
from arena_tool.run import qemu, verify
from arena_tool.plan.planfile import PlanFile
from arena_tool.core.problem import ModelOptions

MS = "com.microsoft"
PLANNER = "greedy_size" if "greedy_size" in planners.PLANNERS else "naive"
I8, U8 = np.int8, np.uint8
ARENA_ERR_UNSUPPORTED, ARENA_ERR_SHAPE = 10, 11


def _elem(dtype: Any) -> int:
    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


class G:
    """A tiny graph builder: typed inputs/outputs, constants, scalar quantization parameters."""

    def __init__(self, seed: int = 0) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[TensorProto] = []
        self.inputs: list[onnx.ValueInfoProto] = []
        self.outputs: list[onnx.ValueInfoProto] = []
        self.rng = np.random.default_rng(seed)

    def input(self, name: str, dtype: Any, shape: list[int]) -> str:
        self.inputs.append(helper.make_tensor_value_info(name, _elem(dtype), shape))
        return name

    def output(self, name: str, dtype: Any, shape: list[int]) -> None:
        self.outputs.append(helper.make_tensor_value_info(name, _elem(dtype), shape))

    def const(self, name: str, value: Any, dtype: Any = None) -> str:
        self.inits.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
        return name

    def ints(self, name: str, dtype: Any, shape: list[int], lo: int = -100, hi: int = 100) -> str:
        return self.const(name, self.rng.integers(lo, hi, shape), dtype)

    def qp(self, name: str, scale: float, zp: int | None, dtype: Any) -> list[str]:
        """[scale, zero point] names ('' for an absent zero point)."""
        s = self.const(f"{name}_s", np.float32(scale))
        return [s, self.const(f"{name}_z", zp, dtype) if zp is not None else ""]

    def node(self, op: str, ins: list[str], outs: list[str], domain: str = MS, **attrs: Any) -> None:
        self.nodes.append(helper.make_node(op, ins, outs, name=f"{op.lower()}_{len(self.nodes)}", domain=domain,
                                           **attrs))

    def model(self, opset: int = 13) -> onnx.ModelProto:
        graph = helper.make_graph(self.nodes, "g", self.inputs, self.outputs, self.inits)
        ops = [helper.make_opsetid("", opset), helper.make_opsetid(MS, 1)]
        return helper.make_model(graph, opset_imports=ops)


# --- QOperator models ----------------------------------------------------------------

def binary(op: str, dt: Any, a_shape: list[int], b_shape: list[int] | None, y_shape: list[int],
           b_const: list[int] | None = None) -> onnx.ModelProto:
    g = G(1)
    a = g.input("a", dt, a_shape)
    b = g.input("b", dt, b_shape) if b_shape is not None else g.ints("b", dt, b_const or [], 0 if dt == U8 else -100,
                                                                   250 if dt == U8 else 100)
    z = 128 if dt == U8 else 0
    g.node(op, [a, *g.qp("a", 0.02, 3 + z, dt), b, *g.qp("b", 0.03, -5 + z, dt), *g.qp("y", 0.05, 2 + z, dt)], ["y"])
    g.output("y", dt, y_shape)
    return g.model()


def mul_ties(dt: Any, shape: list[int]) -> onnx.ModelProto:
    """x * 1.0 (code 255 at scale 1/255) requantized from 0.05 to 0.04 with zero point 68: x's
    codes 185, 225, 233 land on exact ties (62.5, 112.5, 122.5 before the zero point)."""
    g = G(14)
    a = g.input("a", dt, shape)
    z = 0 if dt == U8 else -128
    g.node("QLinearMul", [a, *g.qp("a", 0.05, 135 + z, dt), g.const("b", np.full(shape, 255 + z), dt),
                          *g.qp("b", 1 / 255, z, dt), *g.qp("y", 0.04, 68 + z, dt)], ["y"])
    g.output("y", dt, shape)
    return g.model()


def in_place() -> onnx.ModelProto:
    """LeakyRelu -> Add -> Mul -> Sigmoid, Add and Mul reading the graph input too: the planner
    writes Add's output over the LeakyRelu output (input A), Mul's over Add's (input B) and
    Sigmoid's over Mul's."""
    g = G(2)
    x = g.input("x", I8, [1, 8, 4, 4])
    xq = [x, *g.qp("x", 0.02, 1, I8)]
    g.node("QLinearLeakyRelu", [*xq, *g.qp("l", 0.015, -3, I8)], ["l"], alpha=0.1)
    g.node("QLinearAdd", ["l", "l_s", "l_z", *xq, *g.qp("s", 0.03, 4, I8)], ["s"])
    g.node("QLinearMul", [*xq, "s", "s_s", "s_z", *g.qp("m", 0.01, -2, I8)], ["m"])
    g.node("QLinearSigmoid", ["m", "m_s", "m_z", *g.qp("y", 1 / 256, -128, I8)], ["y"])
    g.output("y", I8, [1, 8, 4, 4])
    return g.model()


def gemm(dt_a: Any, dt_b: Any, M: int, K: int, N: int, trans_a: int = 0, trans_b: int = 0, alpha: float = 1.0,
         bias: list[int] | None = None, per_column: bool = True, float_out: bool = False) -> onnx.ModelProto:
    g = G(3)
    a = g.input("a", dt_a, [K, M] if trans_a else [M, K])
    b_lo, b_hi = (0, 250) if dt_b == U8 else (-100, 100)
    b = g.ints("b", dt_b, [N, K] if trans_b else [K, N], b_lo, b_hi)
    za = 130 if dt_a == U8 else -4
    zb = (128 if dt_b == U8 else 0)
    if per_column:
        bq = [g.const("b_s", (0.002 + 0.001 * np.arange(N)).astype(np.float32)),
              g.const("b_z", zb + np.arange(N) % 3 - 1, dt_b)]
    else:
        bq = g.qp("b", 0.003, zb, dt_b)
    c = g.ints("c", np.int32, bias, -3000, 3000) if bias is not None else ""
    y = [] if float_out else g.qp("y", 0.25, 120 if dt_a == U8 else -3, dt_a)
    g.node("QGemm", [a, *g.qp("a", 0.02, za, dt_a), b, *bq, c, *y], ["y"], alpha=alpha, transA=trans_a, transB=trans_b)
    g.output("y", np.float32 if float_out else dt_a, [M, N])
    return g.model()


def matmul(dt_a: Any, a_shape: list[int], b_shape: list[int], y_shape: list[int], per_column: bool = True,
           ) -> onnx.ModelProto:
    """QLinearMatMul (default domain), B int8, per-column scales for a 2-D B."""
    g = G(14)
    a = g.input("a", dt_a, a_shape)
    n = b_shape[-1]
    z = 128 if dt_a == U8 else 0
    bq = [g.const("b_s", np.linspace(0.002, 0.005, n, dtype=np.float32)), g.const("b_z", np.zeros(n), I8)] \
        if per_column else g.qp("b", 0.003, 0, I8)
    g.node("QLinearMatMul", [a, *g.qp("a", 0.02, 5 + z, dt_a), g.ints("b", I8, b_shape), *bq,
                             *g.qp("y", 0.2, -3 + z, dt_a)], ["y"], domain="")
    g.output("y", dt_a, y_shape)
    return g.model()


def quantize_per_axis(dt: Any) -> onnx.ModelProto:
    """float -> QuantizeLinear (per channel, axis 1) -> DequantizeLinear (per channel)."""
    g = G(15)
    x = g.input("x", np.float32, [2, 3, 4])
    z = np.array([0, 5, -7]) + (128 if dt == U8 else 0)
    q = [g.const("s", np.array([0.01, 0.004, 0.02], np.float32)), g.const("z", z, dt)]
    g.node("QuantizeLinear", [x, *q], ["q"], domain="", axis=1)
    g.node("DequantizeLinear", ["q", *q], ["y"], domain="", axis=1)
    g.output("q", dt, [2, 3, 4])
    g.output("y", np.float32, [2, 3, 4])
    return g.model()


def avg_pool(dt: Any, shape: list[int], y_shape: list[int], **attrs: Any) -> onnx.ModelProto:
    g = G(4)
    x = g.input("x", dt, shape)
    z = 128 if dt == U8 else 0
    g.node("QLinearAveragePool", [x, *g.qp("x", 0.02, 3 + z, dt), *g.qp("y", 0.015, -1 + z, dt)], ["y"], **attrs)
    g.output("y", dt, y_shape)
    return g.model()


def global_pool(dt: Any, shape: list[int]) -> onnx.ModelProto:
    g = G(5)
    x = g.input("x", dt, shape)
    z = 128 if dt == U8 else 0
    g.node("QLinearGlobalAveragePool", [x, *g.qp("x", 0.02, 7 + z, dt), *g.qp("y", 0.004, -2 + z, dt)], ["y"],
           channels_last=0)
    g.output("y", dt, shape[:2] + [1] * (len(shape) - 2))
    return g.model()


def concat(dt: Any, axis: int, shapes: list[list[int]], y_shape: list[int]) -> onnx.ModelProto:
    """Input 0 has the output's parameters (copied), the others requantize; the last is a constant."""
    g = G(6)
    z = 128 if dt == U8 else 0
    ins = [*g.qp("y", 0.03, 5 + z, dt)]
    params = [(0.03, 5), (0.02, -7), (0.05, 11)]
    for k, shape in enumerate(shapes):
        x = g.input(f"x{k}", dt, shape) if k < len(shapes) - 1 else g.ints(f"x{k}", dt, shape, 0 if dt == U8 else -120,
                                                                            250 if dt == U8 else 120)
        s, zp = params[k]
        ins += [x, *g.qp(f"x{k}", s, zp + z, dt)]
    g.node("QLinearConcat", ins, ["y"], axis=axis)
    g.output("y", dt, y_shape)
    return g.model()


def softmax(dt: Any, shape: list[int], axis: int, opset: int, x_scale: float, y_scale: float, y_zp: int,
            ) -> onnx.ModelProto:
    g = G(7)
    x = g.input("x", dt, shape)
    g.node("QLinearSoftmax", [x, *g.qp("x", x_scale, 3 if dt == I8 else 131, dt), *g.qp("y", y_scale, y_zp, dt)],
           ["y"], axis=axis, opset=opset)
    g.output("y", dt, shape)
    return g.model()


def unary(op: str, dt: Any, shape: list[int], **attrs: Any) -> onnx.ModelProto:
    g = G(8)
    x = g.input("x", dt, shape)
    z = 128 if dt == U8 else 0
    y = g.qp("y", 1 / 256 if op == "QLinearSigmoid" else 0.02, (-128 if dt == I8 else 0) if op == "QLinearSigmoid"
             else 9 + z, dt)
    g.node(op, [x, *g.qp("x", 0.04, -6 + z, dt), *y], ["y"], **attrs)
    g.output("y", dt, shape)
    return g.model()


def qconv(dt: Any) -> onnx.ModelProto:
    """Three convs: 3x3 padded (im2col workspace), grouped strided dilated (workspace),
    depthwise (never a workspace)."""
    g = G(9)
    z = 128 if dt == U8 else 0
    x = g.input("x", dt, [1, 4, 9, 9])
    g.node("QLinearConv", [x, *g.qp("x", 0.02, 3 + z, dt), g.ints("w1", I8, [6, 4, 3, 3]),
                           g.const("w1_s", np.linspace(0.002, 0.004, 6, dtype=np.float32)),
                           g.const("w1_z", np.zeros(6), I8), *g.qp("c1", 0.05, -4 + z, dt),
                           g.ints("b1", np.int32, [6], -500, 500)], ["c1"], domain="", pads=[1, 1, 1, 1])
    g.node("QLinearConv", ["c1", "c1_s", "c1_z", g.ints("w2", I8, [4, 3, 3, 3]), *g.qp("w2", 0.003, 0, I8),
                           *g.qp("c2", 0.06, 2 + z, dt)], ["c2"], domain="", group=2, strides=[2, 2],
           dilations=[1, 2], pads=[1, 2, 0, 1])
    g.node("QLinearConv", ["c2", "c2_s", "c2_z", g.ints("w3", I8, [4, 1, 3, 3]), *g.qp("w3", 0.004, 0, I8),
                           *g.qp("y", 0.03, -1 + z, dt), g.ints("b3", np.int32, [4], -300, 300)], ["y"], domain="",
           group=4, pads=[1, 1, 1, 1])
    g.output("y", dt, [1, 4, 4, 4])
    return g.model()


# --- QDQ models (lowered to the QOperator kernels) --------------------------------------

def qdq(op: str, dt: Any, shape: list[int], y_shape: list[int], act: str = "", opset: int = 13,
        binary_op: bool = False, y_scale: float = 0.02, y_zp: int = -20, **attrs: Any) -> onnx.ModelProto:
    """x_q -DQ-> op [(-DQ(b_q))] [-> Relu|Clip] -Q-> y_q."""
    g = G(10)
    z = 128 if dt == U8 else 0
    ins = ["x"]
    g.input("x_q", dt, shape)
    g.node("DequantizeLinear", ["x_q", *g.qp("x", 0.03, 4 + z, dt)], ["x"], domain="")
    if binary_op:
        g.input("b_q", dt, shape)
        g.node("DequantizeLinear", ["b_q", *g.qp("b", 0.02, -9 + z, dt)], ["b"], domain="")
        ins.append("b")
    g.node(op, ins, ["r"], domain="", **attrs)
    last = "r"
    if act == "Relu":
        g.node("Relu", ["r"], ["a"], domain="")
        last = "a"
    elif act == "Clip":
        g.node("Clip", ["r", g.const("lo", np.float32(0.0)), g.const("hi", np.float32(1.5))], ["a"], domain="")
        last = "a"
    g.node("QuantizeLinear", [last, *g.qp("y", y_scale, y_zp + z, dt)], ["y_q"], domain="")
    g.output("y_q", dt, y_shape)
    return g.model(opset)


def qdq_hard_swish_mul(dt: Any) -> onnx.ModelProto:
    """onnxruntime's QDQ hard-swish, x * Q(HardSigmoid(x)): lowered to one QLinearLookup."""
    g = G(13)
    z = 128 if dt == U8 else 0
    g.input("x_q", dt, [2, 125])
    g.node("DequantizeLinear", ["x_q", *g.qp("x", 0.05, 7 + z, dt)], ["x"], domain="")
    g.node("HardSigmoid", ["x"], ["h"], domain="", alpha=1 / 6, beta=0.5)
    g.node("QuantizeLinear", ["h", *g.qp("h", 1 / 255, -128 + z, dt)], ["h_q"], domain="")
    g.node("DequantizeLinear", ["h_q", "h_s", "h_z"], ["hf"], domain="")
    g.node("Mul", ["x", "hf"], ["m"], domain="")
    g.node("QuantizeLinear", ["m", *g.qp("y", 0.04, -60 + z, dt)], ["y_q"], domain="")
    g.output("y_q", dt, [2, 125])
    return g.model()


def qdq_concat() -> onnx.ModelProto:
    """Concat of three DQ inputs, the last without a zero point: lowered, its QLinearConcat
    ends with that input's scale (the trailing absent zero point cut)."""
    g = G(13)
    ins = []
    for k, (shape, s, z) in enumerate((([2, 3, 4], 0.02, 5), ([2, 1, 4], 0.05, -9), ([2, 2, 4], 0.03, None))):
        g.input(f"x{k}_q", I8, shape)
        g.node("DequantizeLinear", [f"x{k}_q", *[n for n in g.qp(f"x{k}", s, z, I8) if n]], [f"x{k}"], domain="")
        ins.append(f"x{k}")
    g.node("Concat", ins, ["r"], domain="", axis=1)
    g.node("QuantizeLinear", ["r", *g.qp("y", 0.04, 3, I8)], ["y_q"], domain="")
    g.output("y_q", I8, [2, 6, 4])
    return g.model()


def qdq_gemm() -> onnx.ModelProto:
    """DQ(x) @ DQ(w)^T + DQ(bias) -> Q: lowered to QGemm (per-channel weights, int32 bias)."""
    g = G(11)
    g.input("x_q", I8, [2, 12])
    xs, ws = 0.02, np.linspace(0.001, 0.003, 5, dtype=np.float32)
    g.node("DequantizeLinear", ["x_q", *g.qp("x", xs, 6, I8)], ["x"], domain="")
    g.node("DequantizeLinear", [g.ints("w_q", I8, [5, 12]), g.const("w_s", ws), g.const("w_z", np.zeros(5), I8)],
           ["w"], domain="", axis=0)
    g.node("DequantizeLinear", [g.ints("b_q", np.int32, [5], -2000, 2000), g.const("b_s", (xs * ws).astype(np.float32)),
                                g.const("b_z", np.zeros(5), np.int32)], ["bias"], domain="", axis=0)
    g.node("Gemm", ["x", "w", "bias"], ["r"], domain="", transB=1)
    g.node("QuantizeLinear", ["r", *g.qp("y", 0.04, -3, I8)], ["y_q"], domain="")
    g.output("y_q", I8, [2, 5])
    return g.model()


# --- the one firmware -------------------------------------------------------------------

def _softmax_cases() -> dict[str, Callable[[], onnx.ModelProto]]:
    return {
        "softmax_i8_last": lambda: softmax(I8, [2, 3, 10], -1, 13, 0.01, 1 / 256, -128),
        "softmax_u8_axis1": lambda: softmax(U8, [2, 5, 4], 1, 13, 0.015, 1 / 256, 0),
        "softmax_i8_legacy": lambda: softmax(I8, [2, 3, 4], 1, 12, 0.004, 0.0045, -100),
        "softmax_u8_legacy_axis0": lambda: softmax(U8, [3, 2, 2], 0, 11, 0.008, 1 / 256, 0),
    }


# name -> model: each must match onnxruntime within one step.
MATCH: dict[str, Callable[[], onnx.ModelProto]] = {
    "add_i8_bcast": lambda: binary("QLinearAdd", I8, [2, 3, 4, 5], [3, 1, 5], [2, 3, 4, 5]),
    "add_u8_const": lambda: binary("QLinearAdd", U8, [2, 6], None, [2, 6], b_const=[6]),
    "add_u8_scalar": lambda: binary("QLinearAdd", U8, [4, 5], None, [4, 5], b_const=[]),
    "add_i8_lower_rank_a": lambda: binary("QLinearAdd", I8, [5], [3, 4, 5], [3, 4, 5]),
    "mul_i8_bcast_both": lambda: binary("QLinearMul", I8, [1, 4, 1], [3, 1, 6], [3, 4, 6]),
    "mul_u8": lambda: binary("QLinearMul", U8, [2, 3, 4], [2, 3, 4], [2, 3, 4]),
    "mul_i8_const": lambda: binary("QLinearMul", I8, [2, 3, 4], None, [2, 3, 4], b_const=[3, 1]),
    "mul_i8_channel": lambda: binary("QLinearMul", I8, [1, 4, 5, 6], [1, 4, 1, 1], [1, 4, 5, 6]),
    "mul_i8_channel_first": lambda: binary("QLinearMul", I8, [4, 1, 1], [2, 4, 3, 5], [2, 4, 3, 5]),
    "mul_i8_same": lambda: binary("QLinearMul", I8, [3, 90], [3, 90], [3, 90]),
    "mul_u8_ties": lambda: mul_ties(U8, [250]),
    "mul_i8_ties": lambda: mul_ties(I8, [2, 125]),
    "add_i8_channel": lambda: binary("QLinearAdd", I8, [2, 3, 4, 5], [2, 3, 1, 1], [2, 3, 4, 5]),
    "in_place": in_place,
    "gemm_i8_per_column": lambda: gemm(I8, I8, 3, 8, 5, bias=[5]),
    "gemm_u8_trans_alpha": lambda: gemm(U8, I8, 3, 8, 5, trans_a=1, trans_b=1, alpha=0.5, bias=[3, 1]),
    "gemm_u8u8_per_tensor": lambda: gemm(U8, U8, 4, 7, 3, bias=[1, 3], per_column=False),
    "gemm_i8_float_out": lambda: gemm(I8, I8, 2, 6, 4, bias=[2, 4], float_out=True),
    "gemm_i8_scalar_bias_trans_b": lambda: gemm(I8, I8, 3, 5, 4, trans_b=1, bias=[1], per_column=False),
    "matmul_u8_batched_a": lambda: matmul(U8, [2, 3, 6], [6, 4], [2, 3, 4]),
    "matmul_i8_batched_ab": lambda: matmul(I8, [2, 3, 6], [2, 6, 4], [2, 3, 4], per_column=False),
    "quantize_per_axis_i8": lambda: quantize_per_axis(I8),
    "quantize_per_axis_u8": lambda: quantize_per_axis(U8),
    "avgpool_i8_2d": lambda: avg_pool(I8, [1, 3, 7, 7], [1, 3, 4, 4], kernel_shape=[3, 3], strides=[2, 2],
                                      pads=[1, 1, 1, 1]),
    "avgpool_u8_2d_include_pad": lambda: avg_pool(U8, [2, 2, 6, 6], [2, 2, 6, 3], kernel_shape=[2, 3],
                                                  strides=[1, 2], pads=[1, 1, 0, 0], count_include_pad=1),
    "avgpool_i8_1d": lambda: avg_pool(I8, [1, 3, 10], [1, 3, 5], kernel_shape=[3], strides=[2], pads=[1, 1]),
    "avgpool_u8_same_upper": lambda: avg_pool(U8, [1, 2, 5, 5], [1, 2, 3, 3], kernel_shape=[2, 2], strides=[2, 2],
                                              auto_pad="SAME_UPPER"),
    "avgpool_i8_whole_rows": lambda: avg_pool(I8, [1, 3, 10, 5], [1, 3, 5, 1], kernel_shape=[2, 5], strides=[2, 1]),
    "avgpool_u8_whole_rows": lambda: avg_pool(U8, [1, 2, 9, 6], [1, 2, 3, 1], kernel_shape=[3, 6], strides=[3, 1]),
    "gap_i8": lambda: global_pool(I8, [1, 6, 5, 5]),
    "gap_u8_1d": lambda: global_pool(U8, [2, 4, 9]),
    "concat_i8_axis1": lambda: concat(I8, 1, [[1, 2, 3, 3], [1, 3, 3, 3], [1, 1, 3, 3]], [1, 6, 3, 3]),
    "concat_u8_axis2": lambda: concat(U8, 2, [[2, 3, 2], [2, 3, 1], [2, 3, 4]], [2, 3, 7]),
    **_softmax_cases(),
    "sigmoid_i8": lambda: unary("QLinearSigmoid", I8, [2, 3, 40]),
    "sigmoid_u8": lambda: unary("QLinearSigmoid", U8, [240]),
    "leaky_relu_i8": lambda: unary("QLinearLeakyRelu", I8, [3, 80], alpha=0.1),
    "leaky_relu_u8": lambda: unary("QLinearLeakyRelu", U8, [1, 250], alpha=0.3),
    "qconv_u8": lambda: qconv(U8),
    "qdq_hard_swish_i8": lambda: qdq("HardSwish", I8, [2, 125], [2, 125], opset=14, y_scale=0.025, y_zp=-30),
    "qdq_hard_swish_u8": lambda: qdq("HardSwish", U8, [250], [250], opset=14, y_scale=0.02, y_zp=-100),
    "qdq_add_relu_i8": lambda: qdq("Add", I8, [4, 30], [4, 30], act="Relu", binary_op=True),
    "qdq_mul_clip_u8": lambda: qdq("Mul", U8, [250], [250], act="Clip", binary_op=True, y_scale=0.01, y_zp=-110),
    "qdq_sigmoid_relu_u8": lambda: qdq("Sigmoid", U8, [250], [250], act="Relu", y_scale=1 / 256, y_zp=-128),
    "qdq_avgpool_i8": lambda: qdq("AveragePool", I8, [1, 2, 6, 6], [1, 2, 3, 3], kernel_shape=[2, 2],
                                  strides=[2, 2]),
    "qdq_global_avgpool_relu_u8": lambda: qdq("GlobalAveragePool", U8, [1, 8, 2, 2], [1, 8, 1, 1], act="Relu",
                                              y_scale=0.003, y_zp=-20),
    "qdq_softmax_i8": lambda: qdq("Softmax", I8, [3, 16], [3, 16], y_scale=1 / 256, y_zp=-128),
    "qdq_leaky_relu_i8": lambda: qdq("LeakyRelu", I8, [2, 125], [2, 125], alpha=0.2),
    "qdq_gemm": qdq_gemm,
    "qdq_hard_sigmoid_i8": lambda: qdq("HardSigmoid", I8, [2, 125], [2, 125], alpha=1 / 6, beta=0.5, y_scale=1 / 256,
                                       y_zp=-128),
    "qdq_hard_swish_mul_i8": lambda: qdq_hard_swish_mul(I8),
    "qdq_hard_swish_mul_u8": lambda: qdq_hard_swish_mul(U8),
    "qdq_concat": qdq_concat,
}

def _per_channel_add() -> onnx.ModelProto:
    g = G(12)
    a = g.input("a", I8, [2, 3])
    g.node("QLinearAdd", [a, g.const("a_s", np.array([0.01, 0.02], np.float32)), g.const("a_z", np.zeros(2, np.int8)),
                          g.ints("b", I8, [2, 3]), *g.qp("b", 0.02, 0, I8), *g.qp("y", 0.05, 0, I8)], ["y"])
    g.output("y", I8, [2, 3])
    return g.model()


# name -> (model, the run status the kernel must give: it refuses instead of computing garbage).
REFUSED: dict[str, tuple[Callable[[], onnx.ModelProto], int]] = {
    # onnxruntime has no per-channel QLinearAdd either.
    "refuse_add_per_channel": (_per_channel_add, ARENA_ERR_UNSUPPORTED),
    # ceil_mode is not passed to the kernel: its output size gives it away.
    "refuse_avgpool_ceil_mode": (lambda: avg_pool(I8, [1, 1, 6, 6], [1, 1, 3, 3], kernel_shape=[3, 3],
                                                  strides=[2, 2], ceil_mode=1), ARENA_ERR_SHAPE),
}

# int8 softmax where one logit dominates.
SATURATING_SOFTMAX = "softmax_i8_saturates"

CONV_SCRATCH = ("none", "row", "full")


# qconv_i8 planned with scratch="row", then its first conv's workspace moved onto its input.
WS_OVER_INPUT = "qconv_i8_ws_over_input"


def _workspace_over_input(path: str, plan: PlanFile) -> tuple[str, PlanFile]:
    """A broken plan that proves the kernel writes its workspace: im2col then overwrites the
    input rows it has yet to read."""
    bufs = plan.by_name
    ws, x = bufs[plan.schedule[0].workspace or ""], bufs["x"]
    assert ws.size <= x.size
    moved = dataclasses.replace(ws, offset=x.offset)
    return path, dataclasses.replace(plan, buffers=tuple(moved if b.name == ws.name else b for b in plan.buffers))


@pytest.fixture(scope="module")
def fw(tmp_path_factory) -> dict[str, Any]:
    """Every model of this file planned (default options: in-place on) and run in one host firmware.
    Returns {'run': FirmwareRun, 'text': printout, 'models': {symbol: (path, doc)}}."""
    d = tmp_path_factory.mktemp("qlinear")
    makers: dict[str, Callable[[], onnx.ModelProto]] = {**MATCH, **{k: v[0] for k, v in REFUSED.items()}}
    makers[SATURATING_SOFTMAX] = lambda: softmax(I8, [2, 4], 1, 13, 0.5, 1 / 256, -128)
    makers["qconv_i8"] = lambda: qconv(I8)
    entries = []
    for name, make in makers.items():
        path = d / f"{name}.onnx"
        onnx.save(make(), str(path))
        scratches = CONV_SCRATCH if name == "qconv_i8" else ("none",)
        for scratch in scratches:
            sym = name if scratch == "none" else f"{name}_{scratch}"
            entries.append((sym, str(path), fwbuild.plan(str(path), PLANNER, ModelOptions(scratch=scratch))))
    row = next(e for e in entries if e[0] == "qconv_i8_row")
    entries.append((WS_OVER_INPUT, *_workspace_over_input(row[1], row[2])))
    out = d / "fw"
    rc, text = fwbuild.run_host(fwbuild.build_host(out, fwbuild.generate(out, entries)))
    run = verify.parse_output(text)
    assert "runtime error" not in text and "AddressSanitizer" not in text, text[-3000:]
    return {"run": run, "text": text, "rc": rc, "models": {sym: (p, doc) for sym, p, doc in entries}}


def _outputs(fw: dict[str, Any], sym: str) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """(firmware outputs, onnxruntime outputs) of model `sym`, which must have run."""
    path, doc = fw["models"][sym]
    assert fw["run"].status.get(sym) == 0, fw["text"][-3000:]
    got = fw["run"].outputs[sym]
    names = [o.name for o in onnx.load(path).graph.output]
    ref = verify.reference(path, doc, names)
    assert sorted(got) == sorted(names)
    return got, {n: ref[n].reshape(-1) for n in names}


def _assert_within_one_step(sym: str, got: np.ndarray, want: np.ndarray, spread: bool = True) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape, (sym, got.dtype, want.dtype, got.shape, want.shape)
    if want.dtype == np.float32:  # QGemm without y_scale
        assert np.allclose(got, want, rtol=1e-5, atol=1e-5 * float(np.max(np.abs(want)))), (sym, got, want)
        return
    diff = np.abs(got.astype(np.int32) - want.astype(np.int32))
    assert diff.max() <= 1, (sym, int(diff.max()), got, want)
    # Not stuck at one value: the cases exercise a range of codes.
    assert not spread or len(np.unique(want)) > 2, (sym, want)


@pytest.mark.parametrize("sym", sorted(MATCH))
def test_matches_onnxruntime_within_one_step(fw, sym):
    got, want = _outputs(fw, sym)
    for name in want:
        _assert_within_one_step(sym, got[name], want[name])


@pytest.mark.parametrize("sym", sorted(REFUSED))
def test_unsupported_operands_are_refused_with_a_status(fw, sym):
    assert fw["run"].status.get(sym) == REFUSED[sym][1], fw["text"][-3000:]
    assert sym not in fw["run"].outputs or not fw["run"].outputs[sym]


def test_in_place_ops_alias_their_inputs(fw):
    """The default plan writes QLinearAdd's output over its dying input A, QLinearMul's over its
    dying input B and QLinearSigmoid's over its input, and the results still match."""
    _, doc = fw["models"]["in_place"]
    alias = {b.name: b.alias_of for b in doc.buffers}
    assert alias["s"] == alias["m"] == alias["y"] == "l", alias
    got, want = _outputs(fw, "in_place")
    _assert_within_one_step("in_place", got["y"], want["y"])


def test_qdq_patterns_lower_to_the_qlinear_kernels(fw):
    """The QDQ models run as one integer op each, an absorbed Relu/Clip as its output range."""
    expect = {"qdq_hard_swish_i8": ("QLinearHardSwish", None), "qdq_add_relu_i8": ("QLinearAdd", (-20, 127)),
              "qdq_mul_clip_u8": ("QLinearMul", (18, 168)), "qdq_sigmoid_relu_u8": ("QLinearSigmoid", (0, 255)),
              "qdq_global_avgpool_relu_u8": ("QLinearGlobalAveragePool", (108, 255)),
              "qdq_gemm": ("QGemm", None), "qdq_softmax_i8": ("QLinearSoftmax", None),
              "qdq_concat": ("QLinearConcat", None), "qdq_hard_sigmoid_i8": ("QLinearLookup", None),
              "qdq_hard_swish_mul_i8": ("QLinearLookup", None), "qdq_hard_swish_mul_u8": ("QLinearLookup", None)}
    for sym, (op_type, out_range) in expect.items():
        path, doc = fw["models"][sym]
        ops = plancheck.lowered_model(path, doc).ops
        assert [op.op_type for op in ops] == [op_type], (sym, [op.op_type for op in ops])
        a = ops[0].attrs
        if sym == "qdq_concat":  # the last input's absent zero point is cut: 2 + 3 * 3 - 1 inputs
            assert len(ops[0].inputs) == 10 and ops[0].inputs[-1] == "x2_s", ops[0].inputs
        assert ((a["output_min"], a["output_max"]) if "output_min" in a else None) == out_range, (sym, a)


def test_lookups_equal_onnxruntime_bit_for_bit(fw, tmp_path):
    """A QLinearLookup's table (computed at build time) gives onnxruntime's codes exactly, run on
    arena's lowering (the reference arena-tool run takes: the hard-swish's Mul as QLinearMul)."""
    for sym in ("qdq_hard_sigmoid_i8", "qdq_hard_swish_mul_i8", "qdq_hard_swish_mul_u8"):
        path, doc = fw["models"][sym]
        lowered = str(tmp_path / f"{sym}.onnx")
        onnx.save(lowering.to_onnx(plancheck.lowered_model(path, doc)), lowered)
        want = verify.reference(lowered, doc, ["y_q"])["y_q"].reshape(-1)
        got = fw["run"].outputs[sym]["y_q"]
        assert np.array_equal(got, want) and len(np.unique(want)) > 20, (sym, got, want)


def test_qlinear_mul_equals_onnxruntime_bit_for_bit(fw):
    """QLinearMul adds the output zero point before rounding, as MlasQLinearMul does (round scales
    such as 0.02 * 0.03 / 0.05 make exact ties, where adding it after rounds the other way): every
    path, same shapes, a per-channel operand on either side, broadcasting, uint8."""
    for sym in ("mul_u8_ties", "mul_i8_ties", "mul_i8_channel", "mul_i8_channel_first", "mul_i8_same",
                "mul_i8_bcast_both", "mul_u8", "mul_i8_const"):
        got, want = _outputs(fw, sym)
        assert np.array_equal(got["y"], want["y"]), (sym, got["y"], want["y"])


def test_absorbed_relu_clamps_the_output(fw):
    """Without the absorbed Relu the sum would go below the zero point for some elements."""
    got, want = _outputs(fw, "qdq_add_relu_i8")
    assert got["y_q"].min() == -20 and (want["y_q"] == -20).sum() > 3


def test_int8_conv_im2col_workspace_gives_the_direct_results(fw):
    """int8 QLinearConv with a planned workspace (one row or the full matrix) computes through
    it, bit-identical to the direct path; the depthwise conv never gets one (working in place over
    its input, it gets a one-channel temporary instead)."""
    docs = {s: fw["models"][f"qconv_i8{'' if s == 'none' else '_' + s}"][1] for s in CONV_SCRATCH}
    sizes = {}
    for s, doc in docs.items():
        ws = [step.workspace for step in doc.schedule]
        assert (ws[:2] == [None, None]) if s == "none" else (ws[0] and ws[1]), (s, ws)
        bufs = doc.by_name
        dw_in = bufs[doc.schedule[2].inputs[0]]
        assert ws[2] is None or bufs[ws[2]].elements == dw_in.shape[2] * dw_in.shape[3], (s, ws)
        sizes[s] = [bufs[w].elements for w in ws[:2] if w]
    # c1: Cin 4 * 3x3 per pixel, 9 pixels a row, 9 rows; c2: 6/2 * 3x3, 4 per row, 4 rows.
    assert sizes["row"] == [36 * 9, 27 * 4] and sizes["full"] == [36 * 81, 27 * 16], sizes
    outs = {s: fw["run"].outputs[f"qconv_i8{'' if s == 'none' else '_' + s}"]["y"] for s in CONV_SCRATCH}
    assert np.array_equal(outs["none"], outs["row"]) and np.array_equal(outs["none"], outs["full"])
    got, want = _outputs(fw, "qconv_i8_full")
    _assert_within_one_step("qconv_i8_full", got["y"], want["y"])
    # And the workspace is memory the kernel uses: over the conv's own input, it corrupts the result.
    assert fw["run"].status[WS_OVER_INPUT] == 0
    assert not np.array_equal(fw["run"].outputs[WS_OVER_INPUT]["y"], outs["none"])


def test_int8_softmax_saturates_when_one_logit_dominates(fw):
    """p rounds to 256/256: the int8 code saturates to 127, as current onnxruntime does (some
    older releases wrapped it to -128)."""
    got, want = _outputs(fw, SATURATING_SOFTMAX)
    x = verify.input_pattern([2, 4], "int8").astype(np.float64) * 0.5
    p = np.exp(x - x.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    top = (np.rint(p * 256) - 128 >= 127).reshape(-1)
    assert top.sum() == 2 and np.all(got["y"][top] == 127), got["y"]
    _assert_within_one_step(SATURATING_SOFTMAX, got["y"], want["y"], spread=False)


def test_the_firmware_reports_the_refusals_in_its_exit_status(fw):
    assert fw["rc"] in {code for _, code in REFUSED.values()}, fw["text"][-2000:]


@pytest.mark.parametrize("board, machine", [("mps2_an500", "mps2-an500"), ("mps3_an547", "mps3-an547")])
def test_qemu_prints_what_the_host_build_prints(fw, tmp_path, board, machine):
    """The same tables on a Cortex-M7 and on a Cortex-M55 (its Helium paths: QLinearAdd/Mul in
    float lanes, the pools' row sums) under QEMU (arm-none-eabi-gcc -O2): every status and every
    output identical to the host build's."""
    require_tool("arm-none-eabi-gcc")
    require_tool("qemu-system-arm")
    entries = [(sym, path, doc) for sym, (path, doc) in fw["models"].items()]
    gen = fwbuild.generate(tmp_path, entries, board)
    elf = fwbuild.build_elf(tmp_path, gen, board, max(doc.arena_size for _, _, doc in entries))
    rc, text = qemu.run(str(elf), machine, timeout=60)
    run = verify.parse_output(text)
    assert rc == fw["rc"] and run.status == fw["run"].status, text[-2000:]
    for sym, outputs in fw["run"].outputs.items():
        if sym == WS_OVER_INPUT and board != "mps2_an500":  # garbage in the order its im2col writes (Helium gathers)
            continue
        for name, values in outputs.items():
            assert np.array_equal(run.outputs[sym][name], values), (sym, name)
