"""arena-tool generate: what ``scons link=0`` makes, without SCons, and a depfile naming every input.

The comparison with SCons runs scons (slow); the depfile tests run generate in process on one
small model (fast): every file generate opens is named in the depfile, and an edit to any
input makes the depfile's rule out of date, as Make and Ninja judge it.
"""

from __future__ import annotations

import filecmp
import os
import sys
from pathlib import Path

import pytest
import yaml

import models
from arena_tool import cli
from arena_tool.core import files
from builders import H743_MEMORY, copy_example, scons, vendor_script

ROOT = Path(__file__).resolve().parent.parent


def _tree(folder: Path) -> dict[str, bytes]:
    """Every output file below ``folder`` (not the tools' own dot-files, not the depfile)."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and not p.name.startswith(".") and p.name != "arena.d"}


@pytest.mark.slow
def test_generate_is_byte_identical_to_scons_on_every_board(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = copy_example(tmp_path / "scons"), copy_example(tmp_path / "generate")
    p = scons(a, "link=0", "board=all")
    assert p.returncode == 0, p.stdout + p.stderr
    monkeypatch.chdir(b)
    assert cli.main(["generate", "example_firmware/arena.yaml", "--board", "all", "--out", "build"]) == 0
    made, want = _tree(b / "build"), _tree(a / "build")
    assert sorted(made) == sorted(want)
    assert [k for k in want if made[k] != want[k]] == []
    boards = sorted(d.name for d in (b / "build").iterdir() if (d / "arena_gate.json").exists())
    listed = yaml.safe_load((b / "example_firmware" / "arena.yaml").read_text())["boards"]
    assert boards == sorted(e if isinstance(e, str) else e["name"] for e in listed)  # every board, each once
    assert all((b / "build" / n / "arena.d").is_file() for n in boards)


def _depfile(path: Path) -> tuple[list[str], list[str]]:
    """(targets, inputs) of a Make depfile (one rule, escaped spaces)."""
    text = path.read_text().replace("\\\n", " ")
    head, _, tail = text.partition(": ")  # the separator is ': ' (an absolute path has no ': ')

    def words(s: str) -> list[str]:
        out, cur, i = [], "", 0
        while i < len(s):
            c = s[i]
            if c == "\\" and i + 1 < len(s):
                cur, i = cur + s[i + 1], i + 2
                continue
            if c.isspace():
                if cur:
                    out.append(cur.replace("$$", "$"))
                cur = ""
            else:
                cur += c
            i += 1
        return out + ([cur.replace("$$", "$")] if cur else [])

    return words(head), words(tail)


MANIFEST = """\
defaults: {{planner: greedy_size}}
models:
  - {{name: chain, path: models/chain.onnx}}
boards:
  - {{name: mps2_an500, budget: 64K}}
  - {{name: nucleo_h743, region: AXI_SRAM, budget: 64K, linker: fragment, linker_script: vendor/h743.ld,
     linker_regions: {{AXI_SRAM: RAM_D1}}{extra}}}
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project with a space in its path: one model, a shipped board and a board whose vendor
    script INCLUDEs the fragment and a second script beside it."""
    proj = tmp_path / "my project"
    (proj / "models").mkdir(parents=True)
    (proj / "vendor").mkdir()
    models.save(models.chain(), proj / "models" / "chain.onnx")
    (proj / "vendor" / "h743.ld").write_text(vendor_script(H743_MEMORY, "RAM_D1", after_heap="  INCLUDE extra.ld\n"))
    (proj / "vendor" / "extra.ld").write_text("/* the vendor's extra sections */\n")
    (proj / "arena.yaml").write_text(MANIFEST.format(extra=""))
    monkeypatch.chdir(proj)
    return proj


def _opened_during(body) -> set[str]:
    """Every existing regular file ``body`` opens, as absolute paths (an audit hook sees each open)."""
    seen: set[str] = set()
    active = [True]

    def hook(event: str, args: tuple) -> None:
        if active[0] and event == "open" and isinstance(args[0], (str, bytes, os.PathLike)):
            seen.add(os.path.abspath(os.fsdecode(args[0])))

    sys.addaudithook(hook)
    try:
        body()
    finally:
        active[0] = False
    return {p for p in seen if os.path.isfile(p)}


def test_depfile_names_every_file_generate_reads(project: Path) -> None:
    opened = _opened_during(lambda: cli.main(["generate", "arena.yaml", "--board", "all", "--out", "out"]))
    out = str(project / "out")
    # what it read of the project and of arena (its code, schemas, board files), not the Python it runs on
    ours = {p for p in opened if not p.startswith(out + os.sep) and
            (p.startswith(str(project) + os.sep) or p.startswith(str(ROOT) + os.sep))}
    inputs: set[str] = set()
    for board in ("mps2_an500", "nucleo_h743"):
        targets, deps = _depfile(project / "out" / board / "arena.d")
        # named as --out names them (relative: as a Makefile in the project names them)
        assert all(os.path.isfile(t) for t in targets) and f"out/{board}/arena_gate.json" in targets
        assert str(project / "arena.yaml") in deps and str(project / "models" / "chain.onnx") in deps
        assert str(ROOT / "boards" / f"{board}.yaml") in deps
        inputs |= set(deps)
    h743 = _depfile(project / "out" / "nucleo_h743" / "arena.d")[1]
    assert {str(project / "vendor" / "h743.ld"), str(project / "vendor" / "extra.ld")} <= set(h743)
    assert str(project / "vendor" / "h743.ld") not in _depfile(project / "out" / "mps2_an500" / "arena.d")[1]
    assert sorted(p for p in ours if p.startswith(str(project))) != []
    assert sorted(ours - inputs) == [], "read but not in the depfile"
    assert set(files.package_files()) <= inputs  # arena's own code: an upgrade regenerates


def test_an_edit_to_each_input_makes_the_depfile_rule_out_of_date(project: Path) -> None:
    assert cli.main(["generate", "arena.yaml", "--board", "nucleo_h743", "--out", "out"]) == 0
    targets, deps = _depfile(project / "out" / "nucleo_h743" / "arena.d")
    oldest = min(os.stat(t).st_mtime_ns for t in targets)
    edits = [project / "arena.yaml", project / "models" / "chain.onnx", project / "vendor" / "h743.ld",
             project / "vendor" / "extra.ld"]
    for path in edits:
        assert str(path) in deps
        st = os.stat(path)
        path.write_bytes(path.read_bytes())  # an edit Make sees: a newer mtime
        os.utime(path, ns=(st.st_atime_ns, oldest + 1_000_000_000))
        assert os.stat(path).st_mtime_ns > oldest  # so Make (and Ninja) rerun generate
    # a board edit reaches the output: regenerating with another budget rewrites the board report
    (project / "arena.yaml").write_text(MANIFEST.format(extra="").replace("budget: 64K, linker", "budget: 63K, linker"))
    before = (project / "out" / "nucleo_h743" / "arena_gate.json").read_bytes()
    assert cli.main(["generate", "arena.yaml", "--board", "nucleo_h743", "--out", "out"]) == 0
    assert (project / "out" / "nucleo_h743" / "arena_gate.json").read_bytes() != before


def test_over_budget_exits_1_with_the_gates_line_and_keeps_the_depfile(project: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    (project / "arena.yaml").write_text(MANIFEST.format(extra="").replace("mps2_an500, budget: 64K", "mps2_an500, budget: 1K"))
    assert cli.main(["generate", "arena.yaml", "--board", "all", "--out", "out"]) == 1
    out = capsys.readouterr()
    err = out.err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("arena: mps2_an500: model chain needs ") and "budget 1,024 B" in err[0]
    b = project / "out" / "mps2_an500"
    assert (b / "arena.d").is_file() and (b / "arena_report.json").is_file()
    assert not (b / "gen" / "arena_board.c").exists() and not (b / "mps2_an500.ld").exists()
    # the other board, whose tables the failing one shares, is made all the same
    h743 = project / "out" / "nucleo_h743"
    assert (h743 / "gen" / "arena_board.c").is_file() and (h743 / "arena_fragment.ld").is_file()
    assert len(list((project / "out" / "tables").glob("chain-*/model_chain.c"))) == 1
    assert "arena: 2 boards: 1 passed (nucleo_h743), 1 failed (mps2_an500: over)" in out.out


def test_unknown_board_and_a_depfile_for_two_boards_are_one_line_exit_2(project: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["generate", "arena.yaml", "--board", "mps2_an50", "--out", "out"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "board 'mps2_an50' is not in the manifest" in err[0] and "mps2_an500" in err[0]
    assert cli.main(["generate", "arena.yaml", "--board", "all", "--out", "out", "--depfile", "x.d"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--depfile" in err[0]


def test_list_names_what_to_compile_and_link_and_makes_nothing(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["generate", "arena.yaml", "--board", "nucleo_h743", "--out", "out", "--list"]) == 0
    pairs = [line.split("=", 1) for line in capsys.readouterr().out.splitlines()]
    got: dict[str, list[str]] = {}
    for k, v in pairs:
        got.setdefault(k, []).append(v)
    b = f"{project}/out/nucleo_h743"
    assert not (project / "out" / "nucleo_h743").exists()  # nothing planned, nothing written
    assert got["depfile"] == [f"{b}/arena.d"] and f"{b}/arena_fragment.ld" in got["output"]
    assert got["source"][0] == f"{b}/gen/arena_board.c" and got["source"][1].endswith("/model_chain.c")
    assert got["script"] == [f"{project}/vendor/h743.ld"] and got["libdir"] == [f"{project}/vendor", b]
    assert {os.path.basename(p) for p in got["runtime"]} >= {"arena_runtime.c", "conv_f32.c"}
    assert "-mcpu=cortex-m7" in got["flag"] and "-std=c99" in got["cflag"]


MAKEFILE = """\
BOARD := mps2_an500
OUT   := build
GEN   := arena-tool generate app/arena.yaml --board $(BOARD) --out $(OUT)
LIST  := $(shell $(GEN) --list)
list   = $(patsubst $(1)=%,%,$(filter $(1)=%,$(LIST)))
GATE  := $(OUT)/$(BOARD)/arena_gate.json

firmware.elf: $(GATE) app/startup.c app/main.c
\tarm-none-eabi-gcc $(call list,flag) $(call list,cflag) $(addprefix -I,$(call list,include)) \\
\t  app/startup.c app/main.c $(call list,source) $(call list,runtime) $(call list,link) \\
\t  -T $(call list,script) $(addprefix -L,$(call list,libdir)) $(addprefix -l,$(call list,lib)) -o $@

$(GATE):
\t$(GEN)

-include $(OUT)/$(BOARD)/arena.d
"""


@pytest.mark.slow
def test_a_makefile_with_a_relative_out_reruns_generate_after_a_manifest_edit(tmp_path: Path) -> None:
    """A Makefile in the project folder with a relative --out (its rule names the gate as
    build/<board>/arena_gate.json), the package's example in app/: ``make`` builds the firmware, a second ``make`` does nothing, and an edit to the
    manifest reruns generate and relinks (the depfile named its targets absolute, the Makefile
    relative: Make said "Nothing to be done", a silently stale firmware)."""
    import shutil
    import subprocess

    import arena_tool
    from conftest import require_tool

    require_tool("make")
    require_tool("arm-none-eabi-gcc")
    snippets = [("a Makefile with a relative --out", MAKEFILE)]
    # `arena-tool` on PATH is this checkout's
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "arena-tool").write_text(f"#!/bin/sh\nexec {sys.executable} -m arena_tool \"$@\"\n")
    (bin_dir / "arena-tool").chmod(0o755)
    env = dict(os.environ, PYTHONPATH=str(ROOT), PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    for i, (doc, text) in enumerate(snippets):
        proj = tmp_path / f"p{i}"
        (proj / "app" / "models").mkdir(parents=True)
        example = Path(arena_tool.runtime_dir()) / "example"
        for name in ("main.c", "startup.c", "semihost.h", "fw_io.h"):
            shutil.copy2(example / name, proj / "app" / name)
        models.save(models.chain(), proj / "app" / "models" / "chain.onnx")
        manifest = proj / "app" / "arena.yaml"
        manifest.write_text("models:\n  - {name: chain, path: models/chain.onnx}\nboards:\n  - {name: mps2_an500, budget: 64K}\n")
        (proj / "Makefile").write_text(text)

        def make() -> str:
            p = subprocess.run(["make"], cwd=proj, env=env, capture_output=True, text=True, timeout=600)
            assert p.returncode == 0, doc + "\n" + p.stdout[-3000:] + p.stderr[-3000:]
            return p.stdout

        first = make()
        assert "Planning" in first and (proj / "firmware.elf").is_file(), first
        assert "Checking budget" not in make()  # nothing changed: nothing runs
        elf = (proj / "firmware.elf").stat().st_mtime_ns
        manifest.write_text(manifest.read_text().replace("budget: 64K", "budget: 60K"))
        later = max(elf, (proj / "build" / "mps2_an500" / "arena_gate.json").stat().st_mtime_ns) + 2_000_000_000
        os.utime(manifest, ns=(later, later))
        third = make()
        assert "Checking budget" in third and "budget 61,440 B" in third, third
        assert (proj / "firmware.elf").stat().st_mtime_ns > elf


def test_generate_replans_only_the_changed_model_and_rewrites_only_what_changed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """As SCons does, by content: a model touched with the same bytes, or the budget edited,
    re-plans nothing and leaves every table's file as it was (an outer build recompiles none);
    a model whose bytes change is re-planned alone. Before, every run of generate (each time
    Make or CMake saw an input newer) re-planned every model and rewrote every table. The board's
    gate is the outer build's stamp: newer than every input after each run."""
    proj = tmp_path / "p"
    (proj / "models").mkdir(parents=True)
    models.save(models.chain(), proj / "models" / "a.onnx")
    models.save(models.relu_chain(), proj / "models" / "b.onnx")
    text = ("defaults: {planner: greedy_size}\nmodels:\n  - {name: a, path: models/a.onnx}\n"
            "  - {name: b, path: models/b.onnx}\nboards:\n  - {name: mps2_an500, budget: 64K}\n")
    (proj / "arena.yaml").write_text(text)
    monkeypatch.chdir(proj)

    def generate() -> list[str]:
        assert cli.main(["generate", "arena.yaml", "--board", "mps2_an500", "--out", "out"]) == 0
        return [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("Planning ")]

    def stamps() -> dict[str, int]:
        return {str(p): p.stat().st_mtime_ns for p in (proj / "out" / "tables").rglob("*.c")}

    assert len(generate()) == 2
    tables = stamps()
    gate = proj / "out" / "mps2_an500" / "arena_gate.json"
    for edit in ("touch", "budget"):
        if edit == "touch":
            model = proj / "models" / "a.onnx"
            model.write_bytes(model.read_bytes())
        else:
            (proj / "arena.yaml").write_text(text.replace("64K", "60K"))
        assert generate() == [], edit
        assert stamps() == tables, edit
        assert gate.stat().st_mtime_ns >= max(p.stat().st_mtime_ns for p in proj.rglob("*.onnx")), edit
    assert "61,440 B" in gate.read_text() or '"budget": 61440' in gate.read_text()
    models.save(models.conv(), proj / "models" / "b.onnx")  # other bytes
    [line] = generate()
    assert "/b-" in line and stamps() != tables


def test_a_models_shape_error_in_a_build_names_the_manifest_entry(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A dynamic shape or a wrong input name, in a build, speaks the manifest: its file, line and
    field, ``input_shapes: {x: [...]}`` (it said ``--input-shape``, a flag the build has not), and
    for a symbolic dim that is not the batch no guess of 1."""
    proj = tmp_path / "p"
    (proj / "models").mkdir(parents=True)
    dyn = models.model([models.node("Relu", ["x"], ["y"], "r")], [models.vi("x", ["N", 3, "H", 8])],
                       [models.vi("y", ["N", 3, "H", 8])])
    models.save(dyn, proj / "models" / "dyn.onnx")
    top = "defaults: {planner: greedy_size}\nboards:\n  - mps2_an500\nmodels:\n"
    (proj / "arena.yaml").write_text(top + "  - name: dyn\n    path: models/dyn.onnx\n")
    monkeypatch.chdir(proj)
    assert cli.main(["generate", "arena.yaml", "--board", "mps2_an500", "--out", "out"]) == 2
    [err] = capsys.readouterr().err.strip().splitlines()
    assert err == ("arena.yaml:5:5: error: models[0]: model dyn (models/dyn.onnx): graph input 'x' has a dynamic "
                   "shape [N, 3, H, 8] (hint: pin it with input_shapes: {x: [1, 3, H, 8]} (put the real sizes for H))"), err
    (proj / "arena.yaml").write_text(top + "  - name: dyn\n    path: models/dyn.onnx\n    input_shapes: {inp: [1, 3, 4, 8]}\n")
    assert cli.main(["generate", "arena.yaml", "--board", "mps2_an500", "--out", "out"]) == 2
    [err] = capsys.readouterr().err.strip().splitlines()
    assert err.startswith("arena.yaml:7:19: error: models[0].input_shapes: model dyn (models/dyn.onnx): the model has "
                          "no graph input 'inp'") and "--input-shape" not in err, err
