"""``arena-tool fit`` against exhaustive measurement: MLPerf Tiny and the zoo's int8 models on
shipped boards at 32, 64, 128 and 256 KB arena budgets.

    nice python bench/fit.py [--models NAME,...] [--boards B,...] [--budgets 32K,64K,...] [--cache DIR]

Per model, board and budget: ``arena-tool fit``'s pick (its RAM from the plan, flash from the
linked ELF, instructions measured on QEMU by its proof) beside the fastest fitting configuration
found by measuring every configuration that fits RAM and flash on QEMU (the exhaustive search:
each candidate of the search's space at each level, ``run/fit.measure``; only where at most
``--exhaustive`` fit, else the row says so and checks nothing), and their ratio. The first
board's rows come first. A run
of one candidate is made once per process and core (memoized), so the budgets and the boards of
one core share them. A markdown table on stdout; exit 1 when a pick is more than 10 % slower
than the fastest fitting configuration measured, or a proof does not match.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from pathlib import Path

import onnx

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import quantized as Q  # noqa: E402
import zoo  # noqa: E402

from arena_tool.run import fit  # noqa: E402
from arena_tool.target import manifest  # noqa: E402

ZOO = ("mobilenet_v2", "mnasnet", "mobilenet_v1")
BOARDS = ("nucleo_l432kc", "nucleo_l4r5zi")  # Cortex-M4F, 256K and 2M of flash: QEMU mps2-an386 runs both
BUDGETS = ("32K", "64K", "128K", "256K")
TOLERANCE = 0.10
EXHAUSTIVE = 16  # fitting configurations measured on QEMU per row at most: a larger space is not measured exhaustively


def models(cache: Path, names: set[str] | None) -> list[tuple[str, Path]]:
    """(name, int8 ONNX path): the zoo's QDQ twins, then MLPerf Tiny's where ../shared has them."""
    out = []
    for name in ZOO:
        if names and name not in names:
            continue
        path = cache / f"{name}.onnx"
        if not path.exists():
            onnx.save(zoo.build(name), str(path))
        out.append((name, Q.quantized(path, "qdq", True, cache)))
    for path in Q.mlperf_float_models():
        task, _, rest = path.stem.partition("__")
        name = re.sub(r"_(fp32|float32|float)$", "", rest.removesuffix("_tflite2onnx"))  # e.g. vww_96, ad01
        if names and not names & {name, task}:
            continue
        out.append((name, Q.quantized(path, "qdq", True, cache)))
    return out


def target(cache: Path, name: str, path: Path, board: str, budget: str) -> manifest.BoardTarget:
    text = (f"models:\n  - {{name: {name}, path: {path}, time_limit: 5}}\n"
            f"boards:\n  - {{name: {board}, region: auto, budget: {budget}}}\n")
    m = cache / f"fit_{name}_{board}_{budget}.yaml"
    m.write_text(text, encoding="utf-8")
    return manifest.load(str(m)).targets[0]


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--models", help="only these (zoo names, or MLPerf Tiny's by task, visual_wake_words, "
                                     "keyword_spotting, ..., or by model, vww_96, kws_ref_model, ad01, ...)")
    ap.add_argument("--boards", default=",".join(BOARDS), help="shipped boards (default %(default)s)")
    ap.add_argument("--budgets", default=",".join(BUDGETS), help="arena budgets (default %(default)s)")
    ap.add_argument("--exhaustive", type=int, default=EXHAUSTIVE,
                    help="measure every fitting configuration when there are at most this many (default %(default)s)")
    ap.add_argument("--cache", help="folder for the generated and quantized models (default: a temporary one)")
    args = ap.parse_args()
    cache = Path(args.cache or tempfile.mkdtemp(prefix="arena-fit-bench-"))
    cache.mkdir(parents=True, exist_ok=True)
    bad = 0
    print("| model | board | budget | pick | RAM B | flash B | instr (QEMU) | fastest fitting (QEMU) | ratio | "
          "measured | s |")
    print("|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    chosen = models(cache, set(args.models.split(",")) if args.models else None)
    for board in args.boards.split(","):  # the first board's rows first: a long run reports them early
        for name, path in chosen:
            for budget in args.budgets.split(","):
                t0 = time.perf_counter()
                t = target(cache, name, path, board, budget)
                r = fit.fit(t)
                pick = r.picked
                fitting = [c for c in r.configs if c.fits]
                if pick is None or r.pick is None:
                    least, thin = fit.smallest(r)
                    flash = "" if thin is None else \
                        f"; of those that fit it, least flash {thin.flash or 0:,} B > {r.flash_limit:,}"
                    print(f"| {name} | {board} | {budget} | none fits (least RAM {least.combo.ram:,} B{flash}) | | | | | "
                          f"| 0 | {time.perf_counter() - t0:.0f} |", flush=True)
                    continue
                runs = dict(r.proofs)[r.pick]
                got = sum(p.instructions or 0 for p in runs)
                bad += any(p.result != "match" for p in runs)
                label = fit.names(pick.combo, r.spaces) + f", {pick.optimize}"
                if len(fitting) > args.exhaustive:  # too many to run each: the pick alone, no floor checked
                    print(f"| {name} | {board} | {budget} | {label} | {pick.combo.ram:,} | {pick.flash or 0:,} | "
                          f"{got:,} | not run ({len(fitting)} fit) | | 0 | {time.perf_counter() - t0:.0f} |", flush=True)
                    continue
                measured = [sum(fit.measure(p, r.emulated, c.optimize)["instructions"] or 0 for p in c.combo.picks)
                            for c in fitting]
                best = min(measured)
                ratio = got / best if best else 1.0
                bad += ratio > 1 + TOLERANCE
                print(f"| {name} | {board} | {budget} | {label} | {pick.combo.ram:,} | {pick.flash or 0:,} | "
                      f"{got:,} | {best:,} | {ratio:.3f} | {len(measured)} | {time.perf_counter() - t0:.0f} |",
                      flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
