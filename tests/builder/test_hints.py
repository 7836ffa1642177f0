"""hints: what the gate suggests for a board that does not fit, and only what could help."""

from __future__ import annotations

import ast
import shlex
from pathlib import Path

import pytest

from arena_tool.builder import hints
from arena_tool.core.errors import ArenaError
from arena_tool.core.problem import ModelOptions
from arena_tool.plan import planners, planning
from arena_tool.builder.board_report import ModelUse
import models
from builders import target


def use(name: str, arena: int, lb: int, planner: str = "greedy_size", status: str = "heuristic",
        optimal: bool | None = None) -> ModelUse:
    return ModelUse(name=name, planner=planner, arena_size=arena, lower_bound=lb, optimal=optimal, status=status,
                    base=0, plan=f"{name}.plan.json", model=f"{name}.onnx", model_sha256="0" * 64, weights_bytes=0)


def test_the_quantize_command_is_one_python_program_writing_the_int8_twin() -> None:
    cmd = hints.quantize_command("models/kws.onnx", {"input": (1, 1, 49, 10), "a": [2]})
    argv = shlex.split(cmd.split(" (calibrates on random inputs")[0])
    assert argv[:2] == ["python3", "-c"]
    ast.parse(argv[2])  # the program compiles
    assert "'models/kws.int8.onnx'" in argv[2] and "QuantFormat.QDQ" in argv[2]
    assert "{'a': [2], 'input': [1, 1, 49, 10]}" in argv[2]  # the pinned shapes, sorted by name
    assert "'x.int8.onnx'" in hints.quantize_command("x")  # no .onnx suffix to strip


def test_better_region_is_the_smallest_other_region_with_room(tmp_path: Path) -> None:
    t = target(tmp_path, "{name: nucleo_f746}")  # DTCM 64K, ITCM 16K, SRAM1 240K, SRAM2 16K, BKPSRAM 4K
    room = {r.name: r.length for r in t.board.ram}.__getitem__
    assert hints.better_region(t, 10_000, "DTCM", room) == "ITCM"  # 16K, the first of the two 16K ones
    assert hints.better_region(t, 70_000, "DTCM", room) == "SRAM1"
    assert hints.better_region(t, 70_000, "SRAM1", room) is None
    assert hints.better_region(t, 1 << 30, "DTCM", room) is None


def test_tries_offers_only_what_could_help(tmp_path: Path) -> None:
    t = target(tmp_path, "{name: nucleo_f746}")
    open_, proven = use("a", 900, 800), use("b", 500, 500)
    assert hints.tries(t, [open_, proven], set(), 900, 800, region=None) == "planner optimal for a"
    assert hints.tries(t, [proven], set(), 500, 500, region=None) == ""  # at its lower bound: nothing to try
    # Below the lower bound no planner can reach the limit; another region still can.
    assert hints.tries(t, [open_], set(), 900, 800, region="SRAM1", limit=700) == "region SRAM1"
    stopped = use("a", 900, 800, planner="optimal", status="time_limit")
    both = hints.tries(t, [stopped], {"a"}, 900, 800, region="SRAM1")
    assert both.startswith("region SRAM1, a time_limit above ")
    assert ", or quantizing a to int8 (int8 activations take a quarter of float32's): python3 -c " in both


def test_the_quantize_hint_names_the_largest_float_model_first(tmp_path: Path) -> None:
    t = target(tmp_path, "{name: nucleo_f746}")
    small, large = use("a", 100, 100), use("b", 900, 900)
    text = hints.tries(t, [small, large], {"a", "b"}, 1000, 1000, region=None)
    assert text.startswith("quantizing b (and likewise a) to int8")
    assert "'b.int8.onnx'" in text and "'a.int8.onnx'" not in text


def test_io_int8_is_proposed_only_where_the_model_takes_it(tmp_path: Path) -> None:
    """A float output made by a float op (not a DequantizeLinear) makes io: int8 an error, so the
    hint does not propose it, however much of the peak the float input is."""
    params = planners.Params(time_limit=2.0)
    good, bad = (models.save(models.qdq_pool(tail), tmp_path / f"{n}.onnx") for n, tail in (("good", None), ("bad", "Relu")))
    plan = planning.plan_model(good, ModelOptions(), "optimal", params).plan_file
    assert hints.int8_io_applies(plan) and hints.float_input_share(plan) == ("x", 0.8)
    assert planning.plan_model(good, ModelOptions(io="int8"), "optimal", params).plan.arena_size < plan.arena_size
    plan = planning.plan_model(bad, ModelOptions(), "optimal", params).plan_file
    assert not hints.int8_io_applies(plan) and hints.float_input_share(plan) is None
    with pytest.raises(ArenaError, match="not dequantized at the boundary"):
        planning.plan_model(bad, ModelOptions(io="int8"), "optimal", params)
