"""runtime: tflm in the SCons build: a .tflite model planned, written as TFLM's offline plan and
emitted as a C array, TFLM's tensor_arena sized head + persistent tail, and the linker script.

The small model is test_tflite's chain model (built with the object API); the link runs when
arm-none-eabi-gcc is on PATH, with a main.c that only references the model array and the arena
(the firmware brings TFLite Micro: that is its sources' business). The MLPerf Tiny VWW case
skips where ../shared/models/mlperf_tiny is absent.
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

from arena_tool.builder import board_report
from conftest import absent, has_tool
from tflite_models import MLPERF, chain_model
from tflite_ops import Model

ROOT = Path(__file__).resolve().parent.parent
ACTION = re.compile(r"^(Planning|Checking|Generating|Compiling|Linking) ", re.M)

SCONSTRUCT = """import os
env = Environment(tools=["arena"])
env.Decider("content")
env.SConsignFile("build/.sconsign")
import arena_tool
app = os.path.join(arena_tool.runtime_dir(), "example")
env.ArenaFirmware("fw/arena.yaml", sources=[os.path.join(app, "startup.c"), "fw/main.c"])
"""
MAIN_C = """#include <stdint.h>
extern const unsigned char chain_tflite[];
extern uint8_t tensor_arena[];
int main(void) { return (chain_tflite[4] == 'T') + tensor_arena[0]; }
"""
MANIFEST = """runtime: {runtime}
models:
  - name: chain
    path: chain.tflite
boards:
  - name: nucleo_f746
    budget: {budget}
  - mps2_an500
"""


def project(dest: Path, runtime: str = "tflm", budget: str = "100%") -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copytree(ROOT / "site_scons", dest / "site_scons", ignore=shutil.ignore_patterns("__pycache__"))
    (dest / "SConstruct").write_text(SCONSTRUCT)
    (dest / "fw").mkdir()
    (dest / "fw" / "chain.tflite").write_bytes(chain_model())
    (dest / "fw" / "main.c").write_text(MAIN_C)
    (dest / "fw" / "arena.yaml").write_text(MANIFEST.format(runtime=runtime, budget=budget))
    return dest


def scons(cwd: Path, *args: str, seed: str = "0") -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONHASHSEED=seed)
    env.pop("VERBOSE", None)
    return subprocess.run([sys.executable, "-m", "SCons", "-Q", *args], cwd=cwd, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)


def generated(build: Path) -> dict[str, bytes]:
    """Every arena output (not objects, ELF, map or SCons's own files), by path."""
    keep = (".json", ".c", ".h", ".ld", ".tflite")
    return {str(p.relative_to(build)): p.read_bytes() for p in sorted(build.rglob("*"))
            if p.is_file() and p.name.endswith(keep) and not p.name.startswith(".")}


def test_tflm_board_builds_model_array_tensor_arena_and_script(tmp_path: Path) -> None:
    proj = project(tmp_path / "a")
    p = scons(proj)
    assert p.returncode == 0, p.stdout + p.stderr
    b = proj / "build"
    tables = next((b / "tables").iterdir())
    alloc = json.loads((tables / "chain.tflm.json").read_text())
    plan = json.loads(next((b / "plans").glob("chain-*.plan.json")).read_text())
    head, tail = alloc["head"], alloc["tail"]
    size = (head + tail + 15) // 16 * 16
    assert head == plan["arena_size"] and tail > 0 and alloc["tensor_arena_size"] == size
    planned = (tables / "chain.planned.tflite").read_bytes()
    assert planned[4:8] == b"TFL3" and b"OfflineMemoryAllocation" in planned

    h = (tables / "model_chain.h").read_text()
    assert f"#define CHAIN_HEAD_SIZE {head}u" in h and f"#define CHAIN_TENSOR_ARENA_SIZE {size}u" in h
    assert f"extern const unsigned char chain_tflite[{len(planned)}];" in h
    c = (tables / "model_chain.c").read_text()
    assert f"__attribute__((aligned(16))) const unsigned char chain_tflite[{len(planned)}] = {{" in c
    assert f"const unsigned int chain_tflite_len = {len(planned)}u;" in c
    arena_c = (b / "nucleo_f746" / "gen" / "tflm_arena.c").read_text()
    assert f'__attribute__((section(".tensor_arena"), aligned(16))) uint8_t tensor_arena[{size}];' in arena_c
    assert f"#define TENSOR_ARENA_SIZE {size}u" in (b / "nucleo_f746" / "gen" / "tflm_arena.h").read_text()
    assert not (b / "nucleo_f746" / "gen" / "arena_board.c").exists()
    ld = (b / "nucleo_f746" / "nucleo_f746.ld").read_text()
    assert "KEEP(*(.tensor_arena .tensor_arena.*))" in ld and ".arena (NOLOAD) : ALIGN(16)" in ld
    assert "} > DTCM" in ld

    for board in ("nucleo_f746", "mps2_an500"):
        text = (b / board / "arena_report.json").read_text()
        assert board_report.dumps(board_report.read(str(b / board / "arena_report.json")).to_json()) == text  # typed, same bytes
        rep = json.loads(text)
        assert rep["runtime"] == "tflm" and "CMSIS-NN" in rep["tflm_note"]
        m = rep["models"][0]
        assert (m["head"], m["tail"], m["arena_size"]) == (head, tail, size) and rep["arena_size"] == size
        assert m["weights_bytes"] == len(planned)  # the C array is the whole planned model
    assert f"tflm chain: tensor_arena {size:,} B = head {head:,} B + tail {tail:,} B" in p.stdout
    assert "runtime tflm" in p.stdout and "CMSIS-NN" in p.stdout
    assert "arena_runtime.o" not in p.stdout  # arena's runtime is not compiled

    if has_tool("arm-none-eabi-gcc"):
        elf = b / "nucleo_f746" / "firmware.elf"
        assert elf.is_file() and json.loads((b / "nucleo_f746" / "arena_report.json").read_text())["stage"] == "linked"
        nm = subprocess.run(["arm-none-eabi-nm", "-S", str(elf)], capture_output=True, text=True).stdout
        sym = {ln.split()[-1]: ln.split() for ln in nm.splitlines() if len(ln.split()) == 4}
        assert int(sym["chain_tflite"][0], 16) % 16 == 0 and sym["chain_tflite"][2] in "rR"  # const: flash
        assert int(sym["tensor_arena"][0], 16) == 0x20000000 and int(sym["tensor_arena"][1], 16) == size  # DTCM

    noop = scons(proj)
    assert noop.returncode == 0 and not ACTION.findall(noop.stdout), noop.stdout
    other = project(tmp_path / "b")
    q = scons(other, "link=0", seed="1")
    assert q.returncode == 0, q.stdout + q.stderr
    first = {k: v for k, v in generated(b).items() if "firmware" not in k and not k.endswith("arena_report.json")}
    second = {k: v for k, v in generated(other / "build").items() if not k.endswith("arena_report.json")}
    assert first == second  # byte-identical outputs for the same inputs


def test_budget_counts_head_and_tail(tmp_path: Path) -> None:
    proj = project(tmp_path, budget="1K")  # the chain's head is 192 B: only the tail puts it over
    p = scons(proj, "board=nucleo_f746", "link=0")
    assert p.returncode == 1, p.stdout + p.stderr
    assert "arena: nucleo_f746: model chain needs 1,376 B in DTCM, budget 1,024 B" in p.stderr
    rep = json.loads((proj / "build" / "nucleo_f746" / "arena_report.json").read_text())
    assert rep["status"] == "over" and rep["models"][0]["head"] == 192
    assert not (proj / "build" / "nucleo_f746" / "gen" / "tflm_arena.c").exists()


def test_a_float_tflite_on_runtime_arena_plans(tmp_path: Path) -> None:
    """runtime: arena lowers a float32 .tflite for arena's runtime too (tests/run/test_tflite_arena.py
    runs its kernels against TFLite Micro): the chain plans, nothing refused."""
    proj = project(tmp_path, runtime="arena")
    p = scons(proj, "board=nucleo_f746", "link=0")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "cannot run" not in p.stderr
    rep = json.loads((proj / "build" / "nucleo_f746" / "arena_report.json").read_text())
    assert rep["status"] == "ok" and [m["name"] for m in rep["models"]] == ["chain"]


def test_a_tflite_op_without_a_kernel_on_runtime_arena_is_refused_one_line_per_op(tmp_path: Path) -> None:
    """The ops arena's runtime has no kernel for are refused before anything is compiled, one line each."""
    proj = project(tmp_path, runtime="arena")
    m = Model()
    x, y, z = (m.tensor(n, "INT8", [1, 8], scale=[0.1], zp=[0]) for n in ("x", "y", "z"))
    m.op("EXP", [x], [y])
    m.op("RSQRT", [y], [z])
    (proj / "fw" / "chain.tflite").write_bytes(m.pack([x], [z]))
    p = scons(proj, "board=nucleo_f746", "link=0")
    assert p.returncode == 1, p.stdout + p.stderr
    lines = [ln for ln in p.stderr.splitlines() if "cannot run" in ln]
    assert lines == [f"arena: nucleo_f746: model chain: op {k} '{y}' ({op}) cannot run on arena's runtime: the runtime "
                     "has no kernel for this op" for k, y, op in ((0, "y", "EXP"), (1, "z", "RSQRT"))], p.stderr
    rep = json.loads((proj / "build" / "nucleo_f746" / "arena_report.json").read_text())
    assert rep["status"] == "unsupported" and [m["name"] for m in rep["models"]] == ["chain"]
    assert not list((proj / "build").rglob("*.o"))


VWW = MLPERF / "visual_wake_words__vww_96_int8.tflite"


@pytest.mark.skipif(absent(VWW), reason=f"{VWW} is absent (set ARENA_SHARED)")
def test_mlperf_vww_int8_on_tflm(tmp_path: Path) -> None:
    proj = project(tmp_path)
    shutil.copy2(VWW, proj / "fw" / "vww.tflite")
    (proj / "fw" / "arena.yaml").write_text("runtime: tflm\ndefaults: {time_limit: 5}\nmodels:\n"
                                            "  - name: vww\n    path: vww.tflite\nboards: [nucleo_h743]\n")
    p = scons(proj, "link=0")
    assert p.returncode == 0, p.stdout + p.stderr
    rep = json.loads((proj / "build" / "nucleo_h743" / "arena_report.json").read_text())
    m = rep["models"][0]
    assert m["head"] <= 73_728 and m["tail"] > 0 and m["arena_size"] == (m["head"] + m["tail"] + 15) // 16 * 16
    h = next((proj / "build" / "tables").glob("vww-*/model_vww.h")).read_text()
    assert f"#define VWW_TENSOR_ARENA_SIZE {m['arena_size']}u" in h and f"#define VWW_HEAD_SIZE {m['head']}u" in h
