"""The int8-twin helper (tests/quantized.py) itself: its float list, materialize(), and the
QDQ / QOperator files it makes, on the small models only (about 2 s in all)."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
from conftest import require_shared
import pytest
from onnx import TensorProto, helper, numpy_helper

import quantized as Q

SQUEEZENET = Q.LIGHT_DIR / "light_squeezenet.onnx"


def ops(path) -> set[str]:
    return {n.op_type for n in onnx.load(path, load_external_data=False).graph.node}


def run(path) -> list[np.ndarray]:
    model = onnx.load(path, load_external_data=False)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, Q.calibration_inputs(model, 1)[0])


def test_float_models_are_the_light_models_and_the_float_mlperf_ones():
    models = Q.float_models()
    assert models == sorted(models, key=lambda p: p.name)
    assert set(Q.LIGHT_DIR.glob("*.onnx")) <= set(models)
    assert not any("int8" in p.name for p in models)
    assert set(Q.mlperf_float_models()) <= set(models)
    if Q.MLPERF_DIR.is_dir():
        assert Q.mlperf_float_models(), "the MLPerf Tiny dir is there but no float model matched"
    assert {p for p, _, _ in Q.cases()} == set(models)  # every model in some form


def test_materialize_folds_constants_into_seeded_weights_and_keeps_integer_ones():
    # W = Reshape(ConstantOfShape([8]) = 0.02, [4, 2]); y = Reshape(x @ W, Concat([1], [2]));
    # BatchNormalization variance from ConstantOfShape too (it must come out positive).
    i64 = lambda name, v: numpy_helper.from_array(np.array(v, np.int64), name)  # noqa: E731
    fill = helper.make_tensor("v", TensorProto.FLOAT, [1], [0.02])
    nodes = [
        helper.make_node("ConstantOfShape", ["n8"], ["w8"], value=fill),
        helper.make_node("Reshape", ["w8", "s42"], ["W"]),
        helper.make_node("Concat", ["one", "two"], ["shape"], axis=0),
        helper.make_node("MatMul", ["x", "W"], ["xw"]),
        helper.make_node("Reshape", ["xw", "shape"], ["r"]),
        helper.make_node("ConstantOfShape", ["n2"], ["var"], value=fill),
        helper.make_node("Unsqueeze", ["r"], ["r4"], axes=[2, 3]),
        helper.make_node("BatchNormalization", ["r4", "g", "b", "mean", "var"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 1, 1])],
        [i64("n8", [8]), i64("s42", [4, 2]), i64("one", [1]), i64("two", [2]), i64("n2", [2]),
         numpy_helper.from_array(np.ones(2, np.float32), "g"), numpy_helper.from_array(np.zeros(2, np.float32), "b"),
         numpy_helper.from_array(np.zeros(2, np.float32), "mean")])
    # IR 3 as in the light models: every initializer is listed in graph.input too.
    graph.input.extend(helper.make_tensor_value_info(i.name, i.data_type, i.dims) for i in graph.initializer)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 9)], ir_version=3)

    m = Q.materialize(model)
    onnx.checker.check_model(m, full_check=True)
    assert [n.op_type for n in m.graph.node] == ["MatMul", "Reshape", "Unsqueeze", "BatchNormalization"]
    inits = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
    assert inits["W"].shape == (4, 2) and inits["W"].dtype == np.float32 and np.unique(inits["W"]).size == 8
    np.testing.assert_array_equal(inits["shape"], [1, 2])  # integer constants keep their values
    assert (inits["var"] > 0).all()
    assert {"n8", "s42", "one", "two", "n2"}.isdisjoint(inits)  # folded away with their nodes
    assert [i.name for i in m.graph.input] == ["x"]
    assert Q.materialize(model).SerializeToString() == m.SerializeToString()  # crc32 seeds, not hash()
    ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, {"x": np.ones((1, 4), np.float32)})


def test_float_twin_has_real_weights_passes_the_checker_and_runs(qcache):
    path = Q.materialized(SQUEEZENET, qcache)
    assert path.name == "light_squeezenet_float.onnx"
    onnx.checker.check_model(str(path))
    assert "ConstantOfShape" not in ops(path)
    assert np.isfinite(run(path)[0]).all()


def test_qdq_twin_has_quantize_dequantize_around_a_float_conv(qcache):
    path = Q.quantized(SQUEEZENET, "qdq", False, qcache)
    assert path.name == "light_squeezenet_qdq_pt.onnx"
    assert {"QuantizeLinear", "DequantizeLinear", "Conv"} <= ops(path)
    onnx.checker.check_model(str(path))
    assert np.isfinite(run(path)[0]).all()


def test_qoperator_twin_has_qlinearconv(qcache):
    path = Q.quantized(SQUEEZENET, "qoperator", True, qcache)
    assert path.name == "light_squeezenet_qoperator_pc.onnx"
    found = ops(path)
    assert "QLinearConv" in found and "Conv" not in found
    assert np.isfinite(run(path)[0]).all()


def test_per_channel_qdq_weights_have_one_scale_per_output_channel(qcache):
    m = onnx.load(Q.quantized(SQUEEZENET, "qdq", True, qcache))
    inits = {i.name: i for i in m.graph.initializer}
    weight_dqs = [n for n in m.graph.node if n.op_type == "DequantizeLinear" and n.input[0] in inits
                  and inits[n.input[0]].data_type == TensorProto.INT8]
    assert weight_dqs
    for n in weight_dqs:
        assert list(inits[n.input[1]].dims) == [inits[n.input[0]].dims[0]]


def test_quantizing_twice_gives_byte_identical_files_and_the_cache_is_reused(qcache, tmp_path):
    first = Q.quantized(SQUEEZENET, "qdq", True, qcache)
    stamp = first.stat().st_mtime_ns
    assert Q.quantized(SQUEEZENET, "qdq", True, qcache) == first
    assert first.stat().st_mtime_ns == stamp  # made once per cache dir
    again = Q.quantized(SQUEEZENET, "qdq", True, tmp_path)  # from scratch, float twin included
    assert again.read_bytes() == first.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["light_squeezenet_float.onnx", "light_squeezenet_qdq_pc.onnx"]


@pytest.mark.parametrize("fmt", Q.FORMATS)
def test_mlperf_tiny_float_model_quantizes(qcache, fmt):
    models = Q.mlperf_float_models()
    if not models:
        require_shared(Q.MLPERF_DIR)
    smallest = min(models, key=lambda p: p.stat().st_size)
    path = Q.quantized(smallest, fmt, True, qcache)
    assert ("QLinearConv" if fmt == "qoperator" else "DequantizeLinear") in ops(path)
    assert np.isfinite(run(path)[0]).all()


def test_unknown_format_is_refused(qcache):
    with pytest.raises(ValueError, match="fmt"):
        Q.quantized(SQUEEZENET, "int8", False, qcache)
