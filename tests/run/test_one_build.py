"""One build of a firmware: ``arena-tool run`` on a board makes the firmware a project build
(SCons) makes of the same model, board and options, object for object and byte for byte, and
the graph's executor compiles arena's runtime once per machine, not once per firmware."""

from __future__ import annotations

import io
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest
from builders import scons
from conftest import ROOT, require_tool

import arena_tool
from arena_tool.builder import build_graph, execute
from arena_tool.core.problem import ModelOptions
from arena_tool.plan import planners
from arena_tool.run import firmware

MODEL = ROOT / "example_firmware" / "models" / "autoencoder.onnx"
BOARD = "mps2_an500"


def _files(folder: Path, suffix: str) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob(f"*{suffix}"))}


@pytest.mark.slow
def test_arena_run_builds_the_objects_and_elf_of_a_project_build(tmp_path: Path) -> None:
    require_tool("arm-none-eabi-gcc")
    require_tool("qemu-system-arm")
    model = tmp_path / "autoencoder.onnx"  # one path for both builds: it names the tables' folder
    shutil.copy(MODEL, model)
    run_dir = tmp_path / "run"
    code = firmware.run(str(model), BOARD, ModelOptions(), "greedy_size", planners.Params(time_limit=5.0),
                        build_dir=str(run_dir), out=io.StringIO())
    assert code == 0
    proj = tmp_path / "proj"
    proj.mkdir()
    shutil.copy(run_dir / "arena_inputs.c", proj / "arena_inputs.c")  # the run's input table, as a source
    shutil.copytree(ROOT / "site_scons", proj / "site_scons", ignore=shutil.ignore_patterns("__pycache__"))
    (proj / "arena.yaml").write_text(textwrap.dedent(f"""\
        region: SSRAM23
        budget: 100%
        reserve: {{stack: {firmware.STACK}, heap: 0}}
        defaults: {{planner: greedy_size, time_limit: 5}}
        models:
          - name: autoencoder
            path: {model}
        boards: [{BOARD}]
        """))
    (proj / "SConstruct").write_text(textwrap.dedent("""\
        import os
        import arena_tool
        env = Environment(tools=["arena"])
        env.Decider("content")
        app = os.path.join(arena_tool.runtime_dir(), "example")
        env.ArenaFirmware("arena.yaml", sources=[os.path.join(app, "startup.c"), os.path.join(app, "main.c"),
                                                 "arena_inputs.c"], cpppath=[app])
        """))
    p = scons(proj, f"board={BOARD}")
    assert p.returncode == 0, p.stdout + p.stderr
    ours, theirs = run_dir / "build", proj / "build"
    objects = _files(ours, ".o")
    runtime = len(list(Path(arena_tool.runtime_dir()).glob("*.c")))  # with arena_board, startup, main, inputs, tables
    assert len(objects) == runtime + 5 and objects.keys() == _files(theirs, ".o").keys()
    assert [k for k, v in objects.items() if _files(theirs, ".o")[k] != v] == []
    assert (ours / BOARD / "firmware.elf").read_bytes() == (theirs / BOARD / "firmware.elf").read_bytes()
    assert (ours / BOARD / f"{BOARD}.ld").read_bytes() == (theirs / BOARD / f"{BOARD}.ld").read_bytes()


def _graph(tmp_path: Path, source: str) -> build_graph.BuildGraph:
    env = build_graph.CompileEnv(key="host", ccflags=("-O1",), linkflags=(), cpppath=(), libs=(), cflags=(),
                                 cppdefines=(), libpath=(), prefix="")
    return build_graph.firmware(".", env, [source], "prog", root=str(tmp_path))


@pytest.mark.slow
def test_executor_compiles_what_changed_and_a_cached_object_once(tmp_path: Path, monkeypatch) -> None:
    require_tool("gcc")
    monkeypatch.setenv(execute.CACHE_ENV, str(tmp_path / "cache"))
    src = tmp_path / "lib" / "main.c"
    src.parent.mkdir()
    (src.parent / "answer.h").write_text("#define ANSWER 42\n")
    src.write_text('#include "answer.h"\nint main(void) { return ANSWER - 42; }\n')
    first = tmp_path / "a"
    first.mkdir()
    run = execute.Executor(_graph(first, str(src)), str(first))
    run.build(["prog"])
    assert run.compiles == 2  # the object and the link
    again = execute.Executor(_graph(first, str(src)), str(first))
    again.build(["prog"])
    assert again.compiles == 0  # nothing changed
    second = tmp_path / "b"  # another firmware over the same source: the object from the cache
    second.mkdir()
    other = execute.Executor(_graph(second, str(src)), str(second), progress=io.StringIO())
    other.build(["prog"])
    assert other.compiles == 1
    assert [p.name for p in (second / "obj").rglob("*.o")] == ["main.o"]
    (src.parent / "answer.h").write_text("#define ANSWER 41\n")  # a header beside the source changed
    edited = execute.Executor(_graph(first, str(src)), str(first))
    edited.build(["prog"])
    assert edited.compiles == 2
    assert subprocess.run([str(first / "prog")]).returncode == 255  # ANSWER - 42 is -1 now
