"""The documentation (docs/): Sphinx builds it with every warning an error, and its reference pages
are generated from the sources of truth (the JSON Schemas, the CLI's parser, arena_model.h)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from builders import copy_example
from conftest import ROOT, require_shared, require_tool, run_dir, unavailable
from shared_paths import MLPERF, TFLM_EXAMPLES

DOCS = ROOT / "docs"
sys.path.insert(0, str(DOCS / "_ext"))

import arena_reference  # noqa: E402


@pytest.fixture(scope="session")
def built_docs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """docs/ built once as HTML, -W: a warning (a broken link, a bad reference) fails the build."""
    try:
        import myst_parser  # noqa: F401
        import sphinx  # noqa: F401
    except ImportError:
        unavailable("sphinx or myst-parser is not installed", "pip install -e '.[test]' (.ci/setup)")
    out = tmp_path_factory.mktemp("docs_html")
    r = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
                        str(DOCS), str(out)], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, f"sphinx-build -W failed:\n{r.stdout}\n{r.stderr}"
    return out


def test_docs_build_with_zero_warnings(built_docs: Path) -> None:
    for page in ("index", "tutorial/index", "how-to/cmake", "reference/manifest", "reference/cli",
                 "reference/c-api", "measurements/index"):
        assert (built_docs / f"{page}.html").is_file(), page
    cli = (built_docs / "reference" / "cli.html").read_text(encoding="utf-8")
    assert "arena-tool generate" in cli and "--depfile" in cli


def _schema_keys(name: str) -> set[str]:
    """Every property name anywhere in schemas/NAME.schema.json."""
    keys: set[str] = set()

    def walk(node: object) -> None:
        if isinstance(node, dict):
            for k, v in node.get("properties", {}).items():
                keys.add(k)
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(json.loads((ROOT / "schemas" / f"{name}.schema.json").read_text(encoding="utf-8")))
    return keys


@pytest.mark.parametrize("name", ["manifest", "board"])
def test_schema_reference_names_every_key(name: str) -> None:
    text = arena_reference.schema_markdown(name)
    missing = sorted(k for k in _schema_keys(name) if f"`{k}`" not in text and f".{k}`" not in text)
    assert not missing, f"reference/{name}.md lacks {missing}"


def test_cli_reference_names_every_command_and_flag() -> None:
    from arena_tool import cli

    text = arena_reference.cli_markdown()
    missing = []
    todo = [("arena-tool", cli.parser())]
    while todo:
        title, p = todo.pop()
        if f"`{title}`" not in text:
            missing.append(title)
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                todo += [(f"{title} {n}", sub) for n, sub in action.choices.items()]
            for flag in action.option_strings:
                if flag not in ("-h", "--help") and f"`{flag}`" not in text:
                    missing.append(f"{title} {flag}")
    assert not missing, missing


def test_c_api_reference_has_every_function_of_the_header() -> None:
    import re

    header = (ROOT / "arena_tool" / "runtime" / "arena_model.h").read_text(encoding="utf-8")
    functions = set(re.findall(r"^(?:static inline )?(?:int|void|size_t|void \*)\s*\*?(arena_\w+)\(", header, re.M))
    assert {"arena_run", "arena_run_io", "arena_tensor_data", "arena_init"} <= functions
    text = arena_reference.c_api_markdown()
    assert not [f for f in functions if f"### `{f}`" not in text]
    assert "ARENA_ERR_BOUNDS" in text and "The header's guide" in text


# --- every command and file of the tutorial and the how-to guides, run ----------------------------
#
# Each page of docs/tutorial/ and docs/how-to/ is one scenario, run top to bottom in a folder of
# its own. The page says how with comment lines, `<!-- test: ... -->` (or MyST's `% test: ...`),
# which neither the built docs nor GitHub show:
#
#   % test: start example        the folder starts as a copy of the example project (SConstruct,
#                                site_scons/, example_firmware/); default: empty
#   % test: start example-models the example's ONNX models in example_models/ (standing for yours)
#   % test: start shared NAME as FILE   the shared folder's MLPerf Tiny or TFLM example model NAME
#                                (models/mlperf_tiny, models/tflm_examples) copied in as FILE
#   % test: exit N               before a console block: every command in it exits N (default 0)
#   % test: absent TEXT          before a console block: no command in it prints TEXT
#   % test: skip BY              before a block: not run here, because BY runs it: a test
#                                (tests/FILE.py::NAME, which must exist) or .ci/run (which must
#                                contain the block's command)
#
# A fenced block with a :caption: (```{code-block} LANG / :caption: PATH) is a file: written to PATH
# in the folder. A ```console block holds commands (`$ ` lines, `\` continues a line) run by bash in
# the folder; the lines after a command are its expected output: each must match a line of what the
# command printed (stdout and stderr), in order, lines between them free, `…` matching anything.
# Every other fenced block on these pages fails the test: a snippet nobody runs goes stale.

SCENARIOS = sorted(p.relative_to(DOCS).as_posix() for d in ("tutorial", "how-to") for p in (DOCS / d).glob("*.md"))
FENCE = re.compile(r"^(`{3,})(.*)$")
PRAGMA = re.compile(r"^<!-- test: (.*) -->$")
# what a command needs on PATH, by the word that starts it (scons and run build and run firmware)
NEEDS = {"scons": ("arm-none-eabi-gcc", "qemu-system-arm"), "cmake": ("cmake", "arm-none-eabi-gcc"),
         "make": ("make", "arm-none-eabi-gcc"), "ninja": ("ninja", "arm-none-eabi-gcc"),
         "qemu-system-arm": ("qemu-system-arm",), "arena-tool run": ("arm-none-eabi-gcc", "qemu-system-arm"),
         "arena-tool fit": ("arm-none-eabi-gcc", "qemu-system-arm")}


@dataclasses.dataclass
class Block:
    line: int
    info: str  # after the backticks: console, {code-block} yaml, ...
    options: dict[str, str]
    body: list[str]
    pragmas: list[str]  # the `% test:` lines just before it


def blocks(text: str) -> tuple[list[str], list[Block]]:
    """(the page's start pragmas, its fenced blocks)."""
    lines = text.splitlines()
    starts: list[str] = []
    found: list[Block] = []
    pending: list[str] = []
    i = 0
    while i < len(lines):
        line = PRAGMA.sub(r"% test: \1", lines[i])
        if line.startswith("% test: start "):
            starts.append(line.removeprefix("% test: start ").strip())
        elif line.startswith("% test: "):
            pending.append(line.removeprefix("% test: ").strip())
        m = FENCE.match(line)
        if m:
            ticks, info = m.group(1), m.group(2).strip()
            j = i + 1
            options: dict[str, str] = {}
            while j < len(lines) and info.startswith("{") and lines[j].startswith(":"):
                key, _, value = lines[j][1:].partition(":")
                options[key.strip()] = value.strip()
                j += 1
            body = []
            while not lines[j].startswith(ticks) or lines[j].strip() != ticks:
                body.append(lines[j])
                j += 1
            if not info.startswith("{toctree}"):
                found.append(Block(i + 1, info, options, body, pending))
            pending = []
            i = j
        elif line.strip() and not line.startswith("% test: "):
            pending = [] if not line.startswith("%") else pending
        i += 1
    return starts, found


def commands(body: list[str]) -> list[tuple[str, list[str]]]:
    """[(command, expected output lines)] of a console block."""
    out: list[tuple[str, list[str]]] = []
    continued = False
    for line in body:
        if continued:
            out[-1] = (out[-1][0] + "\n" + line, out[-1][1])
            continued = line.endswith("\\")
        elif line.startswith("$ "):
            out.append((line[2:], []))
            continued = line.endswith("\\")
        elif out and line.strip():
            out[-1][1].append(line)
    return out


def missing_output(expected: list[str], printed: str) -> list[str]:
    """The expected lines that do not match, in order, lines of what was printed."""
    got = [" ".join(line.split()) for line in printed.splitlines()]
    at = 0
    missing = []
    for want in expected:
        if want.strip() in ("…", "..."):
            continue
        pattern = re.compile(".*".join(re.escape(p) for p in " ".join(want.split()).split("…")))
        for k in range(at, len(got)):
            if pattern.fullmatch(got[k]):
                at = k + 1
                break
        else:
            missing.append(want)
    return missing


def _skip_is_run_elsewhere(by: str, block: Block) -> str | None:
    """Why a `% test: skip BY` does not hold, or None."""
    if by == ".ci/run":
        ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
        cmds = [c for c, _ in commands(block.body)] or ["\n".join(block.body)]
        return None if all(c.strip() in ci for c in cmds) else f"line {block.line}: .ci/run does not run {cmds}"
    path, _, name = by.partition("::")
    test = ROOT / path
    if not (path.startswith("tests/") and test.is_file() and re.search(rf"^def {re.escape(name)}\(", test.read_text(
            encoding="utf-8"), re.M)):
        return f"line {block.line}: skip names {by}, which is no test"
    return None


@pytest.fixture(scope="session")
def scons_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One SCons CacheDir for the own-project pages' builds (their SConstructs read ARENA_CACHE): a
    page compiles only what no page before it compiled for the same core and flags; one for every
    xdist worker (SCons writes a cache entry to a temporary name, then renames it)."""
    return run_dir(tmp_path_factory, "docs_scons_cache")


@pytest.mark.parametrize("page", SCENARIOS)
def test_every_snippet_is_run(page: str, tmp_path: Path, scons_cache: Path) -> None:
    """The page's files written, its commands run, their exit status and output as the page shows."""
    starts, found = blocks((DOCS / page).read_text(encoding="utf-8"))
    work = tmp_path / "work"
    work.mkdir()
    for start in starts:
        kind, _, arg = start.partition(" ")
        if kind == "example":
            copy_example(work)
        elif kind == "example-models":
            shutil.copytree(ROOT / "example_firmware" / "models", work / "example_models",
                            ignore=shutil.ignore_patterns("*.py", "__pycache__"))
        elif kind == "shared":
            name, _, as_name = arg.partition(" as ")
            src = require_shared(next((d / name for d in (MLPERF, TFLM_EXAMPLES) if (d / name).exists()), MLPERF / name))
            shutil.copy2(src, work / (as_name.strip() or name))
        else:
            raise AssertionError(f"{page}: unknown start {start!r}")
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONHASHSEED="0", ARENA_CACHE=str(scons_cache))
    if "example" in starts:  # the example as a newcomer builds it: every step made, none retrieved
        env.pop("ARENA_CACHE")
    env.pop("VERBOSE", None)
    problems: list[str] = []
    ran = 0
    for block in found:
        skip = [p for p in block.pragmas if p.startswith("skip ")]
        if skip:
            why = _skip_is_run_elsewhere(skip[0].removeprefix("skip ").strip(), block)
            if why:
                problems.append(why)
            continue
        if "caption" in block.options:
            target = work / block.options["caption"]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text("\n".join(block.body) + "\n", encoding="utf-8")
            continue
        if block.info != "console":
            problems.append(f"line {block.line}: a ```{block.info} block that no test runs (caption it as a file, "
                            "make it a console block, or `% test: skip` it naming the test that runs it)")
            continue
        status = next((int(p.split()[1]) for p in block.pragmas if p.startswith("exit ")), 0)
        for command, expected in commands(block.body):
            for word, tools in NEEDS.items():
                if re.search(rf"(^|[\s/]){word}\b", command):
                    for tool in tools:
                        require_tool(tool)
            r = subprocess.run(["bash", "-c", command], cwd=work, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, timeout=1200)
            ran += 1
            if r.returncode != status:
                problems.append(f"line {block.line}: `{command}` exited {r.returncode}, the page says {status}:\n"
                                f"{r.stdout[-3000:]}")
                break
            lost = missing_output(expected, r.stdout) + [
                f"(absent) {p[7:]}" for p in block.pragmas if p.startswith("absent ") and p[7:] in r.stdout]
            if lost:
                problems.append(f"line {block.line}: `{command}` did not print {lost}:\n{r.stdout[-3000:]}")
    problems += _workflow_steps_not_run(found)
    assert not problems, f"{page}:\n" + "\n".join(problems)
    assert ran, f"{page} runs no command"


def _workflow_steps_not_run(found: list[Block]) -> list[str]:
    """A CI workflow on a page is a file nobody runs here: each of its `run:` steps must be a command
    the page runs (a matrix value standing for ${{ matrix.NAME }}) or one that .ci/run runs."""
    import yaml

    ran = [c for b in found if b.info == "console" for c, _ in commands(b.body)]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    missing = []
    for b in found:
        if not b.options.get("caption", "").startswith(".github/workflows/"):
            continue
        for job in yaml.safe_load("\n".join(b.body))["jobs"].values():
            for step in job["steps"]:
                run = step.get("run")
                if run is None:
                    continue
                pattern = re.compile(re.sub(r"\\\$\\\{\\\{\\ matrix\\.\w+\\ \\\}\\\}", r"\\w+", re.escape(run)))
                if run not in ci and not any(pattern.fullmatch(c) for c in ran):
                    missing.append(f"line {b.line}: the workflow's step `{run}` is run neither by the page nor by .ci/run")
    return missing



def test_readme_is_short_and_its_snippets_are_the_docs_tested_ones() -> None:
    """The README stays a front page (at most 150 lines, the two commands at the top, CI's test
    command among them), and each example on it is a tested page's: every line of a README block
    but the commands' is a line of the tutorial's or a how-to's blocks."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    lines = text.splitlines()
    assert len(lines) <= 150, f"README.md has {len(lines)} lines"
    top = "\n".join(lines[:15])
    assert ".ci/setup && scons board=nucleo_f746" in top
    test_command = re.search(r"^(python3 -m pytest -q[^#\n]*?) *#", top, re.M)
    assert test_command, "no test command at the top of the README"
    assert f"\n{test_command[1]}\n" in (ROOT / ".ci" / "run").read_text(encoding="utf-8"), test_command[1]
    tested = {" ".join(line.split()) for page in SCENARIOS
              for b in blocks((DOCS / page).read_text(encoding="utf-8"))[1] for line in b.body}
    readme_blocks = re.findall(r"^```[^\n]*\n(.*?)^```", text, re.M | re.S)[1:]  # after the commands
    assert readme_blocks
    stray = [line for block in readme_blocks for line in block.splitlines()
             if line.strip() not in ("", "…") and not line.startswith("# ")
             and not any(" ".join(line.split()).replace("…", "") in t for t in tested)]
    assert not stray, f"README lines no tested page has: {stray}"
