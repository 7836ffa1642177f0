"""The CMake module (``arena_tool.cmake_dir()``): the example firmware configured with Debian's cmake and
arm-none-eabi-gcc, built, run under QEMU with the SCons build's outputs; a no-op rebuild runs nothing; an
edit to a model reruns generate; an over-budget gate fails the build with arena's one line; a
CubeMX-style vendor script with ``linker: fragment`` links. Every test here runs cmake (slow)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

import arena_tool
from arena_tool.run import qemu
from builders import copy_example, scons, set_budget
from conftest import require_tool

ROOT = Path(__file__).resolve().parent.parent

CMAKELISTS = """\
cmake_minimum_required(VERSION 3.20)
set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR arm)
set(CMAKE_C_COMPILER arm-none-eabi-gcc)
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)
project(example C)
list(APPEND CMAKE_MODULE_PATH "{cmake_dir}")
include(ArenaModels)
set(APP "{app}")
add_executable(firmware.elf ${{APP}}/startup.c ${{APP}}/main.c)
target_include_directories(firmware.elf PRIVATE ${{APP}})
target_compile_options(firmware.elf PRIVATE -Os)
arena_add_models(firmware.elf example_firmware/arena.yaml {board})
"""


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(ROOT))


def _cmake(proj: Path, board: str = "mps2_an500", cmakelists: str | None = None) -> Path:
    require_tool("cmake")
    require_tool("arm-none-eabi-gcc")
    app = os.path.join(arena_tool.runtime_dir(), "example")
    (proj / "CMakeLists.txt").write_text(cmakelists or CMAKELISTS.format(cmake_dir=arena_tool.cmake_dir(), app=app, board=board))
    build = proj / "cmake-build"
    import sys

    p = subprocess.run(["cmake", "-S", str(proj), "-B", str(build), f"-DARENA_PYTHON={sys.executable}"],
                       env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    return build


def _build(build: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["cmake", "--build", str(build), "-j2"], env=_env(), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=600)


def _outputs(text: str) -> list[str]:
    """What the firmware computed: every line but the cycle counts."""
    return [line for line in text.splitlines() if not line.startswith(("ticks ", "calibrate "))]


def test_cmake_builds_runs_like_scons_and_rebuilds_only_on_change(tmp_path: Path) -> None:
    require_tool("qemu-system-arm")
    proj = copy_example(tmp_path / "cmake")
    build = _cmake(proj)
    p = _build(build)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "arena: generating mps2_an500" in p.stdout
    elf = build / "firmware.elf"
    rc, out = qemu.run(str(elf), "mps2-an500", 120)
    assert rc == 0, out
    # the SCons build of the same example, its ELF under the same QEMU
    ref = copy_example(tmp_path / "scons")
    s = scons(ref, "board=mps2_an500")
    assert s.returncode == 0, s.stdout + s.stderr
    rc_ref, out_ref = qemu.run(str(ref / "build" / "mps2_an500" / "firmware.elf"), "mps2-an500", 120)
    assert rc_ref == 0 and _outputs(out) == _outputs(out_ref) and len(_outputs(out)) > 100
    # generate's outputs are SCons's, byte for byte (those that name no file of the build folder)
    for rel in ("mps2_an500/gen/arena_board.c", "mps2_an500/gen/arena_board.h", "mps2_an500/mps2_an500.ld"):
        assert (build / "arena" / rel).read_bytes() == (ref / "build" / rel).read_bytes(), rel
    # a no-op rebuild runs nothing
    again = _build(build)
    assert again.returncode == 0 and not re.search(r"arena: generating|Building C|Linking", again.stdout), again.stdout
    # a model touched (read through the depfile) reruns generate, which re-plans nothing and
    # rewrites no table: nothing recompiles (before: every table and arena_board.c), and the
    # next build runs nothing
    model = proj / "example_firmware" / "models" / "kws.onnx"
    model.write_bytes(model.read_bytes())  # newer than every output
    third = _build(build)
    assert third.returncode == 0 and "arena: generating mps2_an500" in third.stdout, third.stdout
    assert not re.search(r"Planning|Building C|Linking", third.stdout), third.stdout
    again = _build(build)
    assert again.returncode == 0 and not re.search(r"arena: generating|Building C|Linking", again.stdout), again.stdout


def test_over_budget_gate_fails_the_cmake_build_with_arenas_line(tmp_path: Path) -> None:
    proj = copy_example(tmp_path / "over")
    set_budget(proj, "mps2_an500", "16K")
    build = _cmake(proj)
    p = _build(build)
    assert p.returncode != 0
    # the board's summary (as on every build), then arena's one error line
    lines = [line for line in (p.stdout + p.stderr).splitlines() if line.startswith("arena: mps2_an500: ")]
    errors = [line for line in lines if "over by" in line and " need " in line]
    assert len(errors) == 1 and "budget 16,384 B" in errors[0] and lines[-1] == errors[0], p.stdout + p.stderr
    assert not (build / "firmware.elf").exists()


def test_a_cubemx_style_vendor_script_with_linker_fragment_links(tmp_path: Path) -> None:
    from elftools.elf.elffile import ELFFile

    from builders import H743_MEMORY, vendor_script

    proj = copy_example(tmp_path / "fragment")
    fw = proj / "example_firmware"
    (fw / "vendor").mkdir()
    (fw / "vendor" / "STM32H743ZITX_FLASH.ld").write_text(vendor_script(H743_MEMORY, "RAM_D1"))
    text = (fw / "arena.yaml").read_text()
    (fw / "arena.yaml").write_text(text[:text.index("\nboards:\n")] + """
boards:
  - name: nucleo_h743
    region: AXI_SRAM
    linker: fragment
    linker_script: vendor/STM32H743ZITX_FLASH.ld
    linker_regions: {AXI_SRAM: RAM_D1}
""")
    build = _cmake(proj, "nucleo_h743")
    p = _build(build)
    assert p.returncode == 0, p.stdout + p.stderr
    assert (build / "arena" / "nucleo_h743" / "arena_fragment.ld").is_file()
    assert not (build / "arena" / "nucleo_h743" / "nucleo_h743.ld").exists()
    with open(build / "firmware.elf", "rb") as f:
        arena = ELFFile(f).get_section_by_name(".arena")
        assert arena is not None and 0x24000000 <= arena["sh_addr"] < 0x24000000 + 512 * 1024
    # the vendor script is an input: an edit reruns generate
    script = fw / "vendor" / "STM32H743ZITX_FLASH.ld"
    script.write_text(script.read_text() + "\n/* edited */\n")
    again = _build(build)
    assert again.returncode == 0 and "arena: generating nucleo_h743" in again.stdout, again.stdout


def test_a_project_path_with_a_dollar_links(tmp_path: Path) -> None:
    """The link failed in a project folder named with '$': CMake escaped the -T script's path twice
    (make read '\\$$', Ninja '\\$$$$'); the script goes by name with its folder a link directory."""
    proj = copy_example(tmp_path / "a$b")
    build = _cmake(proj)
    p = _build(build)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert (build / "firmware.elf").exists()

