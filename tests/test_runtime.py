"""The C runtime, driven only by generated tables, computes what ONNX Runtime computes.

Each planner's plan of the four example models (three float32, one int8)
becomes one firmware (the models run one after another in a shared arena, as
in the example manifest).
It is built natively with AddressSanitizer + UBSan and, when the ARM
toolchain and QEMU exist, for mps2-an500 (Cortex-M7) and run under QEMU.
Outputs must match ONNX Runtime: float32 within 1e-4 relative to the
tensor's scale, int8 within one quantization step.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import onnx
import pytest
from conftest import require_tool
from onnx import TensorProto, helper, numpy_helper

import fwbuild
from arena_tool.plan import planners
from arena_tool.run import qemu, verify
from arena_tool.core.problem import ModelOptions

EXAMPLES = ("kws", "resnet8", "autoencoder", "kws_int8")
PLANNERS = [p for p in ("naive", "first_fit", "greedy_size", "optimal") if p in planners.PLANNERS]


def require_arm() -> None:
    """Skip without the Arm toolchain or QEMU; fail instead under ARENA_REQUIRE_TOOLS=1 (CI)."""
    require_tool("arm-none-eabi-gcc")
    require_tool("qemu-system-arm")


def close(got: np.ndarray, want: np.ndarray, rtol: float = 1e-4) -> bool:
    want = np.asarray(want, dtype=np.float32).reshape(-1)
    got = np.asarray(got, dtype=np.float32).reshape(-1)
    scale = float(np.max(np.abs(want))) if want.size else 0.0
    return got.shape == want.shape and bool(np.allclose(got, want, rtol=rtol, atol=rtol * scale))


def quant_step(model: onnx.ModelProto, name: str) -> float | None:
    """The quantization step of a graph output: the scale of the DequantizeLinear that makes it
    (None: a float output)."""
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type == "DequantizeLinear" and node.output[0] == name:
            return float(np.max(inits[node.input[1]]))
    return None


def assert_matches(text: str, models: list[tuple[str, str, dict]]) -> None:
    """Every model ran (status 0) and each output equals ONNX Runtime's: int8 within one step,
    a dequantized output within one step of its scale, float32 within 1e-4 relative."""
    run = verify.parse_output(text)
    for sym, path, doc in models:
        assert run.status.get(sym) == 0, text[-2000:]
        ref = verify.reference(path, doc)
        model = onnx.load(path)
        graph_outputs = [o.name for o in model.graph.output]
        assert sorted(run.outputs[sym]) == sorted(graph_outputs)
        for name in graph_outputs:
            got, want = run.outputs[sym][name], ref[name].reshape(-1)
            step = quant_step(model, name)
            if want.dtype in (np.int8, np.uint8):
                assert np.max(np.abs(got.astype(np.int32) - want.astype(np.int32))) <= 1, (sym, name, got, want)
            elif step is not None:
                assert got.shape == want.shape and np.max(np.abs(got - want)) <= step * (1 + 1e-6), (sym, name, got, want)
            else:
                assert close(got, want), (sym, name, got[:8], want[:8])


@pytest.fixture(scope="module", params=PLANNERS)
def example_build(request, tmp_path_factory):
    """(planner, models, generated dir, generated sources) for one planner's plan of every example model."""
    planner = request.param
    models = []
    for m in EXAMPLES:
        path = str(fwbuild.MODELS / f"{m}.onnx")
        models.append((m, path, fwbuild.plan(path, planner)))
    out = tmp_path_factory.mktemp(f"fw_{planner}")
    return planner, models, out, fwbuild.generate(out, models, "mps2_an500")


def test_host_sanitizer_build_matches_onnxruntime(example_build):
    _, models, out, gen = example_build
    rc, text = fwbuild.run_host(fwbuild.build_host(out, gen))
    assert rc == 0, text[-3000:]
    assert_matches(text, models)


def test_qemu_mps2_an500_matches_onnxruntime(example_build):
    require_arm()
    _, models, out, gen = example_build
    arena = max(d.arena_size for _, _, d in models)
    elf = fwbuild.build_elf(out, gen, "mps2_an500", arena)
    rc, text = qemu.run(str(elf), "mps2-an500", timeout=60)
    assert rc == 0, text[-3000:]
    assert_matches(text, models)
    assert set(verify.parse_output(text).ticks) == set(EXAMPLES)


def test_qemu_mps2_an386_single_precision_fpu(tmp_path):
    require_arm()
    models = []
    for name in ("kws", "kws_int8"):
        path = str(fwbuild.MODELS / f"{name}.onnx")
        models.append((name, path, fwbuild.plan(path, PLANNERS[-1])))
    gen = fwbuild.generate(tmp_path, models, "mps2_an386")
    elf = fwbuild.build_elf(tmp_path, gen, "mps2_an386", max(d.arena_size for _, _, d in models))
    rc, text = qemu.run(str(elf), "mps2-an386", timeout=60)
    assert rc == 0, text[-3000:]
    assert_matches(text, models)


@pytest.mark.parametrize("scratch", ["row", "full"])
def test_im2col_workspace_from_the_plan(tmp_path, scratch):
    """Convs with a planned workspace run im2col in it (the arena holds it) and agree."""
    models = []
    for m in ("kws", "resnet8"):
        path = str(fwbuild.MODELS / f"{m}.onnx")
        doc = fwbuild.plan(path, "naive" if "greedy_size" not in PLANNERS else "greedy_size",
                           ModelOptions(scratch=scratch))
        assert any(s.workspace for s in doc.schedule)
        models.append((m, path, doc))
    rc, text = fwbuild.run_host(fwbuild.build_host(tmp_path, fwbuild.generate(tmp_path, models)))
    assert rc == 0, text[-3000:]
    assert_matches(text, models)


# --- ops the example models do not use, in small models built here ---------

def _init(name: str, arr: np.ndarray) -> TensorProto:
    return numpy_helper.from_array(arr, name)


def ops_float_model(path: Path) -> None:
    """Conv, BatchNorm, LeakyRelu, padded MaxPool, grouped+dilated and depthwise Conv, Sigmoid,
    AveragePool (count_include_pad), Concat, broadcast Mul/Sub/Div, GlobalMaxPool,
    GlobalAveragePool, Flatten, MatMul, Softmax."""
    rng = np.random.default_rng(7)
    f = lambda *s: rng.standard_normal(s).astype(np.float32) * 0.5  # noqa: E731
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
        helper.make_node("BatchNormalization", ["c1", "bn_s", "bn_b", "bn_m", "bn_v"], ["bn"], epsilon=1e-3),
        helper.make_node("LeakyRelu", ["bn"], ["l1"], alpha=0.1),
        helper.make_node("MaxPool", ["l1"], ["m1"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["m1", "w2"], ["g1"], group=2, dilations=[2, 2], pads=[2, 2, 2, 2]),
        helper.make_node("Conv", ["m1", "w3", "b3"], ["dw"], group=8, pads=[1, 1, 1, 1]),
        helper.make_node("Sigmoid", ["g1"], ["s1"]),
        helper.make_node("AveragePool", ["l1"], ["a1"], kernel_shape=[2, 2], strides=[2, 2], pads=[0, 0, 1, 1],
                         count_include_pad=1),
        helper.make_node("Concat", ["s1", "dw", "a1"], ["cat"], axis=1),
        helper.make_node("Mul", ["cat", "k24"], ["mul"]),
        helper.make_node("Sub", ["mul", "k1"], ["sub"]),
        helper.make_node("Div", ["sub", "k4"], ["div"]),
        helper.make_node("GlobalMaxPool", ["div"], ["gmp"]),
        helper.make_node("GlobalAveragePool", ["div"], ["gap"]),
        helper.make_node("Add", ["gmp", "gap"], ["gsum"]),
        helper.make_node("Flatten", ["gsum"], ["flat"]),
        helper.make_node("MatMul", ["flat", "wm"], ["mm"]),
        helper.make_node("Softmax", ["mm"], ["probs"]),
    ]
    inits = [_init("w1", f(8, 4, 3, 3)), _init("b1", f(8)), _init("bn_s", f(8)), _init("bn_b", f(8)),
             _init("bn_m", f(8)), _init("bn_v", np.abs(f(8)) + 0.5), _init("w2", f(8, 4, 3, 3)),
             _init("w3", f(8, 1, 3, 3)), _init("b3", f(8)), _init("k24", f(24, 1, 1)),
             _init("k1", np.array(0.25, np.float32)), _init("k4", np.abs(f(1, 1, 4)) + 0.5), _init("wm", f(24, 10))]
    graph = helper.make_graph(nodes, "ops_float", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
                              [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [1, 10]),
                               helper.make_tensor_value_info("cat", TensorProto.FLOAT, [1, 24, 4, 4])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))


def ops_legacy_model(path: Path) -> None:
    """Opset 11: two inputs, legacy (flattening) Softmax, Clip with constant min/max inputs,
    Unsqueeze/Squeeze/Reshape views, batched MatMul, Gemm with transB/alpha/beta, 1-D Conv (SAME_UPPER)."""
    rng = np.random.default_rng(11)
    f = lambda *s: rng.standard_normal(s).astype(np.float32) * 0.5  # noqa: E731
    nodes = [
        helper.make_node("Softmax", ["x"], ["sm"], axis=1),
        helper.make_node("Clip", ["sm", "lo", "hi"], ["cl"]),
        helper.make_node("Unsqueeze", ["cl"], ["un"], axes=[0]),
        helper.make_node("Squeeze", ["un"], ["sq"], axes=[0]),
        helper.make_node("MatMul", ["sq", "wb"], ["bm"]),
        helper.make_node("Reshape", ["bm", "shape"], ["r2"]),
        helper.make_node("Gemm", ["r2", "wg", "cg"], ["gm"], transB=1, alpha=0.5, beta=2.0),
        helper.make_node("Relu", ["gm"], ["gr"]),
        helper.make_node("Conv", ["y", "w1d", "b1d"], ["c1d"], strides=[2], auto_pad="SAME_UPPER"),
    ]
    inits = [_init("lo", np.array(0.05, np.float32)), _init("hi", np.array(0.2, np.float32)), _init("wb", f(5, 4)),
             _init("shape", np.array([6, 4], np.int64)), _init("wg", f(3, 4)), _init("cg", f(3)),
             _init("w1d", f(3, 2, 3)), _init("b1d", f(3))]
    graph = helper.make_graph(nodes, "ops_legacy",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 5]),
                               helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 7])],
                              [helper.make_tensor_value_info("gr", TensorProto.FLOAT, [6, 3]),
                               helper.make_tensor_value_info("c1d", TensorProto.FLOAT, [1, 3, 4])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)]), str(path))


def quant_model(path: Path) -> None:
    """QuantizeLinear -> QLinearConv (per-channel weights) -> DequantizeLinear -> Relu -> Flatten
    -> QuantizeLinear -> QLinearMatMul -> DequantizeLinear; int8 activations throughout."""
    rng = np.random.default_rng(3)
    i8 = lambda *s: rng.integers(-100, 100, s).astype(np.int8)  # noqa: E731
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
        helper.make_node("QLinearConv", ["xq", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"], ["yq"], pads=[1, 1, 1, 1],
                         strides=[2, 2]),
        helper.make_node("DequantizeLinear", ["yq", "ys", "yz"], ["yf"]),
        helper.make_node("Relu", ["yf"], ["yr"]),
        helper.make_node("Flatten", ["yr"], ["fl"]),
        helper.make_node("QuantizeLinear", ["fl", "fs", "fz"], ["fq"]),
        helper.make_node("QLinearMatMul", ["fq", "fs", "fz", "m", "ms", "mz", "os", "oz"], ["oq"]),
        helper.make_node("DequantizeLinear", ["oq", "os", "oz"], ["out"]),
    ]
    inits = [_init("xs", np.array(0.01, np.float32)), _init("xz", np.array(3, np.int8)), _init("w", i8(4, 2, 3, 3)),
             _init("ws", np.array([0.002, 0.003, 0.001, 0.004], np.float32)), _init("wz", np.zeros(4, np.int8)),
             _init("ys", np.array(0.05, np.float32)), _init("yz", np.array(-2, np.int8)),
             _init("b", rng.integers(-500, 500, 4).astype(np.int32)), _init("fs", np.array(0.04, np.float32)),
             _init("fz", np.array(-128, np.int8)), _init("m", i8(36, 5)), _init("ms", np.array(0.003, np.float32)),
             _init("mz", np.array(0, np.int8)), _init("os", np.array(0.08, np.float32)),
             _init("oz", np.array(1, np.int8))]
    graph = helper.make_graph(nodes, "quant", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 6, 6])],
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 5]),
                               helper.make_tensor_value_info("yq", TensorProto.INT8, [1, 4, 3, 3])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))


@pytest.fixture(scope="module")
def op_models(tmp_path_factory):
    d = tmp_path_factory.mktemp("op_models")
    for name, make in (("ops_float", ops_float_model), ("ops_legacy", ops_legacy_model), ("quant", quant_model)):
        make(d / f"{name}.onnx")
    return d


@pytest.mark.parametrize("planner", ["naive", "greedy_size" if "greedy_size" in PLANNERS else "naive"])
def test_op_coverage_models_match_onnxruntime(op_models, tmp_path, planner):
    models = []
    for name in ("ops_float", "ops_legacy", "quant"):
        path = str(op_models / f"{name}.onnx")
        models.append((name, path, fwbuild.plan(path, planner, ModelOptions(scratch="row"))))
    rc, text = fwbuild.run_host(fwbuild.build_host(tmp_path, fwbuild.generate(tmp_path, models)))
    assert rc == 0, text[-3000:]
    run = verify.parse_output(text)
    for sym, path, doc in models:
        ref = verify.reference(path, doc)
        assert run.status[sym] == 0
        assert sorted(run.outputs[sym]) == sorted(o.name for o in onnx.load(path).graph.output)
        for name, got in run.outputs[sym].items():
            want = ref[name].reshape(-1)
            if want.dtype == np.int8:  # quantized: within one step
                assert np.max(np.abs(got.astype(np.int32) - want.astype(np.int32))) <= 1, (sym, name)
            elif sym == "quant":  # dequantized: within one output step (0.08)
                assert np.max(np.abs(got - want)) <= 0.08 + 1e-6, (sym, name, got, want)
            else:
                assert close(got, want), (sym, name, got[:8], want[:8])


def test_unsupported_op_fails_at_run_time_with_its_name(tmp_path):
    """A table row for an op the runtime lacks: the build links, the run says which op."""
    graph = helper.make_graph([helper.make_node("Sin", ["x"], ["y"], name="the_sin")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    path = tmp_path / "sin.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    models = [("sin", str(path), fwbuild.plan(str(path), "naive"))]
    rc, text = fwbuild.run_host(fwbuild.build_host(tmp_path, fwbuild.generate(tmp_path, models)))
    assert rc == 10, text
    assert "error sin op 0 Sin the_sin code 10" in text


def test_host_build_catches_a_wrong_offset_with_the_sanitizer(tmp_path):
    """An arena tensor placed past the model's arena is refused by the bounds check (code 12)."""
    path = str(fwbuild.MODELS / "autoencoder.onnx")
    doc = fwbuild.edited(fwbuild.plan(path, "naive"), lambda d: d["buffers"][-1].update(offset=d["arena_size"]))
    rc, text = fwbuild.run_host(fwbuild.build_host(tmp_path, fwbuild.generate(tmp_path, [("ae", path, doc)])))
    assert rc == 12 and "status ae 12" in text, text


def test_build_failure_is_reported(tmp_path):
    """fwbuild raises on a compile error (guards the helpers the other tests rely on)."""
    bad = tmp_path / "bad.c"
    bad.write_text("int x = ;\n")
    with pytest.raises(subprocess.CalledProcessError):
        fwbuild.build_host(tmp_path, [bad])


def test_lrn_matches_onnxruntime(tmp_path):
    """LRN (inception_v1, alexnet, zfnet512): several sizes (onnxruntime takes odd ones, 4-D), large inputs
    (the power goes through the runtime's own exp and log)."""
    models = []
    for i, (shape, size, alpha, beta, bias, scale) in enumerate([
            ((1, 6, 5, 5), 5, 1e-4, 0.75, 1.0, 1.0), ((2, 4, 3, 3), 1, 0.3, 0.5, 2.0, 10.0),
            ((1, 7, 2, 9), 3, 1.0, 1.5, 0.5, 100.0)]):
        nodes = [helper.make_node("Mul", ["x", "k"], ["xs"]),
                 helper.make_node("LRN", ["xs"], ["y"], size=size, alpha=alpha, beta=beta, bias=bias)]
        graph = helper.make_graph(nodes, "lrn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(shape))],
                                  [numpy_helper.from_array(np.array(scale, np.float32), "k")])
        path = tmp_path / f"lrn{i}.onnx"
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
        models.append((f"lrn{i}", str(path), fwbuild.plan(str(path), "greedy_size")))
    rc, text = fwbuild.run_host(fwbuild.build_host(tmp_path, fwbuild.generate(tmp_path, models)))
    assert rc == 0, text[-2000:]
    run = verify.parse_output(text)
    for sym, path, doc in models:
        want = verify.reference(path, doc)["y"]
        assert close(run.outputs[sym]["y"], want), sym
