"""Patch-based inference (``patches: auto``): the arena without and with patches, per network.

    python bench/patches.py [--cache DIR] [--time-limit S] [--models NAME,...]

Per model (tests/zoo.py's depthwise CNN families at 96x96 and MLPerf Tiny's VWW where
../shared has it, each float32 and as its QDQ int8 twin made by quantize_static, per channel,
planned with ``io: int8``): the optimal plan with ``patches: off`` and with ``patches: auto``,
the stages auto chose, the MACs it recomputes in the halos, and the seconds the plan took. A
markdown table on stdout; auto never returns a plan larger than off (asserted).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import onnx

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import quantized as Q  # noqa: E402
import zoo  # noqa: E402

from arena_tool.core.problem import ModelOptions  # noqa: E402
from arena_tool.plan import planners, planning  # noqa: E402

FAMILIES = ("mobilenet_v1", "mobilenet_v2", "mobilenet_v3", "mnasnet", "shufflenet_v2", "efficientnet")


def models(cache: Path, names: set[str] | None) -> list[tuple[str, Path, str]]:
    """(name, path, io) of every network, float then int8."""
    sources = []
    for name in FAMILIES:
        path = cache / f"{name}.onnx"
        if not path.exists():
            onnx.save(zoo.build(name), str(path))
        sources.append((name, path))
    sources += [("vww", p) for p in Q.mlperf_float_models() if "visual_wake_words" in p.name]
    out = []
    for name, path in sources:
        if names and name not in names:
            continue
        out.append((name, path, "model"))
        out.append((f"{name} int8", Q.quantized(path, "qdq", True, cache), "int8"))
    return out


def _short(text: str, keep: int = 30) -> str:
    """Stages with long fused node names (tf2onnx's) elided in the middle for the table."""
    return text if len(text) <= 2 * keep else f"{text[:keep]}...{text[-keep:]}"


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--cache", help="folder for the generated and quantized models (default: a temporary one)")
    ap.add_argument("--time-limit", type=float, default=5.0, help="seconds per plan (default %(default)s)")
    ap.add_argument("--models", help="only these families, comma-separated (e.g. mobilenet_v2,vww)")
    args = ap.parse_args()
    cache = Path(args.cache or tempfile.mkdtemp(prefix="arena-patches-"))
    cache.mkdir(parents=True, exist_ok=True)
    params = planners.Params(time_limit=args.time_limit)
    print("| model | off B | auto B | ratio | MACs + | stages | search | s |")
    print("|---|---:|---:|---:|---:|---|---|---:|")
    for name, path, io in models(cache, set(args.models.split(",")) if args.models else None):
        t0 = time.perf_counter()
        auto = planning.plan_model(str(path), ModelOptions(io=io, patches="auto"), "optimal", params)
        seconds = time.perf_counter() - t0
        p = auto.plan_file.patches
        assert p is not None
        off, on = p.untiled_arena, auto.plan.arena_size
        assert on <= off, name  # auto never returns a larger plan than off
        extra = 100 * (p.macs - p.macs_untiled) / p.macs_untiled if p.macs_untiled else 0.0
        stages = _short(p.stages)
        print(f"| {name} | {off:,} | {on:,} | {off / on:.2f}x | {extra:.1f} % | {stages} | "
              f"{p.status}, {p.candidates} | {seconds:.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
