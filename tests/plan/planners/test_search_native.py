"""The compiled decision search (search.c) against the Python reference (search.Search):
the same status, node count and offsets, under every rule set, plain and regrouped,
with searches that exhaust (infeasible proofs) as well as ones that find a layout."""

from __future__ import annotations

import random

import pytest

from arena_tool.core.problem import Buffer, Problem, lower_bound
from arena_tool.plan import validate
from arena_tool.plan.planners import native
from arena_tool.plan.planners.search import Rules, Search, decide, native_applies, native_decide
from arena_tool.plan.planners.sections import Instance, instance, preorder
from bench.problems import random_problem, syn_problem, tiled_problem
from conftest import unavailable


def _lib() -> None:
    if native.load() is None:
        unavailable("no C compiler: only the Python reference runs", "install gcc (cc)")


def _small(seed: int) -> list[Buffer]:
    """5-14 buffers on 8 ops: small enough for exhaustive searches below the bound."""
    rng = random.Random(seed)
    out = []
    for i in range(rng.randint(5, 14)):
        a = rng.randint(0, 8)
        out.append(Buffer(f"b{i}", rng.randint(1, 12) * 16, a, a + rng.randint(0, 4), 16))
    return out


def _same(inst: Instance, cap: int, h: str, rules: Rules, regroup: bool) -> str:
    """The reference's status, after checking the C core gives the same result."""
    rank = preorder(inst, h)
    ref = Search(inst, cap, rank, rules, node_limit=20000, heuristic=h if regroup else None).run()
    got = native_decide(inst, cap, rank, rules, node_limit=20000, heuristic=h if regroup else None)
    assert got is not None
    assert (got.status, got.nodes) == (ref.status, ref.nodes), (cap, h, rules, regroup)
    if ref.offsets is None:
        assert got.offsets is None
    else:
        assert got.offsets is not None and got.offsets.tolist() == ref.offsets.tolist()
    return str(ref.status)


# without the load rules (sections, floor) a capacity below the bound is refuted only by
# exhausting the search: the backtracking paths, each rule's undo and the hatless cut
EXHAUSTING = (Rules(sections=False, floor=False), Rules(sections=False, floor=False, hatless=False),
              Rules(sections=False), Rules(floor=False, cover=False), Rules(decompose=False))


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4, 7])
def test_same_tree_as_python_searches_that_exhaust(seed: int) -> None:
    _lib()
    inst = instance(_small(seed))
    lb = lower_bound(_small(seed)) // inst.unit
    seen = set()
    for h in ("TWA", "LZW"):
        for regroup in (False, True):
            for rules in EXHAUSTING:
                cap = lb - 2
                while _same(inst, cap, h, rules, regroup) == "infeasible":
                    seen.add("infeasible")
                    cap += 1
                seen.add("found")
    assert seen == {"infeasible", "found"}


@pytest.mark.parametrize("mode", ["network", "tiled", "syn"])
def test_same_tree_as_python_every_rule_off_in_turn(mode: str) -> None:
    _lib()
    for seed in range(3):
        p = random_problem(12 + 9 * seed, seed, mode=mode)
        inst = instance(p.buffers)
        lb = lower_bound(p.buffers) // inst.unit
        for rules in [Rules()] + [Rules(**{f: False}) for f in Rules.names()] + [Rules.only()]:
            for cap in (lb, lb + 1):
                for regroup in (False, True):
                    _same(inst, cap, "WAT", rules, regroup)


def test_a_found_layout_is_valid_and_under_the_capacity() -> None:
    _lib()
    p = tiled_problem(60, 4)
    inst = instance(p.buffers)
    lb = lower_bound(p.buffers) // inst.unit
    res = decide(inst, lb + 2, preorder(inst, "TWA"))
    assert str(res.status) == "found" and res.offsets is not None
    offs = [int(o) * inst.unit for o in res.offsets]
    arena = max(o + b.size for o, b in zip(offs, p.buffers))
    assert arena <= (lb + 2) * inst.unit and validate.violations(p, offs, arena) == []


def test_where_the_core_does_not_apply() -> None:
    """A fixed buffer or mixed alignments under the sections rule: the Python search runs."""
    _lib()
    fixed = instance([Buffer("a", 32, 0, 1, 16, fixed_offset=0), Buffer("b", 16, 1, 2, 16)])
    mixed = instance([Buffer("a", 32, 0, 1, 16), Buffer("b", 16, 1, 2, 64)])
    assert not native_applies(fixed) and native_decide(fixed, 4, preorder(fixed, "TWA")) is None
    assert not native_applies(mixed) and native_decide(mixed, 8, preorder(mixed, "TWA")) is None
    assert native_applies(mixed, Rules(sections=False))
    assert native_applies(instance(syn_problem(30, 1).buffers))


def test_the_setup_stops_at_the_deadline() -> None:
    """Past its deadline the core aborts while still building its overlaps (at 100,000 buffers
    that setup is ~0.4 CPU-s): no node searched."""
    _lib()
    import time
    p = syn_problem(20_000, 1)
    inst = instance(p.buffers)
    res = native_decide(inst, int(inst.section_loads().max()), preorder(inst, "TWA"), deadline=time.perf_counter())
    assert res is not None and str(res.status) == "aborted" and res.nodes == 0


def test_a_dense_setup_stops_at_the_deadline() -> None:
    """Half of 10,000 buffers live across the middle 5,000 sections: the members of each section
    and the overlap rows are tens of millions of entries, so the clock is read by the work done,
    not every 4,096 buffers (issue 39: such a setup ran 0.4 s past a deadline, a 50,000-buffer
    probe 1.2 s past the time limit)."""
    _lib()
    import random
    import time
    rng = random.Random(1)
    bufs = []
    for i in range(10_000):
        if i % 2:
            s, e = 5_000 - rng.randint(0, 2_500), 5_000 + rng.randint(0, 2_500)
        else:
            s = rng.randrange(10_000)
            e = min(s + rng.randint(0, 20), 9_999)
        bufs.append(Buffer(f"t{i}", rng.choice([1, 2, 4, 8, 16]) * 256, s, e, 64))
    inst = instance(bufs)
    rank = preorder(inst, "TWA")
    at = time.perf_counter() + 0.1
    res = native_decide(inst, int(inst.section_loads().max()), rank, deadline=at)
    assert res is not None and str(res.status) == "aborted"
    assert time.perf_counter() - at < 0.1
