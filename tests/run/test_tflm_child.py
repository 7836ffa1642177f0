"""tflm_child: the TFLM host interpreter alone in a process, driven here as ``tflm.run_child``
runs it, through its folder protocol (model.tflite, arena.txt, in_R_K.npy -> out_R_K.npy,
result.json)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from arena_tool.run import tflm
from tflite_models import chain_model


def _folder(tmp_path: Path, arena: int, runs: int) -> tuple[Path, list[np.ndarray]]:
    (tmp_path / "model.tflite").write_bytes(chain_model())
    (tmp_path / "arena.txt").write_text(f"{arena} {runs} 1 1", encoding="ascii")
    xs = [np.linspace(-1, 1, 16, dtype=np.float32).reshape(1, 16) * (r + 1) for r in range(runs)]
    for r, x in enumerate(xs):
        np.save(tmp_path / f"in_{r}_0.npy", x, allow_pickle=False)
    return tmp_path, xs


def _child(folder: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "arena_tool.run.tflm_child", str(folder)], capture_output=True,
                          text=True, timeout=120)


def test_the_child_writes_every_run_as_the_interpreter_computes_it(tmp_path) -> None:
    folder, xs = _folder(tmp_path, 16 * 1024, 2)
    done = _child(folder)
    assert done.returncode == 0, done.stderr
    assert json.loads((folder / "result.json").read_text()) == {}
    want = tflm.run_tflm(chain_model(), "chain.tflite", [[x] for x in xs]).outputs
    for r in range(2):
        assert np.load(folder / f"out_{r}_0.npy").tobytes() == want[r][0].tobytes()
    assert "--arena-allocations--" in done.stderr


def test_tflm_crashing_on_a_too_small_arena_ends_only_the_child(tmp_path) -> None:
    """TFLM segfaults on an arena below its tail: the child dies, this process does not, and no
    result.json says otherwise (tflm.run_child turns that exit into one error)."""
    folder, _ = _folder(tmp_path, 16, 1)
    done = _child(folder)
    assert done.returncode != 0 and "Failed to allocate tail memory" in done.stderr
    assert not (folder / "result.json").exists() and not (folder / "out_0_0.npy").exists()
