"""exact_cover: Algorithm X with dancing links over (unit x op) cells."""

import time

import pytest

from arena_tool.plan.planners import Params, exact_cover, run
from arena_tool.plan.planners.decision import Decision
from arena_tool.plan.planners.exact_cover import clique_points
from arena_tool.core.problem import Buffer, Problem, Status
from arena_tool.plan.validate import Reason, violations
from bruteforce import brute_force_min

K = 1024


def tflm_medium(scale: int = 1, alignment: int = 1) -> Problem:
    spec = [(10, 0, 1), (20, 1, 2), (30, 2, 3), (40, 3, 4), (50, 0, 1)]
    return Problem(tuple(Buffer(f"b{i}", s * scale, a, e, alignment) for i, (s, a, e) in enumerate(spec)))


def one_op(spec) -> Problem:
    """Buffers all live at op 0: (size, alignment) each; alignment gaps make
    the lower bound unreachable."""
    return Problem(tuple(Buffer(f"b{i}", s, 0, 0, a) for i, (s, a) in enumerate(spec)))


HARD = one_op([(14, 1), (14, 1), (13, 4), (7, 16), (6, 1), (11, 4), (20, 1)])  # ~5 s to prove 87
MEDIUM = one_op([(12, 1), (7, 16), (8, 16), (3, 4), (3, 4), (4, 1), (5, 4)])  # 42 -> 45 in 4 heights


def plan(p: Problem, **kw):
    result = exact_cover.plan(p, Params(**kw))
    assert violations(p, result.offsets, result.arena_size) == []
    assert result.arena_size <= run("greedy_size", p).arena_size
    return result


def test_chain_is_twelve_kb_proven():
    sizes, ranges = (4, 6, 6, 2), ((0, 0), (0, 1), (1, 2), (2, 2))
    p = Problem(tuple(Buffer(f"T{i}", s * K, a, e, 16) for i, (s, (a, e)) in enumerate(zip(sizes, ranges))))
    r = plan(p)
    assert r.arena_size == 12 * K
    assert (r.optimal, r.status, r.planner, r.best_bound) == (True, "proven", "exact_cover", 12 * K)


def test_tflm_medium_reaches_eighty_where_greedy_needs_ninety():
    # u = 1, cap 80. Ranks by area: b4, b3, b2, b1, b0. MRV: b4 (31 rows) at 0;
    # then b1 (11 rows left: 50..60) at 50; b0 (one row left) at 70; b2 (0..20)
    # at 0; b3 (30..40) at 30.
    r = plan(tflm_medium())
    assert r.offsets == (70, 50, 0, 30, 0)
    assert (r.arena_size, r.optimal, r.status, r.best_bound) == (80, True, "proven", 80)
    assert dict(r.stats)["heights"] == 1


def test_alignment_sixteen_searches_in_sixteen_byte_units():
    r = plan(tflm_medium(16, 16))
    assert r.offsets == (1120, 800, 0, 480, 0)
    assert dict(r.stats)["unit"] == 16 and dict(r.stats)["coarsened"] == 0
    assert (r.arena_size, r.optimal) == (1280, True)


def test_top_unit_is_searched_byte_by_byte():
    # b4 is 792 B with alignment 16: 80 units hold a cover (arena 1280), and the
    # byte search inside the top unit finds 1272 = the lower bound
    spec = [(160, 0, 1), (320, 1, 2), (480, 2, 3), (640, 3, 4), (792, 0, 1)]
    p = Problem(tuple(Buffer(f"b{i}", s, a, e, 16) for i, (s, a, e) in enumerate(spec)))
    r = plan(p)
    assert r.arena_size == 1272 == brute_force_min(p)
    assert r.optimal and dict(r.stats)["heights"] == 2


def test_raises_the_height_until_a_cover_exists():
    r = plan(MEDIUM)
    assert r.lower_bound == 42
    assert (r.arena_size, r.optimal, r.status) == (45, True, "proven")
    assert r.arena_size == brute_force_min(MEDIUM)
    assert dict(r.stats)["heights"] == 4


def test_coarse_k_at_the_lower_bound_is_proven():
    r = plan(tflm_medium(16, 16), k=32)
    assert dict(r.stats)["unit"] == 32 and dict(r.stats)["coarsened"] == 1
    assert (r.arena_size, r.optimal, r.status) == (1280, True, "proven")


def test_coarse_k_above_the_byte_minimum_claims_nothing():
    # k = 8 coarsens: the cover (47) is above the byte minimum (45), which
    # optimal's search finds and records; the plan stays the coarse one
    r = plan(MEDIUM, k=8)
    stats = dict(r.stats)
    assert stats["coarsened"] == 1 and r.arena_size == 47
    assert r.optimal is False and r.status in ("heuristic", "time_limit")
    assert stats["byte_arena"] == 45 == brute_force_min(MEDIUM)
    assert r.lower_bound <= r.best_bound <= 45


def test_coarse_k_proven_by_the_byte_search():
    # two 3-byte buffers aligned to 4 at one op: bound 6, minimum 7 (0 and 4);
    # k = 8 finds 7 and the byte-level search shows nothing smaller exists
    p = one_op([(3, 4), (3, 4)])
    r = plan(p, k=8)
    assert dict(r.stats)["coarsened"] == 1 and "byte_arena" not in dict(r.stats)
    assert (r.arena_size, r.lower_bound, r.optimal, r.status, r.best_bound) == (7, 6, True, "proven", 7)
    assert brute_force_min(p) == 7


def test_coarse_k_without_time_left_claims_nothing():
    r = plan(MEDIUM, k=8, time_limit=1e-9)  # no time left (0 is not a time limit)
    assert r.optimal is False and "byte_search_nodes" not in dict(r.stats)


def test_time_limit_returns_a_valid_plan(cpu_clock):
    t0 = cpu_clock()
    r = plan(HARD, time_limit=0.2)
    assert cpu_clock() - t0 < 1.0
    assert (r.status, r.optimal) == ("time_limit", False)
    assert r.arena_size == run("greedy_size", HARD).arena_size  # nothing better found yet
    assert r.lower_bound <= r.best_bound < r.arena_size


def test_size_limit_before_building():
    r = plan(tflm_medium(), max_rows=10)
    assert (r.status, r.optimal) == ("size_limit", False)
    assert r.offsets == run("greedy_size", tflm_medium()).offsets
    assert dict(r.stats)["rows"] > 10 and dict(r.stats)["heights"] == 0


def test_size_limit_after_the_heights_that_fit(monkeypatch):
    # budget = the matrix at the lower bound: 42 is searched and fails, 43 would not fit
    canvas = exact_cover._Canvas(MEDIUM.buffers, 1)
    monkeypatch.setattr(exact_cover, "NODE_BUDGET", canvas.size_at(42)[1])
    r = plan(MEDIUM)
    assert (r.status, r.optimal) == ("size_limit", False)
    assert dict(r.stats)["heights"] == 1
    assert r.best_bound == 43  # 42 was proven impossible
    assert r.arena_size == run("greedy_size", MEDIUM).arena_size


def test_greedy_at_the_minimum_is_relabelled_proven():
    # two 16-aligned 8 B buffers need offsets 0 and 16: 24 B, as greedy finds;
    # heights 17..23 all fail, so greedy's plan comes back proven
    p = one_op([(8, 16), (8, 16), (1, 1)])
    r = plan(p)
    assert r.offsets == run("greedy_size", p).offsets
    assert (r.arena_size, r.lower_bound, r.optimal, r.status, r.planner) == (24, 17, True, "proven", "exact_cover")
    assert dict(r.stats)["heights"] == 7
    q = one_op([(16, 16), (16, 16)])  # greedy = lower bound: no search at all
    r = plan(q)
    assert (r.arena_size, r.status, dict(r.stats)["heights"]) == (32, "proven", 0)


def test_fixed_offsets_are_constants():
    spec = [(10, 0, 1, None), (20, 1, 2, None), (30, 2, 3, 5), (40, 3, 4, None), (50, 0, 1, None)]
    p = Problem(tuple(Buffer(f"b{i}", s, a, e, 1, f) for i, (s, a, e, f) in enumerate(spec)))
    r = plan(p)
    assert r.offsets[2] == 5
    assert r.arena_size == brute_force_min(p) and r.optimal


def test_capacity_below_the_minimum_is_infeasible():
    p = Problem(tflm_medium().buffers, capacity=70)
    r = exact_cover.plan(p, Params())
    assert (r.arena_size, r.status, r.best_bound) == (80, "infeasible", 80)
    assert {v.reason for v in violations(p, r.offsets, r.arena_size)} == {Reason.BEYOND_CAPACITY}
    r = plan(Problem(tflm_medium().buffers, capacity=85))
    assert r.status == "proven"


def test_empty_problem():
    r = exact_cover.plan(Problem(()), Params())
    assert (r.offsets, r.arena_size, r.status) == ((), 0, "proven")


def test_clique_points_keep_only_maximal_live_sets():
    bufs = [Buffer("a", 1, 0, 5), Buffer("b", 1, 1, 2), Buffer("c", 1, 3, 4)]
    assert clique_points(bufs) == [1, 3]  # op 0's live set {a} is inside op 1's {a, b}
    chain = [Buffer("t0", 1, 0, 0), Buffer("t1", 1, 0, 1), Buffer("t2", 1, 1, 2), Buffer("t3", 1, 2, 2)]
    assert clique_points(chain) == [0, 1, 2]


@pytest.mark.parametrize("deadline", [0.0, 0.05])
def test_dlx_timeout_leaves_the_matrix_spent(deadline):
    canvas = exact_cover._Canvas(HARD.buffers, 1)
    ec, _, _ = canvas.build(85, time.perf_counter() + 10)
    assert ec.solve(time.perf_counter() + deadline) == (Decision.ABORTED, [])
    with pytest.raises(RuntimeError, match="spent"):
        ec.solve(time.perf_counter() + 10)


def _long_rows() -> Problem:
    """Issue 23: 7 buffers of 100-300 B at k=1, so every row is hundreds of cells long and
    one search node unlinks thousands; the clock read every 64 nodes (and the unwind of the
    covers after it) ran 0.25-0.5 s past the limit and a finished search still said proven."""
    import random

    r = random.Random(0)
    bufs = []
    for i in range(7):
        s = r.randint(0, 4)
        e = s + r.randint(0, 3)
        bufs.append(Buffer(f"b{i}", r.randint(100, 300), s, e))
    return Problem(tuple(bufs))


def test_dlx_reads_the_clock_by_work_and_returns_at_the_deadline(cpu_clock):
    canvas = exact_cover._Canvas(_long_rows().buffers, 1)
    built = canvas.build(919 - 1, cpu_clock() + 60)
    assert built is not None
    ec = built[0]
    t0 = cpu_clock()
    outcome, _ = ec.solve(t0 + 0.05)
    late = cpu_clock() - (t0 + 0.05)
    assert outcome == Decision.ABORTED and late < 0.1, (outcome, late)  # was 0.25-0.5 s


def test_exact_cover_never_says_proven_past_its_limit(cpu_clock):
    """In CPU seconds (cpu_clock): what is measured is how late the search's own clock reads
    let it run, not the other processes on the machine."""
    p = _long_rows()
    for limit in (0.5, 1.0, 1.5):
        t0 = cpu_clock()
        res = exact_cover.plan(p, Params(time_limit=limit))
        spent = cpu_clock() - t0
        assert spent < limit + 0.25, (limit, spent, res.status)  # was +0.3-0.5 s
        assert res.status != Status.PROVEN or spent <= limit, (limit, spent)
