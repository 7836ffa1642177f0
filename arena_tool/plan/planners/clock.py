"""A planner's time budget, cheap enough to poll in every loop.

Why: ``Params.time_limit`` holds for every planner, and time goes not only to
the search but to setup (conflict lists, greedy seeds, the search instance).
Each of those loops polls one ``Deadline``; the clock is read every ``every``
polls only, and once the deadline has passed it stays passed (``hit``), so
every later helper sees it at its first poll and takes its cheap way out.
The first clock read comes after ``every`` polls, so a problem of a couple
dozen buffers (a conflict sweep and one or two placement passes: a poll per
buffer each, microseconds) is never cut: small problems get whole layouts.

    deadline = Deadline.after(params.time_limit)
    for i in order:
        if deadline.expired():
            break  # then finish the layout cheaply (placement.stack_rest)
"""

from __future__ import annotations

import time

EVERY = 64  # polls between clock reads; a poll is one placement or one sweep step


class Deadline:
    """``at``: a time.perf_counter() value; ``hit``: it was seen passed."""

    def __init__(self, at: float, every: int = EVERY) -> None:
        self.at = at
        self.every = every
        self.hit = False
        self._countdown = every

    @classmethod
    def after(cls, seconds: float) -> "Deadline":
        return cls(time.perf_counter() + seconds)

    def expired(self) -> bool:
        """Polled in loops: reads the clock only every ``every`` calls."""
        if self.hit:
            return True
        self._countdown -= 1
        if self._countdown:
            return False
        self._countdown = self.every
        return self.passed()

    def passed(self) -> bool:
        """Reads the clock now (between expensive steps)."""
        if not self.hit and time.perf_counter() > self.at:
            self.hit = True
        return self.hit

    def left(self) -> float:
        """Seconds left, never negative."""
        return max(0.0, self.at - time.perf_counter())
