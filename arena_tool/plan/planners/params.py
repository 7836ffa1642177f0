"""What every planner takes besides the problem: its own module, so the planners can import it
while the registry (planners/__init__) imports them."""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING

from arena_tool.core.errors import ArenaError

if TYPE_CHECKING:
    from arena_tool.core.progress import Progress


@dataclasses.dataclass(frozen=True)
class Params:
    """Planner options.

    k: bytes, coarsening unit of exact_cover (sizes rounded up to multiples of k).
    time_limit: seconds, finite and > 0; every planner returns within about it
      (a one-pass planner cut short stacks the rest, status 'time_limit').
    max_rows: exact_cover's cap on the cover matrix size (rows), to bound memory.
    seed: for planners with randomness (hill_climb).
    progress: a status line the searches update (arena_tool.core.progress); None: silent
      and free.
    """

    k: int = 1
    time_limit: float = 10.0
    max_rows: int = 2_000_000
    seed: int = 0
    progress: "Progress | None" = dataclasses.field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        check_time_limit(self.time_limit)


def check_time_limit(seconds: object, field: str = "time_limit") -> None:
    """A time limit is a finite number of seconds > 0: 0, negative, NaN or inf is a usage error."""
    ok = isinstance(seconds, (int, float)) and not isinstance(seconds, bool) and math.isfinite(seconds) \
        and seconds > 0
    if not ok:
        example = f"{field} 10" if field.startswith("--") else f"{field}: 10"
        raise ArenaError(f"invalid time limit {seconds!r}: must be a finite number of seconds > 0",
                         field=field, hint=f"give the seconds of search, e.g. {example} or 0.5")
