"""Real networks run on the runtime and match onnxruntime: the CNN families of tests/zoo.py at
96x96 and MLPerf Tiny's float networks (where ../shared has them), each as float32 and as int8
twins made by quantize_static (QDQ, lowered to integer ops, and QOperator). One firmware per
family and form runs its models one after another in a shared arena; on the host (ASan + UBSan)
and, where the Arm toolchain and QEMU exist, on mps2-an500.

Tolerances: float32 outputs within 1e-4 of the output's largest magnitude; the dequantized
outputs of int8 models within one quantization step. A QDQ model is compared with onnxruntime
running it as arena lowered it (lowering.to_onnx: the QOperator kernels), which is what the
firmware computes; against the float simulation of its Q/DQ pairs it is within two steps."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import require_shared, require_tool

import fwbuild
import quantized as Q
import zoo
from arena_tool.model import lowering
from arena_tool.run import firmware, verify
from arena_tool.plan.planfile import PlanFile

FORMS = ("float", "qdq", "qoperator")
FLASH_FOR_WEIGHTS = 3 << 20  # of mps2_an500's 4 MiB: code and the C tables' overhead need the rest


def _models(form: str, sources: list[Path], qcache: Path) -> list[tuple[str, str, PlanFile]]:
    out = []
    for src in sources:
        path = src if form == "float" else Q.quantized(src, form, True, qcache)
        sym = f"{src.stem.split('__')[-1].removesuffix('_tflite2onnx')[:28]}_{form}"
        out.append((sym, str(path), fwbuild.plan(str(path), "optimal")))
    return out


def _reference(path: str, doc: PlanFile, lw: lowering.Lowered) -> dict[str, np.ndarray]:
    """onnxruntime's outputs on main.c's inputs: a lowered QDQ model run as lowered, and its float
    Q/DQ simulation checked to stay within two steps of that."""
    if not lw.qdq_fused:
        return verify.reference(path, doc)
    feeds = {name: verify.input_pattern(lw.types[name].shape, lw.types[name].dtype, k)
             for k, name in enumerate(lw.inputs)}
    lowered = firmware.reference(path, feeds, list(lw.outputs), lw)
    float_sim = verify.reference(path, doc, list(lw.outputs))
    for name in lw.outputs:
        step = firmware.quant_step(lw, doc, name)
        assert step is None or np.max(np.abs(lowered[name] - float_sim[name])) <= 2 * step + 1e-6
    return lowered


def _check(text: str, models: list[tuple[str, str, PlanFile]]) -> None:
    run = verify.parse_output(text)
    for sym, path, doc in models:
        assert run.status.get(sym) == 0, (sym, text[-1500:])
        lw = lowering.load(path)
        ref = _reference(path, doc, lw)
        for name, got in run.outputs[sym].items():
            want = ref[name].reshape(-1).astype(np.float32)
            step = firmware.quant_step(lw, doc, name)
            if step is not None:
                tol = step + 1e-6
            else:
                tol = 1e-4 * max(float(np.max(np.abs(want))), 1e-30)
            err = float(np.max(np.abs(got.astype(np.float32) - want)))
            assert err <= tol, (sym, name, err, tol)


def _sources(zoo_dir: Path) -> dict[str, list[Path]]:
    return {"zoo": [zoo_dir / f"{n}.onnx" for n in zoo.NAMES], "mlperf": Q.mlperf_float_models()}


@pytest.mark.parametrize("family", ["zoo", "mlperf"])
@pytest.mark.parametrize("form", FORMS)
def test_networks_run_on_the_host_like_onnxruntime(qcache, zoo_dir, tmp_path, family, form):
    sources = _sources(zoo_dir)[family]
    if not sources:
        require_shared(Q.MLPERF_DIR)  # skips, or fails when ARENA_SHARED was given
    models = _models(form, sources, qcache)
    rc, text = fwbuild.run_host(fwbuild.build_host(tmp_path, fwbuild.generate(tmp_path, models)))
    assert rc == 0, text[-2000:]
    _check(text, models)


@pytest.mark.parametrize("form", FORMS)
def test_networks_run_on_qemu_like_onnxruntime(qcache, zoo_dir, tmp_path, form):
    require_tool("arm-none-eabi-gcc")
    require_tool("qemu-system-arm")
    from arena_tool.run import qemu

    models = _models(form, _sources(zoo_dir)["zoo"] + Q.mlperf_float_models(), qcache)
    # Several firmwares, each model's weights within the 4 MiB flash beside the others'.
    batches: list[list[tuple[str, str, PlanFile]]] = [[]]
    for m in sorted(models, key=lambda m: m[2].weights_bytes):
        assert m[2].weights_bytes < FLASH_FOR_WEIGHTS, m[0]  # every one of these fits on its own
        if sum(d.weights_bytes for _, _, d in batches[-1]) + m[2].weights_bytes > FLASH_FOR_WEIGHTS:
            batches.append([])
        batches[-1].append(m)
    for k, batch in enumerate(batches):
        out = tmp_path / f"fw{k}"
        size = max(d.arena_size for _, _, d in batch)
        elf = fwbuild.build_elf(out, fwbuild.generate(out, batch, board="mps2_an500"), "mps2_an500", size)
        rc, text = qemu.run(str(elf), "mps2-an500", timeout=600)
        assert rc == 0, text[-2000:]
        _check(text, batch)
