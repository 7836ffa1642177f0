from arena_tool.plan import validate
from arena_tool.plan.planners import Params, tflite_gpu, xla_best_fit
from arena_tool.core.problem import Buffer, Problem

from _peer_cases import GAPS


def run(p):
    plan = xla_best_fit.plan(p, Params())
    validate.check(p, plan.offsets, plan.arena_size)
    return plan


def test_temporal_wins_when_smaller() -> None:
    # a(30,1,1) b(20,2,3) c(10,1,2) d(20,3,5)
    # spatial a, d, b, c: a@0, d@0, b@20, c@40 -> 50
    # temporal d, b, c, a: d@0, b@20, c@0 (gap below b), a@10 (room up to the heap top 40) -> 40
    p = Problem((Buffer("a", 30, 1, 1), Buffer("b", 20, 2, 3), Buffer("c", 10, 1, 2), Buffer("d", 20, 3, 5)))
    plan = run(p)
    assert plan.offsets == (10, 20, 0, 0) and plan.arena_size == 40 and dict(plan.stats)["temporal"] == 1


def test_heap_top_room_is_a_free_chunk() -> None:
    # gap [5, 30) of 25 B below, room [35, 55) of 20 B up to the heap top (b): best fit takes the room;
    # TFLite GPU, which has no heap-top chunk, takes the gap
    p = Problem((Buffer("f1", 5, 0, 1, 1, 0), Buffer("f2", 5, 0, 1, 1, 30), Buffer("b", 55, 2, 2, 1, 0),
                 Buffer("x", 20, 0, 1)))
    assert run(p).offsets[3] == 35
    assert tflite_gpu.plan(p, Params()).offsets[3] == 5


def test_best_fit() -> None:
    assert run(GAPS).offsets[3] == 48
