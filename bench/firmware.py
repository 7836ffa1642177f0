"""Firmware numbers: per example model, its arena, flash, RAM and instructions per inference.

Usage: python3 bench/firmware.py [--board mps2_an500] [--out DIR] [--models kws ...] [--no-callgrind]

Builds one ELF per example model, and one with all of them (run one after
another in a shared arena, as the example manifest does), for a QEMU board
with the optimal planner and the SCons tool's flags (-Os, newlib-nano, the
generated linker script with a 4 KiB stack reserve; arena_tool/run/firmware.py
builds, as for ``arena-tool run``), runs each under
``qemu-system-arm -icount shift=0`` and prints a table:

    model, arena, lower bound, ELF flash, ELF RAM, instructions per inference (QEMU)

Sizes come from the ELF's section headers (what ``arm-none-eabi-size -A``
lists; see arena_tool/run/runreport.py); instructions from SysTick ticks x 40 on
the mps2 machines (25 MHz SysTick, 1 ns per instruction under -icount
shift=0). With valgrind on PATH, a last column gives callgrind's count of
x86-64 instructions inside ``arena_run`` for the same sources built natively
with gcc -Os: a second, independent measure of the work (a different ISA, so
expect the same order, not the same number).
Exit status 1 when a firmware fails or an output differs from the all-models
build (each model must compute the same bits alone as with the others).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from arena_tool.plan import planners, planning  # noqa: E402
from arena_tool.run import qemu, runreport, verify  # noqa: E402
from arena_tool.target import boards  # noqa: E402
from arena_tool.run import firmware as fw  # noqa: E402
from arena_tool.plan.planfile import PlanFile  # noqa: E402
from arena_tool.core.problem import ModelOptions  # noqa: E402

FIRMWARE = ROOT / "example_firmware"
APP = fw.APP  # main.c, startup.c
EXAMPLES = ("kws", "resnet8", "autoencoder", "kws_int8")
CFLAGS = list(fw.TARGET_CFLAGS)
STACK = fw.STACK


def c_sources() -> list[str]:
    return [str(p) for p in fw.runtime_sources()]


def generate(out: Path, models: list[tuple[str, str, PlanFile]], board: str) -> list[str]:
    return [str(p) for p in fw.generate(out, models, board)]


def build_elf(out: Path, gen: list[str], board: boards.Board, arena_size: int) -> str:
    return str(fw.build_elf(out, [Path(g) for g in gen], board, arena_size, stack=STACK))


def callgrind(out: Path, gen: list[str]) -> int | None:
    """x86-64 instructions executed inside arena_run (all models of the build), or None."""
    if shutil.which("valgrind") is None:
        return None
    exe = str(out / "fw_host")
    fw.build_host(out, [Path(g) for g in gen], CFLAGS, "fw_host")
    prof = str(out / "callgrind.out")
    subprocess.run(["valgrind", "--tool=callgrind", "--toggle-collect=arena_run", f"--callgrind-out-file={prof}",
                    exe], check=True, capture_output=True, text=True, timeout=600)
    text = Path(prof).read_text()
    m = re.search(r"^(?:summary|totals): (\d+)", text, re.MULTILINE)
    return int(m.group(1)) if m else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--board", default="mps2_an500")
    ap.add_argument("--models", nargs="+", default=list(EXAMPLES), choices=EXAMPLES)
    ap.add_argument("--out", help="keep the builds in this folder (default: a temporary one)")
    ap.add_argument("--no-callgrind", action="store_true")
    ap.add_argument("--time-limit", type=float, default=5.0)
    args = ap.parse_args(argv)
    board = boards.load_board(args.board)
    if board.qemu is None:
        print(f"board {args.board} has no qemu machine", file=sys.stderr)
        return 2
    for tool in ("arm-none-eabi-gcc", "qemu-system-arm"):
        if shutil.which(tool) is None:
            print(f"{tool} is not on PATH", file=sys.stderr)
            return 2
    top = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="arena-fw-"))
    planned = []
    for name in args.models:
        path = str(FIRMWARE / "models" / f"{name}.onnx")
        pm = planning.plan_model(path, ModelOptions(), "optimal", planners.Params(time_limit=args.time_limit))
        planned.append((name, path, pm.plan_file))
    builds = [(n, [m]) for n, m in zip(args.models, planned)] + [("all", planned)]
    rows, status = [], 0
    outputs: dict[str, list[dict[str, bytes]]] = {}
    for label, models in builds:
        out = top / label
        gen = generate(out, models, board.name)
        arena = max(p.arena_size for *_, p in models)
        elf = build_elf(out, gen, board, arena)
        rc, text = qemu.run(elf, board.qemu, timeout=120, icount=True)
        run_report = runreport.build(board.name, board.qemu, elf, rc, text, board.cpu.clock_hz, None)
        run = verify.parse_output(text)
        status_of = {m.name: m.status for m in run_report.models}  # a model that never finished: None
        if rc != 0 or any(status_of.get(s) != 0 for s in [*(s for s, *_ in models), *status_of]):
            print(f"{label}: firmware failed (exit status {rc})\n{text[-2000:]}", file=sys.stderr)
            status = 1
        for s, _, _ in models:
            outputs.setdefault(s, []).append({k: v.tobytes() for k, v in run.outputs.get(s, {}).items()})
        insns = sum(m.instructions or 0 for m in run_report.models)
        host = None if args.no_callgrind else callgrind(out, gen)
        lb = max(p.lower_bound for *_, p in models)
        rows.append((label, arena, lb, run_report.flash, run_report.ram, insns, host))
    for s, outs in outputs.items():
        if any(o != outs[0] for o in outs[1:]):
            print(f"{s}: outputs differ between its own build and the all-models build", file=sys.stderr)
            status = 1
    head = ("model", "arena B", "lower bound B", "flash B", "RAM B", "instructions (QEMU)", "x86-64 (callgrind)")
    cells = [head] + [(r[0], f"{r[1]:,}", f"{r[2]:,}", f"{r[3]:,}", f"{r[4]:,}", f"{r[5]:,}",
                       "-" if r[6] is None else f"{r[6]:,}") for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(head))]
    print(f"board {board.name} (qemu -M {board.qemu} -icount shift=0), planner optimal, {CFLAGS[0]}, stack reserve {STACK} B")
    print("| " + " | ".join(h.ljust(w) for h, w in zip(head, widths)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for c in cells[1:]:
        print("| " + " | ".join(c[0].ljust(widths[0]) if i == 0 else x.rjust(w)
                                for i, (x, w) in enumerate(zip(c, widths))) + " |")
    if not args.out:
        shutil.rmtree(top, ignore_errors=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
