"""Planner ``optimal``: the minimum arena with a proof, or the best found and a bound.

Method (after minimalloc's ideas, our own code; see ``sections.py``):
1. Split the buffers into independent parts where the live set empties (a part's
   layout never constrains another's; the arena is the largest part's height).
2. Per part, start from the best of several greedy layouts (first fit and best fit
   under several orders, plus the ``first_fit`` / ``greedy_size`` planners when
   registered) -- the search only ever looks below it.
3. With ``problem.capacity`` set and the greedy above it, first ask the decision
   search for a layout under the capacity (60 % of the time; all of it when the
   capacity equals the bound), then under the bound (40 % of what is left):
   tight capacities prune hardest. The decision search splits the rest of a
   part again whenever no unplaced buffer crosses a section boundary.
4. Repeatedly ask the decision search for a layout under (part's best - 1 unit),
   with restarts over several preorders. Found: a lower best, ask again.
   Exhausted: the part's best is proven minimal. A part stops as soon as its best
   is at or below the proven bound of the whole problem.
The arena is proven ('proven', optimal True) when it equals the best proven lower
bound: the load bound, a fixed buffer's top, the alignment-padded stack of one
section (``sections.stack_bound``), or a refuted capacity.
At ``params.time_limit`` the answer is the best layout found, optimal False,
status 'time_limit' and ``best_bound`` the best proven bound. With
``problem.capacity`` set, an arena provably above it gives status 'infeasible'.

Worked example (TFLite Micro's TestGreedyMedium, (size, first, last)):
  (10,0,1) (20,1,2) (30,2,3) (40,3,4) (50,0,1): greedy by size reaches 90,
  the load bound is 80 and ``optimal`` reaches it: 50@0, 10@50, 20@60, 30@0, 40@30.
"""

from __future__ import annotations

import dataclasses
import importlib
import time
from typing import Sequence


from arena_tool.planners import Params
from arena_tool.planners import placement
from arena_tool.planners.sections import Rules, decide_restarts, instance, stack_bound
from arena_tool.problem import Buffer, Plan, Problem, arena_size, lower_bound


CAP_SHARE = 0.6  # share of the remaining time a probe at problem.capacity may take
LOW_SHARE = 0.4  # share of the remaining time a probe at the lower bound may take


def components(buffers: Sequence[Buffer]) -> list[list[int]]:
    """Index groups whose live ranges chain together; groups never share an op."""
    order = sorted(range(len(buffers)), key=lambda i: (buffers[i].start, i))
    parts: list[list[int]] = []
    reach = None
    for i in order:
        b = buffers[i]
        if reach is None or b.start > reach:
            parts.append([])
            reach = b.end
        parts[-1].append(i)
        reach = max(reach, b.end)
    return [sorted(p) for p in parts]


_ORDERS = {
    "size": lambda b, i: (-b.size, -(b.end - b.start), i),
    "width": lambda b, i: (-(b.end - b.start), -b.size, i),
    "area": lambda b, i: (-b.size * (b.end - b.start + 1), -b.size, i),
    "start": lambda b, i: (b.start, -b.size, i),
}


def greedy_layouts(buffers: Sequence[Buffer]) -> list[tuple[str, list[int]]]:
    """A handful of one-pass layouts (first and best fit under several orders)."""
    conf = placement.conflicts(buffers)
    out = []
    for name, key in _ORDERS.items():
        order = sorted(range(len(buffers)), key=lambda i: key(buffers[i], i))
        for rule in ("first", "best"):
            out.append((f"{rule}/{name}", placement.place(buffers, order, rule, conf)))
    return out


def _registered_greedies(problem: Problem, params: Params) -> list[list[int]]:
    """Layouts of the first_fit / greedy_size planners, if another module provides them."""
    out = []
    for mod in ("first_fit", "greedy_size"):
        try:
            m = importlib.import_module(f"arena_tool.planners.{mod}")
        except ImportError:
            continue
        p = m.plan(problem, params)
        out.append(list(p.offsets))
    return out


@dataclasses.dataclass
class _Part:
    idx: list[int]
    bufs: list[Buffer]
    offsets: list[int]
    best: int  # bytes, height of offsets
    bound: int  # bytes, proven lower bound on this part's height
    inst: object = None
    low_aborted: bool = False
    cap_tried: bool = False


def _height(bufs: Sequence[Buffer], offs: Sequence[int]) -> int:
    return max((o + b.size for b, o in zip(bufs, offs)), default=0)


def minimize(problem: Problem, params: Params, incumbents: Sequence[Sequence[int]] = (),
             planner: str = "optimal", rules: Rules = Rules(), greedy: bool = True) -> Plan:
    """The search driver; ``plan`` and ``prove`` are thin wrappers around it.

    incumbents: valid layouts (offsets by buffer index) to start from.
    """
    t0 = time.perf_counter()
    deadline = t0 + params.time_limit
    bufs = problem.buffers
    lb = lower_bound(bufs)
    layouts = [list(o) for o in incumbents]
    if greedy:
        layouts += [o for _, o in greedy_layouts(bufs)]
        layouts += _registered_greedies(problem, params)
    if not layouts:
        layouts = [[o for _, o in greedy_layouts(bufs)][0]]
    parts: list[_Part] = []
    for idx in components(bufs):
        pb = [bufs[i] for i in idx]
        best_offs, best_h = None, None
        for lay in layouts:
            offs = [lay[i] for i in idx]
            h = _height(pb, offs)
            if best_h is None or h < best_h:
                best_offs, best_h = offs, h
        fixed_top = max((b.fixed_offset + b.size for b in pb if b.fixed_offset is not None), default=0)
        parts.append(_Part(idx, pb, best_offs, best_h, max(lower_bound(pb), fixed_top, max(b.size for b in pb))))
    global_bound = max((p.bound for p in parts), default=0)
    nodes = decisions = 0
    while True:
        open_parts = [p for p in parts if p.best > max(global_bound, p.bound)]
        if not open_parts:
            break
        if problem.capacity is not None and global_bound > problem.capacity:
            break  # settled: nothing fits the capacity; the best layout found is reported
        if time.perf_counter() > deadline:
            break
        p = max(open_parts, key=lambda q: (q.best, -q.idx[0]))
        if p.inst is None:
            p.inst = instance(p.bufs)
            # alignment padding: often closes the gap to the load bound at no search
            pad = stack_bound(p.inst) * p.inst.unit
            if pad > p.bound:
                p.bound = min(pad, p.best)
                global_bound = max(global_bound, p.bound)
                continue
        inst = p.inst
        floor = max(global_bound, p.bound)
        # Tight capacities prune hardest: answer the problem's capacity first, then
        # probe the bound, each with a share of the time; then walk down from the best.
        at_cap = (not p.cap_tried and problem.capacity is not None
                  and floor <= problem.capacity < p.best)
        low = not at_cap and not p.low_aborted and floor < p.best - 1
        if at_cap:
            p.cap_tried = True
            target = problem.capacity
            share = 1.0 if target <= floor else CAP_SHARE  # at the bound: the only question left
        elif low:
            target, share = floor, LOW_SHARE
        else:
            target, share = p.best - 1, 1.0
        cap = target // inst.unit  # scaled units
        now = time.perf_counter()
        probe_deadline = now + share * (deadline - now)
        res = decide_restarts(inst, cap, probe_deadline, rules)
        nodes += res.nodes
        decisions += 1
        if res.status == "found":
            offs = [int(o) * inst.unit for o in res.offsets]
            p.offsets, p.best = offs, _height(p.bufs, offs)
        elif res.status == "infeasible":
            p.bound = max(p.bound, (cap + 1) * inst.unit)
            global_bound = max(global_bound, min(p.bound, p.best))
            p.bound = min(p.bound, p.best)
        elif low or (at_cap and target <= floor):
            p.low_aborted = True  # (a capacity at the bound was that same probe)
        elif not at_cap:
            break
    offsets = [0] * len(bufs)
    for p in parts:
        for i, o in zip(p.idx, p.offsets):
            offsets[i] = o
    arena = arena_size(bufs, offsets)
    proven = arena <= global_bound
    if proven:
        status = "proven"
    else:
        status = "time_limit"
    if problem.capacity is not None and arena > problem.capacity:
        if proven or global_bound > problem.capacity:
            status = "infeasible"
    return Plan(
        offsets=tuple(offsets),
        arena_size=arena,
        planner=planner,
        optimal=proven,
        status=status,
        lower_bound=lb,
        best_bound=max(global_bound, lb) if not proven else arena,
        seconds=time.perf_counter() - t0,
        stats=(("nodes", nodes), ("decisions", decisions), ("parts", len(parts))),
    )


def plan(problem: Problem, params: Params) -> Plan:
    return minimize(problem, params)


def prove(problem: Problem, plan: Plan, params: Params, greedy: bool = False) -> Plan:
    """Prove ``plan`` minimal, or improve it, within ``params.time_limit``.

    For exact_cover: a coarsened (k > 1) result is a valid layout but not proven at
    byte granularity; this searches below its arena. The returned Plan keeps
    ``plan.planner``; optimal True/status 'proven' when nothing smaller exists,
    else the best layout found (never worse than ``plan``) with status 'time_limit'
    and ``best_bound``. greedy=True also seeds the search with the greedy layouts.
    """
    return minimize(problem, params, incumbents=[list(plan.offsets)], planner=plan.planner, greedy=greedy)
