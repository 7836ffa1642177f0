"""Planner registry: the one place a name maps to a planner.

A planner is a pure function ``plan(problem, params) -> Plan``: it never mutates
the Problem, honours each buffer's alignment and fixed_offset, and says in
``Plan.status`` why it stopped. A new planner is one module, its name and its
import here (``_load``) and one test file.

``run_planner`` (validated, within a time limit that counts what its clock does not) is
here and not in ``planning``, which re-exports it: ``plan --problem`` needs only this, and
``planning``'s model stack imports onnx, 1.0 CPU-s of a CSV plan's start-up (issue 39: the
time limit counts the start-up, on a loaded machine several times over).
"""

from __future__ import annotations

import dataclasses
import time
from typing import Callable, Iterator, MutableMapping, Sequence

from arena_tool.plan.planners.params import Params as Params, check_time_limit as check_time_limit  # re-exported: callers say planners.Params
from arena_tool.plan import validate
from arena_tool.core.errors import ArenaBug, ArenaError, did_you_mean
from arena_tool.core.problem import Plan, Problem

PlannerFn = Callable[[Problem, Params], Plan]

DEFAULT_PLANNER = "optimal"  # a manifest's, and the command line's (here: a CSV plan imports no manifest)


def _load(name: str) -> PlannerFn:  # noqa: C901 - one import per planner, nothing else
    """The named planner's ``plan``, its module imported now."""
    if name == "naive":
        from arena_tool.plan.planners import naive
        return naive.plan
    if name == "first_fit":
        from arena_tool.plan.planners import first_fit
        return first_fit.plan
    if name == "greedy_size":
        from arena_tool.plan.planners import greedy_size
        return greedy_size.plan
    if name == "exact_cover":
        from arena_tool.plan.planners import exact_cover
        return exact_cover.plan
    if name == "optimal":
        from arena_tool.plan.planners import optimal
        return optimal.plan
    if name == "greedy_conflicts":
        from arena_tool.plan.planners import greedy_conflicts
        return greedy_conflicts.plan
    if name == "hill_climb":
        from arena_tool.plan.planners import hill_climb
        return hill_climb.plan
    if name == "xla_best_fit":
        from arena_tool.plan.planners import xla_best_fit
        return xla_best_fit.plan
    if name == "tflite_gpu":
        from arena_tool.plan.planners import tflite_gpu
        return tflite_gpu.plan
    from arena_tool.plan.planners import tflite_cpu
    return tflite_cpu.plan


class _Registry(MutableMapping[str, PlannerFn]):
    """name -> planner, each module imported on first use: a CSV plan with ``optimal`` imports
    neither exact_cover's matrix code nor the one-pass planners it does not run (issue 39: the
    time limit and the CPU against minimalloc count the start-up)."""

    def __init__(self, names: Sequence[str]) -> None:
        self._fns: dict[str, PlannerFn | None] = dict.fromkeys(names)

    def __getitem__(self, name: str) -> PlannerFn:
        fn = self._fns[name]
        if fn is None:
            fn = self._fns[name] = _load(name)
        return fn

    def __setitem__(self, name: str, fn: PlannerFn) -> None:
        self._fns[name] = fn

    def __delitem__(self, name: str) -> None:
        del self._fns[name]

    def __contains__(self, name: object) -> bool:  # without importing it
        return name in self._fns

    def __iter__(self) -> Iterator[str]:
        return iter(self._fns)

    def __len__(self) -> int:
        return len(self._fns)


PLANNERS: MutableMapping[str, PlannerFn] = _Registry(("naive", "first_fit", "greedy_size", "exact_cover", "optimal",
                                                       "greedy_conflicts", "hill_climb", "xla_best_fit",
                                                       "tflite_gpu", "tflite_cpu"))


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


def planner_names() -> list[str]:
    return sorted(PLANNERS)


def check_planner_name(name: str, field: str = "planner", file: str | None = None) -> None:
    if name not in PLANNERS:
        raise ArenaError(f"unknown planner '{name}'", field=field, file=file,
                         hint=f"{did_you_mean(name, planner_names())}expected one of {', '.join(planner_names())}")


# per buffer, what comes after the planner's clock: the validation (~1.3 us, validate.c), writing
# (~0.7 us, a column at a time), the summary and the interpreter's exit (the problem's objects
# frozen out of the collector): 0.26 CPU-s measured at 100,000 buffers, 4 us with a margin. The
# planner's own setup (the load bound, optimal's instance and first walk) runs on its clock:
# reserving it here too only shortened the search (15 us a buffer before, issue 39)
RESERVE_SECONDS_PER_BUFFER = 4e-6
LEAST_SECONDS = 0.01  # a planner's limit when nothing is left: it still returns a layout


def planner_limit(time_limit: float, buffers: int, spent: float = 0.0, slowness: float = 1.0) -> float:
    """What of ``time_limit`` the planner may take: less ``spent`` (start-up, reading the
    problem) and the reserve for what comes after its clock (validation, writing, exit), so the whole command ends within the limit (issue 39: at 100,000 buffers
    the validation alone once ran 11 s past it). ``slowness``: wall seconds per CPU second
    so far (a loaded machine; at least 1), which the reserve's work will take as well."""
    return max(LEAST_SECONDS, time_limit - spent - RESERVE_SECONDS_PER_BUFFER * buffers * max(1.0, slowness))


def run_planner(name: str, problem: Problem, params: Params, spent: float = 0.0,
                slowness: float = 1.0) -> Plan:
    """Run and validate within ``params.time_limit`` (``planner_limit``: ``spent`` seconds
    of it are already gone, at ``slowness``); the plan's seconds are measured here, around the planner."""
    check_planner_name(name)
    limit = planner_limit(params.time_limit, len(problem.buffers), spent, slowness)
    t0 = time.perf_counter()
    plan = run(name, problem, dataclasses.replace(params, time_limit=limit))
    seconds = time.perf_counter() - t0
    # Over capacity is an answer (the caller reports it), not a broken plan.
    bad = validate.violations(dataclasses.replace(problem, capacity=None), plan.offsets, plan.arena_size)
    if bad:
        first = bad[0]
        raise ArenaBug(f"planner {name} returned an invalid plan: {first.reason.value}: {first.message}")
    return dataclasses.replace(plan, seconds=seconds)
