"""bench/onnx2tflite.py: an int8 QOperator ONNX model as the same int8 .tflite, run in TFLM's host
interpreter against onnxruntime on one tiny network holding every op the zoo's networks use."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest

import quantized as Q
import zoo
from bench import onnx2tflite
from arena_tool.model import tflite_model


def tiny() -> onnx.ModelProto:
    """8x8x3: a stride-2 3x3 conv padded as ONNX pads (top and left: an explicit PAD in TFLite),
    hard-swish, depthwise, squeeze-excite with a hard-sigmoid gate, MaxPool with pads, a Split /
    Concat / Reshape-Transpose-Reshape channel shuffle, a residual Add, a fire module's Concat of two
    convs, then the zoo's head."""
    net = zoo._Net("tiny", 3, (8, 8))
    x = net.conv("input", 8, 3, 2, act="hswish")
    x = net.conv(x, 8, 3, 1, group=8, act="relu")
    x = net.se(x, 4, "hsigmoid")
    x = net.node("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    split = net._id("split")
    net.nodes.append(onnx.helper.make_node("Split", [x, net.const(net._id("sizes"), np.array([4, 4], np.int64))],
                                           [f"{split}a", f"{split}b"], name=split, axis=1))
    a, b = f"{split}a", f"{split}b"
    net.c[a] = net.c[b] = 4
    y = net.node("Concat", [a, net.conv(b, 4, act="relu")], 8, axis=1)
    y = net.node("Reshape", [y, net.const(net._id("shape"), np.array([1, 2, 4, 2, 2], np.int64))])
    y = net.node("Transpose", [y], perm=[0, 2, 1, 3, 4])
    y = net.node("Reshape", [y, net.const(net._id("shape"), np.array([1, 8, 2, 2], np.int64))], 8)
    s = net.conv(x, 4, act="relu")  # a SqueezeNet fire: two convs of one squeeze concatenated
    z = net.node("Concat", [net.conv(s, 4, act="relu"), net.conv(s, 4, 3, act="relu")], 8, axis=1)
    return net.model(net.head(net.node("Add", [net.node("Add", [x, y]), z])))


@pytest.fixture(scope="module")
def twins(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("onnx2tflite")
    src = d / "tiny.onnx"
    onnx.save(tiny(), str(src))
    return {label: Q.quantized(src, "qoperator", True, d, **kw) for label, kw in
            (("int8", {}), ("uint8", {"activation": "uint8"}), ("asym", {"weight_symmetric": False}))}


def ops_of(data: bytes) -> list[str]:
    fb = tflite_model.schema()
    m = fb.ModelT.InitFromObj(fb.Model.GetRootAsModel(data, 0))
    names = tflite_model.op_names()
    return [names[max(m.operatorCodes[o.opcodeIndex].builtinCode, m.operatorCodes[o.opcodeIndex].deprecatedBuiltinCode)]
            for o in m.subgraphs[0].operators]


def test_every_op_converts_and_runs_close_to_onnxruntime(twins):
    model = onnx.load(str(twins["int8"]))
    c = onnx2tflite.convert(model)
    ops = ops_of(c.data)
    assert {"QUANTIZE", "PAD", "CONV_2D", "HARD_SWISH", "DEPTHWISE_CONV_2D", "AVERAGE_POOL_2D", "MUL", "PADV2", "MAX_POOL_2D",
            "SPLIT", "CONCATENATION", "RESHAPE", "TRANSPOSE", "ADD", "FULLY_CONNECTED", "SOFTMAX",
            "DEQUANTIZE"} <= set(ops), ops
    assert ops.count("HARD_SWISH") == 1
    # the fire's conv of another scale than its concat's requantizes to it (no QUANTIZE between)
    assert c.notes == ["1 conv outputs read only by a concat written at its scale (requantized once, as "
                       "TFLite's converter writes a concat; onnxruntime rounds twice)"]
    diff = onnx2tflite.compare(model)
    assert set(diff) == {"output", next(n.input[0] for n in model.graph.node if n.op_type == "QLinearSoftmax")}
    assert max(diff.values()) <= 2, diff  # TFLM requantizes in fixed point, onnxruntime in float


def test_uint8_is_the_int8_network_and_asymmetric_weights_are_made_symmetric(twins):
    u8 = onnx2tflite.convert(onnx.load(str(twins["uint8"])))
    assert u8.notes[0] == "uint8 activations written as int8: every code and zero point minus 128 (exact)"
    assert max(onnx2tflite.compare(onnx.load(str(twins["uint8"]))).values()) <= 2
    asym = onnx.load(str(twins["asym"]))
    c = onnx2tflite.convert(asym)
    assert c.notes[-1].startswith("weights with zero points other than 0 written symmetric")
    fb = tflite_model.schema()
    m = fb.ModelT.InitFromObj(fb.Model.GetRootAsModel(c.data, 0))
    weights = [t for t in m.subgraphs[0].tensors if t.type == fb.TensorType.INT8 and t.buffer and
               t.quantization is not None and len(t.quantization.scale) > 1]
    assert weights and all(not t.quantization.zeroPoint.any() for t in weights)
    assert max(onnx2tflite.compare(asym).values()) <= 3


def test_an_op_it_does_not_write_is_named(twins, tmp_path, capsys):
    model = onnx.load(str(twins["int8"]))
    model.graph.node[1].op_type = "QLinearLeakyRelu"
    path = tmp_path / "bad.onnx"
    onnx.save(model, str(path))
    assert onnx2tflite.main([str(path), str(tmp_path / "bad.tflite")]) == 2
    err = capsys.readouterr().err
    assert "QLinearLeakyRelu is not written" in err and str(path) in err and not (tmp_path / "bad.tflite").exists()


def test_speed_sums_tflm_operators_under_arena_s_op_kinds(twins, tmp_path):
    """bench/speed.py's per-op-kind table: each TFLM operator of the conversion under the kind its
    ONNX op has on arena's side, with the same MACs (a conv's output x kernel x input channels)."""
    from bench import speed

    path = tmp_path / "tiny.tflite"
    path.write_bytes(onnx2tflite.convert(onnx.load(str(twins["int8"]))).data)
    ops = speed.tflite_ops(path)
    kinds = [k for k, _ in ops]
    assert kinds[0] == kinds[-1] == speed.EDGES
    assert ("conv 3x3", 4 * 4 * 8 * 9 * 3) in ops and ("depthwise 3x3", 4 * 4 * 8 * 9) in ops
    assert ("fully connected", 10 * 8) in ops and "pad (TFLM: ONNX's pads)" in kinds
    assert {"hard-swish / hard-sigmoid / mul", "global average pool", "max pool", "concat", "add", "softmax",
            "reshape / transpose / split", "pointwise"} <= set(kinds), kinds
