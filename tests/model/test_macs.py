"""MACs per op (arena_tool/model/macs.py): each rule against the count written out by hand from the
op's shapes, and the MLPerf Tiny totals against TFLM's conv + fully-connected count."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from conftest import MLPERF, require_shared
from models import const, model, node, save, vi, weight

from arena_tool.model import lowering, macs
from arena_tool.plan import planners, planning
from arena_tool.core.problem import ModelOptions



def per_op(path: str) -> dict[str, int]:
    lw = lowering.load(path)
    by_node = macs.model_macs(lw)
    return {op.name: by_node[op.node] for op in lw.ops}


def test_each_rule_counts_what_the_shapes_say(tmp_path):
    # x [1,8,10,10] -Conv 3x3 s2 p1 group 2 (8->6)-> c [1,6,5,5] -Relu-> r -MaxPool 2x2 s1-> p [1,6,4,4]
    # -AveragePool 3x3 s1 p1-> a [1,6,4,4] -GlobalAveragePool-> g [1,6,1,1] -Flatten-> f [1,6]
    # -Gemm(transB, W [5,6])-> y [1,5] -MatMul(B [5,3])-> z [1,3]; depthwise d from x: 3x3 group 8
    m = model(
        [node("Conv", ["x", "w"], ["c"], "conv", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], group=2),
         node("Relu", ["c"], ["r"], "relu"),
         node("MaxPool", ["r"], ["p"], "maxpool", kernel_shape=[2, 2]),
         node("AveragePool", ["p"], ["a"], "avgpool", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
         node("GlobalAveragePool", ["a"], ["g"], "gap"),
         node("Flatten", ["g"], ["f"], "flatten"),
         node("Gemm", ["f", "wg"], ["y"], "gemm", transB=1),
         node("MatMul", ["y", "wm"], ["z"], "matmul"),
         node("Conv", ["x", "wd"], ["d"], "depthwise", kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=8)],
        [vi("x", [1, 8, 10, 10])], [vi("z", [1, 3]), vi("d", [1, 8, 10, 10])],
        [weight("w", [6, 4, 3, 3]), weight("wg", [5, 6]), weight("wm", [5, 3]), weight("wd", [8, 1, 3, 3])])
    got = per_op(save(m, tmp_path / "m.onnx"))
    assert got == {
        "conv": 6 * 5 * 5 * (8 // 2) * 3 * 3,  # output elements x Cin/group x window
        "relu": 0,
        "maxpool": 6 * 4 * 4 * 2 * 2,
        "avgpool": 6 * 4 * 4 * 3 * 3,
        "gap": 6 * 4 * 4,  # one accumulate per input element
        "flatten": 0,
        "gemm": 5 * 6,  # output elements x K (A's columns)
        "matmul": 3 * 5,
        "depthwise": 8 * 10 * 10 * 1 * 3 * 3,
    }


def test_quantized_ops_count_as_their_float_twins(tmp_path):
    """QLinearConv's weight sits at input 3 and its window comes from the attributes: the same MACs."""
    x = np.float32(0.05)
    m = model(
        [node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["y"], "qconv", kernel_shape=[3, 3],
              pads=[1, 1, 1, 1])],
        [vi("x", [1, 2, 6, 6], 3)], [vi("y", [1, 4, 6, 6], 3)],
        [const("xs", x), const("xz", np.int8(0)), const("w", np.ones((4, 2, 3, 3), np.int8)), const("ws", x),
         const("wz", np.int8(0)), const("ys", x), const("yz", np.int8(0))])
    assert per_op(save(m, tmp_path / "q.onnx")) == {"qconv": 4 * 6 * 6 * 2 * 3 * 3}


def test_plan_order_follows_the_schedule(tmp_path):
    """plan_macs is in the plan's op order (the tables' order), which may not be the model's."""
    path = save(model(
        [node("Conv", ["x", "w"], ["c"], "conv", kernel_shape=[1, 1]), node("Relu", ["c"], ["r"], "relu")],
        [vi("x", [1, 2, 4, 4])], [vi("r", [1, 3, 4, 4])], [weight("w", [3, 2, 1, 1])]), tmp_path / "s.onnx")
    plan = planning.plan_model(path, ModelOptions(), "greedy_size", planners.Params()).plan_file
    assert macs.plan_macs(plan.schedule, lowering.load(path)) == (3 * 4 * 4 * 2, 0)


@pytest.mark.parametrize("name, conv_fc", [
    ("visual_wake_words__vww_96_float_tflite2onnx.onnx", 7_489_664),
    ("visual_wake_words__vww_96_float_tflite2onnx_int8.onnx", 7_489_664),
    ("keyword_spotting__kws_ref_model_float32_tflite2onnx.onnx", 2_656_768),
    ("image_classification__pretrainedResnet_tflite2onnx_int8.onnx", 12_501_632),
    ("anomaly_detection__ad01_fp32_tflite2onnx.onnx", 264_192),
])
def test_mlperf_tiny_conv_and_gemm_macs_are_tflms(name, conv_fc):
    """TFLM's count (../shared/third_party/SOURCE.md) is conv + fully connected; ours adds pooling."""
    require_shared(MLPERF / name)
    lw = lowering.load(str(MLPERF / name))
    by_node = macs.model_macs(lw)
    pools = sum(by_node[op.node] for op in lw.ops if "Pool" in op.op_type)
    assert sum(by_node.values()) - pools == conv_fc
    assert pools < conv_fc // 100  # a few windows (AD01 has none)
