"""Instructions per inference on mps2-an500 (QEMU), float32 next to int8, for real networks.

    python bench/models.py [--board mps2_an500] [--cache DIR]

The CNN families of tests/zoo.py at 96x96 and MLPerf Tiny's float networks (where ../shared has
them), each as float32 and as its int8 QDQ twin (onnxruntime quantize_static, per channel; arena
lowers it to integer ops), run with `arena-tool run MODEL --board mps2_an500 --json`: a one-model
firmware under `qemu-system-arm -icount shift=0`, outputs compared with onnxruntime. Prints a
markdown table: arena, flash (ELF), instructions per inference, whether the outputs matched.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import onnx

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import quantized as Q  # noqa: E402
import zoo  # noqa: E402


def run(model: Path, board: str, out: Path) -> dict[str, Any]:
    report = out / f"{model.stem}.json"
    subprocess.run([sys.executable, "-m", "arena_tool.cli", "run", str(model), "--board", board,
                    "--json", str(report)], cwd=ROOT, capture_output=True, text=True, timeout=1800)
    return json.loads(report.read_text()) if report.exists() else {"result": "no report"}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--board", default="mps2_an500")
    ap.add_argument("--cache", help="folder for models and twins (default: a temporary one)")
    args = ap.parse_args()
    cache = Path(args.cache or tempfile.mkdtemp(prefix="arena-models-"))
    cache.mkdir(parents=True, exist_ok=True)
    sources = []
    for name in zoo.NAMES:
        path = cache / f"{name}.onnx"
        onnx.save(zoo.build(name), str(path))
        sources.append(path)
    sources += Q.mlperf_float_models()
    print("| model | arena float | arena int8 | flash float | flash int8 | instructions float | "
          "instructions int8 | int8 / float | match |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for src in sources:
        f = run(src, args.board, cache)
        q = run(Q.quantized(src, "qdq", True, cache), args.board, cache)
        fi, qi = f.get("instructions"), q.get("instructions")
        ratio = f"{qi / fi:.2f}" if fi and qi else "–"
        name = src.stem.split("__")[-1].removesuffix("_tflite2onnx")
        print(f"| {name} | {f.get('arena_size', 0):,} | {q.get('arena_size', 0):,} | {f.get('flash') or 0:,} | "
              f"{q.get('flash') or 0:,} | {fi or 0:,} | {qi or 0:,} | {ratio} | "
              f"{f.get('result')} / {q.get('result')} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
