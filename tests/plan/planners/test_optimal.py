"""optimal: exact against brute force, never above a peer, pruning rules sound and useful."""

from __future__ import annotations

import glob
import itertools
import os
import random
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arena_tool.plan import validate
from arena_tool.plan.planners import PLANNERS, Params, naive, optimal
from arena_tool.plan.planners.clock import Deadline
from arena_tool.plan.planners.decision import Decision
from arena_tool.plan.planners.search import HEURISTICS, Rules, decide
from arena_tool.plan.planners.sections import instance, preorder
from arena_tool.core.problem import Buffer, Plan, Problem, lower_bound
from _peer_cases import tiny
from bruteforce import brute_force_min
from bench.problems import GENERATORS, large_problem

RULES = Rules.names()  # from the search itself: a new rule is toggled below without an edit here


def search_only(problem: Problem, rules: Rules = Rules(), time_limit: float = 10.0) -> Plan:
    """optimal from the naive layout, so the search (not a greedy) must find the minimum."""
    start = naive.plan(problem, Params())
    return optimal.minimize(problem, Params(time_limit=time_limit), incumbents=[start.offsets],
                            rules=rules, greedy=False)


def test_tflm_greedy_medium_reaches_bound() -> None:
    # TFLite Micro greedy_memory_planner_test TestGreedyMedium: greedy reaches 90, minimum 80
    p = Problem(tuple(Buffer(f"b{i}", s, a, e) for i, (s, a, e) in
                      enumerate([(10, 0, 1), (20, 1, 2), (30, 2, 3), (40, 3, 4), (50, 0, 1)])))
    assert PLANNERS["greedy_size"](p, Params()).arena_size == 90
    for plan in (optimal.plan(p, Params()), search_only(p)):
        validate.check(p, plan.offsets, plan.arena_size)
        assert plan.arena_size == 80 and plan.optimal and plan.status == "proven"


def test_minimalloc_input12() -> None:
    # minimalloc benchmarks/examples/input.12.csv, half-open [lower, upper) -> inclusive
    rows = [("b1", 0, 3), ("b2", 3, 9), ("b3", 0, 9), ("b4", 9, 21), ("b5", 0, 21)]
    p = Problem(tuple(Buffer(n, 4, lo, up - 1) for n, lo, up in rows), capacity=12)
    plan = search_only(p)
    validate.check(p, plan.offsets, plan.arena_size)
    assert plan.arena_size == 12 and plan.status == "proven"


@pytest.mark.parametrize("seed", range(40))
def test_equals_brute_force(seed: int) -> None:
    p = tiny(seed, 4 + seed % 4, fixed=seed % 3 == 0)
    plan = search_only(p)
    validate.check(p, plan.offsets, plan.arena_size)
    assert plan.optimal and plan.status == "proven"
    assert plan.arena_size == brute_force_min(p)


def test_every_rule_combination_same_arena() -> None:
    problems = [tiny(s, 6, fixed=s % 4 == 0) for s in range(6)]
    expect = [brute_force_min(p) for p in problems]
    for flags in itertools.product((False, True), repeat=len(RULES)):
        rules = Rules(**dict(zip(RULES, flags)))
        for p, want in zip(problems, expect):
            plan = search_only(p, rules)
            validate.check(p, plan.offsets, plan.arena_size)
            assert plan.arena_size == want, (rules, p)


def _exhaust_nodes(rules: Rules, problems: list[Problem]) -> int:
    """Nodes to refute (optimum - 1) in full: a deterministic count of the whole tree."""
    total = 0
    for p in problems:
        inst = instance(p.buffers)
        cap = brute_force_min(p) // inst.unit - 1
        res = decide(inst, cap, preorder(inst, "WAT"), rules)
        assert res.status == Decision.INFEASIBLE
        total += res.nodes
    return total


@pytest.mark.parametrize("rule", RULES)
def test_each_rule_reduces_nodes(rule: str) -> None:
    problems = [tiny(s, 6) for s in range(100, 112)]
    needs = Rules.REQUIRES.get(rule, ())  # e.g. cover works on the canonical order
    alone, without = Rules.only(rule, *needs), Rules.only(*needs)
    assert _exhaust_nodes(alone, problems) < _exhaust_nodes(without, problems)


def test_mixed_alignments_prove_fast() -> None:
    # (size, start, duration, alignment): load bound 311, minimum 325 = one section's
    # padded stack; walking up from the load bound used to take 163,197 nodes
    rows = [(57, 5, 4, 8), (61, 4, 4, 4), (54, 4, 3, 4), (64, 1, 2, 1), (9, 7, 1, 4),
            (45, 5, 2, 4), (47, 8, 2, 1), (56, 3, 4, 1), (29, 7, 0, 8)]
    p = Problem(tuple(Buffer(f"b{i}", s, t, t + w, a) for i, (s, t, w, a) in enumerate(rows)))
    plan = optimal.plan(p, Params(time_limit=10.0))
    validate.check(p, plan.offsets, plan.arena_size)
    assert plan.arena_size == 325 and plan.optimal and dict(plan.stats)["nodes"] < 1000
    # the in-search padded stack (rule 'sections') refutes 324 in fewer nodes than without it
    inst = instance(p.buffers)
    rank = preorder(inst, "WAT")
    on, off = decide(inst, 324, rank), decide(inst, 324, rank, Rules(sections=False))
    assert on.status == off.status == Decision.INFEASIBLE and on.nodes < off.nodes


def test_time_limit_reports_bound() -> None:
    # a hard instance: many overlapping odd sizes; a tiny limit must return a valid layout
    rng = random.Random(7)
    bufs = tuple(Buffer(f"b{i}", rng.randint(5, 60), s, s + rng.randint(0, 6), 1)
                 for i, s in enumerate(rng.randint(0, 10) for _ in range(40)))
    p = Problem(bufs)
    plan = search_only(p, time_limit=1e-9)  # no time left (0 is not a time limit)
    validate.check(p, plan.offsets, plan.arena_size)
    assert plan.best_bound is not None and plan.best_bound >= lower_bound(bufs)
    assert plan.optimal == (plan.status == "proven")
    if plan.status == "time_limit":
        assert plan.best_bound < plan.arena_size


def test_capacity_infeasible() -> None:
    p = Problem((Buffer("a", 8, 0, 1), Buffer("b", 8, 1, 2)), capacity=15)
    plan = optimal.plan(p, Params())
    # the minimum (16, proven) is over the capacity: the plan is still the minimum found
    assert plan.status == "infeasible" and plan.arena_size == 16 and plan.optimal


def test_fixed_offsets_honoured() -> None:
    p = Problem((Buffer("f", 4, 0, 3, 4, fixed_offset=8), Buffer("a", 8, 0, 1), Buffer("b", 4, 2, 3)))
    plan = search_only(p)
    validate.check(p, plan.offsets, plan.arena_size)
    assert plan.offsets == (8, 0, 0) and plan.arena_size == 12 and plan.optimal


def test_independent_parts() -> None:
    p = Problem((Buffer("a", 8, 0, 1), Buffer("b", 8, 1, 2), Buffer("c", 20, 5, 6)))
    plan = optimal.plan(p, Params())
    assert dict(plan.stats)["parts"] == 2 and plan.arena_size == 20 and plan.optimal


def test_parts_by_arrays_are_the_components_with_their_bounds() -> None:
    """_parts (one sweep for every part's load, heights by reduceat: _split) gives each component its
    own load bound, fixed tops and largest buffer, and the lowest of the layouts, the first on ties."""
    rng = random.Random(5)
    for s in range(30):
        bufs = []
        for i in range(rng.randint(1, 40)):
            a = rng.randint(0, 60)
            fixed = 16 * rng.randint(0, 4) if rng.random() < 0.1 else None
            bufs.append(Buffer(f"b{i}", 16 * rng.randint(1, 9), a, a + rng.randint(0, 5), 16, fixed))
        layouts = [[16 * rng.randint(0, 30) for _ in bufs] for _ in range(3)]
        parts = optimal._parts(bufs, layouts, optimal._split(bufs, optimal.load_bound(bufs)))
        assert [p.idx for p in parts] == optimal.components(bufs)
        for p in parts:
            pb = [bufs[i] for i in p.idx]
            tops = [b.fixed_offset + b.size for b in pb if b.fixed_offset is not None]
            assert p.bound == max([lower_bound(pb), max(b.size for b in pb), *tops])
            heights = [max(lay[i] + bufs[i].size for i in p.idx) for lay in layouts]
            k = heights.index(min(heights))
            assert p.best == heights[k] and p.offsets == [layouts[k][i] for i in p.idx]


def test_prove_improves_a_given_plan() -> None:
    p = Problem(tuple(Buffer(f"b{i}", s, a, e) for i, (s, a, e) in
                      enumerate([(10, 0, 1), (20, 1, 2), (30, 2, 3), (40, 3, 4), (50, 0, 1)])))
    given_plan = PLANNERS["greedy_size"](p, Params())
    proved = optimal.prove(p, given_plan, Params())
    validate.check(p, proved.offsets, proved.arena_size)
    assert proved.arena_size == 80 and proved.optimal and proved.planner == given_plan.planner


buffers_st = st.lists(
    st.tuples(st.integers(1, 64), st.integers(0, 8), st.integers(0, 4), st.sampled_from([1, 2, 4, 8])),
    min_size=1, max_size=9)


@settings(max_examples=40, deadline=None)
@given(buffers_st)
def test_never_above_any_planner(rows: list[tuple[int, int, int, int]]) -> None:
    p = Problem(tuple(Buffer(f"b{i}", s, t, t + w, a) for i, (s, t, w, a) in enumerate(rows)))
    best = optimal.plan(p, Params(time_limit=5.0))
    validate.check(p, best.offsets, best.arena_size)
    # Proofs are checked against brute force elsewhere; here a loaded machine may hit the
    # limit, and the claim must hold even then.
    assert best.optimal or best.status == "time_limit"
    for name, fn in sorted(PLANNERS.items()):
        if name == "optimal":
            continue
        other = fn(p, Params(time_limit=0.5))  # exact_cover may stop early: still a layout
        assert best.arena_size <= other.arena_size, name


def _light_models() -> list[str]:
    import onnx
    return sorted(glob.glob(os.path.join(os.path.dirname(onnx.__file__), "backend/test/data/light/*.onnx")))


@pytest.mark.parametrize("path", _light_models(), ids=os.path.basename)
def test_light_models_proven(path: str) -> None:
    from arena_tool.model import liveness
    from arena_tool.core.problem import ModelOptions
    p = liveness.model_problem(path, ModelOptions()).problem()
    plan = optimal.plan(p, Params(time_limit=10.0))
    validate.check(p, plan.offsets, plan.arena_size)
    assert plan.optimal and plan.status == "proven" and plan.seconds < 10.0  # measured < 0.3 s each
    for name in ("first_fit", "greedy_size", "tflite_gpu", "tflite_cpu", "xla_best_fit", "greedy_conflicts"):
        assert plan.arena_size <= PLANNERS[name](p, Params()).arena_size, name


def test_random_network_problems_proven() -> None:
    # the floor: seeded 200-buffer problems proven within 10 s (measured: 100/100, < 0.05 s each)
    from bench.problems import random_problem
    for seed in range(8):
        p = random_problem(200, seed)
        plan = optimal.plan(p, Params(time_limit=10.0))
        validate.check(p, plan.offsets, plan.arena_size)
        assert plan.optimal and plan.status == "proven", seed


def test_tiled_mode_hard_but_valid() -> None:
    # the harder generator: deterministic, its own shape, and optimal stays valid
    # and never above greedy even when it cannot prove (measured 8/20 proven at 200 buffers)
    from bench.problems import random_problem
    a, b = random_problem(60, 4, mode="tiled"), random_problem(60, 4, mode="tiled")
    assert a == b and len(a.buffers) == 60 and a != random_problem(60, 4)
    with pytest.raises(ValueError):
        random_problem(60, 4, mode="nope")
    plan = optimal.plan(a, Params(time_limit=1.0))
    validate.check(a, plan.offsets, plan.arena_size)
    assert plan.arena_size <= PLANNERS["greedy_size"](a, Params()).arena_size
    assert plan.optimal == (plan.status == "proven")


def test_every_preorder_finds_a_perfect_packing() -> None:
    # zero slack: a whole cut rectangle (drop 0), capacity = its height = the load bound;
    # every preorder searches the same complete space, so each must find a packing
    from bench.problems import tiled_problem
    for seed in range(3):
        p = tiled_problem(14, seed, drop=0.0)
        cap = lower_bound(p.buffers)
        inst = instance(p.buffers)
        for h in HEURISTICS:
            res = decide(inst, cap // inst.unit, preorder(inst, h))
            assert res.status == Decision.FOUND, (seed, h)
            validate.check(Problem(p.buffers, capacity=cap), [int(o) * inst.unit for o in res.offsets], cap)


def test_capacity_below_bound_stops_at_once() -> None:
    p = Problem((Buffer("a", 8, 0, 1), Buffer("b", 9, 1, 2), Buffer("c", 3, 2, 2)), capacity=16)
    plan = optimal.plan(p, Params())
    validate.check(Problem(p.buffers), plan.offsets, plan.arena_size)
    assert plan.status == "infeasible" and plan.best_bound == 17 and dict(plan.stats)["decisions"] == 0


def test_load_bound_is_the_lower_bound_by_arrays():
    """optimal's load_bound (numpy) is problem.lower_bound's sweep: frees before allocations at one op."""
    from bench.problems import random_problem
    load_bound = optimal.load_bound
    for s in range(40):
        for mode in ("network", "tiled", "syn"):
            p = random_problem(1 + s % 50, s, mode=mode)
            assert load_bound(p.buffers) == lower_bound(p.buffers)
    touching = (Buffer("a", 10, 0, 1), Buffer("b", 20, 2, 3))  # end 1 frees before op 2's allocation
    assert load_bound(touching) == 20 and load_bound(()) == 0


def test_a_walk_started_past_the_limit_still_reuses() -> None:
    """Issue 39: at 100,000 buffers on a loaded machine the setup ate the limit and the
    first walk was cut at once, its rest stacked (a 3.6 GB arena for a 0.9 MB bound). The
    first walk runs up to FIRST_WALK_GRACE past its clock (one O(E log n) pass, no more than
    the setup's own work): here the clock has just passed, and it still reaches the bound;
    a clock passed by more than the grace cuts it too (no run ends a second after its limit)."""
    p = large_problem(12000, 1)
    inst = instance(p.buffers)
    lb = lower_bound(p.buffers)
    split = optimal._split(p.buffers, lb)
    walks = optimal._walk_seeds(p.buffers, inst, split, until=0.0, clock=Deadline(time.perf_counter()))
    assert len(walks) == 1
    validate.check(p, walks[0], lb)
    late = Deadline(time.perf_counter() - optimal.FIRST_WALK_GRACE - 1)
    stacked = optimal._walk_seeds(p.buffers, inst, split, until=0.0, clock=late)
    assert late.hit and len(stacked) == 1 and max(o + b.size for o, b in zip(stacked[0], p.buffers)) > lb


def test_a_limit_gone_past_its_grace_before_the_planner_starts_gets_the_stack(monkeypatch) -> None:
    """Issue 39: where start-up and reading left less than nothing (a 2 s limit at 100,000
    buffers on a loaded machine), optimal returns the stack at once, valid, status time_limit."""
    monkeypatch.setattr(optimal, "FIRST_WALK_GRACE", -1.0)
    p = Problem((Buffer("a", 16, 0, 1, 16), Buffer("f", 32, 1, 2, 16, 64), Buffer("b", 48, 2, 3, 16)))
    plan = optimal.plan(p, Params(time_limit=1.0))
    validate.check(p, plan.offsets, plan.arena_size)
    assert plan.offsets == (96, 64, 112) and plan.status == "time_limit" and plan.optimal is False


def test_generated_problems_reach_the_bound_without_the_greedy_seeds(monkeypatch) -> None:
    """Issue 39: where a walk exists the one-pass greedy seeds never run (their conflict lists,
    in Python, took 2-8 CPU-s at 20,000 buffers, and no greedy layout was below the best walk
    there); every generator of bench/problems.py still reaches its load bound, proven. On
    peak-2000-s1 no walk is at the bound (0.40-3.84 % above): the probe at it finds it at once."""
    def no_greedy(*_: object) -> None:
        raise AssertionError("greedy seeds with a walk in hand")
    monkeypatch.setattr(optimal, "greedy_layouts", no_greedy)
    for name, n, seed in (("peak", 2000, 1), ("dag", 3000, 1), ("pow2", 3000, 1), ("lanes", 3000, 1),
                          ("trace", 3000, 1), ("gpt", 3000, 1), ("uniform", 2000, 3), ("paper", 3000, 1)):
        p = GENERATORS[name](n, seed)
        plan = optimal.plan(p, Params(time_limit=30.0))
        assert plan.status == "proven" and plan.arena_size == lower_bound(p.buffers), (name, plan.arena_size)
