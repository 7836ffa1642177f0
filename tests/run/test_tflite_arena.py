"""A .tflite on arena's own runtime (``--runtime arena``, kernels arena: model/tflite_lower.py and
runtime/tfl_*_int8.c) against TFLite Micro's host interpreter, bit for bit: random op models on the host
and under QEMU, MLPerf Tiny's int8 models on the host and under QEMU, where the RAM they take is
arena's plan (no TFLM tail) and the instructions are counted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arena_tool import cli
from arena_tool.core.problem import ModelOptions
from arena_tool.model import liveness
from conftest import require_shared, require_tool
from shared_paths import TFLM_EXAMPLES
from tflite_models import MLPERF, save
from tflite_ops import (patch_stage_model, random_every_op_model, random_fast_paths_model, random_float_ops_model,
                        random_gap_ops_model, random_more_ops_model, random_ops_model)

STACK = 4096  # the example firmware's stack reserve, in the ELF's RAM


def run(model: str, board: str, tmp: Path, capsys: pytest.CaptureFixture[str], *options: str) -> dict:
    report = tmp / f"{Path(model).stem}.{board}.json"
    code = cli.main(["run", model, "--runtime", "arena", "--board", board, "--json", str(report), *options])
    out, err = capsys.readouterr()
    assert code == 0, out + err
    assert "every output equals TFLite Micro's host interpreter's (bit for bit)" in out, out
    doc = json.loads(report.read_text())
    assert doc["result"] == "match" and doc["options"]["kernels"] == "arena"
    assert doc["outputs"] and all(c["tolerance_kind"] == "exact" and c["max_abs_error"] == 0
                                      for c in doc["outputs"]), doc["outputs"]
    return doc


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_every_lowered_op_equals_tflm_on_the_host(seed: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """CONV_2D, DEPTHWISE_CONV_2D, AVERAGE_POOL_2D, ADD, MUL, RESHAPE, FULLY_CONNECTED and SOFTMAX with
    random shapes, paddings, strides, activations and quantization: every output bit for bit."""
    require_tool("gcc")
    doc = run(save(tmp_path, f"ops{seed}.tflite", random_ops_model(seed)), "host", tmp_path, capsys)
    assert [c["name"] for c in doc["outputs"]] == ["conv_y", "depthwise_y", "pool_y", "add_y", "mul_y", "fc_y",
                                                      "softmax_y"]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_more_ops_equal_tflm_on_the_host(seed: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """MAX_POOL_2D, MEAN, PAD, PADV2, TRANSPOSE, STRIDED_SLICE, CONCATENATION, LOGISTIC, TANH, HARD_SWISH,
    QUANTIZE (int8 -> int8, float32 -> int8) and DEQUANTIZE with random shapes, masks, axes and
    quantization: every output bit for bit."""
    require_tool("gcc")
    doc = run(save(tmp_path, f"more{seed}.tflite", random_more_ops_model(seed)), "host", tmp_path, capsys)
    assert len(doc["outputs"]) == 13


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_float_ops_equal_tflm_on_the_host(seed: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every float32 op (CONV_2D with dilations, DEPTHWISE_CONV_2D, both pools, ADD, MUL, FULLY_CONNECTED,
    SOFTMAX, MEAN, LOGISTIC, TANH, HARD_SWISH, the moves, QUANTIZE/DEQUANTIZE) with random shapes and
    fused activations, and expf/tanhf far from 0: every output bit for bit (TFLM's order of float
    operations; runtime/tfl_math_f32.c's expf and tanhf against glibc's)."""
    require_tool("gcc")
    doc = run(save(tmp_path, f"float{seed}.tflite", random_float_ops_model(seed)), "host", tmp_path, capsys)
    assert len(doc["outputs"]) == 21


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_fast_paths_equal_tflm_on_the_host(seed: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The int8 fast paths (1x1 conv on the input's pixels, im2col conv, 4-channel depthwise, 4-row fully
    connected) with channel counts not multiples of 4, dilations, and TFLite's left and right shifts:
    every output bit for bit."""
    require_tool("gcc")
    doc = run(save(tmp_path, f"fast{seed}.tflite", random_fast_paths_model(seed)), "host", tmp_path, capsys)
    assert [c["name"] for c in doc["outputs"]] == ["pointwise_y", "im2col_y", "depthwise_y", "fc_y"]


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_gap_ops_equal_tflm_on_the_host(seed: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Grouped convs, depth multipliers 2 and 3, a depthwise in place (planned over its input), a 9x9
    depthwise, an im2col column over 2 KB, a fully connected layer with a weight zero point, pools (a
    window over 256 taps), ADD and MUL on equal shapes and broadcast, SOFTMAX on rows: every output bit
    for bit."""
    require_tool("gcc")
    path = save(tmp_path, f"gap{seed}.tflite", random_gap_ops_model(seed))
    doc = run(path, "host", tmp_path, capsys)
    assert len(doc["outputs"]) == 17
    mp = liveness.model_problem(path, ModelOptions(kernels="arena"))
    assert next(t for t in mp.tensors if t.name == "in_place_y").alias_of == "pre_dw_y"


@pytest.mark.parametrize("board", ["mps2_an500", "mps2_an386"])
def test_every_lowered_op_equals_tflm_on_qemu(board: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every lowered op in one model (one firmware per board), int8 and float32 (expf and tanhf far from 0
    too), bit for bit on the target."""
    require_tool("arm-none-eabi-gcc")
    require_tool("qemu-system-arm")
    doc = run(save(tmp_path, "every7.tflite", random_every_op_model(7)), board, tmp_path, capsys)
    assert len(doc["outputs"]) == 49 + 17


def test_patches_and_caller_io_on_a_tflite_equal_tflm_on_qemu(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two stages run tile by tile on TFLite's NHWC images (convs with SAME's asymmetric pads at the
    border only, a stride-2 depthwise, an average pool whose count excludes the pad, LOGISTIC, ADD, a
    max pool), inputs and outputs in the caller's buffers: bit for bit TFLM's host interpreter on the
    untiled model, in the patched plan's arena."""
    require_tool("arm-none-eabi-gcc")
    require_tool("qemu-system-arm")
    doc = run(save(tmp_path, "stage.tflite", patch_stage_model(0)), "mps2_an500", tmp_path, capsys,
              "--patches", "add:4x3;stage_end:2", "--io-buffers", "caller")
    assert [c["name"] for c in doc["outputs"]] == ["flat", "y"]
    assert doc["arena_size"] == 2_272  # untiled, I/O in the arena: 4,032 B (the 3x3 conv's im2col columns planned)
    assert doc["options"]["patches"] == "add:4x3;stage_end:2" and doc["options"]["io_buffers"] == "caller"


MATH_CHECK = r"""
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "support_tfl.h"
static uint32_t bits(float v) { uint32_t u; memcpy(&u, &v, 4); return u; }
int main(void) {
    unsigned long n = 0, e = 0, t = 0;
    uint64_t u;
    for (u = 0; u < 0x100000000ull; u += 997) { /* a float32 bit pattern in 997, every sign and exponent */
        uint32_t w = (uint32_t)u;
        float x;
        memcpy(&x, &w, 4);
        n += 1;
        e += bits(arena_tfl_expf(x)) != bits(expf(x)) && !(isnan(x) && isnan(arena_tfl_expf(x)));
        t += bits(arena_tfl_tanhf(x)) != bits(tanhf(x)) && !(isnan(x) && isnan(arena_tfl_tanhf(x)));
    }
    printf("%lu %lu %lu\n", n, e, t);
    return 0;
}
"""


def test_tfl_math_is_glibcs(tmp_path: Path) -> None:
    """runtime/tfl_math_f32.c's expf and tanhf (what the float SOFTMAX, LOGISTIC and TANH call on every
    board) against the host's glibc, TFLM's std::exp and std::tanh: both equal on 4.3 million float32
    inputs (on 611 million, measured by hand)."""
    import subprocess

    import arena_tool

    gcc = require_tool("gcc")
    (tmp_path / "check.c").write_text(MATH_CHECK)
    rt = Path(arena_tool.runtime_dir())
    exe = tmp_path / "check"
    subprocess.run([gcc, "-O2", "-std=c99", f"-I{rt}", str(tmp_path / "check.c"), str(rt / "tfl_math_f32.c"), "-lm",
                    "-o", str(exe)], check=True)
    n, e, t = (int(v) for v in subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.split())
    assert n > 4_000_000 and e == 0 and t == 0, (n, e, t)


REQUANT_CHECK = r"""
#include <stdio.h>
#include "support_tfl.h"
static uint64_t s = 88172645463325252ull;
static uint32_t rnd(void) { s ^= s << 13; s ^= s >> 7; s ^= s << 17; return (uint32_t)s; }
int main(void) {
    unsigned long n = 0, bad = 0;
    for (; n < 3000000; ++n) {
        int32_t shift = -(int32_t)(rnd() % 33) + (rnd() % 8 == 0 ? (int32_t)(rnd() % 4) : 0);
        int32_t mult = rnd() % 64 == 0 ? 0 : rnd() % 16 == 0 ? (1 << 30) + (int32_t)(rnd() % 4) : (int32_t)((1u << 30) | (rnd() & 0x3FFFFFFFu));
        int32_t acc, bias = rnd() % 4 == 0 ? 0 : (int32_t)rnd() >> (rnd() % 32), e = shift < 0 ? -shift : 0;
        int64_t k;
        tfl_chan_t c;
        switch (rnd() % 5) {
        case 0: acc = (int32_t)rnd(); break;
        case 1: acc = (int32_t)rnd() >> (rnd() % 31); break;
        case 2: acc = (int32_t)(rnd() % 7) - 3; break;
        case 3: /* acc mult within a few units of a tie of either rounding */
            k = (int64_t)(int32_t)rnd() >> (rnd() % 31);
            acc = mult ? (int32_t)(((k << (30 + e)) / mult) + (int32_t)(rnd() % 5) - 2) : 0;
            bias = 0;
            break;
        default: acc = rnd() % 2 ? INT32_MIN + (int32_t)(rnd() % 4) : INT32_MAX - (int32_t)(rnd() % 4); break;
        }
        c = tfl_chan(mult, shift, bias);
        bad += tfl_rq(acc, &c, 1) != tfl_mbqm(tfl_add(acc, bias), mult, shift);
    }
    printf("%lu %lu\n", n, bad);
    return 0;
}
"""


def test_tfl_rq_is_tflites_requantization(tmp_path: Path) -> None:
    """support_tfl.h's tfl_rq (the fast paths' one SMLAL into a folded 64-bit nudge; multipliers of 0 as a
    shift of -2) against tfl_mbqm (TFLite's SaturatingRoundingDoublingHighMul then RoundingDivideByPOT,
    step by step) on 3 million accumulators, biases, multipliers and shifts: extremes, small values and
    near-ties of both roundings (20 million measured by hand): equal on every one."""
    import subprocess

    import arena_tool

    gcc = require_tool("gcc")
    (tmp_path / "rq.c").write_text(REQUANT_CHECK)
    exe = tmp_path / "rq"
    subprocess.run([gcc, "-O2", "-std=c99", f"-I{arena_tool.runtime_dir()}", str(tmp_path / "rq.c"), "-o", str(exe)],
                   check=True)
    n, bad = (int(v) for v in subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.split())
    assert n == 3_000_000 and bad == 0, (n, bad)


MODELS = {"kws": "keyword_spotting__kws_ref_model.tflite", "vww": "visual_wake_words__vww_96_int8.tflite",
          "resnet8": "image_classification__pretrainedResnet_quant.tflite", "ad01": "anomaly_detection__ad01_int8.tflite",
          "str_ww": "streaming_wakeword__str_ww_ref_model.tflite"}
HEAD = {"kws": 16_000, "vww": 55_296, "resnet8": 49_440, "ad01": 768, "str_ww": 6_656}  # arena's plan, no TFLM tail


@pytest.mark.parametrize("name", sorted(MODELS))
def test_mlperf_tiny_equals_tflm_on_the_host(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    require_tool("gcc")
    doc = run(str(require_shared(MLPERF / MODELS[name])), "host", tmp_path, capsys)
    assert doc["arena_size"] == HEAD[name]


# TFLM + CMSIS-NN's instructions per inference on the same .tflite (bench/tflite.py on mps2-an500,
# bench/speed.py --board mps2_an386): the floor of the int8 fast paths (tfl_conv_int8.c, tfl_fully_connected_int8.c)
CMSIS_NN = {("kws", "mps2_an500"): 7_642_480, ("kws", "mps2_an386"): 7_698_240, ("vww", "mps2_an500"): 24_228_960}


@pytest.mark.parametrize("name,board", [("kws", "mps2_an500"), ("kws", "mps2_an386"), ("vww", "mps2_an500")])
def test_mlperf_tiny_equals_tflm_on_qemu_in_the_plans_ram(name: str, board: str, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """Bit for bit on the target, in RAM at most the plan's arena + 512 B besides the stack reserve
    (TFLM needs its head and its persistent tail: KWS 24,272 B of tensor_arena, VWW 85,248 B), in at most
    the instructions TFLM + CMSIS-NN takes."""
    require_tool("arm-none-eabi-gcc")
    require_tool("qemu-system-arm")
    doc = run(str(require_shared(MLPERF / MODELS[name])), board, tmp_path, capsys)
    assert doc["arena_size"] == HEAD[name]
    assert doc["ram"] - STACK <= HEAD[name] + 512, doc["ram"]
    assert 0 < doc["instructions"] <= CMSIS_NN[name, board], doc["instructions"]


@pytest.mark.parametrize("name,board", [("hello_world_int8", "host"), ("micro_speech_quantized", "host"),
                                        ("micro_speech_quantized", "mps2_an386")])
def test_tflm_examples_equal_tflm(name: str, board: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """TFLM's examples with the ops arena lowers (hello_world: FULLY_CONNECTED; micro_speech: RESHAPE,
    DEPTHWISE_CONV_2D, FULLY_CONNECTED, SOFTMAX) bit for bit; the two LSTM examples are refused at
    UNIDIRECTIONAL_SEQUENCE_LSTM alone (dtln's FULLY_CONNECTED and LOGISTIC, mnist_lstm's RESHAPE,
    FULLY_CONNECTED and SOFTMAX lower)."""
    from arena_tool.core.problem import ModelOptions
    from arena_tool.emit import runtime_support
    from arena_tool.model import liveness

    require_tool("gcc" if board == "host" else "qemu-system-arm")
    doc = run(str(require_shared(TFLM_EXAMPLES / f"{name}.tflite")), board, tmp_path, capsys)
    assert doc["outputs"]
    for lstm in ("dtln_noise_suppression", "trained_lstm_int8"):
        lw = liveness.lower(str(require_shared(TFLM_EXAMPLES / f"{lstm}.tflite")), ModelOptions(kernels="arena"))
        assert {g.op_type for g in runtime_support.gaps(lw)} == {"UNIDIRECTIONAL_SEQUENCE_LSTM"}, lstm


SCONSTRUCT = """\
import arena_tool
env = Environment(tools=["arena"], toolpath=[arena_tool.site_tools_dir()])
env.ArenaFirmware("app/arena.yaml", sources=["app/startup.c", "app/main.c"], cpppath=["app"])
"""
MIXED = """\
models:
  - {name: kws_tfl, path: kws.tflite}
  - {name: kws_onnx, path: kws_int8.onnx}
boards:
  - mps2_an500
  - {name: nucleo_f746, runtime: tflm, models: [kws_tfl]}
"""


def test_a_mixed_manifest_runs_the_tflite_on_arenas_runtime_and_accounts_for_every_model(tmp_path: Path) -> None:
    """ONNX and .tflite on a runtime: arena board (both run, the .tflite equal to TFLM bit for bit on
    main.c's input pattern, both in the summary and the report), the .tflite alone on a runtime: tflm
    board by its own model list (TFLM's head and tail)."""
    import os
    import shutil
    import subprocess
    import sys

    import arena_tool
    from conftest import ROOT

    require_tool("arm-none-eabi-gcc")
    require_tool("qemu-system-arm")
    app = tmp_path / "app"
    app.mkdir()
    example = Path(arena_tool.runtime_dir()) / "example"
    for name in ("main.c", "startup.c", "semihost.h", "fw_io.h"):
        shutil.copy2(example / name, app / name)
    shutil.copy2(require_shared(MLPERF / MODELS["kws"]), app / "kws.tflite")
    shutil.copy2(ROOT / "example_firmware" / "models" / "kws_int8.onnx", app / "kws_int8.onnx")
    (app / "arena.yaml").write_text(MIXED)
    (tmp_path / "SConstruct").write_text(SCONSTRUCT)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-m", "SCons", "-Q", "board=mps2_an500", "run"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=900, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "kws_tfl: outputs equal TFLite Micro's bit for bit (main.c's input pattern)" in r.stdout, r.stdout
    assert "kws_onnx: outputs match onnxruntime" in r.stdout, r.stdout
    report = json.loads((tmp_path / "build" / "mps2_an500" / "arena_report.json").read_text())
    assert [m["name"] for m in report["models"]] == ["kws_tfl", "kws_onnx"]
    assert next(m for m in report["models"] if m["name"] == "kws_tfl")["arena_size"] == HEAD["kws"]
    r = subprocess.run([sys.executable, "-m", "SCons", "-Q", "board=nucleo_f746", "link=0"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=900, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    report = json.loads((tmp_path / "build" / "nucleo_f746" / "arena_report.json").read_text())
    assert [m["name"] for m in report["models"]] == ["kws_tfl"]
