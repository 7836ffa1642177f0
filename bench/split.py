"""Split arenas: what the assignment puts in the fast region, against small buffers first.

    python bench/split.py [--run host|qemu|none] [--time-limit S]

Per model (example_firmware's models, MLPerf Tiny's ONNX files in ../shared/models/mlperf_tiny)
and per two-region board whose regions together hold 5 % more than the model's one-arena plan
(``optimal``): FAST just the model's largest buffer (a TCM that holds the biggest tensor),
SLOW just the largest buffer (a small second SRAM), or the two halves; the other region takes
the rest of the sum (16 B aligned). Printed: the assignment's method and status ('infeasible' with
method exact is a proof that no assignment fits: the sum is necessary, not sufficient, when a
peak's buffers cannot be divided between the regions), the accessed bytes per inference
(split_arena.COST_MODEL) in FAST for the split plan and for the greedy small-buffers-first
assignment (where that fits), the share of all accessed bytes, and the planning time.
``--run host`` (default) builds each plan that fits natively (gcc; arena_tool.run.firmware with the
regions as separate arrays), ``--run qemu`` for an mps2_an500 cut to those regions, and compares
the outputs with onnxruntime on main.c's input pattern. The floors: every board a split fits
gets a plan and the firmware runs and matches (no heuristic gives up where an assignment
exists), and the split puts at least small-first's accessed bytes in FAST. Markdown on stdout.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]

from arena_tool.model import lowering  # noqa: E402
from arena_tool.plan import plancheck, planfile, planners, planning, split_arena  # noqa: E402
from arena_tool.target import boards  # noqa: E402
from arena_tool.run import firmware, verify  # noqa: E402
from arena_tool.core.problem import ModelOptions, align_up  # noqa: E402

MLPERF = ROOT.parent / "shared" / "models" / "mlperf_tiny"
SHAPES = {"kws": (("input", (1, 1, 49, 10)),)}
SLACK = 1.05  # the regions together: 5 % more than the one-arena plan
SCENARIOS = ("FAST = largest", "SLOW = largest", "halves")


def models() -> list[tuple[str, Path]]:
    out = [(p.stem, p) for p in sorted((ROOT / "example_firmware" / "models").glob("*.onnx"))]
    out += [(p.stem.split("__")[-1].removesuffix("_tflite2onnx"), p) for p in sorted(MLPERF.glob("*.onnx"))]
    return out


def caps(scenario: str, arena: int, largest: int) -> list[split_arena.RegionCap]:
    total = align_up(int(arena * SLACK), 16)
    fast = {"FAST = largest": largest, "SLOW = largest": total - largest, "halves": align_up(total // 2, 16)}[scenario]
    return [split_arena.RegionCap("FAST", fast), split_arena.RegionCap("SLOW", total - fast)]


def bench_board(c: list[split_arena.RegionCap]) -> boards.Board:
    """mps2_an500 with FAST in SSRAM2&3, SLOW in PSRAM and a 1 MiB data region, as QEMU runs it."""
    base = boards.load_board("mps2_an500")
    ram = (dataclasses.replace(base.ram[0], name="FAST", length=c[0].capacity, speed=1),
           dataclasses.replace(base.ram[1], name="SLOW", length=c[1].capacity, speed=2),
           dataclasses.replace(base.ram[0], name="DATA", origin=0x20300000, length=1 << 20, speed=3))
    return dataclasses.replace(base, name="split_bench", ram=ram, default_region="FAST", data_region="DATA")


def run(sym: str, path: Path, plan: planfile.PlanFile, mode: str, c: list[split_arena.RegionCap]) -> str:
    """'match', 'MISMATCH ...' or 'failed ...' for the split plan's firmware."""
    with tempfile.TemporaryDirectory(prefix="arena-split-") as tmp:
        out = Path(tmp)
        low = plancheck.lowered_model(str(path), plan)
        if mode == "host":
            gen = firmware.generate(out, [(sym, str(path), plan)], firmware.HOST, lowered={sym: low})
            rc, text = firmware.run_host(firmware.build_host(out, gen))
        else:
            board = bench_board(c)
            gen = firmware.generate(out, [(sym, str(path), plan)], board.name, lowered={sym: low})
            elf = firmware.build_elf(out, gen, board, plan.arena_size,
                                     regions=firmware.board_regions([plan]))
            rc, text = firmware.run_qemu(elf, board, timeout=600)
    parsed = verify.parse_output(text)
    if rc != 0 or parsed.status.get(sym) != 0:
        return f"failed (exit {rc})"
    ref = verify.reference(str(path), plan)
    for name, got in parsed.outputs[sym].items():
        want = ref[name].reshape(-1).astype(np.float32)
        step = firmware.quant_step(low, plan, name)
        tol = step + 1e-6 if step is not None else 1e-4 * max(float(np.max(np.abs(want))), 1e-30)
        err = float(np.max(np.abs(got.astype(np.float32) - want)))
        if err > tol:
            return f"MISMATCH {name} {err:.3g}"
    return "match"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", choices=("host", "qemu", "none"), default="host")
    ap.add_argument("--time-limit", type=float, default=5.0)
    args = ap.parse_args()
    params = planners.Params(time_limit=args.time_limit)
    print("| model | buffers | arena | board FAST + SLOW | method | status | FAST accessed: split | small first "
          "| split / small first | of all accessed | plan s | runs |")
    print("|---|---:|---:|---|---|---|---:|---:|---:|---:|---:|---|")
    counts = {"boards": 0, "fit": 0, "proven infeasible": 0, "ran": 0, "above small first": 0, "compared": 0}
    floor_ok = True
    for sym, path in models():
        opts = ModelOptions(input_shapes=SHAPES.get(sym, ()))
        one = planning.plan_model(str(path), opts, "optimal", params)
        largest = align_up(max(b.size for b in one.problem.buffers), 16)
        for scenario in SCENARIOS:
            c = caps(scenario, one.plan.arena_size, largest)
            t0 = time.perf_counter()
            pm = planning.plan_split(str(path), opts, "optimal", params, c)
            seconds = time.perf_counter() - t0
            s, split_regions = pm.plan_file.split, pm.plan_file.regions
            assert s is not None and split_regions is not None, "plan_split writes both"
            fits = s.status != "infeasible" and all(r.arena_size <= r.capacity for r in split_regions)
            proof = not fits and s.method == "exact"
            fast = split_regions[0].accessed_bytes
            base = s.small_first_accessed[0] if s.small_first_accessed and fits else None
            ran = "-" if args.run == "none" or not fits else run(sym, path, pm.plan_file, args.run, c)
            counts["boards"] += 1
            counts["fit"] += fits
            counts["proven infeasible"] += proof
            counts["ran"] += ran == "match"
            counts["compared"] += base is not None
            counts["above small first"] += base is not None and fast > base
            floor_ok &= (fits or proof) and (base is None or fast >= base) and ran in ("-", "match")
            cells = [f"{fast:,}", f"{base:,}" if base is not None else "does not fit",
                     f"{fast / base:.2f}" if base else "-",
                     f"{100 * fast / s.accessed_bytes:.1f} %" if s.accessed_bytes else "-"] if fits else \
                ["-", "-", "-", "-"]
            print(f"| {sym} ({scenario}) | {len(pm.problem.buffers)} | {one.plan.arena_size:,} | "
                  f"{c[0].capacity:,} + {c[1].capacity:,} | {s.method} | {s.status} | {' | '.join(cells)} | "
                  f"{seconds:.2f} | {ran if fits else 'no split exists' if proof else 'NOT FOUND'} |")
            sys.stdout.flush()
    print("\n" + ", ".join(f"{k} {v}" for k, v in counts.items()))
    print(f"floor: every board a split fits gets a plan{'' if args.run == 'none' else ' that runs and matches'} "
          f"(the others proven infeasible), with at least small-first's accessed bytes in FAST: "
          f"{'yes' if floor_ok else 'NO'}")
    return 0 if floor_ok else 1


if __name__ == "__main__":
    sys.exit(main())
