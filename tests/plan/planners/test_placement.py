"""placement: the one placement loop the greedy planners share, and its pieces."""

import random

from arena_tool.plan.planners.placement import conflicts, lowest_fit
from arena_tool.core.problem import Buffer


def test_lowest_fit_walk():
    assert lowest_fit([], 7, 4) == 0
    assert lowest_fit([(0, 10)], 5, 1) == 10
    assert lowest_fit([(0, 10), (20, 30)], 10, 1) == 10
    assert lowest_fit([(0, 10), (20, 30)], 11, 1) == 30
    assert lowest_fit([(0, 10), (20, 30)], 8, 16) == 30 + 2  # 16 + 8 > 20, so top, aligned to 32
    assert lowest_fit([(0, 30), (5, 10), (31, 40)], 1, 1) == 30  # nested block does not lower the candidate


def test_conflicts_match_the_pairwise_definition():
    rng = random.Random(7)
    for _ in range(50):
        bufs = []
        for i in range(rng.randint(0, 30)):
            s = rng.randint(0, 15)
            bufs.append(Buffer(f"b{i}", 1, s, rng.randint(s, 15)))
        got = conflicts(bufs)
        want = [[j for j, b in enumerate(bufs) if j != i and a.overlaps_in_time(b)] for i, a in enumerate(bufs)]
        assert got == want
