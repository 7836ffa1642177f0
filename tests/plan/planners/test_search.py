"""search: the decision search as a class -- its rules, its worked example, no deep recursion.

Soundness (every rule combination gives the same answer) and usefulness (each rule
alone cuts nodes) are in test_optimal.py, over ``Rules.names()``.
"""

from __future__ import annotations

import dataclasses
import sys

import pytest
from conftest import require_shared
from shared_paths import SHARED

from arena_tool.plan import validate
from arena_tool.plan.planners import optimal, search
from arena_tool.plan.planners.params import Params
from arena_tool.plan.planners.decision import Decision
from arena_tool.plan.planners.search import Rules, Search, decide
from arena_tool.plan.planners.sections import instance, preorder
from arena_tool.core.problem import Buffer, lower_bound


def test_rules_are_the_dataclass_fields() -> None:
    assert Rules.names() == tuple(f.name for f in dataclasses.fields(Rules))
    assert Rules() == Rules(**{n: True for n in Rules.names()})
    assert Rules.only("cover", "canonical") == Rules(dominance=False, sections=False, hatless=False,
                                                      floor=False, decompose=False)
    assert all(set(needs) <= set(Rules.names()) for needs in Rules.REQUIRES.values())
    with pytest.raises(ValueError, match="unknown rules"):
        Rules.only("gravity")


def test_every_rule_is_named_in_the_per_node_sequence() -> None:
    # the class docstring is the contributor's map: each rule appears there in [brackets]
    doc = Search.__doc__ or ""
    for name in Rules.names():
        assert f"[{name}" in doc or f", {name}]" in doc, name


def test_minimalloc_input12_worked_example() -> None:
    # the module docstring's example: b5@0, b3@4, b1@8, b4@4, b2@8 under C = 12, in 5 nodes
    rows = [("b1", 0, 3), ("b2", 3, 9), ("b3", 0, 9), ("b4", 9, 21), ("b5", 0, 21)]
    inst = instance([Buffer(n, 4, lo, up - 1) for n, lo, up in rows])
    res = decide(inst, 12 // inst.unit, preorder(inst, "WAT"))
    assert res.status == Decision.FOUND and res.nodes == 5
    assert (res.offsets * inst.unit).tolist() == [8, 8, 4, 4, 0]
    assert decide(inst, 11 // inst.unit, preorder(inst, "WAT")).status == Decision.INFEASIBLE


def test_deep_search_needs_no_recursion_limit() -> None:
    # 600 buffers live at one op: the search goes 600 placements deep, well past a recursion
    # limit of 300, and leaves the limit alone (it used to raise it for the whole process)
    inst = instance([Buffer(f"b{i}", 1, 0, 0) for i in range(600)])
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(300)
    try:
        res = decide(inst, 600, preorder(inst, "WAT"))
    finally:
        sys.setrecursionlimit(old)
    assert res.status == Decision.FOUND and res.nodes == 600
    assert sorted(res.offsets.tolist()) == list(range(600))


def test_node_limit_and_deadline_abort() -> None:
    inst = instance([Buffer(f"b{i}", 3 + i % 4, i % 5, i % 5 + 2) for i in range(30)])
    rank = preorder(inst, "WAT")
    assert decide(inst, 10**6, rank, node_limit=3).status == Decision.ABORTED
    assert decide(inst, 10**6, rank, deadline=0.0).status == Decision.ABORTED
    assert search.decide_restarts(inst, 10**6, None).status == Decision.FOUND


CHALLENGE_I = SHARED / "anchors" / "minimalloc" / "challenging" / "I.1048576.csv"


def test_regroup_fits_challenge_I() -> None:
    require_shared(CHALLENGE_I)
    # regrouped (each decomposed group re-ranked on its remaining loads, from the floor),
    # TWA fits challenge I at its capacity in 1,791 nodes; plain TWA does not in 5,000
    from arena_tool.model import csvio
    problem = csvio.read_problem(str(CHALLENGE_I))
    inst = instance(problem.buffers)
    cap = 1048576 // inst.unit
    rank = preorder(inst, "TWA")
    assert decide(inst, cap, rank, node_limit=5000).status == Decision.ABORTED
    res = decide(inst, cap, rank, node_limit=5000, heuristic="TWA")
    assert res.status == Decision.FOUND and res.offsets is not None
    offsets = [int(o) * inst.unit for o in res.offsets]
    validate.check(problem, offsets, 1048576)


def test_large_network_proven_with_flat_state() -> None:
    # issue 27's generator at 5,000 buffers: proven at the load bound; the search keeps no
    # per-node copy of the unplaced set (its pools are shared lists, restored by the trail)
    from bench.problems import large_problem
    problem = large_problem(5000, 1)
    plan = optimal.plan(problem, Params(time_limit=60))
    assert plan.optimal and plan.arena_size == lower_bound(problem.buffers)
    validate.check(problem, plan.offsets, plan.arena_size)
    assert large_problem(5000, 1) == problem and len(problem.buffers) == 5000
