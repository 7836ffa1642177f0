"""TFLite Micro firmwares built from the shared TFLM tree (TFLM 90b983c2 with CMSIS-NN), run under
QEMU mps2-an500 and compared bit for bit with the host interpreter: ``arena-tool run
MODEL.tflite`` with reference and CMSIS-NN kernels, and the SCons build (``runtime: tflm`` with a
prebuilt library: the one the session built) under ``scons run``.

The libraries are built once per machine (``tflm_libraries``, in the machine's object cache:
a second session compiles nothing); skipped, saying so, without the shared tree, the
cross C++ compiler or QEMU. The full floor sweep (MLPerf Tiny, TFLM's examples) is
bench/tflm_firmware.py's.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from arena_tool import cli
from arena_tool.builder import tflm_lib
from arena_tool.run import tflm_firmware
from arena_tool.target import boards
from conftest import require_shared, require_tool
from shared_paths import SHARED

ROOT = Path(__file__).resolve().parent.parent
TREE = SHARED / "third_party" / "tflite-micro"
HELLO = SHARED / "models" / "tflm_examples" / "hello_world_int8.tflite"
OPS = ("FULLY_CONNECTED",)


@pytest.fixture(scope="module")
def tflm_libraries() -> dict[str, str]:
    """kernels -> the mps2_an500 library for hello_world's ops, in the machine's cache (where
    ``arena-tool run`` below finds it): built once per machine, the CMSIS-NN one compiling only
    the files that test CMSIS_NN (the rest are the reference library's objects)."""
    root = str(require_shared(TREE))
    require_shared(HELLO)
    for tool in ("arm-none-eabi-g++", "qemu-system-arm"):  # fails instead under ARENA_REQUIRE_TOOLS=1
        require_tool(tool)
    cpu = tuple(boards.load_board("mps2_an500").cpu.gcc_flags())
    libs = {}
    for kernels in ("reference", "cmsis_nn"):
        spec = tflm_lib.LibrarySpec(root, kernels, OPS, cpu)
        libs[kernels] = tflm_lib.build(spec, tflm_lib.library_dir(spec), 2).path
    return libs


@pytest.mark.parametrize("option,kernels", [("reference", "reference"), ("cmsis_nn_dsp", "cmsis_nn")])
def test_run_is_bit_identical_to_the_host_interpreter(option: str, kernels: str, tflm_libraries: dict[str, str],
                                                       tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = tmp_path / "run.json"
    rc = cli.main(["run", str(HELLO), "--board", "mps2_an500", "--tflm", str(TREE), "--kernels", option,
                   "--json", str(report)])
    out = capsys.readouterr().out
    assert rc == 0, out
    doc = json.loads(report.read_text())
    assert doc["result"] == "match" and all(o["bit_identical"] for o in doc["outputs"])
    assert doc["head"] == 32 and doc["tail"] > 0 and doc["tensor_arena_size"] == (32 + doc["tail"] + 15) // 16 * 16
    assert 0 < doc["used"] <= doc["tensor_arena_size"] and doc["instructions"] > 0 and doc["flash"] > 0
    assert f"({kernels} kernels)" in out and "bit-identical to TFLM's host interpreter" in out
    assert "match: every output is bit-identical" in out


def test_kernels_the_core_does_not_run_are_refused(tflm_libraries: dict[str, str],
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["run", str(HELLO), "--board", "mps2_an500", "--tflm", str(TREE), "--kernels", "cmsis_nn_mve"]) == 2
    assert "cortex-m7 runs cmsis_nn_dsp" in capsys.readouterr().err


def test_a_second_user_of_a_library_compiles_nothing(tflm_libraries: dict[str, str], tmp_path: Path) -> None:
    """Every object of a library is the machine's object cache's: the same library built again
    elsewhere (another project's build/common/, arena-tool run's folder) runs no compiler, and
    is the same archive."""
    spec = tflm_lib.LibrarySpec(str(TREE), "reference", OPS, tuple(boards.load_board("mps2_an500").cpu.gcc_flags()))
    again = tflm_lib.build(spec, str(tmp_path / "elsewhere"), 2)
    assert again.compiles == 0
    assert Path(again.path).read_bytes() == Path(tflm_libraries["reference"]).read_bytes()


SCONSTRUCT = """import os
env = Environment(tools=["arena"])
env.Decider("content")
env.SConsignFile("build/.sconsign")
import arena_tool
app = os.path.join(arena_tool.runtime_dir(), "example")
env.ArenaFirmware("fw/arena.yaml", sources=[os.path.join(app, "startup.c"), os.path.join(app, "main.c")],
                  cpppath=[app])
"""


def test_scons_builds_and_runs_the_tflm_firmware(tflm_libraries: dict[str, str], tmp_path: Path) -> None:
    proj = tmp_path / "p"
    (proj / "fw").mkdir(parents=True)
    shutil.copytree(ROOT / "site_scons", proj / "site_scons", ignore=shutil.ignore_patterns("__pycache__"))
    (proj / "SConstruct").write_text(SCONSTRUCT)
    shutil.copy2(HELLO, proj / "fw" / "hw.tflite")
    (proj / "fw" / "arena.yaml").write_text(
        f"runtime: tflm\ntflm: {{library: {tflm_libraries['reference']}, include: [{TREE}]}}\n"
        "models:\n  - {name: hw, path: hw.tflite}\nboards: [mps2_an500]\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.run([sys.executable, "-m", "SCons", "-Q", "board=mps2_an500", "run"], cwd=proj, env=env,
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    b = proj / "build" / "mps2_an500"
    table = (b / "gen" / "arena_tflm.cc").read_text()
    assert table.count("hw_resolver.AddFullyConnected()") == 1 and table.count("_resolver.Add") == 1
    alloc = json.loads(next((proj / "build" / "tables").glob("hw-*/hw.tflm.json")).read_text())
    assert f"tensor_arena + TENSOR_ARENA_BASE_HW, {alloc['tensor_arena_size']}u" in table  # the plan's size
    assert "main.o" in p.stdout and "arena_runtime/example/main.o" not in p.stdout  # tflm/main.cc, not main.c
    assert "status hw 0" in p.stdout and "output StatefulPartitionedCall:0 int8 1" in p.stdout
    assert "run: mps2_an500: hw: not compared here: runtime tflm (arena-tool run fw/hw.tflite --board mps2_an500" \
        in p.stdout, p.stdout  # every run line says what it compared, or why not (issue 36, defect 4)
    run = json.loads((b / "run_report.json").read_text())
    assert run["exit_status"] == 0 and run["models"][0]["instructions"] > 0
    assert run["models"][0]["tables_flash"] == alloc["planned_bytes"]  # the planned model as a C array
    noop = subprocess.run([sys.executable, "-m", "SCons", "-Q", "board=mps2_an500"], cwd=proj, env=env,
                          capture_output=True, text=True, timeout=300)
    assert noop.returncode == 0 and "Compiling" not in noop.stdout and "Linking" not in noop.stdout, noop.stdout


def test_cmsis_nn_lstm_struct_sizes_are_the_rules(tflm_libraries: dict[str, str]) -> None:
    """tflm_persistent's sizeof(OpDataLSTM) and sizeof(cmsis_nn_lstm_params) are the ones
    arm-none-eabi-g++ lays out for the target (the host's 64-bit layout differs)."""
    from arena_tool.model import tflm_persistent

    downloads = TREE / "tensorflow" / "lite" / "micro" / "tools" / "make" / "downloads"
    src = ('#include "tensorflow/lite/micro/kernels/lstm_shared.h"\n#include "Include/arm_nn_types.h"\n'
           f"static_assert(sizeof(tflite::OpDataLSTM) == {tflm_persistent.LSTM_OPDATA_REFERENCE}, \"OpDataLSTM\");\n"
           f"static_assert(sizeof(cmsis_nn_lstm_params) == {tflm_persistent.LSTM_PARAMS_CMSIS_NN}, \"params\");\n")
    done = subprocess.run(["arm-none-eabi-g++", "-mcpu=cortex-m7", "-mthumb", "-std=c++17", "-fsyntax-only", "-x",
                           "c++", "-", f"-I{TREE}", f"-I{downloads / 'cmsis_nn'}",
                           f"-I{downloads / 'flatbuffers' / 'include'}", f"-I{downloads / 'gemmlowp'}"],
                          input=src, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
