"""Build helpers for the firmware tests (test_runtime, test_codegen, test_verify).

Generates the C tables for a list of planned models, then builds the example
firmware either natively (gcc with AddressSanitizer and UBSan) or for a QEMU
board (arm-none-eabi-gcc with the linker script arena_tool.emit.linker makes), through
arena_tool/run/firmware.py (the library `arena-tool run` builds with) with these tests' flags.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Callable

from arena_tool.model import liveness
from arena_tool.plan import planfile, planners
from arena_tool.run import firmware
from arena_tool.core.problem import ModelOptions
from arena_tool.target.boards import Board

REPO = Path(__file__).resolve().parent.parent
FIRMWARE = REPO / "example_firmware"
RUNTIME = firmware.RUNTIME
APP = firmware.APP  # main.c, startup.c
MODELS = FIRMWARE / "models"
CFLAGS = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic"]


def plan(model_path: str, planner: str, options: ModelOptions = ModelOptions()) -> planfile.PlanFile:
    mp = liveness.model_problem(str(model_path), options)
    problem = mp.problem()
    return planfile.build(mp, planners.run(planner, problem), problem)


def edited(plan: planfile.PlanFile, edit: Callable[[dict[str, Any]], Any]) -> planfile.PlanFile:
    """``plan`` with ``edit`` applied to a copy of its document: a plan file changed by hand, still
    schema-valid (PlanFile.from_json checks that) but possibly wrong."""
    doc = copy.deepcopy(plan.to_json())
    edit(doc)
    return planfile.PlanFile.from_json(doc)


def generate(out: Path, models: list[tuple[str, str, planfile.PlanFile]], board: str = "host") -> list[Path]:
    """Write the tables of `models` (symbol, model path, plan file), run one after another
    in a shared arena; returns the generated .c files."""
    return firmware.generate(out, models, board, name="{sym}_model")


def runtime_sources() -> list[Path]:
    return firmware.runtime_sources()


def build_host(out: Path, generated: list[Path]) -> Path:
    return firmware.build_host(out, generated, [*CFLAGS, "-O1", "-g", "-fsanitize=address,undefined",
                                                "-fno-sanitize-recover=all"], "fw_host")


def run_host(exe: Path) -> tuple[int, str]:
    return firmware.run_host(exe, timeout=120)


def build_elf(out: Path, generated: list[Path], board: Board | str, arena_size: int) -> Path:
    board_name = board if isinstance(board, str) else board.name
    return firmware.build_elf(out, generated, board, arena_size, stack=8192,
                              cflags=[*CFLAGS, "-O2", "-g", "-ffreestanding", "-ffunction-sections",
                                      "-fdata-sections", "-nostdlib"],
                              ldflags=["-Wl,--gc-sections"], libs=["-lgcc"], elf_name=f"{board_name}.elf")


def corrupt(plan: planfile.PlanFile) -> tuple[planfile.PlanFile, str, str, str]:
    """`plan` with the first op's output group moved onto one of its live arena inputs (a
    planner bug: two live tensors overlap).

    Returns (bad plan, victim tensor, culprit tensor, op name)."""
    bad = copy.deepcopy(plan.to_json())
    bufs = {b["name"]: b for b in bad["buffers"]}
    root = {n: (b["alias_of"] or n) for n, b in bufs.items()}
    for step in bad["schedule"]:
        ins = [n for n in step["inputs"] if n in bufs and bufs[n]["kind"] != "scratch"]
        outs = [n for n in step["outputs"] if n in bufs]
        for y in outs:
            for x in ins:
                if root[x] != root[y]:
                    for b in bad["buffers"]:
                        if root[b["name"]] == root[y]:
                            b["offset"] = bufs[x]["offset"]
                    bad["arena_size"] = max(bad["arena_size"], max(b["offset"] + b["size"] for b in bad["buffers"]))
                    return planfile.PlanFile.from_json(bad), x, y, step["name"] or step["outputs"][0]
    raise ValueError("no op with a separate input and output")
