"""On the target: the head TFLM + CMSIS-NN uses with arena's plan is the plan (its scratch included).

``python3 bench/tflm_head.py [--networks vww,kws,resnet8,ad01]`` plans each MLPerf Tiny int8
``.tflite`` for TFLM's CMSIS-NN kernels on a Cortex-M7 (``--kernels cmsis_nn_dsp``: the plan
holds the scratch buffers CMSIS-NN requests) and builds three TFLM + CMSIS-NN firmwares per
model with ``<shared>/tools/tflm_speed`` (as bench/speed.py does; run under QEMU mps2-an500):
the model as it is (TFLM's own planner), the planned model, and a probe of it with every
tensor at offset 0 (TFLM then stacks each operator's scratch on its largest live tensor, so
the probe's head depends on every scratch size). The firmware prints TFLM's
``arena_used_bytes`` = head + tail; the tail (TFLM's structs, CMSIS-NN's persistent data)
does not depend on the offsets, so when arena's predicted heads are TFLM's, used - predicted
is the same tail for all three. A difference names the model and the variant (exit 1).

Predicted: TFLM's own head = arena's ``greedy_size`` on the same buffers (TFLM's
GreedyMemoryPlanner), the plan's head = its arena_size, the probe's = where TFLM's first fit
puts the scratch around the tensors at 0 (``tflm.planned_head``). Skips, saying why, without
``../shared``, the C++ cross toolchain or QEMU.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Sequence

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # first: bench/ (the script's folder) holds a bench.py that is not the package

from bench import speed  # noqa: E402
from arena_tool.core.problem import ModelOptions  # noqa: E402
from arena_tool.emit import tflite_write  # noqa: E402
from arena_tool.model import tflite_model  # noqa: E402
from arena_tool.plan import planners, planning  # noqa: E402
from arena_tool.run import tflm  # noqa: E402

KERNELS = "cmsis_nn_dsp"  # mps2-an500's Cortex-M7
VARIANTS = ("own", "planned", "probe")


@dataclasses.dataclass(frozen=True)
class Case:
    """One model: arena's predicted head and TFLM's arena_used_bytes on the target, per variant."""

    model: str
    predicted: dict[str, int]
    used: dict[str, int | None]

    def tails(self) -> dict[str, int | None]:
        return {v: None if self.used[v] is None else int(self.used[v] or 0) - self.predicted[v] for v in VARIANTS}

    def problems(self) -> list[str]:
        """Empty when every variant leaves the same tail: each head TFLM used is arena's prediction."""
        tails = self.tails()
        if any(t is None for t in tails.values()):
            return [f"{self.model}: {', '.join(v for v, t in tails.items() if t is None)} did not run"]
        if len(set(tails.values())) != 1:
            return [f"{self.model}: TFLM's head is not arena's prediction: used - predicted = "
                    + ", ".join(f"{v} {tails[v]:,}" for v in VARIANTS) + " B (one tail expected)"]
        return []


def variants(src: Path, out: Path) -> tuple[dict[str, Path], dict[str, int]]:
    """The three .tflite files of ``src`` in ``out`` and arena's predicted head of each."""
    out.mkdir(parents=True, exist_ok=True)
    options = ModelOptions(kernels=KERNELS)
    params = planners.Params(time_limit=10.0)
    own = planning.plan_model(str(src), options, "greedy_size", params).plan.arena_size
    pm = planning.plan_model(str(src), options, "optimal", params)
    data = src.read_bytes()
    assert isinstance(pm.mp, tflite_model.TfliteProblem)
    planned = tflite_write.planned_bytes(data, str(src), tflite_write.offsets_for(pm.mp, pm.plan_file), pm.mp.order)
    mp = tflite_model.problem_from_bytes(planned, str(src), options)
    offsets = tflite_model.offline_offsets(tflite_model.parse(planned, str(src)))
    assert offsets is not None
    index = mp.index_of()
    probe = list(offsets)
    for t in mp.tensors:
        if t.kind != "scratch":
            probe[index[t.name]] = 0
    probe_bytes = tflite_write.planned_bytes(planned, str(src), probe)
    paths = {"own": out / f"{src.stem}.tflite", "planned": out / f"{src.stem}_planned.tflite",
             "probe": out / f"{src.stem}_probe.tflite"}
    for key, blob in (("own", data), ("planned", planned), ("probe", probe_bytes)):
        if not paths[key].is_file() or paths[key].read_bytes() != blob:
            paths[key].write_bytes(blob)
    predicted = {"own": own, "planned": pm.plan.arena_size, "probe": tflm.planned_head(mp, probe)[0]}
    return paths, predicted


def arena_used(shared: Path, elves: Sequence[Path]) -> dict[Path, int | None]:
    """TFLM's arena_used_bytes of each firmware under QEMU (tflm_speed/run.py), None when it failed."""
    p = subprocess.run([sys.executable, str(speed.tool_dir(shared) / "run.py"), *map(str, elves)],
                       capture_output=True, text=True, timeout=speed.TIMEOUT * max(len(elves), 1))
    found: dict[Path, int | None] = {e: None for e in elves}
    by_path = {str(e): e for e in elves}
    for line in p.stdout.splitlines():
        if line.startswith("{"):
            doc = json.loads(line)
            elf = by_path.get(str(doc.get("elf")))
            if elf is not None and doc.get("exit") == 0 and doc.get("arena_used_bytes") is not None:
                found[elf] = int(doc["arena_used_bytes"])
    return found


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    nets = {n.key: n for n in speed.NETWORKS}
    ap.add_argument("--networks", default=",".join(nets), help=f"comma-separated, of {', '.join(nets)} (default: all)")
    ap.add_argument("--build", default=str(ROOT / "build" / "tflm_head"), help="cache folder (default build/tflm_head)")
    ap.add_argument("--jobs", type=int, default=2, help="parallel compiles of the TFLM build (default 2)")
    args = ap.parse_args(argv)
    keys = [k.strip().lower() for k in args.networks.split(",") if k.strip()]
    bad = [k for k in keys if k not in nets]
    if bad or not keys:
        ap.error(f"unknown network {', '.join(bad) or '(none given)'}: networks {', '.join(nets)}")
    shared = speed.shared_dir()
    why = speed.skip_reason(shared, shutil.which)
    if why is not None:
        print(f"tflm_head: skipped, nothing measured: {why}")
        return 0
    build = Path(args.build)
    files: dict[str, dict[str, Path]] = {}
    predicted: dict[str, dict[str, int]] = {}
    for k in keys:
        src = speed.models_dir(shared) / nets[k].tflite_int8
        files[k], predicted[k] = variants(src, build / "models")
    tflites = sorted({p for f in files.values() for p in f.values()})
    speed.build_tflm(shared, speed.tool_dir(shared), build, "cmsis_nn", tflites, args.jobs)
    elves = {(k, v): speed.tflm_elf(build, "cmsis_nn", files[k][v].name) for k in keys for v in VARIANTS}
    used = arena_used(shared, sorted(set(elves.values())))
    cases = [Case(nets[k].title, predicted[k], {v: used[elves[(k, v)]] for v in VARIANTS}) for k in keys]
    print(f"tflm_head: TFLM + CMSIS-NN on qemu-system-arm -M mps2-an500, arena planned with --kernels {KERNELS}; "
          f"head predicted by arena, used = TFLM's arena_used_bytes (head + tail)")
    print(f"{'model':<10}" + "".join(f"{v + ' head':>14}{v + ' used':>14}" for v in VARIANTS) + f"{'tail':>10}")
    problems = []
    for c in cases:
        tail = c.tails()["planned"]
        print(f"{c.model:<10}" + "".join(f"{c.predicted[v]:>14,}{(c.used[v] or 0):>14,}" for v in VARIANTS)
              + f"{(tail if tail is not None else 0):>10,}")
        problems += c.problems()
    for p in problems:
        print(f"tflm_head: error: {p}")
    if not problems:
        print("tflm_head: ok: on every model TFLM's head with arena's plan is the plan, the probe's and TFLM's own "
              "are as predicted (one tail per model)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
