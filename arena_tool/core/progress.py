"""One status line for long searches, redrawn in place on a terminal.

Why: an exact search may use its whole time limit; without a sign of life a
user cannot tell a hard problem from a hung tool. The line appears only after
``DELAY`` seconds (quick plans stay silent), is redrawn with ``\\r`` at most
every ``INTERVAL`` seconds, and ``finish`` erases it, so the summary printed
next starts on a clean line::

    optimal  3.2 s  best 661,200 B  bound 640,000 B  52.1k nodes/s

Cost: planners get it as ``Params.progress`` (None by default: one ``is None``
test where a search loop already reads the clock). The search driver calls
``report`` when its best layout or bound changes, the inner loops ``tick`` with
the nodes done since their last tick; both read the clock only to decide
whether a redraw is due.

Who shows it: ``wanted`` -- on when asked (``--progress``), off when asked
(``--no-progress``); otherwise only when the stream is a terminal and the ``CI``
environment variable is unset. The SCons build shows it only with
``ARENA_PROGRESS=1``.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Callable, TextIO

from arena_tool.core.problem import fmt_bytes

DELAY = 1.0  # seconds of silence before the first line
INTERVAL = 0.1  # seconds between redraws: at most 10 a second


def wanted(stream: TextIO, flag: bool | None = None) -> bool:
    """flag True/False forces it; None: a terminal, and not under CI."""
    if flag is not None:
        return flag
    if os.environ.get("CI"):
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def for_stream(stream: TextIO | None = None, flag: bool | None = None) -> "Progress | None":
    """A Progress on ``stream`` (default stderr) if ``wanted``, else None."""
    stream = sys.stderr if stream is None else stream
    return Progress(stream) if wanted(stream, flag) else None


class Progress:
    """The line's state: planner label, best arena, proven bound, node count."""

    def __init__(self, stream: TextIO, delay: float = DELAY, interval: float = INTERVAL,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.stream = stream
        self.delay = delay
        self.interval = interval
        self.clock = clock
        self.start()

    def start(self, label: str = "") -> None:
        self.label = label
        self.best: int | None = None
        self.bound: int | None = None
        self.nodes = 0
        self.t0 = self.clock()
        self.next_draw = self.t0 + self.delay
        self.shown = 0  # characters of the line on screen

    def report(self, best: int | None = None, bound: int | None = None) -> None:
        """The driver's news: a better arena, a higher proven bound."""
        if best is not None:
            self.best = best
        if bound is not None:
            self.bound = bound
        self._maybe_draw()

    def tick(self, nodes: int) -> None:
        """``nodes`` more search nodes (or attempts) done."""
        self.nodes += nodes
        self._maybe_draw()

    def line(self, now: float) -> str:
        elapsed = now - self.t0
        parts = [self.label, f"{elapsed:.1f} s"] if self.label else [f"{elapsed:.1f} s"]
        if self.best is not None:
            parts.append(f"best {fmt_bytes(self.best)}")
        if self.bound is not None:
            parts.append(f"bound {fmt_bytes(self.bound)}")
        if self.nodes:
            parts.append(f"{_si(self.nodes / max(elapsed, 1e-9))} nodes/s")
        return "  ".join(parts)

    def _maybe_draw(self) -> None:
        now = self.clock()
        if now < self.next_draw:
            return
        self.next_draw = now + self.interval
        text = self.line(now)[:self._columns() - 1]
        pad = max(0, self.shown - len(text))
        self._write("\r" + text + " " * pad)
        self.shown = len(text)

    def finish(self) -> None:
        """Erase the line if it was drawn (the cursor ends at column 0)."""
        if self.shown:
            self._write("\r" + " " * self.shown + "\r")
            self.shown = 0

    def _columns(self) -> int:
        """Terminal width: a wrapped line could not be redrawn with a carriage return."""
        try:
            return os.get_terminal_size(self.stream.fileno()).columns or 80
        except (OSError, AttributeError, ValueError):
            return 80

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # a closed or vanished terminal must not stop the search
            self.shown = 0
            self.next_draw = float("inf")


def _si(x: float) -> str:
    """52100.0 -> '52.1k': short rates for a narrow line."""
    for unit, scale in (("M", 1e6), ("k", 1e3)):
        if x >= scale:
            return f"{x / scale:.1f}{unit}"
    return f"{x:.0f}"
