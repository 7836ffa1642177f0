"""The SCons tool works from a project outside this repository, found through
arena_tool.site_tools_dir(), as a user's own SConstruct would load it."""

from __future__ import annotations

import shutil
import subprocess
import sys

import yaml

import arena_tool
from conftest import ROOT

SCONSTRUCT = """\
import arena_tool
env = Environment(tools=["arena"], toolpath=[arena_tool.site_tools_dir()])
env.ArenaFirmware("app/arena.yaml", sources=["app/startup.c", "app/main.c"], cpppath=["app"])
"""


def test_tool_from_an_outside_project(tmp_path):
    shutil.copytree(ROOT / "example_firmware", tmp_path / "app")
    (tmp_path / "SConstruct").write_text(SCONSTRUCT)
    r = subprocess.run([sys.executable, "-m", "SCons", "-Q", "board=mps2_an386", "link=0"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    out = tmp_path / "build" / "mps2_an386"
    assert (out / "mps2_an386.ld").is_file() and (out / "arena_report.json").is_file()
    names = [m["name"] for m in yaml.safe_load((tmp_path / "app" / "arena.yaml").read_text())["models"]]
    assert sorted(p.name for p in (out / "gen").glob("model_*.h")) == sorted(f"model_{n}.h" for n in names)
    assert "arena: mps2_an386:" in r.stdout
    assert arena_tool.site_tools_dir() == str(ROOT / "site_scons" / "site_tools")
