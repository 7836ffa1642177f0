"""Build integrity (issue 14): the build makes C tables only from a plan checked against its
model; an interrupted build never leaves an output a later build accepts; two clones at
different paths build the same bytes; the manifest cache keys on every file of the package.

The SCons tests build a one-model project (the example's int8 DS-CNN, with im2col workspaces,
in-place aliases and quantized tensors, for mps2_an500) whose SConstruct names the manifest by
its absolute path, as an SConstruct built from ``File(...).abspath`` does. They link when
arm-none-eabi-gcc is on PATH (required under ARENA_REQUIRE_TOOLS=1).
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from arena_tool import cli
from arena_tool.core import files
from arena_tool.model import liveness
from arena_tool.plan import plancheck, planfile, planners, planning
from arena_tool.core.problem import ModelOptions
from conftest import ROOT, has_tool

MODELS = ROOT / "example_firmware" / "models"
NET = MODELS / "kws_int8.onnx"  # what the project builds
EDIT = MODELS / "kws.onnx"  # what an edit puts in its place
OPTIONS = ModelOptions(scratch="row")  # as the manifest says: workspaces to corrupt

MANIFEST = """\
sharing: sequential
region: auto
budget: 90%
reserve: {stack: 4K, heap: 0}
defaults: {planner: greedy_size, alignment: 16}
models:
  - {name: net, path: models/net.onnx, scratch: row}
boards:
  - mps2_an500
"""

SCONSTRUCT = """\
import os
SetOption("implicit_cache", 1)
SetOption("max_drift", 1)
DefaultEnvironment(tools=[])
import arena_tool
env = Environment(tools=["arena"], toolpath=[arena_tool.site_tools_dir()])
env.Decider("content")
env.SConsignFile("build/.sconsign")
app = os.path.join(arena_tool.runtime_dir(), "example")
env.ArenaFirmware(File("app/arena.yaml").abspath,
                  sources=[os.path.join(app, "startup.c"), os.path.join(app, "main.c")], cpppath=[app])
"""

CACHES = (".sconsign.dblite", ".arena_manifest.json", ".arena_summary.json")  # the build's own records


def make_project(dest: Path) -> Path:
    (dest / "app" / "models").mkdir(parents=True)
    shutil.copyfile(NET, dest / "app" / "models" / "net.onnx")
    (dest / "app" / "arena.yaml").write_text(MANIFEST)
    (dest / "SConstruct").write_text(SCONSTRUCT)
    return dest


@pytest.fixture(scope="module")
def pkg(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A snapshot of the package (with its SCons tool, schemas and boards) the builds run from:
    a build compared with another must not see the checkout change in between."""
    dest = tmp_path_factory.mktemp("pkg")
    for name in ("arena_tool", "schemas", "boards", "site_scons"):
        shutil.copytree(ROOT / name, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def scons(proj: Path, pkg: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "SCons", "-Q", *args], cwd=proj, env=_env(pkg),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600)


def _env(pkg: Path) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(pkg), PYTHONHASHSEED="0", PYTHONUNBUFFERED="1")
    env.pop("VERBOSE", None)
    return env


def link_args() -> tuple[str, ...]:
    """Link when the cross gcc is here (a failure under ARENA_REQUIRE_TOOLS=1), else stop after generation."""
    return () if has_tool("arm-none-eabi-gcc") else ("link=0",)


def artifacts(proj: Path) -> dict[str, bytes]:
    """Every file the build wrote under build/, by path, but SCons's and arena's records."""
    build = proj / "build"
    return {p.relative_to(build).as_posix(): p.read_bytes() for p in sorted(build.rglob("*"))
            if p.is_file() and p.name not in CACHES}


def actions(out: str) -> list[str]:
    return [ln for ln in out.splitlines() if ln.startswith(("Planning", "Checking", "Generating", "Compiling", "Linking"))]


# ---------------------------------------------------------------- 1. every plan checked against its model


def _buffer(doc: dict[str, Any], name: str) -> dict[str, Any]:
    return next(b for b in doc["buffers"] if b["name"] == name)


def _set(name: str, **fields: Any) -> Callable[[dict[str, Any]], None]:
    return lambda d: _buffer(d, name).update(fields)


def _swap_steps(d: dict[str, Any]) -> None:
    d["schedule"][3], d["schedule"][4] = d["schedule"][4], d["schedule"][3]


def _drop_workspace(d: dict[str, Any]) -> None:
    d["schedule"][1]["workspace"] = None
    d["buffers"].remove(_buffer(d, "qlinearconv_q4:workspace"))


def _rename_workspace(d: dict[str, Any]) -> None:
    d["schedule"][1]["workspace"] = "ws"
    _buffer(d, "qlinearconv_q4:workspace")["name"] = "ws"


def _overlap(d: dict[str, Any]) -> None:
    _buffer(d, "q16")["offset"] = _buffer(d, "q14")["offset"]  # both live at op 7


def _double_scale(d: dict[str, Any]) -> None:
    _buffer(d, "q8")["quant"]["scale"][0] *= 2


def _duplicate(d: dict[str, Any]) -> None:
    d["buffers"].append(copy.deepcopy(_buffer(d, "q18")))


# (case, edit of the plan, words plancheck.check must say). The kws_int8 plan under scratch: row:
# q4 -> q6 (in place) -> q8 ...; ops 1, 2, 4, 6 have workspaces; q* are int8 with quant.
CORRUPTIONS: list[tuple[str, Callable[[dict[str, Any]], None], str]] = [
    ("shape", _set("q8", shape=[1, 32, 5, 25]), "q8: shape [1, 32, 5, 25], the model's is [1, 32, 25, 5]"),
    ("elements", _set("q8", elements=3999), "q8: elements 3999, the model's is 4000"),
    ("dtype", _set("q8", dtype="uint8"), "q8: dtype uint8, the model runs it as int8"),
    ("kind", _set("q8", kind="output"), "q8: kind 'output', the model's is 'activation'"),
    ("quant", _double_scale, "q8: quant"),
    ("size shrunk", _set("q8", size=3984), "q8: size 3984 B < 4000 B the tensor needs"),
    ("live range shortened", _set("q8", last_op=3), "q8: live range [3, 3] is shorter than [3, 4]"),
    ("workspace removed", _drop_workspace, "schedule[1]: workspace None, the model's op 1 has 'qlinearconv_q4:workspace'"),
    ("workspace renamed", _rename_workspace, "schedule[1]: workspace 'ws'"),
    ("step removed", lambda d: d["schedule"].pop(9), "schedule"),
    ("steps swapped", _swap_steps, "schedule"),
    ("step rewired", lambda d: d["schedule"][5].update(inputs=["q6"] + d["schedule"][5]["inputs"][1:]),
     "schedule[5]: inputs"),
    ("op type changed", lambda d: d["schedule"][9].update(op_type="Relu"), "schedule[9]: op_type 'Relu'"),
    ("output renamed", lambda d: d["schedule"][11].update(outputs=["y"]), "schedule[11]: outputs ['y']"),
    ("offset overlap", _overlap, "overlap while both are live"),
    ("misaligned offset", _set("q8", offset=4008), "q8: offset 4008 is not a multiple of the alignment 16"),
    ("arena_size shrunk", lambda d: d.update(arena_size=d["arena_size"] - 16), "past arena_size"),
    ("alias added", _set("q16", alias_of="q14"), "q16: alias_of 'q14', the model allows None"),
    ("alias moved off its root", _set("q6", offset=16), "q6: offset 16, but its alias_of q4 is at offset 0"),
    ("duplicate buffer", _duplicate, "buffer q18 is listed 2 times"),
    ("weights_bytes", lambda d: d.update(weights_bytes=100), "weights_bytes 100, the model's is"),
    ("lower_bound", lambda d: d.update(lower_bound=4000), "lower_bound 4000 B, the model's is 8000 B"),
    ("model bytes", lambda d: d.update(model_sha256="0" * 64), "model bytes changed since planning"),
]
IDS = [c[0] for c in CORRUPTIONS]


@pytest.fixture(scope="module")
def plan_doc() -> dict[str, Any]:
    """The plan the project's build makes (same model, options and planner), as its document."""
    plan = planning.plan_model(str(NET), OPTIONS, "greedy_size", planners.Params()).plan_file
    assert plancheck.check(plan, liveness.model_problem(str(NET), OPTIONS), "p.json") == []
    return plan.to_json()


@pytest.mark.parametrize("case, edit, words", CORRUPTIONS, ids=IDS)
def test_check_refuses_each_corruption(plan_doc: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                       case: str, edit: Callable[[dict[str, Any]], None], words: str) -> None:
    doc = copy.deepcopy(plan_doc)
    edit(doc)
    plan = planfile.PlanFile.from_json(doc, "p.json")  # schema-valid: it loads, and check refuses it
    found = plancheck.check(plan, liveness.model_problem(str(NET), plan.options), "p.json")
    assert any(words in p for p in found), found
    path = tmp_path / "p.json"
    path.write_text(json.dumps(doc))
    assert cli.main(["check", str(NET), str(path)]) == 1  # arena-tool check: schema-valid, but wrong
    assert words in capsys.readouterr().err


def _same_size_json(doc: dict[str, Any], size: int) -> bytes:
    """doc as JSON of exactly ``size`` bytes (compact, padded with spaces)."""
    text = json.dumps(doc, separators=(",", ":")).encode()
    assert len(text) < size
    return text + b" " * (size - len(text) - 1) + b"\n"


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory, pkg: Path) -> Path:
    """The project generated once (link=0); each test corrupts its own copy of it."""
    proj = make_project(tmp_path_factory.mktemp("generated"))
    p = scons(proj, pkg, "link=0")
    assert p.returncode == 0, p.stdout + p.stderr
    time.sleep(1.1)  # older than max_drift: SCons trusts the recorded checksum of an unchanged stamp
    return proj


def _copy(proj: Path, dest: Path) -> Path:
    shutil.copytree(proj, dest, symlinks=True)  # copy2: the timestamps SCons recorded stay
    return dest


# test_check_refuses_each_corruption names every corruption in process; the build is shown refusing
# one of each kind (a tensor, the schedule, the layout, the model's bytes): a scons run each.
BUILD_CASES = ("shape", "step removed", "offset overlap", "model bytes")


@pytest.mark.parametrize("case, edit, words", [c for c in CORRUPTIONS if c[0] in BUILD_CASES], ids=BUILD_CASES)
def test_build_refuses_a_corrupt_plan(generated: Path, pkg: Path, tmp_path: Path, case: str,
                                      edit: Callable[[dict[str, Any]], None], words: str) -> None:
    """A plan SCons takes for its own (same size and timestamp as recorded) is still checked
    against the model before tables are made from it: one error naming the plan and the fix."""
    proj = _copy(generated, tmp_path / "p")
    [plan] = (proj / "build" / "plans").glob("*.plan.json")
    [tables] = (proj / "build" / "tables").glob("net-*")
    good, st = plan.read_bytes(), plan.stat()
    doc = json.loads(good)
    edit(doc)
    plan.write_bytes(_same_size_json(doc, len(good)))
    os.utime(plan, ns=(st.st_atime_ns, st.st_mtime_ns))
    shutil.rmtree(tables)  # the tables are remade: from this plan
    p = scons(proj, pkg, "link=0")
    assert p.returncode == 1, p.stdout + p.stderr
    rel = plan.relative_to(proj).as_posix()
    assert f"{rel}: error: the plan does not match app/models/net.onnx: " in p.stderr, p.stderr
    assert words in p.stderr and "delete the plan file and build again" in p.stderr, p.stderr
    assert not list(tables.glob("*.c")) and "Traceback" not in p.stderr


def test_a_plan_edited_by_hand_is_planned_anew(generated: Path, pkg: Path, tmp_path: Path) -> None:
    """A plan whose file is not the one SCons recorded is not reused: the build re-plans it."""
    proj = _copy(generated, tmp_path / "p")
    [plan] = (proj / "build" / "plans").glob("*.plan.json")
    good = plan.read_bytes()
    doc = json.loads(good)
    _overlap(doc)
    plan.write_text(json.dumps(doc, indent=1))
    p = scons(proj, pkg, "link=0")
    assert p.returncode == 0, p.stdout + p.stderr
    assert f"Planning {plan.relative_to(proj).as_posix()}" in p.stdout
    assert plan.read_bytes() == good


# ---------------------------------------------------------------- 2. an interrupted build leaves nothing stale


@pytest.mark.slow
def test_outputs_a_killed_build_left_unrecorded_are_rebuilt(tmp_path: Path, pkg: Path) -> None:
    """The state SIGKILL leaves, made deterministic: every output of the edited build written,
    SCons's records (written at the end) still the old build's. After the edit is reverted the
    inputs match those records again; the build must still give a clean build's bytes."""
    link = link_args()
    proj = make_project(tmp_path / "p")
    assert scons(proj, pkg, *link).returncode == 0
    clean = artifacts(proj)
    sconsign = proj / "build" / ".sconsign.dblite"
    records = sconsign.read_bytes()
    model = proj / "app" / "models" / "net.onnx"
    time.sleep(1.1)  # SCons records whole seconds: the edited build's outputs get other timestamps
    shutil.copyfile(EDIT, model)
    p = scons(proj, pkg, *link)
    assert p.returncode == 0, p.stdout + p.stderr
    assert artifacts(proj) != clean
    sconsign.write_bytes(records)  # the kill came before SCons wrote its records
    shutil.copyfile(NET, model)  # the edit reverted
    p = scons(proj, pkg, *link)
    assert p.returncode == 0, p.stdout + p.stderr
    assert _differences(artifacts(proj), clean) == []
    assert actions(scons(proj, pkg, *link).stdout) == []  # and the healed build is a no-op build again


@pytest.mark.slow
def test_sigkill_mid_build_then_revert_gives_the_clean_build(tmp_path: Path, pkg: Path) -> None:
    """A real SIGKILL (the whole process group, compilers too) while the edited model's tables are
    generated; the edit reverted, the next build's artifacts equal the clean build's."""
    link = link_args()
    proj = make_project(tmp_path / "p")
    assert scons(proj, pkg, *link).returncode == 0
    clean = artifacts(proj)
    model = proj / "app" / "models" / "net.onnx"
    time.sleep(1.1)
    shutil.copyfile(EDIT, model)
    run = subprocess.Popen([sys.executable, "-m", "SCons", "-Q", *link], cwd=proj, env=_env(pkg),
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, start_new_session=True)
    assert run.stdout is not None
    seen = []
    for line in run.stdout:
        seen.append(line)
        if line.startswith("Generating build/tables/"):  # the plan and the gate are already rewritten
            os.killpg(run.pid, signal.SIGKILL)
            break
    run.wait(timeout=60)
    assert run.returncode == -signal.SIGKILL, "".join(seen)
    shutil.copyfile(NET, model)
    p = scons(proj, pkg, *link)
    assert p.returncode == 0, p.stdout + p.stderr
    assert _differences(artifacts(proj), clean) == []


def _differences(got: dict[str, bytes], want: dict[str, bytes]) -> list[str]:
    return sorted(k for k in set(got) | set(want) if got.get(k) != want.get(k))


# ---------------------------------------------------------------- 3. reproducible outputs


@pytest.mark.slow
def test_two_clones_at_different_paths_build_identical_bytes(tmp_path: Path, pkg: Path) -> None:
    """Plans, C tables, linker script, reports (JSON, HTML, Markdown) and, linked, every object,
    the map and the ELF: byte for byte, although the SConstruct names the manifest absolutely."""
    link = link_args()
    one = make_project(tmp_path / "one")
    two = make_project(tmp_path / "somewhere" / "else" / "two")
    for proj in (one, two):
        p = scons(proj, pkg, *link)
        assert p.returncode == 0, p.stdout + p.stderr
    a, b = artifacts(one), artifacts(two)
    assert _differences(a, b) == []
    names = set(a)
    expected = {"mps2_an500/mps2_an500.ld", "mps2_an500/arena_gate.json", "mps2_an500/arena_report.json",
                "mps2_an500/arena_report.html", "mps2_an500/arena_report.md", "mps2_an500/gen/arena_board.c"}
    if not link:  # linked
        expected |= {"mps2_an500/firmware.elf", "mps2_an500/obj/arena_board.o"}
    assert expected <= names
    assert any(n.startswith("plans/") for n in names) and any(n.endswith(".c") and n.startswith("tables/") for n in names)
    for name, data in a.items():
        assert str(one).encode() not in data, f"{name} names the project's folder"


def test_cli_plan_records_the_model_relative_to_the_current_folder(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "models").mkdir()
    shutil.copyfile(NET, tmp_path / "models" / "net.onnx")
    monkeypatch.chdir(tmp_path)
    assert cli.main(["plan", str(tmp_path / "models" / "net.onnx"), "--planner", "greedy_size", "-o", "p.json"]) == 0
    assert json.loads((tmp_path / "p.json").read_text())["model"] == "models/net.onnx"
    outside = str(NET)  # outside the current folder: kept as given
    assert files.project_path(outside) == outside.replace(os.sep, "/")


# ---------------------------------------------------------------- 4. the manifest cache keys on the whole package


def test_editing_any_package_file_invalidates_the_manifest_cache(tmp_path: Path) -> None:
    """A cache entry made by one version of the package is not reused by another: editing
    schema.py (which no hand-kept list named) makes the next build load the manifest anew."""
    pkg = tmp_path / "pkg"
    for name in ("arena_tool", "schemas", "boards"):
        shutil.copytree(ROOT / name, pkg / name, ignore=shutil.ignore_patterns("__pycache__"))
    proj = make_project(tmp_path / "p")
    load = ("from arena_tool.builder import noop_cache as m; import json; "
            "print(json.dumps(m.cached('app/arena.yaml', (), 'cache.json')['models'][0]['planner']))")

    def planner() -> str:
        env = dict(os.environ, PYTHONPATH=str(pkg))
        p = subprocess.run([sys.executable, "-c", load], cwd=proj, env=env, capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr
        return str(json.loads(p.stdout))

    assert planner() == "greedy_size"
    cache = proj / "cache.json"
    entry = json.loads(cache.read_text())
    entry["manifest"]["models"][0]["planner"] = "stale"  # what an older package would have made
    cache.write_text(json.dumps(entry))
    assert planner() == "stale"  # nothing changed: a hit
    with open(pkg / "arena_tool" / "schema.py", "a", encoding="utf-8") as f:
        f.write("\n# edited\n")
    assert planner() == "greedy_size"
