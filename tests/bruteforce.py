"""Exhaustive reference minimum for tiny problems (<= ~8 buffers), for tests.

Shares no code with the planners. Why trying every order suffices: take a
minimum plan and re-place its free buffers in increasing offset order, each at
the lowest aligned offset that avoids the already re-placed (and fixed) buffers
that share an op with it. By induction every buffer lands at or below its old
offset (its old offset still avoids everything placed before it), so the arena
does not grow. Hence min over all orders of "lowest offset, in this order" is the
minimum. Branch and bound over orders keeps 7! orders cheap.
"""

from __future__ import annotations

from arena_tool.core.problem import Problem


def _lowest(size: int, align: int, start: int, end: int,
            placed: list[tuple[int, int, int, int]]) -> int:
    """Lowest multiple of align where [o, o+size) avoids every placed
    (offset, size, start, end) live at a common op. The lowest such offset is 0
    or the first multiple of align at or above some neighbour's end."""
    nbrs = [(o, s) for o, s, a, b in placed if a <= end and start <= b]
    candidates = sorted({0} | {-(-(o + s) // align) * align for o, s in nbrs})
    for c in candidates:
        if all(c + size <= o or o + s <= c for o, s in nbrs):
            return c
    raise AssertionError("unreachable: the top candidate always fits")


def brute_force_min(problem: Problem) -> int:
    """The minimum arena of ``problem`` (fixed offsets kept), by exhaustion."""
    bufs = problem.buffers
    fixed = [(b.fixed_offset, b.size, b.start, b.end) for b in bufs if b.fixed_offset is not None]
    free = [b for b in bufs if b.fixed_offset is None]
    top_fixed = max((o + s for o, s, _, _ in fixed), default=0)
    best = sum(b.size + max(b.alignment, 1) for b in bufs) + top_fixed  # above any order's result

    def dfs(placed: list[tuple[int, int, int, int]], left: list[int], top: int) -> None:
        nonlocal best
        if top >= best:
            return
        if not left:
            best = top
            return
        for k, i in enumerate(left):
            b = free[i]
            o = _lowest(b.size, max(b.alignment, 1), b.start, b.end, placed)
            placed.append((o, b.size, b.start, b.end))
            dfs(placed, left[:k] + left[k + 1:], max(top, o + b.size))
            placed.pop()

    dfs(list(fixed), list(range(len(free))), top_fixed)
    return best
