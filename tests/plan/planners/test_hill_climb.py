from arena_tool.plan import validate
from arena_tool.plan.planners import Params, hill_climb

from _peer_cases import GAPS, MEDIUM
from builders import printed_under_hash_seeds


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


def test_a_seed_gives_one_plan_whatever_the_hash_seed() -> None:
    code = ("import sys; sys.path.insert(0, 'tests/plan/planners'); from _peer_cases import MEDIUM\n"
            "from arena_tool.plan.planners import Params, hill_climb\n"
            "print([hill_climb.plan(MEDIUM, Params(seed=s)).offsets for s in range(5)])")
    one, two = printed_under_hash_seeds(code)
    assert one == two and one.count("(") == 5


def test_first_fit_and_fixed() -> None:
    plan = run(GAPS)
    assert plan.offsets == (0, 40, 60, 8)
