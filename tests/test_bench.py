"""bench: the random generator is seeded and network-shaped; the script runs and validates."""

from __future__ import annotations

from arena_tool.core.problem import lower_bound
from bench import bench
from bench.problems import random_problem


def test_generator_deterministic_and_sized() -> None:
    for n in (50, 200, 500):
        a, b = random_problem(n, 3), random_problem(n, 3)
        assert a == b and len(a.buffers) == n
        assert all(x.size % 16 == 0 and x.start <= x.end for x in a.buffers)
        assert len({x.name for x in a.buffers}) == n
    assert random_problem(100, 1) != random_problem(100, 2)
    p = random_problem(200, 0)
    assert p.total_size > 2 * lower_bound(p.buffers)  # real reuse to be had


def test_bench_runs_and_summarises(capsys) -> None:
    rc = bench.main(["--random", "2", "--seed", "5", "--buffers", "60", "--time-limit", "2",
                     "--planners", "optimal", "greedy_size", "tflite_gpu", "hill_climb"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "random-60-s5" in out and "random-60-s6" in out
    assert "optimal proved 2 of 2" in out and "geomean" in out and "INVALID" not in out
