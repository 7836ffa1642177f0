"""params: what every planner takes besides the problem; a bad time limit is a usage error."""

from __future__ import annotations

import math

import pytest

from arena_tool.plan import planners
from arena_tool.core.errors import EXIT_USAGE, ArenaError


BAD = [0, -1, math.nan, math.inf, -math.inf, True, "1"]


@pytest.mark.parametrize("value", BAD)
def test_params_rejects(value: float) -> None:
    with pytest.raises(ArenaError) as info:
        planners.Params(time_limit=value)
    assert info.value.field == "time_limit" and info.value.exit_code == EXIT_USAGE


def test_a_good_limit_is_kept_and_progress_is_not_part_of_equality() -> None:
    a = planners.Params(time_limit=0.5)
    assert a.time_limit == 0.5
    assert a == planners.Params(time_limit=0.5, progress=object())  # type: ignore[arg-type]
    assert a != planners.Params(time_limit=1.0)


def test_the_hint_spells_the_field_as_the_user_wrote_it() -> None:
    with pytest.raises(ArenaError) as flag:
        planners.check_time_limit(0, field="--time-limit")
    with pytest.raises(ArenaError) as key:
        planners.check_time_limit(0)
    assert "--time-limit 10" in (flag.value.hint or "") and "time_limit: 10" in (key.value.hint or "")
