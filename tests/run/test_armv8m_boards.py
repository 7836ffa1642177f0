"""The Armv8-M boards QEMU emulates, mps3_an547 (Cortex-M55 with MVE) and mps2_an505 (Cortex-M33):
MLPerf Tiny's int8 networks (VWW, ResNet-8 as shipped; KWS, AD01 quantized by tests/quantized.py,
as bench/speed.py runs them) through ``arena-tool run --board``, every output equal to
onnxruntime's, and the firmware's calibration loop counted at the board's SysTick rate (QEMU's
sysclk: 32 MHz on the AN547, 31.25 instructions per tick; 20 MHz on the AN505, 50). The zoo's int8
networks bench/speed.py --zoo measures (tests/zoo.py's, QOperator per-channel twins) run in one
firmware per board, every output equal to onnxruntime's."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import onnx
import pytest
from conftest import require_shared, require_tool

import fwbuild
import quantized as Q
import zoo
from arena_tool import cli
from arena_tool.run import qemu, verify
from arena_tool.target import boards
from shared_paths import MLPERF

BOARDS = {"mps3_an547": 31.25, "mps2_an505": 50.0}  # instructions per SysTick tick, from QEMU's clocks
# (key, the int8 ONNX file, or the float one tests/quantized.py makes its QDQ twin of)
NETWORKS = {
    "kws": "keyword_spotting__kws_ref_model_float32_tflite2onnx.onnx",
    "ad01": "anomaly_detection__ad01_fp32_tflite2onnx.onnx",
    "resnet8": "image_classification__pretrainedResnet_tflite2onnx_int8.onnx",
    "vww": "visual_wake_words__vww_96_float_tflite2onnx_int8.onnx",
}


def _model(key: str, qcache: Path) -> Path:
    path = require_shared(MLPERF / NETWORKS[key])
    return path if "int8" in path.name else Q.quantized(path, "qdq", True, qcache)


@pytest.mark.slow
@pytest.mark.parametrize("board", sorted(BOARDS))
@pytest.mark.parametrize("key", sorted(NETWORKS))
def test_mlperf_int8_networks_equal_onnxruntime(qcache: Path, tmp_path: Path, board: str, key: str) -> None:
    require_tool("arm-none-eabi-gcc")
    require_tool("qemu-system-arm")
    model = _model(key, qcache)
    report = tmp_path / "run.json"
    rc = cli.main(["run", str(model), "--board", board, "--json", str(report), "--build-dir", str(tmp_path / "fw"),
                   "--timeout", "600"])
    doc = json.loads(report.read_text(encoding="utf-8"))
    assert rc == 0 and doc["result"] == "match", (board, key, doc.get("error"))
    assert doc["instructions_per_tick"] == BOARDS[board] and doc["instructions"] > doc["macs"] // 4
    if key != "ad01":
        return
    # the firmware's own loop of 50,000 instructions, timed by SysTick, agrees with the board's clock:
    # the same loop in every network's firmware, so one QEMU run of the smallest network per board
    elf = next((tmp_path / "fw").rglob("firmware.elf"))
    status, text = qemu.run(str(elf), doc["machine"], timeout=600, icount=True)
    m = re.search(r"^calibrate (\d+) ticks (\d+)$", text, re.M)
    assert status == 0 and m is not None, text[-500:]
    assert abs(int(m.group(1)) / BOARDS[board] - int(m.group(2))) <= 1, (board, m.group(0))


ZOO = ("ds_tcn", "mobilenet_v2", "mnasnet", "mobilenet_v3", "shufflenet_v2", "squeezenet")  # bench/speed.py's --zoo


@pytest.mark.slow
@pytest.mark.parametrize("board", sorted(BOARDS))
def test_zoo_int8_networks_equal_onnxruntime(qcache: Path, tmp_path: Path, board: str) -> None:
    """One firmware of the zoo's int8 networks (their weights, 400 KB, fit the AN547's 512 KB ITCM
    with the code), run one after another in a shared arena: every output (dequantized logits) equal
    to onnxruntime's on main.c's input pattern, not merely within a quantization step."""
    require_tool("arm-none-eabi-gcc")
    require_tool("qemu-system-arm")
    models = []
    for name in ZOO:
        src = tmp_path / f"{name}.onnx"
        onnx.save(zoo.build(name), str(src))
        path = Q.quantized(src, "qoperator", True, qcache)
        models.append((name, str(path), fwbuild.plan(str(path), "optimal")))
    target = boards.load_board(board)
    elf = fwbuild.build_elf(tmp_path, fwbuild.generate(tmp_path, models, board), target,
                            max(d.arena_size for _, _, d in models))
    assert target.qemu is not None
    rc, text = qemu.run(str(elf), target.qemu, timeout=600)
    assert rc == 0, text[-2000:]
    run = verify.parse_output(text)
    for name, path, doc in models:
        assert run.status.get(name) == 0, (board, name, text[-1500:])
        want = verify.reference(path, doc)
        for out, got in run.outputs[name].items():
            assert np.array_equal(got, want[out].reshape(-1).astype(got.dtype)), (board, name, out)
