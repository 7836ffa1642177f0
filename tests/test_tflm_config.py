"""runtime: tflm without compiling: the manifest's tflm: checks (one line, exit 2) and
``arena-tool run MODEL.tflite`` without a TFLM tree (the library's files and flags:
target/test_tflm_sources.py; the model table: emit/test_tflm_app.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from arena_tool import cli
from arena_tool.core.errors import ArenaError
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
    """A model a board's runtime cannot run (an ONNX model on runtime tflm) is an error naming the model,
    the board and the runtime that would run it (it was left out of that board without a word); the
    board's own list skips it; arena's runtime runs both kinds, a .tflite with kernels arena."""
    onnx = Path(__file__).resolve().parent.parent / "example_firmware" / "models" / "kws_int8.onnx"
    (tmp_path / "chain.tflite").write_bytes(chain_model())
    models = f"models:\n  - {{name: kws, path: {onnx}}}\n  - {{name: chain, path: chain.tflite}}\n"
    (tmp_path / "mixed.yaml").write_text(models + "boards:\n  - nucleo_f746\n  - {name: mps2_an500, runtime: tflm}\n")
    with pytest.raises(ArenaError) as e:
        manifest.load(str(tmp_path / "mixed.yaml"))
    text = e.value.render()
    assert e.value.exit_code == 2 and "\n" not in text and "mixed.yaml:6:33: error: boards[1].runtime: " in text, text
    assert ("model kws is an ONNX model, which board mps2_an500's runtime tflm does not run" in text
            and "runtime arena runs it" in text and "models: [chain]" in text), text
    (tmp_path / "listed.yaml").write_text(models + "boards:\n  - nucleo_f746\n"
                                          "  - {name: mps2_an500, runtime: tflm, models: [{chain: {planner: greedy_size}}]}\n")
    m = manifest.load(str(tmp_path / "listed.yaml"))
    assert [[s.name for s in t.models] for t in m.targets] == [["kws", "chain"], ["chain"]]  # each board its own list
    assert [s.planner for s in m.targets[1].models] == ["greedy_size"]  # a list item carries its overrides
    assert [s.options.kernels for s in m.targets[0].models] == ["reference", "arena"]  # arena's runtime runs the .tflite
    assert [s.options.kernels for s in m.targets[1].models] == ["reference"]  # TFLM's kernels
    (tmp_path / "wrong.yaml").write_text(models + "boards:\n  - {name: mps2_an500, runtime: tflm, models: [kws]}\n")
    with pytest.raises(ArenaError, match="model kws is an ONNX model, which board mps2_an500's runtime tflm does not "
                                         "run .* drop kws from board mps2_an500's models: list"):
        manifest.load(str(tmp_path / "wrong.yaml"))  # a listed model the runtime cannot run
    (tmp_path / "arena_kernels.yaml").write_text("models:\n  - {name: chain, path: chain.tflite, kernels: arena}\n"
                                                 "boards:\n  - {name: mps2_an500, runtime: tflm}\n")
    with pytest.raises(ArenaError, match="kernels: arena on board mps2_an500 with runtime: tflm"):
        manifest.load(str(tmp_path / "arena_kernels.yaml"))
