"""Run every registered planner side by side on models, CSV problems and random problems.

    python bench/bench.py [--models DIR ...] [--csv DIR ...] [--random N --seed S
                          [--buffers B] [--mode network|tiled]] [--time-limit T]
                          [--planners NAME ...]

Per problem: buffers, the load lower bound, and per planner its arena, gap to the
bound, time and status (for ``optimal``: proven or not). Every plan is checked
with arena_tool.plan.validate (capacity aside: a plan over a CSV's capacity is
reported, not rejected). The summary gives each planner's ratio to the best
*peer* (``PEERS``: TFLM greedy_size, TVM greedy_conflicts and hill_climb, XLA,
TFLite GPU and CPU) on the same problem, measured in this run.
Random problems: N problems from bench/problems.py, seeds S..S+N-1, with B
buffers each, or sizes spread over 50..500 when B is not given; --mode tiled
draws the harder cut-rectangle problems (bench/problems.py: tiled_problem).
"""

from __future__ import annotations

import argparse
import glob
import math
import os
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from arena_tool.model import csvio  # noqa: E402
from arena_tool.plan import validate  # noqa: E402
from arena_tool.core.errors import ArenaError  # noqa: E402
from arena_tool.plan.planners import PLANNERS, Params  # noqa: E402
from arena_tool.core.problem import Plan, Problem, lower_bound  # noqa: E402
from bench.problems import MODES, random_problem  # noqa: E402


PEERS = ("greedy_size", "greedy_conflicts", "hill_climb", "xla_best_fit", "tflite_gpu", "tflite_cpu")


def problems(args: argparse.Namespace) -> Iterator[tuple[str, Problem]]:
    """Yield (name, Problem) in a stable order."""
    for d in args.models:
        from arena_tool.model import liveness
        from arena_tool.core.problem import ModelOptions
        for path in sorted(glob.glob(os.path.join(d, "*.onnx"))):
            try:
                yield os.path.basename(path), liveness.model_problem(path, ModelOptions()).problem()
            except ArenaError as e:
                print(f"skip {path}: {e}", file=sys.stderr)
    for d in args.csv:
        for path in sorted(glob.glob(os.path.join(d, "*.csv"))):
            yield os.path.basename(path), csvio.read_problem(path)
    for k in range(args.random):
        seed = args.seed + k
        n = args.buffers or 50 + (seed * 97) % 451
        tag = "" if args.mode == "network" else f"{args.mode}-"
        yield f"random-{tag}{n}-s{seed}", random_problem(n, seed, mode=args.mode)


def run_one(name: str, fn: Callable[[Problem, Params], Plan], problem: Problem, params: Params) -> dict[str, Any]:
    t0 = time.perf_counter()
    plan = fn(problem, params)
    secs = time.perf_counter() - t0
    bad = validate.violations(Problem(problem.buffers), plan.offsets, plan.arena_size)
    return {"arena": plan.arena_size, "secs": secs, "status": plan.status, "optimal": plan.optimal,
            "bound": plan.best_bound, "valid": not bad, "why": bad[0].message if bad else ""}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", nargs="*", default=[], help="folders of .onnx models")
    ap.add_argument("--csv", nargs="*", default=[], help="folders of minimalloc CSV problems")
    ap.add_argument("--random", type=int, default=0, help="number of random problems")
    ap.add_argument("--seed", type=int, default=0, help="first random seed")
    ap.add_argument("--buffers", type=int, default=0, help="buffers per random problem (default 50..500)")
    ap.add_argument("--mode", choices=MODES, default="network",
                    help="random generator: network chains (default) or tiled (hard, challenge-like)")
    ap.add_argument("--time-limit", type=float, default=10.0, help="seconds per exact planner run")
    ap.add_argument("--planners", nargs="*", default=None, help="planner names (default: all registered)")
    args = ap.parse_args(argv)
    names = args.planners or sorted(PLANNERS)
    unknown = [n for n in names if n not in PLANNERS]
    if unknown:
        ap.error(f"unknown planner(s) {unknown}; expected one of {sorted(PLANNERS)}")
    params = Params(time_limit=args.time_limit)
    ratios: dict[str, list[float]] = {n: [] for n in names}
    secs: dict[str, float] = {n: 0.0 for n in names}
    at_lb: dict[str, int] = {n: 0 for n in names}
    proven = count = invalid = 0
    for pname, problem in problems(args):
        count += 1
        lb = lower_bound(problem.buffers)
        cap = f" capacity {problem.capacity}" if problem.capacity is not None else ""
        print(f"\n== {pname}: {len(problem.buffers)} buffers, lower bound {lb}{cap}")
        print(f"   {'planner':18} {'arena':>12} {'gap%':>7} {'secs':>8}  status")
        rows = {}
        for n in names:
            r = rows[n] = run_one(n, PLANNERS[n], problem, params)
            gap = 100.0 * (r["arena"] / lb - 1) if lb else 0.0
            note = r["status"]
            if r["status"] != "proven" and r["bound"] is not None and r["optimal"] is False:
                note += f" (bound {r['bound']})"
            if problem.capacity is not None and r["arena"] > problem.capacity:
                note += " over capacity"
            if not r["valid"]:
                note += f" INVALID: {r['why']}"
                invalid += 1
            print(f"   {n:18} {r['arena']:>12} {gap:>7.2f} {r['secs']:>8.3f}  {note}", flush=True)
            secs[n] += r["secs"]
            at_lb[n] += r["arena"] == lb
        if "optimal" in rows:
            proven += rows["optimal"]["optimal"] is True
        peers = [rows[n]["arena"] for n in names if n in PEERS and rows[n]["valid"]]
        if peers and min(peers) > 0:
            best = min(peers)
            for n in names:
                ratios[n].append(rows[n]["arena"] / best)
    print(f"\n== summary over {count} problems (ratio = arena / best peer arena on the same problem)")
    print(f"   {'planner':18} {'geomean':>8} {'max':>8} {'at LB':>6} {'secs':>9}")
    for n in names:
        rs = ratios[n]
        gm = math.exp(sum(math.log(r) for r in rs) / len(rs)) if rs else float("nan")
        mx = max(rs) if rs else float("nan")
        print(f"   {n:18} {gm:>8.4f} {mx:>8.4f} {at_lb[n]:>6} {secs[n]:>9.2f}")
    if "optimal" in names:
        print(f"   optimal proved {proven} of {count}")
    if invalid:
        print(f"   {invalid} INVALID plans")
    return 1 if invalid else 0


if __name__ == "__main__":
    sys.exit(main())
