"""model/tflite_lower.py: a .tflite lowered for arena's runtime with TFLite's own arithmetic (the
multipliers, ranges and paddings TFLite computes at Prepare), and what it refuses. The kernels are
compared with TFLite Micro bit for bit in tests/run/test_tflite_arena.py."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from arena_tool.core.errors import ArenaError
from arena_tool.core.problem import ModelOptions
from arena_tool.emit import runtime_support
from arena_tool.model import liveness, tflite_lower
from conftest import require_shared
from tflite_models import MLPERF, chain_model, save
from tflite_ops import Model, random_more_ops_model, random_ops_model

ARENA = ModelOptions(kernels="arena")


def test_quantize_multiplier_is_tflites() -> None:
    """Q31 significand rounded half away from zero, 2^31 folded into the shift, tiny ones flushed to 0."""
    q = tflite_lower.quantize_multiplier
    assert q(0.5) == (1 << 30, 0) and q(1.0) == (1 << 30, 1) and q(0.0) == (0, 0)
    assert q(0.75) == (3 << 29, 0) and q(3.0) == (3 << 29, 2)
    assert q(1.0 - 2.0 ** -33) == (1 << 30, 1)  # rounds up to 2^31: halved, shift + 1
    assert q(2.0 ** -40) == (0, 0)  # shift < -31
    m, s = q(0.1)
    assert abs(m * 2.0 ** (s - 31) - 0.1) < 2.0 ** -32
    assert tflite_lower.round_away(2.5) == 3 and tflite_lower.round_away(-2.5) == -3
    assert tflite_lower.round_away(0.49999999999999994) == 0 and tflite_lower.round_away(-0.5) == -1


def test_softmax_and_activation_parameters_are_tflites() -> None:
    """PreprocessSoftmaxScaling + CalculateInputRadius (VWW's softmax: beta 1, scale 0.1118...), and
    CalculateActivationRangeQuantized's float32 division rounded half away from zero."""
    mult, shift, diff_min = tflite_lower.softmax_params(1.0, 0.5)
    assert (mult, shift) == (1 << 30, 26) and diff_min == -math.floor(31 * 2.0 ** 26 / 2.0 ** 26)
    assert tflite_lower.activation_range(0, 0.1, 5) == (-128, 127)
    assert tflite_lower.activation_range(1, 0.1, -128) == (-128, 127)
    assert tflite_lower.activation_range(3, 0.05, -128) == (-128, -8)  # 6 / 0.05 = 120
    assert tflite_lower.activation_range(3, 0.048, -128) == (-128, -3)  # 6 / 0.048 = 125
    assert tflite_lower.activation_range(2, 0.4, 0) == (-3, 3)  # 1 / 0.4 is 2.5 in float32 (2.49999996 in double): away
    assert tflite_lower.activation_range(2, 0.5, 0) == (-2, 2)


def test_random_op_model_lowers_every_builtin_to_its_kernel(tmp_path: Path) -> None:
    lw = liveness.lower(save(tmp_path, "ops.tflite", random_ops_model(0)), ARENA)
    assert [op.op_type for op in lw.ops] == ["TflConv2D", "TflDepthwiseConv2D", "TflAveragePool2D", "TflAdd", "TflMul",
                                             "Reshape", "TflFullyConnected", "TflSoftmax"]
    assert runtime_support.gaps(lw) == []
    conv = lw.ops[0]
    rq = lw.value(conv.inputs[3])
    w = lw.constants[conv.inputs[1]]
    assert rq.dtype == np.int32 and rq.shape == (w.shape[0], 2)  # (multiplier, shift) per output channel
    assert set(lw.quant) >= {"x", "conv_y", "softmax_y"}


def test_an_op_without_a_kernel_is_refused_one_line_each(tmp_path: Path) -> None:
    m = Model()
    x = m.tensor("x", "INT8", [1, 8], scale=[0.1], zp=[0])
    y = m.tensor("y", "INT8", [1, 8], scale=[0.1], zp=[0])
    z = m.tensor("z", "INT8", [1, 8], scale=[0.1], zp=[0])
    m.op("EXP", [x], [y])
    m.op("RSQRT", [y], [z])
    lw = liveness.lower(save(tmp_path, "act.tflite", m.pack([x], [z])), ARENA)
    gaps = runtime_support.gaps(lw)
    assert [(g.index, g.name, g.op_type) for g in gaps] == [(0, "y", "EXP"), (1, "z", "RSQRT")]
    assert gaps[0].message("act") == ("model act: op 0 'y' (EXP) cannot run on arena's runtime: the runtime has "
                                      "no kernel for this op")


def test_the_more_ops_lower_to_their_kernels(tmp_path: Path) -> None:
    """MAX_POOL_2D, MEAN, QUANTIZE/DEQUANTIZE: TFLite kernels; LOGISTIC, TANH, HARD_SWISH and an int8
    requantization: tables; PAD, TRANSPOSE, STRIDED_SLICE, CONCATENATION: arena's generic moves."""
    lw = liveness.lower(save(tmp_path, "more.tflite", random_more_ops_model(3)), ARENA)
    assert runtime_support.gaps(lw) == []
    kinds = [op.op_type for op in lw.ops]
    assert kinds[:6] == ["TflMaxPool2D", "TflMean", "Pad", "Transpose", "Slice", "Concat"]
    assert kinds[-7:] == ["TflLookup"] * 4 + ["TflDequantize", "TflQuantize", "Pad"]


def test_an_op_it_lowers_refused_for_its_parameters_says_why(tmp_path: Path) -> None:
    """LOGISTIC whose output zero point is not TFLM's -128, CONCATENATION of differently quantized inputs,
    int8 pools whose output is quantized unlike their input (TFLM's Prepare refuses them)."""
    m = Model()
    x = m.tensor("x", "INT8", [1, 8], scale=[0.1], zp=[0])
    y = m.tensor("y", "INT8", [1, 8], scale=[1 / 256], zp=[0])
    z = m.tensor("z", "INT8", [1, 16], scale=[0.1], zp=[0])
    m.op("LOGISTIC", [x], [y])
    m.op("CONCATENATION", [x, y], [z], "ConcatenationOptions", axis=1)
    img = m.tensor("img", "INT8", [1, 4, 4, 2], scale=[0.1], zp=[3])
    pools = [m.tensor(f"p{i}", "INT8", [1, 2, 2, 2], scale=[s], zp=[zp])
             for i, (s, zp) in enumerate([(0.2, 3), (0.1, 4), (0.1 + 1e-8, 3)])]
    for kind, out in zip(("AVERAGE_POOL_2D", "MAX_POOL_2D", "MAX_POOL_2D"), pools):
        m.op(kind, [img], [out], "Pool2DOptions", padding=1, strideW=2, strideH=2, filterWidth=2, filterHeight=2)
    gaps = runtime_support.gaps(liveness.lower(save(tmp_path, "why.tflite", m.pack([x, img], [z, *pools])), ARENA))
    assert [g.why for g in gaps] == [
        "arena runs TFLite's LOGISTIC, not this one: its output zero point is 0; TFLM's int8 LOGISTIC requires -128",
        "arena runs TFLite's CONCATENATION, not this one: its int8 inputs and output are quantized differently "
        "(TFLM requires them equal)",
        "arena runs TFLite's AVERAGE_POOL_2D, not this one: its int8 input and output are quantized differently "
        "(scale 0.1 zero point 3 -> 0.2 3; TFLM requires them equal)",
        "arena runs TFLite's MAX_POOL_2D, not this one: its int8 input and output are quantized differently "
        "(scale 0.1 zero point 3 -> 0.1 4; TFLM requires them equal)"]  # the third pool's 1e-8 is within TFLM's 1e-6


def test_kernels_arena_plans_the_lowered_model_tflm_kernels_plan_tflms(tmp_path: Path) -> None:
    """The same .tflite: planned for TFLM (its head, no aliasing) or for arena's runtime (an arena plan:
    RESHAPE a view); KWS needs TFLM's 16,000 B head either way, without TFLM's tail on arena's runtime."""
    kws = str(require_shared(MLPERF / "keyword_spotting__kws_ref_model.tflite"))
    tflm = liveness.model_problem(kws, ModelOptions())
    arena = liveness.model_problem(kws, ModelOptions(kernels="arena"))
    assert getattr(tflm, "kind", "onnx") == "tflite" and getattr(arena, "kind", "onnx") == "onnx"
    assert any(t.alias_of for t in arena.tensors) and not any(t.alias_of for t in tflm.tensors)
    with pytest.raises(ArenaError, match="io: int8 does not apply to a .tflite model on arena's runtime"):
        liveness.lower(kws, ModelOptions(kernels="arena", io="int8"))
    path = save(tmp_path, "chain.tflite", chain_model())
    lw = liveness.lower(path, ARENA)
    assert runtime_support.gaps(lw) == [] and [op.op_type for op in lw.ops] == ["TflAddF32", "TflMulF32", "TflAddF32"]
    m = Model()
    x = m.tensor("x", "INT16", [1, 8], scale=[0.1], zp=[0])
    y = m.tensor("y", "INT16", [1, 8], scale=[0.1], zp=[0])
    m.op("ADD", [x, x], [y], "AddOptions")
    gaps = runtime_support.gaps(liveness.lower(save(tmp_path, "i16.tflite", m.pack([x], [y])), ARENA))
    assert [g.why for g in gaps] == ["the runtime runs TFLite's ADD on int8 and float32 tensors, this one is int16"]


def test_patches_and_caller_io_on_a_tflite_planned_for_tflm_point_to_arenas_runtime(tmp_path: Path) -> None:
    """Planned for TFLM (its kernels), patches and io_buffers stay refused, and the hint names the runtime
    that takes them (--kernels arena); on arena's runtime both lower, io: int8 alone is refused."""
    path = save(tmp_path, "chain.tflite", chain_model())
    for key, value in (("patches", "auto"), ("io_buffers", "caller")):
        with pytest.raises(ArenaError) as e:
            liveness.model_problem(path, ModelOptions(**{key: value}))
        assert e.value.field == key and "--kernels arena" in (e.value.hint or "")
        assert liveness.model_problem(path, ModelOptions(kernels="arena", **{key: value})).tensors


def test_a_plan_for_arenas_runtime_is_not_written_into_the_model_or_verified_in_tflm(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """plan -o X.tflite (TFLM's offline plan) and verify (TFLM's host interpreter) of a --kernels arena plan
    say the plan is arena's runtime's and what to run instead; before, they said the model (or the plan)
    was not a .tflite."""
    from arena_tool import cli

    path = save(tmp_path, "chain.tflite", chain_model())
    assert cli.main(["plan", path, "--kernels", "arena", "-o", str(tmp_path / "planned.tflite")]) == 2
    assert "this plan is for arena's runtime (--kernels arena)" in capsys.readouterr().err
    plan = str(tmp_path / "chain.plan.json")
    assert cli.main(["plan", path, "--kernels", "arena", "-o", plan]) == 0
    capsys.readouterr()
    assert cli.main(["verify", path, plan]) == 2
    err = capsys.readouterr().err
    assert "the plan is for arena's runtime" in err and "--runtime arena" in err
