"""int8 inputs and outputs (``io: int8``) and caller-owned I/O buffers (``io_buffers: caller``)
on every int8 model, against issue 21's floors.

    python bench/int8_io.py [--quick] [--cache DIR] [--run BOARDS]

The int8 models: tests/zoo.py's networks and every float model of tests/quantized.py (MLPerf
Tiny's float ONNX networks where ../shared has them, the onnx package's light models), each
quantized by onnxruntime's quantize_static in QDQ and QOperator form, per tensor (pt) and per
channel (pc) (the light models too big for that in the one form tests/quantized.py gives them),
plus the int8 ONNX files MLPerf Tiny and example_firmware ship. Each is planned with `optimal` at
alignment 16 four ways: io: model, io: int8, io_buffers: caller, and both. A markdown table on
stdout: the arenas (with the lower bound where the plan is not proven optimal), the bytes the
caller's buffers take, and one check per floor:

- io: int8 never above io: model, io_buffers: caller never above the arena's own I/O;
- VWW (MLPerf Tiny) with io: int8 <= 55,296 B (the floor is QDQ's; checked on every form);
  MobileNetV2 w0.35@96 (the zoo's) <= 129,024 B;
- with io_buffers: caller no graph input or output is in the arena: not a buffer of the problem
  the planner packed, not aliased by one, each at offset 0 of its own buffer, and
  ``arena-tool check`` finds nothing wrong with the plan.

``--run host,mps2_an500``: also run every MCU-sized model (all but the onnx light models, too big
for a microcontroller) through ``arena-tool run``'s own path (firmware.run: plan, generate, build,
run on the host or under QEMU, compare with onnxruntime on the original model, seeded random
input) with ``--io int8 --io-buffers caller``, ``--io-buffers caller`` alone and ``--io int8``
alone, one column per board and combination: ``exact``, ``max abs err E`` (within arena-tool run's
tolerance) or ``FAIL ...``; a line per column sums them up. The whole sweep, host and mps2_an500,
6 x 55 runs, takes 4.5 min on 2 shared cores with the twins cached (the runtime's objects are
compiled once, so a run is ~1 s).

Exit status 1 when a check fails or a run does not match. ``--quick``: the zoo's MobileNetV2 and
MLPerf's VWW and AD01, per channel, and the shipped int8 files.
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import os
import sys
import tempfile
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import onnx  # noqa: E402
import quantized as Q  # noqa: E402
import zoo  # noqa: E402

from arena_tool.core.errors import ArenaError  # noqa: E402
from arena_tool.core.problem import ModelOptions  # noqa: E402
from arena_tool.model import liveness  # noqa: E402
from arena_tool.plan import plancheck, planners, planning  # noqa: E402
from arena_tool.run import firmware  # noqa: E402

PARAMS = planners.Params(time_limit=5.0)
VWW_QDQ_FLOOR = 55_296  # issue 21: VWW int8 QDQ, io: int8
MOBILENET_V2_FLOOR = 129_024  # issue 21: MobileNetV2 w0.35@96 int8, io: int8
# The int8 ONNX files that ship quantized (QOperator, from tflite2onnx).
SHIPPED = (Q.MLPERF_DIR / "visual_wake_words__vww_96_float_tflite2onnx_int8.onnx",
           Q.MLPERF_DIR / "image_classification__pretrainedResnet_tflite2onnx_int8.onnx",
           ROOT / "example_firmware" / "models" / "kws_int8.onnx")
WAYS = {"model": ModelOptions(), "int8": ModelOptions(io="int8"), "caller": ModelOptions(io_buffers="caller"),
        "int8 + caller": ModelOptions(io="int8", io_buffers="caller")}
# What --run runs each MCU-sized model with, on every board it names.
RUNS = ("int8 + caller", "caller", "int8")
QUICK = ("mobilenet_v2", "visual_wake_words__vww_96_float_tflite2onnx", "anomaly_detection__ad01_fp32_tflite2onnx")


@dataclasses.dataclass(frozen=True)
class Case:
    """One int8 model: its row's name and form, and the file; mcu: small enough for --run (not an
    onnx light model)."""

    name: str
    form: str
    path: Path
    mcu: bool = True


def _zoo_twin(name: str, fmt: str, pc: bool, cache: Path) -> Path:
    src = cache / f"{name}.onnx"
    if not src.exists():
        onnx.save(zoo.build(name), str(src))
    return Q.quantized(src, fmt, pc, cache)


def _short(path: Path) -> str:
    """ad01, vww_96, squeezenet, ...: the float model's name without its source's decorations."""
    name = path.stem.split("__")[-1].removeprefix("light_").removesuffix("_tflite2onnx")
    for tail in ("_fp32", "_float32", "_float"):
        name = name.removesuffix(tail)
    return name


def cases(cache: Path, quick: bool) -> Iterator[Case]:
    """Every int8 model, zoo first, then tests/quantized.py's, then the shipped ones, each quantized
    (once per cache) as it comes, so the table's first rows print before the last twin is made."""
    forms = [(fmt, pc) for fmt in Q.FORMATS for pc in ((True,) if quick else (False, True))]
    for n in zoo.NAMES:
        if not quick or n in QUICK:
            for fmt, pc in forms:
                yield Case(f"zoo {n}", f"{fmt} {'pc' if pc else 'pt'}", _zoo_twin(n, fmt, pc, cache))
    for path in Q.float_models():
        if not quick or path.stem in QUICK:
            for fmt, pc in ([Q.BIG[path.stem]] if path.stem in Q.BIG else forms):
                yield Case(_short(path), f"{fmt} {'pc' if pc else 'pt'}", Q.quantized(path, fmt, pc, cache),
                           mcu=path.parent != Q.LIGHT_DIR)
    yield from (Case(p.name, "shipped", p) for p in SHIPPED if p.exists())


def io_in_arena(path: Path, pm: planning.PlannedModel) -> list[str]:
    """How a caller-owned plan lets a graph input or output into the arena; [] when none does.
    The graph's inputs and outputs are read from the lowered model, not from the plan's kinds."""
    plan = pm.plan_file
    low = plancheck.lowered_model(str(path), plan)
    ios = set(low.inputs) | set(low.outputs)
    by_name = plan.by_name
    bad = [f"{n} is not in the plan" for n in sorted(ios - set(by_name))]
    bad += [f"{n} is packed in the arena" for n in sorted(ios & {b.name for b in pm.problem.buffers})]
    bad += [f"{n} at offset {by_name[n].offset} of its buffer" for n in sorted(ios & set(by_name))
            if by_name[n].offset or by_name[n].alias_of]
    bad += [f"{b.name} aliases {b.alias_of}" for b in plan.buffers if b.name not in ios and b.alias_of in ios]
    bad += [f"{b.name} in the arena" for b in plan.in_arena if b.name in ios]
    bad += plancheck.check(plan, liveness.model_problem(str(path), plan.options), "plan")
    return bad


def _cell(pm: planning.PlannedModel) -> str:
    p = pm.plan
    return f"{p.arena_size:,}" if p.optimal else f"{p.arena_size:,} (lb {p.best_bound or p.lower_bound:,})"


def measure(case: Case) -> tuple[str, list[str]]:
    """The table row of one int8 model, and the checks it fails."""
    pm = {way: planning.plan_model(str(case.path), options, "optimal", PARAMS) for way, options in WAYS.items()}
    size = {way: p.plan.arena_size for way, p in pm.items()}
    caller = pm["int8 + caller"].plan_file
    caller_bytes = sum(b.size for b in caller.buffers if b.kind in ("input", "output"))
    fails: list[str] = []
    if size["int8"] > size["model"]:
        fails.append(f"io: int8 {size['int8']:,} > io: model {size['model']:,}")
    if size["caller"] > size["model"] or size["int8 + caller"] > size["int8"]:
        fails.append("io_buffers: caller above io_buffers: arena")
    vww = "vww" in case.name  # the floor is QDQ's; checked on every form (QOperator, the shipped file)
    if vww and size["int8"] > VWW_QDQ_FLOOR:
        fails.append(f"VWW io: int8 {size['int8']:,} > {VWW_QDQ_FLOOR:,}")
    if case.name == "zoo mobilenet_v2" and size["int8"] > MOBILENET_V2_FLOOR:
        fails.append(f"MobileNetV2 io: int8 {size['int8']:,} > {MOBILENET_V2_FLOOR:,}")
    for way in ("caller", "int8 + caller"):
        fails += [f"{way}: {m}" for m in io_in_arena(case.path, pm[way])]
    floors = ["<= io: model", "no I/O in the arena"]
    floors += [f"<= {VWW_QDQ_FLOOR:,}"] if vww else []
    floors += [f"<= {MOBILENET_V2_FLOOR:,}"] if case.name == "zoo mobilenet_v2" else []
    unproven = [way for way, p in pm.items() if not p.plan.optimal]
    bounds = " / ".join(f"{p.plan.lower_bound:,}" for p in pm.values())
    row = (f"| {case.name} | {case.form} | {' | '.join(_cell(p) for p in pm.values())} | {caller_bytes:,} | "
           f"{bounds} | {'all' if not unproven else 'not ' + ', '.join(unproven)} | "
           f"{'FAIL: ' + '; '.join(fails) if fails else 'ok: ' + ', '.join(floors)} |")
    return row, fails


def run_cell(case: Case, board: str, way: str) -> str:
    """``arena-tool run MODEL --board BOARD`` with ``way``'s options, against onnxruntime:
    ``exact``, ``max abs err E`` (a match within tolerance), ``FAIL ...`` or, for a model too big
    for a microcontroller, ``not run``."""
    if not case.mcu:
        return "not run"
    try:
        code, doc = firmware.quiet_run(str(case.path), board, WAYS[way], "optimal", PARAMS, err=io.StringIO())
    except ArenaError as e:  # the firmware failed (its report says no more), or a tool is missing
        return f"FAIL {e.msg}"
    if doc["result"] not in ("match", "mismatch"):
        return f"FAIL {doc['result']}: {doc['error']}"
    bad = [o["name"] for o in doc["outputs"] if not o["ok"]]
    worst = firmware.worst_error(doc)
    if code or bad:
        return f"FAIL mismatch in {', '.join(bad)} (max abs err {worst:.3g})"
    return "exact" if worst == 0 else f"max abs err {worst:.3g}"


def run_summary(column: str, cells: list[str]) -> str:
    """One line of --run's tally: how many of the models that ran matched exactly, within
    tolerance, or failed."""
    ran = [c for c in cells if c != "not run"]
    exact = ran.count("exact")
    fail = sum(c.startswith("FAIL") for c in ran)
    return (f"{column}: {exact} of {len(ran)} exact, {len(ran) - exact - fail} within tolerance, {fail} FAIL"
            + (f", {len(cells) - len(ran)} not run (onnx light models, too big for an MCU)" if len(ran) < len(cells)
               else ""))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="MobileNetV2, VWW and AD01 per channel, and the shipped files")
    ap.add_argument("--cache", help="folder for the quantized twins (default: a temporary one)")
    ap.add_argument("--run", metavar="BOARDS", help="also run every MCU-sized model on these boards (comma "
                                                    "separated: host, mps2_an500, ...) against onnxruntime")
    args = ap.parse_args(argv)
    run_on = [b for b in (args.run or "").split(",") if b]
    try:
        for b in run_on:
            firmware.require_tools(firmware.resolve_board(b))
    except ArenaError as e:
        print(f"int8_io: --run: {e.msg}" + (f" ({e.hint})" if e.hint else ""), file=sys.stderr)
        return 2
    columns = [(b, way) for b in run_on for way in RUNS]
    cache = Path(args.cache or tempfile.mkdtemp(prefix="arena-quantized-"))
    cache.mkdir(parents=True, exist_ok=True)
    print("| model | form | io: model | io: int8 | caller | int8 + caller | caller I/O B (int8) "
          "| lower bounds (model / int8 / caller / both) | proven | floors |"
          + "".join(f" run {b}: {way} |" for b, way in columns))
    print("|---|---|---:|---:|---:|---:|---:|---:|---|---|" + "---|" * len(columns))
    failed = 0
    ran: dict[tuple[str, str], list[str]] = {c: [] for c in columns}
    for case in cases(cache, args.quick):
        row, fails = measure(case)
        cells = [run_cell(case, b, way) for b, way in columns]
        for c, cell in zip(columns, cells):
            ran[c].append(cell)
        failed += bool(fails) or any(c.startswith("FAIL") for c in cells)
        print(row + "".join(f" {c} |" for c in cells), flush=True)
    if columns:
        print()
        for (b, way), cells in ran.items():
            print(run_summary(f"run {b}: {way}", cells))
    print(f"\n{failed} model(s) fail a check or a run" if failed else "\nevery check holds", file=sys.stderr)
    if not args.cache:
        print(f"(twins in {cache}; remove when done)", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
