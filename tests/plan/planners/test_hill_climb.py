from arena_tool.plan import validate
from arena_tool.plan.planners import Params, hill_climb

from _peer_cases import GAPS, MEDIUM


def run(p, seed=0):
    plan = hill_climb.plan(p, Params(seed=seed))
    validate.check(p, plan.offsets, plan.arena_size)
    return plan


def test_starts_from_greedy_by_size(monkeypatch) -> None:
    # with no attempts it is TVM greedy_by_size with first fit: TFLM's 90 on TestGreedyMedium
    monkeypatch.setattr(hill_climb, "MAX_ATTEMPTS", 0)
    assert run(MEDIUM).arena_size == 90


def test_climbs_to_the_bound() -> None:
    plan = run(MEDIUM)
    assert plan.arena_size == 80 and dict(plan.stats)["attempts"] >= 1


def test_seeded_and_deterministic() -> None:
    for seed in range(5):
        assert run(MEDIUM, seed).offsets == run(MEDIUM, seed).offsets


def test_first_fit_and_fixed() -> None:
    plan = run(GAPS)
    assert plan.offsets == (0, 40, 60, 8)
