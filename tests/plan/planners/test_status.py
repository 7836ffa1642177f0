"""Status: one vocabulary for every planner, Plan and the plan file's schema."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from _peer_cases import GAPS
from arena_tool.plan.planners import PLANNERS, Params, run
from arena_tool.core.problem import Plan, Status

SCHEMA = Path(__file__).resolve().parents[3] / "schemas" / "plan.schema.json"


def test_schema_enum_is_the_status_enum() -> None:
    schema = json.loads(SCHEMA.read_text())
    assert schema["$defs"]["status"]["enum"] == [s.value for s in Status]
    assert schema["properties"]["status"] == {"$ref": "#/$defs/status"}


def test_plain_strings_convert_and_json_is_unchanged() -> None:
    plan = Plan(offsets=(), arena_size=0, planner="naive", optimal=None, status="time_limit", lower_bound=0)
    assert plan.status is Status.TIME_LIMIT and plan.status == "time_limit"
    assert json.dumps({"status": plan.status}) == '{"status": "time_limit"}' and f"{plan.status}" == "time_limit"
    with pytest.raises(ValueError):
        Plan(offsets=(), arena_size=0, planner="naive", optimal=None, status="done", lower_bound=0)


@pytest.mark.parametrize("name", sorted(PLANNERS))
def test_every_planner_returns_a_status(name: str) -> None:
    plan = run(name, GAPS, Params())
    assert isinstance(plan.status, Status)
    assert plan.optimal == (plan.status == Status.PROVEN) or plan.optimal is None
