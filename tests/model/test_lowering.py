"""lowering: QDQ patterns become integer ops, float islands keep their borders, attributes
are normalized once, constants are evaluated without onnxruntime."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from onnx import TensorProto

import models as M
from models import qdq_conv
from models import qparams as _q
from arena_tool.model import liveness, lowering
from arena_tool.plan import plancheck, planfile
from arena_tool.core.problem import ModelOptions

INT32 = TensorProto.INT32


def _low(tmp_path, model) -> lowering.Lowered:
    return lowering.load(M.save(model, tmp_path / "m.onnx"))


def _ops(lw: lowering.Lowered) -> list[str]:
    return [op.op_type for op in lw.ops]


def test_qdq_conv_relu_becomes_one_integer_conv(tmp_path):
    lw = _low(tmp_path, qdq_conv())
    assert _ops(lw) == ["QuantizeLinear", "QLinearConv", "DequantizeLinear"]
    conv = lw.ops[1]
    assert conv.inputs == ("xq", "x_s", "x_z", "w", "w_s", "w_z", "y_s", "y_z", "b")
    assert conv.outputs == ("yq",) and conv.name == "conv"
    assert conv.attrs["output_min"] == -5 and conv.attrs["output_max"] == 127  # the Relu, quantized
    assert conv.attrs["pads"] == [1, 1, 1, 1] and conv.attrs["auto_pad"] == "NOTSET"
    assert lw.qdq_fused == 1 and lw.integer_ops == 1
    assert lw.quant["w"].axis == 0 and len(lw.quant["w"].scale) == 8
    assert lw.quant["yq"].scale == (pytest.approx(0.1),) and lw.quant["yq"].zero_point == (-5,)


def test_qdq_model_plans_int8_tensors_and_int8_weights(tmp_path):
    path = M.save(qdq_conv(), tmp_path / "m.onnx")
    mp = liveness.model_problem(path, ModelOptions(alignment=1))
    dtypes = {t.name: t.dtype for t in mp.tensors}
    assert dtypes == {"x": "float32", "xq": "int8", "yq": "int8", "out": "float32"}
    # int8 weights 288 B, their 8 scales and one zero point (the 8 are all 0: stored as one entry,
    # lowering.stored_constants), the int32 bias 32 B (its own scale is x_s * w_s, not stored), x and
    # y scale + zero point: no float copy of the weights.
    assert mp.weights_bytes == 288 + 8 * 4 + 1 + 32 + 2 * (4 + 1)
    t = {t.name: t for t in mp.tensors}
    assert t["yq"].quant is not None and t["yq"].quant.zero_point == (-5,)


def test_a_bias_of_another_scale_keeps_the_float_island(tmp_path):
    lw = _low(tmp_path, qdq_conv(bias_scale=1.0))
    assert "QLinearConv" not in _ops(lw) and "Conv" in _ops(lw)
    assert lw.qdq_fused == 0


def test_movement_between_equal_parameters_runs_on_integers(tmp_path):
    nodes = [M.node("DequantizeLinear", ["xq", "a_s", "a_z"], ["xf"], "dq"),
             M.node("Reshape", ["xf", "shape"], ["r"], "reshape"),
             M.node("QuantizeLinear", ["r", "a_s", "a_z"], ["rq"], "q")]
    m = M.model(nodes, [M.vi("xq", [1, 16], TensorProto.INT8)], [M.vi("rq", [4, 4], TensorProto.INT8)],
                [*_q("a", 0.5, 1), M.const("shape", np.array([4, 4], np.int64))], opset=13)
    lw = _low(tmp_path, m)
    assert [(op.op_type, op.inputs, op.outputs) for op in lw.ops] == [("Reshape", ("xq", "shape"), ("rq",))]
    assert lw.integer_ops == 1 and lw.quant["rq"].zero_point == (1,)


def test_requantizing_movement_stays_float(tmp_path):
    nodes = [M.node("DequantizeLinear", ["xq", "a_s", "a_z"], ["xf"], "dq"),
             M.node("Reshape", ["xf", "shape"], ["r"], "reshape"),
             M.node("QuantizeLinear", ["r", "b_s", "b_z"], ["rq"], "q")]
    m = M.model(nodes, [M.vi("xq", [1, 16], TensorProto.INT8)], [M.vi("rq", [4, 4], TensorProto.INT8)],
                [*_q("a", 0.5, 1), *_q("b", 0.25, 1), M.const("shape", np.array([4, 4], np.int64))], opset=13)
    assert _ops(_low(tmp_path, m)) == ["DequantizeLinear", "Reshape", "QuantizeLinear"]


def test_integer_relu_and_pad_get_quantized_bounds(tmp_path):
    nodes = [M.node("DequantizeLinear", ["xq", "a_s", "a_z"], ["xf"], "dq"),
             M.node("Pad", ["xf", "pads", "value"], ["p"], "pad"),
             M.node("QuantizeLinear", ["p", "a_s", "a_z"], ["pq"], "q"),
             M.node("DequantizeLinear", ["pq", "a_s", "a_z"], ["pf"], "dq2"),
             M.node("Relu", ["pf"], ["r"], "relu"),
             M.node("QuantizeLinear", ["r", "a_s", "a_z"], ["rq"], "q2")]
    m = M.model(nodes, [M.vi("xq", [1, 4], TensorProto.INT8)], [M.vi("rq", [1, 6], TensorProto.INT8)],
                [*_q("a", 0.5, 10), M.const("pads", np.array([0, 1, 0, 1], np.int64)),
                 M.const("value", np.array(1.0, np.float32))], opset=13)
    lw = _low(tmp_path, m)
    assert _ops(lw) == ["Pad", "Clip"]
    assert lw.ops[0].attrs["value"] == 12 and lw.ops[0].inputs == ("xq", "pads")
    assert lw.ops[1].attrs == {"min": 10, "max": 127}


def test_a_dequantized_tensor_read_by_a_float_op_keeps_its_dequantize(tmp_path):
    """Residual: one DQ feeds an Add (fused) and a Tanh (float island): the DQ stays for the Tanh."""
    nodes = [M.node("DequantizeLinear", ["xq", "a_s", "a_z"], ["xf"], "dq"),
             M.node("Add", ["xf", "xf"], ["s"], "add"),
             M.node("QuantizeLinear", ["s", "a_s", "a_z"], ["sq"], "q"),
             M.node("Tanh", ["xf"], ["t"], "tanh")]
    m = M.model(nodes, [M.vi("xq", [1, 8], TensorProto.INT8)],
                [M.vi("sq", [1, 8], TensorProto.INT8), M.vi("t", [1, 8])], _q("a", 0.5), opset=13)
    lw = _low(tmp_path, m)
    assert _ops(lw) == ["DequantizeLinear", "QLinearAdd", "Tanh"]
    assert lw.ops[1].inputs == ("xq", "a_s", "a_z", "xq", "a_s", "a_z", "a_s", "a_z")


def test_concat_and_maxpool_lower(tmp_path):
    nodes = [M.node("DequantizeLinear", ["aq", "a_s", "a_z"], ["af"], "dqa"),
             M.node("DequantizeLinear", ["bq", "b_s", "b_z"], ["bf"], "dqb"),
             M.node("Concat", ["af", "bf"], ["c"], "concat", axis=1),
             M.node("QuantizeLinear", ["c", "a_s", "a_z"], ["cq"], "q"),
             M.node("DequantizeLinear", ["cq", "a_s", "a_z"], ["cf"], "dqc"),
             M.node("MaxPool", ["cf"], ["m"], "pool", kernel_shape=[2, 2], strides=[2, 2]),
             M.node("QuantizeLinear", ["m", "a_s", "a_z"], ["mq"], "q2")]
    int8 = TensorProto.INT8
    m = M.model(nodes, [M.vi("aq", [1, 2, 4, 4], int8), M.vi("bq", [1, 2, 4, 4], int8)],
                [M.vi("mq", [1, 4, 2, 2], int8)], [*_q("a", 0.5), *_q("b", 0.25)], opset=13)
    lw = _low(tmp_path, m)
    assert _ops(lw) == ["QLinearConcat", "MaxPool"]
    assert lw.ops[0].inputs == ("a_s", "a_z", "aq", "a_s", "a_z", "bq", "b_s", "b_z")
    assert lw.ops[1].inputs == ("cq",) and lw.integer_ops == 2


def test_float_models_are_unchanged_but_normalized(tmp_path):
    lw = _low(tmp_path, M.conv(pad=1))
    assert _ops(lw) == ["Conv"] and lw.qdq_fused == 0 and lw.integer_ops == 0
    assert lw.ops[0].attrs == {"kernel_shape": [3, 3], "strides": [1, 1], "dilations": [1, 1], "pads": [1, 1, 1, 1],
                               "auto_pad": "NOTSET", "group": 1}
    assert lw.ops[0].workspace == lowering.Workspace(full=4 * 9 * 64, row=4 * 9 * 8)


def test_clip_bounds_come_from_constant_inputs(tmp_path):
    m = M.model([M.node("Clip", ["x", "lo", "hi"], ["y"], "clip")], [M.vi("x", [4])], [M.vi("y", [4])],
                [M.const("lo", np.array(-1.5, np.float32)), M.const("hi", np.array(6.0, np.float32))])
    assert _low(tmp_path, m).ops[0].attrs == {"min": -1.5, "max": 6.0}


def test_big_folded_constants_are_evaluated_on_demand(tmp_path):
    big = 300 * 300  # above onnx_fold.EVAL_LIMIT: folding keeps only its shape
    w = np.random.default_rng(1).standard_normal((300, 300)).astype(np.float32)
    m = M.model([M.node("Mul", ["w", "two"], ["w2"], "scale"), M.node("MatMul", ["x", "w2"], ["y"], "mm")],
                [M.vi("x", [1, 300])], [M.vi("y", [1, 300])],
                [M.const("w", w), M.const("two", np.array(2.0, np.float32))])
    lw = _low(tmp_path, m)
    assert _ops(lw) == ["MatMul"] and lw.constants["w2"].shape == (300, 300) and big > 65536
    np.testing.assert_array_equal(lw.value("w2"), w * 2)


def test_code_generation_needs_no_onnxruntime(tmp_path):
    """A model with folded constants (a computed Reshape target, a computed weight) generates its
    tables in a Python where onnxruntime cannot be imported."""
    m = M.shape_chain()
    path = M.save(m, tmp_path / "m.onnx")
    code = ("import sys; sys.modules['onnxruntime'] = None; sys.path.insert(0, 'tests'); import fwbuild;"
            "from arena_tool.plan import plancheck; from arena_tool.emit import codegen;"
            f"p = {path!r}; d = fwbuild.plan(p, 'optimal');"
            "h, c = codegen.model_sources(d, plancheck.lowered_model(p, d), 't');"
            "import onnxruntime")  # proves the hiding works: this last import must fail
    r = subprocess.run([sys.executable, "-c", code], cwd=str(M.Path(__file__).resolve().parents[2]),
                       capture_output=True, text=True)
    assert "import of onnxruntime halted" in r.stderr or "ModuleNotFoundError" in r.stderr, r.stderr
    assert r.stderr.count("Traceback") == 1 and "line 1, in <module>" in r.stderr
    assert "codegen" not in r.stderr.split("Traceback")[1].split("import onnxruntime")[0]


def test_plan_file_records_quantization_and_lowering(tmp_path):
    from arena_tool.plan import planners, planning

    path = M.save(qdq_conv(), tmp_path / "m.onnx")
    pm = planning.plan_model(path, ModelOptions(), "optimal", planners.Params())
    doc = pm.plan_file.to_json()  # as the file states it
    assert doc["integer_ops"] == 1 and doc["qdq_fused"] == 1
    conv = doc["schedule"][1]
    assert conv["op_type"] == "QLinearConv" and conv["domain"] == "" and len(conv["fused"]) == 2
    yq = next(b for b in doc["buffers"] if b["name"] == "yq")
    assert yq["dtype"] == "int8" and yq["quant"] == {"scale": [pytest.approx(0.1)], "zero_point": [-5], "axis": None}
    planfile.write(str(tmp_path / "p.json"), pm.plan_file)  # schema-valid
    assert plancheck.check(planfile.load(str(tmp_path / "p.json")), pm.mp, "p.json") == []


def test_lowered_qdq_runs_on_the_host_runtime_like_onnxruntime(tmp_path):
    """The lowered QDQ conv (QuantizeLinear, QLinearConv with the Relu as its output range,
    DequantizeLinear) runs from the generated tables in the C runtime and matches onnxruntime
    on the original QDQ model within one output step."""
    import fwbuild
    from arena_tool.run import verify

    path = M.save(qdq_conv(), tmp_path / "qdq.onnx")
    plan = fwbuild.plan(path, "optimal")
    assert [s.op_type for s in plan.schedule] == ["QuantizeLinear", "QLinearConv", "DequantizeLinear"]
    rc, text = fwbuild.run_host(fwbuild.build_host(tmp_path, fwbuild.generate(tmp_path, [("qdq", path, plan)])))
    assert rc == 0, text[-2000:]
    got = verify.parse_output(text).outputs["qdq"]["out"]
    ref = verify.reference(path, plan, ["out", "y"])
    assert ref["y"].min() < 0 < ref["y"].max(), "the Relu must clip something for this test to mean anything"
    assert np.max(np.abs(got - ref["out"].reshape(-1))) <= 0.1 + 1e-6
    assert got.min() >= 0.0  # (q - zp) * s with q >= zp: the absorbed Relu held


@pytest.mark.parametrize("op, attrs, lowered, domain", [
    ("Sigmoid", {}, "QLinearSigmoid", "com.microsoft"),
    ("LeakyRelu", {"alpha": 0.1}, "QLinearLeakyRelu", "com.microsoft"),
    ("HardSwish", {}, "QLinearHardSwish", "arena"),
    ("Softmax", {"axis": 1}, "QLinearSoftmax", "com.microsoft"),
    ("GlobalAveragePool", {}, "QLinearGlobalAveragePool", "com.microsoft"),
    ("AveragePool", {"kernel_shape": [2, 2], "strides": [2, 2]}, "QLinearAveragePool", "com.microsoft"),
])
def test_unary_qdq_ops_lower_to_their_qoperator_form(tmp_path, op, attrs, lowered, domain):
    x = [1, 4, 4, 4] if "Pool" in op else [1, 16]
    y = {"GlobalAveragePool": [1, 4, 1, 1], "AveragePool": [1, 4, 2, 2]}.get(op, x)
    nodes = [M.node("DequantizeLinear", ["xq", "a_s", "a_z"], ["xf"], "dq"),
             M.node(op, ["xf"], ["y"], "the_op", **attrs),
             M.node("QuantizeLinear", ["y", "b_s", "b_z"], ["yq"], "q")]
    m = M.model(nodes, [M.vi("xq", x, TensorProto.INT8)], [M.vi("yq", y, TensorProto.INT8)],
                [*_q("a", 0.5, 1), *_q("b", 0.25, -3)], opset=14)
    lw = _low(tmp_path, m)
    (only,) = lw.ops
    assert (only.op_type, only.domain, only.name) == (lowered, domain, "the_op")
    assert only.inputs == ("xq", "a_s", "a_z", "b_s", "b_z") and only.outputs == ("yq",)
    if op == "AveragePool":
        assert only.attrs["channels_last"] == 0 and only.attrs["pads"] == [0, 0, 0, 0]


@pytest.mark.parametrize("op", ["MatMul", "Gemm", "Mul"])
def test_binary_qdq_ops_with_a_quantized_weight_lower(tmp_path, op):
    w = np.arange(16, dtype=np.int8).reshape(4, 4)
    nodes = [M.node("DequantizeLinear", ["xq", "a_s", "a_z"], ["xf"], "dq"),
             M.node("DequantizeLinear", ["w", "w_s", "w_z"], ["wf"], "dqw"),
             M.node(op, ["xf", "wf"], ["y"], "the_op"),
             M.node("QuantizeLinear", ["y", "b_s", "b_z"], ["yq"], "q")]
    m = M.model(nodes, [M.vi("xq", [4, 4], TensorProto.INT8)], [M.vi("yq", [4, 4], TensorProto.INT8)],
                [*_q("a", 0.5, 1), *_q("b", 0.25, -3), M.const("w", w), *_q("w", 0.01)], opset=13)
    lw = _low(tmp_path, m)
    (only,) = lw.ops
    want = {"MatMul": "QLinearMatMul", "Gemm": "QGemm", "Mul": "QLinearMul"}[op]
    assert only.op_type == want
    if op == "Gemm":  # QGemm: A, a_s, a_z, B, b_s, b_z, C (absent), y_s, y_z
        assert only.inputs == ("xq", "a_s", "a_z", "w", "w_s", "w_z", "", "b_s", "b_z")
    else:
        assert only.inputs == ("xq", "a_s", "a_z", "w", "w_s", "w_z", "b_s", "b_z")
    assert set(lw.constants) == {"a_s", "a_z", "w", "w_s", "w_z", "b_s", "b_z"}  # no float weight


def test_split_between_equal_parameters_runs_on_integers(tmp_path):
    nodes = [M.node("DequantizeLinear", ["xq", "a_s", "a_z"], ["xf"], "dq"),
             helper_split := M.node("Split", ["xf", "sizes"], ["p", "r"], "split", axis=1),
             M.node("QuantizeLinear", ["p", "a_s", "a_z"], ["pq"], "q1"),
             M.node("QuantizeLinear", ["r", "a_s", "a_z"], ["rq"], "q2")]
    assert helper_split.op_type == "Split"
    int8 = TensorProto.INT8
    m = M.model(nodes, [M.vi("xq", [1, 8], int8)], [M.vi("pq", [1, 3], int8), M.vi("rq", [1, 5], int8)],
                [*_q("a", 0.5, 1), M.const("sizes", np.array([3, 5], np.int64))], opset=13)
    lw = _low(tmp_path, m)
    assert [(op.op_type, op.inputs, op.outputs) for op in lw.ops] == [("Split", ("xq", "sizes"), ("pq", "rq"))]
    assert lw.quant["rq"].zero_point == (1,) and lw.ops[0].fused and len(lw.ops[0].fused) == 2
