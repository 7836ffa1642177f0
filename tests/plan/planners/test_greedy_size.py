"""greedy_size: TFLite Micro's GreedyMemoryPlanner (size descending, first gap)."""

import random
import time

import pytest

from arena_tool.plan.planners import Params, run
from arena_tool.core.problem import Buffer, Problem
from arena_tool.plan.validate import violations

K = 1024


def tflm_medium() -> Problem:
    """TFLM greedy_memory_planner_test.cc TestGreedyMedium: (size, first, last)."""
    spec = [(10, 0, 1), (20, 1, 2), (30, 2, 3), (40, 3, 4), (50, 0, 1)]
    return Problem(tuple(Buffer(f"b{i}", s, a, e) for i, (s, a, e) in enumerate(spec)))


def test_tflm_greedy_medium():
    p = tflm_medium()
    plan = run("greedy_size", p)
    assert plan.offsets == (50, 70, 40, 0, 0)
    assert plan.arena_size == 90
    assert plan.lower_bound == 80
    assert (plan.optimal, plan.status, plan.planner) == (None, "heuristic", "greedy_size")


def test_chain_reaches_the_lower_bound():
    sizes, ranges = (4, 6, 6, 2), ((0, 0), (0, 1), (1, 2), (2, 2))
    p = Problem(tuple(Buffer(f"T{i}", s * K, a, e, 16) for i, (s, (a, e)) in enumerate(zip(sizes, ranges))))
    plan = run("greedy_size", p)
    assert plan.offsets == (6 * K, 0, 6 * K, 0)
    assert plan.arena_size == 12 * K
    assert violations(p, plan.offsets, plan.arena_size) == []


def test_ties_keep_problem_order():
    p = Problem((Buffer("first", 8, 0, 0), Buffer("second", 8, 0, 0), Buffer("third", 8, 0, 0)))
    assert run("greedy_size", p).offsets == (0, 8, 16)
    q = Problem(tuple(reversed(p.buffers)))
    assert run("greedy_size", q).offsets == (0, 8, 16)


def test_on_top_of_the_highest_ending_neighbour_when_no_gap_fits():
    # a [0,30) and b [40,50) live with c; c (20 B) fits neither below a nor in the 10 B gap
    p = Problem((Buffer("a", 30, 0, 1), Buffer("c", 20, 1, 1), Buffer("b", 10, 1, 2, fixed_offset=40)))
    plan = run("greedy_size", p)
    assert plan.offsets == (0, 50, 40)


def test_fixed_buffers_first_others_fitted_around():
    # TFLM's offline-planned buffers: the 5 B buffer fills the gap below the fixed one
    p = Problem((Buffer("big", 30, 0, 0), Buffer("f", 10, 0, 0, fixed_offset=10), Buffer("small", 5, 0, 0)))
    plan = run("greedy_size", p)
    assert plan.offsets == (20, 10, 0)
    assert violations(p, plan.offsets, plan.arena_size) == []


def test_alignment():
    p = Problem((Buffer("a", 20, 0, 0, 1), Buffer("b", 6, 0, 0, 16), Buffer("c", 3, 0, 0, 4)))
    plan = run("greedy_size", p)
    assert plan.offsets == (0, 32, 20)
    assert violations(p, plan.offsets, plan.arena_size) == []


def synthetic(n: int, seed: int = 0) -> Problem:
    """A model-like problem: mostly short-lived chain tensors, some long skips."""
    rng = random.Random(seed)
    bufs = []
    for i in range(n):
        life = rng.choice([1, 1, 2, 2, 3, 5, 20])
        bufs.append(Buffer(f"t{i}", 16 * rng.randint(1, 4096), i // 2, i // 2 + life, 16))
    return Problem(tuple(bufs))


@pytest.mark.parametrize("name", ["first_fit", "greedy_size"])
def test_fast_on_a_thousand_buffers(name):
    p = synthetic(1000)
    t0 = time.process_time()
    plan = run(name, p, Params())
    elapsed = time.process_time() - t0
    assert elapsed < 0.5, f"{name}: {elapsed:.3f} s"
    assert violations(p, plan.offsets, plan.arena_size) == []
    assert plan.arena_size >= plan.lower_bound


def test_densenet121_under_half_a_second():
    """The largest light model that ships with onnx (the issue's floor)."""
    from arena_tool.model import liveness
    from arena_tool.core.problem import ModelOptions
    from conftest import light_models

    (path,) = [m for m in light_models() if m.name == "light_densenet121.onnx"]
    p = liveness.model_problem(str(path), ModelOptions()).problem()
    for name in ("first_fit", "greedy_size"):
        t0 = time.process_time()
        plan = run(name, p, Params())
        elapsed = time.process_time() - t0
        assert elapsed < 0.5, f"{name}: {elapsed:.3f} s"
        assert violations(p, plan.offsets, plan.arena_size) == []
