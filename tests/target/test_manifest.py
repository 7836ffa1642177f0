"""manifest.load: defaults, overrides, selection, budgets and the no-op cache."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import builders
import pytest

from arena_tool.target import boards, manifest
from arena_tool.core.errors import ArenaError
from conftest import write_manifest as write

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "example_firmware" / "arena.yaml"


def test_example_manifest_loads_every_shipped_board() -> None:
    m = manifest.load(str(EXAMPLE))
    assert len(m.models) >= 3
    shipped = sorted(p.stem for p in (ROOT / "boards").glob("*.yaml") if p.stem not in builders.NOT_IN_EXAMPLE)
    assert sorted(m.board_names) == shipped
    f746 = m.select("nucleo_f746")[0]
    assert f746.region == "DTCM" and f746.budget.size == 60 * 1024
    assert f746.reserve_stack == 4096 and f746.warn_above == 85.0
    assert all(os.path.isfile(s.path) for s in f746.models)


def test_defaults_and_overrides(tmp_path: Path) -> None:
    path = write(tmp_path, """
sharing: concurrent
budget: 50%
defaults: {planner: greedy_size, alignment: 8}
models:
  - {name: a, path: m.onnx, k: 4, input_shapes: {x: [1, 3]}, bitwidths: {t1: 4}}
  - {name: b, path: n.onnx, planner: naive, inplace: false, scratch: row}
boards:
  - mps2_an500
  - name: nucleo_f746
    region: SRAM1
    budget: 64KiB
    sharing: sequential
    warn_above: 75
    reserve: {stack: 2K, heap: 1K}
    models:
      a: {planner: optimal}
""")
    m = manifest.load(path)
    an500, f746 = m.targets
    a, b = an500.models
    assert (a.planner, a.k, a.options.alignment) == ("greedy_size", 4, 8)
    assert a.options.input_shapes == (("x", (1, 3)),) and a.options.bitwidths == (("t1", 4),)
    assert (b.planner, b.options.inplace, b.options.scratch) == ("naive", False, "row")
    assert an500.sharing == "concurrent" and an500.budget.percent == 50.0
    assert an500.region == "SSRAM23"  # the board's default region
    assert an500.reserve_stack == manifest.DEFAULT_STACK and an500.board.qemu == "mps2-an500"
    assert f746.sharing == "sequential" and f746.budget.size == 65536 and f746.region == "SRAM1"
    assert (f746.reserve_stack, f746.reserve_heap, f746.warn_above) == (2048, 1024, 75.0)
    assert f746.models[0].planner == "optimal" and f746.models[0].k == 4  # override merges
    assert f746.models[1] == b
    assert "-mcpu=cortex-m7" in f746.board.cpu.gcc_flags()
    assert f746.board == boards.load_board("nucleo_f746")  # the whole board, as its file says


def test_model_paths_are_relative_to_the_manifest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sub = tmp_path / "fw"
    sub.mkdir()
    write(sub, "models: [{name: a, path: m.onnx}]\nboards: [mps2_an386]\n")
    monkeypatch.chdir(tmp_path)
    m = manifest.load("fw/arena.yaml")
    assert m.models[0].path == os.path.join("fw", "m.onnx")


@pytest.mark.parametrize("text,size", [("65536", 65536), ("'64K'", 65536), ("'64KiB'", 65536),
                                       ("'1M'", 1 << 20), ("'0x8000'", 32768)])
def test_budget_sizes(tmp_path: Path, text: str, size: int) -> None:
    path = write(tmp_path, f"budget: {text}\nmodels: [{{name: a, path: m.onnx}}]\nboards: [mps2_an500]\n")
    budget = manifest.load(path).targets[0].budget
    assert budget.size == size and budget.resolve(4 << 20) == size


def test_budget_percent_resolves_against_the_region() -> None:
    b = manifest.Budget(text="80%", percent=80.0)
    assert b.resolve(65536) == 52428


def test_select(tmp_path: Path) -> None:
    path = write(tmp_path, "models: [{name: a, path: m.onnx}]\nboards: [mps2_an500, mps2_an386, rpi_pico]\n")
    m = manifest.load(path)
    assert [t.name for t in m.select("all")] == ["mps2_an500", "mps2_an386", "rpi_pico"]
    assert [t.name for t in m.select(None)] == ["mps2_an500", "mps2_an386", "rpi_pico"]
    assert [t.name for t in m.select("rpi_pico,mps2_an500")] == ["rpi_pico", "mps2_an500"]
    with pytest.raises(ArenaError) as info:
        m.select("rpi_picoo")
    assert "not in the manifest" in info.value.msg and "did you mean 'rpi_pico'" in info.value.hint


def test_project_board_folder_shadows_nothing_and_adds_a_board(tmp_path: Path) -> None:
    boards = tmp_path / "boards"
    boards.mkdir()
    text = (ROOT / "boards" / "mps2_an386.yaml").read_text().replace("name: mps2_an386", "name: myboard")
    (boards / "myboard.yaml").write_text(text)
    path = write(tmp_path, "board_dirs: [boards]\nmodels: [{name: a, path: m.onnx}]\nboards: [myboard]\n")
    m = manifest.load(path)
    assert m.targets[0].board.file.endswith("myboard.yaml")


def test_keys_are_canonical(tmp_path: Path) -> None:
    path = write(tmp_path, "models: [{name: a, path: m.onnx, input_shapes: {y: [2], x: [1]}}]\nboards: [rpi_pico]\n")
    one = manifest.load(path)
    two = manifest.load(path)
    assert one.models[0].key() == two.models[0].key()
    assert '"input_shapes":{"x":[1],"y":[2]}' in one.models[0].key()
    assert one.targets[0].key() == two.targets[0].key()


def test_copying_the_example_keeps_it_valid(tmp_path: Path) -> None:
    dest = tmp_path / "fw"
    shutil.copytree(ROOT / "example_firmware", dest, ignore=shutil.ignore_patterns("build"))
    m = manifest.load(str(dest / "arena.yaml"))
    assert m.models[0].path.startswith(str(dest))


def test_runtime_top_level_and_per_board(tmp_path: Path) -> None:
    path = write(tmp_path, """
runtime: none
models: [{name: a, path: m.onnx}]
boards:
  - mps2_an500
  - {name: mps2_an386, runtime: arena}
""")
    an500, an386 = manifest.load(path).targets
    assert (an500.runtime, an386.runtime) == ("none", "arena")
    assert an500.key() != manifest.load(path).targets[1].key()
    assert an500.board.flash.name == "FLASH" and an500.board.flash.length == 4 << 20  # for the weights check
    doc = manifest.target_doc(an500)
    assert manifest.target_from_doc(doc) == an500 and doc["runtime"] == "none"
    default = manifest.load(write(tmp_path, "models: [{name: a, path: m.onnx}]\nboards: [rpi_pico]\n")).targets[0]
    assert default.runtime == "arena"


def test_a_size_unit_is_read_in_any_case(tmp_path: Path) -> None:
    """``256KB`` was accepted and ``256kb`` refused by the schema: both, and every case between, are 256 KiB."""
    from builders import target

    sizes = {text: target(tmp_path, f"{{name: nucleo_h743, region: AXI_SRAM, budget: {text}}}").budget.size
             for text in ("256KB", "256kb", "256Kb", "256kB", "256KiB", "256kib", "256K", "256k")}
    assert set(sizes.values()) == {256 * 1024}, sizes


def test_one_kernels_vocabulary_for_the_manifest_and_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 36 defect 5: the manifest's kernels: and the CLI's --kernels take the same names:
    cmsis_nn is the variant the board's core runs (the README's --kernels cmsis_nn was refused by
    the CLI, which knew only the variants), and without a board the CLI says to give one."""
    import models
    from arena_tool import cli

    for board, variant in (("mps2_an500", "cmsis_nn_dsp"), ("rpi_pico", "cmsis_nn_nodsp"),
                           ("nucleo_l432kc", "cmsis_nn_dsp")):
        (tmp_path / board).mkdir()
        t = builders.target(tmp_path / board, f"{{name: {board}}}", models="a", defaults="{kernels: cmsis_nn}")
        assert t.models[0].options.kernels == variant, board
    path = models.save(models.chain(), tmp_path / "chain.onnx")
    assert cli.main(["plan", str(path), "--kernels", "cmsis_nn", "-o", str(tmp_path / "p.json")]) == 2
    err = capsys.readouterr().err
    assert "kernels cmsis_nn is CMSIS-NN as a board's core runs it, and no board is given" in err
    assert "give --board B, or name the variant: cmsis_nn_dsp (Cortex-M4/M7/M33)" in err
    assert "invalid choice" not in err  # the name itself is the CLI's as the manifest's
