"""Property tests over random buffer sets (hypothesis).

Every plan passes the independent validator and is >= the lower bound;
exact_cover at k = 1 is <= every planner and equals the exhaustive minimum on
<= 7 buffers; a coarser k is never below k = 1; exact_cover under a tiny time
limit still returns a valid plan no worse than greedy.

Instances stay small in bytes: exact_cover's matrix grows with size in units,
and on byte-aligned buffers a unit is one byte.
"""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arena_tool.plan.planners import PLANNERS, Params, run
from arena_tool.core.problem import Buffer, Problem, align_up, lower_bound
from arena_tool.plan.validate import violations
from bruteforce import brute_force_min


def examples(n: int) -> settings:
    return settings(max_examples=n, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def problems(draw, max_n: int = 7, max_ops: int = 5, max_size: int = 16) -> Problem:
    """Either mixed alignments 1/4/16 with byte sizes, or all 16-aligned with
    sizes in 16 B multiples (what liveness produces); about one buffer in seven
    pinned at a fixed offset, the fixed ones stacked so they never clash."""
    n = draw(st.integers(1, max_n))
    ops = draw(st.integers(1, max_ops))
    model_like = draw(st.booleans())
    bufs = []
    fixed_top = 0
    for i in range(n):
        if model_like:
            alignment, size = 16, 16 * draw(st.integers(1, max(1, max_size // 4)))
        else:
            alignment, size = draw(st.sampled_from([1, 4, 16])), draw(st.integers(1, max_size))
        start = draw(st.integers(0, ops - 1))
        end = draw(st.integers(start, ops - 1))
        fixed = None
        if draw(st.integers(0, 6)) == 0:
            fixed = align_up(fixed_top + draw(st.integers(0, 20)), alignment)
            fixed_top = fixed + size
        bufs.append(Buffer(f"b{i}", size, start, end, alignment, fixed))
    return Problem(tuple(bufs))


def valid(p: Problem, name: str, params: Params = Params()):
    plan = run(name, p, params)
    assert violations(p, plan.offsets, plan.arena_size) == [], name
    assert plan.lower_bound == lower_bound(p.buffers)
    assert plan.arena_size >= plan.lower_bound
    assert plan.planner == name
    return plan


@examples(120)
@given(problems(max_n=12, max_ops=8, max_size=40))
def test_heuristics_are_valid(p):
    for name in ("naive", "first_fit", "greedy_size"):
        plan = valid(p, name)
        assert (plan.optimal, plan.status) == (None, "heuristic")


@examples(300)
@given(problems())
def test_exact_cover_is_the_minimum(p):
    exact = valid(p, "exact_cover", Params(k=1, time_limit=20))
    assert (exact.optimal, exact.status) == (True, "proven")
    assert exact.arena_size == exact.best_bound == brute_force_min(p)
    for name in sorted(PLANNERS):
        other = run(name, p, Params(time_limit=2))
        assert violations(p, other.offsets, other.arena_size) == [], name
        assert exact.arena_size <= other.arena_size, name


@examples(100)
@given(problems(max_n=6), st.sampled_from([2, 3, 8, 32]))
def test_coarser_k_is_never_below_k1(p, k):
    fine = run("exact_cover", p, Params(k=1, time_limit=20))
    coarse = valid(p, "exact_cover", Params(k=k, time_limit=20))
    assert fine.arena_size <= coarse.arena_size <= run("greedy_size", p).arena_size
    if coarse.optimal:
        assert coarse.arena_size == fine.arena_size
    else:
        assert coarse.status in ("heuristic", "time_limit", "size_limit")


@examples(40)
@given(problems(max_n=14, max_ops=6, max_size=60))
def test_exact_cover_under_a_tiny_time_limit(p):
    plan = valid(p, "exact_cover", Params(time_limit=0.02))
    assert plan.arena_size <= run("greedy_size", p).arena_size
    assert plan.status in ("proven", "time_limit", "size_limit")
    assert plan.optimal == (plan.status == "proven")
    assert plan.lower_bound <= plan.best_bound <= plan.arena_size
