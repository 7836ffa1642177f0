"""arena-tool fit: the search measured (plans, linked ELFs, QEMU), the pick proven, the exit status."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import models
from arena_tool import cli
from arena_tool.core.problem import ModelOptions
from arena_tool.target import manifest
from conftest import require_tool


def _manifest(tmp_path: Path, budget: str) -> str:
    models.save(models.mobile(), tmp_path / "mobile.onnx")
    (tmp_path / "arena.yaml").write_text(
        "models:\n  - {name: mobile, path: mobile.onnx, time_limit: 2}\n"
        f"boards:\n  - {{name: mps2_an386, region: SSRAM23, budget: {budget}, optimize: speed}}\n", encoding="utf-8")
    return str(tmp_path / "arena.yaml")


def test_bad_input_is_exit_2_before_any_build(tmp_path, capsys):
    path = _manifest(tmp_path, "40000")
    assert cli.main(["fit", path, "--board", "nosuch"]) == 2
    assert "nosuch" in capsys.readouterr().err


@pytest.mark.slow
def test_fit_picks_a_patched_configuration_and_proves_it_on_qemu(tmp_path, capsys):
    require_tool("arm-none-eabi-gcc")
    require_tool("qemu-system-arm")
    report = tmp_path / "fit.json"
    frozen = tmp_path / "frozen" / "arena.yaml"
    frozen.parent.mkdir()
    assert cli.main(["fit", _manifest(tmp_path, "40000"), "--board", "mps2_an386", "--json", str(report),
                     "--write", str(frozen)]) == 0
    out = capsys.readouterr().out
    assert "pick proof: mobile on mps2_an386 (QEMU): match" in out
    (doc,) = json.loads(report.read_text())["boards"]
    pick = doc["configurations"][doc["pick"]]
    assert pick["fits_ram"] and pick["fits_flash"] and pick["arena"] <= 40000
    assert pick["models"][0]["changes"]["patches"] != "off"  # nothing else meets 40,000 B
    assert pick["ram"] == pick["arena"] + doc["reserve"]
    runs = [p for p in doc["proofs"] if p["index"] == doc["pick"]]
    assert runs and all(p["result"] == "match" and p["instructions"] > 0 for p in runs)
    fastest = min(sum(p["instructions"] for p in doc["proofs"] if p["index"] == i)
                  for i in {p["index"] for p in doc["proofs"]})
    assert sum(p["instructions"] for p in runs) == fastest  # QEMU settles the contenders
    for c in doc["configurations"]:
        assert (c["flash"] is None) == (not c["fits_ram"])  # the ELF is linked for what fits RAM
    (t,) = manifest.load(str(frozen)).targets  # --write: the pick, as the board's settings
    assert t.models[0].options.to_doc() == pick["models"][0]["options"] and t.options.optimize == pick["optimize"]


@pytest.mark.slow
def test_nothing_fits_exit_1_names_the_smallest_ram_reachable(tmp_path, capsys):
    require_tool("arm-none-eabi-gcc")
    require_tool("qemu-system-arm")
    assert cli.main(["fit", _manifest(tmp_path, "1000"), "--board", "mps2_an386"]) == 1
    out = capsys.readouterr().out
    assert "nothing fits; the smallest RAM reachable is" in out and "set by mobile" in out


@pytest.mark.slow
def test_fit_auto_builds_the_pick_keeps_explicit_options_and_a_rebuild_is_a_noop(tmp_path, monkeypatch, capsys):
    require_tool("arm-none-eabi-gcc")
    require_tool("qemu-system-arm")
    from arena_tool.plan import planfile

    models.save(models.mobile(), tmp_path / "mobile.onnx")
    (tmp_path / "arena.yaml").write_text(
        "fit: auto\nmodels:\n  - {name: mobile, path: mobile.onnx, time_limit: 2, schedule: memory}\n"
        "boards:\n  - {name: mps2_an386, region: SSRAM23, budget: 40000}\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert cli.main(["generate", "arena.yaml", "--board", "mps2_an386"]) == 0
    first = capsys.readouterr().out
    assert "fit mps2_an386:" in first and "pick:" in first
    assert "  fit (speed, " in first and "    runner-up: mobile: as the manifest says" in first  # the summary's
    assert "of arena > 40,000 B" in first  # why the manifest's configuration lost
    (doc,) = json.loads((tmp_path / "build" / "mps2_an386" / "arena_fit.json").read_text())["boards"]
    pick = doc["configurations"][doc["pick"]]
    (plan_path,) = (tmp_path / "build").rglob("*.plan.json")
    plan = planfile.load(str(plan_path))
    assert plan.options.to_doc() == pick["models"][0]["options"] and plan.arena_size <= 40000
    assert plan.options.patches != "off" and plan.options.schedule == "memory"  # the manifest's, kept
    stamp = (tmp_path / "build" / ".arena_fit.json").stat().st_mtime_ns
    assert cli.main(["generate", "arena.yaml", "--board", "mps2_an386"]) == 0
    assert "fit mps2_an386:" not in capsys.readouterr().out  # the search's cache: no search again
    assert (tmp_path / "build" / ".arena_fit.json").stat().st_mtime_ns == stamp


def _two_boards(tmp_path: Path) -> Path:
    """q (a QDQ conv) and c (a float MatMul chain) under fit: auto on two boards of one core (the
    STM32L432 runs q only), its file copied beside the manifest (an edit to it is an edit to that
    board only)."""
    import shutil

    from conftest import ROOT

    models.save(models.qdq_conv(), tmp_path / "q.onnx")
    models.save(models.chain(), tmp_path / "c.onnx")
    (tmp_path / "boards").mkdir(exist_ok=True)
    shutil.copy(ROOT / "boards" / "nucleo_l432kc.yaml", tmp_path / "boards" / "nucleo_l432kc.yaml")
    path = tmp_path / "arena.yaml"
    path.write_text("board_dirs: [boards]\nfit: auto\noptimize: speed\nmodels:\n"
                    "  - {name: q, path: q.onnx, time_limit: 2}\n  - {name: c, path: c.onnx, time_limit: 2}\n"
                    "boards:\n  - {name: mps2_an386, region: SSRAM23}\n  - {name: nucleo_l432kc, budget: 40K, models: [q]}\n",
                    encoding="utf-8")
    return path


@pytest.mark.slow
def test_fit_auto_searches_again_only_the_boards_a_change_touches(tmp_path):
    require_tool("arm-none-eabi-gcc")
    require_tool("qemu-system-arm")
    from arena_tool.builder import noop_cache
    from arena_tool.run import fit

    path = _two_boards(tmp_path)
    out = str(tmp_path / "build")
    searched: list[str] = []

    def search(manifest_file: str, t: dict, folder: str) -> dict:
        searched.append(t["name"])
        return fit._fit_board(manifest_file, t, folder)

    picked: list[dict] = []

    def build() -> list[str]:
        doc = noop_cache.cached(str(path), (), str(tmp_path / "build" / ".arena_manifest.json"))
        try:
            picked[:] = noop_cache.fitted(doc, out)["targets"]
        except LookupError:
            picked[:] = noop_cache.fitted(doc, out, search)["targets"]
        done = sorted(searched)
        searched.clear()
        return done

    both = ["mps2_an386", "nucleo_l432kc"]
    assert build() == both
    assert {ModelOptions.from_doc(t["models"][0]["options"]).io for t in picked} == {"int8"}  # the board's fit turns q
    assert build() == []  # a no-op: the cache by content
    path.write_text(path.read_text().replace("budget: 40K", "budget: 36K"))
    assert build() == ["nucleo_l432kc"]  # its budget
    board = tmp_path / "boards" / "nucleo_l432kc.yaml"
    board.write_text(board.read_text() + "# an edit\n")
    assert build() == ["nucleo_l432kc"]  # its board file
    models.save(models.relu_chain(), tmp_path / "c.onnx")
    assert build() == ["mps2_an386"]  # a model only it runs
    models.save(models.qdq_conv(relu=False), tmp_path / "q.onnx")
    assert build() == both  # a model both boards run
    assert build() == []
    path.write_text(path.read_text().replace("fit: auto\n", "").replace("c.onnx, time_limit: 2}",
                                                                      "c.onnx, time_limit: 2, fit: auto}"))
    assert build() == ["mps2_an386"]  # fit: on the model c now, which only this board runs
    t, other = picked
    q = ModelOptions.from_doc(t["models"][0]["options"])  # as the manifest says (io: int8 applies, not searched)
    assert (q.io, q.io_buffers, q.schedule, q.patches) == ("model", "arena", "graph", "off")
    assert all("q: as the manifest says" in c["label"] for c in [t["fit_choice"]["pick"], *t["fit_choice"]["runners_up"]])
    assert "fit_choice" not in other and not other["fit"]  # no fit: left on the STM32L432
    assert build() == []


@pytest.mark.slow
def test_fit_auto_build_is_byte_identical_under_two_hash_seeds(tmp_path):
    """arena-tool generate of a fit: auto manifest, once per PYTHONHASHSEED from scratch: every
    file of the build folder (the search's report and cache, plans, board reports, C) the same,
    but the summary's cache (it keys on the reports' times) and the build lock."""
    import os
    import shutil
    import subprocess
    import sys

    require_tool("arm-none-eabi-gcc")
    require_tool("qemu-system-arm")
    from conftest import ROOT

    _two_boards(tmp_path)
    seen = []
    for seed in ("1", "4242"):
        shutil.rmtree(tmp_path / "build", ignore_errors=True)
        p = subprocess.run([sys.executable, "-m", "arena_tool", "generate", "arena.yaml", "--board", "all"],
                           cwd=tmp_path, env=dict(os.environ, PYTHONHASHSEED=seed, PYTHONPATH=str(ROOT)),
                           capture_output=True, text=True, timeout=900)
        assert p.returncode == 0, p.stdout + p.stderr
        files = {str(f.relative_to(tmp_path)): f.read_bytes() for f in sorted((tmp_path / "build").rglob("*"))
                 if f.is_file() and f.name not in (".arena.lock", ".arena_summary.json")}  # the lock; the reports' times
        assert "build/mps2_an386/arena_fit.json" in files and "build/.arena_fit.json" in files
        seen.append((p.stdout, files))
    assert seen[0][0] == seen[1][0]  # the search's report and the summary too
    assert seen[0][1].keys() == seen[1][1].keys()
    assert [k for k in seen[0][1] if seen[0][1][k] != seen[1][1][k]] == []

@pytest.mark.slow  # quantizes MLPerf Tiny's VWW, plans, links and profiles its candidates, runs the pick (minutes)
def test_vww_int8_fits_the_ram_and_flash_of_an_stm32l432(tmp_path, qcache, capsys):
    """The floor: VWW int8 on nucleo_l432kc (SRAM1 48K + SRAM2 16K, 256K flash, Cortex-M4F), the
    board as shipped (its default region, SRAM1): a configuration fits RAM and the linked ELF fits
    its flash, and the pick's outputs equal onnxruntime's on QEMU mps2-an386 (the same core)."""
    require_tool("arm-none-eabi-gcc")
    require_tool("qemu-system-arm")
    import quantized
    from conftest import require_shared
    from shared_paths import MLPERF

    vww = quantized.quantized(require_shared(MLPERF / "visual_wake_words__vww_96_float_tflite2onnx.onnx"), "qdq",
                              True, qcache)
    (tmp_path / "arena.yaml").write_text(f"models:\n  - {{name: vww, path: {vww}, time_limit: 5}}\n"
                                         "boards:\n  - {name: nucleo_l432kc}\n", encoding="utf-8")
    report = tmp_path / "fit.json"
    assert cli.main(["fit", str(tmp_path / "arena.yaml"), "--board", "nucleo_l432kc", "--json", str(report)]) == 0
    out = capsys.readouterr().out
    assert "pick proof: vww on mps2_an386 (QEMU): match" in out
    (doc,) = json.loads(report.read_text())["boards"]
    pick = doc["configurations"][doc["pick"]]
    assert doc["emulated"] == "mps2_an386" and doc["flash_limit"] == 256 * 1024
    assert pick["fits_ram"] and pick["ram"] <= 48 * 1024 and pick["fits_flash"] and pick["flash"] <= 256 * 1024
    assert all(p["result"] == "match" for p in doc["proofs"] if p["index"] == doc["pick"])
    (m,) = pick["models"]  # every report states the table bytes: the ELF holds weights, tables and code
    assert 0 < m["tables"] < pick["flash"] - m["weights"] and f"tables {m['tables']:,} B" in out
