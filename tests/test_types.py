"""arena_tool/, the SCons tool (site_scons/) and bench/ type-check under mypy --strict (the
[tool.mypy] section of pyproject.toml).

Skipped where mypy is not installed (``pip install -e '.[test]'`` brings it), except
under ARENA_REQUIRE_TOOLS=1 (.ci/run), where that is a failure: CI never goes green
without the type check. mypy keeps its cache in .mypy_cache/, so a re-run takes a
second or two.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys


from conftest import ROOT, unavailable


def test_mypy_checks_the_package_the_scons_tool_and_bench() -> None:
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    assert config["strict"] is True and set(config["files"]) >= {"arena_tool", "site_scons", "bench"}


def test_arena_tool_type_checks_strict() -> None:
    if importlib.util.find_spec("mypy") is None:
        unavailable("mypy is not installed", "pip install -e '.[test]'")
    # no arguments: files, strictness and the per-module settings all come from pyproject.toml
    p = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, f"mypy found type errors (python3 -m mypy):\n{p.stdout}{p.stderr}"
