"""What lowers the peak itself: memory-aware scheduling and in-place depthwise convolution.

    python bench/peak.py [--cache DIR]

Per model (the onnx package's light models, tests/zoo.py's CNN families at 96x96, MLPerf
Tiny's float ONNX networks where ../shared has them; zoo and MLPerf also as QDQ int8 twins made
by quantize_static, per channel): the lower bound of the baseline (the graph's order, in-place
element-wise ops and views on, depthwise not in place), with in-place depthwise, with the memory
schedule, and with both, and the seconds the schedule search took. A markdown table on stdout;
every figure is a liveness lower bound, which `optimal` reaches on these models.
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

from arena_tool.model import liveness  # noqa: E402
from arena_tool.core.problem import ModelOptions, lower_bound  # noqa: E402

BASE = ModelOptions(inplace_depthwise=False)
DEPTHWISE = ModelOptions()
MEMORY = ModelOptions(inplace_depthwise=False, schedule="memory")
BOTH = ModelOptions(schedule="memory")


def bound(path: Path, options: ModelOptions) -> tuple[int, float]:
    t0 = time.perf_counter()
    mp = liveness.model_problem(str(path), options)
    return lower_bound(mp.problem().buffers), time.perf_counter() - t0


def models(cache: Path) -> list[tuple[str, Path]]:
    out = [(p.stem.removeprefix("light_"), p) for p in sorted(Q.LIGHT_DIR.glob("*.onnx"))]
    sources = []
    for name in zoo.NAMES:
        path = cache / f"{name}.onnx"
        if not path.exists():
            onnx.save(zoo.build(name), str(path))
        sources.append((name, path))
    sources += [(p.stem.split("__")[-1].removesuffix("_tflite2onnx"), p) for p in Q.mlperf_float_models()]
    for name, path in sources:
        out.append((name, path))
        out.append((f"{name} int8", Q.quantized(path, "qdq", True, cache)))
    return out


def pct(before: int, after: int) -> str:
    return f"{100 * (before - after) / before:.1f} %" if before else "-"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", help="folder for the generated and quantized models (default: a temporary one)")
    args = ap.parse_args()
    cache = Path(args.cache or tempfile.mkdtemp(prefix="arena-peak-"))
    cache.mkdir(parents=True, exist_ok=True)
    print("| model | baseline B | + in-place depthwise | + memory schedule | both | schedule s |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, path in models(cache):
        base, t_base = bound(path, BASE)
        dw, _ = bound(path, DEPTHWISE)
        mem, t_mem = bound(path, MEMORY)
        both, _ = bound(path, BOTH)
        assert mem <= base and both <= dw, name  # never worse than the graph's order
        print(f"| {name} | {base:,} | {dw:,} ({pct(base, dw)}) | {mem:,} ({pct(base, mem)}) | "
              f"{both:,} ({pct(base, both)}) | {max(0.0, t_mem - t_base):.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
