"""Patch-based inference executed by arena's C runtime: the patched tables (tile ops, their
Slices, PatchWrite) run on the host and under QEMU and equal onnxruntime on the untiled model,
float32 within tolerance and int8 exactly; MobileNetV2 w0.35@96 int8 with io: int8 and
patches: auto stays under its floor (51,600 B, 2.5x below 129,024 B, MACs +20 % at most)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import onnx
import pytest
from conftest import require_tool

import quantized as Q
import zoo
from arena_tool import cli

sys.path.insert(0, str(Path(__file__).parent / "model"))
from test_patches import _mobile  # noqa: E402  (the small depthwise network of the unit tests)

FLOOR = 51_600


def _run(path: Path | str, board: str, tmp_path: Path, *flags: str) -> dict:
    report = tmp_path / f"{Path(path).stem}-{board}.json"
    rc = cli.main(["run", str(path), "--board", board, *flags, "--json", str(report),
                   "--build-dir", str(tmp_path / f"b-{Path(path).stem}-{board}")])
    doc = json.loads(report.read_text())
    assert rc == 0 and all(o["ok"] for o in doc["outputs"]), doc["outputs"]
    return doc


def _mobilenet_v2_int8(qcache: Path) -> Path:
    src = qcache / "mobilenet_v2.onnx"
    if not src.exists():
        onnx.save(zoo.build("mobilenet_v2"), str(src))
    return Q.quantized(src, "qdq", True, qcache)


@pytest.mark.parametrize("board", ["host", "mps2_an500"])
def test_patched_networks_run_like_onnxruntime(qcache, tmp_path, board):
    if board != "host":
        require_tool("qemu-system-arm")
        require_tool("arm-none-eabi-gcc")
    else:
        require_tool("gcc")
    small = _run(_mobile(tmp_path), board, tmp_path, "--patches", "pw:3x2")  # float32, a 3 x 2 grid
    assert small["options"]["patches"] == "pw:3x2"
    doc = _run(_mobilenet_v2_int8(qcache), board, tmp_path, "--io", "int8", "--patches", "auto")
    ints = [o for o in doc["outputs"] if o["dtype"] == "int8"]
    assert ints and all(o["max_abs_error"] == 0 for o in ints)  # bit for bit
    assert doc["arena_size"] <= FLOOR
