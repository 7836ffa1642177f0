"""Planner registry: the one place a name maps to a planner.

A planner is a pure function ``plan(problem, params) -> Plan``: it never mutates
the Problem, honours each buffer's alignment and fixed_offset, and says in
``Plan.status`` why it stopped. A new planner is one module, one line here and
one test file.
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, Callable

from arena_tool.errors import ArenaError
from arena_tool.problem import Plan, Problem

if TYPE_CHECKING:
    from arena_tool.progress import Progress


@dataclasses.dataclass(frozen=True)
class Params:
    """Planner options.

    k: bytes, coarsening unit of exact_cover (sizes rounded up to multiples of k).
    time_limit: seconds, finite and > 0; every planner returns within about it
      (a one-pass planner cut short stacks the rest, status 'time_limit').
    max_rows: exact_cover's cap on the cover matrix size (rows), to bound memory.
    seed: for planners with randomness (hill_climb).
    progress: a status line the searches update (arena_tool.progress); None: silent
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


PlannerFn = Callable[[Problem, Params], Plan]

from arena_tool.planners import naive  # noqa: E402
from arena_tool.planners import exact_cover, first_fit, greedy_size  # noqa: E402
from arena_tool.planners import greedy_conflicts, hill_climb, optimal, tflite_cpu, tflite_gpu, xla_best_fit  # noqa: E402

PLANNERS: dict[str, PlannerFn] = {
    "naive": naive.plan,
    "first_fit": first_fit.plan,
    "greedy_size": greedy_size.plan,
    "exact_cover": exact_cover.plan,
    "optimal": optimal.plan,
    "greedy_conflicts": greedy_conflicts.plan,
    "hill_climb": hill_climb.plan,
    "xla_best_fit": xla_best_fit.plan,
    "tflite_gpu": tflite_gpu.plan,
    "tflite_cpu": tflite_cpu.plan,
}


def run(name: str, problem: Problem, params: Params = Params()) -> Plan:
    """Plan with the named planner; the caller validates (see validate.check).

    With ``params.progress`` the status line is started here and erased on return.
    """
    progress = params.progress
    if progress is None:
        return PLANNERS[name](problem, params)
    progress.start(name)
    try:
        return PLANNERS[name](problem, params)
    finally:
        progress.finish()
