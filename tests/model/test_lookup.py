"""lowering's QLinearLookup: an int8/uint8 element-wise chain (DequantizeLinear -> float ops ->
QuantizeLinear, and a hard-swish's x * HardSigmoid(x) as onnxruntime's quantizer writes it, QDQ
and QOperator) is one 256-entry table, equal to onnxruntime's run of the chain for every input code."""

from __future__ import annotations

from typing import Callable

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

import models as M
from arena_tool.model import lowering

I8, U8 = TensorProto.INT8, TensorProto.UINT8
MS = "com.microsoft"


def _qp(name: str, scale: float, zp: int, dt: int) -> list[onnx.TensorProto]:
    return [M.const(f"{name}_s", np.array(scale, np.float32)),
            M.const(f"{name}_z", np.array(zp, np.int8 if dt == I8 else np.uint8))]


def _dq(x: str, p: str, y: str) -> onnx.NodeProto:
    return M.node("DequantizeLinear", [x, f"{p}_s", f"{p}_z"], [y])


def _q(x: str, p: str, y: str) -> onnx.NodeProto:
    return M.node("QuantizeLinear", [x, f"{p}_s", f"{p}_z"], [y])


def hard_sigmoid(dt: int) -> tuple[list[onnx.NodeProto], list[str]]:
    return [_dq("xq", "x", "xf"), M.node("HardSigmoid", ["xf"], ["h"], alpha=1 / 6, beta=0.5), _q("h", "y", "yq")], []


def leaky_clip(dt: int) -> tuple[list[onnx.NodeProto], list[str]]:
    """Clip, then LeakyRelu."""
    return [_dq("xq", "x", "xf"), M.node("Clip", ["xf", "lo", "hi"], ["a"]), M.node("LeakyRelu", ["a"], ["b"], alpha=0.3),
            _q("b", "y", "yq")], ["lo", "hi"]


def relu(dt: int) -> tuple[list[onnx.NodeProto], list[str]]:
    """A Relu between other parameters (between equal ones it is an integer Clip)."""
    return [_dq("xq", "x", "xf"), M.node("Relu", ["xf"], ["a"]), _q("a", "y", "yq")], []


def requantize(dt: int) -> tuple[list[onnx.NodeProto], list[str]]:
    return [_dq("xq", "x", "xf"), _q("xf", "y", "yq")], []


def hard_swish_qdq(dt: int) -> tuple[list[onnx.NodeProto], list[str]]:
    """onnxruntime's QDQ HardSwish: x * Q(HardSigmoid(x)), the Mul between DQ and Q."""
    return [_dq("xq", "x", "xf"), M.node("HardSigmoid", ["xf"], ["h"], alpha=1 / 6, beta=0.5), _q("h", "h", "hq"),
            _dq("hq", "h", "hf"), M.node("Mul", ["xf", "hf"], ["m"]), _q("m", "y", "yq")], ["h_s", "h_z"]


def hard_swish_qoperator(dt: int) -> tuple[list[onnx.NodeProto], list[str]]:
    """onnxruntime's QOperator HardSwish: QLinearMul(x, Q(HardSigmoid(DQ(x))))."""
    return [_dq("xq", "x", "xf"), M.node("HardSigmoid", ["xf"], ["h"], alpha=1 / 6, beta=0.5), _q("h", "h", "hq"),
            helper.make_node("QLinearMul", ["hq", "h_s", "h_z", "xq", "x_s", "x_z", "y_s", "y_z"], ["yq"], domain=MS)], \
        ["h_s", "h_z"]


CHAINS: dict[str, Callable[[int], tuple[list[onnx.NodeProto], list[str]]]] = {
    f.__name__: f for f in (hard_sigmoid, leaky_clip, relu, requantize, hard_swish_qdq, hard_swish_qoperator)}


def _model(chain: str, dt: int, seed: int) -> onnx.ModelProto:
    """The chain over a [2, 128] tensor, scales and zero points drawn from ``seed``."""
    rng = np.random.default_rng(seed)
    lo, hi = (-128, 128) if dt == I8 else (0, 256)
    nodes, extra = CHAINS[chain](dt)
    decimal = seed % 2 == 0  # round scales (0.05, 0.04 ...) make exact ties, where rounding order shows
    xs = float(rng.choice([0.05, 0.1, 0.02, 0.04])) if decimal else float(np.exp(rng.uniform(np.log(5e-3), np.log(0.1))))
    x = _qp("x", xs, int(rng.integers(lo, hi)), dt)
    if chain == "hard_sigmoid":  # outputs in [0, 1]
        y = _qp("y", float(rng.uniform(1 / 400, 1 / 150)), lo + int(rng.integers(0, 20)), dt)
    else:
        ys = float(rng.choice([0.04, 0.02, 0.05, 0.03])) if decimal else float(np.exp(rng.uniform(np.log(5e-3),
                                                                                                 np.log(0.05))))
        y = _qp("y", ys, int(rng.integers(lo + 64, hi - 64)), dt)
    inits = [*x, *y]
    if "h_s" in extra:
        inits += _qp("h", 1 / 256 if seed % 4 == 1 else 1 / 255, lo, dt)
    if "lo" in extra:
        inits += [M.const("lo", np.array(-3.0, np.float32)), M.const("hi", np.array(2.6, np.float32))]
    m = M.model(nodes, [M.vi("xq", [2, 128], dt)], [M.vi("yq", [2, 128], dt)], inits, opset=13)
    m.opset_import.append(helper.make_opsetid(MS, 1))
    return m


def _run(m: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    opts.log_severity_level = 3
    s = ort.InferenceSession(m.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    return np.asarray(s.run(["yq"], {"xq": x})[0])


@pytest.mark.parametrize("dt", [I8, U8], ids=["int8", "uint8"])
@pytest.mark.parametrize("chain", sorted(CHAINS))
def test_a_chain_is_one_table_equal_to_onnxruntime_for_every_code(tmp_path, chain, dt):
    np_dt = np.int8 if dt == I8 else np.uint8
    x = np.arange(256, dtype=np.uint8).view(np_dt).reshape(2, 128)
    for seed in range(6):
        m = _model(chain, dt, seed)
        lw = lowering.load(M.save(m, tmp_path / f"{chain}{seed}.onnx"))
        assert [(op.op_type, op.inputs[0], op.outputs) for op in lw.ops] == [("QLinearLookup", "xq", ("yq",))]
        assert lw.qdq_fused >= 1 and lw.quant["yq"].scale == (pytest.approx(float(lw.value("y_s"))),)
        table = np.array(lw.ops[0].attrs["table"], np.uint8)
        got = table[x.view(np.uint8)].view(np_dt)
        lowered = _run(lowering.to_onnx(lw), x)  # the reference arena-tool run compares with
        assert np.array_equal(got, lowered), (chain, seed, np.flatnonzero(got != lowered))
        original = _run(m, x)
        if chain == "hard_swish_qdq":  # a float Mul there, QLinearMul in the lowering: one step apart at most
            assert np.abs(got.astype(int) - original.astype(int)).max() <= 1
        else:
            assert np.array_equal(got, original), (chain, seed)
        assert len(np.unique(got)) > 8, "the chain should spread the codes for this test to mean anything"


def test_a_tensor_read_elsewhere_stops_the_chain(tmp_path):
    """The HardSigmoid's float output is also a graph output: it must stay float, nothing folds."""
    nodes, _ = hard_sigmoid(I8)
    m = M.model(nodes, [M.vi("xq", [4], I8)], [M.vi("yq", [4], I8), M.vi("h", [4])],
                [*_qp("x", 0.05, 3, I8), *_qp("y", 1 / 256, -128, I8)], opset=13)
    lw = lowering.load(M.save(m, tmp_path / "m.onnx"))
    assert [op.op_type for op in lw.ops] == ["DequantizeLinear", "HardSigmoid", "QuantizeLinear"]


@pytest.mark.parametrize("dt", [I8, U8], ids=["int8", "uint8"])
def test_a_pair_that_cancels_is_a_view(tmp_path, dt):
    """DequantizeLinear -> QuantizeLinear of equal parameters (a channel shuffle's leftovers) is an
    Identity on the integers, equal to onnxruntime for every code; other parameters: a lookup."""
    np_dt = np.int8 if dt == I8 else np.uint8
    x = np.arange(256, dtype=np.uint8).view(np_dt).reshape(2, 128)
    for y_zp, want in ((5, "Identity"), (6, "QLinearLookup")):
        m = M.model(requantize(dt)[0], [M.vi("xq", [2, 128], dt)], [M.vi("yq", [2, 128], dt)],
                    [*_qp("x", 0.037, 5, dt), *_qp("y", 0.037, y_zp, dt)], opset=13)
        lw = lowering.load(M.save(m, tmp_path / f"m{y_zp}.onnx"))
        assert [(op.op_type, op.inputs[0], op.outputs) for op in lw.ops] == [(want, "xq", ("yq",))]
        assert np.array_equal(_run(lowering.to_onnx(lw), x), _run(m, x))
        if want == "Identity":
            assert np.array_equal(_run(m, x), x)
