from arena_tool.plan import validate
from arena_tool.plan.planners import Params, tflite_gpu
from arena_tool.core.problem import Buffer, Problem

from _peer_cases import GAPS, MEDIUM


def run(p):
    plan = tflite_gpu.plan(p, Params())
    validate.check(p, plan.offsets, plan.arena_size)
    return plan


def test_medium_matches_tflm_greedy() -> None:
    # size order 50, 40, 30, 20, 10; each at the smallest fitting gap -> same as TFLM's 90
    plan = run(MEDIUM)
    assert plan.offsets == (50, 70, 40, 0, 0) and plan.arena_size == 90 and plan.status == "heuristic"


def test_best_fit_takes_smallest_gap() -> None:
    assert run(GAPS).offsets[3] == 48


def test_size_order_and_stacking() -> None:
    # a(32,0,1) c(24,2,3) d(16,2,2) b(8,1,2): a@0, c@0 (a dead), d@24 on c, b above a, c, d -> 40
    p = Problem((Buffer("a", 32, 0, 1), Buffer("b", 8, 1, 2), Buffer("c", 24, 2, 3), Buffer("d", 16, 2, 2)))
    plan = run(p)
    assert plan.offsets == (0, 40, 0, 24) and plan.arena_size == 48


def test_alignment_of_ends() -> None:
    p = Problem((Buffer("a", 10, 0, 1), Buffer("b", 4, 0, 1, 16)))
    assert run(p).offsets == (0, 16)
