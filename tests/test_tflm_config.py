"""runtime: tflm's TFLM sources, without compiling: the manifest's tflm: checks (one line, exit 2),
``arena-tool run MODEL.tflite`` without a TFLM tree, the files and flags of the library
(target.tflm_sources, read from the shared TFLM tree; skipped, saying so, where it is absent) and
the generated model table (emit.tflm_app)."""

from __future__ import annotations

from pathlib import Path

import pytest

from arena_tool import cli
from arena_tool.core.errors import ArenaError
from arena_tool.emit import tflm_app
from arena_tool.target import manifest, tflm_sources
from conftest import require_shared
from shared_paths import SHARED
from tflite_models import chain_model

TREE = SHARED / "third_party" / "tflite-micro"


def write(tmp: Path, tflm: str, runtime: str = "tflm") -> str:
    (tmp / "chain.tflite").write_bytes(chain_model())
    text = f"runtime: {runtime}\n{tflm}\nmodels:\n  - {{name: chain, path: chain.tflite}}\nboards: [mps2_an500]\n"
    (tmp / "arena.yaml").write_text(text)
    return str(tmp / "arena.yaml")


def test_missing_tree_names_the_field_and_the_fix(tmp_path: Path) -> None:
    with pytest.raises(ArenaError) as e:
        manifest.load(write(tmp_path, "tflm: {path: no/such/tflm}"))
    text = e.value.render()
    assert e.value.exit_code == 2 and "\n" not in text
    assert "arena.yaml:2:" in text and "tflm.path" in text and "TFLite Micro folder not found" in text
    assert "relative to the manifest" in text


def test_tflm_needs_runtime_tflm_and_one_source(tmp_path: Path) -> None:
    onnx = Path(__file__).resolve().parent.parent / "example_firmware" / "models" / "kws.onnx"
    (tmp_path / "onnx.yaml").write_text(f"runtime: none\ntflm: {{path: x}}\nmodels:\n  - {{name: kws, path: {onnx}}}\n"
                                        "boards: [mps2_an500]\n")
    with pytest.raises(ArenaError, match="tflm: is read only with runtime: tflm"):
        manifest.load(str(tmp_path / "onnx.yaml"))
    with pytest.raises(ArenaError, match="either path: .* or library:"):
        manifest.load(write(tmp_path, "tflm: {kernels: reference}"))
    with pytest.raises(ArenaError, match="TFLM library not found"):
        manifest.load(write(tmp_path, "tflm: {library: libtflm.a, include: [.]}"))
    with pytest.raises(ArenaError, match="kernels"):
        manifest.load(write(tmp_path, "tflm: {path: x, kernels: cmsis}"))  # the schema's enum


def test_run_without_a_tree_is_one_line_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("ARENA_TFLM_DIR", raising=False)
    model = tmp_path / "chain.tflite"
    model.write_bytes(chain_model())
    assert cli.main(["run", str(model), "--board", "mps2_an500"]) == 2
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(err) == 1 and "--tflm" in err[0] and "ARENA_TFLM_DIR" in err[0], err


def test_library_files_follow_the_ops_and_the_kernels() -> None:
    root = str(require_shared(TREE))
    regs = tflm_sources.registrations(root)
    assert regs["CONV_2D"] == ("AddConv2D", "Register_CONV_2D")
    assert regs["UNIDIRECTIONAL_SEQUENCE_LSTM"][0] == "AddUnidirectionalSequenceLSTM"
    ref = tflm_sources.kernel_sources(root, "reference", ["CONV_2D"])
    nn = tflm_sources.kernel_sources(root, "cmsis_nn", ["CONV_2D"])
    k = "tensorflow/lite/micro/kernels/"
    assert f"{k}conv.cc" in ref and f"{k}conv_common.cc" in ref and f"{k}cmsis_nn/conv.cc" not in ref
    assert f"{k}cmsis_nn/conv.cc" in nn and f"{k}conv_common.cc" in nn and f"{k}conv.cc" not in nn  # one CONV_2D
    assert f"{k}fully_connected.cc" not in ref  # only the model's ops
    lstm = tflm_sources.kernel_sources(root, "reference", ["UNIDIRECTIONAL_SEQUENCE_LSTM"])
    assert f"{k}lstm_eval.cc" in lstm and f"{k}lstm_eval_common.cc" in lstm
    assert all(s.level == "-Os" for s in tflm_sources.library_sources(root, "reference", []) if "/kernels/" not in s.path)
    assert "-DCMSIS_NN" in tflm_sources.cxx_flags("cmsis_nn") and "-DCMSIS_NN" not in tflm_sources.cxx_flags("reference")
    with pytest.raises(ArenaError, match="no builtin kernel for op CUSTOM:SignalWindow"):
        tflm_sources.resolver_methods(root, ["CUSTOM:SignalWindow"])


def test_model_table_registers_exactly_the_models_ops() -> None:
    e = tflm_app.TflmEntry("kws", ("AddConv2D", "AddSoftmax"), 1504, ("out 0", "Identity"), (b"\x01\x02",))
    text = tflm_app.sources("mps2_an500", [e])
    assert "MicroMutableOpResolver<2> kws_resolver;" in text
    assert text.count("kws_resolver.AddConv2D()") == 1 and text.count(".Add") == 2
    assert "tensor_arena + TENSOR_ARENA_BASE_KWS, 1504u" in text and '"out_0", "Identity"' in text
    assert "kws_input0[2] = {" in text and text == tflm_app.sources("mps2_an500", [e])  # same bytes


def test_the_plan_holds_the_scratch_of_the_kernels_the_firmware_links(tmp_path: Path) -> None:
    tree = require_shared(TREE)
    m = manifest.load(write(tmp_path, f"tflm: {{path: {tree}, kernels: cmsis_nn}}"))
    assert m.targets[0].tflm == tflm_sources.TflmConfig(path=str(tree), kernels="cmsis_nn")
    assert m.targets[0].models[0].options.kernels == "cmsis_nn_dsp"  # mps2_an500: a Cortex-M7
    assert manifest.from_doc(manifest.to_doc(m)).targets[0].tflm == m.targets[0].tflm
    (tmp_path / "mve.yaml").write_text(f"runtime: tflm\ntflm: {{path: {tree}, kernels: cmsis_nn}}\nmodels:\n"
                                       "  - {name: chain, path: chain.tflite, kernels: cmsis_nn_mve}\n"
                                       "boards: [mps2_an500]\n")
    with pytest.raises(ArenaError, match="kernels: cmsis_nn_mve, but board mps2_an500's firmware links cmsis_nn_dsp"):
        manifest.load(str(tmp_path / "mve.yaml"))


def test_onnx_and_tflite_models_in_one_manifest(tmp_path: Path) -> None:
    onnx = Path(__file__).resolve().parent.parent / "example_firmware" / "models" / "kws_int8.onnx"
    (tmp_path / "chain.tflite").write_bytes(chain_model())
    (tmp_path / "mixed.yaml").write_text(f"models:\n  - {{name: kws, path: {onnx}}}\n  - {{name: chain, path: chain.tflite}}\n"
                                         "boards:\n  - nucleo_f746\n  - {name: mps2_an500, runtime: tflm}\n")
    m = manifest.load(str(tmp_path / "mixed.yaml"))
    assert [[s.name for s in t.models] for t in m.targets] == [["kws"], ["chain"]]  # each runtime its models
    (tmp_path / "tflite.yaml").write_text("models:\n  - {name: chain, path: chain.tflite}\nboards: [nucleo_f746]\n")
    with pytest.raises(ArenaError, match="is a .tflite model: arena's C runtime runs ONNX models"):
        manifest.load(str(tmp_path / "tflite.yaml"))  # a board left with no model it runs
