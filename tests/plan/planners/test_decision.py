"""decision: both exact searches answer "is there a layout under this capacity?" in one
vocabulary (found, infeasible, aborted), which their planners turn into a Status."""

from __future__ import annotations

import time

from arena_tool.core.problem import Buffer
from arena_tool.plan.planners import dlx
from arena_tool.plan.planners.decision import Decision
from arena_tool.plan.planners.search import decide
from arena_tool.plan.planners.sections import instance, preorder


def test_branch_and_bound_answers_each_decision() -> None:
    inst = instance([Buffer("a", 10, 0, 1), Buffer("b", 10, 1, 2), Buffer("c", 10, 2, 3)])
    rank = preorder(inst, "WAT")
    assert decide(inst, 20 // inst.unit, rank).status == Decision.FOUND
    assert decide(inst, 19 // inst.unit, rank).status == Decision.INFEASIBLE
    assert decide(inst, 20 // inst.unit, rank, deadline=0.0).status == Decision.ABORTED


def test_dancing_links_answers_in_the_same_vocabulary() -> None:
    ec = dlx.ExactCover(2, 0)
    ec.add_row([0])
    assert ec.solve(time.perf_counter() + 10) == (Decision.INFEASIBLE, [])  # column 1 is never covered
    ec.add_row([1])
    assert ec.solve(time.perf_counter() + 10) == (Decision.FOUND, [0, 1])

