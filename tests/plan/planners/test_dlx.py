"""dlx: Algorithm X with dancing links (exact_cover's solver), on small matrices by hand."""

import time

from arena_tool.plan.planners import dlx
from arena_tool.plan.planners.decision import Decision


def _snapshot(ec: dlx.ExactCover):
    return list(ec.U), list(ec.D), list(ec.S), list(ec.L), list(ec.R)


def test_dlx_knuth_example_and_restore():
    ec = dlx.ExactCover(7, 0)
    for row in ([2, 4, 5], [0, 3, 6], [1, 2, 5], [0, 3], [1, 6], [3, 4, 6]):
        ec.add_row(row)
    before = _snapshot(ec)
    outcome, rows = ec.solve(time.perf_counter() + 10)
    assert (outcome, sorted(rows)) == (Decision.FOUND, [0, 3, 4])
    assert _snapshot(ec) == before
    ec.unlink_row(3)
    assert ec.solve(time.perf_counter() + 10) == (Decision.INFEASIBLE, [])
    ec.relink_row(3)
    assert _snapshot(ec) == before


def test_dlx_secondary_columns_are_optional():
    ec = dlx.ExactCover(2, 2)
    ec.add_row([0, 2])
    ec.add_row([1, 2])
    ec.add_row([1, 3])
    assert ec.solve(time.perf_counter() + 10) == (Decision.FOUND, [0, 2])
