"""Build helpers for the firmware tests (test_runtime, test_codegen, test_verify).

Generates the C tables for a list of planned models, then builds the example
firmware either natively (gcc with AddressSanitizer and UBSan) or for a QEMU
board (arm-none-eabi-gcc with the linker script arena_tool.linker makes).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import arena_tool
from arena_tool import codegen, liveness, planfile, planners
from arena_tool.problem import ModelOptions

REPO = Path(__file__).resolve().parent.parent
FIRMWARE = REPO / "example_firmware"
RUNTIME = Path(arena_tool.runtime_dir())
APP = RUNTIME / "example"  # main.c, startup.c
MODELS = FIRMWARE / "models"
CFLAGS = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic"]


def plan_doc(model_path: str, planner: str, options: ModelOptions = ModelOptions()) -> dict[str, Any]:
    mp = liveness.model_problem(str(model_path), options)
    problem = mp.problem()
    plan = planners.run(planner, problem)
    return planfile.build(mp, plan, problem)


def generate(out: Path, models: list[tuple[str, str, dict[str, Any]]], board: str = "host") -> list[Path]:
    """Write the tables of `models` (symbol, model path, plan doc), run one after another
    in a shared arena; returns the generated .c files."""
    out.mkdir(parents=True, exist_ok=True)
    sources = []
    for sym, path, doc in models:
        h, c = codegen.model_sources(doc, planfile.lowered_model(str(path), doc), sym)
        codegen.write(str(out / f"{sym}_model.h"), h)
        codegen.write(str(out / f"{sym}_model.c"), c)
        sources.append(out / f"{sym}_model.c")
    size = max((d["arena_size"] for _, _, d in models), default=0)
    h, c = codegen.arena_sources(board, size, [(sym, 0) for sym, _, _ in models])
    codegen.write(str(out / "arena_board.h"), h)
    codegen.write(str(out / "arena_board.c"), c)
    return sources + [out / "arena_board.c"]


def runtime_sources() -> list[Path]:
    return sorted(RUNTIME.glob("*.c")) + [APP / "main.c"]


def build_host(out: Path, generated: list[Path]) -> Path:
    exe = out / "fw_host"
    cmd = ["gcc", *CFLAGS, "-O1", "-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
           f"-I{RUNTIME}", f"-I{out}", *map(str, runtime_sources()), *map(str, generated), "-o", str(exe)]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    return exe


def run_host(exe: Path) -> tuple[int, str]:
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0", UBSAN_OPTIONS="print_stacktrace=1")
    p = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120, env=env)
    return p.returncode, p.stdout + p.stderr


def have_arm() -> bool:
    return shutil.which("arm-none-eabi-gcc") is not None and shutil.which("qemu-system-arm") is not None


def build_elf(out: Path, generated: list[Path], board_name: str, arena_size: int) -> Path:
    from arena_tool import boards, linker

    board = boards.load_board(board_name)
    script = out / f"{board_name}.ld"
    script.write_text(linker.render(board, board.default_region, arena_size, 8192, 0))
    elf = out / f"{board_name}.elf"
    cmd = ["arm-none-eabi-gcc", *board.cpu.gcc_flags(), *CFLAGS, "-O2", "-g", "-ffreestanding",
           "-ffunction-sections", "-fdata-sections", "-nostdlib", f"-I{RUNTIME}", f"-I{APP}", f"-I{out}",
           str(APP / "startup.c"), *map(str, runtime_sources()), *map(str, generated),
           "-Wl,--gc-sections", f"-Wl,-T,{script}", "-lgcc", "-o", str(elf)]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    return elf


def corrupt(doc: dict[str, Any]) -> tuple[dict[str, Any], str, str, str]:
    """A copy of `doc` where the first op's output group is moved onto one of its live
    arena inputs (a planner bug: two live tensors overlap).

    Returns (bad doc, victim tensor, culprit tensor, op name)."""
    import copy

    bad = copy.deepcopy(doc)
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
                    return bad, x, y, step["name"] or step["outputs"][0]
    raise ValueError("no op with a separate input and output")
