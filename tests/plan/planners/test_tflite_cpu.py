from arena_tool.plan import validate
from arena_tool.plan.planners import Params, tflite_cpu
from arena_tool.core.problem import Buffer, Problem

from _peer_cases import GAPS, MEDIUM


def run(p):
    plan = tflite_cpu.plan(p, Params())
    validate.check(p, plan.offsets, plan.arena_size)
    return plan


def test_whole_run_tensor_first() -> None:
    # a (8, ops 0..3) lives throughout, so it goes first although b (40) is larger:
    # a@0, b@8, c (16, 2..3)@8, d (8, 2..2)@24 (above a and c)
    p = Problem((Buffer("a", 8, 0, 3), Buffer("b", 40, 0, 1), Buffer("c", 16, 2, 3), Buffer("d", 8, 2, 2)))
    plan = run(p)
    assert plan.offsets == (0, 8, 8, 24) and plan.arena_size == 48


def test_best_fit_takes_smallest_gap() -> None:
    assert run(GAPS).offsets[3] == 48


def test_medium() -> None:
    # no tensor spans ops 0..4; size order as TFLM -> 90
    assert run(MEDIUM).arena_size == 90
