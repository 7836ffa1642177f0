"""planners (the registry): every name maps to a planner that returns a Status, optimal only
when proven."""

from __future__ import annotations

import pytest

from _peer_cases import GAPS
from arena_tool.plan.planners import PLANNERS, Params, run
from arena_tool.core.problem import Status


@pytest.mark.parametrize("name", sorted(PLANNERS))
def test_every_planner_returns_a_status(name: str) -> None:
    plan = run(name, GAPS, Params())
    assert isinstance(plan.status, Status)
    assert plan.optimal == (plan.status == Status.PROVEN) or plan.optimal is None
