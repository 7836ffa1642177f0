"""The SCons tool works from a project outside this repository, found through
arena_tool.site_tools_dir(), as a user's own SConstruct would load it (the
recipe of docs/how-to/own-project.md: the app's own main.c/startup.c copied from the package's
example; arena's runtime comes from the package). tests/test_wheel.py does the
same from a wheel installed into a fresh venv."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

import arena_tool
from conftest import ROOT, has_tool

SCONSTRUCT = """\
import arena_tool
env = Environment(tools=["arena"], toolpath=[arena_tool.site_tools_dir()])
env.ArenaFirmware("app/arena.yaml", sources=["app/startup.c", "app/main.c"], cpppath=["app"])
"""


def write_project(dest: Path) -> None:
    """The own-SConstruct recipe (docs/how-to/own-project.md): app/ holds the manifest, the models and the example's C files."""
    shutil.copytree(ROOT / "example_firmware", dest / "app", ignore=shutil.ignore_patterns("__pycache__"))
    example = Path(arena_tool.runtime_dir()) / "example"
    for name in ("main.c", "startup.c", "semihost.h", "fw_io.h"):
        shutil.copy2(example / name, dest / "app" / name)
    (dest / "SConstruct").write_text(SCONSTRUCT)


def test_tool_from_an_outside_project(tmp_path: Path) -> None:
    write_project(tmp_path)
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    have_gcc = has_tool("arm-none-eabi-gcc")
    r = subprocess.run([sys.executable, "-m", "SCons", "-Q", "board=mps2_an386"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    out = tmp_path / "build" / "mps2_an386"
    assert (out / "mps2_an386.ld").is_file() and (out / "arena_report.json").is_file()
    names = [m["name"] for m in yaml.safe_load((tmp_path / "app" / "arena.yaml").read_text())["models"]]
    assert sorted(p.name for p in (tmp_path / "build" / "tables").glob("*/model_*.h")) == sorted(
        f"model_{n}.h" for n in names)
    assert "arena: mps2_an386:" in r.stdout
    assert arena_tool.site_tools_dir() == str(ROOT / "site_scons" / "site_tools")
    if have_gcc:  # the recipe links as written: the runtime is compiled from the package
        assert (out / "firmware.elf").is_file() and "Flash: [" in r.stdout
        assert (tmp_path / "build" / "common" / "cortex-m4_fpv4-sp-d16_hard" / "app" / "main.o").is_file()
