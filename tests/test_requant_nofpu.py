"""Cores without an FPU (Cortex-M0+, M3) requantize in integers: requant_i (conv, depthwise,
QGemm), quantize_i (QuantizeLinear) and add_i (QLinearAdd) give the codes of the float
arithmetic they replace, also at and one unit around exact ties, where their 16-fraction-bit
short cuts hand over to the float way. tests/c/requant_nofpu.c compiled for the host with
ARENA_HAVE_FPU 0, the float reference from the host's FPU (-ffp-contract=off: no fused
multiply-add, as on the cores). test_runtime_int8 runs the same code on mps2_an385 against
onnxruntime; this one reaches the rare ties millions of random ops would not."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from conftest import ROOT, require_tool


@pytest.mark.slow
def test_integer_requantization_equals_the_float_one(tmp_path: Path) -> None:
    gcc = require_tool("gcc")
    exe = tmp_path / "requant_nofpu"
    subprocess.run([gcc, "-std=c99", "-O2", "-ffp-contract=off", "-DARENA_HAVE_FPU=0", "-Wall", "-Wextra", "-Werror",
                    "-I", str(ROOT / "arena_tool" / "runtime"), str(ROOT / "tests" / "c" / "requant_nofpu.c"),
                    "-o", str(exe), "-lm"], check=True)
    r = subprocess.run([str(exe)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout
    lines = r.stdout.splitlines()
    assert [ln.split()[0] for ln in lines] == ["requant_i", "quantize_i", "add_i"], r.stdout
    assert all(ln.split()[1] == "0" and int(ln.split()[-1]) > 1_000_000 for ln in lines), r.stdout
