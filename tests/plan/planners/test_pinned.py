"""Every planner's exact result on a fixed set of problems, pinned (issue 14 item 4).

Why: refactoring a planner (shared placement loops, the search class) must not move
a single byte. Each (problem, planner) pair pins the arena, the status, the
optimality claim, the best bound and a digest of the offsets, stored in
``pinned_plans.json``. The problems are small enough that every exact planner
settles them long before the (generous) time limit, so the answers do not depend
on the machine's speed (exact_cover stops at its size limit on ``crowded``, before
any search).

A change meant to change results regenerates the file (and says so in review):
    python3 tests/plan/planners/test_pinned.py
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
if __name__ == "__main__":  # regenerate: make the repository and the test helpers importable
    sys.path[:0] = [str(HERE.parent.parent), str(HERE)]

from _peer_cases import GAPS, MEDIUM, crowded, mixed, tiny  # noqa: E402
from arena_tool.plan.planners import PLANNERS, Params, run  # noqa: E402
from arena_tool.core.problem import Plan, Problem  # noqa: E402
from bench.problems import random_problem, tiled_problem  # noqa: E402

PINNED = HERE / "pinned_plans.json"
TIME_LIMIT = 60.0  # seconds: never reached here (the slowest pair takes about 1 s)


def problems() -> dict[str, Problem]:
    out = {"medium": MEDIUM, "gaps": GAPS}
    for s in range(8):
        out[f"tiny{s}"] = tiny(s, 4 + s % 5, fixed=s % 3 == 0)
        out[f"mixed{s}"] = mixed(s, 5 + s % 4)
    for n in (30, 100, 300):
        for s in range(2):
            out[f"network{n}_{s}"] = random_problem(n, s)
    for n in (12, 20, 30):
        for s in range(2):
            out[f"tiled{n}_{s}"] = tiled_problem(n, s)
    for s in range(3):
        out[f"crowded{s}"] = crowded(s)
    return out


def pairs() -> list[tuple[str, str]]:
    return [(p, name) for p in problems() for name in sorted(PLANNERS)]


def summary(plan: Plan) -> dict[str, object]:
    """What must stay byte-identical: the layout (as a digest) and every claim about it."""
    digest = hashlib.sha256(",".join(map(str, plan.offsets)).encode()).hexdigest()[:16]
    return {"arena_size": plan.arena_size, "status": str(plan.status), "optimal": plan.optimal,
            "best_bound": plan.best_bound, "offsets_sha256": digest}


@pytest.fixture(scope="module")
def pinned() -> dict[str, dict[str, object]]:
    return json.loads(PINNED.read_text())


@pytest.fixture(scope="module")
def cases() -> dict[str, Problem]:
    return problems()


def test_every_pair_is_pinned(pinned: dict[str, dict[str, object]]) -> None:
    assert sorted(pinned) == sorted(f"{p}/{name}" for p, name in pairs())


@pytest.mark.parametrize("problem,name", pairs())
def test_result_unchanged(problem: str, name: str, cases: dict[str, Problem],
                          pinned: dict[str, dict[str, object]]) -> None:
    plan = run(name, cases[problem], Params(time_limit=TIME_LIMIT))
    assert summary(plan) == pinned[f"{problem}/{name}"]


if __name__ == "__main__":
    table = problems()
    doc = {f"{p}/{name}": summary(run(name, table[p], Params(time_limit=TIME_LIMIT))) for p, name in pairs()}
    PINNED.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(doc)} pinned results to {PINNED}")
