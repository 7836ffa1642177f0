"""coverage: an op the runtime cannot execute is named before anything is compiled; every op of
the real networks the runtime tests run passes."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto

import models as M
import zoo
from arena_tool.model import lowering
from arena_tool.emit import runtime_support


def _gaps(tmp_path, nodes, inputs, outputs, inits=(), opset=13):
    path = M.save(M.model(nodes, inputs, outputs, list(inits), opset=opset), tmp_path / "m.onnx")
    return runtime_support.gaps(lowering.load(path))


@pytest.mark.parametrize("case, why", [
    ("sin", "no kernel"),
    ("int8_sigmoid", "int8; the kernel takes float32"),
    ("cubic", "mode 'cubic'"),
    ("wrap", "mode 'wrap'"),
    ("dynamic_slice", "starts are not constants"),
    ("conv3d", "3-D kernel"),
    ("float_to_int32_quantize", "float32 -> int32"),
])
def test_what_the_runtime_cannot_run_is_named(tmp_path, case, why):
    f, i8 = TensorProto.FLOAT, TensorProto.INT8
    if case == "sin":
        g = _gaps(tmp_path, [M.node("Sin", ["x"], ["y"], "the_sin")], [M.vi("x", [4])], [M.vi("y", [4])])
    elif case == "int8_sigmoid":
        g = _gaps(tmp_path, [M.node("Sigmoid", ["x"], ["y"], "the_sigmoid")], [M.vi("x", [4], i8)],
                  [M.vi("y", [4], i8)], opset=13)
    elif case == "cubic":
        g = _gaps(tmp_path, [M.node("Resize", ["x", "", "s"], ["y"], "rs", mode="cubic")], [M.vi("x", [1, 1, 4, 4])],
                  [M.vi("y", [1, 1, 8, 8])], [M.const("s", np.array([1, 1, 2, 2], np.float32))])
    elif case == "wrap":
        g = _gaps(tmp_path, [M.node("Pad", ["x", "p"], ["y"], "pad", mode="wrap")], [M.vi("x", [1, 4])],
                  [M.vi("y", [1, 6])], [M.const("p", np.array([0, 1, 0, 1], np.int64))], opset=19)
    elif case == "dynamic_slice":
        g = _gaps(tmp_path, [M.node("Slice", ["x", "st", "en"], ["y"], "slice")],
                  [M.vi("x", [8]), M.vi("st", [1], TensorProto.INT64)], [M.vi("y", [4])],
                  [M.const("en", np.array([8], np.int64))])
    elif case == "conv3d":
        g = _gaps(tmp_path, [M.node("Conv", ["x", "w"], ["y"], "c3", kernel_shape=[1, 1, 1])],
                  [M.vi("x", [1, 2, 2, 2, 2])], [M.vi("y", [1, 2, 2, 2, 2])], [M.weight("w", [2, 2, 1, 1, 1])])
    else:
        g = _gaps(tmp_path, [M.node("QuantizeLinear", ["x", "s", "z"], ["y"], "q")], [M.vi("x", [4])],
                  [M.vi("y", [4], TensorProto.INT32)],
                  [M.const("s", np.array(0.1, np.float32)), M.const("z", np.array(0, np.int32))], opset=21)
    assert len(g) == 1, g
    assert why in g[0].why and g[0].index == 0
    msg = g[0].message("net")
    assert msg.startswith("model net: op 0 ") and g[0].op_type in msg and g[0].name in msg


@pytest.mark.parametrize("name", zoo.NAMES)
def test_the_cnn_families_run_entirely(zoo_dir, name):
    assert runtime_support.gaps(lowering.load(str(zoo_dir / f"{name}.onnx"))) == []
