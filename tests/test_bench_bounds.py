"""bench/bounds.py: the section-subset relaxation proves bounds no higher than the optimum (and
above the load bound where the optimum is), its layouts are valid, and CP-SAT (when ortools is
installed) agrees with brute force on tiny problems."""

from __future__ import annotations

import random

import pytest

from arena_tool.core.problem import Buffer, Problem, lower_bound
from arena_tool.plan import validate
from bench import bounds
from bruteforce import brute_force_min


def mixed(seed: int, n: int) -> Problem:
    """n buffers of 1-40 B, alignments 1-8 (3 and 6 too), lives of 1-4 ops: padding between
    buffers live together often lifts the minimum above the load bound."""
    rng = random.Random(seed)
    bufs = []
    for i in range(n):
        s = rng.randint(0, 5)
        bufs.append(Buffer(f"b{i}", rng.randint(1, 40), s, s + rng.randint(0, 3), rng.choice([1, 2, 4, 8, 3, 6])))
    return Problem(tuple(bufs))


def _cases() -> list[tuple[Problem, int]]:
    return [(p, brute_force_min(p)) for p in (mixed(seed, 5 + seed % 3) for seed in range(24))]


def test_sections_bound_is_sound_and_beats_the_load_bound() -> None:
    above = 0
    for p, best in _cases():
        lb = lower_bound(p.buffers)
        r = bounds.relax_bound(p, budget=5.0, step=2.0, slack=0.5)
        assert lb <= r.bound <= best, (p, r)
        # the whole problem is the last relaxation: tiny ones end with a layout at the optimum
        assert r.layout is not None and r.bound == best, (p, r)
        assert not validate.violations(p, r.layout, best)
        above += r.bound > lb
    assert above >= 3


def test_relaxation_keeps_each_buffer_live_in_its_chosen_sections() -> None:
    p = mixed(4, 7)
    sec = bounds.sections(p.buffers)
    chosen = [0, len(sec.live) - 1]
    rp, index = bounds.relaxation(p.buffers, sec, chosen)
    for b, i in zip(rp.buffers, index):
        mine = [j for j, k in enumerate(chosen) if sec.first[i] <= k <= sec.last[i]]
        assert (b.start, b.end, b.size) == (mine[0], mine[-1], p.buffers[i].size)
    assert {i for k in chosen for i in sec.live[k]} == set(index)


def test_cpsat_bound_and_layout_match_brute_force() -> None:
    pytest.importorskip("ortools")
    for p, best in _cases()[:4]:
        r = bounds.cpsat_bound(p, 5.0, None)
        assert r is not None and r.layout is not None and r.status == "OPTIMAL"
        assert r.bound == bounds.height(p, r.layout) == best
        assert bounds.valid(p, r.layout)


def test_main_prints_the_bound_and_a_valid_layout(tmp_path, capsys) -> None:
    csv = tmp_path / "t.1024.csv"
    csv.write_text("id,lower,upper,size\na,0,2,4\nb,1,3,4\nc,2,4,4\n")
    assert bounds.main([str(csv), "--limit", "1", "--relax", "1"]) == 0
    out = capsys.readouterr().out
    assert "load bound 8 B" in out and "layout 8 B from optimal, valid" in out
