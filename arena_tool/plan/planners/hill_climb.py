"""TVM USMP ``hill_climb`` (the Arm Vela idea): swap orders around the bottleneck.

Source: ``src/tir/usmp/algo/hill_climb.cc`` (apache/tvm PR #9704, #13369), as
described in research/planners.md sections b and g. Rules:
  * initial order: TVM greedy_by_size (size desc, conflicts desc, name desc);
  * evaluate an order by first fit: each buffer at the lowest aligned offset
    clear of its already-placed conflicts (gap filling);
  * up to 500 attempts: pick a random buffer among those reaching the peak; its
    first-level neighbours are its conflicts earlier in the order, the
    second-level ones are conflicts of those, earlier still; swap a first-level
    buffer with a second-level one (75 %) or with another first-level one;
  * accept if the peak drops below the best, or with probability
    50 * (peak - best) / peak / attempt percent; otherwise undo the swap;
  * stop early at the load bound, or at ``params.time_limit`` (the clock is read
    every attempt; an attempt the limit cuts short is dropped). The best order
    seen is returned.
Randomness: ``random.Random(params.seed)`` (TVM uses rand_r with seed 0), so a
seed reproduces a plan. Fixed offsets are placed first.

Worked example: TFLite Micro's TestGreedyMedium (10,0,1) (20,1,2) (30,2,3)
(40,3,4) (50,0,1): greedy by size gives 90; swapping around the bottleneck
reaches the load bound 80 (seed 0), see tests/plan/planners/test_hill_climb.py.
"""

from __future__ import annotations

import random
import time

from arena_tool.plan.planners.params import Params
from arena_tool.plan.planners.clock import Deadline
from arena_tool.plan.planners.placement import FIRST_FIT, conflicts, heuristic_plan, place
from arena_tool.core.problem import Plan, Problem, lower_bound

MAX_ATTEMPTS = 500


def initial_order(problem: Problem, conf: list[list[int]]) -> list[int]:
    bufs = problem.buffers
    idx = list(range(len(bufs)))
    idx.sort(key=lambda i: bufs[i].name, reverse=True)
    idx.sort(key=lambda i: (-bufs[i].size, -len(conf[i])))
    return idx


def plan(problem: Problem, params: Params) -> Plan:
    t0 = time.perf_counter()
    deadline = Deadline(t0 + params.time_limit)
    progress = params.progress
    bufs = problem.buffers
    lb = lower_bound(bufs)
    conf = conflicts(bufs, deadline)
    rng = random.Random(params.seed)
    order = initial_order(problem, conf)

    def peak(offs: list[int]) -> int:
        return max((o + b.size for b, o in zip(bufs, offs)), default=0)

    offs = place(bufs, order, FIRST_FIT, conf, deadline)
    best_offs, best = offs, peak(offs)
    cur = best
    attempts = 0
    if progress is not None:
        progress.report(best=best, bound=lb)
    for attempt in range(1, MAX_ATTEMPTS + 1):
        if best <= lb or len(bufs) < 2 or deadline.passed():
            break
        if progress is not None:
            progress.tick(1)
        attempts = attempt
        pos = {b: k for k, b in enumerate(order)}
        tops = [i for i in range(len(bufs)) if offs[i] + bufs[i].size == cur and bufs[i].fixed_offset is None]
        if not tops:
            break
        x = tops[rng.randrange(len(tops))]
        first = [j for j in conf[x] if pos[j] < pos[x] and bufs[j].fixed_offset is None]
        if not first:
            continue
        second = sorted({k for j in first for k in conf[j]
                         if pos[k] < pos[j] and k != x and bufs[k].fixed_offset is None})
        a = first[rng.randrange(len(first))]
        if second and rng.random() < 0.75:
            b = second[rng.randrange(len(second))]
        else:
            b = first[rng.randrange(len(first))]
        if a == b:
            continue
        pa, pb = pos[a], pos[b]
        order[pa], order[pb] = order[pb], order[pa]
        new_offs = place(bufs, order, FIRST_FIT, conf, deadline)
        if deadline.hit:
            break  # cut short: the rest was stacked, not placed
        total = peak(new_offs)
        if total < best:
            best_offs, best = new_offs, total
            offs, cur = new_offs, total
            if progress is not None:
                progress.report(best=best)
        elif rng.random() * 100 < 50.0 * (total - best) / total / attempt:
            offs, cur = new_offs, total
        else:
            order[pa], order[pb] = order[pb], order[pa]
    return heuristic_plan(problem, best_offs, "hill_climb", t0, (("attempts", attempts),), deadline=deadline,
                          lb=lb)
