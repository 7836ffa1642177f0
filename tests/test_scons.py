"""The SCons tool end to end: scons runs in a temporary copy of the example.

Most tests build two boards (nucleo_f746: DTCM, a Cortex-M7; mps2_an500: the
QEMU machine); one builds board=all. Linking and the ELF check run when
arm-none-eabi-gcc is on PATH (required in CI, see conftest.require_tool).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from arena_tool import boards, elfcheck, report, runreport

ROOT = Path(__file__).resolve().parent.parent
TWO = "board=nucleo_f746,mps2_an500"
ACTION = re.compile(r"^(Planning|Checking|Generating|Compiling|Linking) ", re.M)
HAVE_GCC = shutil.which("arm-none-eabi-gcc") is not None


def copy_example(dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy2(ROOT / "SConstruct", dest / "SConstruct")
    shutil.copytree(ROOT / "site_scons", dest / "site_scons", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "example_firmware", dest / "example_firmware",
                    ignore=shutil.ignore_patterns("__pycache__", "build"))
    shutil.copytree(ROOT / "arena_tool" / "runtime", dest / "arena_tool" / "runtime")
    return dest


def scons(cwd: Path, *args: str, seed: str = "0") -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONHASHSEED=seed)
    env.pop("VERBOSE", None)
    return subprocess.run([sys.executable, "-m", "SCons", "-Q", *args], cwd=cwd, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)


def mtimes(folder: Path) -> dict[str, int]:
    return {str(p.relative_to(folder)): p.stat().st_mtime_ns for p in sorted(folder.rglob("*"))
            if p.is_file() and ".sconsign" not in p.name and not p.name.startswith(".arena_")}


def set_budget(proj: Path, board: str, budget: str) -> None:
    path = proj / "example_firmware" / "arena.yaml"
    text = path.read_text()
    if f"  - {board}\n" in text:
        text = text.replace(f"  - {board}\n", f"  - name: {board}\n    budget: {budget}\n")
    else:
        text = re.sub(rf"(  - name: {board}\n(?:    .*\n)*?    budget: )\S+", rf"\g<1>{budget}", text)
    path.write_text(text)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example built once for two boards (shared by the read-only tests)."""
    proj = copy_example(tmp_path_factory.mktemp("built"))
    p = scons(proj, TWO)
    assert p.returncode == 0, p.stdout + p.stderr
    return proj


def test_full_build_outputs(built: Path) -> None:
    for board in ("nucleo_f746", "mps2_an500"):
        b = built / "build" / board
        for name in ("kws", "resnet8", "autoencoder", "kws_int8"):
            assert (b / "gen" / f"model_{name}.c").is_file() and (b / "gen" / f"model_{name}.h").is_file()
        assert (b / "gen" / "arena_board.c").is_file() and (b / "gen" / "arena_board.h").is_file()
        assert (b / f"{board}.ld").is_file()
        doc = report.read(str(b / "arena_report.json"), check=True)
        assert doc["board"] == board and doc["arena_size"] <= doc["limit"]
        assert [m["name"] for m in doc["models"]] == ["kws", "resnet8", "autoencoder", "kws_int8"]
        for m in doc["models"]:
            assert (built / m["plan"]).is_file()
    f746 = report.read(str(built / "build" / "nucleo_f746" / "arena_report.json"))
    assert f746["region"]["name"] == "DTCM" and f746["budget"] == 60 * 1024
    # Both boards use the same options, so they share one plan per model.
    assert len(list((built / "build" / "plans").glob("*.plan.json"))) == 4


def test_summary_and_help(built: Path) -> None:
    p = scons(built, TWO)
    assert p.returncode == 0
    assert re.search(r"arena: nucleo_f746: sequential in DTCM, budget 61,440 B \(60K\)", p.stdout)
    assert re.search(r"DTCM \[[= ]{10}\] \d+\.\d%", p.stdout)
    h = scons(built, "-h")
    assert h.returncode == 0
    for name in ("nucleo_f746", "nucleo_h743", "rpi_pico", "mps2_an500", "teensy41"):
        assert name in h.stdout


def test_noop_build_runs_no_action(built: Path) -> None:
    before = mtimes(built / "build")
    dry = scons(built, TWO, "-n")
    assert dry.returncode == 0 and not ACTION.search(dry.stdout), dry.stdout
    explain = scons(built, TWO, "--debug=explain")
    assert explain.returncode == 0
    assert "because" not in explain.stdout and not ACTION.search(explain.stdout), explain.stdout
    assert mtimes(built / "build") == before


@pytest.mark.skipif(not HAVE_GCC, reason="arm-none-eabi-gcc is not on PATH")
def test_elf_is_checked(built: Path) -> None:
    for board in ("nucleo_f746", "mps2_an500"):
        b = built / "build" / board
        elf = b / "firmware.elf"
        assert elf.is_file()
        doc = report.read(str(b / "arena_report.json"))
        board_obj = boards.load_board(board)
        assert elfcheck.problems(str(elf), board_obj, doc) == []
        wrong = dict(doc, region=dict(doc["region"], name="SRAM1" if board == "nucleo_f746" else "PSRAM"),
                     arena_size=doc["arena_size"] + 4096)
        found = elfcheck.problems(str(elf), board_obj, wrong)
        assert any("not inside region" in f for f in found) and any("planned" in f for f in found)


def test_generated_c_compiles_with_host_gcc(built: Path, tmp_path: Path) -> None:
    gcc = shutil.which("gcc") or pytest.skip("no host gcc")
    gen = built / "build" / "nucleo_f746" / "gen"
    for c in sorted(gen.glob("*.c")):
        p = subprocess.run([gcc, "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-c", str(c),
                            "-I", str(gen), "-I", str(built / "arena_tool" / "runtime"),
                            "-o", str(tmp_path / (c.stem + ".o"))], capture_output=True, text=True)
        assert p.returncode == 0, p.stderr


def test_one_model_changed_rebuilds_only_its_targets(tmp_path: Path) -> None:
    import numpy as np
    import onnx
    from onnx import numpy_helper

    proj = copy_example(tmp_path / "p")
    assert scons(proj, TWO).returncode == 0
    before = mtimes(proj / "build")
    path = proj / "example_firmware" / "models" / "autoencoder.onnx"
    model = onnx.load(str(path))
    init = model.graph.initializer[0]
    arr = numpy_helper.to_array(init).copy()
    arr.flat[0] += np.float32(0.5)
    init.CopyFrom(numpy_helper.from_array(arr, init.name))
    onnx.save(model, str(path))
    p = scons(proj, TWO)
    assert p.returncode == 0, p.stdout + p.stderr
    after = mtimes(proj / "build")
    changed = {k for k in after if before.get(k) != after[k]}
    assert any(k.startswith("plans/autoencoder-") for k in changed)
    assert "nucleo_f746/gen/model_autoencoder.c" in changed
    for k in changed:  # nothing of the other models is redone
        assert "kws" not in k and "resnet8" not in k, k
    planned = re.findall(r"^Planning (\S+)", p.stdout, re.M)
    assert len(planned) == 1 and "autoencoder" in planned[0]


def test_budget_overflow_fails_before_compiling(tmp_path: Path) -> None:
    proj = copy_example(tmp_path / "p")
    assert scons(proj, "board=nucleo_f746").returncode == 0  # leaves outputs that must go
    set_budget(proj, "nucleo_f746", "8K")
    p = scons(proj, "board=nucleo_f746")
    assert p.returncode == 1, p.stdout + p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.startswith("arena: nucleo_f746:")]
    assert len(lines) == 1, p.stderr
    assert re.fullmatch(r"arena: nucleo_f746: models? \S+ needs? [\d,]+ B in DTCM, budget 8,192 B "
                        r"\(over by [\d,]+ B, lower bound [\d,]+ B\); try .*activation_dtype int8", lines[0])
    assert "Traceback" not in p.stderr
    b = proj / "build" / "nucleo_f746"
    assert not list((b / "gen").glob("*")) if (b / "gen").exists() else True
    assert not (b / "nucleo_f746.ld").exists() and not (b / "firmware.elf").exists()
    assert not (b / "arena_report.json").exists()


def test_warn_above_prints_a_warning(tmp_path: Path) -> None:
    proj = copy_example(tmp_path / "p")
    set_budget(proj, "nucleo_f746", "33K")
    p = scons(proj, "board=nucleo_f746", "link=0")
    assert p.returncode == 0, p.stderr
    assert "arena: nucleo_f746: warning:" in p.stdout and "WARNING" in p.stdout


def test_bad_manifest_is_one_line_and_exit_2(tmp_path: Path) -> None:
    proj = copy_example(tmp_path / "p")
    path = proj / "example_firmware" / "arena.yaml"
    path.write_text(path.read_text().replace("warn_above: 85", "warn_abov: 85"))
    p = scons(proj, "board=nucleo_f746")
    assert p.returncode == 2
    assert "Traceback" not in p.stderr + p.stdout
    assert re.search(r"example_firmware/arena\.yaml:\d+:1: error: warn_abov: unknown key 'warn_abov' "
                     r"\(hint: did you mean 'warn_above'\?", p.stderr)
    path.write_text(path.read_text().replace("warn_abov: 85", "warn_above: 85"))
    q = scons(proj, "board=nucleo_f747")
    assert q.returncode == 2 and "not in the manifest" in q.stderr


def test_without_cross_compiler_stops_after_generation(tmp_path: Path) -> None:
    proj = copy_example(tmp_path / "p")
    p = scons(proj, "board=mps2_an500", "gcc_prefix=no-such-prefix-")
    assert p.returncode == 0, p.stderr
    assert "no-such-prefix-gcc not found on PATH: stopping after plans" in p.stdout
    b = proj / "build" / "mps2_an500"
    assert (b / "mps2_an500.ld").is_file() and (b / "gen" / "model_kws.c").is_file()
    assert not (b / "firmware.elf").exists() and not ACTION.search(scons(proj, "board=mps2_an500", "gcc_prefix=x-",
                                                                         "-n").stdout)


def test_clean_removes_the_outputs(tmp_path: Path) -> None:
    proj = copy_example(tmp_path / "p")
    assert scons(proj, "board=mps2_an500", "link=0").returncode == 0
    assert scons(proj, "board=mps2_an500", "link=0", "-c").returncode == 0
    left = [p for p in (proj / "build").rglob("*") if p.is_file() and ".sconsign" not in p.name
            and not p.name.startswith(".arena_")]  # the tool's caches (manifest, summary) stay
    assert left == []


def test_board_all_and_byte_identical_under_two_hash_seeds(tmp_path: Path) -> None:
    one = copy_example(tmp_path / "one")
    two = copy_example(tmp_path / "two")
    p = scons(one, "board=all", seed="1")
    assert p.returncode == 0, p.stdout + p.stderr
    shipped = sorted(x.stem for x in (ROOT / "boards").glob("*.yaml"))
    assert sorted(json.loads((one / "build" / b / "arena_report.json").read_text())["board"]
                  for b in shipped) == shipped
    q = scons(two, "board=all", "link=0", seed="2")
    assert q.returncode == 0, q.stdout + q.stderr
    files = [p.relative_to(two / "build") for p in sorted((two / "build").rglob("*"))
             if p.is_file() and p.suffix in (".json", ".c", ".h", ".ld") and not p.name.startswith(".arena_")]
    assert len(files) >= 10 * 10 + 3
    for rel in files:
        assert (one / "build" / rel).read_bytes() == (two / "build" / rel).read_bytes(), rel


@pytest.mark.skipif(not (HAVE_GCC and shutil.which("qemu-system-arm")), reason="needs arm gcc and qemu")
def test_run_alias(built: Path) -> None:
    p = scons(built, "board=mps2_an500", "run")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "status kws 0" in p.stdout + p.stderr
    # build/<board>/run_report.json (schema-checked) and its table at the end of the run.
    doc = runreport.read(str(built / "build" / "mps2_an500" / "run_report.json"))
    assert doc["exit_status"] == 0 and doc["board"] == "mps2_an500" and doc["flash"] > 0 and doc["ram"] > 0
    assert [m["name"] for m in doc["models"]] == ["kws", "resnet8", "autoencoder", "kws_int8"]
    for m in doc["models"]:
        assert m["status"] == 0 and m["instructions"] == m["ticks"] * 40 > 0
        assert re.search(rf"^  {m['name']} .* {m['instructions']:,}$", p.stdout, re.M), p.stdout[-2000:]
    assert "instructions = SysTick ticks x 40" in p.stdout


def test_builders_are_configured_as_documented(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each builder's suffixes and emitted targets (a misspelled keyword would fail here)."""
    import SCons.Environment

    monkeypatch.chdir(tmp_path)
    env = SCons.Environment.Environment(tools=["arena"], toolpath=[str(ROOT / "site_scons" / "site_tools")])
    expected = {"ArenaPlan": (".plan.json", ".onnx"), "ArenaGate": (".json", ".plan.json"),
                "ArenaTables": (".c", ".plan.json"), "ArenaArena": (".c", ".json"),
                "ArenaLinkerScript": (".ld", ".json")}
    for name, (suffix, src_suffix) in expected.items():
        b = env["BUILDERS"][name]
        assert b.get_suffix(env) == suffix and b.get_src_suffix(env) == src_suffix, name
    (tmp_path / "m.plan.json").write_text("{}")
    tables = env.ArenaTables("gen/model_m.c", "m.plan.json")
    assert [str(t) for t in tables] == [os.path.join("gen", "model_m.c"), os.path.join("gen", "model_m.h")]
    arena = env.ArenaArena("gen/arena_board.c", "r.json")
    assert [str(t) for t in arena][1] == os.path.join("gen", "arena_board.h")
    assert env["ARENAPLANCOMSTR"] == "Planning $TARGET" and callable(getattr(env, "ArenaFirmware"))


def rebuilt(p: subprocess.CompletedProcess) -> list[str]:
    """The targets of the action lines a build printed (Planning X, Compiling Y, ...)."""
    pattern = r"^(Planning|Checking budget|Checking|Generating|Compiling|Linking) (\S+)"
    return [m.group(2) for m in re.finditer(pattern, p.stdout, re.M)]


def test_board_file_change_regenerates_that_boards_outputs(tmp_path: Path) -> None:
    """A project board file (manifest board_dirs) is an input of the gate, the arena and the linker script."""
    proj = copy_example(tmp_path / "p")
    boards_dir = proj / "example_firmware" / "myboards"
    boards_dir.mkdir()
    board = boards_dir / "mps2_an500.yaml"
    shutil.copy2(ROOT / "boards" / "mps2_an500.yaml", board)
    manifest = proj / "example_firmware" / "arena.yaml"
    manifest.write_text("board_dirs: [myboards]\n" + manifest.read_text())
    p = scons(proj, TWO)
    assert p.returncode == 0, p.stdout + p.stderr
    assert not rebuilt(scons(proj, TWO))
    board.write_text(board.read_text() + "# edited\n")  # new bytes, same map: the gate reruns, no more
    p = scons(proj, TWO)
    assert p.returncode == 0, p.stdout + p.stderr
    assert rebuilt(p) == ["build/mps2_an500/arena_report.json"], p.stdout
    ld = proj / "build" / "mps2_an500" / "mps2_an500.ld"
    before = ld.read_text()
    text = board.read_text()
    assert "    length: 16M\n" in text
    board.write_text(text.replace("    length: 16M\n", "    length: 8M\n"))  # PSRAM: a new memory map
    p = scons(proj, TWO)
    assert p.returncode == 0, p.stdout + p.stderr
    done = rebuilt(p)
    assert "build/mps2_an500/arena_report.json" in done and ld.read_text() != before, done
    assert not any("nucleo_f746" in t or t.startswith("build/plans") for t in done), done
    if HAVE_GCC:
        assert "build/mps2_an500/firmware.elf" in done, done
    assert not rebuilt(scons(proj, TWO))


@pytest.mark.skipif(not HAVE_GCC, reason="arm-none-eabi-gcc is not on PATH")
def test_firmware_source_and_header_changes_recompile(tmp_path: Path) -> None:
    """implicit_cache must still notice an edited header; an edited source rebuilds its objects only."""
    proj = copy_example(tmp_path / "p")
    assert scons(proj, TWO).returncode == 0
    main = proj / "arena_tool" / "runtime" / "example" / "main.c"
    main.write_text(main.read_text() + "\nint arena_test_edit = 1;\n")  # new object bytes: a relink
    done = rebuilt(scons(proj, TWO))
    assert sorted(t for t in done if t.endswith(".o")) == sorted(
        {f"build/common/{k}/main.o" for k in ("cortex-m7_fpv5-sp-d16_hard", "cortex-m7_fpv5-d16_hard")}), done
    assert {"build/nucleo_f746/firmware.elf", "build/mps2_an500/firmware.elf"} <= set(done)
    assert not any(t.startswith(("build/plans", "build/nucleo_f746/gen")) for t in done), done
    header = proj / "arena_tool" / "runtime" / "arena_model.h"
    header.write_text(header.read_text() + "\n/* edited */\n")  # same objects: no relink needed
    done = rebuilt(scons(proj, TWO))
    assert "build/nucleo_f746/obj/arena_tables.o" in done and "build/mps2_an500/obj/arena_tables.o" in done, done
    assert any(t.endswith("/arena_runtime.o") for t in done), done
    assert not rebuilt(scons(proj, TWO))


def test_generator_source_change_rebuilds_every_arena_output(tmp_path: Path) -> None:
    """Editing arena_tool (here: a copy of the package) re-plans and regenerates; nothing else changes."""
    pkg = tmp_path / "pkg"
    for name in ("arena_tool", "schemas", "boards"):
        shutil.copytree(ROOT / name, pkg / name, ignore=shutil.ignore_patterns("__pycache__"))
    proj = copy_example(tmp_path / "p")

    def run(*args: str) -> subprocess.CompletedProcess:
        env = dict(os.environ, PYTHONPATH=str(pkg), PYTHONHASHSEED="0")
        env.pop("VERBOSE", None)
        return subprocess.run([sys.executable, "-m", "SCons", "-Q", *args], cwd=proj, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)

    args = ("board=mps2_an500", "link=0")
    p = run(*args)
    assert p.returncode == 0, p.stdout + p.stderr
    assert not rebuilt(run(*args))
    for edited in (pkg / "arena_tool" / "codegen.py", pkg / "schemas" / "report.schema.json"):
        edited.write_text(edited.read_text() + ("\n# edited\n" if edited.suffix == ".py" else "\n"))
        done = rebuilt(run(*args))
        assert len([t for t in done if t.startswith("build/plans/")]) == 4, done
        assert "build/mps2_an500/arena_report.json" in done, done
        assert "build/mps2_an500/gen/model_kws.c" in done, done
        assert not rebuilt(run(*args))
