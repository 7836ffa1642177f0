"""onnx_node: the loaded graph's vocabulary; a constant's value is read lazily and only while small."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, numpy_helper

from arena_tool.model.onnx_node import EVAL_LIMIT, Const, TensorType


def test_elements_of_a_tensor_type() -> None:
    assert TensorType("float32", (1, 3, 4)).elements == 12
    assert TensorType("int8", ()).elements == 1  # a scalar
    assert TensorType("int8", (0, 5)).elements == 0


def test_a_small_constant_is_read_once_from_its_proto() -> None:
    proto = numpy_helper.from_array(np.arange(6, dtype=np.int64).reshape(2, 3), "c")
    c = Const(proto.data_type, (2, 3), proto=proto)
    first = c.array()
    assert first is not None and first.tolist() == [[0, 1, 2], [3, 4, 5]]
    assert c.array() is first  # kept


def test_a_big_or_external_constant_is_not_read() -> None:
    big = numpy_helper.from_array(np.zeros(EVAL_LIMIT + 1, dtype=np.float32), "w")
    assert Const(big.data_type, (EVAL_LIMIT + 1,), proto=big).array() is None
    small = numpy_helper.from_array(np.zeros(EVAL_LIMIT, dtype=np.float32), "w")
    assert Const(small.data_type, (EVAL_LIMIT,), proto=small).array() is not None
    ext = TensorProto(name="e", data_type=TensorProto.FLOAT, dims=[4], data_location=TensorProto.EXTERNAL)
    assert Const(ext.data_type, (4,), proto=ext).array() is None
    assert Const(TensorProto.FLOAT, None, proto=small).array() is None  # unknown shape: not evaluated
