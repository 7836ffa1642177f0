"""TFLite Micro's host interpreter (the tflite-micro wheel) on a .tflite, in a child process
(``tflm_child``: a crash there is one ArenaError naming the model): its outputs for given inputs and
its arena use. The reference of ``verify`` (run/tflm.py), of TFLM firmware runs (tflm_firmware) and of
a .tflite run on arena's own runtime (firmware.run), bit for bit; apart from run/tflm.py so that the
firmware runner needs no plan checking or flatbuffer writing to reach it."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
from typing import Sequence

import numpy as np

from arena_tool.core.errors import ArenaError
from arena_tool.core.problem import ModelOptions
from arena_tool.model import tflite_model


@dataclasses.dataclass(frozen=True)
class Allocation:
    """TFLM's arena use, bytes: head (planned tensors), tail (persistent), total."""

    head: int
    tail: int
    total: int


@dataclasses.dataclass(frozen=True)
class Run:
    allocation: Allocation
    outputs: list[list[np.ndarray]]  # [run][output index]



TAIL_PER_TENSOR = 512  # bytes: TFLM's eval tensor, allocation info and planner entry per tensor (~100 B), doubled


def _tflm_arena_size(data: bytes, path: str) -> int:
    """Room for every tensor without reuse and for TFLM's bookkeeping of each tensor, used or not (100,000
    unused tensors in an 8 MB arena: 'Too many buffers (max is 59971)')."""
    mp = tflite_model.problem_from_bytes(data, path, ModelOptions())
    return max(2 * len(data), 2 * mp.problem().total_size + (1 << 20)) + TAIL_PER_TENSOR * mp.subgraph_tensors


def host_arena_size(data: bytes, path: str) -> int:
    """The arena the host interpreter runs a model in (room to spare: TFLM measures, not sizes, there)."""
    return _tflm_arena_size(data, path)


def run_tflm(data: bytes, path: str, inputs: Sequence[Sequence[np.ndarray]]) -> Run:
    """Run ``data`` in TFLM's host interpreter once per input set; its outputs and allocation."""
    return run_child(data, path, inputs, _tflm_arena_size(data, path))


CHILD_SECONDS = 300.0


def run_child(data: bytes, path: str, inputs: Sequence[Sequence[np.ndarray]], arena: int) -> Run:
    """``data`` in TFLM in a child process (tflm_child): a crash there is one ArenaError naming the model."""
    n_out = len(tflite_model.parse(data, path).subgraphs[0].outputs)
    n_in = len(inputs[0]) if inputs else 0
    with tempfile.TemporaryDirectory(prefix="arena-tflm-") as d:
        with open(os.path.join(d, "model.tflite"), "wb") as f:
            f.write(data)
        with open(os.path.join(d, "arena.txt"), "w", encoding="ascii") as f:
            f.write(f"{arena} {len(inputs)} {n_in} {n_out}")
        for r, xs in enumerate(inputs):
            for k, x in enumerate(xs):
                np.save(os.path.join(d, f"in_{r}_{k}.npy"), np.asarray(x), allow_pickle=False)
        try:
            child = subprocess.run([sys.executable, "-m", "arena_tool.run.tflm_child", d], capture_output=True,
                                   text=True, errors="replace", timeout=CHILD_SECONDS)
        except subprocess.TimeoutExpired:
            raise ArenaError(f"TFLite Micro did not finish the model in {CHILD_SECONDS:.0f} s", file=path,
                             hint="TFLM hangs on it; check the model runs with TFLM's reference kernels") from None
        log, _, allocations = child.stderr.partition("--arena-allocations--")
        said = " ".join(line.strip() for line in log.splitlines() if line.strip())[:400]
        try:
            with open(os.path.join(d, "result.json"), encoding="utf-8") as f:
                result = json.load(f)
        except (OSError, ValueError):
            result = None
        if child.returncode != 0 or result is None:
            how = (f"signal {signal.Signals(-child.returncode).name}" if child.returncode < 0
                   else f"exit status {child.returncode}")
            raise ArenaError(f"TFLite Micro crashed on the model ({how})" + (f": {said}" if said else ""),
                             file=path, hint="the model has content TFLM does not check; convert it again")
        if "error" in result:
            raise ArenaError(f"TFLite Micro cannot run the model: {result['error']}" + (f": {said}" if said else ""),
                             file=path, hint="TFLM refused it; check the model runs with TFLM's reference kernels")
        outputs = [[np.load(os.path.join(d, f"out_{r}_{k}.npy"), allow_pickle=False) for k in range(n_out)]
                   for r in range(len(inputs))]
    found = {k: int(v) for k, v in re.findall(r"Arena allocation (head|tail|total) (\d+) bytes", allocations)}
    if set(found) != {"head", "tail", "total"}:
        raise ArenaError(f"TFLM's allocation report has no head/tail/total: {allocations[:200]!r}", file=path,
                         exit_code=3, hint="this tflite-micro version prints allocations differently")
    return Run(Allocation(found["head"], found["tail"], found["total"]), outputs)
