"""A board whose core the installed cross gcc cannot compile (cortex-m85 before GCC 13) is refused
in one line naming the gcc it needs, before anything is planned (target/toolchain.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import require_tool

from builders import copy_example, scons
from arena_tool.core.errors import ArenaError
from arena_tool.target import toolchain

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_the_installed_gcc_decides_which_cores_build() -> None:
    gcc = require_tool("arm-none-eabi-gcc")
    version = toolchain.gcc_version(gcc)
    assert version is not None and version[0].isdigit()
    toolchain.check("an547", "cortex-m55", "", gcc)  # GCC 10 knows it; bookworm ships 12
    toolchain.check("an386", "cortex-m4", "", "no-such-gcc")  # an older core: never asked
    if int(version.split(".")[0]) >= 13:
        toolchain.check("m85", "cortex-m85", "", gcc)
        return
    with pytest.raises(ArenaError) as info:
        toolchain.check("m85", "cortex-m85", "b/m85.yaml", gcc)
    text = info.value.render()
    assert "\n" not in text and "cortex-m85 needs arm-none-eabi-gcc 13 or newer" in text and version in text


@pytest.mark.slow
def test_scons_refuses_the_board_before_planning(tmp_path: Path) -> None:
    gcc = require_tool("arm-none-eabi-gcc")
    version = toolchain.gcc_version(gcc) or "0"
    if int(version.split(".")[0]) >= 13:
        pytest.skip(f"arm-none-eabi-gcc {version} compiles cortex-m85")
    proj = copy_example(tmp_path / "p")
    (proj / "myboards").mkdir()
    an547 = (ROOT / "boards" / "mps3_an547.yaml").read_text()
    (proj / "myboards" / "m85.yaml").write_text(an547.replace("name: mps3_an547", "name: m85")
                                                .replace("core: cortex-m55", "core: cortex-m85"))
    manifest = proj / "example_firmware" / "arena.yaml"
    manifest.write_text(manifest.read_text().replace("boards:\n", "board_dirs: [../myboards]\nboards:\n  - m85\n", 1))
    p = scons(proj, "board=m85")
    assert p.returncode == 2, p.stdout + p.stderr
    assert p.stderr.strip().splitlines() == [
        f"myboards/m85.yaml: error: cpu.core: board m85: core cortex-m85 needs arm-none-eabi-gcc 13 or newer; "
        f"{gcc} is {version} (hint: install Arm GNU Toolchain 13 or newer (gcc_prefix= names it), or plan only "
        f"(link=0))"], p.stderr
    assert not (proj / "build" / "plans").exists() and "Planning" not in p.stdout
    q = scons(proj, "board=m85", "link=0")  # planning alone needs no compiler
    assert q.returncode == 0, q.stdout + q.stderr
