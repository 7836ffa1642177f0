"""Exact cover (MinUn's formulation) solved with dancing links (dlx.py).

The arena is a canvas of H memory units by the ops. One **primary** column per
buffer (placed exactly once); one **secondary** column per (unit, op) cell (used
at most once). A row is a buffer at one position: it covers its primary column
and every cell it occupies. A cover is a valid plan of height <= H; the search
raises H one unit at a time from the lower bound, so the first height with a
cover is the minimum.

Unit. u = lcm(k, g) bytes, g the gcd of the buffers' alignments; a buffer with
alignment a may sit at multiples of lcm(u, a), so sizes round up to whole units.
With k dividing g this loses nothing: every offset must be a multiple of g
anyway, and a buffer that ends below another's aligned offset still does so
after rounding its size up to g (e.g. alignment 16, k = 1: u = 16, one unit per
16 bytes, and the minimum in units is the minimum in bytes). Only the top
unit is inexact when sizes are not multiples of u; after the first height with a
cover the search tries every smaller byte height inside that unit (the arena is
always some offset + size), so with k | g a finished search is the byte minimum.
A larger k coarsens: the cover is optimal for the coarsened problem only.

Smaller matrix. Two buffers share an op iff both are live at the later of their
starts, and a start whose live set is contained in the next start's live set
adds nothing, so the ops axis keeps only the starts followed by an end before
the next start (the maximal cliques of the interval graph).

Size first. rows = sum over buffers of positions, nodes = sum of rows x (1 +
units x ops); both are computed before building; above ``params.max_rows`` or
NODE_BUDGET (about 100 B per node measured: 3 M nodes is ~300 MB) the search stops with
status 'size_limit'. The matrix is built once for the largest height needed and
rows above the current height are unlinked, not rebuilt.

The answer never exceeds greedy_size's arena: heights run up to (not including)
it, and greedy's plan is the fallback (relabelled exact_cover).

Example (the design notes' chain, 4/6/6/2 KB, alignment 16, k = 1): u = 16 B, lower
bound 12 KB = 768 units; the cover at H = 768 exists, so the answer is 12 KB,
proven.
"""

from __future__ import annotations

import bisect
import dataclasses
import math
import time
from typing import Sequence

import numpy as np

from arena_tool.plan.planners import dlx, greedy_size, optimal
from arena_tool.plan.planners.params import Params
from arena_tool.plan.planners.decision import Decision
from arena_tool.core.problem import Buffer, Plan, Problem, Status

NODE_BUDGET = 3_000_000
_BUILD_CHECK_ROWS = 256


def clique_points(buffers: Sequence[Buffer]) -> list[int]:
    """The op indices that matter for overlaps: starts followed by an end before
    the next start (and the last start)."""
    starts = sorted({b.start for b in buffers})
    ends = sorted(b.end for b in buffers)
    kept = []
    for k, t in enumerate(starts):
        if k + 1 == len(starts):
            kept.append(t)
            break
        nxt = starts[k + 1]
        e = bisect.bisect_left(ends, t)
        if e < len(ends) and ends[e] < nxt:
            kept.append(t)
    return kept


class _Canvas:
    """The formulation of one problem at unit u, before any matrix exists."""

    def __init__(self, buffers: Sequence[Buffer], u: int) -> None:
        self.u = u
        self.points = clique_points(buffers)
        n = len(buffers)
        self.n = n
        # buffers in decreasing area (size x lifetime), ties by index
        self.order = sorted(range(n), key=lambda i: (-buffers[i].size * (buffers[i].end - buffers[i].start + 1),
                                                     i))
        self.lo = [0] * n  # first kept point index
        self.npts = [0] * n
        self.units = [0] * n
        self.stride = [1] * n  # position step, units
        self.fixed_pos = [-1] * n  # position of a fixed buffer, units
        self.fixed_top = 0
        for i, b in enumerate(buffers):
            lo = bisect.bisect_left(self.points, b.start)
            hi = bisect.bisect_right(self.points, b.end)
            self.lo[i], self.npts[i] = lo, hi - lo
            if b.fixed_offset is not None:
                p = b.fixed_offset // u
                self.fixed_pos[i] = p
                self.units[i] = -(-(b.fixed_offset + b.size) // u) - p
                self.fixed_top = max(self.fixed_top, b.fixed_offset + b.size)
            else:
                self.units[i] = -(-b.size // u)
                self.stride[i] = math.lcm(u, max(b.alignment, 1)) // u
        self.buffers = buffers

    def positions(self, i: int, cap: int) -> range:
        """Positions (units) of buffer i whose byte end is <= cap."""
        b = self.buffers[i]
        if b.fixed_offset is not None:
            p = self.fixed_pos[i]
            return range(p, p + 1) if b.fixed_offset + b.size <= cap else range(0)
        if cap < b.size:
            return range(0)
        return range(0, (cap - b.size) // self.u + 1, self.stride[i])

    def size_at(self, cap: int) -> tuple[int, int]:
        """(rows, nodes) of the matrix for byte height cap."""
        rows = 0
        nodes = 1 + self.n + -(-cap // self.u) * len(self.points)
        for i in range(self.n):
            r = len(self.positions(i, cap))
            rows += r
            nodes += r * (1 + self.units[i] * self.npts[i])
        return rows, nodes

    def build(self, cap: int, deadline: float) -> tuple[dlx.ExactCover, list[int], list[int]] | None:
        """The matrix for height cap, with each row's buffer and byte end
        (offset + size); None past the deadline."""
        n, P = self.n, len(self.points)
        height = -(-cap // self.u)
        ec = dlx.ExactCover(n, height * P)
        row_buf: list[int] = []
        row_end: list[int] = []
        countdown = _BUILD_CHECK_ROWS
        for rank, i in enumerate(self.order):
            b = self.buffers[i]
            units, lo, npts = self.units[i], self.lo[i], self.npts[i]
            for p in self.positions(i, cap):
                cols = [rank]
                for y in range(p, p + units):
                    base = n + y * P + lo
                    cols.extend(range(base, base + npts))
                ec.add_row(cols)
                row_buf.append(i)
                row_end.append(b.fixed_offset + b.size if b.fixed_offset is not None else p * self.u + b.size)
                countdown -= 1
                if not countdown:
                    countdown = _BUILD_CHECK_ROWS
                    if time.perf_counter() > deadline:
                        return None
        return ec, row_buf, row_end


def _unit(buffers: Sequence[Buffer], k: int) -> tuple[int, bool]:
    """(u, exact): exact when the unit is the alignments' gcd, so units lose
    nothing, and every fixed offset is a whole number of units."""
    g = 0
    for b in buffers:
        g = math.gcd(g, max(b.alignment, 1))
    u = math.lcm(max(k, 1), g or 1)
    exact = u == (g or 1) and all(b.fixed_offset % u == 0 for b in buffers if b.fixed_offset is not None)
    return u, exact


def plan(problem: Problem, params: Params) -> Plan:
    t0 = time.perf_counter()
    deadline = t0 + params.time_limit
    progress = params.progress
    bufs = problem.buffers
    greedy = greedy_size.plan(problem, params)  # within the same limit, from t0
    lb = greedy.lower_bound  # the load bound it computed (not a second O(n log n) sweep past its deadline)
    G = greedy.arena_size
    u, exact = _unit(bufs, params.k)
    fixed_top = max((b.fixed_offset + b.size for b in bufs if b.fixed_offset is not None), default=0)
    floor = max(lb, fixed_top)  # no arena is below this
    stats: dict[str, int] = {"unit": u, "points": 0, "coarsened": int(not exact),
                             "rows": 0, "nodes": 0, "heights": 0, "search_nodes": 0}

    def result(offsets: Sequence[int], arena: int, status: Status, bound: int) -> Plan:
        if arena <= floor:
            status = Status.PROVEN  # at a lower bound, whatever stopped the search
        optimal = status == Status.PROVEN
        best_bound = arena if optimal else bound
        if problem.capacity is not None and arena > problem.capacity and best_bound > problem.capacity:
            status = Status.INFEASIBLE
        return Plan(offsets=tuple(offsets), arena_size=arena, planner="exact_cover", optimal=optimal,
                    status=status, lower_bound=lb, best_bound=best_bound,
                    seconds=time.perf_counter() - t0, stats=tuple(stats.items()))

    if G <= floor or not bufs:
        return result(greedy.offsets, G, Status.PROVEN, G)
    if greedy.status == Status.TIME_LIMIT:
        return result(greedy.offsets, G, Status.TIME_LIMIT, floor)
    if progress is not None:
        progress.report(best=G, bound=floor)
    canvas = _Canvas(bufs, u)
    stats["points"] = len(canvas.points)

    cap_max = G - 1  # only heights strictly below greedy are worth a search
    h0, h_max = -(-floor // u), -(-cap_max // u)

    def fits(h: int) -> bool:
        rows, nodes = canvas.size_at(min(h * u, cap_max))
        return rows <= params.max_rows and nodes <= NODE_BUDGET

    if not fits(h0):
        stats["rows"], stats["nodes"] = canvas.size_at(min(h0 * u, cap_max))
        return result(greedy.offsets, G, Status.SIZE_LIMIT, floor)
    lo, hi = h0, h_max  # largest height that fits, by bisection (size grows with height)
    while lo < hi:
        if time.perf_counter() > deadline:
            return result(greedy.offsets, G, Status.TIME_LIMIT, floor)
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid - 1)
    cap_built = min(lo * u, cap_max)
    stats["rows"], stats["nodes"] = canvas.size_at(cap_built)
    built = canvas.build(cap_built, deadline)
    if built is None:
        return result(greedy.offsets, G, Status.TIME_LIMIT, floor)
    ec, row_buf, row_end = built
    stats["rows"], stats["nodes"] = ec.n_rows, ec.n_nodes

    # rows linked = a prefix of this order; lowering/raising the height moves the
    # boundary, last out first in, as dancing links require
    by_end = np.lexsort((np.arange(ec.n_rows), np.array(row_end, dtype=np.int64))).tolist()
    linked = ec.n_rows

    def set_height(cap: int) -> bool:
        """Link exactly the rows ending at or below cap; False past the deadline
        (the boundary then sits at some other height: no search may follow)."""
        nonlocal linked
        countdown = _BUILD_CHECK_ROWS
        while linked < len(by_end) and row_end[by_end[linked]] <= cap:
            ec.relink_row(by_end[linked])
            linked += 1
            countdown -= 1
            if not countdown:
                countdown = _BUILD_CHECK_ROWS
                if time.perf_counter() > deadline:
                    return False
        while linked and row_end[by_end[linked - 1]] > cap:
            linked -= 1
            ec.unlink_row(by_end[linked])
            countdown -= 1
            if not countdown:
                countdown = _BUILD_CHECK_ROWS
                if time.perf_counter() > deadline:
                    return False
        return True

    def attempt(cap: int) -> tuple[Decision, list[int]]:
        if not set_height(cap):
            return Decision.ABORTED, []
        outcome, rows = ec.solve(deadline, progress)
        stats["heights"] += 1
        stats["search_nodes"] = ec.search_nodes
        return outcome, rows

    def decode(rows: list[int]) -> tuple[list[int], int]:
        offsets = [0] * len(bufs)
        for r in rows:
            i = row_buf[r]
            offsets[i] = row_end[r] - bufs[i].size
        return offsets, max(o + b.size for o, b in zip(offsets, bufs))

    proven_below = floor - 1  # every arena <= this is impossible
    searched_below = floor - 1  # every height <= this has no cover (at unit u)
    best: tuple[list[int], int] | None = None
    status = Status.PROVEN
    h = h0
    while best is None:
        cap = min(h * u, cap_max)
        if cap > cap_built:
            status = Status.SIZE_LIMIT
            break
        outcome, rows = attempt(cap)
        if outcome == Decision.ABORTED:
            status = Status.TIME_LIMIT
            break
        if outcome == Decision.FOUND:
            best = decode(rows)
            break
        searched_below = cap
        if exact:
            proven_below = cap
            if progress is not None:
                progress.report(bound=proven_below + 1)
        if cap >= cap_max:
            break  # nothing below greedy: greedy is the minimum
        h += 1
    if best is not None:
        if progress is not None:
            progress.report(best=best[1])
        # the arena is some row's byte end: try each smaller one in the top unit
        below = sorted({row_end[r] for r in by_end[:linked] if searched_below < row_end[r] < best[1]})
        for cap in below:
            outcome, rows = attempt(cap)
            if outcome == Decision.ABORTED:
                status = Status.TIME_LIMIT
                break
            if outcome == Decision.FOUND:
                best = decode(rows)
                break
            if exact:
                proven_below = cap
    if status == Status.PROVEN and not exact:
        status = Status.HEURISTIC  # exhausted, but only for the coarsened problem
    if status == Status.PROVEN and time.perf_counter() > deadline:
        status = Status.TIME_LIMIT  # a search that ran past its limit claims no proof
    bound = max(floor, proven_below + 1)
    if best is None or best[1] >= G:
        res = result(greedy.offsets, G, status, bound)
    else:
        res = result(best[0], best[1], status, bound)
    return res if exact else _byte_check(problem, res, deadline, stats, params)


def _byte_check(problem: Problem, res: Plan, deadline: float, stats: dict[str, int], params: Params) -> Plan:
    """A coarsened cover proves nothing in bytes: ask optimal's search (in the
    time left) whether a smaller byte-level arena exists. None: this plan is the
    minimum (optimal True). One found: the coarse plan stays, optimal False, and
    ``byte_arena`` records the smaller size proven feasible (this planner still
    reports its own layout, not optimal's)."""
    left = deadline - time.perf_counter()
    if res.optimal or left <= 0 or not problem.buffers:
        return res

    sub = optimal.prove(Problem(problem.buffers), res, dataclasses.replace(params, time_limit=left))
    stats["byte_search_nodes"] = dict(sub.stats)["nodes"]
    bound = max(res.best_bound or 0, sub.best_bound or 0, res.lower_bound)
    if sub.arena_size < res.arena_size:
        stats["byte_arena"] = sub.arena_size
        return dataclasses.replace(res, best_bound=bound, stats=tuple(stats.items()),
                                   seconds=res.seconds + sub.seconds)
    if not sub.optimal:
        return dataclasses.replace(res, best_bound=min(bound, res.arena_size),
                                   stats=tuple(stats.items()), seconds=res.seconds + sub.seconds)
    status = res.status if res.status == Status.INFEASIBLE else Status.PROVEN
    return dataclasses.replace(res, optimal=True, status=status, best_bound=res.arena_size,
                               stats=tuple(stats.items()), seconds=res.seconds + sub.seconds)
