"""The floors of ``runtime: tflm``: every MLPerf Tiny int8 model and TFLM example, on TFLite Micro
with reference and CMSIS-NN kernels, under QEMU mps2-an500, against TFLM's host interpreter.

    python3 bench/tflm_firmware.py [--models vww,kws,...] [--kernels reference,cmsis_nn] [--build DIR] [--jobs N]

Each (model, kernels) is one ``arena-tool run MODEL.tflite --board mps2_an500 --tflm TREE
--kernels K`` (arena_tool/run/tflm_firmware.py: arena's plan, with the kernels' scratch buffers, written as TFLM's offline plan,
TFLM from ``<shared>/third_party/tflite-micro`` built by arena with TFLM's flags, the package's
tflm/main.cc), so the numbers are the product's. It prints one row per (model, kernels): head
(arena's plan), tail (TFLM's persistent part measured on the host, plus what CMSIS-NN
allocates beyond the reference kernels), the tensor_arena the board holds (head + tail), what
TFLM used of it on the target (``arena_used_bytes``), the ELF's flash,
instructions per inference (SysTick x 40, ``-icount shift=0``) and whether every output is
bit-identical to the host interpreter's. The TFLM libraries are the machine's cache's
(``$ARENA_CACHE_DIR``, as ``arena-tool run`` and a SCons build keep them: built once, whoever asks
first); ``--build`` (default build/tflm_firmware) holds the firmwares.

``<shared>`` is ``$ARENA_SHARED`` or ../shared beside the project; without it, the cross C++
compiler or QEMU the script says why and exits 0 having measured nothing. Exit status 1 when a
firmware fails or an output differs.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any, Sequence

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # first: bench/ (the script's folder) holds a bench.py that is not the package

from bench.speed import shared_dir  # noqa: E402
from arena_tool import cli  # noqa: E402
from arena_tool.run import tflm_firmware  # noqa: E402

BOARD = "mps2_an500"
KERNELS = ("reference", "cmsis_nn")
OPTION = {"reference": "reference", "cmsis_nn": "cmsis_nn_dsp"}  # --kernels on mps2-an500's Cortex-M7 (DSP)
MODELS = {  # key -> file below <shared>/models
    "vww": "mlperf_tiny/visual_wake_words__vww_96_int8.tflite",
    "kws": "mlperf_tiny/keyword_spotting__kws_ref_model.tflite",
    "resnet8": "mlperf_tiny/image_classification__pretrainedResnet_quant.tflite",
    "ad01": "mlperf_tiny/anomaly_detection__ad01_int8.tflite",
    "str_ww": "mlperf_tiny/streaming_wakeword__str_ww_ref_model.tflite",
    "hello_world": "tflm_examples/hello_world_int8.tflite",
    "micro_speech": "tflm_examples/micro_speech_quantized.tflite",
    "mnist_lstm": "tflm_examples/trained_lstm_int8.tflite",
    "dtln": "tflm_examples/dtln_noise_suppression.tflite",
}


def skip_reason(shared: Path) -> str | None:
    tree = shared / "third_party" / "tflite-micro"
    if not tree.is_dir():
        return f"{tree} is not here (set ARENA_SHARED to the shared folder)"
    for tool in ("arm-none-eabi-g++", "arm-none-eabi-gcc", "qemu-system-arm"):
        if shutil.which(tool) is None:
            return f"{tool} is not on PATH (Debian: gcc-arm-none-eabi, libstdc++-arm-none-eabi-newlib, qemu-system-arm)"
    return None


def measure(model: Path, tree: Path, kernels: str, work: Path, jobs: int) -> dict[str, Any]:
    """One ``arena-tool run``: its --json document, or {"error": ...}."""
    work.mkdir(parents=True, exist_ok=True)
    report = work / "run.json"
    report.unlink(missing_ok=True)
    text = io.StringIO()
    with contextlib.redirect_stdout(text), contextlib.redirect_stderr(text):
        rc = cli.main(["run", str(model), "--board", BOARD, "--tflm", str(tree), "--kernels", OPTION[kernels],
                       "--json", str(report), "--jobs", str(jobs), "--timeout", "1800"])
    if not report.is_file():
        return {"error": f"exit {rc}: {' '.join(text.getvalue().split())[-240:]}"}
    doc: dict[str, Any] = json.loads(report.read_text(encoding="utf-8"))
    if rc != 0:
        doc["error"] = f"exit {rc}: {' '.join(text.getvalue().split())[-240:]}"
    return doc


def _n(v: Any) -> str:
    return "-" if v is None else f"{v:,}"


def table(rows: Sequence[tuple[str, str, dict[str, Any]]]) -> list[str]:
    head = ["model", "kernels", "head B", "tail B", "arena B", "used B", "flash B", "instructions", "outputs"]
    body = []
    for name, kernels, d in rows:
        same = "-" if "outputs" not in d else ("bit-identical" if all(o["bit_identical"] for o in d["outputs"])
                                               else "DIFFER")
        body.append([name, kernels, _n(d.get("head")), _n(d.get("tail")), _n(d.get("tensor_arena_size")),
                     _n(d.get("used")), _n(d.get("flash")), _n(d.get("instructions")),
                     same if "error" not in d else "failed"])
    widths = [max(len(r[i]) for r in [head, *body]) for i in range(len(head))]

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.ljust(w) if i in (0, 1, 8) else c.rjust(w)
                                 for i, (c, w) in enumerate(zip(cells, widths))) + " |"

    return [line(head), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *(line(b) for b in body)]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--models", default=",".join(MODELS), help=f"comma-separated, of {', '.join(MODELS)}")
    ap.add_argument("--kernels", default=",".join(KERNELS), help="reference, cmsis_nn or both (default)")
    ap.add_argument("--build", default=str(ROOT / "build" / "tflm_firmware"), help="work folder")
    ap.add_argument("--jobs", type=int, default=2, help="parallel compiles of the TFLM libraries (default 2)")
    args = ap.parse_args(argv)
    keys = [k.strip() for k in args.models.split(",") if k.strip()]
    kernel_sets = [k.strip() for k in args.kernels.split(",") if k.strip()]
    bad = [k for k in keys if k not in MODELS] + [k for k in kernel_sets if k not in KERNELS]
    if bad or not keys or not kernel_sets:
        ap.error(f"unknown model or kernels {', '.join(bad) or '(none given)'}")
    shared = shared_dir()
    why = skip_reason(shared)
    if why is not None:
        print(f"tflm_firmware: skipped, nothing measured: {why}")
        return 0
    build = Path(args.build)
    tree = shared / "third_party" / "tflite-micro"
    rows = []
    for key in keys:
        model = shared / "models" / MODELS[key]
        if not model.is_file():
            print(f"tflm_firmware: note: {model} is not here, {key} skipped")
            continue
        for kernels in kernel_sets:
            print(f"tflm_firmware: {key} with {kernels} kernels", file=sys.stderr, flush=True)
            rows.append((key, kernels, measure(model, tree, kernels, build / f"{key}_{kernels}", args.jobs)))
    print(f"tflm_firmware: arena-tool run MODEL.tflite --board {BOARD} (qemu-system-arm -M mps2-an500 -icount "
          "shift=0), TFLM built from " + str(tree) + "; head = arena's plan, tail = TFLM's persistent part "
          "(host + CMSIS-NN's extra), arena = head + tail (the tensor_arena), used = TFLM's arena_used_bytes on the target")
    for line in table(rows):
        print(line)
    failed = [(k, kk, d["error"]) for k, kk, d in rows if "error" in d]
    for k, kk, e in failed:
        print(f"tflm_firmware: error: {k} ({kk}): {e}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
