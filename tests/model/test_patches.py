"""Patch-based inference (arena_tool/model/patches.py): the geometry of tiles and halos, the
rewrite proven by execution (random conv / depthwise / pool chains run tile by tile in
onnxruntime equal the untiled run: bit for bit on int8, within float tolerance on float32),
the user errors, and auto's choice planned and checked."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from arena_tool.core.errors import ArenaError
from arena_tool.core.problem import ModelOptions, lower_bound
from arena_tool.model import lowering, patches
from arena_tool.model.patches import StageSpec
import models
from arena_tool.plan import plancheck, planners, planning
from arena_tool.run import verify

PARAMS = planners.Params(time_limit=2.0)


# --- geometry -----------------------------------------------------------------------------------

def test_a_window_reads_its_halo_and_pads_only_at_the_border():
    # output rows [0, 3) of a 3x3 stride-2 pad-1 conv over 12 rows: input [-1, 6) -> [0, 6), pad top 1
    assert patches._window_axis(0, 3, 2, 1, 3, 12) == (0, 6, 1, 0)
    # an interior tile: no pad on either side
    assert patches._window_axis(3, 6, 2, 1, 3, 12) == (5, 12, 0, 0)
    # the last rows of a 5x5 stride-1 pad-2 conv: two rows of pad at the bottom only
    assert patches._window_axis(8, 12, 1, 2, 5, 12) == (6, 12, 0, 2)


def test_the_grid_covers_the_tensor_once():
    boxes = patches.grid((1, 4, 7, 5), 3, 2)
    cover = np.zeros((7, 5), int)
    for h0, h1, w0, w1 in boxes:
        cover[h0:h1, w0:w1] += 1
    assert len(boxes) == 6 and (cover == 1).all()


# --- random chains, run tile by tile ------------------------------------------------------------

def _chain(rng: np.random.Generator, quantized: bool) -> tuple[onnx.ModelProto, str]:
    """A random chain: convs (1x1, 3x3, 5x5, strides 1-2, any pads), depthwise convs, max (and,
    float, average) pools and residual adds, then a Relu after the stage; (model, last stage op).
    int8: QuantizeLinear, QLinearConv, MaxPool on the integers, QLinearAdd, DequantizeLinear."""
    c = 3
    nodes: list[onnx.NodeProto] = []
    inits: list[onnx.TensorProto] = []

    def const(name: str, value: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(value, name))
        return name

    x, q = "x", (const("s", np.array(0.05, np.float32)), const("z", np.array(3, np.int8)))
    if quantized:
        nodes.append(helper.make_node("QuantizeLinear", ["xf", *q], ["x"], name="q"))
    last = ""
    for i in range(int(rng.integers(3, 6))):
        kind = str(rng.choice(["conv", "dw", "max", "avg", "add"]))
        if kind == "avg" and quantized:
            kind = "max"
        y = f"t{i}"
        k = int(rng.choice([1, 3, 5])) if kind in ("conv", "dw") else int(rng.choice([2, 3]))
        s = int(rng.choice([1, 2]))
        p = [int(rng.integers(0, k // 2 + 1)) for _ in range(4)]
        window = {"kernel_shape": [k, k], "strides": [s, s], "pads": p}
        yq = (const(f"ys{i}", np.array(rng.uniform(0.05, 0.2), np.float32)),
              const(f"yz{i}", np.array(int(rng.integers(-5, 5)), np.int8)))
        if kind in ("conv", "dw"):
            cout = c if kind == "dw" else int(rng.integers(2, 6))
            group = c if kind == "dw" else 1
            wt = rng.standard_normal((cout, c // group, k, k)).astype(np.float32) * 0.5
            if quantized:
                wq = const(f"w{i}", np.clip(np.round(wt * 40), -127, 127).astype(np.int8))
                nodes.append(helper.make_node(
                    "QLinearConv", [x, *q, wq, const(f"ws{i}", np.array(0.02, np.float32)),
                                    const(f"wz{i}", np.array(0, np.int8)), *yq,
                                    const(f"b{i}", rng.integers(-50, 50, cout).astype(np.int32))],
                    [y], name=f"op{i}", group=group, **window))
                q = yq
            else:
                nodes.append(helper.make_node("Conv", [x, const(f"w{i}", wt)], [y], name=f"op{i}", group=group,
                                              **window))
            c = cout
        elif kind in ("max", "avg"):
            attrs = {"count_include_pad": int(rng.integers(0, 2))} if kind == "avg" else {}
            nodes.append(helper.make_node("MaxPool" if kind == "max" else "AveragePool", [x], [y], name=f"op{i}",
                                          **window, **attrs))
        elif quantized:
            nodes.append(helper.make_node("QLinearAdd", [x, *q, x, *q, *yq], [y], name=f"op{i}",
                                          domain="com.microsoft"))
            q = yq
        else:
            nodes.append(helper.make_node("Add", [x, x], [y], name=f"op{i}"))
        x, last = y, f"op{i}"
    if quantized:
        nodes.append(helper.make_node("DequantizeLinear", [x, *q], ["f"], name="dq"))
        x = "f"
    nodes.append(helper.make_node("Relu", [x], ["out"], name="after"))
    inp = helper.make_tensor_value_info("xf" if quantized else "x", TensorProto.FLOAT, ["N", 3, "H", "W"])
    graph = helper.make_graph(nodes, "chain", [inp], [helper.make_tensor_value_info("out", TensorProto.FLOAT, ["N", "C", "h", "w"])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13),
                                                   helper.make_opsetid("com.microsoft", 1)]), last


def _ort(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> np.ndarray:
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 3
    s = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return np.asarray(s.run(None, feeds)[0])


@pytest.mark.parametrize("quantized", [False, True], ids=["float32", "int8"])
def test_random_chains_run_tile_by_tile_equal_untiled(tmp_path: Path, quantized: bool):
    rng = np.random.default_rng(24 + quantized)
    name = "xf" if quantized else "x"
    checked = 0
    for _ in range(100):
        if checked == 6:
            break
        model, last = _chain(rng, quantized)
        path = tmp_path / f"chain{checked}.onnx"
        onnx.save(model, str(path))
        shape = (1, 3, int(rng.integers(17, 40)), int(rng.integers(17, 40)))
        try:
            lw = lowering.load(str(path), [(name, shape)])
        except ArenaError:
            continue  # this input is too small for the chain drawn (an output under one pixel)
        out = lw.types[lw.ops[-2 if quantized else -1].inputs[0]].shape
        if min(out[2:]) < 3:
            continue
        feeds = {name: (rng.standard_normal(shape) * 2).astype(np.float32)}
        want = _ort(lowering.to_onnx(lw), feeds)
        for rows, cols in ((2, 2), (3, 1), (3, 2), (out[2], out[3])):
            tiled = patches.apply(lw, [StageSpec(last, rows, cols)])
            got = _ort(lowering.to_onnx(tiled), feeds)
            assert got.shape == want.shape
            if quantized:
                assert np.array_equal(got, want), (checked, rows, cols)
            else:
                np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * float(np.abs(want).max()))
            assert tiled.untiled is lw and len(tiled.stages[0].tiles) == rows * cols
        checked += 1
    assert checked == 6


# --- user errors ----------------------------------------------------------------------------------

def _mobile(tmp_path: Path) -> str:
    return models.save(models.mobile(), tmp_path / "mobile.onnx")


@pytest.mark.parametrize("option, field, words", [
    ("nosuch:2x2", "patches.split_after", "no op or tensor 'nosuch'"),
    ("gap:2", "patches.split_after", "cannot be tiled"),
    ("pw:0", "patches.tiles", "not a tile grid"),
    ("pw:99", "patches.tiles", "finer than"),
    ("pw", "patches", "not off, auto or NODE:RxC"),
])
def test_a_stage_that_cannot_be_tiled_is_one_error_naming_the_field(tmp_path, option, field, words):
    with pytest.raises(ArenaError) as e:
        planning.plan_model(_mobile(tmp_path), ModelOptions(patches=option), "optimal", PARAMS)
    assert e.value.field == field and words in e.value.msg and e.value.exit_code == 2
    assert "\n" not in e.value.render()


def test_the_manifest_form_reads_as_the_option_text():
    assert ModelOptions.from_doc({"patches": {"split_after": "pw", "tiles": 3}}).patches == "pw:3x3"
    assert ModelOptions.from_doc({"patches": [{"split_after": "a", "tiles": [2, 4]},
                                              {"split_after": "b", "tiles": 2}]}).patches == "a:2x4;b:2x2"
    assert patches.parse("a:2x4;b:2") == (StageSpec("a", 2, 4), StageSpec("b", 2, 2))
    # tf2onnx's fused node names hold ';': a stage ends at ':digits' before ';' or the end
    assert patches.parse("model/relu;model/bn:8x8;c:2") == (StageSpec("model/relu;model/bn", 8, 8),
                                                           StageSpec("c", 2, 2))
    assert "patches" not in ModelOptions().to_doc()  # off: every existing plan keeps its bytes


# --- planned and checked ----------------------------------------------------------------------------

def test_named_stages_plan_below_untiled_and_check_re_derives_them(tmp_path):
    path = _mobile(tmp_path)
    off = planning.plan_model(path, ModelOptions(), "optimal", PARAMS)
    on = planning.plan_model(path, ModelOptions(patches="pw:4x4"), "optimal", PARAMS)
    p = on.plan_file.patches
    assert p is not None and p.stages == "pw:4x4" and p.untiled_arena == off.plan.arena_size
    assert on.plan.arena_size < off.plan.arena_size and p.macs > p.macs_untiled
    assert len(p.detail) == 1 and len(p.detail[0]["tiles"]) == 16
    lowered = plancheck.lowered_model(path, on.plan_file)
    assert plancheck.check(on.plan_file, plancheck.derived_problem(path, on.plan_file), "p") == []
    assert plancheck.patch_problems(on.plan_file, lowered) == []
    assert verify.verify(path, on.plan_file).ok  # the plan replayed: no tile clobbers a live tensor
    # a plan whose stated boxes are not the model's is refused
    bad = dataclasses.replace(p, detail=({**p.detail[0], "rows": 3},))
    assert plancheck.patch_problems(dataclasses.replace(on.plan_file, patches=bad), lowered)


def test_auto_never_returns_a_larger_plan_than_off(tmp_path):
    path = _mobile(tmp_path)
    off = planning.plan_model(path, ModelOptions(), "optimal", PARAMS)
    auto = planning.plan_model(path, ModelOptions(patches="auto"), "optimal", PARAMS)
    p = auto.plan_file.patches
    assert p is not None and auto.plan.arena_size <= off.plan.arena_size
    assert p.macs <= p.macs_untiled * (1 + patches.MAC_CAP)
    assert p.stages != "off" and auto.plan.arena_size < off.plan.arena_size  # 77,824 -> 27,120 B
    mp = plancheck.derived_problem(path, auto.plan_file)
    assert lower_bound(mp.problem().buffers) == auto.plan.lower_bound


def test_the_ladder_trades_peak_for_macs_from_auto_choice_to_the_untiled_network(tmp_path):
    path = _mobile(tmp_path)
    lw = lowering.load(path)
    from arena_tool.model import liveness

    mp = liveness.model_problem(path, ModelOptions(), lowered=lw)
    rungs = patches.ladder(lw, mp, 2.0)
    assert rungs[0] == patches.choose(lw, mp, 2.0) and rungs[0].stages  # auto's pick first
    assert rungs[-1].stages == () and rungs[-1].macs == patches.total_macs(lw)  # the untiled network last
    assert len(rungs) >= 3
    for a, b in zip(rungs, rungs[1:]):  # each rung: a larger peak bought by fewer MACs
        assert a.peak < b.peak and a.macs > b.macs


def test_a_tflite_on_arenas_runtime_is_tiled_on_its_nhwc_images(tmp_path):
    """A lowered .tflite (kernels arena) keeps TFLite's NHWC: its stages cut rows and columns on axes 1
    and 2 (the crops', tiles' and PatchWrites' boxes), TFLite's SAME pads become tile-local pads at the
    image border only, and the plan is checked and below the untiled one, by hand and by auto. Before,
    patches on a .tflite were refused (and the NCHW geometry cut its channels)."""
    from arena_tool.model import liveness
    from tflite_models import save
    from tflite_ops import patch_stage_model

    path = save(tmp_path, "stage.tflite", patch_stage_model(0))
    off = planning.plan_model(path, ModelOptions(kernels="arena"), "optimal", PARAMS)
    on = planning.plan_model(path, ModelOptions(kernels="arena", patches="stage_end:3x2"), "optimal", PARAMS)
    assert on.plan.arena_size < off.plan.arena_size  # 3,968 -> 3,008 B
    lw = plancheck.lowered_model(path, on.plan_file)
    assert lw.layout == "NHWC"
    conv1 = [op for op in lw.ops if op.origin is not None and op.name.startswith("conv1@")]
    assert len(conv1) == 6
    shapes = [lw.types[op.outputs[0]].shape for op in conv1]
    assert all(s[0] == 1 and s[3] == 8 for s in shapes)  # channels last, whole in every tile
    assert [s[1] for s in shapes] == [7, 7, 13, 13, 10, 10] and [s[2] for s in shapes] == [11, 12] * 3  # halos
    pads = {tuple(op.attrs["pads"]) for op in conv1}
    assert (1, 1, 0, 0) in pads and (0, 0, 1, 1) in pads  # SAME's pad at the border, none inside
    writes = [op for op in lw.ops if op.op_type == patches.PATCH_OP]
    assert [w.attrs["starts"] for w in writes] == [[0, h, w, 0] for h in (0, 1, 3) for w in (0, 2)]
    assert plancheck.check(on.plan_file, plancheck.derived_problem(path, on.plan_file), "p") == []
    assert plancheck.patch_problems(on.plan_file, lw) == []
    auto = planning.plan_model(path, ModelOptions(kernels="arena", patches="auto"), "optimal", PARAMS)
    assert auto.plan_file.patches is not None and auto.plan_file.patches.stages != "off"
    assert auto.plan.arena_size < off.plan.arena_size
    caller = planning.plan_model(path, ModelOptions(kernels="arena", patches="auto", io_buffers="caller"), "optimal",
                                 PARAMS)
    x = liveness.lower(path, ModelOptions(kernels="arena")).types["x"]
    assert caller.plan_file.caller_io >= x.elements and caller.plan.arena_size < auto.plan.arena_size
