"""clock: a Deadline reads the clock only every ``every`` polls, and once passed stays passed."""

from __future__ import annotations

import time

from arena_tool.plan.planners.clock import EVERY, Deadline


def test_a_passed_deadline_is_seen_at_the_every_th_poll_then_at_once() -> None:
    d = Deadline(time.perf_counter() - 1.0, every=3)
    assert [d.expired() for _ in range(3)] == [False, False, True]
    assert d.hit and d.expired() and d.passed()


def test_a_future_deadline_never_expires_and_counts_its_time_left() -> None:
    d = Deadline.after(60.0)
    assert not any(d.expired() for _ in range(5 * EVERY))
    assert not d.passed() and 59.0 < d.left() <= 60.0


def test_time_left_is_never_negative() -> None:
    d = Deadline(time.perf_counter() - 5.0)
    assert d.left() == 0.0
    assert not d.hit and d.passed() and d.hit  # passed() reads the clock at once
