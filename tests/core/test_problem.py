"""problem: the shared vocabulary's arithmetic (the load bound, alignment, arena size, how names
and byte counts are written), each against a plain re-computation."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from arena_tool.core.problem import Buffer, Plan, Status, align_up, arena_size, elide, fmt_bytes, lower_bound

SCHEMA = Path(__file__).resolve().parents[2] / "schemas" / "plan.schema.json"


def _load_by_op(buffers: list[Buffer]) -> int:
    horizon = max((b.end for b in buffers), default=-1) + 1
    return max((sum(b.size for b in buffers if b.start <= t <= b.end) for t in range(horizon)), default=0)


def test_lower_bound_is_the_largest_load_at_one_op() -> None:
    rng = random.Random(3)
    for _ in range(200):
        bufs = []
        for i in range(rng.randint(0, 12)):
            s = rng.randint(0, 9)
            bufs.append(Buffer(f"b{i}", rng.randint(1, 100), s, rng.randint(s, 9)))
        assert lower_bound(bufs) == _load_by_op(bufs)


def test_live_ranges_are_inclusive() -> None:
    touching = [Buffer("a", 10, 0, 3), Buffer("b", 7, 4, 5)]
    sharing = [Buffer("a", 10, 0, 3), Buffer("b", 7, 3, 5)]
    assert lower_bound(touching) == 10 and lower_bound(sharing) == 17


@pytest.mark.parametrize("alignment", [1, 4, 16, 24])
def test_align_up_is_the_next_multiple(alignment: int) -> None:
    for value in range(0, 100):
        up = align_up(value, alignment)
        assert up % alignment == 0 and value <= up < value + alignment


def test_arena_size_is_the_highest_end() -> None:
    bufs = [Buffer("a", 10, 0, 0), Buffer("b", 5, 0, 0), Buffer("c", 1, 1, 1)]
    assert arena_size(bufs, [0, 30, 12]) == 35
    assert arena_size([], []) == 0


def test_elide_keeps_both_ends_within_the_width() -> None:
    name = "StatefulPartitionedCall/" + "y" * 200 + "/BiasAdd"
    for width in (8, 20, 48):
        short = elide(name, width)
        head, tail = short.split("...")
        assert len(short) == width and name.startswith(head) and name.endswith(tail)
    assert elide("conv1", 48) == "conv1"


def test_fmt_bytes_groups_thousands() -> None:
    assert fmt_bytes(65536) == "65,536 B" and fmt_bytes(0) == "0 B"


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
