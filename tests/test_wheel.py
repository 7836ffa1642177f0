"""The own-SConstruct recipe (docs/how-to/own-project.md), from a wheel installed into a fresh venv.

Builds the wheel from a copy of the source tree (``pip wheel . --no-deps
--no-build-isolation``), checks that it ships the C runtime and its example
firmware, installs it with ``--no-deps`` into a venv made with
``--system-site-packages`` (so the venv sees scons, onnx and the rest, but
imports arena_tool from the wheel, not this checkout), writes a project
outside the repository exactly as docs/how-to/own-project.md says (its own main.c, startup.c
and semihost.h copied from the installed package's example, its manifest, a
model), runs scons with the venv's python, checks that the ELF links and runs
it under QEMU (mps2_an500). The cross compiler and QEMU are conftest.require_tool's:
skipped where absent, a failure under ARENA_REQUIRE_TOOLS=1.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import ROOT, require_tool

SCONSTRUCT = """\
import arena_tool
env = Environment(tools=["arena"], toolpath=[arena_tool.site_tools_dir()])
env.ArenaFirmware("app/arena.yaml", sources=["app/startup.c", "app/main.c"], cpppath=["app"])
"""

MANIFEST = """\
models:
  - name: kws
    path: models/kws.onnx
    input_shapes: {input: [1, 1, 49, 10]}
  - name: kws_int8
    path: models/kws_int8.onnx
boards: [mps2_an500]
"""


def _can_build_wheels() -> bool:
    import setuptools

    major, minor = (int(x) for x in setuptools.__version__.split(".")[:2])
    return importlib.util.find_spec("wheel") is not None or (major, minor) >= (70, 1)


def _clean_env() -> dict[str, str]:
    env = dict(os.environ)
    for var in ("PYTHONPATH", "VERBOSE", "PYTHONHOME"):
        env.pop(var, None)
    return env


def _run(cmd: list[str], cwd: Path, timeout: int = 600) -> subprocess.CompletedProcess:
    p = subprocess.run(cmd, cwd=cwd, env=_clean_env(), capture_output=True, text=True, timeout=timeout)
    assert p.returncode == 0, f"{' '.join(cmd)}\n{p.stdout}\n{p.stderr}"
    return p


@pytest.mark.slow
def test_readme_recipe_links_and_runs_from_an_installed_wheel(tmp_path: Path) -> None:
    if not _can_build_wheels():
        if os.environ.get("ARENA_REQUIRE_TOOLS") == "1":
            pytest.fail("pip wheel --no-build-isolation needs the 'wheel' package with setuptools < 70.1")
        pytest.skip("pip wheel --no-build-isolation needs the 'wheel' package with setuptools < 70.1")
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    for name in ("arena_tool", "schemas", "site_scons", "boards"):
        shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    dist = tmp_path / "dist"
    _run([sys.executable, "-m", "pip", "wheel", ".", "--no-deps", "--no-build-isolation", "-q", "-w", str(dist)], src)
    [wheel] = dist.glob("arena_tool-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    runtime = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "arena_tool" / "runtime").rglob("*")
                     if p.is_file() and p.suffix in (".c", ".h"))
    assert runtime and set(runtime) <= names, sorted(set(runtime) - names)  # the runtime ships in the wheel
    assert {"arena_tool/runtime/example/main.c", "arena_tool/runtime/example/startup.c"} <= names

    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)], tmp_path)
    py = str(venv / "bin" / "python")
    _run([py, "-m", "pip", "install", "-q", "--no-deps", "--disable-pip-version-check", str(wheel)], tmp_path)
    where = _run([py, "-c", "import arena_tool; print(arena_tool.__file__); print(arena_tool.runtime_dir()); "
                            "print(arena_tool.site_tools_dir())"], tmp_path).stdout.split()
    assert all(w.startswith(str(venv)) for w in where), where  # the wheel's copy, not this checkout
    example = Path(where[1]) / "example"

    proj = tmp_path / "proj"
    (proj / "app" / "models").mkdir(parents=True)
    for name in ("main.c", "startup.c", "semihost.h", "fw_io.h"):  # "copy the package's example into app/"
        shutil.copy2(example / name, proj / "app" / name)
    for name in ("kws.onnx", "kws_int8.onnx"):
        shutil.copy2(ROOT / "example_firmware" / "models" / name, proj / "app" / "models" / name)
    (proj / "app" / "arena.yaml").write_text(MANIFEST)
    (proj / "SConstruct").write_text(SCONSTRUCT)

    require_tool("arm-none-eabi-gcc")
    p = _run([py, "-m", "SCons", "-Q", "board=mps2_an500", "VERBOSE=1"], proj)
    elf = proj / "build" / "mps2_an500" / "firmware.elf"
    assert elf.is_file(), p.stdout + p.stderr
    compiles = [ln for ln in p.stdout.splitlines() if " -c " in ln]
    assert any(f"{where[1]}/arena_runtime.c" in ln for ln in compiles), compiles  # the runtime from the wheel
    assert re.search(r"^  Flash: \[[= ]{10}\] +\d+\.\d% \(used [\d,]+ bytes from 4,194,304 bytes\)$", p.stdout, re.M)

    require_tool("qemu-system-arm")
    run = _run([py, "-m", "SCons", "-Q", "board=mps2_an500", "run"], proj)
    out = run.stdout + run.stderr
    assert "status kws 0" in out and "status kws_int8 0" in out, out[-3000:]
    assert (proj / "build" / "mps2_an500" / "run_report.json").is_file()
