"""A .tflite on arena's own runtime beside TFLite Micro's, side by side in one run: every MLPerf Tiny
int8 model and TFLM example, under QEMU mps2-an500, each output against TFLM's host interpreter.

    python3 bench/tflite.py [--models vww,kws,...] [--tflm reference,cmsis_nn | --tflm none] [--build DIR] [--jobs N]

Per model one ``arena-tool run MODEL.tflite --board mps2_an500 --runtime arena`` (the model lowered
for arena's runtime, its plan, arena's C tables, the example firmware) and, unless ``--tflm none``,
one ``arena-tool run ... --runtime tflm`` per TFLM kernel set (bench/tflm_firmware.py's: arena's plan
written as TFLM's offline plan, TFLM built from ``<shared>/third_party/tflite-micro``). It prints one
row per (model, runtime): the RAM the model's working memory takes (arena's runtime: the planned
arena, no tail; TFLM: its tensor_arena, head + persistent tail, and what TFLM used of it on the
target), the ELF's RAM and flash, instructions per inference (SysTick x 40, ``-icount shift=0``) and
whether every output is bit-identical to TFLM's host interpreter. A model arena's runtime cannot run
(an op it has no kernel for) is a row that says so. ``<shared>`` is ``$ARENA_SHARED`` or ../shared;
without it, QEMU or the cross compilers the script says why and exits 0 having measured nothing.
Exit status 1 when a firmware fails or an output differs.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import shutil
import sys
from pathlib import Path
from typing import Any, Sequence

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # first: bench/ (the script's folder) holds a bench.py that is not the package

from bench import tflm_firmware  # noqa: E402
from bench.speed import shared_dir  # noqa: E402
from arena_tool import cli  # noqa: E402

BOARD = tflm_firmware.BOARD
MODELS = tflm_firmware.MODELS
STACK = 4096  # the example firmware's stack reserve, in the ELF's RAM


def arena_run(model: Path, work: Path) -> dict[str, Any]:
    """``arena-tool run --runtime arena``: its --json document, or {"error": ...} (an op without a kernel too)."""
    work.mkdir(parents=True, exist_ok=True)
    report = work / "run.json"
    report.unlink(missing_ok=True)
    text = io.StringIO()
    with contextlib.redirect_stdout(text), contextlib.redirect_stderr(text):
        rc = cli.main(["run", str(model), "--board", BOARD, "--runtime", "arena", "--json", str(report),
                       "--timeout", "1800"])
    said = " ".join(text.getvalue().split())
    if not report.is_file():
        return {"error": f"exit {rc}: {said[-240:]}"}
    doc: dict[str, Any] = json.loads(report.read_text(encoding="utf-8"))
    if rc != 0:
        doc["error"] = "unsupported ops" if doc.get("result") == "unsupported" else f"exit {rc}: {said[-240:]}"
    elif doc.get("result") != "match":
        doc["error"] = f"result {doc.get('result')}"
    return doc


def _n(v: Any) -> str:
    return "-" if v is None else f"{v:,}"


def row(name: str, runtime: str, d: dict[str, Any]) -> list[str]:
    if runtime == "arena":
        same = all(o.get("max_abs_error") == 0 for o in d.get("outputs", [])) and bool(d.get("outputs"))
        ram, used = d.get("arena_size"), None
    else:
        same = bool(d.get("outputs")) and all(o["bit_identical"] for o in d["outputs"])
        ram, used = d.get("tensor_arena_size"), d.get("used")
    verdict = str(d["error"]) if d.get("error") else ("bit-identical" if same else "DIFFER")
    return [name, runtime, _n(ram), _n(used), _n(d.get("ram")), _n(d.get("flash")), _n(d.get("instructions")), verdict]


def table(rows: Sequence[list[str]]) -> list[str]:
    head = ["model", "runtime", "working RAM B", "TFLM used B", "ELF RAM B", "flash B", "instructions", "outputs"]
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.ljust(w) if i in (0, 1, 7) else c.rjust(w)
                                 for i, (c, w) in enumerate(zip(cells, widths))) + " |"

    return [line(head), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *(line(r) for r in rows)]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--models", default=",".join(MODELS), help=f"comma-separated, of {', '.join(MODELS)}")
    ap.add_argument("--tflm", default=",".join(tflm_firmware.KERNELS),
                    help="TFLM's kernel sets to run beside arena's runtime: reference, cmsis_nn (default both), or none")
    ap.add_argument("--build", default=str(ROOT / "build" / "tflite_bench"), help="work folder")
    ap.add_argument("--jobs", type=int, default=2, help="parallel compiles of the TFLM libraries (default 2)")
    args = ap.parse_args(argv)
    keys = [k.strip() for k in args.models.split(",") if k.strip()]
    kernel_sets = [] if args.tflm == "none" else [k.strip() for k in args.tflm.split(",") if k.strip()]
    bad = [k for k in keys if k not in MODELS] + [k for k in kernel_sets if k not in tflm_firmware.KERNELS]
    if bad or not keys:
        ap.error(f"unknown model or kernels {', '.join(bad) or '(none given)'}")
    shared = shared_dir()
    why = tflm_firmware.skip_reason(shared) if kernel_sets else next(
        (f"{t} is not on PATH" for t in ("arm-none-eabi-gcc", "qemu-system-arm") if shutil.which(t) is None), None)
    if why is not None:
        print(f"tflite: skipped, nothing measured: {why}")
        return 0
    build = Path(args.build)
    tree = shared / "third_party" / "tflite-micro"
    rows, failed = [], []
    for key in keys:
        model = shared / "models" / MODELS[key]
        if not model.is_file():
            print(f"tflite: note: {model} is not here, {key} skipped")
            continue
        print(f"tflite: {key} on arena's runtime", file=sys.stderr, flush=True)
        d = arena_run(model, build / f"{key}_arena")
        rows.append(row(key, "arena", d))
        if d.get("error") and d["error"] != "unsupported ops":
            failed.append((key, "arena", d["error"]))
        for kernels in kernel_sets:
            print(f"tflite: {key} on TFLM with {kernels} kernels", file=sys.stderr, flush=True)
            t = tflm_firmware.measure(model, tree, kernels, build / f"{key}_{kernels}", args.jobs)
            rows.append(row(key, f"tflm {kernels}", t))
            if t.get("error"):
                failed.append((key, kernels, t["error"]))
    print(f"tflite: arena-tool run MODEL.tflite --board {BOARD} --runtime arena | tflm (qemu-system-arm -M mps2-an500 "
          "-icount shift=0); working RAM = arena's plan (arena's runtime: no persistent tail) or TFLM's "
          f"tensor_arena (head + tail); ELF RAM includes the {STACK:,} B stack reserve")
    for line in table(rows):
        print(line)
    for k, kk, e in failed:
        print(f"tflite: error: {k} ({kk}): {e}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
