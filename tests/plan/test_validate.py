"""The independent validator: a valid plan passes, each Reason has a trigger."""

import numpy as np
import pytest

from arena_tool.plan import validate

from arena_tool.core.problem import Buffer, Problem
from arena_tool.plan.validate import Reason, check, violations

A = Buffer("a", 10, 0, 1, 4)
B = Buffer("b", 10, 1, 2, 4)
C = Buffer("c", 10, 2, 2, 4)  # dies with b at op 2, never meets a
P = Problem((A, B, C))


def reasons(p: Problem, offsets, arena):
    return {v.reason for v in violations(p, offsets, arena)}


def test_a_valid_plan_passes():
    assert violations(P, (0, 12, 0), 22) == []
    check(P, (0, 12, 0), 22)


def test_time_disjoint_buffers_may_share_bytes():
    p = Problem((Buffer("x", 8, 0, 0), Buffer("y", 8, 1, 1)))
    assert violations(p, (0, 0), 8) == []


@pytest.mark.parametrize("problem, offsets, arena, reason", [
    (P, (0, 8, 20), 30, Reason.OVERLAP),                       # a [0,10) and b [8,18) at op 1
    (P, (0, 12, 16), 26, Reason.OVERLAP),                      # b and c at op 2
    (P, (0, 14, 1), 24, Reason.MISALIGNED),                    # c at 1, alignment 4
    (P, (-4, 12, 0), 22, Reason.NEGATIVE),
    (P, (0, 12, 0), 20, Reason.BEYOND_ARENA),                  # b ends at 22
    (Problem(P.buffers, capacity=20), (0, 12, 0), 22, Reason.BEYOND_CAPACITY),
    (Problem((A, Buffer("f", 4, 0, 0, 4, fixed_offset=16))), (0, 12), 16, Reason.FIXED_MOVED),
    (P, (0, 12, 0), 40, Reason.ARENA_SIZE),                    # valid bytes, arena_size overstated
    (Problem((Buffer("x", 10, 0, 0), Buffer("y", 10, 0, 0))), (0, 0), 10, Reason.BELOW_BOUND),
    (P, (0, 12), 22, Reason.COUNT),
])
def test_each_reason_is_reported(problem, offsets, arena, reason):
    found = reasons(problem, offsets, arena)
    assert reason in found
    with pytest.raises(AssertionError, match=reason.value):
        check(problem, offsets, arena)


def test_overlap_names_both_buffers():
    (v,) = violations(P, (0, 8, 20), 30)
    assert v.reason is Reason.OVERLAP
    assert "a [0, 10)" in v.message and "b [8, 18)" in v.message


def test_touching_ends_do_not_overlap():
    p = Problem((Buffer("x", 10, 0, 0), Buffer("y", 10, 0, 0)))
    assert violations(p, (0, 10), 20) == []
    assert reasons(p, (0, 9), 20) == {Reason.OVERLAP}


def pairwise_overlaps(p: Problem, offsets) -> set[tuple[int, int]]:
    """The O(n^2) reference the sweep replaced: every pair live together whose bytes meet."""
    bufs = p.buffers
    return {(i, j) for i in range(len(bufs)) for j in range(i + 1, len(bufs))
            if bufs[i].start <= bufs[j].end and bufs[j].start <= bufs[i].end
            and offsets[i] < offsets[j] + bufs[j].size and offsets[j] < offsets[i] + bufs[i].size}


@pytest.mark.parametrize("seed", range(200))
def test_the_sweep_agrees_with_every_pair(seed):
    """Random small plans, many of them broken: the sweep finds an overlap exactly when
    some pair overlaps, and every pair it names does overlap; the bound is the brute-force
    load at each op."""
    import random
    rng = random.Random(seed)
    n = rng.randint(1, 30)
    bufs = []
    for i in range(n):
        s = rng.randint(0, 12)
        bufs.append(Buffer(f"b{i}", rng.randint(1, 6) * 4, s, s + rng.randint(0, 6), 4))
    p = Problem(tuple(bufs))
    offsets = [4 * rng.randint(0, 10) for _ in bufs]
    if seed % 4 == 3:  # offsets far apart and below 0: validate.c's radix sort takes several passes
        offsets = [o * (1 << 13 + seed % 40) - (1 << 40) for o in offsets]
    arena = max(o + b.size for o, b in zip(offsets, bufs))
    found = violations(p, offsets, arena)
    named = [v for v in found if v.reason is Reason.OVERLAP]
    expected = pairwise_overlaps(p, offsets)
    assert bool(named) == bool(expected)
    names = {(bufs[i].name, bufs[j].name) for i, j in expected}
    for v in named:
        a, b = v.message.split(" [")[0], v.message.split(" and ")[1].split(" [")[0]
        assert (a, b) in names or (b, a) in names
    load = max(sum(b.size for b in bufs if b.start <= t <= b.end) for t in range(20))
    assert (Reason.BELOW_BOUND in {v.reason for v in found}) == (arena < load)
    assert violations(p, offsets, arena, compiled=False) == found  # validate.c: the same answer
    lib = validate._library()
    if lib is not None:  # and the same pairs as the Python sweep, for every plan
        arrays = [np.array(v, dtype=np.int64) for v in ([b.start for b in bufs], [b.end for b in bufs],
                                                         [b.size for b in bufs], offsets)]
        assert validate._overlaps_c(lib, *arrays) == validate._overlaps(p, offsets)


def test_the_compiled_sweep_is_built():
    """Where a C compiler is, validate.c builds (else every plan is checked in Python: ~1 CPU-s
    at 100,000 buffers, past the time limit)."""
    from arena_tool.core import native
    if native._compiler() is None:
        pytest.skip("no C compiler")
    assert validate._library() is not None


def test_the_sweep_scales():
    """A 100,000-buffer valid plan (stacked in time order, so the live set is large) is
    checked in half the time limit's reserve for it (planners.RESERVE_SECONDS_PER_BUFFER:
    0.5 s at 100,000 buffers, for validation, writing and exit): ~0.1 CPU-s compiled; the
    Python sweep takes ~0.4 here and fails it."""
    import time
    from arena_tool.plan import planners
    if validate._library() is None:
        pytest.skip("no C compiler: the Python sweep checks plans")
    bufs = tuple(Buffer(f"b{i}", 16, i // 20, i // 20 + 500, 16) for i in range(100_000))
    offsets = [16 * (i % 10100) for i in range(100_000)]
    t0 = time.process_time()
    assert violations(Problem(bufs), offsets, 16 * 10100) == []
    assert time.process_time() - t0 < planners.RESERVE_SECONDS_PER_BUFFER * len(bufs) / 2
