"""naive: every buffer its own slot, in problem order; the ceiling of the others."""

from arena_tool.plan.planners import Params, run
from arena_tool.core.problem import Buffer, Problem
from arena_tool.plan.validate import violations

K = 1024


def chain() -> Problem:
    """The design notes' chain T0->T1->T2->T3: 4, 6, 6, 2 KB, MatMuls."""
    sizes, ranges = (4, 6, 6, 2), ((0, 0), (0, 1), (1, 2), (2, 2))
    return Problem(tuple(Buffer(f"T{i}", s * K, a, e, 16) for i, (s, (a, e)) in enumerate(zip(sizes, ranges))))


def test_chain_is_the_sum():
    p = chain()
    plan = run("naive", p)
    assert plan.offsets == (0, 4 * K, 10 * K, 16 * K)
    assert plan.arena_size == 18 * K
    assert plan.lower_bound == 12 * K
    assert (plan.optimal, plan.status, plan.planner) == (None, "heuristic", "naive")
    assert violations(p, plan.offsets, plan.arena_size) == []


def test_alignment_pads_between_slots():
    p = Problem((Buffer("a", 10, 0, 0, 1), Buffer("b", 8, 0, 0, 16), Buffer("c", 3, 0, 0, 4)))
    plan = run("naive", p)
    assert plan.offsets == (0, 16, 24)
    assert plan.arena_size == 27


def test_fixed_buffers_stay_and_others_stack_above():
    p = Problem((Buffer("a", 10, 0, 1), Buffer("f", 20, 0, 1, fixed_offset=100), Buffer("b", 5, 2, 2)))
    plan = run("naive", p, Params())
    assert plan.offsets == (120, 100, 130)
    assert violations(p, plan.offsets, plan.arena_size) == []
