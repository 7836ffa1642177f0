"""plancheck: a plan file checked against the model it claims to plan, which it re-derives: a
plan edited by hand is still a valid file, it loads, and the check names what is wrong."""

from __future__ import annotations

import pytest

import fwbuild
from arena_tool.core.errors import CheckFailed
from arena_tool.model import liveness
from arena_tool.plan import plancheck, planfile
from builders import CHAIN_OPTIONS as OPTIONS


@pytest.mark.parametrize("edit, words", [
    (lambda d: d["buffers"][1].update(offset=d["buffers"][1]["offset"] + 8), "is not a multiple of the alignment 16"),
    (lambda d: d.update(arena_size=16), "past arena_size 16 B"),
    (lambda d: d["buffers"][1].update(alias_of="T0"), "alias_of 'T0', the model allows None"),
    (lambda d: d.update(model_sha256="0" * 64), "model bytes changed since planning"),
    (lambda d: d["buffers"].pop(), "has no buffer in the plan"),
])
def test_check_names_what_is_wrong(planned, edit, words, tmp_path):
    """A plan edited by hand is still a valid file: it loads, and check refuses it."""
    path, pm = planned
    bad = fwbuild.edited(pm.plan_file, edit)
    out = str(tmp_path / "p.json")
    planfile.write(out, bad)
    found = plancheck.check(planfile.load(out), liveness.model_problem(path, OPTIONS), "p.json")
    assert any(words in p for p in found), found
    with pytest.raises(CheckFailed):
        plancheck.require_valid(bad, pm.mp, "p.json")



def _pairs_naive(first, last, off, size, reg, group):
    n = len(first)
    return [(i, j) for i in range(n) for j in range(i + 1, n)
            if first[i] <= last[j] and first[j] <= last[i] and reg[i] == reg[j] and group[i] != group[j]
            and off[i] < off[j] + size[j] and off[j] < off[i] + size[i]]


@pytest.mark.parametrize("seed", range(6))
def test_overlaps_finds_every_pair_the_naive_matrix_finds(seed):
    """Random ranges, offsets, regions and alias groups (some live ranges reversed, as a hostile file
    may have them): the sorted sweep reports exactly the naive pairs, in the same order."""
    import numpy as np

    rng = np.random.default_rng(seed)
    n = 300
    first = rng.integers(0, 40, n)
    last = first + rng.integers(-2, 12, n)
    off, size = rng.integers(0, 4000, n) // 16 * 16, rng.integers(0, 400, n)
    reg, group = rng.integers(0, 2, n), rng.integers(0, 250, n).tolist()
    found = plancheck.overlaps(first, last, off, size, reg, group)
    assert found == _pairs_naive(first, last, off, size, reg, group) and found


def test_overlaps_is_linear_in_a_chain():
    """A chain's buffers each live two ops: 16x the buffers is about 16x the time (the pair matrix was
    256x: 1.75 s at 33,001 buffers; now 0.57 s)."""
    import time

    import numpy as np

    times = []
    for n in (2000, 32000):
        first = np.arange(n, dtype=np.int64)
        off = (first % 2) * 64
        t0 = time.process_time()
        assert plancheck.overlaps(first, first + 1, off, np.full(n, 64), np.zeros(n, np.int64), list(range(n))) == []
        times.append(time.process_time() - t0)
    assert times[1] < 40 * times[0] + 0.2, times
