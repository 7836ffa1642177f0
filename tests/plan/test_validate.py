"""The independent validator: a valid plan passes, each Reason has a trigger."""

import pytest

from arena_tool.core.problem import Buffer, Problem
from arena_tool.plan.validate import Reason, check, violations

A = Buffer("a", 10, 0, 1, 4)
B = Buffer("b", 10, 1, 2, 4)
C = Buffer("c", 10, 2, 2, 4)  # dies with b at op 2, never meets a
P = Problem((A, B, C))


def reasons(p: Problem, offsets, arena):
    return {v.reason for v in violations(p, offsets, arena)}


def test_a_valid_plan_passes():
    assert violations(P, (0, 12, 0), 22) == []
    check(P, (0, 12, 0), 22)


def test_time_disjoint_buffers_may_share_bytes():
    p = Problem((Buffer("x", 8, 0, 0), Buffer("y", 8, 1, 1)))
    assert violations(p, (0, 0), 8) == []


@pytest.mark.parametrize("problem, offsets, arena, reason", [
    (P, (0, 8, 20), 30, Reason.OVERLAP),                       # a [0,10) and b [8,18) at op 1
    (P, (0, 12, 16), 26, Reason.OVERLAP),                      # b and c at op 2
    (P, (0, 14, 1), 24, Reason.MISALIGNED),                    # c at 1, alignment 4
    (P, (-4, 12, 0), 22, Reason.NEGATIVE),
    (P, (0, 12, 0), 20, Reason.BEYOND_ARENA),                  # b ends at 22
    (Problem(P.buffers, capacity=20), (0, 12, 0), 22, Reason.BEYOND_CAPACITY),
    (Problem((A, Buffer("f", 4, 0, 0, 4, fixed_offset=16))), (0, 12), 16, Reason.FIXED_MOVED),
    (P, (0, 12, 0), 40, Reason.ARENA_SIZE),                    # valid bytes, arena_size overstated
    (Problem((Buffer("x", 10, 0, 0), Buffer("y", 10, 0, 0))), (0, 0), 10, Reason.BELOW_BOUND),
    (P, (0, 12), 22, Reason.COUNT),
])
def test_each_reason_is_reported(problem, offsets, arena, reason):
    found = reasons(problem, offsets, arena)
    assert reason in found
    with pytest.raises(AssertionError, match=reason.value):
        check(problem, offsets, arena)


def test_overlap_names_both_buffers():
    (v,) = violations(P, (0, 8, 20), 30)
    assert v.reason is Reason.OVERLAP
    assert "a [0, 10)" in v.message and "b [8, 18)" in v.message


def test_touching_ends_do_not_overlap():
    p = Problem((Buffer("x", 10, 0, 0), Buffer("y", 10, 0, 0)))
    assert violations(p, (0, 10), 20) == []
    assert reasons(p, (0, 9), 20) == {Reason.OVERLAP}
