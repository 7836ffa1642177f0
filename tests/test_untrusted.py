"""Issue 23: untrusted input never crashes, hangs or lies.

One test per defect of the audit (each failed before its fix): hostile .tflite content TFLM
trusts, the inputs that raised an arena bug (exit 3), the checks that passed a lie, and the
work that grew without a bound. Every bad input is one line and exit 2 (or 1 for a failed
check), never a signal, a traceback or exit 3.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest

import models as M
from tflite_models import pack, relu_model
from arena_tool.emit import tflite_write
from arena_tool.model import tflite_model
from arena_tool.cli import main

fb = tflite_model.schema()
ROOT = Path(__file__).resolve().parent.parent


def run(capsys: pytest.CaptureFixture, *argv: object) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def one_error(code: int, err: str, want: int = 2, words: str = "") -> str:
    """The command failed with exit ``want`` and exactly one error line (containing ``words``)."""
    lines = [ln for ln in err.strip().splitlines() if ln]
    assert code == want and len(lines) == 1 and "Traceback" not in err, (code, err)
    assert words in lines[0], lines[0]
    return lines[0]


# --- .tflite files edited after the converter --------------------------------------------

def _edit(what: str) -> Any:
    m = relu_model()
    sg = m.subgraphs[0]
    if what == "operator input":
        sg.operators[0].inputs = np.array([99], np.int32)
    elif what == "operator output":
        sg.operators[0].outputs = np.array([99], np.int32)
    elif what == "opcode":
        sg.operators[0].opcodeIndex = 99
    elif what == "tensor buffer":
        sg.tensors[0].buffer = 99
    elif what == "metadata buffer":
        md = fb.MetadataT()
        md.name, md.buffer = "OfflineMemoryAllocation", 99
        m.metadata = [md]
    elif what == "graph input":
        sg.inputs = np.array([7], np.int32)
    elif what == "graph output":
        sg.outputs = np.array([9999], np.int32)
    elif what == "no outputs":
        sg.outputs = np.array([], np.int32)
    elif what == "rank 100":
        m = relu_model(rank=100)
    elif what == "negative dimension":
        sg.tensors[0].shape = np.array([1, -3], np.int32)
    return m


EDITS = ["operator input", "operator output", "opcode", "tensor buffer", "metadata buffer", "graph input",
         "graph output", "no outputs", "rank 100"]


@pytest.mark.parametrize("what", EDITS)
@pytest.mark.parametrize("command", ["plan", "plan-tflite"])
def test_tflite_index_out_of_range_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture, what: str,
                                               command: str) -> None:
    path = tmp_path / "m.tflite"
    path.write_bytes(pack(_edit(what)))
    argv = ["plan", path] + (["-o", tmp_path / "p.tflite"] if command == "plan-tflite" else [])
    code, _, err = run(capsys, *argv)
    one_error(code, err, 2, str(path))


def _planned(tmp_path: Path, offsets: list[int], second_entry: bool = False) -> tuple[Path, Path]:
    model = tmp_path / "m.tflite"
    model.write_bytes(pack(relu_model()))
    data = tflite_write.planned_bytes(model.read_bytes(), str(model), offsets)
    if second_entry:
        m = tflite_model.unpack(data, "x")
        b = fb.BufferT()
        m.buffers.append(b)
        md = fb.MetadataT()
        md.name, md.buffer = "OfflineMemoryAllocation", len(m.buffers) - 1
        m.metadata.append(md)
        data = pack(m)
    planned = tmp_path / "p.tflite"
    planned.write_bytes(data)
    return model, planned


@pytest.mark.parametrize("offsets,second", [([-7, 0], False), ([0, 64], True), ([0, 1 << 30], False)])
def test_hostile_offline_plan_is_refused_before_tflm(tmp_path: Path, capsys: pytest.CaptureFixture,
                                                    offsets: list[int], second: bool) -> None:
    """TFLM takes offsets and metadata as they are: -7 was a double free, a second entry SIGSEGV."""
    model, planned = _planned(tmp_path, offsets, second)
    code, _, err = run(capsys, "verify", model, planned)
    one_error(code, err, 2, str(planned))


def test_a_tflm_crash_is_one_error_naming_the_model(tmp_path: Path) -> None:
    """TFLM runs in a child process: a crash there (offset -7, past the checks run_tflm makes first) is exit 2,
    not a signal."""
    from arena_tool.core.errors import ArenaError
    from arena_tool.run import tflm

    model, planned = _planned(tmp_path, [-7, 0])
    x = [[np.zeros((1, 16), np.float32)]]
    with pytest.raises(ArenaError) as info:
        tflm.run_child(planned.read_bytes(), str(planned), x, 1 << 20)
    assert info.value.exit_code == 2 and str(planned) in info.value.render() and "\n" not in info.value.render()


def test_rank_100_does_not_reach_tflm(tmp_path: Path) -> None:
    """plan accepted a rank-100 tensor and verify died of SIGSEGV in TFLM; now plan refuses it."""
    path = tmp_path / "m.tflite"
    path.write_bytes(pack(relu_model(rank=100)))
    r = subprocess.run([sys.executable, "-m", "arena_tool", "verify", str(path), str(path)], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, (r.returncode, r.stderr)


def unused_tensors(n: int) -> bytes:
    """relu_model with ``n`` tensors no operator, input or output uses (TFLM still allocates each)."""
    m = relu_model()
    sg = m.subgraphs[0]
    for i in range(n):
        t = fb.TensorT()
        t.name, t.type, t.shape, t.buffer = f"u{i}", fb.TensorType.FLOAT32, np.array([1, 4], np.int32), 0
        sg.tensors.append(t)
    return bytes(pack(m))


def test_100000_unused_tensors_plan_in_seconds(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """It took 155 s; a plan of the one Relu (2 arena tensors, 128 B), written into the model."""
    path = tmp_path / "m.tflite"
    path.write_bytes(unused_tensors(100_000))
    t0 = time.process_time()
    code, out, err = run(capsys, "plan", path, "-o", tmp_path / "p.tflite")
    assert code == 0, err
    assert "2 arena tensors" in out and "arena        128 B" in out, out
    assert time.process_time() - t0 < 20
    plan = json.loads((tmp_path / "p.plan.json").read_text())
    assert len(plan["buffers"]) == 2 and plan["arena_size"] == 128, plan["buffers"]


def test_unused_tensors_are_verified_in_tflm(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """verify gave TFLM an arena without room for its bookkeeping of 12,000 unused tensors ('Too many
    buffers (max is 9398)', exit 2 on a correct plan); now the arena grows with the tensor count."""
    model, planned = tmp_path / "m.tflite", tmp_path / "p.tflite"
    model.write_bytes(unused_tensors(12_000))
    code, _, err = run(capsys, "plan", model, "-o", planned)
    assert code == 0, err
    code, out, err = run(capsys, "verify", model, planned, "--runs", "1")
    assert code == 0 and "TFLM's head is arena's plan (128 B)" in out, (code, out, err)


def test_a_model_is_unpacked_once_per_command(monkeypatch: pytest.MonkeyPatch) -> None:
    """Unpacking is most of the work on a big model (100,000 tensors: 5 s); verify unpacked each model
    eight times. parse shares one model per bytes; unpack is a copy of one's own."""
    data = unused_tensors(10)
    calls = []
    real = tflite_model.unpack
    monkeypatch.setattr(tflite_model, "unpack", lambda d, p: calls.append(p) or real(d, p))
    first = tflite_model.parse(data, "a.tflite")
    assert tflite_model.parse(data, "b.tflite") is first and len(calls) <= 1
    assert real(data, "c").subgraphs[0].tensors is not first.subgraphs[0].tensors


def test_tflite_zero_scale_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    m = relu_model()
    for t in m.subgraphs[0].tensors:
        t.type = fb.TensorType.INT8
        q = fb.QuantizationParametersT()
        q.scale, q.zeroPoint = np.array([0.0], np.float32), np.array([0], np.int64)
        t.quantization = q
    path = tmp_path / "m.tflite"
    path.write_bytes(pack(m))
    code, _, err = run(capsys, "plan", path)
    one_error(code, err, 2, "scale")


# --- ONNX: quantization parameters, opsets, shapes -----------------------------------------

def qdq(scale: float = 0.05, w_scales: Any = None, w_zeros: Any = None) -> Any:
    m = M.qdq_conv()
    for init in m.graph.initializer:
        if init.name == "x_s":
            init.CopyFrom(M.const("x_s", np.array(scale, np.float32)))
        if init.name == "w_s" and w_scales is not None:
            init.CopyFrom(M.const("w_s", np.asarray(w_scales, np.float32)))
        if init.name == "w_z" and w_zeros is not None:
            init.CopyFrom(M.const("w_z", np.asarray(w_zeros, np.int8)))
    return m


@pytest.mark.parametrize("case", ["zero", "nan", "negative", "inf", "w zero", "w nan", "zp length", "scale length"])
def test_bad_quantization_parameters_are_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture, case: str) -> None:
    ws = np.linspace(0.01, 0.02, 8)
    model = {"zero": qdq(0.0), "nan": qdq(math.nan), "negative": qdq(-0.05), "inf": qdq(math.inf),
             "w zero": qdq(w_scales=np.where(np.arange(8) == 3, 0.0, ws)),
             "w nan": qdq(w_scales=np.where(np.arange(8) == 3, math.nan, ws)),
             "zp length": qdq(w_zeros=np.zeros(5)), "scale length": qdq(w_scales=ws[:5])}[case]
    path = M.save(model, tmp_path / "m.onnx")
    code, _, err = run(capsys, "plan", path)
    line = one_error(code, err, 2, path)
    assert "onnxsim" not in line


def relu(shape: list[Any], opset: int = 17) -> Any:
    return M.model([M.node("Relu", ["x"], ["y"])], [M.vi("x", shape)], [M.vi("y", shape)], opset=opset)


def test_opset_99_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path = M.save(relu([1, 16], opset=99), tmp_path / "m.onnx")
    code, _, err = run(capsys, "plan", path)
    one_error(code, err, 2, "opset")


def test_negative_dimension_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path = M.save(relu([1, -3]), tmp_path / "m.onnx")
    code, _, err = run(capsys, "plan", path)
    one_error(code, err, 2, "-3")
    path = M.save(relu([1, "n"]), tmp_path / "n.onnx")
    code, _, err = run(capsys, "plan", path, "--input-shape", "x=1,-3")
    one_error(code, err, 2, "-3")


def test_verify_takes_the_plans_input_shape(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """docs/reference/cli.md says every command takes --input-shape; verify refused it (argparse, exit 2)."""
    path = M.save(relu([1, "n"]), tmp_path / "n.onnx")
    plan = tmp_path / "p.json"
    code, _, err = run(capsys, "plan", path, "--input-shape", "x=1,16", "-o", plan)
    assert code == 0, err
    code, out, err = run(capsys, "verify", path, plan, "--input-shape", "x=1,16")
    assert code == 0, err
    code, _, err = run(capsys, "verify", path, plan, "--input-shape", "x=1,8")
    one_error(code, err, 2, "--input-shape x=1,8 differs from the plan's input shapes (x=1,16)")


def test_huge_shape_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """A Relu on [2^31, 2^31, 4] was an OverflowError in validate."""
    path = M.save(relu([2 ** 31, 2 ** 31, 4]), tmp_path / "m.onnx")
    code, _, err = run(capsys, "plan", path)
    assert code in (1, 2) and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err


def test_initializer_as_graph_output_is_named(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    m = M.model([M.node("Relu", ["x"], ["y"])], [M.vi("x", [1, 16])], [M.vi("y", [1, 16]), M.vi("w", [4])],
                [M.const("w", np.ones(4, np.float32))])
    path = M.save(m, tmp_path / "m.onnx")
    code, _, err = run(capsys, "plan", path)
    line = one_error(code, err, 2, "'w'")
    assert "re-plan" not in line and "constant" in line


# --- plan files that lie -------------------------------------------------------------------

def _plan(tmp_path: Path, capsys: pytest.CaptureFixture, model: Any = None, planner: str = "optimal") -> tuple[str, Path, dict[str, Any]]:
    path = M.save(model if model is not None else M.chain(), tmp_path / "m.onnx")
    plan = tmp_path / "p.json"
    code, _, err = run(capsys, "plan", path, "--planner", planner, "-o", plan)
    assert code == 0, err
    return path, plan, json.loads(plan.read_text())


def test_check_refuses_an_arena_size_bigger_than_its_buffers(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    model, plan, doc = _plan(tmp_path, capsys)
    doc["arena_size"] = 2 ** 40
    plan.write_text(json.dumps(doc))
    code, _, err = run(capsys, "check", model, plan)
    assert code == 1 and "arena_size" in err, err


def test_check_refuses_a_false_optimal_claim(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """A plan claiming optimal: true 4,096 B above what a greedy planner reaches is a lie."""
    model, plan, doc = _plan(tmp_path, capsys)
    top = max(b["offset"] + b["size"] for b in doc["buffers"])
    for b in doc["buffers"]:
        if b["offset"] + b["size"] == top:
            b["offset"] += 4096
    doc["arena_size"] = top + 4096
    doc["optimal"] = True
    plan.write_text(json.dumps(doc))
    code, _, err = run(capsys, "check", model, plan)
    assert code == 1 and "optimal" in err, err


@pytest.mark.parametrize("edit", ["permuted input shape", "arena_size 2^40", "extra buffer"])
def test_verify_on_an_edited_plan_is_not_a_bug(tmp_path: Path, capsys: pytest.CaptureFixture, edit: str) -> None:
    model, plan, doc = _plan(tmp_path, capsys)
    if edit == "permuted input shape":
        b = next(b for b in doc["buffers"] if b["kind"] == "input")
        b["shape"] = list(reversed(b["shape"]))
    elif edit == "arena_size 2^40":
        doc["arena_size"] = 2 ** 40
    else:
        extra = dict(doc["buffers"][0])
        extra["name"] = "extra"
        doc["buffers"].append(extra)
    plan.write_text(json.dumps(doc))
    code, _, err = run(capsys, "verify", model, plan)
    assert code in (1, 2) and "Traceback" not in err and len(err.strip().splitlines()) == 1, (code, err)


# --- inputs (.npz) ---------------------------------------------------------------------------

def _specs() -> Any:
    from arena_tool.run.firmware import TensorSpec

    return [TensorSpec("x", "float32", (1, 16))]


def test_npz_member_that_is_not_npy_is_exit_2(tmp_path: Path) -> None:
    from arena_tool.core.errors import ArenaError
    from arena_tool.run import firmware

    path = tmp_path / "in.npz"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("x.npy", b"not an array at all")
    with pytest.raises(ArenaError) as info:
        firmware.load_inputs(str(path), _specs())
    assert info.value.exit_code == 2


def test_npz_shape_is_checked_before_the_member_is_inflated(tmp_path: Path) -> None:
    """A 4 MB zip declaring a 4 GiB array: the header's shape is refused without reading the data."""
    import resource

    from arena_tool.core.errors import ArenaError
    from arena_tool.run import firmware

    header = {"descr": "<f4", "fortran_order": False, "shape": (1 << 30,)}
    path = tmp_path / "in.npz"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        with z.open("x.npy", "w", force_zip64=True) as f:
            np.lib.format.write_array_header_1_0(f, header)
            zeros = bytes(1 << 20)
            for _ in range(64):  # 64 MiB written: the test stays small, the header says 4 GiB
                f.write(zeros)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.process_time()
    with pytest.raises(ArenaError) as info:
        firmware.load_inputs(str(path), _specs())
    assert "shape" in info.value.render() and time.process_time() - t0 < 1
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 32 * 1024  # KiB: nothing inflated


# --- work that grew without a bound ----------------------------------------------------------

def add_chain(n: int) -> Any:
    """t0 -> Add(c) -> t1 -> ... -> tn: every Add in place on its input, one alias group of n + 1."""
    nodes = [M.node("Add", [f"t{i}", "c"], [f"t{i + 1}"]) for i in range(n)]
    return M.model(nodes, [M.vi("t0", [1, 16])], [M.vi(f"t{n}", [1, 16])], [M.const("c", np.ones((1, 16), np.float32))])


@pytest.mark.slow
def test_a_33000_op_chain_plans_in_under_30_s(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """It took 269 s: liveness re-read each alias group per op (quadratic); now a group keeps its totals."""
    path = M.save(add_chain(33_000), tmp_path / "chain.onnx")
    t0 = time.process_time()  # CPU seconds: planned in process, the machine's load not counted
    code, out, err = run(capsys, "plan", path, "-o", tmp_path / "p.json")
    assert code == 0, err
    assert time.process_time() - t0 < 30
    code, _, err = run(capsys, "check", path, tmp_path / "p.json")
    assert code == 0, err


def test_alias_groups_cost_one_step_per_op(tmp_path: Path) -> None:
    """4x the chain is about 4x the liveness time (it was 16x: 2,000 ops 1.2 s, 4,000 ops 4.9 s)."""
    from arena_tool.core.problem import ModelOptions
    from arena_tool.model import liveness

    times = []
    for n in (1000, 4000):
        lowered = liveness.lower(M.save(add_chain(n), tmp_path / f"c{n}.onnx"), ModelOptions())
        t0 = time.process_time()
        liveness.build(lowered, ModelOptions())
        times.append(time.process_time() - t0)
    assert times[1] < 8 * times[0] + 0.5, times


@pytest.mark.slow
def test_a_checkout_path_with_a_space_and_an_apostrophe_builds(tmp_path: Path) -> None:
    """The project and arena's own package both under "a b'c": every -I, -ffile-prefix-map and
    linker-script path stays one word (the audit's 'arena_model.h: No such file or directory')."""
    import builders

    pkg = builders.copy_package(tmp_path / "pkg dir's")
    project = builders.copy_example(tmp_path / "my project's copy")
    r = builders.scons(project, "-j2", "board=mps2_an500", pkg=pkg)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert (project / "example_firmware" / "build" / "mps2_an500" / "firmware.elf").is_file() or \
        any(project.rglob("firmware.elf")), r.stdout[-2000:]


@pytest.mark.slow
def test_a_model_that_cannot_be_planned_still_gets_its_boards_a_report(tmp_path: Path) -> None:
    """A runtime: tflm build of a hostile .tflite (a rank-100 tensor) died with rc 139 and wrote no report;
    now the plan refuses it (one line, exit 2) and the board's arena_report.json (and its views) says so."""
    import test_scons_tflm as T
    from arena_tool.builder import board_report

    proj = T.project(tmp_path / "p")
    (proj / "fw" / "chain.tflite").write_bytes(bytes(pack(relu_model(rank=100))))
    r = T.scons(proj, "link=0", "board=mps2_an500")
    lines = [ln for ln in r.stderr.splitlines() if ln.strip() and not ln.startswith("scons: *** ")]
    assert r.returncode == 2 and len(lines) == 1 and "Traceback" not in r.stderr, r.stderr[-3000:]
    assert lines[0].startswith("fw/chain.tflite: error: tensor 0 of subgraph 0 has 100 dimensions"), lines
    board = proj / "build" / "mps2_an500"
    rep = board_report.read(str(board / "arena_report.json"))
    assert rep.status == "error" and [(p.kind, p.model, p.message) for p in rep.problems] == [("model", "chain", lines[0])]
    assert (board / "arena_report.html").is_file() and (board / "arena_report.md").is_file()


@pytest.mark.slow
@pytest.mark.parametrize("obstacle", ["full disk", "cannot create"])
def test_scons_with_a_full_or_unwritable_build_folder_says_one_line(tmp_path: Path, obstacle: str) -> None:
    """SCons writes build/.sconsign.dblite after the last action; a full disk or a read-only build/ showed
    SCons's stack twice (the write, then _Dblite.__del__ at exit) and left build/.sconsign.tmp. The
    write is made to fail as root too (chmod stops no root): its temporary file a link to /dev/full
    (ENOSPC on every write, as on a full disk) or a folder (nothing can create it)."""
    import builders

    project = builders.copy_example(tmp_path / "p")
    r = builders.scons(project, "board=mps2_an500", "link=0")
    assert r.returncode == 0, r.stderr[-2000:]
    db, tmp = project / "build" / ".sconsign.dblite", project / "build" / ".sconsign.tmp"
    before = db.read_bytes()
    if obstacle == "full disk":
        tmp.symlink_to("/dev/full")
    else:
        tmp.mkdir()
    r = builders.scons(project, "board=mps2_an500", "link=0")
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1, r.stderr[-3000:]
    assert lines[0].startswith("build/.sconsign.dblite: error: cannot write SCons's signature database: "), lines
    assert ("free some space on the disk of build/" if obstacle == "full disk" else "make build/ writable") in lines[0]
    assert db.read_bytes() == before  # the old record, whole
    if obstacle == "full disk":
        assert not tmp.is_symlink() and not tmp.exists()  # the half-written temporary file is gone
    else:
        tmp.rmdir()
    r = builders.scons(project, "board=mps2_an500", "link=0")
    assert r.returncode == 0 and not r.stderr.strip(), r.stderr[-2000:]


@pytest.mark.parametrize("piece", ["SECTIONS {", "MEMORY {", "/*", " \n", "a", "a(", "INCLUDE x.ld\n", "}",
                                   "R : ORIGIN = 0, LENGTH = 1K\n"])
def test_the_linker_script_reader_is_linear(tmp_path: Path, piece: str) -> None:
    """A 1 MB script of one repeated piece is read in about 4x the time of 250 KB (nested SECTIONS
    blocks, unclosed comments, a line count per INCLUDE were quadratic: 4 MB took 12 s, 50 MB 20 min)."""
    from arena_tool.target import linkscript

    times = []
    for size in (250_000, 1_000_000):
        path = tmp_path / "s.ld"
        path.write_text(piece * (size // len(piece)))
        t0 = time.process_time()  # CPU seconds: a loaded machine slows one size, not the ratio's work
        linkscript.read_script(str(path))
        times.append(time.process_time() - t0)
    assert times[1] < 8 * times[0] + 0.3 and times[1] < 5, times


# --- issue 35: the second pass (board import, generate, explain, TFLM's writer) -------------------

def conv_without_options() -> bytes:
    """A CONV_2D that declares builtin_options_type 13 with no options table: arena plans it, TFLM's C++
    re-packer (tflite_flatbuffer_align) dereferences the missing table."""
    from tflite_models import build

    w, b = np.zeros((4, 3, 3, 2), np.float32), np.zeros(4, np.float32)
    return build([("x", "FLOAT32", [1, 8, 8, 2], None), ("w", "FLOAT32", [4, 3, 3, 2], w), ("b", "FLOAT32", [4], b),
                  ("y", "FLOAT32", [1, 6, 6, 4], None)], [("CONV_2D", [0, 1, 2], [3], (13, None))], [0], [3])


def test_tflms_repacker_crash_is_one_error_not_a_signal(tmp_path: Path) -> None:
    """plan -o (and generate, a runtime: tflm build) died with SIGSEGV (rc 139) in the re-packer, in
    arena's own process; it runs in a child now, and its crash is exit 2 naming the model."""
    path = tmp_path / "m.tflite"
    path.write_bytes(conv_without_options())
    r = subprocess.run([sys.executable, "-m", "arena_tool", "plan", str(path), "-o", str(tmp_path / "p.tflite")],
                       capture_output=True, text=True, timeout=120)
    line = one_error(r.returncode, r.stderr, 2, str(path))
    assert "re-packer failed" in line and "SIGSEGV" in line, line
    assert not (tmp_path / "p.tflite").exists()


def test_the_repacker_in_its_child_writes_the_same_bytes(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """The child re-packs a good model as before: the planned model TFLM reads, aligned to 16."""
    model = tmp_path / "m.tflite"
    model.write_bytes(pack(relu_model()))
    code, _, err = run(capsys, "plan", model, "-o", tmp_path / "p.tflite")
    assert code == 0, err
    data = (tmp_path / "p.tflite").read_bytes()
    assert data[4:8] == b"TFL3" and tflite_write.offline_plan(tflite_model.unpack(data, "p")) is not None


BAD_BOARD_SOURCES = {
    "list.json": "[1, 2]", "string.json": '"x"', "build5.json": '{"build": 5, "upload": {"maximum_size": 1024, '
    '"maximum_ram_size": 1024}}', "infinity.json": '{"upload": {"maximum_size": Infinity, "maximum_ram_size": 1}}',
    "nested.json": "[" * 100_000, "fcpu.json": '{"build": {"f_cpu": "' + "9" * 10_000 + 'L"}, "upload": '
    '{"maximum_size": 1024, "maximum_ram_size": 1024}}', "negative.json": '{"upload": {"maximum_size": -5, '
    '"maximum_ram_size": 1024}}', "nested.dts": "/ {" + "a {" * 5000 + "};" * 5000 + "};",
    "cells.dts": "/ { x { reg = " + "<0x20000000> " * 32 + "\n",
    "terms.ld": "MEMORY { FLASH (rx) : ORIGIN = 0, LENGTH = " + "1+" * 100_000 + "1\n RAM (rw) : ORIGIN = "
    "0x20000000, LENGTH = 64K }\n", "nul.ld": "MEMORY { FLASH (rx) : ORIGIN = 0, LENGTH = 1\0\n }\n",
    "comments.ld": "/* " * 300_000}


@pytest.mark.parametrize("name", sorted(BAD_BOARD_SOURCES))
def test_board_import_of_a_hostile_source_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture,
                                                      name: str) -> None:
    """44 inputs exited 3 (a list, NaN, deep nesting, 10,000 digits: RecursionError, OverflowError) and a
    devicetree of 32 cells without ';' backtracked 2^32 ways (N = 22: 5.9 CPU-s); each is exit 2 in
    well under a second now."""
    path = tmp_path / name
    path.write_text(BAD_BOARD_SOURCES[name])
    t0 = time.process_time()
    code, _, err = run(capsys, "board", "import", path, "-o", tmp_path / "x.yaml")
    one_error(code, err, 2, name)
    assert time.process_time() - t0 < 2


def test_a_nul_byte_in_a_manifest_or_an_external_data_location_is_named(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture) -> None:
    """Both were "this is an arena bug" (yaml's ReaderError before parsing, os.path.realpath's ValueError)."""
    m = M.chain()
    init = m.graph.initializer[0]
    init.data_location = onnx.TensorProto.EXTERNAL
    init.ClearField("raw_data")
    init.ClearField("float_data")
    init.external_data.add(key="location", value="w\0.bin")
    path = tmp_path / "m.onnx"
    path.write_bytes(m.SerializeToString())
    code, _, err = run(capsys, "plan", path)
    assert "NUL byte" in one_error(code, err, 2, str(path))
    (tmp_path / "c.onnx").write_bytes(M.chain().SerializeToString())
    manifest = tmp_path / "arena.yaml"
    manifest.write_text("models:\n  - {name: a\0b, path: c.onnx}\nboards: [mps2_an500]\n")
    code, _, err = run(capsys, "generate", manifest, "--board", "mps2_an500", "--out", tmp_path / "gen")
    assert "not allowed in YAML" in one_error(code, err, 2, f"{manifest}:2")


@pytest.mark.parametrize("edit", ["arena 2^40", "arena below the bound", "overlap", "optimal disproved",
                                  "alias off its root"])
def test_explain_refuses_a_plan_that_check_refuses(tmp_path: Path, capsys: pytest.CaptureFixture, edit: str) -> None:
    """explain PLAN.json printed a 2^40 B arena, one 16 B below the lower bound, and overlapping buffers
    (94 of 143 edited plans rc 0); it checks what the plan says of itself first (exit 1 like check)."""
    model = tmp_path / "m.onnx"
    model.write_bytes(M.chain().SerializeToString())
    plan_path = tmp_path / "p.json"
    assert main(["plan", str(model), "-o", str(plan_path)]) == 0
    doc = json.loads(plan_path.read_text())
    bufs = doc["buffers"]
    if edit == "arena 2^40":
        doc["arena_size"] = 2 ** 40
    elif edit == "arena below the bound":
        doc["arena_size"] -= 16
        doc["lower_bound"] -= 16
    elif edit == "overlap":
        for b in bufs:
            b["offset"] = 0
    elif edit == "optimal disproved":  # every buffer its own bytes: a valid plan, not an optimal one
        top = 0
        for b in bufs:
            b["offset"], top = top, top + b["size"]
        doc["arena_size"] = top
    else:
        bufs[1]["alias_of"] = bufs[0]["name"]
    plan_path.write_text(json.dumps(doc))
    capsys.readouterr()
    code, out, err = run(capsys, "explain", plan_path)
    one_error(code, err, 1, str(plan_path))
    assert run(capsys, "check", model, plan_path)[0] == 1


def test_check_of_100000_overlapping_buffers_is_bounded(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """A 25 MB plan of 100,022 buffers at one offset grew to 17.6 GiB and ran past 87 CPU-s: now a few
    seconds, the first 20 problems and a count of the rest."""
    import resource

    from arena_tool.plan import plancheck

    model = tmp_path / "m.onnx"
    model.write_bytes(M.chain().SerializeToString())
    plan_path = tmp_path / "p.json"
    assert main(["plan", str(model), "-o", str(plan_path)]) == 0
    doc = json.loads(plan_path.read_text())
    doc["buffers"] += [dict(doc["buffers"][0], name=f"x{k}") for k in range(100_000)]
    plan_path.write_text(json.dumps(doc))
    capsys.readouterr()
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.process_time()
    code, _, err = run(capsys, "check", model, plan_path)
    lines = err.strip().splitlines()
    rest = 100_000 + plancheck.OVERLAPS_SHOWN - 20  # a problem per extra buffer, the first 10 overlaps
    assert code == 1 and len(lines) == 21 and lines[-1].endswith(f"and {rest:,} more problems"), lines[-3:]
    assert time.process_time() - t0 < 30
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0 < 2 << 20  # KiB: under 2 GiB more


def test_a_fused_tflite_output_name_fits_the_firmwares_line() -> None:
    """TFLM's seanet models name outputs 'model/a;model/b;...' (hundreds of characters): fw_io.h builds a
    line in 160 characters, so 'output NAME float32 320' lost its type and count, every output read as
    missing, and run said "TFLite Micro did not run the model (exit status 0, status 0)". The printed
    name is one bounded word; the reader looks it up by the same word."""
    from arena_tool.emit import tflm_app
    from arena_tool.run import verify

    names = [";".join(f"model/seanet/conv1d_{i}/Conv1D{j}" for j in range(12)) for i in range(3)] + ["a b;c"]
    words = [tflm_app.print_name(n) for n in names]
    assert len(set(words)) == len(names)
    source = tflm_app.sources("host", [tflm_app.TflmEntry("m", (), 1024, tuple(names))])
    lines = ["model m"]
    for w in words:
        line = f"output {w} float32 4294967295"
        assert len(line) < 159 and f'"{w}"' in source, line  # fits fw_io.h's line with its newline
        lines += [line, "0 0x3f800000 1.000000"]
    got = verify.parse_output("\n".join(lines + ["status m 0"])).outputs["m"]
    assert sorted(got) == sorted(words) and all(got[w].view(np.float32)[0] == 1.0 for w in words)


def refused_qdq(tmp_path: Path) -> Path:
    """qdq_conv with a value_info that types its folded weight's DequantizeLinear output as double:
    onnxruntime refuses the file; arena (which folds the weight) plans and runs it."""
    m = M.qdq_conv()
    w = next(i for i in m.graph.initializer if i.name == "w")
    m.graph.value_info.append(onnx.helper.make_tensor_value_info("wf", onnx.TensorProto.DOUBLE, list(w.dims)))
    path = tmp_path / "refused.onnx"
    path.write_bytes(m.SerializeToString())
    return path


def test_onnxruntime_refusing_the_model_file_is_seen(tmp_path: Path) -> None:
    from arena_tool.run import firmware

    assert "does not match expected type" in (firmware.ort_refuses(str(refused_qdq(tmp_path))) or "")
    good = tmp_path / "good.onnx"
    good.write_bytes(M.qdq_conv().SerializeToString())
    assert firmware.ort_refuses(str(good)) is None


@pytest.mark.slow
def test_run_says_what_it_compared_with(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """run printed "match: every output equals onnxruntime's" for a QDQ model onnxruntime refuses: its
    reference was arena's own re-export. The line names the lowering and the refusal; a warning says it."""
    path = refused_qdq(tmp_path)
    code, out, err = run(capsys, "run", path, "--board", "host")
    assert code == 0, out + err
    last = out.strip().splitlines()[-1]
    assert last == (f"match: every output equals onnxruntime's run of arena's integer (QOperator) lowering of {path} "
                    f"(onnxruntime refuses the file itself) within its tolerance"), last
    assert "warning: onnxruntime refuses the model file itself" in err, err


@pytest.mark.parametrize("reader", ["make", pytest.param("ninja", marks=pytest.mark.slow)])
def test_a_depfile_path_with_a_colon_or_a_backslash_reads_back(tmp_path: Path, reader: str) -> None:
    """GNU make could not read arena.d when a path held ':' (a second rule separator) or '\\' (written
    doubled, which make reads as two). Each path is written so both make and Ninja read it back, or
    refused in one line."""
    import shutil

    from arena_tool import build_steps
    from arena_tool.core.errors import ArenaError

    if shutil.which(reader) is None:
        pytest.skip(f"{reader} is not installed")
    folder = tmp_path / "a:b c#d$e\\f"
    folder.mkdir()
    inputs = [folder / "m.onnx", folder / "x\\y.yaml"]
    for p in inputs:
        p.write_text("x")
    dep = tmp_path / "out.d"
    build_steps._write_depfile(str(dep), [str(tmp_path / "out")], [str(p) for p in inputs])
    if reader == "make":
        (tmp_path / "Makefile").write_text(f"include out.d\n{tmp_path}/out:\n\t$(file >names.txt,$^)\n")
        r = subprocess.run(["make", "-s", str(tmp_path / "out")], cwd=tmp_path, capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        assert (tmp_path / "names.txt").read_text().strip() == " ".join(str(p) for p in inputs)
    else:
        (tmp_path / "build.ninja").write_text("rule w\n  command = touch $out\n  depfile = out.d\n  deps = gcc\n"
                                              f"build {tmp_path}/out: w\n")
        r = subprocess.run(["ninja"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stdout + r.stderr
        r = subprocess.run(["ninja", "-t", "deps", str(tmp_path / "out")], cwd=tmp_path, capture_output=True, text=True, timeout=60)
        assert [ln.strip() for ln in r.stdout.splitlines()[1:] if ln.strip()] == [str(p) for p in inputs], r.stdout
    for bad in ("tab\there", "end\\", "back\\ space"):
        with pytest.raises(ArenaError) as info:
            build_steps._make_word(str(tmp_path / bad))
        assert "\n" not in info.value.render()


def test_a_second_build_in_one_folder_is_refused_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """Two builds at once in one tree interleaved their records: in 1 of 3 trials every later build said
    "rpi_pico: the link failed" until build/ was deleted. The folder's lock is held by the first; the
    second is one line, exit 2; once it is released a build runs."""
    import fcntl

    from arena_tool.core import files

    (tmp_path / "m.onnx").write_bytes(M.chain().SerializeToString())
    (tmp_path / "arena.yaml").write_text("models:\n  - {name: m, path: m.onnx}\nboards: [mps2_an500]\n")
    out = tmp_path / "out"
    out.mkdir()
    holder = open(out / files.LOCK_NAME, "w")  # another process's build, as the OS sees it: an open file's lock
    fcntl.flock(holder, fcntl.LOCK_EX | fcntl.LOCK_NB)
    code, _, err = run(capsys, "generate", tmp_path / "arena.yaml", "--board", "mps2_an500", "--out", out)
    assert "another build is running" in one_error(code, err, 2, files.LOCK_NAME)
    assert sorted(p.name for p in out.iterdir()) == [files.LOCK_NAME]  # nothing written beside it
    holder.close()
    code, _, err = run(capsys, "generate", tmp_path / "arena.yaml", "--board", "mps2_an500", "--out", out)
    assert code == 0, err
    fcntl.flock(open(out / files.LOCK_NAME), fcntl.LOCK_EX | fcntl.LOCK_NB)  # released when generate ended


@pytest.mark.parametrize("what", ["onnx", "tflite", "input", "manifest", "plan"])
def test_a_fifo_is_refused_not_waited_on(tmp_path: Path, capsys: pytest.CaptureFixture, what: str) -> None:
    """A FIFO as the model or --input hung (open() waits for a writer) or was "not found"."""
    import os
    import threading

    fifo = tmp_path / {"onnx": "m.onnx", "tflite": "m.tflite", "input": "x.npz", "manifest": "arena.yaml",
                       "plan": "p.json"}[what]
    os.mkfifo(fifo)
    model = tmp_path / "c.onnx"
    model.write_bytes(M.chain().SerializeToString())
    argv = {"onnx": ["plan", fifo], "tflite": ["plan", fifo], "input": ["run", model, "--board", "host", "--input", fifo],
            "manifest": ["generate", fifo, "--board", "mps2_an500", "--out", tmp_path / "o"],
            "plan": ["check", model, fifo]}[what]
    unblock = threading.Timer(20, lambda: open(fifo, "wb").close())  # a hang ends (and fails) rather than stalls
    unblock.start()
    try:
        code, _, err = run(capsys, *argv)
    finally:
        unblock.cancel()
    assert "is a FIFO, not a regular file" in one_error(code, err, 2, str(fifo))


def test_an_initializer_of_an_undefined_data_type_is_named(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """Found by the fuzz (seed 0, o323): data_type 57 reached numpy_helper.to_array, a KeyError, exit 3."""
    m = M.chain()
    m.graph.initializer[0].data_type = 57
    path = tmp_path / "m.onnx"
    path.write_bytes(m.SerializeToString())
    code, _, err = run(capsys, "plan", path)
    assert "data type 57" in one_error(code, err, 2, str(path))


def test_a_region_name_of_27000_characters_is_read_in_linear_time(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """Found by the fuzz (seed 0, ld282): a MEMORY line cut into a 27 KB word took 300 CPU-s in board import
    (every character of the word a start of the region pattern, each scanning to its end)."""
    path = tmp_path / "s.ld"
    path.write_text("MEMORY\n{\n  FLASH (rx) : ORIGIN = 0x08000000, LE" + "Infinity" * 3400 + "\n  RAM (rw) : ORIGIN = "
                    "0x20000000, LENGTH = 64K\n}\n" + "MEMORY {" * 3000)
    t0 = time.process_time()
    code, _, err = run(capsys, "board", "import", path, "--name", "s", "-o", tmp_path / "s.yaml")
    assert code == 2 and time.process_time() - t0 < 2, (code, err)


def test_lost_output_lines_are_truncation_not_a_mismatch() -> None:
    """At load 24 QEMU dropped 2,940 of 36,864 printed values (its stdio device writes without blocking
    into a full pipe; it writes to a file now): run reported a MISMATCH, max error inf. Each printout
    is checked against its declared count and indexes: what is missing is "output truncated"."""
    from arena_tool.run import firmware, verify

    whole = ["model m", "output y float32 4"] + [f"{i} 0x3f800000 1.000000" for i in range(4)] + ["status m 0"]
    assert verify.parse_output("\n".join(whole)).truncated == {}
    lost = whole[:3] + whole[5:]  # values 1 and 2 lost: a gap and a short count
    parsed = verify.parse_output("\n".join(lost))
    assert parsed.truncated == {"m": {"y": "2 of 4 values, 1 out of order"}}
    cut = whole[:4] + whole[6:]  # the tail lost: a short count
    assert verify.parse_output("\n".join(cut)).truncated == {"m": {"y": "2 of 4 values"}}
    lines, ok = firmware.outputs_match("\n".join(lost), [("m", "unused.onnx", None)])  # type: ignore[list-item]
    assert not ok and lines == ["m: output truncated: y arrived with 2 of 4 values, 1 out of order; run again"]


def test_verify_of_a_model_onnxruntime_refuses_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """Found by the slow fuzz sweep (46 of 1,400 ONNX cases): arena plans a model onnxruntime refuses
    (MatMul dimensions, a float Reshape shape, a Conv's dilations), and verify was exit 3 with
    onnxruntime's traceback; it is exit 2 naming the model."""
    path = refused_qdq(tmp_path)
    plan = tmp_path / "p.json"
    assert main(["plan", str(path), "-o", str(plan)]) == 0
    capsys.readouterr()
    code, _, err = run(capsys, "verify", path, plan)
    assert "onnxruntime cannot run the model" in one_error(code, err, 2, str(path))
