"""The SCons tool end to end: scons runs in a temporary copy of the example.

Most tests build two boards (nucleo_f746: DTCM, a Cortex-M7; mps2_an500: the
QEMU machine; the shared build adds nucleo_h743, whose core flags are
mps2_an500's); one builds board=all. Linking and the ELF check run when
arm-none-eabi-gcc is on PATH (required in CI, see conftest.require_tool).
The example's SConstruct compiles arena's runtime and its example main.c from
``arena_tool.runtime_dir()``: the checkout's, unless a test copies the package.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import builders
import pytest

from arena_tool.builder import board_report
from arena_tool.target import boards
from arena_tool.run import elfcheck, runreport
from conftest import has_tool, require_tool
from builders import ACTION, copy_example, copy_package, scons, set_budget

ROOT = Path(__file__).resolve().parent.parent
TWO = "board=nucleo_f746,mps2_an500"
THREE = TWO + ",nucleo_h743"
M7DP = "cortex-m7_fpv5-d16_hard"  # mps2_an500 and nucleo_h743
M7SP = "cortex-m7_fpv5-sp-d16_hard"  # nucleo_f746


def mtimes(folder: Path) -> dict[str, int]:
    return {str(p.relative_to(folder)): p.stat().st_mtime_ns for p in sorted(folder.rglob("*"))
            if p.is_file() and ".sconsign" not in p.name and not p.name.startswith(".arena_")}


MODELS = ("kws", "resnet8", "autoencoder", "kws_int8")


@pytest.fixture(scope="module")
def built_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess]:
    """The example built once for three boards (shared by the read-only tests), and its output."""
    proj = copy_example(tmp_path_factory.mktemp("built"))
    p = scons(proj, THREE)
    assert p.returncode == 0, p.stdout + p.stderr
    return proj, p


@pytest.fixture(scope="module")
def built(built_run: tuple[Path, subprocess.CompletedProcess]) -> Path:
    return built_run[0]


@pytest.fixture
def built_copy(built: Path, tmp_path: Path) -> Path:
    """A copy of ``built`` to edit: a test of what an edit rebuilds starts from it instead of
    building the example again (at its new path the copy is current: a build in it does nothing)."""
    return Path(shutil.copytree(built, tmp_path / "p", symlinks=True))


def test_full_build_outputs(built: Path) -> None:
    for board in ("nucleo_f746", "mps2_an500", "nucleo_h743"):
        b = built / "build" / board
        assert sorted(p.name for p in (b / "gen").iterdir()) == ["arena_board.c", "arena_board.h"]
        assert (b / f"{board}.ld").is_file()
        for name in ("arena_gate.json", "arena_report.json"):  # the typed report gives the same bytes back
            text = (b / name).read_text()
            assert board_report.dumps(board_report.read(str(b / name)).to_json()) == text, name
        gate = board_report.read(str(b / "arena_gate.json")).to_json()
        doc = board_report.read(str(b / "arena_report.json")).to_json()
        assert doc["board"] == board and doc["arena_size"] <= doc["limit"] and doc["status"] == "ok"
        assert doc["problems"] == [] and doc["runtime"] == "arena"
        assert [m["name"] for m in doc["models"]] == list(MODELS)
        for m in doc["models"]:
            assert (built / m["plan"]).is_file()
        fl = gate["flash"]
        assert gate["stage"] == "planned" and fl["used"] == fl["weights"] + fl["tables"] + fl["code"]
        assert fl["weights"] > 0 and fl["tables"] > 0 and fl["code"] > 0
        if has_tool("arm-none-eabi-gcc"):  # measured on the ELF, which holds the application's code beside what the gate counts
            assert doc["stage"] == "linked" and doc["flash"]["used"] > fl["used"]
            assert doc["ram"]["used"] >= doc["arena_size"] + doc["reserve"]["stack"]
            assert {k: v for k, v in doc.items() if k not in ("stage", "ram", "flash")} == \
                {k: v for k, v in gate.items() if k not in ("stage", "ram", "flash")}
    f746 = board_report.read(str(built / "build" / "nucleo_f746" / "arena_report.json"))
    assert f746.region == "DTCM" and f746.budget == 60 * 1024
    # The boards use the same options, so they share one plan and one set of tables per model.
    assert len(list((built / "build" / "plans").glob("*.plan.json"))) == 4
    for name in MODELS:
        [folder] = (built / "build" / "tables").glob(f"{name}-*")
        assert sorted(p.name for p in folder.iterdir()) == [f"model_{name}.c", f"model_{name}.h"]


def test_tables_compile_once_per_flag_set(built_run: tuple[Path, subprocess.CompletedProcess]) -> None:
    """mps2_an500 and nucleo_h743 share core flags: one object per model's tables (and per runtime
    file) for both; nucleo_f746 has its own flags and its own objects; each board its arena_board.o."""
    require_tool("arm-none-eabi-gcc")
    built, p = built_run
    compiled = sorted(m for m in re.findall(r"^Compiling (\S+)", p.stdout, re.M))
    assert len(compiled) == len(set(compiled)), compiled
    for key in (M7DP, M7SP):
        tables = [c for c in compiled if c.startswith(f"build/common/{key}/tables/")]
        assert sorted(c.split("/")[-1].split("-")[0] for c in tables) == sorted(MODELS), compiled
        runtime = {c.split("/")[-1] for c in compiled if c.startswith(f"build/common/{key}/arena_runtime/")}
        assert {"arena_runtime.o", "main.o", "startup.o"} <= runtime
    boards = [c for c in compiled if not c.startswith("build/common/")]
    assert sorted(boards) == [f"build/{b}/obj/arena_board.o" for b in ("mps2_an500", "nucleo_f746", "nucleo_h743")]


def test_summary_and_help(built: Path) -> None:
    p = scons(built, TWO)
    assert p.returncode == 0
    assert re.search(r"arena: nucleo_f746: sequential in DTCM, budget 61,440 B \(60K\)", p.stdout)
    assert re.search(r"DTCM \[[= ]{10}\] \d+\.\d%", p.stdout)
    if has_tool("arm-none-eabi-gcc"):  # PlatformIO's lines, from the ELF
        assert re.search(r"^  RAM:   \[[= ]{10}\] +\d+\.\d% \(used [\d,]+ bytes from 348,160 bytes\)$", p.stdout, re.M)
        assert re.search(r"^  Flash: \[[= ]{10}\] +\d+\.\d% \(used [\d,]+ bytes from 1,048,576 bytes\)$", p.stdout, re.M)
        # the documentation's sample summary is this build's, line for line (the README showed a
        # flash of 334,828 B when the build linked 343,092 B)
        samples = builders.documented_blocks("", "arena: nucleo_f746: sequential in DTCM")
        assert samples, "no sample summary in the documentation"
        lines = p.stdout.splitlines()
        for doc, text in samples:
            shown = text.splitlines()
            first = shown.index(next(x for x in shown if x.startswith("arena: nucleo_f746: ")))
            last = first + next(i for i, x in enumerate(shown[first:]) if x.strip().startswith("Flash:"))
            start = lines.index(shown[first])
            got = lines[start:start + last - first + 1]
            # the plan's lines exactly; the RAM and Flash lines' bytes within 2 % (the runtime's code moves)
            assert len(got) == last - first + 1 and got[:-2] == shown[first:last - 1], (doc, got)
            for have, want in zip(got[-2:], shown[last - 1:last + 1]):
                used = [int(re.search(r"used ([\d,]+) bytes", x).group(1).replace(",", "")) for x in (have, want)]
                assert abs(used[0] - used[1]) <= 0.02 * used[0], (doc, have, want)
    h = scons(built, "-h")
    assert h.returncode == 0
    for name in ("nucleo_f746", "nucleo_h743", "rpi_pico", "mps2_an500", "teensy41"):
        assert name in h.stdout
    assert h.stdout.index("arena (manifest") < h.stdout.index("scons -H")  # arena's options first
    assert "--directory" not in h.stdout  # SCons's own are behind -H


def test_noop_build_runs_no_action(built: Path) -> None:
    # the fixture built three boards: building two once settles the status alias of that selection
    # (it passed alone only when an earlier test of this module had done so)
    assert scons(built, TWO).returncode == 0
    before = mtimes(built / "build")
    dry = scons(built, TWO, "-n")
    assert dry.returncode == 0 and not ACTION.search(dry.stdout), dry.stdout
    explain = scons(built, TWO, "--debug=explain")
    assert explain.returncode == 0
    assert "because" not in explain.stdout and not ACTION.search(explain.stdout), explain.stdout
    assert mtimes(built / "build") == before


def test_elf_is_checked(built: Path) -> None:
    require_tool("arm-none-eabi-gcc")
    for board in ("nucleo_f746", "mps2_an500"):
        b = built / "build" / board
        elf = b / "firmware.elf"
        assert elf.is_file()
        doc = board_report.read(str(b / "arena_report.json"))
        board_obj = boards.load_board(board)
        assert elfcheck.problems(str(elf), board_obj, doc) == []
        wrong = dataclasses.replace(doc, region="SRAM1" if board == "nucleo_f746" else "PSRAM",
                                    arena_size=doc.arena_size + 4096)
        found = elfcheck.problems(str(elf), board_obj, wrong)
        assert any("not inside region" in f for f in found) and any("planned" in f for f in found)


def test_generated_c_compiles_with_host_gcc(built: Path, tmp_path: Path) -> None:
    gcc = require_tool("gcc")
    gen = built / "build" / "nucleo_f746" / "gen"
    for c in sorted(gen.glob("*.c")) + sorted((built / "build" / "tables").glob("*/*.c")):
        p = subprocess.run([gcc, "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-c", str(c),
                            "-I", str(gen), "-I", str(ROOT / "arena_tool" / "runtime"),
                            "-o", str(tmp_path / (c.stem + ".o"))], capture_output=True, text=True)
        assert p.returncode == 0, p.stderr


def test_one_model_changed_rebuilds_only_its_targets(built_copy: Path) -> None:
    import numpy as np
    import onnx
    from onnx import numpy_helper

    proj = built_copy
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
    assert any(re.fullmatch(r"tables/autoencoder-\w+/model_autoencoder\.c", k) for k in changed), changed
    for k in changed:  # nothing of the other models is redone
        assert "kws" not in k and "resnet8" not in k, k
    planned = re.findall(r"^Planning (\S+)", p.stdout, re.M)
    assert len(planned) == 1 and "autoencoder" in planned[0]


def test_budget_overflow_fails_before_compiling(built_copy: Path) -> None:
    proj = built_copy  # built: it leaves outputs that must go
    set_budget(proj, "nucleo_f746", "8K")
    p = scons(proj, "board=nucleo_f746")
    assert p.returncode == 1, p.stdout + p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.startswith("arena: nucleo_f746:")]
    assert len(lines) == 1, p.stderr
    assert re.fullmatch(r"arena: nucleo_f746: models? \S+ needs? [\d,]+ B in DTCM, budget 8,192 B "
                        r"\(over by [\d,]+ B, lower bound [\d,]+ B\); try quantizing kws .*quantize_static.*"
                        r"activation_dtype int8 alone only re-sizes the plan, the model still runs float32; "
                        r"nothing meets it for kws: the smallest arena reached is .*; "
                        r"nothing meets it for resnet8: the smallest arena reached is patches: .*", lines[0])
    assert "Traceback" not in p.stderr
    assert not re.search(r"^(Compiling|Linking)", p.stdout, re.M), p.stdout
    b = proj / "build" / "nucleo_f746"
    assert not list((b / "gen").glob("*")) if (b / "gen").exists() else True
    assert not (b / "nucleo_f746.ld").exists() and not (b / "firmware.elf").exists()
    doc = board_report.read(str(b / "arena_report.json")).to_json()  # CI always has a file to read
    assert board_report.dumps(doc) == (b / "arena_report.json").read_text()  # a failed gate's, typed: the same bytes
    assert doc["status"] == "over" and doc["stage"] == "planned" and doc["headroom"] < 0
    [problem] = doc["problems"]
    assert problem["kind"] == "ram" and problem["region"] == "DTCM" and problem["limit"] == 8192
    assert problem["over_by"] == problem["need"] - 8192 > 0 and problem["message"] == lines[0]
    assert "FAILED: over" in p.stdout  # the summary shows the failed board too


def test_one_board_over_budget_fails_alone(tmp_path: Path) -> None:
    """board=a,b with a over budget: b (whose tables and objects a would share) is still planned,
    gated, linked and reported; the exit status is a's; the summary lists both outcomes; the next
    build fails the same way and redoes nothing of b's."""
    proj = copy_example(tmp_path / "p")
    set_budget(proj, "nucleo_f746", "8K")
    for attempt in range(2):
        p = scons(proj, TWO, "-j2")
        assert p.returncode == 1, p.stdout + p.stderr
        assert [ln.split(":")[1] for ln in p.stderr.splitlines() if ln.startswith("arena: ")] == [" nucleo_f746"]
        assert "Traceback" not in p.stderr and "FAILED: over" in p.stdout
        assert "arena: 2 boards: 1 passed (mps2_an500), 1 failed (nucleo_f746: over)" in p.stdout
        ok = board_report.read(str(proj / "build" / "mps2_an500" / "arena_report.json"))
        over = board_report.read(str(proj / "build" / "nucleo_f746" / "arena_report.json"))
        assert ok.status == "ok" and over.status == "over"
        assert (proj / "build" / "mps2_an500" / "mps2_an500.ld").is_file()
        assert not (proj / "build" / "nucleo_f746" / "nucleo_f746.ld").exists()
        assert not (proj / "build" / "nucleo_f746" / "firmware.elf").exists()
        compiled = re.findall(r"^Compiling (\S+)", p.stdout, re.M)
        assert not [c for c in compiled if M7SP in c or "nucleo_f746" in c], compiled  # nothing only it needs
        if attempt == 0:
            assert len(list((proj / "build" / "tables").glob("*/model_*.c"))) == len(MODELS)
            if has_tool("arm-none-eabi-gcc"):
                assert ok.stage == "linked" and (proj / "build" / "mps2_an500" / "firmware.elf").is_file()
                assert compiled and "Linking build/mps2_an500/firmware.elf" in p.stdout
        else:
            assert compiled == [] and "Linking" not in p.stdout, p.stdout
    q = scons(proj, "board=mps2_an500")
    assert q.returncode == 0 and not re.search(r"^(Compiling|Linking)", q.stdout, re.M), q.stdout + q.stderr


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
    p = scons(proj, "board=mps2_an500", "gcc_prefix=no-such-prefix-", environ={"ARENA_REQUIRE_TOOLS": "0"})
    assert p.returncode == 0, p.stderr
    assert "no-such-prefix-gcc not found on PATH: stopping after plans" in p.stdout
    b = proj / "build" / "mps2_an500"
    assert (b / "mps2_an500.ld").is_file() and list((proj / "build" / "tables").glob("kws-*/model_kws.c"))
    assert board_report.read(str(b / "arena_report.json")).stage == "planned"
    assert not (b / "firmware.elf").exists() and not ACTION.search(scons(proj, "board=mps2_an500", "gcc_prefix=x-",
                                                                         "-n").stdout)


def test_missing_cross_compiler_leaves_no_stale_elf_and_can_be_required(built_copy: Path) -> None:
    require_tool("arm-none-eabi-gcc")
    proj = built_copy
    b = proj / "build" / "mps2_an500"
    assert (b / "firmware.elf").is_file() and board_report.read(str(b / "arena_report.json")).stage == "linked"
    off = {"ARENA_REQUIRE_TOOLS": "0"}
    p = scons(proj, "board=mps2_an500", "gcc_prefix=foo-none-eabi-", environ=off)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "foo-none-eabi-gcc not found on PATH: stopping after plans" in p.stdout
    assert not (b / "firmware.elf").exists() and not (b / "firmware.map").exists()  # not rebuilt: gone
    assert board_report.read(str(b / "arena_report.json")).stage == "planned"
    for args, environ in ((("require_link=1",), off), ((), {"ARENA_REQUIRE_TOOLS": "1"})):
        q = scons(proj, "board=mps2_an500", "gcc_prefix=foo-none-eabi-", *args, environ=environ)
        assert q.returncode == 2, q.stdout + q.stderr
        assert "Traceback" not in q.stderr and q.stderr.count("\n") == 1, q.stderr
        assert "foo-none-eabi-gcc not found on PATH: required to link" in q.stderr
    assert scons(proj, "board=mps2_an500", "link=0", environ={"ARENA_REQUIRE_TOOLS": "1"}).returncode == 0


def test_clean_removes_the_outputs(tmp_path: Path) -> None:
    proj = copy_example(tmp_path / "p")
    assert scons(proj, "board=mps2_an500", "link=0").returncode == 0
    assert scons(proj, "board=mps2_an500", "link=0", "-c").returncode == 0
    left = [p for p in (proj / "build").rglob("*") if p.is_file() and ".sconsign" not in p.name]
    # the tool's own dot-files (manifest cache, summary) too; SCons keeps its db, and the build's lock
    # file stays (flock'ed by whichever build runs: removing it would let two builds hold two locks)
    assert [p for p in left if p.name != ".arena.lock"] == []


def test_board_all_and_byte_identical_under_two_hash_seeds(tmp_path: Path) -> None:
    one = copy_example(tmp_path / "one")
    two = copy_example(tmp_path / "two")
    p = scons(one, "board=all", seed="1")
    assert p.returncode == 0, p.stdout + p.stderr
    shipped = sorted(x.stem for x in (ROOT / "boards").glob("*.yaml") if x.stem not in builders.NOT_IN_EXAMPLE)
    assert sorted(json.loads((one / "build" / b / "arena_report.json").read_text())["board"]
                  for b in shipped) == shipped
    q = scons(two, "board=all", "link=0", seed="2")
    assert q.returncode == 0, q.stdout + q.stderr
    files = [p.relative_to(two / "build") for p in sorted((two / "build").rglob("*"))
             if p.is_file() and p.suffix in (".json", ".c", ".h", ".ld") and not p.name.startswith(".arena_")
             and p.name != "arena_report.json"]  # linked in one, not in the other: compared below
    assert len(files) >= 10 * 4 + 4 * 3  # per board: gate, arena_board.{c,h}, script; per model: plan, tables
    for rel in files:
        assert (one / "build" / rel).read_bytes() == (two / "build" / rel).read_bytes(), rel
    for b in shipped:
        linked, planned = (json.loads((x / "build" / b / "arena_report.json").read_text()) for x in (one, two))
        linked_stage = "linked" if has_tool("arm-none-eabi-gcc") else "planned"
        assert (planned["stage"], linked["stage"]) == ("planned", linked_stage)
        assert {k: v for k, v in linked.items() if k not in ("stage", "ram", "flash")} == \
            {k: v for k, v in planned.items() if k not in ("stage", "ram", "flash")}


def test_run_alias(built: Path) -> None:
    require_tool("arm-none-eabi-gcc")
    require_tool("qemu-system-arm")
    p = scons(built, "board=mps2_an500", "run")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "status kws 0" in p.stdout + p.stderr
    # build/<board>/run_report.json (schema-checked) and its table at the end of the run.
    path = built / "build" / "mps2_an500" / "run_report.json"
    run = runreport.read(str(path))
    assert json.dumps(run.to_json(), indent=2) + "\n" == path.read_text()  # the typed run report, the same bytes
    doc = run.to_json()
    assert doc["exit_status"] == 0 and doc["board"] == "mps2_an500" and doc["flash"] > 0 and doc["ram"] > 0
    assert [m["name"] for m in doc["models"]] == ["kws", "resnet8", "autoencoder", "kws_int8"]
    for m in doc["models"]:
        assert m["status"] == 0 and m["instructions"] == m["ticks"] * 40 > 0
        assert re.search(rf"^  {m['name']} .* {m['instructions']:,}$", p.stdout, re.M), p.stdout[-2000:]
    assert "instructions = SysTick ticks x 40" in p.stdout
    for name in MODELS:  # every model's outputs against onnxruntime's on main.c's input pattern
        assert re.search(rf"^run: mps2_an500: {name}: outputs match onnxruntime \(max abs error ", p.stdout,
                         re.M), p.stdout[-2000:]


def test_run_alias_uses_the_manifests_inputs(tmp_path: Path) -> None:
    """scons run: a model the manifest's inputs: names runs on that data (arena-tool run MANIFEST's
    one-model firmware), the other on main.c's pattern; the shipped ELF's bytes stay the build's.
    The data is the pattern negated, so onnxruntime's outputs on the two differ."""
    require_tool("arm-none-eabi-gcc")
    require_tool("qemu-system-arm")
    import hashlib

    import numpy as np
    import onnxruntime as ort
    from models import chain, relu_chain, save

    from arena_tool.run import verify

    proj = copy_example(tmp_path / "p")
    ex = proj / "example_firmware"
    save(relu_chain(), ex / "models" / "relu.onnx")
    save(chain(), ex / "models" / "chain.onnx")
    data = {"T0": -verify.input_pattern((64, 16), "float32")}
    np.savez(ex / "relu_in.npz", **data)
    sess = ort.InferenceSession(str(ex / "models" / "relu.onnx"), providers=["CPUExecutionProvider"])
    assert not np.allclose(sess.run(None, data)[0], sess.run(None, {"T0": -data["T0"]})[0])
    text = ("defaults: {planner: greedy_size}\nmodels:\n  - {name: relu, path: models/relu.onnx}\n"
            "  - {name: chain, path: models/chain.onnx}\nboards: [mps2_an500]\n")
    (ex / "arena.yaml").write_text(text)
    p = scons(proj, "board=mps2_an500")
    assert p.returncode == 0, p.stdout + p.stderr
    elf = proj / "build" / "mps2_an500" / "firmware.elf"
    built = hashlib.sha256(elf.read_bytes()).hexdigest()
    (ex / "arena.yaml").write_text(text + "inputs: {relu: relu_in.npz}\n")
    p = scons(proj, "board=mps2_an500", "run")
    assert p.returncode == 0, p.stdout + p.stderr
    assert re.search(r"^run: mps2_an500: relu: outputs match onnxruntime \(max abs error \S+, "
                     r"input example_firmware/relu_in.npz\)$", p.stdout, re.M), p.stdout[-2000:]
    assert re.search(r"^run: mps2_an500: chain: outputs match onnxruntime \(max abs error \S+, "
                     r"main.c's input pattern\)$", p.stdout, re.M), p.stdout[-2000:]
    assert hashlib.sha256(elf.read_bytes()).hexdigest() == built and "Linking" not in p.stdout


def test_builders_are_configured_as_documented(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each builder's suffixes and emitted targets (a misspelled keyword would fail here)."""
    import SCons.Environment

    monkeypatch.chdir(tmp_path)
    env = SCons.Environment.Environment(tools=["arena"], toolpath=[str(ROOT / "site_scons" / "site_tools")])
    expected = {"ArenaPlan": (".plan.json", ".onnx"), "ArenaGate": (".json", ".plan.json"),
                "ArenaReport": (".json", ".json"),
                "ArenaTables": (".c", ".plan.json")}
    for name, (suffix, src_suffix) in expected.items():
        b = env["BUILDERS"][name]
        assert b.get_suffix(env) == suffix and b.get_src_suffix(env) == src_suffix, name
    (tmp_path / "m.plan.json").write_text("{}")
    tables = env.ArenaTables("gen/model_m.c", "m.plan.json")
    assert [str(t) for t in tables] == [os.path.join("gen", "model_m.c"), os.path.join("gen", "model_m.h")]
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
    assert rebuilt(p) == ["build/mps2_an500/arena_gate.json"], p.stdout
    ld = proj / "build" / "mps2_an500" / "mps2_an500.ld"
    before = ld.read_text()
    text = board.read_text()
    assert "    length: 16M\n" in text
    board.write_text(text.replace("    length: 16M\n", "    length: 8M\n"))  # PSRAM: a new memory map
    p = scons(proj, TWO)
    assert p.returncode == 0, p.stdout + p.stderr
    done = rebuilt(p)
    assert "build/mps2_an500/arena_gate.json" in done and ld.read_text() != before, done
    assert not any("nucleo_f746" in t or t.startswith(("build/plans", "build/tables")) for t in done), done
    if has_tool("arm-none-eabi-gcc"):
        assert "build/mps2_an500/firmware.elf" in done and "build/mps2_an500/arena_report.json" in done, done
    assert not rebuilt(scons(proj, TWO))


def test_firmware_source_and_header_changes_recompile(tmp_path: Path) -> None:
    """implicit_cache must still notice an edited header; an edited source rebuilds its objects only."""
    require_tool("arm-none-eabi-gcc")
    pkg = copy_package(tmp_path / "pkg")
    proj = copy_example(tmp_path / "p")
    assert scons(proj, TWO, pkg=pkg).returncode == 0
    main = pkg / "arena_tool" / "runtime" / "example" / "main.c"
    main.write_text(main.read_text() + "\nint arena_test_edit = 1;\n")  # new object bytes: a relink
    done = rebuilt(scons(proj, TWO, pkg=pkg))
    assert sorted(t for t in done if t.endswith(".o")) == sorted(
        {f"build/common/{k}/arena_runtime/example/main.o" for k in (M7SP, M7DP)}), done
    assert {"build/nucleo_f746/firmware.elf", "build/mps2_an500/firmware.elf"} <= set(done)
    assert not any(t.startswith(("build/plans", "build/tables", "build/nucleo_f746/gen")) for t in done), done
    header = pkg / "arena_tool" / "runtime" / "arena_model.h"
    header.write_text(header.read_text() + "\n/* edited */\n")  # same objects: no relink needed
    done = rebuilt(scons(proj, TWO, pkg=pkg))
    assert "build/nucleo_f746/obj/arena_board.o" in done and "build/mps2_an500/obj/arena_board.o" in done, done
    assert any(t.endswith("/arena_runtime/arena_runtime.o") for t in done), done
    assert any(re.fullmatch(rf"build/common/{M7DP}/tables/kws-\w+\.o", t) for t in done), done
    assert not rebuilt(scons(proj, TWO, pkg=pkg))


def test_generator_source_change_rebuilds_every_arena_output(tmp_path: Path) -> None:
    """Editing arena_tool (here: a copy of the package) re-plans and regenerates; nothing else changes."""
    pkg = copy_package(tmp_path / "pkg")
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
    for edited in (pkg / "arena_tool" / "emit" / "codegen.py", pkg / "schemas" / "report.schema.json"):
        edited.write_text(edited.read_text() + ("\n# edited\n" if edited.suffix == ".py" else "\n"))
        done = rebuilt(run(*args))
        assert len([t for t in done if t.startswith("build/plans/")]) == 4, done
        assert "build/mps2_an500/arena_gate.json" in done, done
        assert any(re.fullmatch(r"build/tables/kws-\w+/model_kws\.c", t) for t in done), done
        assert not rebuilt(run(*args))


def add_trig_model(proj: Path) -> None:
    """A model arena's runtime cannot run (Cos, Sin), listed after the example's models."""
    import onnx
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["r"], name="relu0"),
                               helper.make_node("Cos", ["r"], ["c"], name="cos0"),
                               helper.make_node("Sin", ["c"], ["y"], name="sin0")], "trig", [x], [y])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]),
              str(proj / "example_firmware" / "models" / "trig.onnx"))
    path = proj / "example_firmware" / "arena.yaml"
    path.write_text(path.read_text().replace("  - name: kws_int8 ", "  - name: trig\n    path: models/trig.onnx\n"
                                                                   "  - name: kws_int8 "))


STUB_KERNELS = """\
/* A project's own kernels (runtime: none): here, just enough for the example main.c. */
#include "arena_model.h"
int arena_run(const arena_model_t *m, uint8_t *base, int *failed_op)
{
    (void)m; (void)base;
    if (failed_op != 0) { *failed_op = -1; }
    return ARENA_OK;
}
void *arena_tensor_data(const arena_model_t *m, uint8_t *base, int index)
{
    const arena_tensor_t *t = &m->tensors[index];
    return t->data != 0 ? (void *)(uintptr_t)t->data : (void *)(base + t->offset);
}
size_t arena_dtype_size(uint8_t dtype) { return dtype == ARENA_DT_FLOAT32 || dtype == ARENA_DT_INT32 ? 4u : 1u; }
"""


def test_unsupported_op_fails_before_compiling_and_runtime_none_builds(tmp_path: Path) -> None:
    proj = copy_example(tmp_path / "p")
    add_trig_model(proj)
    p = scons(proj, "board=mps2_an500")
    assert p.returncode == 1, p.stdout + p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.startswith("arena: mps2_an500:")]
    assert lines == ["arena: mps2_an500: model trig: op 1 'cos0' (Cos) cannot run on arena's runtime: "
                     "the runtime has no kernel for this op",
                     "arena: mps2_an500: model trig: op 2 'sin0' (Sin) cannot run on arena's runtime: "
                     "the runtime has no kernel for this op"], p.stderr
    assert "Traceback" not in p.stderr and not re.search(r"^(Compiling|Linking)", p.stdout, re.M), p.stdout
    doc = board_report.read(str(proj / "build" / "mps2_an500" / "arena_report.json")).to_json()
    assert doc["status"] == "unsupported" and [(q["model"], q["op_index"], q["node"], q["op_type"])
                                               for q in doc["problems"]] == [("trig", 1, "cos0", "Cos"),
                                                                            ("trig", 2, "sin0", "Sin")]
    # runtime: none: plans, tables and script are made, no coverage check, arena's runtime not compiled.
    path = proj / "example_firmware" / "arena.yaml"
    path.write_text(path.read_text().replace("  - mps2_an500\n", "  - name: mps2_an500\n    runtime: none\n"))
    (proj / "kernels").mkdir()
    (proj / "kernels" / "kernels.c").write_text(STUB_KERNELS)
    sconstruct = proj / "SConstruct"
    sconstruct.write_text(sconstruct.read_text().replace(
        'os.path.join(app, "main.c")]', 'os.path.join(app, "main.c"), "kernels/kernels.c"]'))
    q = scons(proj, "board=mps2_an500")
    assert q.returncode == 0, q.stdout + q.stderr
    doc = board_report.read(str(proj / "build" / "mps2_an500" / "arena_report.json")).to_json()
    assert doc["status"] == "ok" and doc["runtime"] == "none" and "trig" in [m["name"] for m in doc["models"]]
    assert list((proj / "build" / "tables").glob("trig-*/model_trig.c"))
    compiled = re.findall(r"^Compiling (\S+)", q.stdout, re.M)
    assert not any("/arena_runtime/" in c and "/example/" not in c for c in compiled), compiled
    if has_tool("arm-none-eabi-gcc"):
        assert f"build/common/{M7DP}/kernels/kernels.o" in compiled and (
            proj / "build" / "mps2_an500" / "firmware.elf").is_file()
        assert doc["stage"] == "linked"


def small_flash_board(proj: Path, length: str) -> None:
    """mps2_an500 with `length` of flash, through the manifest's board_dirs."""
    folder = proj / "example_firmware" / "myboards"
    folder.mkdir(exist_ok=True)
    text = (ROOT / "boards" / "mps2_an500.yaml").read_text()
    assert "flash:\n  origin: 0x00000000\n  length: 4M\n" in text
    (folder / "mps2_an500.yaml").write_text(text.replace("flash:\n  origin: 0x00000000\n  length: 4M\n",
                                                         f"flash:\n  origin: 0x00000000\n  length: {length}\n"))
    manifest = proj / "example_firmware" / "arena.yaml"
    if "board_dirs" not in manifest.read_text():
        manifest.write_text("board_dirs: [myboards]\n" + manifest.read_text())


def test_flash_overflow_fails_before_linking_then_at_the_link(tmp_path: Path) -> None:
    proj = copy_example(tmp_path / "p")
    small_flash_board(proj, "100K")  # autoencoder's weights alone (129,904 B) do not fit
    p = scons(proj, "board=mps2_an500")
    assert p.returncode == 1, p.stdout + p.stderr
    [line] = [ln for ln in p.stderr.splitlines() if ln.startswith("arena: mps2_an500:")]
    assert line.startswith("arena: mps2_an500: model autoencoder's weights need 129,904 B of flash (resnet8's "
                           "126,024 B do not fit either), FLASH has 102,400 B (over by 27,504 B, before any code)")
    assert not re.search(r"^(Compiling|Linking)", p.stdout, re.M), p.stdout
    doc = board_report.read(str(proj / "build" / "mps2_an500" / "arena_report.json")).to_json()
    assert doc["status"] == "over" and doc["problems"][0]["region"] == "FLASH"
    assert doc["problems"][0]["model"] == "autoencoder" and doc["problems"][0]["over_by"] == 27504
    small_flash_board(proj, "300K")  # the weights fit (290,698 B), with the tables and the runtime's code not
    q = scons(proj, "board=mps2_an500")
    assert q.returncode == 1, q.stdout + q.stderr
    [line] = [ln for ln in q.stderr.splitlines() if ln.startswith("arena: mps2_an500:")]
    assert re.match(r"arena: mps2_an500: models \S+ need 290,698 B of weights \+ [\d,]+ B of tables", line), line
    assert not re.search(r"^(Compiling|Linking)", q.stdout, re.M), q.stdout  # still before any compile
    [counted] = board_report.read(str(proj / "build" / "mps2_an500" / "arena_report.json")).to_json()["problems"]
    assert counted["kind"] == "flash" and counted["need"] > 290698 + 4096
    require_tool("arm-none-eabi-gcc")  # the plans' verdicts are checked; the link's needs the cross gcc
    # room for what the gate counts, not for the application's own code (startup, main, libc): the link says
    small_flash_board(proj, str(counted["need"] + 256))
    q = scons(proj, "board=mps2_an500")
    assert q.returncode == 1, q.stdout + q.stderr
    assert "region `FLASH' overflowed by" in q.stderr
    [line] = [ln for ln in q.stderr.splitlines() if ln.startswith("arena: mps2_an500:")]
    assert re.fullmatch(r"arena: mps2_an500: code, constants and weights overflow FLASH by [\d,]+ B "
                        r"\(flash [\d,]+ B, of which the weights take 290,698 B\)", line), line
    path = proj / "build" / "mps2_an500" / "arena_report.json"
    doc = board_report.read(str(path)).to_json()
    assert board_report.dumps(doc) == path.read_text()  # a failed link's report, typed: the same bytes
    assert doc["status"] == "over" and doc["problems"][0]["kind"] == "flash" and doc["problems"][0]["over_by"] > 0
    assert not (proj / "build" / "mps2_an500" / "firmware.elf").exists()


OWN_SCONSTRUCT = """\
import os
import arena_tool
env = Environment(tools=["arena"], toolpath=["site_scons/site_tools"])
env.Append(CCFLAGS=["-DAPP_FLAG=7"], CPPPATH=["inc"])
app = os.path.join(arena_tool.runtime_dir(), "example")
env.ArenaFirmware("example_firmware/arena.yaml", cpppath=[app],
                  sources=[os.path.join(app, "startup.c"), os.path.join(app, "main.c"), "a/util.c", "b/util.c"])
"""


def test_same_named_sources_and_user_ccflags(tmp_path: Path) -> None:
    """a/util.c and b/util.c get their own objects; CCFLAGS and CPPPATH appended to the env reach every compile."""
    require_tool("arm-none-eabi-gcc")
    proj = copy_example(tmp_path / "p")
    (proj / "SConstruct").write_text(OWN_SCONSTRUCT)
    for folder, fn in (("a", "util_a"), ("b", "util_b")):
        (proj / folder).mkdir()
        (proj / folder / "util.c").write_text(
            '#include "app_flag.h"\n#if APP_FLAG != 7\n#error "CCFLAGS did not reach the compile"\n#endif\n'
            f"int {fn}(void) {{ return APP_FLAG; }}\n")
    (proj / "inc").mkdir()
    (proj / "inc" / "app_flag.h").write_text("/* found through the env's CPPPATH */\n")
    p = scons(proj, "board=mps2_an500", "VERBOSE=1")
    assert p.returncode == 0, p.stdout + p.stderr
    objs = {f"build/common/{M7DP}/a/util.o", f"build/common/{M7DP}/b/util.o"}
    assert all((proj / o).is_file() for o in objs)
    compiles = [ln for ln in p.stdout.splitlines() if " -c " in ln]
    assert compiles and all("-DAPP_FLAG=7" in ln and "-Iinc" in ln for ln in compiles), compiles
    assert (proj / "build" / "mps2_an500" / "firmware.elf").is_file()
    # The ELF check disagreeing with the gate (here: a tampered board report, at the size and timestamp
    # SCons recorded, so that it is taken for the gate's own output) fails the ELF and says so in the
    # report (status error), deleting the ELF.
    gate = proj / "build" / "mps2_an500" / "arena_gate.json"
    text, st = gate.read_text(), gate.stat()
    doc = json.loads(text)
    tampered = board_report.dumps(dict(doc, arena_size=doc["arena_size"] + 4096))
    assert len(tampered) == len(text)
    gate.write_text(tampered)
    os.utime(gate, ns=(st.st_atime_ns, st.st_mtime_ns))
    (proj / "build" / "mps2_an500" / "firmware.elf").unlink()
    q = scons(proj, "board=mps2_an500")
    assert q.returncode == 1, q.stdout + q.stderr
    rep = board_report.read(str(proj / "build" / "mps2_an500" / "arena_report.json")).to_json()
    assert rep["status"] == "error" and rep["problems"][0]["kind"] == "elf"
    assert rep["problems"][0]["message"].startswith("arena: mps2_an500: ELF check failed: .arena is ")
    assert not (proj / "build" / "mps2_an500" / "firmware.elf").exists() and "FAILED: error" in q.stdout


def test_optimize_size_compiles_at_Os_and_the_report_says_so(tmp_path: Path) -> None:
    """optimize: size on one board: its compiles run at -Os into their own folder, its report
    states the level; the board beside it keeps the default -O2 and a report without the field."""
    require_tool("arm-none-eabi-gcc")
    proj = copy_example(tmp_path / "p")
    path = proj / "example_firmware" / "arena.yaml"
    path.write_text(path.read_text().replace("  - mps2_an500\n", "  - {name: mps2_an500, optimize: size}\n"))
    p = scons(proj, TWO, "VERBOSE=1")
    assert p.returncode == 0, p.stdout + p.stderr
    compiles = [ln for ln in p.stdout.splitlines() if " -c " in ln]
    small = [ln for ln in compiles if f"{M7DP}_Os/" in ln]
    assert small and all(" -Os " in ln and " -O2 " not in ln for ln in small)
    assert all(" -O2 " in ln for ln in compiles if f"/{M7SP}/" in ln)
    doc = json.loads((proj / "build" / "mps2_an500" / "arena_report.json").read_text())
    assert doc["options"] == {"optimize": "size"} and doc["stage"] == "linked"
    assert "options" not in json.loads((proj / "build" / "nucleo_f746" / "arena_report.json").read_text())
    assert "| optimize | size |" in (proj / "build" / "mps2_an500" / "arena_report.md").read_text()


def test_two_clones_share_one_cache_dir(tmp_path: Path) -> None:
    """The CI matrix recipe (docs/how-to/ci.md): cache=DIR (an SCons CacheDir) shared by two clones at
    different paths: the second plans and compiles nothing, every output is retrieved and
    byte-identical to the first clone's."""
    require_tool("arm-none-eabi-gcc")
    one, two = copy_example(tmp_path / "one"), copy_example(tmp_path / "clone two")
    cache = f"cache={tmp_path / 'cache'}"
    first = scons(one, "board=mps2_an500", cache)
    assert first.returncode == 0, first.stdout + first.stderr
    again = scons(two, "board=mps2_an500", cache)
    assert again.returncode == 0, again.stdout + again.stderr
    assert ACTION.findall(again.stdout) == [] and "Retrieved" in again.stdout, again.stdout
    made = {p.relative_to(one / "build"): p.read_bytes() for p in (one / "build").rglob("*")
            if p.is_file() and ".sconsign" not in p.name and not p.name.startswith(".arena_")
            and p.name != "firmware.map"}  # the link's by-product, not a target: not cached
    assert (Path("mps2_an500") / "firmware.elf" in made) == has_tool("arm-none-eabi-gcc") and len(made) > 20
    assert {rel: (two / "build" / rel).read_bytes() for rel in made} == made


@pytest.mark.slow
def test_the_own_project_recipe_takes_cache(tmp_path: Path) -> None:
    """The own-project recipe's SConstruct (no CacheDir call of its own) with ``cache=DIR``: the tool
    itself reads it, so the plans and tables go to the CacheDir (only the example's SConstruct took
    cache=: the CI recipe did not work in one's own project)."""
    import models

    snippets = [("the own-project recipe", 'import arena_tool\nenv = Environment(tools=["arena"], '
                 'toolpath=[arena_tool.site_tools_dir()])\nenv.ArenaFirmware("app/arena.yaml", '
                 'sources=["app/startup.c", "app/main.c"], cpppath=["app"])\n')]
    for i, (doc, text) in enumerate(snippets):
        proj = tmp_path / f"p{i}"
        (proj / "app" / "models").mkdir(parents=True)
        models.save(models.chain(), proj / "app" / "models" / "chain.onnx")
        (proj / "app" / "arena.yaml").write_text("defaults: {planner: greedy_size}\n"
                                                 "models:\n  - {name: chain, path: models/chain.onnx}\nboards: [mps2_an500]\n")
        (proj / "SConstruct").write_text(text)
        cache = tmp_path / f"cache{i}"
        p = scons(proj, "link=0", f"cache={cache}", "board=mps2_an500")
        assert p.returncode == 0, doc + "\n" + p.stdout + p.stderr
        cached = [f for f in cache.rglob("*") if f.is_file() and f.name != "config"]
        assert len(cached) >= 3, (doc, sorted(str(f) for f in cache.rglob("*")))  # a plan, tables, the gate
