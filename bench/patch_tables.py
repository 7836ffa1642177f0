"""What ``patches: auto`` costs in flash and time: unrolled tile ops against one tile loop per stage.

    python bench/patch_tables.py [--cache DIR] [--board mps2_an386] [--models NAME,...]

Per int8 model (MobileNetV2 w0.35@96 from tests/zoo.py and the MLPerf Tiny networks ../shared
has, as QDQ int8 twins made by quantize_static, planned optimal with ``io: int8``): the firmware
with ``patches: off``, and with ``patches: auto`` written as unrolled tables and as tile loops,
built and run under QEMU on one seeded input. Per build: the model's table bytes besides its
weights (the compiled object: run.runreport.table_bytes), the ELF's flash, the instructions per
inference; the outputs of the three are asserted equal bit for bit. A markdown table on stdout.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import quantized as Q  # noqa: E402
import zoo  # noqa: E402

from arena_tool.core.problem import ModelOptions  # noqa: E402
from arena_tool.plan import plancheck, planners, planning  # noqa: E402
from arena_tool.run import firmware  # noqa: E402
from arena_tool.target.manifest_data import ModelSpec  # noqa: E402


def models(cache: Path, names: set[str] | None) -> list[tuple[str, Path]]:
    """(name, int8 model) of MobileNetV2 w0.35 and the MLPerf Tiny float models' int8 twins."""
    src = cache / "mobilenet_v2.onnx"
    if not src.exists():
        onnx.save(zoo.build("mobilenet_v2"), str(src))
    sources = [("mobilenet_v2", src)] + [(p.stem.replace("_tflite2onnx", ""), p) for p in Q.mlperf_float_models()]
    return [(n, Q.quantized(p, "qdq", True, cache)) for n, p in sources
            if not names or any(want in n for want in names)]


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--cache", help="folder for the generated and quantized models (default: a temporary one)")
    ap.add_argument("--board", default="mps2_an386", help="a QEMU board (default %(default)s)")
    ap.add_argument("--models", help="only the models whose names hold these, comma-separated (e.g. mobilenet_v2,vww)")
    args = ap.parse_args()
    cache = Path(args.cache or tempfile.mkdtemp(prefix="arena-patch-tables-"))
    cache.mkdir(parents=True, exist_ok=True)
    board = firmware.resolve_board(args.board)
    assert board is not None, args.board
    params = planners.Params(time_limit=5.0)
    print("| model | stages | off: tables B | unrolled: tables B | loops: tables B | loops vs off | "
          "off: flash B | unrolled: flash B | loops: flash B | off: instructions | unrolled: instructions | "
          "loops: instructions |")
    print("|---|---|" + "---:|" * 10)
    for name, path in models(cache, set(args.models.split(",")) if args.models else None):
        runs = {}
        for key, patches, loops in (("off", "off", True), ("unrolled", "auto", False), ("loops", "auto", True)):
            result = planning.plan_model(str(path), ModelOptions(io="int8", patches=patches), "optimal", params)
            plan = result.plan_file
            if patches == "auto" and (plan.patches is None or not plan.patches.detail):
                break  # auto kept the untiled plan: nothing to compare
            lowered = plancheck.lowered_model(str(path), plan)
            specs = firmware.graph_specs(plan, list(lowered.inputs))
            inputs = list(zip(lowered.inputs, firmware.random_inputs(specs, 0)))
            out = cache / f"{name}-{key}"
            spec = ModelSpec(name="m", path=str(path), planner="optimal", k=params.k, time_limit=params.time_limit,
                             options=plan.options)
            fw = firmware.build_and_run(out, spec, plan, lowered, board, inputs, loops=loops)
            assert fw.exit_status == 0, (name, key, fw.text[-500:])
            runs[key] = (fw, plan)
        if len(runs) < 3:
            print(f"| {name} | none (auto keeps the untiled plan) |" + " |" * 10, flush=True)
            continue
        outs = {k: fw.outputs for k, (fw, _) in runs.items()}
        for k in ("unrolled", "loops"):
            assert all(np.array_equal(outs[k][n], outs["off"][n]) for n in outs["off"]), (name, k)
        fws = {k: f for k, (f, _) in runs.items()}
        stages = runs["loops"][1].patches
        grids = ", ".join(f"{d['rows']}x{d['cols']}" for d in (stages.detail if stages else ()))
        tb = {k: f.table_bytes or 0 for k, f in fws.items()}
        print(f"| {name} | {grids} | {tb['off']:,} | {tb['unrolled']:,} | {tb['loops']:,} | "
              f"{100.0 * (tb['loops'] - tb['off']) / tb['off']:+.1f} % | "
              + " | ".join(f"{fws[k].flash or 0:,}" for k in ("off", "unrolled", "loops")) + " | "
              + " | ".join(f"{fws[k].instructions or 0:,}" for k in ("off", "unrolled", "loops")) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
