"""QDQ vs QOperator vs float, and in-place vs not, on real models quantized in this run.

    python bench/quantized.py [--full] [--cache DIR]

Every float model of tests/quantized.py (the onnx package's light models, MLPerf Tiny's float
ONNX networks where ../shared has them) is quantized by onnxruntime's quantize_static in QDQ
and QOperator form, per tensor (pt) and per channel (pc), and planned with `optimal` at
alignment 16. Per model and form: the float arena, each twin's arena with in-place on and off,
weights (flash), and how many ops run on integers. A markdown table on stdout.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import quantized as Q  # noqa: E402

from arena_tool.plan import planners, planning  # noqa: E402
from arena_tool.core.problem import ModelOptions  # noqa: E402

PARAMS = planners.Params(time_limit=5.0)


def plan(path: Path, inplace: bool = True) -> planning.PlannedModel:
    return planning.plan_model(str(path), ModelOptions(inplace=inplace), "optimal", PARAMS)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--full", action="store_true", help="every model in all four forms (the big ones too)")
    ap.add_argument("--cache", help="folder for the quantized twins (default: a temporary one)")
    args = ap.parse_args()
    cache = Path(args.cache or tempfile.mkdtemp(prefix="arena-quantized-"))
    cache.mkdir(parents=True, exist_ok=True)
    print("| model | form | float arena | arena | --no-inplace | weights | integer ops |")
    print("|---|---|---:|---:|---:|---:|---:|")
    floats: dict[Path, int] = {}
    for path, fmt, pc in Q.cases(full=args.full):
        if path not in floats:
            floats[path] = plan(Q.materialized(path, cache)).plan.arena_size
        q = Q.quantized(path, fmt, pc, cache)
        on, off = plan(q), plan(q, inplace=False)
        mp = on.mp
        print(f"| {path.stem.removeprefix('light_')} | {fmt} {'pc' if pc else 'pt'} | {floats[path]:,} | "
              f"{on.plan.arena_size:,} | {off.plan.arena_size:,} | {mp.weights_bytes:,} | "
              f"{mp.integer_ops} of {len(mp.schedule)} |", flush=True)
    if not args.cache:
        print(f"\n(twins in {cache}; remove when done)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
