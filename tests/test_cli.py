"""arena-tool end to end, in-process (main(argv)) and once as a real console script."""

from __future__ import annotations

import json

import pytest

import models
from arena_tool.plan import planfile
from arena_tool.cli import main

KB = 1024


@pytest.fixture
def chain_path(tmp_path):
    return models.save(models.chain(), tmp_path / "chain.onnx")


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_plan_summary_and_file(chain_path, tmp_path, capsys):
    out_path = str(tmp_path / "plan.json")
    code, out, err = run(capsys, "plan", chain_path, "--planner", "greedy_size", "-o", out_path)
    assert code == 0, err
    assert "12,288 B" in out and "18,432 B" in out  # arena and no-reuse sum
    plan = planfile.load(out_path)
    assert plan.arena_size == 12 * KB and plan.lower_bound == 12 * KB
    assert [b.name for b in plan.buffers] == ["T0", "T1", "T2", "T3"]
    assert [b.kind for b in plan.buffers] == ["input", "activation", "activation", "output"]
    code, out, err = run(capsys, "check", chain_path, out_path)
    assert code == 0, err
    assert "no overlaps" in out


def test_check_names_overlapping_pair(chain_path, tmp_path, capsys):
    out_path = tmp_path / "plan.json"
    assert run(capsys, "plan", chain_path, "--planner", "naive", "-o", str(out_path))[0] == 0
    doc = json.loads(out_path.read_text())
    by_name = {b["name"]: b for b in doc["buffers"]}
    by_name["T2"]["offset"] = by_name["T1"]["offset"]  # T1 and T2 are both live at op 1
    out_path.write_text(json.dumps(doc))
    code, out, err = run(capsys, "check", chain_path, str(out_path))
    assert code == 1
    assert "T1" in err and "T2" in err and "overlap while both are live (ops 1..1)" in err


def test_check_catches_short_live_range_and_small_size(chain_path, tmp_path, capsys):
    out_path = tmp_path / "plan.json"
    run(capsys, "plan", chain_path, "--planner", "naive", "-o", str(out_path))
    doc = json.loads(out_path.read_text())
    doc["buffers"][1]["last_op"] = 0
    doc["buffers"][2]["size"] = 16
    out_path.write_text(json.dumps(doc))
    code, _, err = run(capsys, "check", chain_path, str(out_path))
    assert code == 1
    assert "T1: live range [0, 0] is shorter than [0, 1]" in err
    assert "T2: size 16 B < 6144 B" in err


def test_budget_exceeded_exits_1(chain_path, capsys):
    code, _, err = run(capsys, "plan", chain_path, "--planner", "greedy_size", "--budget", "10K")
    assert code == 1
    assert "exceeds the budget 10,240 B by 2,048 B" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("argv, words", [
    (["plan", "missing.onnx"], "missing.onnx"),
    (["plan", "{model}", "--planner", "greedy_sise"], "did you mean 'greedy_size'"),
    (["check", "{model}", "nowhere.json"], "plan file not found"),
])
def test_input_errors_exit_2(chain_path, capsys, argv, words):
    code, _, err = run(capsys, *[a.format(model=chain_path) for a in argv])
    assert code == 2
    assert words in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_plan_file_validated_on_read(chain_path, tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    code, _, err = run(capsys, "check", chain_path, str(bad))
    assert code == 2 and "bad.json:1:2: error: not JSON" in err
    bad.write_text(json.dumps({"format_version": 1}))
    code, _, err = run(capsys, "check", chain_path, str(bad))
    assert code == 2 and "is a required property" in err


def test_usage_error_exit_2(capsys):
    with pytest.raises(SystemExit) as e:
        main(["plan", "--k", "0"])
    assert e.value.code == 2


def test_compare_lists_every_planner(chain_path, capsys):
    from arena_tool.plan.planners import PLANNERS

    code, out, err = run(capsys, "compare", chain_path, "--time-limit", "2")
    assert code == 0, err
    for name in PLANNERS:
        assert any(line.startswith(name + " ") for line in out.splitlines()), name
    assert "lower bound" in out and "12,288" in out


def test_invalid_plan_from_a_planner_is_an_arena_bug(chain_path, capsys, monkeypatch):
    from arena_tool.plan import planners
    from arena_tool.core.problem import Plan

    def broken(problem, params):  # every buffer at 0: overlaps
        return Plan(offsets=(0,) * len(problem.buffers), arena_size=max(b.size for b in problem.buffers),
                    planner="broken", optimal=None, status="heuristic", lower_bound=0)

    monkeypatch.setitem(planners.PLANNERS, "broken", broken)
    code, _, err = run(capsys, "plan", chain_path, "--planner", "broken")
    assert code == 3
    assert "planner broken returned an invalid plan: overlap" in err and "arena bug" in err


def test_export_and_plan_a_csv_problem(chain_path, tmp_path, capsys):
    csv = tmp_path / "chain.csv"
    assert run(capsys, "export", chain_path, "-o", str(csv))[0] == 0
    out = tmp_path / "solution.csv"
    code, text, err = run(capsys, "plan", "--problem", str(csv), "--planner", "optimal", "-o", str(out))
    assert code == 0, err
    assert "12,288 B" in text and "yes" in text
    code, _, err = run(capsys, "plan", "--problem", str(csv), "--capacity", "8K", "--planner", "greedy_size")
    assert code == 1 and "exceeds the capacity 8,192 B" in err


def test_unwritable_output_is_an_input_error(chain_path, tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("")
    code, _, err = run(capsys, "plan", chain_path, "--planner", "greedy_size", "-o", str(blocker / "plan.json"))
    assert code == 2 and "cannot write" in err and "Traceback" not in err
    out = tmp_path / "plan.json"
    assert run(capsys, "plan", chain_path, "--planner", "greedy_size", "-o", str(out))[0] == 0
    assert out.stat().st_mode & 0o044 == 0o044  # readable by the CI job that collects it


def test_plan_echoes_schedule_execution_and_io_alignment(chain_path, capsys):
    code, out, err = run(capsys, "plan", chain_path, "--schedule", "memory", "--execution", "pipelined",
                         "--io-alignment", "64")
    assert code == 0, err
    [line] = [ln for ln in out.splitlines() if ln.startswith("options")]
    assert "io_alignment 64" in line and "schedule memory" in line and "execution pipelined" in line, line
    code, out, err = run(capsys, "plan", chain_path)
    [line] = [ln for ln in out.splitlines() if ln.startswith("options")]
    assert "io_alignment 16" in line and "schedule graph" in line and "execution sequential" in line, line


def test_an_unproven_plan_says_how_far_from_proven_it_is():
    """issue 39: 'time limit' with the best bound gives the largest possible gap to the optimum."""
    from arena_tool.cli import _optimal_word
    from arena_tool.core.problem import Plan, Status
    plan = Plan(offsets=(0,), arena_size=1_041_408, planner="optimal", optimal=False, status=Status.TIME_LIMIT,
                lower_bound=986_112, best_bound=986_112)
    assert _optimal_word(plan) == "no (time limit, best bound 986,112 B: at most 5.61 % above the optimum)"


def test_plan_parses_and_helps_alike_with_only_its_parser():
    """main builds only plan's parser for a plan (a CSV plan's start-up): the same arguments, the same --help."""
    import argparse

    from arena_tool import cli

    argv = ["plan", "--problem", "p.csv", "--planner", "optimal", "--time-limit", "3", "-o", "x.csv", "--capacity", "1K"]
    only, full = cli.parser("plan"), cli.parser()
    assert vars(only.parse_args(argv)) == vars(full.parse_args(argv))

    def plan_help(top: argparse.ArgumentParser) -> str:
        sub = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
        return sub.choices["plan"].format_help()
    assert plan_help(only) == plan_help(full) and "--problem" in plan_help(only)
