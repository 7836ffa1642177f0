"""Memory-aware scheduling: the exact search against a brute force over every topological order
(the bound of each order computed by liveness, not by the scheduler), real branchy models never
worse than their graph order, orders that check proves, and a rescheduled model run on the host
runtime equal to onnxruntime."""

from __future__ import annotations

import dataclasses
import glob
import itertools
import random
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import models as M
from arena_tool.model import liveness, lowering, scheduling
from arena_tool.plan import plancheck, planners, planning
from arena_tool.core.errors import ArenaError
from arena_tool.core.problem import ModelOptions, lower_bound

MEMORY = ModelOptions(schedule="memory")
LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"


def _bound(mp) -> int:
    return lower_bound(mp.problem().buffers)


def _random_dag(rng: random.Random, n: int) -> onnx.ModelProto:
    """n ops over [1, w] float tensors: MatMul by a weight to a new width, Relu (in place),
    Concat of two, Reshape (a view); unread tensors become graph outputs."""
    widths = {"x": rng.choice((4, 8, 16))}
    nodes, inits, readers = [], [], {"x": 0}
    for i in range(n):
        pool = list(widths)
        kind = rng.choice(("matmul", "matmul", "relu", "concat", "reshape"))
        y = f"t{i}"
        if kind == "concat" and len(pool) >= 2:
            a, b = rng.sample(pool, 2)
            nodes.append(helper.make_node("Concat", [a, b], [y], axis=1, name=f"n{i}"))
            widths[y] = widths[a] + widths[b]
            readers[a] += 1
            readers[b] += 1
        else:
            a = rng.choice(pool)
            readers[a] += 1
            if kind == "relu":
                nodes.append(helper.make_node("Relu", [a], [y], name=f"n{i}"))
                widths[y] = widths[a]
            elif kind == "reshape":
                shape = f"s{i}"
                inits.append(helper.make_tensor(shape, TensorProto.INT64, [2], [1, widths[a]]))
                nodes.append(helper.make_node("Reshape", [a, shape], [y], name=f"n{i}"))
                widths[y] = widths[a]
            else:
                w = rng.choice((4, 8, 16, 32, 64))
                inits.append(helper.make_tensor(f"w{i}", TensorProto.FLOAT, [widths[a], w],
                                                np.ones(widths[a] * w, np.float32).tolist()))
                nodes.append(helper.make_node("MatMul", [a, f"w{i}"], [y], name=f"n{i}"))
                widths[y] = w
        readers[y] = 0
    outs = [t for t, r in readers.items() if r == 0 and t != "x"]
    graph = helper.make_graph(nodes, "dag", [M.vi("x", [1, widths["x"]])],
                              [M.vi(t, [1, widths[t]]) for t in outs], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _topological_orders(lw: lowering.Lowered):
    written = {y: op.node for op in lw.ops for y in op.outputs}
    needs = {op.node: {written[x] for x in op.inputs if x in written} for op in lw.ops}

    def extend(done: list[int], left: set[int]):
        if not left:
            yield list(done)
            return
        for v in sorted(left):
            if needs[v] <= set(done):
                done.append(v)
                yield from extend(done, left - {v})
                done.pop()

    yield from extend([], set(needs))


@pytest.mark.parametrize("seed", range(40))
def test_exact_schedule_matches_brute_force(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    path = M.save(_random_dag(rng, rng.randint(3, 8)), tmp_path / "dag.onnx")
    lw = lowering.load(path)
    opts = ModelOptions(alignment=4)
    bounds = {}
    builder = liveness._Builder(lw, opts)
    graph = builder.sched_graph(builder.build())
    by_node = {op.node: k for k, op in enumerate(lw.ops)}
    for order in _topological_orders(lw):
        mp = liveness.build(lw, opts, order)
        bounds[tuple(order)] = _bound(mp)
        # the scheduler's arithmetic is liveness's, order by order
        assert scheduling.peak(graph, [by_node[v] for v in order]) == bounds[tuple(order)], order
    sched = scheduling.memory_order(graph)
    assert sched.exact
    assert sched.peak == min(bounds.values())
    best = liveness.build(lw, dataclasses.replace(opts, schedule="memory"))
    assert _bound(best) == min(bounds.values())
    assert _bound(best) <= bounds[tuple(op.node for op in lw.ops)]


def test_a_bad_graph_order_is_fixed(tmp_path: Path) -> None:
    """Two branches whose big intermediates the graph order keeps alive together."""
    path = M.save(_two_branches(), tmp_path / "branches.onnx")
    graph = liveness.model_problem(path, ModelOptions())
    mem = liveness.model_problem(path, MEMORY)
    assert _bound(mem) < _bound(graph)
    assert [s.op_type for s in mem.schedule] != [s.op_type for s in graph.schedule] or \
        [s.node for s in mem.schedule] != [s.node for s in graph.schedule]


def _two_branches(c: int = 4, big: int = 32, hw: int = 8) -> onnx.ModelProto:
    """x -> conv a1 (big) -> conv a2 (small); x -> conv b1 (big) -> conv b2 (small); concat. The
    nodes are listed a1, b1, a2, b2: both big tensors live at once in the graph's order."""
    inits = [M.weight("wa1", [big, c, 1, 1], 1), M.weight("wb1", [big, c, 1, 1], 2),
             M.weight("wa2", [c, big, 1, 1], 3), M.weight("wb2", [c, big, 1, 1], 4)]
    nodes = [M.node("Conv", ["x", "wa1"], ["a1"], "a1"), M.node("Conv", ["x", "wb1"], ["b1"], "b1"),
             M.node("Conv", ["a1", "wa2"], ["a2"], "a2"), M.node("Conv", ["b1", "wb2"], ["b2"], "b2"),
             M.node("Concat", ["a2", "b2"], ["y"], "cat", axis=1)]
    return M.model(nodes, [M.vi("x", [1, c, hw, hw])], [M.vi("y", [1, 2 * c, hw, hw])], inits)


BRANCHY = ("light_inception_v1.onnx", "light_inception_v2.onnx", "light_densenet121.onnx", "light_squeezenet.onnx",
           "light_shufflenet.onnx")


@pytest.mark.parametrize("name", BRANCHY)
def test_branchy_models_never_worse(name: str) -> None:
    path = str(LIGHT / name)
    graph = liveness.model_problem(path, ModelOptions())
    mem = liveness.model_problem(path, MEMORY)
    assert _bound(mem) <= _bound(graph)
    assert sorted(s.node for s in mem.schedule) == sorted(s.node for s in graph.schedule)
    lw = lowering.load(path)
    g = liveness._Builder(lw, ModelOptions())
    floor = scheduling.op_floor(g.sched_graph(g.build()))
    assert _bound(mem) >= min(floor, _bound(graph))  # no order beats an op's own bytes


def test_shufflenet_schedule_saves_and_checks(tmp_path: Path) -> None:
    path = str(LIGHT / "light_shufflenet.onnx")
    pm = planning.plan_model(path, MEMORY, "greedy_size", planners.Params())
    graph = liveness.model_problem(path, ModelOptions())
    assert pm.plan.lower_bound < _bound(graph)  # 2,885,120 B vs 3,110,912 B measured
    mp = liveness.model_problem(path, MEMORY)
    assert plancheck.check(pm.plan_file, mp, "p.json") == []


def test_check_refuses_a_non_topological_schedule(tmp_path: Path) -> None:
    path = M.save(_two_branches(), tmp_path / "branches.onnx")
    pm = planning.plan_model(path, MEMORY, "greedy_size", planners.Params())
    steps = list(pm.plan_file.schedule)
    cat = next(k for k, s in enumerate(steps) if s.op_type == "Concat")
    steps.insert(0, steps.pop(cat))  # the Concat first: it reads what nobody wrote yet
    bad = dataclasses.replace(pm.plan_file, schedule=tuple(steps))
    problems = plancheck.check(bad, liveness.model_problem(path, MEMORY), "p.json")
    assert problems and "before the op that writes it" in problems[0]
    with pytest.raises(ArenaError, match="not a permutation"):
        liveness.model_problem(path, ModelOptions(), order=[0, 1, 2])


def test_schedule_is_deterministic_across_hash_seeds(tmp_path: Path) -> None:
    path = str(LIGHT / "light_shufflenet.onnx")
    code = ("import sys; from arena_tool.model import liveness; from arena_tool.core.problem import ModelOptions; "
            "print([s.node for s in liveness.model_problem(sys.argv[1], ModelOptions(schedule='memory')).schedule])")
    one, two = printed_under_hash_seeds(code, path)
    assert one == two


def test_rescheduled_model_runs_on_the_host(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The C tables follow the plan's order: the firmware's outputs equal onnxruntime's."""
    from conftest import require_tool
    from arena_tool.run import firmware

    require_tool("gcc")
    path = M.save(_two_branches(), tmp_path / "branches.onnx")
    rc = firmware.run(path, "host", MEMORY, "optimal", planners.Params(), build_dir=str(tmp_path / "b"))
    out = capsys.readouterr().out
    assert rc == 0, out


from conftest import MLPERF, absent  # noqa: E402
from builders import printed_under_hash_seeds


@pytest.mark.skipif(absent(MLPERF / "image_classification__pretrainedResnet_quant.tflite"),
                    reason="the MLPerf Tiny ResNet .tflite is absent on this machine")
def test_a_tflite_model_is_written_in_the_memory_order_and_verifies(tmp_path: Path) -> None:
    """A .tflite under schedule: memory: never worse than its own order, and the planned model
    (operators written in the plan's order) runs bit-identically in TFLite Micro."""
    from arena_tool.cli import main

    src = str(MLPERF / "image_classification__pretrainedResnet_quant.tflite")
    out = str(tmp_path / "planned.tflite")
    mem = liveness.model_problem(src, MEMORY)
    assert _bound(mem) <= _bound(liveness.model_problem(src, ModelOptions()))
    assert main(["plan", src, "--schedule", "memory", "--planner", "greedy_size", "-o", out]) == 0
    assert main(["verify", src, out]) == 0
