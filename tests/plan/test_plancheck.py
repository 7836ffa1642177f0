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


@pytest.mark.parametrize("seed", range(12))
def test_overlaps_finds_a_clash_exactly_when_the_naive_matrix_does(seed):
    """Random ranges, offsets, regions and alias groups (each group's members at its root's offset, as
    check requires): the sweep reports only pairs the naive matrix has, at least one when it has any
    (none of a valid plan), at most ``limit``."""
    import numpy as np

    rng = np.random.default_rng(seed)
    n = int(rng.choice([20, 300]))
    first = rng.integers(0, 40, n)
    last = first + rng.integers(0, 12, n)
    group = rng.integers(0, 250, n).tolist()
    off = np.array([hash((seed, g)) % 4000 // 16 * 16 for g in group], dtype=np.int64)
    size, reg = rng.integers(0, 400, n), rng.integers(0, 2, n)
    naive = _pairs_naive(first, last, off, size, reg, group)
    found = plancheck.overlaps(first, last, off, size, reg, group, limit=5)
    assert set(found) <= set(naive) and bool(found) == bool(naive) and len(found) <= 5, (found, naive[:10])
    spread = np.arange(n, dtype=np.int64) * 400  # every buffer its own bytes: a valid plan
    assert plancheck.overlaps(first, last, spread, size, reg, group) == []


def test_overlaps_of_100000_buffers_at_one_offset_is_bounded():
    """Every pair of 100,022 buffers at offset 0 overlapped: the pair matrix grew to 17.6 GiB over 87 CPU-s;
    the sweep stops at the first ten. And 100,000 buffers all live at their own offsets (a valid plan the
    time-sorted pairs compared with every other) are checked in a sweep too."""
    import time

    import numpy as np

    n = 100_000
    zeros, group = np.zeros(n, np.int64), list(range(n))
    t0 = time.process_time()
    found = plancheck.overlaps(zeros, zeros + 5, zeros, np.full(n, 64), zeros, group)
    assert len(found) == plancheck.OVERLAPS_SHOWN and all(i == 0 for i, _ in found), found
    assert plancheck.overlaps(zeros, zeros + 5, np.arange(n) * 64, np.full(n, 64), zeros, group) == []
    assert time.process_time() - t0 < 10


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
