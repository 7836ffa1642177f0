"""liveness: schedule, live ranges, sizes, in-place and views, scratch; real models end to end."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import time

import numpy as np
import pytest

import models as M
from builders import printed_under_hash_seeds
from arena_tool.model import liveness
from arena_tool.plan import validate
from arena_tool.core.errors import ArenaError
from arena_tool.plan.planners import run
from arena_tool.core.problem import ModelOptions, ModelProblem, lower_bound

KB = 1024


def _mp(tmp_path, model, **options) -> ModelProblem:
    return liveness.model_problem(M.save(model, tmp_path / "m.onnx"), ModelOptions(**options))


def _t(mp: ModelProblem):
    return {t.name: t for t in mp.tensors}


def _ranges(mp: ModelProblem):
    return {t.name: (t.first_op, t.last_op) for t in mp.tensors}


# --- the design notes' chain ---

def test_chain_ranges_sizes_and_bound(tmp_path):
    path = M.save(M.chain(), tmp_path / "chain.onnx")
    mp = liveness.model_problem(path, ModelOptions())
    assert [(t.name, t.kind, t.size) for t in mp.tensors] == [
        ("T0", "input", 4 * KB), ("T1", "activation", 6 * KB), ("T2", "activation", 6 * KB), ("T3", "output", 2 * KB)]
    assert _ranges(mp) == {"T0": (0, 0), "T1": (0, 1), "T2": (1, 2), "T3": (2, 2)}
    assert all(t.alias_of is None for t in mp.tensors)
    assert [(s.node, s.name, s.op_type, s.inputs, s.outputs) for s in mp.schedule] == [
        (0, "mm0", "MatMul", ("T0", "W0"), ("T1",)), (1, "mm1", "MatMul", ("T1", "W1"), ("T2",)),
        (2, "mm2", "MatMul", ("T2", "W2"), ("T3",))]
    problem = mp.problem()
    assert lower_bound(problem.buffers) == 12 * KB
    plan = run("naive", problem)
    validate.check(problem, plan.offsets, plan.arena_size)
    assert plan.arena_size == 18 * KB
    assert mp.weights_bytes == (16 * 24 + 24 * 24 + 24 * 8) * 4
    assert mp.model_sha256 == hashlib.sha256(open(path, "rb").read()).hexdigest()
    assert mp.model == path


def test_the_same_problem_whatever_the_hash_seed(tmp_path):
    path = M.save(M.shape_chain(), tmp_path / "s.onnx")
    code = ("import sys; from arena_tool.model import liveness; from arena_tool.core.problem import ModelOptions; "
            "print(repr(liveness.model_problem(sys.argv[1], ModelOptions()).problem()))")
    one, two = printed_under_hash_seeds(code, str(path))
    assert one == two and "Buffer(" in one


# --- live range rules ---

def test_unread_output_lives_during_its_op_and_outputs_to_the_end(tmp_path):
    m = M.model([M.node("TopK", ["x", "k"], ["vals", "idx"], "topk", axis=1),
                 M.node("Relu", ["vals"], ["out1"], "relu"),
                 M.node("Neg", ["x"], ["mid"], "neg"),
                 M.node("Abs", ["mid"], ["out2"], "abs")],
                [M.vi("x", [1, 8])], [M.vi("out1", [1, 3]), M.vi("out2", [1, 8])],
                [M.const("k", np.array([3], np.int64))])
    mp = _mp(tmp_path, m, inplace=False)
    assert _ranges(mp) == {"x": (0, 2), "vals": (0, 1), "idx": (0, 0), "out1": (1, 3),
                           "mid": (2, 3), "out2": (3, 3)}
    assert _t(mp)["idx"].dtype == "int64" and _t(mp)["idx"].size == 32


def test_folded_shape_ops_do_not_extend_ranges(tmp_path):
    mp = _mp(tmp_path, M.shape_chain(), inplace=False)
    assert [s.op_type for s in mp.schedule] == ["Relu", "Reshape"]
    assert _ranges(mp) == {"x": (0, 0), "r": (0, 1), "y": (1, 1)}


# --- in-place and views ---

def _relu_then(reader_after: bool, x_is_output: bool = False):
    nodes = [M.node("Neg", ["x"], ["a"], "neg"), M.node("Relu", ["a"], ["b"], "relu")]
    outputs = [M.vi("b", [4, 4])]
    if reader_after:
        nodes.append(M.node("Add", ["a", "b"], ["c"], "add"))
        outputs = [M.vi("c", [4, 4])]
    if x_is_output:
        outputs.append(M.vi("a", [4, 4]))
    return M.model(nodes, [M.vi("x", [4, 4])], outputs)


def test_relu_over_a_dying_input_aliases(tmp_path):
    mp = _mp(tmp_path, _relu_then(False))
    assert _t(mp)["b"].alias_of == "a"
    (root,) = [b for b in mp.problem().buffers if b.name == "a"]
    assert (root.start, root.end) == (0, 1)
    assert len(mp.problem().buffers) == 2


def test_relu_over_an_input_read_later_does_not_alias(tmp_path):
    mp = _mp(tmp_path, _relu_then(True))
    assert _t(mp)["b"].alias_of is None
    assert _t(mp)["c"].alias_of in ("a", "b")  # Add (same shapes) writes over one of its dying inputs


def test_graph_output_is_not_overwritten(tmp_path):
    mp = _mp(tmp_path, _relu_then(False, x_is_output=True))
    assert _t(mp)["b"].alias_of is None
    assert _ranges(mp)["a"] == (0, 1)


def test_graph_input_is_not_overwritten(tmp_path):
    m = M.model([M.node("Relu", ["x"], ["y"], "relu")], [M.vi("x", [4])], [M.vi("y", [4])])
    assert _t(_mp(tmp_path, m))["y"].alias_of is None


def _add(b_shape):
    return M.model([M.node("Neg", ["x"], ["a"], "neg"), M.node("Neg", ["z"], ["b"], "neg2"),
                    M.node("Add", ["a", "b"], ["c"], "add")],
                   [M.vi("x", [2, 4]), M.vi("z", b_shape)], [M.vi("c", [2, 4])])


def test_add_without_broadcasting_aliases_its_first_dying_input(tmp_path):
    assert _t(_mp(tmp_path, _add([2, 4])))["c"].alias_of == "a"


def test_add_with_broadcasting_does_not_alias(tmp_path):
    assert _t(_mp(tmp_path, _add([1, 4])))["c"].alias_of is None


def test_views_alias_the_root_never_a_chain(tmp_path):
    m = M.model([M.node("Neg", ["x"], ["a"], "neg"),
                 M.node("Reshape", ["a", "s"], ["v1"], "reshape"),
                 M.node("Flatten", ["v1"], ["v2"], "flatten", axis=0),
                 M.node("MatMul", ["v2", "w"], ["y"], "mm")],
                [M.vi("x", [2, 8])], [M.vi("y", [1, 3])],
                [M.const("s", np.array([4, 4], np.int64)), M.weight("w", [16, 3])])
    mp = _mp(tmp_path, m)
    assert (_t(mp)["v1"].alias_of, _t(mp)["v2"].alias_of) == ("a", "a")
    root = {b.name: b for b in mp.problem().buffers}["a"]
    assert (root.start, root.end, root.size) == (0, 3, 64)
    off = _mp(tmp_path, m, inplace=False)
    assert all(t.alias_of is None for t in off.tensors)
    assert off.problem().total_size == mp.problem().total_size + 2 * 64


def test_view_of_a_graph_input_is_allowed_but_never_written(tmp_path):
    m = M.model([M.node("Reshape", ["x", "s"], ["v"], "reshape"), M.node("Relu", ["v"], ["y"], "relu")],
                [M.vi("x", [2, 8])], [M.vi("y", [16])], [M.const("s", np.array([16], np.int64))])
    mp = _mp(tmp_path, m)
    assert _t(mp)["v"].alias_of == "x" and _t(mp)["y"].alias_of is None


@pytest.mark.parametrize("n, to, aliases", [
    (8, 6, True),          # float32 -> int32: same bytes
    (4, M.INT8, True),     # 16 B -> 4 B, both one 16-byte unit as planned: the same slot
    (8, M.INT8, False),    # 32 B -> 16 B: the narrower output would hold the wider slot; its own buffer
    (8, 11, False),        # float64 is wider: writing element i would reach unread input
])
def test_cast_aliases_only_when_it_never_costs(tmp_path, n, to, aliases):
    m = M.model([M.node("Neg", ["x"], ["a"], "neg"), M.node("Cast", ["a"], ["y"], "cast", to=to)],
                [M.vi("x", [n])], [M.vi("y", [n], to)])
    assert (_t(_mp(tmp_path, m))["y"].alias_of == "a") is aliases


def test_conv_and_matmul_never_alias(tmp_path):
    assert all(t.alias_of is None for t in _mp(tmp_path, M.conv(hw=4, k=1, pad=0)).tensors)
    assert all(t.alias_of is None for t in _mp(tmp_path, M.chain()).tensors)


# --- scratch ---

@pytest.mark.parametrize("mode, elements", [("none", None), ("row", 4 * 9 * 8), ("full", 4 * 9 * 8 * 8)])
def test_conv_scratch(tmp_path, mode, elements):
    mp = _mp(tmp_path, M.conv(cin=4, cout=8, hw=8, k=3, pad=1), scratch=mode)
    (step,) = mp.schedule
    if elements is None:
        assert step.workspace is None and [t.kind for t in mp.tensors] == ["input", "output"]
        return
    assert step.workspace == "conv:workspace"
    assert [t.name for t in mp.tensors] == ["x", "y", "conv:workspace"]
    ws = _t(mp)["conv:workspace"]
    assert (ws.kind, ws.dtype, ws.shape, ws.elements, ws.size, ws.first_op, ws.last_op, ws.alias_of) == (
        "scratch", "float32", (elements,), elements, elements * 4, 0, 0, None)


def test_conv_scratch_follows_group_stride_and_input_dtype(tmp_path):
    grouped = _t(_mp(tmp_path, M.conv(cin=4, cout=8, hw=8, k=3, pad=1, group=2), scratch="full"))
    assert grouped["conv:workspace"].elements == 2 * 9 * 64
    strided = _t(_mp(tmp_path, M.conv(cin=4, cout=8, hw=8, k=1, pad=0, stride=2), scratch="full"))
    assert strided["conv:workspace"].elements == 4 * 1 * 16
    int8 = _t(_mp(tmp_path, M.conv(cin=4, cout=8, hw=8, k=3, pad=1), scratch="row", activation_dtype="int8"))
    assert (int8["conv:workspace"].dtype, int8["conv:workspace"].size) == ("int8", 4 * 9 * 8)


@pytest.mark.parametrize("kw", [dict(k=1, pad=0), dict(cin=4, cout=4, group=4)])
def test_no_scratch_for_pointwise_and_depthwise(tmp_path, kw):
    mp = _mp(tmp_path, M.conv(**kw), scratch="full")
    assert mp.schedule[0].workspace is None and all(t.kind != "scratch" for t in mp.tensors)


# --- dtypes and bitwidths ---

def test_activation_dtype_changes_sizes(tmp_path):
    mp = _mp(tmp_path, M.chain(), activation_dtype="int8")
    assert [(t.dtype, t.size) for t in mp.tensors] == [("int8", 1024), ("int8", 1536), ("int8", 1536), ("int8", 512)]
    assert mp.weights_bytes == (16 * 24 + 24 * 24 + 24 * 8) * 4  # weights are not activations


def test_bitwidths_change_sizes(tmp_path):
    mp = _mp(tmp_path, M.chain(), bitwidths=(("T1", 4), ("T2", 3), ("W0", 8)), activation_dtype="int8", alignment=1)
    assert [(t.dtype, t.size) for t in mp.tensors] == [
        ("int8", 1024), ("int4", 768), ("int3", 576), ("int8", 512)]  # 1536 * 3 / 8 = 576
    assert mp.weights_bytes == 16 * 24 + (24 * 24 + 24 * 8) * 4


def test_alignment_rounds_sizes_up(tmp_path):
    m = M.model([M.node("Relu", ["x"], ["y"], "relu")], [M.vi("x", [5])], [M.vi("y", [5])])
    assert [t.size for t in _mp(tmp_path, m, alignment=16).tensors] == [32, 32]
    assert [t.size for t in _mp(tmp_path, m, alignment=1, bitwidths=(("y", 3),)).tensors] == [20, 2]


def test_unknown_bitwidth_name(tmp_path):
    with pytest.raises(ArenaError) as info:
        _mp(tmp_path, M.chain(), bitwidths=(("nope", 4),))
    assert info.value.field == "bitwidths.nope" and info.value.msg == "no tensor 'nope' in the model"


@pytest.mark.parametrize("options, field", [
    (dict(scratch="half"), "scratch"), (dict(alignment=0), "alignment"),
    (dict(activation_dtype="int9"), "activation_dtype"), (dict(bitwidths=(("T1", 0),)), "bitwidths.T1")])
def test_bad_options(tmp_path, options, field):
    with pytest.raises(ArenaError) as info:
        _mp(tmp_path, M.chain(), **options)
    assert info.value.field == field


def test_read_bitwidths(tmp_path):
    path = tmp_path / "bits.json"
    path.write_text(json.dumps({"b": 4, "a": 8}))
    assert liveness.read_bitwidths(str(path)) == (("a", 8), ("b", 4))


@pytest.mark.parametrize("text, words", [
    ('{"a": 4,}', "not JSON"), ('{"a": 0}', "minimum"), ('{"a": 4.5}', "not of type"), ("[1]", "not of type")])
def test_read_bitwidths_errors(tmp_path, text, words):
    path = tmp_path / "bits.json"
    path.write_text(text)
    with pytest.raises(ArenaError) as info:
        liveness.read_bitwidths(str(path))
    assert words in info.value.msg and info.value.file == str(path)


def test_read_bitwidths_missing(tmp_path):
    with pytest.raises(ArenaError, match="bitwidth file not found"):
        liveness.read_bitwidths(str(tmp_path / "absent.json"))


# --- external data and real models ---

def test_absent_external_data_still_plans(tmp_path):
    import os
    path = M.save(M.chain(), tmp_path / "ext.onnx", save_as_external_data=True, all_tensors_to_one_file=True,
                  location="ext.data", size_threshold=0)
    os.remove(tmp_path / "ext.data")
    mp = liveness.model_problem(path, ModelOptions())
    assert lower_bound(mp.problem().buffers) == 12 * KB
    assert mp.weights_bytes == (16 * 24 + 24 * 24 + 24 * 8) * 4


def test_light_models_plan_and_validate():
    """Every real model shipped in the onnx package, in-place on and off: a trivially valid plan."""
    models = M.light_models()
    assert len(models) >= 8
    t0 = time.perf_counter()
    for path in models:
        for inplace in (True, False):
            mp = liveness.model_problem(str(path), ModelOptions(inplace=inplace, scratch="row"))
            names = [t.name for t in mp.tensors]
            assert len(names) == len(set(names)), path
            assert all(t.alias_of is None or _t(mp)[t.alias_of].alias_of is None for t in mp.tensors)
            assert inplace or all(t.alias_of is None for t in mp.tensors)
            problem = mp.problem()
            plan = run("naive", problem)
            validate.check(problem, plan.offsets, plan.arena_size)
            assert 0 < lower_bound(problem.buffers) <= plan.arena_size
    assert time.perf_counter() - t0 < 30


def test_options_are_kept(tmp_path):
    options = ModelOptions(alignment=8, scratch="row")
    mp = liveness.model_problem(M.save(M.chain(), tmp_path / "m.onnx"), options)
    assert mp.options == options and dataclasses.is_dataclass(mp)


def test_input_shapes_option_pins(tmp_path):
    m = M.model([M.node("Relu", ["x"], ["y"], "r")], [M.vi("x", ["N", 16])], [M.vi("y", ["N", 16])])
    path = M.save(m, tmp_path / "dyn.onnx")
    with pytest.raises(ArenaError, match="dynamic shape"):
        liveness.model_problem(path, ModelOptions())
    mp = liveness.model_problem(path, ModelOptions(input_shapes=(("x", (2, 16)),)))
    assert [(t.name, t.shape, t.size) for t in mp.tensors] == [("x", (2, 16), 128), ("y", (2, 16), 128)]
