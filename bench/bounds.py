"""How far from proven is a plan: lower bounds above the load bound, and the best layout.

    python3 bench/bounds.py D J [--limit 60] [--relax 120] [--step 20] [--slack 0.02] [--cpsat 0]

For each problem (a challenge letter A-K as bench/problems.py names them, or a minimalloc CSV)
it prints the load bound, the best bound it proved and how, the best layout found (checked by
arena's validator, plan/validate.py) and the CPU seconds each step took. The bounds:

- units: with every size and alignment a multiple of g, some optimal layout has every offset a
  multiple of g (push each buffer down until it rests on another or on 0), so a bound rounds up
  to a multiple of g: "infeasible at B" proves B + g.
- sections: a relaxation that CAN be infeasible at the load bound, where the time windows of
  earlier passes (consecutive sections, buffers clipped to them) could not. Any subset S of the
  problem's sections, each buffer kept with its live sections in S, is again an interval problem
  (a buffer's live sections are consecutive, so they stay consecutive in S), and its optimum is a
  lower bound of the whole problem's. Only maximal sections count (a live set inside a
  neighbour's adds nothing). S starts as the sections within ``--slack`` of the peak and grows
  like a cutting-plane loop, each relaxation one decision of optimal's search at a target (the
  load bound first): infeasible proves target + g for the whole problem and asks again there;
  found, the most loaded section its layout breaks (an overlap, or a live buffer it never
  placed) joins S, and none broken, that layout is the whole problem's at the target, an
  optimum; aborted (``--step`` seconds), the line says how much of the problem (sections,
  buffers) is known to fit at the target, i.e. how far from a proof the bound is.
- cp-sat (``--cpsat SECONDS``, needs ``pip install ortools``; skipped cleanly without it): OR-Tools'
  clause-learning CP-SAT minimises the height of the whole problem (one NoOverlap of the offsets per
  section, sizes in units of g, the best layout as a hint); its best objective bound is a lower
  bound, its layout a candidate.

The layout comes from ``optimal`` on the whole problem (``--limit`` seconds) and CP-SAT's when
that is lower. CPU seconds are the process's (CP-SAT's threads included); the machine's load
does not change them much, wall time would.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from dataclasses import dataclass
from functools import reduce
from typing import Sequence

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from arena_tool.core.problem import Buffer, Problem, Status, lower_bound  # noqa: E402
from arena_tool.plan import validate  # noqa: E402
from arena_tool.plan.planners import optimal  # noqa: E402
from arena_tool.plan.planners.decision import Decision  # noqa: E402
from arena_tool.plan.planners.params import Params  # noqa: E402
from arena_tool.plan.planners.search import decide_restarts  # noqa: E402
from arena_tool.plan.planners.sections import instance  # noqa: E402
from bench.problems import CHALLENGES, _label, _named  # noqa: E402


@dataclass
class Sections:
    """The problem cut at every start and end: live[k] are the buffers live in section k."""

    live: list[list[int]]
    load: list[int]
    maximal: list[int]  # the sections whose live set no neighbour's contains (the first of equal ones)
    first: list[int]  # first section of buffer i
    last: list[int]  # last section of buffer i (inclusive)


def sections(buffers: Sequence[Buffer]) -> Sections:
    cuts = sorted({b.start for b in buffers} | {b.end + 1 for b in buffers})
    at = {t: k for k, t in enumerate(cuts)}
    first = [at[b.start] for b in buffers]
    last = [at[b.end + 1] - 1 for b in buffers]
    live: list[list[int]] = [[] for _ in range(max(0, len(cuts) - 1))]
    for i in range(len(buffers)):
        for k in range(first[i], last[i] + 1):
            live[k].append(i)
    load = [sum(buffers[i].size for i in ls) for ls in live]
    # a live set inside another section's is inside a neighbour's (lives are intervals)
    sets = [set(ls) for ls in live]
    maximal = [k for k in range(len(live))
               if not (k > 0 and sets[k] <= sets[k - 1]) and not (k + 1 < len(live) and sets[k] < sets[k + 1])]
    return Sections(live, load, maximal, first, last)


def unit(buffers: Sequence[Buffer]) -> int:
    """g: every size, alignment and fixed offset is a multiple of it, so some optimal layout's
    offsets are too."""
    fixed = [b.fixed_offset for b in buffers if b.fixed_offset is not None]
    return reduce(math.gcd, [b.size for b in buffers] + [b.alignment for b in buffers] + fixed, 0) or 1


def round_up(value: int, g: int) -> int:
    return -(-value // g) * g


def relaxation(buffers: Sequence[Buffer], sec: Sections, chosen: Sequence[int]) -> tuple[Problem, list[int]]:
    """The sections ``chosen`` alone, renumbered 0..len-1: each buffer live in any of them keeps
    exactly those (consecutive again); returns the problem and its buffers' indices in ``buffers``."""
    chosen = sorted(chosen)
    out: list[Buffer] = []
    index: list[int] = []
    for i, b in enumerate(buffers):
        mine = [j for j, k in enumerate(chosen) if sec.first[i] <= k <= sec.last[i]]
        if mine:
            out.append(Buffer(b.name, b.size, mine[0], mine[-1], b.alignment, b.fixed_offset))
            index.append(i)
    return Problem(tuple(out)), index


def violated(buffers: Sequence[Buffer], sec: Sections, chosen: set[int], index: Sequence[int],
             offsets: Sequence[int]) -> list[int]:
    """Sections outside ``chosen`` that the relaxation's layout breaks: a live buffer without an
    offset, or two live buffers overlapping."""
    at = dict(zip(index, offsets))
    bad = []
    for k in sec.maximal:
        ls = sec.live[k]
        if k in chosen:
            continue
        if any(i not in at for i in ls):
            bad.append(k)
            continue
        spans = sorted((at[i], at[i] + buffers[i].size) for i in ls)
        if any(a[1] > b[0] for a, b in zip(spans, spans[1:])):
            bad.append(k)
    return bad


@dataclass
class RelaxResult:
    bound: int  # proven lower bound of the whole problem (>= the load bound)
    how: str
    layout: list[int] | None  # a layout of the whole problem at the load bound, when one was found
    cpu: float


def relax_bound(problem: Problem, budget: float, step: float, slack: float = 0.02) -> RelaxResult:
    """The cutting-plane loop over section subsets described in the module docstring. Each
    relaxation is one decision of optimal's search (``decide_restarts``) at the capacity proven
    so far, ``target``: infeasible raises it by g (a stronger bound), found adds the sections the
    layout breaks (or, none broken, it is the whole problem's optimum), aborted ends the loop."""
    t0 = time.process_time()
    bufs = problem.buffers
    sec = sections(bufs)
    lb = max(sec.load, default=0)
    g = unit(bufs)
    target = lb
    chosen = {k for k in sec.maximal if sec.load[k] >= lb * (1 - slack)}
    fits: tuple[int, int] = (0, 0)  # sections, buffers of the largest relaxation found to fit target
    while True:
        left = budget - (time.process_time() - t0)
        if left <= 0:
            how = "out of --relax time"
            break
        rp, index = relaxation(bufs, sec, sorted(chosen))
        inst = instance(rp.buffers)
        res = decide_restarts(inst, target // inst.unit, time.perf_counter() + min(step, left))
        if res.status == Decision.INFEASIBLE:
            target += g
            continue
        if res.status == Decision.ABORTED:
            how = f"the search aborted on {len(chosen)} sections ({len(index)} buffers)"
            break
        assert res.offsets is not None
        offsets = [int(o) * inst.unit for o in res.offsets]
        fits = (len(chosen), len(index))
        bad = violated(bufs, sec, chosen, index, offsets)
        if not bad:
            at = dict(zip(index, offsets))
            layout = [at.get(i, 0) for i in range(len(bufs))]
            return RelaxResult(target, f"sections: a layout of {len(chosen)} sections fits all {len(sec.maximal)}",
                               layout, time.process_time() - t0)
        chosen |= set(sorted(bad, key=lambda k: -sec.load[k])[:1])
    what = "at the load bound" if target == lb else f"at {target:,} B, nothing below"
    return RelaxResult(target, f"{how}; {fits[0]} of {len(sec.maximal)} sections ({fits[1]} of {len(bufs)} "
                       f"buffers) fit {what}", None, time.process_time() - t0)


@dataclass
class CpResult:
    bound: int
    layout: list[int] | None
    status: str
    cpu: float


def cpsat_bound(problem: Problem, seconds: float, hint: Sequence[int] | None, workers: int = 1) -> CpResult | None:
    """CP-SAT minimising the height; None when ortools is not installed."""
    try:
        from ortools.sat.python import cp_model
    except ImportError:
        return None
    t0 = time.process_time()
    bufs = problem.buffers
    sec = sections(bufs)
    g = unit(bufs)
    lb = max(sec.load, default=0)
    top = sum(b.size for b in bufs) if hint is None else max(o + b.size for o, b in zip(hint, bufs))
    top = max([top] + [b.fixed_offset + b.size for b in bufs if b.fixed_offset is not None])
    m = cp_model.CpModel()
    height = m.new_int_var(lb // g, top // g, "height")
    y = [m.new_int_var(0, (top - b.size) // g, f"y{i}") for i, b in enumerate(bufs)]
    box = [m.new_fixed_size_interval_var(y[i], b.size // g, f"b{i}") for i, b in enumerate(bufs)]
    for i, b in enumerate(bufs):
        m.add(y[i] + b.size // g <= height)
        if b.fixed_offset is not None:
            m.add(y[i] == b.fixed_offset // g)
        elif b.alignment > g:
            m.add_modulo_equality(0, y[i], b.alignment // g)
    for k in sec.maximal:
        m.add_no_overlap([box[i] for i in sec.live[k]])
    if hint is not None:
        for i, o in enumerate(hint):
            m.add_hint(y[i], o // g)
    m.minimize(height)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = seconds
    solver.parameters.num_workers = workers
    status = solver.solve(m)
    layout = None
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        layout = [solver.value(v) * g for v in y]
    bound = max(lb, int(math.ceil(solver.best_objective_bound - 1e-9)) * g)
    return CpResult(bound, layout, solver.status_name(status), time.process_time() - t0)


def height(problem: Problem, offsets: Sequence[int]) -> int:
    return max((o + b.size for o, b in zip(offsets, problem.buffers)), default=0)


def valid(problem: Problem, offsets: Sequence[int]) -> bool:
    return not validate.violations(Problem(problem.buffers), offsets, height(problem, offsets))


def report(name: str, problem: Problem, limit: float, relax: float, step: float, cpsat: float,
           slack: float = 0.02) -> None:
    """Print one problem's lines, each as soon as it is known (a run can take many minutes)."""
    problem = Problem(problem.buffers)  # the capacity is not asked about: the minimum is
    lb = lower_bound(problem.buffers)
    _say(f"{name}: {len(problem.buffers)} buffers, load bound {lb:,} B")
    t0 = time.process_time()
    plan = optimal.plan(problem, Params(time_limit=limit))
    layouts = [("optimal", list(plan.offsets), time.process_time() - t0)]
    bound, how = max(lb, plan.best_bound or 0), "load bound"
    if plan.status == Status.PROVEN:
        bound, how = plan.arena_size, "optimal's search (proven)"
    _say(f"  optimal ({limit:g} s): {plan.arena_size:,} B, {plan.status}, {layouts[0][2]:.1f} CPU-s")
    if bound < plan.arena_size and relax > 0:
        r = relax_bound(problem, relax, step, slack)
        _say(f"  sections ({relax:g} s): {r.how}, {r.cpu:.1f} CPU-s")
        if r.bound > bound or r.layout is not None:
            bound, how = max(bound, r.bound), r.how
        if r.layout is not None:
            layouts.append(("sections", r.layout, r.cpu))
    if bound < min(height(problem, o) for _, o, _ in layouts) and cpsat > 0:
        c = cpsat_bound(problem, cpsat, layouts[0][1])
        if c is None:
            _say("  cp-sat: skipped (pip install ortools)")
        else:
            _say(f"  cp-sat ({cpsat:g} s): {c.status}, bound {c.bound:,} B"
                         + (f", layout {height(problem, c.layout):,} B" if c.layout else "") + f", {c.cpu:.1f} CPU-s")
            if c.bound > bound:
                bound, how = c.bound, f"cp-sat's objective bound ({c.status})"
            if c.layout is not None:
                layouts.append(("cp-sat", c.layout, c.cpu))
    bound = round_up(bound, unit(problem.buffers))
    who, best, _ = min(layouts, key=lambda w: height(problem, w[1]))
    top = height(problem, best)
    ok = valid(problem, best)
    gap = (top - bound) / bound * 100 if bound else 0.0
    _say(f"  bound {bound:,} B ({how}); layout {top:,} B from {who}, "
                 f"{'valid' if ok else 'INVALID'}: at most {gap:.2f} % above the optimum; "
                 f"{time.process_time() - t0:.1f} CPU-s in all")


def _say(line: str) -> None:
    print(line, flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="lower bounds above the load bound, and the best layout")
    ap.add_argument("names", nargs="+", help="challenge letters A..K or minimalloc CSV files")
    ap.add_argument("--limit", type=float, default=60.0, help="seconds of optimal on the whole problem")
    ap.add_argument("--relax", type=float, default=120.0, help="CPU seconds of the section-subset loop (0: off)")
    ap.add_argument("--step", type=float, default=20.0, help="seconds of optimal per relaxation")
    ap.add_argument("--slack", type=float, default=0.02,
                    help="first relaxation: the sections loaded within this fraction of the peak")
    ap.add_argument("--cpsat", type=float, default=0.0, help="seconds of CP-SAT (needs ortools; 0: off)")
    ap.add_argument("--challenges", default=CHALLENGES, help="folder of minimalloc's challenge CSVs")
    args = ap.parse_args(argv)
    for name in args.names:
        report(_label(name), _named(name, args.challenges), args.limit, args.relax, args.step, args.cpsat,
               args.slack)
    return 0


if __name__ == "__main__":
    sys.exit(main())
