"""The kernels' scratch buffers (RequestScratchBufferInArena) are buffers of a .tflite plan.

Small models built here run in TFLM's host interpreter (reference kernels): the head TFLM uses
with arena's plan is the plan, scratch included. The sizes per kernel set are checked against
CMSIS-NN's formulas on the shared models (skipped where ../shared is absent).
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from arena_tool.cli import main
from arena_tool.core.problem import ModelOptions, Plan, Status, Tensor
from arena_tool.model import tflite_model, tflm_scratch
from arena_tool.plan import plancheck, planfile, planners, planning
from arena_tool.run import tflm
from conftest import absent
from shared_paths import MLPERF, TFLM_EXAMPLES
from tflite_models import build, opts

fb = tflite_model.schema()
LSTM = TFLM_EXAMPLES / "trained_lstm_int8.tflite"
VWW = MLPERF / "visual_wake_words__vww_96_int8.tflite"
KWS = MLPERF / "keyword_spotting__kws_ref_model.tflite"


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def mean_model() -> bytes:
    """x [1,4,4,8] -> MEAN over axes 1,2 (reference kernel: int rank and axis buffers) -> m [1,1,1,8]
    -> m + m: the MEAN's scratch is live with x and m, the peak."""
    axes = np.array([1, 2], np.int32)
    return build([("x", "FLOAT32", [1, 4, 4, 8], None), ("axes", "INT32", [2], axes),
                  ("m", "FLOAT32", [1, 1, 1, 8], None), ("y", "FLOAT32", [1, 1, 1, 8], None)],
                 [("MEAN", [0, 1], [2], _keep_dims()), ("ADD", [2, 2], [3], opts("AddOptions"))], [0], [3])


def _custom_model() -> bytes:
    """mean_model with its ADD made a custom op MyOp, which arena has no scratch rule for."""
    import flatbuffers

    m = tflite_model.unpack(mean_model(), "mean.tflite")  # changed below: a copy of its own
    code = m.operatorCodes[m.subgraphs[0].operators[1].opcodeIndex]
    code.builtinCode, code.deprecatedBuiltinCode, code.customCode = fb.BuiltinOperator.CUSTOM, 32, "MyOp"
    b = flatbuffers.Builder(1024)
    b.Finish(m.Pack(b), file_identifier=b"TFL3")
    return bytes(b.Output())


def _keep_dims():
    kind, o = opts("ReducerOptions")
    o.keepDims = True
    return kind, o


def test_scratch_buffers_are_planned_and_tflm_uses_the_plan(tmp_path, capsys):
    src = tmp_path / "mean.tflite"
    src.write_bytes(mean_model())
    mp = tflite_model.model_problem(str(src), ModelOptions())
    scratch = [(t.name, t.size, t.first_op, t.last_op) for t in mp.tensors if t.kind == "scratch"]
    assert scratch == [("scratch:0.1", 16, 1, 1), ("scratch:0.0", 16, 1, 1)]  # 4 x rank 4, 4 x 2 axes: 16 B each
    out = tmp_path / "p.tflite"
    code, text, err = run(capsys, "plan", src, "-o", out)
    assert code == 0, err
    plan = planfile.load(str(tmp_path / "p.plan.json"))
    assert plan.arena_size == plan.lower_bound == 512 + 32 + 32 and plan.optimal  # x 512, m 32, scratch 32
    assert [b.kind for b in plan.buffers].count("scratch") == 2
    report = tflm.verify(str(src), str(out), runs=1)
    assert report.failures == [], report.failures
    assert report.tflm_planned.head == plan.arena_size <= report.tflm_model.head
    assert run(capsys, "check", src, tmp_path / "p.plan.json")[0] == 0


def test_check_refuses_scratch_tflm_would_not_put_there(tmp_path, capsys):
    """A scratch buffer moved, or left out, is a plan whose head TFLM would not use."""
    src = tmp_path / "mean.tflite"
    src.write_bytes(mean_model())
    assert run(capsys, "plan", src, "-o", tmp_path / "p.tflite")[0] == 0
    doc = json.loads((tmp_path / "p.plan.json").read_text())
    for b in doc["buffers"]:
        if b["name"] == "scratch:0.0":
            b["offset"] += 512
    doc["arena_size"] += 512
    doc["optimal"], doc["status"] = False, "heuristic"
    (tmp_path / "moved.json").write_text(json.dumps(doc))
    code, _, err = run(capsys, "check", src, tmp_path / "moved.json")
    assert code == 1 and "scratch:0.0: offset 1072, but TFLM places this kernel scratch buffer at" in err
    doc = json.loads((tmp_path / "p.plan.json").read_text())
    doc["buffers"] = [b for b in doc["buffers"] if b["kind"] != "scratch"]
    (tmp_path / "none.json").write_text(json.dumps(doc))
    code, _, err = run(capsys, "check", src, tmp_path / "none.json")
    assert code == 1 and "tensor scratch:0.0 has no buffer in the plan" in err


def test_unknown_custom_op_scratch_is_never_optimal(tmp_path, capsys):
    """A custom op arena has no rule for may request scratch: the plan says so and claims no optimality."""
    src = tmp_path / "custom.tflite"
    src.write_bytes(_custom_model())
    mp = tflite_model.model_problem(str(src), ModelOptions())
    assert mp.unknown_scratch == ("operator 1 (CUSTOM:MyOp)",)
    pm = planning.plan_model(str(src), ModelOptions(), "optimal", planners.Params(time_limit=2))
    assert pm.plan.optimal is False and pm.plan_file.unknown_scratch == ("operator 1 (CUSTOM:MyOp)",)
    planfile.write(str(tmp_path / "p.json"), pm.plan_file)
    code, out, err = run(capsys, "check", src, tmp_path / "p.json")
    assert code == 0, err
    from arena_tool.builder import gate

    use = gate.model_use("custom", str(tmp_path / "p.json"), pm.plan_file)
    assert use.unknown_scratch == ("operator 1 (CUSTOM:MyOp)",) and not use.proven  # nor in the build's report
    assert use.to_json()["unknown_scratch"] == ["operator 1 (CUSTOM:MyOp)"]
    doc = json.loads((tmp_path / "p.json").read_text())
    doc["optimal"], doc["status"] = True, "proven"
    (tmp_path / "claim.json").write_text(json.dumps(doc))
    code, _, err = run(capsys, "check", src, tmp_path / "claim.json")
    assert code == 1 and "omits the scratch buffers of operator 1 (CUSTOM:MyOp)" in err


def test_tflm_first_fit_of_unequal_scratch_loses_the_optimality_claim():
    """TFLM places an op's scratch buffers itself, largest first at the lowest fit: around a 64 B gap it
    puts the 48 there and both 32s above (160 B), where the planner's optimum packs the two 32s in
    the gap and the 48 above (144 B). The settled plan is TFLM's layout and no longer claims optimal."""
    tensors = (Tensor("t0", "activation", "uint8", (16,), 16, 16, 0, 1), Tensor("t1", "activation", "uint8", (16,), 16, 16, 0, 1),
               *(Tensor(f"s{j}", "scratch", "uint8", (n,), n, n, 1, 1) for j, n in enumerate((48, 32, 32))))
    mp = tflite_model.TfliteProblem(model="m.tflite", model_sha256="0" * 64, options=ModelOptions(), schedule=(),
                                    tensors=tensors, weights_bytes=0)
    problem = mp.problem()
    best = Plan((0, 80, 96, 16, 48), 144, "optimal", True, Status.PROVEN, 128)
    settled = planning.tflm_settled(mp, problem, best)
    assert settled.offsets == (0, 80, 16, 96, 128) and settled.arena_size == 160
    assert settled.optimal is False and settled.best_bound == 144
    one = planning.tflm_settled(mp, problem, dataclasses.replace(best, offsets=(0, 80, 96, 16, 48)))
    assert one.arena_size == 160  # whatever the planner chose: TFLM decides where scratch goes


@pytest.mark.skipif(absent(LSTM) or absent(VWW) or absent(KWS), reason="../shared's models are absent")
def test_scratch_sizes_per_kernel_set():
    """The LSTM's four state-sized buffers (CMSIS-NN's integer path three); CMSIS-NN's im2col of a 3x3x3
    (VWW) and 10x4x1 (KWS) convolution, 2 x int16 x columns rounded up to 4, and its average pool's
    int32 per channel (DSP only)."""
    def sizes(path, kernels):
        mp = tflite_model.model_problem(str(path), ModelOptions(kernels=kernels))
        return sorted((t.name, t.elements) for t in mp.tensors if t.kind == "scratch")

    assert sizes(LSTM, "reference") == [(f"scratch:0.{j}", 40) for j in range(4)]  # batch 1 x 20 states x int16 cell
    assert sizes(LSTM, "cmsis_nn_dsp") == [(f"scratch:0.{j}", 40) for j in range(3)]
    assert sizes(VWW, "reference") == [] and sizes(KWS, "reference") == []
    assert sizes(VWW, "cmsis_nn_dsp") == [("scratch:0.0", 2 * 2 * 28), ("scratch:27.0", 4 * 256)]
    assert sizes(KWS, "cmsis_nn_dsp") == [("scratch:0.0", 2 * 2 * 40), ("scratch:9.0", 4 * 64)]
    assert sizes(KWS, "cmsis_nn_nodsp") == [("scratch:0.0", 2 * 2 * 40)]  # no DSP: no pooling buffer
    mve = dict(sizes(VWW, "cmsis_nn_mve"))
    assert mve["scratch:0.0"] == 4 * 16 * 2  # 27 columns: two 16-lane rows, 4 of them
    assert mve["scratch:1.0"] == 4 * 124 * 3 * 3  # Helium's depthwise: 4 x 124 channels x 3x3, even for 3x3
    assert tflm_scratch.kernels_for("cmsis_nn", "cortex-m7") == "cmsis_nn_dsp"
    assert tflm_scratch.kernels_for("cmsis_nn", "cortex-m55") == "cmsis_nn_mve"
    assert tflm_scratch.kernels_for("cmsis_nn", "cortex-m3") == "cmsis_nn_nodsp"


@pytest.mark.skipif(absent(VWW) or absent(LSTM), reason="../shared's models are absent")
def test_cmsis_nn_plan_holds_its_scratch_and_check_rederives_it(tmp_path, capsys):
    """--kernels cmsis_nn_dsp: the plan records the kernel set, holds CMSIS-NN's buffers where TFLM puts
    them, stays at the lower bound (VWW int8 55,296 B: the buffers fit beside the tensors), and check
    re-derives them; the same plan checked as reference kernels is refused."""
    for path, head in ((VWW, 55_296), (LSTM, 1_488)):
        out = tmp_path / f"{path.stem}.plan.json"
        code, text, err = run(capsys, "plan", path, "--kernels", "cmsis_nn_dsp", "-o", out)
        assert code == 0, err
        plan = planfile.load(str(out))
        assert plan.options.kernels == "cmsis_nn_dsp" and json.loads(out.read_text())["options"]["kernels"]
        assert plan.arena_size == plan.lower_bound == head and plan.optimal
        mp = tflite_model.model_problem(str(path), plan.options)
        assert plancheck.check(plan, mp, str(out)) == []
        assert plancheck.check(plan, tflite_model.model_problem(str(path), ModelOptions()), str(out)) != []
        again = tmp_path / "again.plan.json"
        assert run(capsys, "plan", path, "--kernels", "cmsis_nn_dsp", "-o", again)[0] == 0
        assert _without_seconds(again) == _without_seconds(out)  # same inputs, same plan
        # The host runs reference kernels: their scratch, placed by TFLM around the same tensors, is its head.
        _, alloc = tflm.tflm_measure(str(path), plan, str(out))
        assert alloc["head"] == head


def _without_seconds(path):
    doc = json.loads(path.read_text())
    doc.pop("seconds", None)
    return doc


def test_verify_reports_the_head_measured_for_scratch_arena_cannot_size(tmp_path, capsys, monkeypatch):
    """verify of a plan that names unknown scratch: TFLM's head above the plan is the measurement, said so,
    not a failure; any other difference still fails."""
    src = tmp_path / "custom.tflite"
    src.write_bytes(_custom_model())
    assert run(capsys, "plan", src, "-o", tmp_path / "p.tflite")[0] == 0
    plan = planfile.load(str(tmp_path / "p.plan.json"))
    outputs = [[np.zeros((1, 1, 1, 8), np.float32)]]
    head = {"extra": 64}

    def fake_tflm(data, path, inputs):  # TFLM with the custom op registered: its kernel requested 64 B more
        planned = tflite_model.offline_offsets(tflite_model.parse(data, path)) is not None
        return tflm.Run(tflm.Allocation(plan.arena_size + (head["extra"] if planned else 128), 100, 0), outputs)

    monkeypatch.setattr(tflm, "run_tflm", fake_tflm)
    monkeypatch.setattr(tflm, "litert_available", lambda: "not here")
    code, out, err = run(capsys, "verify", src, tmp_path / "p.tflite", "--runs", "1")
    assert code == 0, err
    assert f"measured: TFLM's head is {plan.arena_size + 64:,} B, 64 B above the plan, for the scratch buffers of " \
           f"operator 1 (CUSTOM:MyOp)" in out and "is measured (arena's plan" in out
    head["extra"] = -16  # below the plan: TFLM did not use the plan as written
    code, out, err = run(capsys, "verify", src, tmp_path / "p.tflite", "--runs", "1")
    assert code == 1 and "differs from arena's plan" in err


def test_an_op_its_kernel_would_refuse_is_not_sized_and_not_a_crash(tmp_path):
    """A MEAN without its axes input (TFLM's kernel would refuse it): arena cannot size its scratch, so
    the plan says so, rather than a traceback."""
    data = build([("x", "FLOAT32", [1, 4, 4, 8], None), ("m", "FLOAT32", [1, 1, 1, 8], None)],
                 [("MEAN", [0, -1], [1], _keep_dims())], [0], [1])
    src = tmp_path / "bad_mean.tflite"
    src.write_bytes(data)
    assert tflite_model.model_problem(str(src), ModelOptions()).unknown_scratch == ("operator 0 (MEAN)",)


@pytest.mark.parametrize("bias,dsp,mve", [("INT64", 2 * 18 * 2, 4 * 3 * 8 * 2), ("INT32", None, None)])
def test_cmsis_nn_int16_convolution(tmp_path, bias, dsp, mve):
    """CMSIS-NN's 16x8 convolution (int64 bias): 2 x int16 x columns (Helium: 4 rows of 8-lane blocks);
    with an int32 bias TFLM runs the reference kernel there, which requests nothing."""
    w = np.ones((1, 3, 3, 2), np.int8)
    b = np.zeros(1, np.int64 if bias == "INT64" else np.int32)
    kind, o = opts("Conv2DOptions")
    o.padding, o.strideW, o.strideH, o.dilationWFactor, o.dilationHFactor = 0, 1, 1, 1, 1
    data = build([("x", "INT16", [1, 4, 4, 2], None), ("w", "INT8", [1, 3, 3, 2], w), ("b", bias, [1], b),
                  ("y", "INT16", [1, 4, 4, 1], None)], [("CONV_2D", [0, 1, 2], [3], (kind, o))], [0], [3])
    src = tmp_path / "conv16.tflite"
    src.write_bytes(data)
    for kernels, want in (("cmsis_nn_dsp", dsp), ("cmsis_nn_mve", mve), ("reference", None)):
        mp = tflite_model.model_problem(str(src), ModelOptions(kernels=kernels))
        assert [t.elements for t in mp.tensors if t.kind == "scratch"] == ([want] if want else []), kernels


def test_transpose_convolution_per_kernel_set(tmp_path):
    """An int8 TRANSPOSE_CONV of 32 input channels, stride 2: the reference kernel's int32 per output
    element; CMSIS-NN's reversed-filter convolution (2 x int16 x 3x3x32 columns) and the reversed
    filter itself (32 x 3 x 3 x 4)."""
    kind, o = opts("TransposeConvOptions")
    o.padding, o.strideW, o.strideH = 0, 2, 2
    shape = np.array([1, 8, 8, 4], np.int32)
    w = np.ones((4, 3, 3, 32), np.int8)
    data = build([("shape", "INT32", [4], shape), ("w", "INT8", [4, 3, 3, 32], w),
                  ("x", "INT8", [1, 4, 4, 32], None), ("y", "INT8", [1, 8, 8, 4], None)],
                 [("TRANSPOSE_CONV", [0, 1, 2], [3], (kind, o))], [2], [3])
    src = tmp_path / "tconv.tflite"
    src.write_bytes(data)

    def sizes(kernels):
        mp = tflite_model.model_problem(str(src), ModelOptions(kernels=kernels))
        return [t.elements for t in reversed(mp.tensors) if t.kind == "scratch"]  # request order

    assert sizes("reference") == [4 * 8 * 8 * 4]
    assert sizes("cmsis_nn_dsp") == [2 * 2 * 3 * 3 * 32, 32 * 3 * 3 * 4]


def test_verify_measures_scratch_arena_cannot_size_in_tflm(tmp_path, capsys, monkeypatch):
    """With MEAN's rule withheld, its scratch is unknown to the plan (544 B: x and m); verify runs the real
    TFLM, whose head is 576 B, and its probe (every tensor at offset 0) measures the 32 B MEAN requests."""
    src = tmp_path / "mean.tflite"
    src.write_bytes(mean_model())
    known = tflm_scratch.requests
    monkeypatch.setattr(tflm_scratch, "requests",
                        lambda model, op, op_type, *a: None if op_type == "MEAN" else known(model, op, op_type, *a))
    assert run(capsys, "plan", src, "-o", tmp_path / "p.tflite")[0] == 0
    assert planfile.load(str(tmp_path / "p.plan.json")).arena_size == 544
    code, out, err = run(capsys, "verify", src, tmp_path / "p.tflite", "--runs", "1")
    assert code == 0, err
    assert "measured: TFLM's head is 576 B, 32 B above the plan, for the scratch buffers of operator 0 (MEAN)" in out
    assert "measured in TFLM (every tensor at offset 0): operator 0 (MEAN) requests 32 B of scratch" in out


def test_stated_op_scratch_makes_the_plan_tflms_head(tmp_path, capsys, monkeypatch):
    """The measured bytes stated with --op-scratch: the plan holds them, is optimal again, records them, and
    TFLM's head is the plan (576 B); an operator index the model lacks is one clear error."""
    src = tmp_path / "mean.tflite"
    src.write_bytes(mean_model())
    known = tflm_scratch.requests
    monkeypatch.setattr(tflm_scratch, "requests",
                        lambda model, op, op_type, *a: None if op_type == "MEAN" else known(model, op, op_type, *a))
    code, out, err = run(capsys, "plan", src, "--op-scratch", "0=16,16", "-o", tmp_path / "p.tflite")
    assert code == 0, err
    plan = planfile.load(str(tmp_path / "p.plan.json"))
    assert plan.arena_size == 576 and plan.optimal and plan.unknown_scratch is None
    assert json.loads((tmp_path / "p.plan.json").read_text())["options"]["op_scratch"] == {"0": [16, 16]}
    assert run(capsys, "check", src, tmp_path / "p.plan.json")[0] == 0
    report = tflm.verify(str(src), str(tmp_path / "p.plan.json"), runs=1)  # the plan states the bytes
    assert report.failures == [] and report.tflm_planned.head == report.arena_head == 576
    code, _, err = run(capsys, "plan", src, "--op-scratch", "7=16")
    assert code == 2 and "op_scratch names operator 7; the model has 2 operators (0..1)" in err
    code, _, err = run(capsys, "plan", src, "--op-scratch", "0=x")
    assert code == 2 and "'0=x' is not OP=BYTES" in err
