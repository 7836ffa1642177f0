"""first_fit: birth order (start, longer-lived first, index), lowest aligned fit."""

from arena_tool.plan.planners import Params, run
from arena_tool.core.problem import Buffer, Problem
from arena_tool.plan.validate import violations

K = 1024


def chain() -> Problem:
    sizes, ranges = (4, 6, 6, 2), ((0, 0), (0, 1), (1, 2), (2, 2))
    return Problem(tuple(Buffer(f"T{i}", s * K, a, e, 16) for i, (s, (a, e)) in enumerate(zip(sizes, ranges))))


def test_chain_reaches_the_lower_bound():
    p = chain()
    plan = run("first_fit", p)
    # T1 (born with T0, lives longer) first at 0; T0 above; T2 where T0 was; T3 where T1 was
    assert plan.offsets == (6 * K, 0, 6 * K, 0)
    assert plan.arena_size == 12 * K == plan.lower_bound
    assert (plan.optimal, plan.status, plan.planner) == (None, "heuristic", "first_fit")
    assert violations(p, plan.offsets, plan.arena_size) == []


def test_birth_order_not_size_order():
    # a (small, born first) sits at 0, so the big b goes above it, c reuses a's bytes
    p = Problem((Buffer("big", 100, 1, 2), Buffer("small", 10, 0, 1), Buffer("late", 10, 2, 3)))
    plan = run("first_fit", p)
    assert plan.offsets == (10, 0, 0)
    assert plan.arena_size == 110


def test_gap_below_is_used_when_it_fits():
    # x [0,20) dies at op 0; y [20,30) lives on; z (10 B, op 1) fits in x's old bytes
    p = Problem((Buffer("x", 20, 0, 0), Buffer("y", 10, 0, 1), Buffer("z", 10, 1, 1), Buffer("w", 30, 1, 1)))
    plan = run("first_fit", p)
    assert plan.offsets == (10, 0, 10, 20)  # y (longer-lived) first at 0
    assert plan.arena_size == 50


def test_alignment_rounds_the_candidate_up():
    p = Problem((Buffer("a", 5, 0, 0, 1), Buffer("b", 8, 0, 0, 16), Buffer("c", 4, 0, 0, 4)))
    plan = run("first_fit", p)
    assert plan.offsets == (0, 16, 8)  # c fits in the gap between a (ends 5) and b (at 16)
    assert violations(p, plan.offsets, plan.arena_size) == []


def test_fixed_buffers_are_placed_first():
    p = Problem((Buffer("a", 10, 0, 0), Buffer("f", 10, 0, 0, fixed_offset=5), Buffer("b", 5, 0, 0)))
    plan = run("first_fit", p)
    assert plan.offsets == (15, 5, 0)
    assert violations(p, plan.offsets, plan.arena_size) == []


def test_capacity_is_reported_not_enforced():
    p = Problem((Buffer("a", 10, 0, 0), Buffer("b", 10, 0, 0)), capacity=15)
    plan = run("first_fit", p, Params())
    assert plan.arena_size == 20 and plan.status == "heuristic"
