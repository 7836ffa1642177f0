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

