from arena_tool.plan import validate
from arena_tool.plan.planners import Params, greedy_conflicts
from arena_tool.core.problem import Buffer, Problem

from _peer_cases import GAPS, MEDIUM


def run(p):
    plan = greedy_conflicts.plan(p, Params())
    validate.check(p, plan.offsets, plan.arena_size)
    return plan


def test_conflict_order_and_stacking() -> None:
    # conflicts a1 b2 c2 d1 -> order c, b (2 conflicts, larger first), d, a:
    # c@0, b@30 (on c), d@30 (on c), a@50 (on b) -> 70 = the load bound (c + d at op 3)
    p = Problem((Buffer("a", 10, 0, 1), Buffer("b", 20, 1, 2), Buffer("c", 30, 2, 3), Buffer("d", 40, 3, 3)))
    plan = run(p)
    assert plan.offsets == (50, 30, 0, 30) and plan.arena_size == 70


def test_no_gap_filling() -> None:
    assert run(GAPS).offsets[3] == 68


def test_rounds_with_the_conflicts_alignment() -> None:
    # a (10 B, align 16) goes first (2 conflicts); c then b (name desc) sit at round_up(10, 16) = 16
    p = Problem((Buffer("a", 10, 0, 2, 16), Buffer("b", 4, 0, 0), Buffer("c", 4, 2, 2)))
    assert run(p).offsets == (0, 16, 16)


def test_medium() -> None:
    # conflicts: b0 2, b1 3, b2 2, b3 1, b4 2 -> b1, then b4 (50), b2 (30), b0 (10), then b3
    # b1@0, b4@20 (on b1), b2@20 (on b1), b0@70 (on b4), b3@50 (on b2) -> 90
    plan = run(MEDIUM)
    assert plan.offsets == (70, 0, 20, 50, 20) and plan.arena_size == 90
