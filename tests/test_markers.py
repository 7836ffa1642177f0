"""The `slow` marker (tests/conftest.py) is honest: every test that builds or runs firmware is
marked, so ``python3 -m pytest -q -m "not slow"`` is the fast loop, and no rule names a test,
fixture, module or model that no longer exists.

Three checks: conftest's run-time guard (an unmarked test that starts a compiler, QEMU, SCons,
chromium or pip fails) works, on a throwaway project in a subprocess; every test function whose
source (its body, the module's helpers it calls, the module's fixtures it takes) calls the
firmware builders, QEMU or a build tool is marked slow; the rules' names are all real.
"""

from __future__ import annotations

import ast
import functools
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import conftest
import quantized

TESTS = Path(__file__).resolve().parent


# ---------------------------------------------------------------- which subprocesses are builds

@pytest.mark.parametrize("argv, tool", [
    (["gcc", "-c", "x.c"], "gcc"),
    (["/usr/bin/arm-none-eabi-gcc", "-mcpu=cortex-m4"], "arm-none-eabi-gcc"),
    (["arm-none-eabi-size", "-A", "fw.elf"], "arm-none-eabi-size"),
    (["qemu-system-arm", "-M", "mps2-an500"], "qemu-system-arm"),
    ([sys.executable, "-m", "SCons", "-Q"], "python -m SCons"),
    ([sys.executable, "-m", "pip", "wheel", "."], "python -m pip"),
    (["/usr/bin/chromium", "--headless=new"], "chromium"),
    ("gcc -E x.c", "gcc"),
    (["/bin/sh", "-c", "scons board=all"], "scons"),
    ([sys.executable, "-m", "arena_tool", "plan", "m.onnx"], None),
    ([sys.executable, "-c", "print(1)"], None),
    ([sys.executable, "-m", "mypy"], None),
    (["git", "status"], None),
    ([b"/tmp/fw_host"], None),
])
def test_build_tool_names_compilers_qemu_scons_chromium_pip(argv: object, tool: str | None) -> None:
    assert conftest.build_tool(argv) == tool


# ---------------------------------------------------------------- the guard, on a throwaway project

GUARDED = '''
import os, subprocess, sys
import pytest

def fake_gcc():
    subprocess.run([os.environ["FAKE_GCC"], "--version"], check=True)

@pytest.fixture(scope="module")
def built():
    fake_gcc()

def test_unmarked_build():
    fake_gcc()

@pytest.mark.slow
def test_marked_build():
    fake_gcc()

def test_fixture_build(built):
    pass

def test_python_subprocess_is_not_a_build():
    subprocess.run([sys.executable, "-c", "pass"], check=True)
'''


def _pytest(project: Path, *args: str) -> str:
    env = {**os.environ, "FAKE_GCC": str(project / "bin" / "gcc"), "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("PYTEST_ADDOPTS", None)
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args], cwd=project,
                       env=env, capture_output=True, text=True, timeout=120)
    return p.stdout + p.stderr


def test_guard_fails_unmarked_builds_and_lets_marked_ones_build(tmp_path: Path) -> None:
    shutil.copy(TESTS / "conftest.py", tmp_path / "conftest.py")
    shutil.copy(TESTS / "shared_paths.py", tmp_path / "shared_paths.py")  # conftest imports it
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    slow: builds\n")
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "gcc").write_text("#!/bin/sh\nexit 0\n")
    (tmp_path / "bin" / "gcc").chmod(0o755)
    (tmp_path / "test_guarded.py").write_text(GUARDED)
    # a module conftest's SLOW_MODULES names: marked by the rule, so the guard lets it build (were
    # the rules applied after -m deselects, the fast loop would run the builds and the guard fail them)
    (tmp_path / "test_wheel.py").write_text(textwrap.dedent('''
        import os, subprocess
        def test_builds_in_a_slow_module():
            subprocess.run([os.environ["FAKE_GCC"]], check=True)
        '''))
    out = _pytest(tmp_path, "-rfE")
    assert "1 failed, 3 passed, 1 error" in out, out
    assert "test_unmarked_build ran gcc (in its call) but is not marked slow" in out, out
    assert "test_fixture_build ran gcc (in its setup) but is not marked slow" in out, out


# ---------------------------------------------------------------- the test files' source

# What building or running firmware looks like in a test's source: these helpers' calls...
BUILD_CALLS = {"fwbuild.build_host", "fwbuild.build_elf", "firmware.build_host", "firmware.build_elf", "firmware.board_firmware",
               "firmware.run", "qemu.run", "build_steps.validate_firmware", "build_steps.run_validate", "validate.Qemu"}
# ...or one of these strings as an argument (subprocess.run([...]), require_tool(...)).
BUILD_WORDS = {"SCons", "scons", "gcc", "arm-none-eabi-gcc", "qemu-system-arm", "chromium"}


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ""


def _tool_names(tree: ast.Module) -> set[str]:
    """Module-level names bound to a build tool: ``GCC = shutil.which("arm-none-eabi-gcc")``."""
    return {t.id for n in tree.body if isinstance(n, ast.Assign)
            for t in n.targets if isinstance(t, ast.Name)
            if any(isinstance(c, ast.Constant) and c.value in BUILD_WORDS for c in ast.walk(n.value))}


def _builds_directly(fn: ast.FunctionDef, tools: set[str]) -> bool:
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and node.id in tools:
            return True
        if not isinstance(node, ast.Call):
            continue
        if _dotted(node.func) in BUILD_CALLS:
            return True
        args = [*node.args, *(k.value for k in node.keywords)]
        args += [e for a in args if isinstance(a, (ast.List, ast.Tuple)) for e in a.elts]
        if any(isinstance(a, ast.Constant) and a.value in BUILD_WORDS for a in args):
            return True
    return False


def _calls(fn: ast.FunctionDef) -> set[str]:
    return {n.func.id for n in ast.walk(fn) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}


def _is_fixture(fn: ast.FunctionDef) -> bool:
    return any("fixture" in ast.unparse(d) for d in fn.decorator_list)


def _marked_slow(fn: ast.FunctionDef) -> bool:
    return any(ast.unparse(d).startswith(("pytest.mark.slow", "slow")) for d in fn.decorator_list)


@functools.cache
def _parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), str(path))


def _module_functions(path: Path) -> dict[str, ast.FunctionDef]:
    return {n.name: n for n in _parse(path).body if isinstance(n, ast.FunctionDef)}


def _module(path: Path) -> tuple[dict[str, tuple[Path, ast.FunctionDef]], set[str]]:
    """The module's functions, with those it imports from the other test modules
    (``from test_scons import scons``), each with its file; and its tool names."""
    tree = _parse(path)
    defs = {n.name: (path, n) for n in tree.body if isinstance(n, ast.FunctionDef)}
    for n in tree.body:
        if isinstance(n, ast.ImportFrom) and n.module and (TESTS / f"{n.module}.py").is_file() and n.level == 0:
            theirs = _module_functions(TESTS / f"{n.module}.py")
            defs.update({a.asname or a.name: (TESTS / f"{n.module}.py", theirs[a.name])
                         for a in n.names if a.name in theirs and (a.asname or a.name) not in defs})
    return defs, _tool_names(tree)


def _test_modules() -> list[Path]:
    """Every test module but this one (whose source is full of the words it looks for)."""
    return sorted(p for p in TESTS.rglob("test_*.py") if p.name != Path(__file__).name)


def _building_tests(path: Path) -> dict[str, str]:
    """{test function: why it builds} of one test module, through its helpers and fixtures."""
    defs, tools = _module(path)
    tools_of = {path: tools}
    memo: dict[str, str | None] = {}

    def why(name: str, seen: frozenset[str] = frozenset()) -> str | None:
        if name in memo:
            return memo[name]
        where, fn = defs[name]
        if where not in tools_of:
            tools_of[where] = _module(where)[1]
        reason = "its body" if _builds_directly(fn, tools_of[where]) else None
        deps = [(d, "helper") for d in sorted(_calls(fn)) if d in defs]
        deps += [(a.arg, "fixture") for a in fn.args.args if a.arg in defs and _is_fixture(defs[a.arg][1])]
        for dep, kind in deps:
            if reason is None and dep not in seen and why(dep, seen | {name}) is not None:
                reason = f"{kind} {dep}"
        memo[name] = reason
        return reason

    return {n: r for n, (where, _) in defs.items() if where == path and n.startswith("test_") and (r := why(n))}


def _slow_by_rule(path: Path, fn: ast.FunctionDef) -> bool:
    module = path.name
    if f"{module}::{fn.name}" in conftest.FAST_TESTS:
        return _marked_slow(fn)
    return (_marked_slow(fn) or module in conftest.SLOW_MODULES or f"{module}::{fn.name}" in conftest.SLOW_TESTS
            or any(f"{module}::{a.arg}" in conftest.SLOW_FIXTURES for a in fn.args.args))


def test_tests_that_build_or_run_firmware_are_marked_slow() -> None:
    unmarked = []
    modules = 0
    for path in _test_modules():
        building = _building_tests(path)
        modules += bool(building)
        defs = _module_functions(path)
        unmarked += [f"{path.name}::{name} ({why})" for name, why in building.items()
                     if not _slow_by_rule(path, defs[name])]
    assert modules >= 15, modules  # the analysis sees the firmware tests at all
    assert not unmarked, "build or run firmware but are not marked slow (tests/conftest.py):\n" + "\n".join(unmarked)


def test_every_rule_names_what_exists() -> None:
    paths = {p.name: p for p in _test_modules()}
    stale = [f"SLOW_MODULES: {m}" for m in conftest.SLOW_MODULES if m not in paths]
    for kind, entries in (("SLOW_TESTS", conftest.SLOW_TESTS), ("FAST_TESTS", conftest.FAST_TESTS),
                          ("SLOW_FIXTURES", conftest.SLOW_FIXTURES)):
        for entry in entries:
            module, name = entry.split("::")
            fn = _module_functions(paths[module]).get(name) if module in paths else None
            if fn is None or _is_fixture(fn) != (kind == "SLOW_FIXTURES"):
                stale.append(f"{kind}: {entry}")
    models = {p.stem.removeprefix("light_") for p in quantized.float_models()}
    for module, names in conftest.SLOW_MODELS.items():
        stale += [f"SLOW_MODELS: {module} {n}" for n in names - models] + [f"SLOW_MODELS: {module}"] * (module not in paths)
    assert not stale, "conftest.py's slow rules name what no longer exists:\n" + "\n".join(stale)
