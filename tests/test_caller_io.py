"""Caller-owned I/O buffers (``io_buffers: caller``): the graph inputs and outputs live outside
the arena, in buffers the application owns; the plan, the check, the gate and the report count
them apart, and arena_run_io takes their pointers."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from conftest import ROOT, has_tool, require_shared, require_tool

import arena_tool
import quantized as Q
import zoo
from arena_tool import cli
from arena_tool.builder import gate
from arena_tool.core.problem import ModelOptions, lower_bound
from arena_tool.emit import codegen
from arena_tool.model import liveness
from arena_tool.plan import plancheck, planfile, planners, planning
from arena_tool.run import firmware, verify
from test_int8_io import KWS_INT8, VWW_INT8, _int8_models, _zoo_twin

MODELS = ROOT / "example_firmware" / "models"
CALLER = ModelOptions(io_buffers="caller")
BOTH = ModelOptions(io="int8", io_buffers="caller")
PARAMS = planners.Params(time_limit=2.0)


def _plan(path: Path | str, options: ModelOptions) -> planning.PlannedModel:
    return planning.plan_model(str(path), options, "optimal", PARAMS)


def _io(plan: planfile.PlanFile) -> list[planfile.PlanBuffer]:
    return [b for b in plan.buffers if b.kind in ("input", "output")]


def _excludes_every_io_byte(path: Path | str, options: ModelOptions) -> None:
    pm = _plan(path, options)
    plan = pm.plan_file
    ios = {b.name for b in _io(plan)}
    assert ios and all(b.offset == 0 and b.alias_of is None for b in _io(plan))
    assert not any(b.alias_of in ios for b in plan.buffers)  # nothing in the arena shares their bytes
    assert ios.isdisjoint(b.name for b in pm.problem.buffers)
    assert plan.in_arena == tuple(b for b in plan.buffers if b.name not in ios)
    assert plan.lower_bound == lower_bound(pm.problem.buffers)
    assert plancheck.check(plan, liveness.model_problem(str(path), options), "p.json") == []
    with_io = _plan(path, dataclasses.replace(options, io_buffers="arena")).plan
    assert plan.arena_size <= with_io.arena_size


@pytest.mark.parametrize("name", ["kws", "kws_int8", "resnet8", "autoencoder"])
def test_the_arena_excludes_every_io_byte(name):
    _excludes_every_io_byte(MODELS / f"{name}.onnx", CALLER)


def test_every_int8_model_leaves_its_io_out_of_the_arena(qcache):
    for _, path in _int8_models(qcache):
        for options in (CALLER, BOTH):
            _excludes_every_io_byte(path, options)


def test_an_input_larger_than_the_arena_stays_out_of_it():
    _excludes_every_io_byte(require_shared(VWW_INT8), CALLER)  # its float input is 110,592 B, the arena 55,296 B


def test_mobilenet_v2_floor_with_caller_buffers(qcache):
    assert _plan(_zoo_twin("mobilenet_v2", "qdq", qcache), BOTH).plan.arena_size <= 129_024


def test_vww_floor_with_caller_buffers():
    assert _plan(require_shared(VWW_INT8), BOTH).plan.arena_size <= 55_296


def test_check_refuses_an_arena_buffer_relying_on_a_caller_buffer(tmp_path):
    path = MODELS / "kws.onnx"
    pm = _plan(path, CALLER)
    plan = pm.plan_file
    mp = liveness.model_problem(str(path), CALLER)
    inp = next(b for b in plan.buffers if b.kind == "input")
    act = next(b for b in plan.buffers if b.kind == "activation" and b.alias_of is None)
    moved = dataclasses.replace(plan, buffers=tuple(
        dataclasses.replace(b, offset=64) if b.name == inp.name else
        dataclasses.replace(b, alias_of=inp.name, offset=0) if b.name == act.name else b for b in plan.buffers))
    problems = plancheck.check(moved, mp, "p.json")
    assert any(f"{inp.name}: offset 64 in its caller-owned buffer" in p for p in problems), problems
    assert any(f"{act.name}: alias_of {inp.name!r}, a caller-owned buffer" in p for p in problems), problems
    # and the same plan read as io_buffers: arena does not match the model
    out = tmp_path / "p.json"
    planfile.write(str(out), plan)
    doc = json.loads(out.read_text())
    assert doc["options"]["io_buffers"] == "caller"
    del doc["options"]["io_buffers"]
    out.write_text(json.dumps(doc))
    assert cli.main(["check", str(path), str(out)]) == 1


def test_verify_replays_caller_buffers_outside_the_arena(tmp_path):
    for name in ("kws", "kws_int8"):
        out = tmp_path / f"{name}.json"
        assert cli.main(["plan", str(MODELS / f"{name}.onnx"), "--io-buffers", "caller", "-o", str(out)]) == 0
        assert cli.main(["check", str(MODELS / f"{name}.onnx"), str(out)]) == 0
        r = verify.verify(str(MODELS / f"{name}.onnx"), planfile.load(str(out)))
        assert r.ok, r.message


def test_the_gate_and_the_summary_count_them_apart():
    pm = _plan(KWS_INT8, BOTH)
    use = gate.model_use("kws_int8", "p.json", pm.plan_file)
    assert use.caller_io == sum(b.size for b in _io(pm.plan_file)) > 0
    assert use.arena_size == pm.plan.arena_size
    assert use.to_json()["caller_io"] == use.caller_io
    assert "caller_io" not in gate.model_use("k", "p.json", _plan(KWS_INT8, ModelOptions()).plan_file).to_json()


def test_the_tables_point_caller_regions_at_weak_buffers():
    pm = _plan(KWS_INT8, BOTH)
    low = plancheck.lowered_model(str(KWS_INT8), pm.plan_file)
    header, source = codegen.model_sources(pm.plan_file, low, "kws_int8")
    ins = [b for b in pm.plan_file.buffers if b.kind == "input"]
    assert f"extern uint8_t kws_int8_input0[{ins[0].size}];" in header
    assert f"__attribute__((weak, aligned(16))) uint8_t kws_int8_input0[{ins[0].size}];" in source
    assert '{"caller", kws_int8_input0, ' in source and "static arena_region_t kws_int8_regions" in source
    assert {"kws_int8_input0", "kws_int8_output0"} <= set(codegen.header_ids("kws_int8", pm.plan_file))
    plain, src = codegen.model_sources(_plan(KWS_INT8, ModelOptions(io="int8")).plan_file, low, "kws_int8")
    assert '"caller"' not in src and "kws_int8_input0[" not in plain


# --- firmware --------------------------------------------------------------------------------

def _run(path: Path, board: str, tmp_path: Path, *flags: str) -> dict:
    report = tmp_path / f"{path.stem}-{board}-{len(flags)}.json"
    rc = cli.main(["run", str(path), "--board", board, *flags, "--json", str(report)])
    doc = json.loads(report.read_text())
    assert rc == 0, doc
    return doc


def _boundaries(qcache: Path) -> list[Path]:
    """One int8 model per kind of boundary the caller's buffers meet: QDQ lowered and QOperator,
    a QLinearConv reading the input and a QLinearSoftmax writing the output (zoo, MLPerf) or a
    QGemm at both ends (AD01), and a shipped tflite2onnx int8 file. Every int8 model's kernels run
    on the host in test_int8_io (exact integers) and test_models_run; caller buffers only move the
    I/O tensors, and the plan of every model keeps them out of the arena (above)."""
    ad01 = [p for p in Q.mlperf_float_models() if "ad01" in p.name]
    return [_zoo_twin("squeezenet", "qdq", qcache), _zoo_twin("mobilenet_v3", "qoperator", qcache),
            *(Q.quantized(p, fmt, True, qcache) for p in ad01 for fmt in Q.FORMATS),
            *(p for p in (VWW_INT8,) if p.exists())]


def test_int8_models_run_with_caller_buffers_on_the_host(qcache, tmp_path):
    require_tool("gcc")
    for path in _boundaries(qcache):
        for flags in (("--io-buffers", "caller"), ("--io", "int8", "--io-buffers", "caller")):
            doc = _run(path, "host", tmp_path, *flags)
            assert all(o["ok"] for o in doc["outputs"])
            if "int8" in flags:
                assert all(o["max_abs_error"] == 0 for o in doc["outputs"])


def test_caller_buffers_run_on_qemu(qcache, tmp_path):
    require_tool("arm-none-eabi-gcc")
    require_tool("qemu-system-arm")
    for path in (_zoo_twin("squeezenet", "qdq", qcache), _zoo_twin("resnet", "qoperator", qcache), KWS_INT8):
        doc = _run(path, "mps2_an500", tmp_path, "--io", "int8", "--io-buffers", "caller")
        assert all(o["ok"] and o["max_abs_error"] == 0 for o in doc["outputs"])
        assert doc["arena_size"] == _plan(path, BOTH).plan.arena_size


APP = r"""
#include <stdio.h>
#include <string.h>
#include "model_kws_int8.h"
#include "arena_board.h"

/* The application's own buffers, as a camera DMA buffer would be: passed to arena_run_io. */
static int8_t in_buf[%(in_size)d] __attribute__((aligned(16)));
static int8_t out_buf[%(out_size)d] __attribute__((aligned(16)));

int main(void)
{
    const arena_model_t *m = &kws_int8_model;
    void *ins[1] = {in_buf};
    void *outs[1] = {out_buf};
    int failed = -1, rc, i;
    for (i = 0; i < (int)sizeof in_buf; ++i) in_buf[i] = (int8_t)((i * 7919 + 13) %% 251 - 125);
    memset(arena, 0xAB, arena_size);
    rc = arena_run_io(m, arena, ins, outs, &failed);
    if (rc != 0) return rc;
    if (arena_tensor_data(m, arena, m->inputs[0]) != (void *)in_buf) return 90;
    if (arena_tensor_data(m, arena, m->outputs[0]) != (void *)out_buf) return 91;
    for (i = 0; i < (int)m->tensors[m->outputs[0]].elements; ++i) printf("%%d\n", out_buf[i]);
    return 0;
}
"""


def test_arena_run_io_reads_and_writes_the_applications_buffers(tmp_path):
    """A host application passing its own input and output buffers: the outputs onnxruntime's."""
    gcc = require_tool("gcc")
    pm = _plan(KWS_INT8, BOTH)
    plan = pm.plan_file
    low = plancheck.lowered_model(str(KWS_INT8), plan)
    h, c = codegen.model_sources(plan, low, "kws_int8")
    bh, bc = codegen.arena_sources("host", plan.arena_size, [("kws_int8", 0)])
    for name, text in (("model_kws_int8.h", h), ("model_kws_int8.c", c), ("arena_board.h", bh), ("arena_board.c", bc)):
        (tmp_path / name).write_text(text)
    b_in, b_out = (next(b for b in plan.buffers if b.kind == k) for k in ("input", "output"))
    (tmp_path / "app.c").write_text(APP % {"in_size": b_in.elements, "out_size": b_out.elements})
    exe = tmp_path / "app"
    runtime = Path(arena_tool.runtime_dir())
    subprocess.run([gcc, "-std=c99", "-O1", "-I", str(tmp_path), "-I", str(runtime), *map(str, runtime.glob("*.c")),
                    str(tmp_path / "model_kws_int8.c"), str(tmp_path / "arena_board.c"), str(tmp_path / "app.c"),
                    "-o", str(exe)], check=True)
    r = subprocess.run([str(exe)], capture_output=True, text=True)
    assert r.returncode == 0, r
    got = np.array([int(v) for v in r.stdout.split()], np.int8)
    x = ((np.arange(b_in.elements) * 7919 + 13) % 251 - 125).astype(np.int8).reshape(b_in.shape)
    io = firmware.IntegerIO.of(str(KWS_INT8), plan)  # onnxruntime takes the float x stands for
    b = io.inputs[0]
    real = firmware.dequantize(x, b.quant.scale[0], b.quant.zero_point[0])
    assert np.array_equal(firmware.quantize(real, b.dtype, b.quant.scale[0], b.quant.zero_point[0]), x)
    ref = firmware.reference(str(KWS_INT8), {b.model: real}, list(low.outputs), io.lowered)
    assert np.array_equal(got, ref[low.outputs[0]].reshape(-1))


SCONSTRUCT = """\
import os
import arena_tool
env = Environment(tools=["arena"], toolpath=[arena_tool.site_tools_dir()])
app = os.path.join(arena_tool.runtime_dir(), "example")
env.ArenaFirmware("arena.yaml", sources=[os.path.join(app, "startup.c"), os.path.join(app, "main.c")], cpppath=[app])
"""


def test_scons_builds_gates_and_reports_caller_buffers(tmp_path):
    require_tool("arm-none-eabi-gcc")
    shutil.copy2(KWS_INT8, tmp_path / "kws_int8.onnx")
    shutil.copy2(MODELS / "kws.onnx", tmp_path / "kws.onnx")
    (tmp_path / "arena.yaml").write_text(
        "sharing: sequential\nregion: auto\nbudget: 100%\n"
        "defaults: {planner: optimal, io_buffers: caller}\n"
        "models:\n  - {name: kws_int8, path: kws_int8.onnx, io: int8}\n  - {name: kws, path: kws.onnx}\n"
        "boards: [mps2_an500]\n")
    (tmp_path / "SConstruct").write_text(SCONSTRUCT)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(ROOT)
    targets = ["board=mps2_an500"] + (["run"] if has_tool("qemu-system-arm") else [])
    r = subprocess.run([sys.executable, "-m", "SCons", "-Q", *targets], cwd=tmp_path, capture_output=True,
                       text=True, timeout=600, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    out = tmp_path / "build" / "mps2_an500"
    rep = json.loads((out / "arena_report.json").read_text())
    uses = {m["name"]: m for m in rep["models"]}
    plans = {n: planfile.load(str(tmp_path / uses[n]["plan"])) for n in uses}
    for n, p in plans.items():
        assert uses[n]["caller_io"] == sum(b.size for b in _io(p)) and uses[n]["arena_size"] == p.arena_size
    assert rep["arena_size"] == max(p.arena_size for p in plans.values())
    assert "caller-owned I/O (the application's buffers, outside the arena and its budget): kws_int8 " in r.stdout
    assert "caller-owned I/O" in (out / "arena_report.html").read_text()
    assert "caller-owned I/O" in (out / "arena_report.md").read_text()
    if "run" in targets:
        assert "status kws_int8 0" in r.stdout and "status kws 0" in r.stdout
        # every model's run line says what it was compared with, or why not (io: int8 had no line)
        assert "run: mps2_an500: kws: outputs match onnxruntime" in r.stdout, r.stdout
        assert ("run: mps2_an500: kws_int8: not compared with onnxruntime: io: int8 (main.c's pattern fills its int8 "
                "inputs, not the model's float ones; arena-tool run kws_int8.onnx --board mps2_an500 --io int8 "
                "--io-buffers caller compares it)") in r.stdout, r.stdout


# --- explain and the over-budget hint --------------------------------------------------------

def test_explain_states_what_each_choice_saves(capsys):
    from arena_tool.report import explain

    require_shared(VWW_INT8)
    rows = {r["option"]: r for r in explain.io_choices(_plan(VWW_INT8, ModelOptions()).plan_file, "optimal", PARAMS)}
    assert rows["io"]["without"] == 138_240 and rows["io"]["with"] == _plan(VWW_INT8, ModelOptions(io="int8")).plan.arena_size
    assert rows["io"]["saved"] == rows["io"]["without"] - rows["io"]["with"] > 0 and not rows["io"]["chosen"]
    assert rows["io_buffers"]["with"] == _plan(VWW_INT8, CALLER).plan.arena_size
    chosen = {r["option"]: r for r in explain.io_choices(_plan(VWW_INT8, BOTH).plan_file, "optimal", PARAMS)}
    assert chosen["io"]["chosen"] and chosen["io"]["with"] == _plan(VWW_INT8, BOTH).plan.arena_size
    assert chosen["io"]["without"] == _plan(VWW_INT8, CALLER).plan.arena_size
    # a float model: io: int8 does not apply, and says why
    assert cli.main(["explain", str(MODELS / "kws.onnx")]) == 0
    out = capsys.readouterr().out
    assert "io: int8             does not apply: int8 I/O: input 'input' (float32) is not quantized" in out
    assert "io_buffers: caller   saves nothing here" in out


def _gate_message(tmp_path: Path, path: Path, options: ModelOptions, board: str) -> str:
    from builders import target

    t = target(tmp_path, board, models="m")
    plan = _plan(path, options).plan_file
    rep = gate.gate(t, [("m", "build/plans/m.plan.json", plan)])
    return " ".join(p.message for p in rep.problems)


def test_the_over_budget_hint_proposes_io_int8_only_where_it_helps(tmp_path):
    require_shared(VWW_INT8)
    msg = _gate_message(tmp_path, VWW_INT8, ModelOptions(), "{name: mps2_an500, budget: 64K}")
    assert "io: int8 for m (its float input 'input_1' is 80 % of the peak" in msg, msg
    assert "quantizing" not in msg  # the model is int8 already
    done = _gate_message(tmp_path, VWW_INT8, ModelOptions(io="int8"), "{name: mps2_an500, budget: 32K}")
    assert "io: int8" not in done and "over by" in done  # never what the plan already does
    assert "io: int8" not in _gate_message(tmp_path, MODELS / "kws.onnx", ModelOptions(),
                                           "{name: mps2_an500, budget: 16K}")  # a float model: quantize it first
