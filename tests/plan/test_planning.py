"""In-place and views never cost bytes: over random graphs mixing element-wise ops, narrowing
and widening casts, quantization, views and ops that never alias, the optimal arena with
in-place on is never above the optimal arena with it off."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import TensorProto

import models as M
from arena_tool.model import liveness
from arena_tool.plan import planners, planning
from arena_tool.core.problem import ModelOptions, lower_bound

FLOAT, INT8 = TensorProto.FLOAT, TensorProto.INT8
WIDTHS = (4, 8, 12, 32, 64)


@st.composite
def graphs(draw):
    """A random DAG over [1, c] tensors; every step reads tensors made earlier."""
    tensors = [("x", FLOAT, 16)]  # (name, elem, width)
    nodes, inits = [], [M.const("s", np.array(0.1, np.float32)), M.const("z", np.array(0, np.int8))]
    for i in range(draw(st.integers(3, 12))):
        kind = draw(st.sampled_from(["unary", "add", "quant", "dequant", "cast", "matmul", "view", "concat"]))
        floats = [t for t in tensors if t[1] == FLOAT]
        ints = [t for t in tensors if t[1] == INT8]
        out = f"t{i}"
        if kind == "unary":
            a = draw(st.sampled_from(floats))
            nodes.append(M.node(draw(st.sampled_from(["Relu", "Sigmoid", "Neg"])), [a[0]], [out]))
            tensors.append((out, FLOAT, a[2]))
        elif kind == "add":
            a = draw(st.sampled_from(floats))
            same = [t for t in floats if t[2] == a[2]]
            b = draw(st.sampled_from(same))
            nodes.append(M.node("Add", [a[0], b[0]], [out]))
            tensors.append((out, FLOAT, a[2]))
        elif kind == "quant":
            a = draw(st.sampled_from(floats))
            nodes.append(M.node("QuantizeLinear", [a[0], "s", "z"], [out]))
            tensors.append((out, INT8, a[2]))
        elif kind == "dequant" and ints:
            a = draw(st.sampled_from(ints))
            nodes.append(M.node("DequantizeLinear", [a[0], "s", "z"], [out]))
            tensors.append((out, FLOAT, a[2]))
        elif kind == "cast":
            a = draw(st.sampled_from(tensors))
            to = draw(st.sampled_from([FLOAT, INT8]))
            nodes.append(M.node("Cast", [a[0]], [out], to=to))
            tensors.append((out, to, a[2]))
        elif kind == "matmul":
            a = draw(st.sampled_from(floats))
            w = draw(st.sampled_from(WIDTHS))
            inits.append(M.weight(f"w{i}", [a[2], w], i))
            nodes.append(M.node("MatMul", [a[0], f"w{i}"], [out]))
            tensors.append((out, FLOAT, w))
        elif kind == "view":
            a = draw(st.sampled_from(tensors))
            nodes.append(M.node("Reshape", [a[0], "flat"], [out]))
            tensors.append((out, a[1], a[2]))
        elif kind == "concat":
            a, b = draw(st.sampled_from(floats)), draw(st.sampled_from(floats))
            nodes.append(M.node("Concat", [a[0], b[0]], [out], axis=1))
            tensors.append((out, FLOAT, a[2] + b[2]))
    if not nodes:
        nodes.append(M.node("Relu", ["x"], ["t0"]))
        tensors.append(("t0", FLOAT, 16))
    inits.append(M.const("flat", np.array([1, -1], np.int64)))
    read = {x for n in nodes for x in n.input}
    outs = [t for t in tensors[1:] if t[0] not in read] or [tensors[-1]]
    return M.model(nodes, [M.vi("x", [1, 16])], [M.vi(t[0], [1, t[2]], t[1]) for t in outs], inits, opset=13)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(model=graphs(), alignment=st.sampled_from([1, 16]))
def test_inplace_optimal_is_never_above_no_inplace_optimal(tmp_path, model, alignment):
    path = M.save(model, tmp_path / "m.onnx")
    params = planners.Params(time_limit=5)
    on = planning.plan_model(path, ModelOptions(alignment=alignment), "optimal", params).plan
    off = planning.plan_model(path, ModelOptions(alignment=alignment, inplace=False), "optimal", params).plan
    assert off.status == "proven"
    assert on.arena_size <= off.arena_size


def test_a_narrow_quantized_output_does_not_hold_the_float_slot(tmp_path):
    """x (float, 4 KB) -> Relu -> r -> QuantizeLinear -> q (1 KB) lives on while two MatMuls
    run (x -> a 8 KB -> b 4 KB): 4 + 8 + 1 = 13 KB at the peak. Had q taken r's 4 KB slot,
    the slot would stay 4 KB for q's whole life: 16 KB."""
    nodes = [M.node("Relu", ["x"], ["r"]), M.node("QuantizeLinear", ["r", "s", "z"], ["q"]),
             M.node("MatMul", ["x", "w0"], ["a"]), M.node("MatMul", ["a", "w1"], ["b"]),
             M.node("DequantizeLinear", ["q", "s", "z"], ["d"]), M.node("Add", ["b", "d"], ["y"])]
    m = M.model(nodes, [M.vi("x", [1, 1024])], [M.vi("y", [1, 1024])],
                [M.const("s", np.array(0.1, np.float32)), M.const("z", np.array(0, np.int8)),
                 M.weight("w0", [1024, 2048]), M.weight("w1", [2048, 1024], 1)], opset=13)
    path = M.save(m, tmp_path / "m.onnx")
    mp = liveness.model_problem(path, ModelOptions())
    assert {t.name: t.alias_of for t in mp.tensors}["q"] is None
    assert lower_bound(mp.problem().buffers) == 13 * 1024
    on = planning.plan_model(path, ModelOptions(), "optimal", planners.Params())
    off = planning.plan_model(path, ModelOptions(inplace=False), "optimal", planners.Params())
    assert on.plan.arena_size == off.plan.arena_size == 13 * 1024


def test_the_planner_gets_the_limit_less_what_its_clock_does_not_cover():
    """Start-up and reading are spent; the reserve (setup, validation, writing) grows with n;
    a planner always gets a little time to return a layout."""
    from arena_tool.plan.planning import LEAST_SECONDS, RESERVE_SECONDS_PER_BUFFER, planner_limit
    assert planner_limit(10.0, 0) == 10.0
    assert planner_limit(10.0, 100_000, spent=1.0) == pytest.approx(9.0 - 100_000 * RESERVE_SECONDS_PER_BUFFER)
    assert planner_limit(1.0, 100_000, spent=0.9) == LEAST_SECONDS
    # start-up and reading took 3 wall seconds a CPU second: so will validating and writing
    assert planner_limit(10.0, 100_000, spent=1.0, slowness=3.0) == \
        pytest.approx(9.0 - 3 * 100_000 * RESERVE_SECONDS_PER_BUFFER)
    assert planner_limit(10.0, 100_000, spent=1.0, slowness=0.5) == planner_limit(10.0, 100_000, spent=1.0)
