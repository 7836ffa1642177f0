"""The first descent (walk.py): the C core gives the Python reference's offsets, every
layout is valid, and on network-like problems it reaches the load bound."""

from __future__ import annotations

import random

import numpy as np
import pytest

from arena_tool.core.problem import Buffer, Problem, lower_bound
from arena_tool.plan import validate
from arena_tool.plan.planners import native, walk
from arena_tool.plan.planners.search import HEURISTICS
from arena_tool.plan.planners.sections import instance, preorder
from bench.problems import large_problem, random_problem, syn_problem, tiled_problem


def cases() -> list[Problem]:
    out = []
    for s in range(12):
        n = random.Random(s).randint(1, 120)
        out += [random_problem(n, s), tiled_problem(max(2, n // 2), s), syn_problem(n, s)]
    aligned = [Buffer(f"b{i}", 16 * (1 + i % 5), i % 7, i % 7 + i % 4, (4, 16, 64)[i % 3]) for i in range(40)]
    # long lives over many sections (more than 64 a buffer): walk.c scans instead of listing members
    rng = random.Random(5)
    dense = [Buffer(f"d{i}", 16 * rng.randint(1, 9), a, a + rng.randint(60, 200), 16)
             for i, a in enumerate(rng.randrange(200) for _ in range(150))]
    return out + [Problem(tuple(aligned)), Problem(tuple(dense))]


@pytest.mark.parametrize("idx", range(38))
def test_c_and_python_give_the_same_offsets(idx: int) -> None:
    lib = native.load()
    if lib is None:
        pytest.skip("no C compiler: only the Python reference runs")
    p = cases()[idx]
    inst = instance(p.buffers)
    for h in HEURISTICS:
        rank = preorder(inst, h)
        ref, cut = walk.walk_py(inst, rank)
        assert native.walk(lib, inst.s0, inst.s1, inst.size, inst.align, rank) == (ref, False) and not cut
        offs = [o * inst.unit for o in ref]
        arena = max(o + b.size for o, b in zip(offs, p.buffers))
        assert validate.violations(p, offs, arena) == []


def test_the_python_path_without_the_core(monkeypatch: pytest.MonkeyPatch) -> None:
    """ARENA_NATIVE=0: walk falls back on walk_py (what a machine without a compiler runs)."""
    p = random_problem(60, 3)
    inst = instance(p.buffers)
    rank = preorder(inst, "TWA")
    monkeypatch.setenv("ARENA_NATIVE", "0")
    assert native.load() is None
    assert walk.walk(inst, rank) == walk.walk_py(inst, rank)


def test_fixed_buffers_are_not_walked() -> None:
    p = Problem((Buffer("a", 8, 0, 1), Buffer("f", 8, 0, 1, fixed_offset=0)))
    inst = instance(p.buffers)
    assert walk.walk(inst, preorder(inst, "TWA")) is None


def test_a_network_of_5000_buffers_reaches_the_bound() -> None:
    """Where first fit by size stays 1-4 % above (issue 39), the TWA walk is at the bound."""
    p = large_problem(5000, 1)
    inst = instance(p.buffers)
    done = walk.walk(inst, preorder(inst, "TWA"))
    assert done is not None and not done[1]
    offs = done[0]
    assert max(o + s for o, s in zip(offs, inst.size.tolist())) * inst.unit == lower_bound(p.buffers)


def test_past_the_deadline_the_rest_is_stacked_alike() -> None:
    """A deadline already passed cuts both at the first clock read (CLOCK_EVERY placements):
    the same placements, the rest stacked in rank order; still a valid layout."""
    p = large_problem(6000, 2)
    inst = instance(p.buffers)
    rank = preorder(inst, "UWA")
    ref, cut = walk.walk_py(inst, rank, deadline=0.0)
    assert cut and sum(o >= 0 for o in ref) == len(ref)
    lib = native.load()
    if lib is not None:
        assert native.walk(lib, inst.s0, inst.s1, inst.size, inst.align, rank, deadline=1e-9) == (ref, True)
    offs = [o * inst.unit for o in ref]
    assert validate.violations(p, offs, max(o + b.size for o, b in zip(offs, p.buffers))) == []


def test_a_walk_over_some_parts_places_them_as_the_whole_walk_does() -> None:
    """optimal walks again only the parts still above their bound (``optimal._take``): parts never
    meet, so each part's placements, and its rank keys, are the same in the smaller instance."""
    from arena_tool.plan.planners import optimal
    from bench.problems import trace_problem
    p = trace_problem(3000, 1)
    split = optimal._split(p.buffers, lower_bound(p.buffers))
    assert len(split.groups) > 20
    inst = instance(p.buffers)
    idx = sorted(i for g in split.groups[3::4] for i in g)
    sub = optimal._take(inst, np.asarray(idx, dtype=np.int64))
    for h in ("TWA", "LZW", "OLA"):
        whole, _ = walk.walk_py(inst, preorder(inst, h))
        part, _ = walk.walk_py(sub, preorder(sub, h))
        assert part == [whole[i] for i in idx], h
