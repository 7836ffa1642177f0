"""TensorFlow Lite models: liveness under TFLM's rules, the planned model with TFLM's
OfflineMemoryAllocation metadata, and the proof in the real TFLite Micro interpreter.

The error cases and the operator-order test use small .tflite files built here with the
tflite-micro wheel's flatbuffer object API; the MLPerf Tiny tests skip where
../shared/models/mlperf_tiny is absent.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import flatbuffers
import numpy as np
import pytest

from arena_tool.model import liveness, tflite_model
from arena_tool.plan import plancheck, planfile, planners, planning
from arena_tool.emit import tflite_write
from arena_tool.run import tflm
from arena_tool.cli import main
from arena_tool.core.errors import ArenaError, CheckFailed
from arena_tool.core.problem import ModelOptions
from arena_tool.core.schema import check_json
from shared_paths import TFLM_EXAMPLES
from tflite_models import C1, MLPERF, branch_model, build, chain_model, opts

fb = tflite_model.schema()

KWS_HYBRID = "keyword_spotting__kws_ref_model_float32.tflite"  # TFLM refuses it: hybrid
MLPERF_MODELS = sorted(p.name for p in MLPERF.glob("*.tflite") if p.name != KWS_HYBRID) if MLPERF.is_dir() else []
needs_mlperf = pytest.mark.skipif(not MLPERF_MODELS, reason=f"{MLPERF} is absent on this machine")
# TFLM's own GreedyMemoryPlanner head, as its RecordingMicroAllocator reports it, and the lower bound.
VWW = {"visual_wake_words__vww_96_int8.tflite": (73_728, 55_296),
       "visual_wake_words__vww_96_float.tflite": (294_912, 221_184)}
# TFLM's examples: TFLM's own head (reference kernels; its LSTM kernels request scratch buffers).
EXAMPLE_HEADS = {"trained_lstm_int8.tflite": 1_536, "dtln_noise_suppression.tflite": 1_424,
                 "hello_world_int8.tflite": None, "micro_speech_quantized.tflite": None}
EXAMPLES = sorted(p.name for p in TFLM_EXAMPLES.glob("*.tflite")) if TFLM_EXAMPLES.is_dir() else []
# Every shared .tflite TFLM runs: (folder, name) as a test id "name".
SHARED_TFLITE = [(MLPERF, n) for n in MLPERF_MODELS] + [(TFLM_EXAMPLES, n) for n in EXAMPLES]


# --- small models made with the object API ---------------------------------------------

def save(tmp_path, name, data):
    p = tmp_path / name
    p.write_bytes(data)
    return str(p)


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


# --- liveness under TFLM's rules ---------------------------------------------------------

def test_tflm_live_ranges_sizes_and_weights(tmp_path):
    path = save(tmp_path, "chain.bin", chain_model())  # detected by content, not by name
    mp = liveness.model_problem(path, ModelOptions())
    assert isinstance(mp, tflite_model.TfliteProblem) and planfile.model_kind(mp) == "tflite"
    by = {t.name: t for t in mp.tensors}
    assert set(by) == {"x", "a", "b", "y"}  # c1, c2 have buffer data: weights
    # scope 0 = the subgraph's inputs, op k at k + 1; an op's inputs and outputs live together
    assert [(by[n].first_op, by[n].last_op) for n in "xaby"] == [(0, 3), (1, 2), (2, 3), (3, 3)]
    assert [by[n].kind for n in "xaby"] == ["input", "activation", "activation", "output"]
    assert all(t.size == 64 and t.alias_of is None for t in mp.tensors)
    assert mp.weights_bytes == 128
    assert [(s.node, s.op_type, s.domain) for s in mp.schedule] == [(0, "ADD", "tflite"), (1, "MUL", "tflite"),
                                                                     (2, "ADD", "tflite")]
    assert [t.name for t in mp.tensors] == ["y", "b", "a", "x"]  # TFLM's greedy ties: descending index


def test_compare_check_and_export_take_tflite(tmp_path, capsys):
    path = save(tmp_path, "chain.tflite", chain_model())
    code, out, err = run(capsys, "compare", path, "--planners", "greedy_size,optimal")
    assert code == 0 and "3 ops, 4 buffers" in out, err
    code, out, err = run(capsys, "export", path, "-o", tmp_path / "p.csv")
    assert code == 0 and "4 buffers" in out, err
    assert run(capsys, "plan", path, "-o", tmp_path / "p.json")[0] == 0
    code, out, err = run(capsys, "check", path, tmp_path / "p.json")
    assert code == 0 and "no overlaps" in out, err


def test_names_made_unique_and_variables_persistent(tmp_path):
    data = build([("t", "INT8", [1, 8], None), ("t", "INT8", [1, 8], None), ("", "INT8", [1, 8], None),
                  ("state", "INT8", [1, 8], None)],
                 [("ADD", [0, 3], [1], opts("AddOptions")), ("ADD", [1, 1], [2], opts("AddOptions"))], [0], [2])
    m = fb.ModelT.InitFromObj(fb.Model.GetRootAsModel(data, 0))
    m.subgraphs[0].tensors[3].isVariable = True
    b = flatbuffers.Builder(1024)
    b.Finish(m.Pack(b), file_identifier=b"TFL3")
    mp = liveness.model_problem(save(tmp_path, "v.tflite", bytes(b.Output())), ModelOptions())
    assert mp.names == ("t", "t#1", "tensor2", "state")
    assert mp.variables == ("state",) and "state" not in {t.name for t in mp.tensors}
    pm = planning.plan_model(str(tmp_path / "v.tflite"), ModelOptions(), "optimal", planners.Params())
    out = str(tmp_path / "v.plan.json")  # build -> write -> load: persistent kept, the same bytes
    planfile.write(out, pm.plan_file)
    doc = json.loads(Path(out).read_text())
    assert doc["model_kind"] == "tflite" and doc["persistent"] == ["state"]
    typed = planfile.load(out)
    assert typed == pm.plan_file and typed.kind == "tflite" and typed.persistent == ("state",)
    assert planfile.dumps(typed.to_json()) == Path(out).read_text()


# --- bad inputs: one clear message, exit 2 -----------------------------------------------

def _bad_models():
    good = chain_model()
    while_loop = build([("x", "INT32", [1], None), ("y", "INT32", [1], None)],
                       [("WHILE", [0], [1], opts("WhileOptions"))], [0], [1], subgraphs=2)
    dynamic = build([("x", "FLOAT32", [1, 16], None, [1, -1]), ("c1", "FLOAT32", [1, 16], C1),
                     ("y", "FLOAT32", [1, 16], None, [1, -1])], [("ADD", [0, 1], [2], opts("AddOptions"))], [0], [2])
    strings = build([("x", "STRING", [1], None), ("y", "STRING", [1], None)], [("RESHAPE", [0], [1])], [0], [1])
    hybrid = build([("x", "FLOAT32", [1, 16], None), ("w", "INT8", [4, 16], np.ones((4, 16), np.int8)),
                    ("y", "FLOAT32", [1, 4], None)],
                   [("FULLY_CONNECTED", [0, 1, -1], [2], opts("FullyConnectedOptions"))], [0], [2])
    return {
        "truncated": (good[: len(good) * 2 // 3], "truncated"),
        "header": (good[:6], "truncated"),
        "identifier": (good[:4] + b"ABCD" + good[8:], "file identifier"),
        "while": (while_loop, "control flow"),
        "dynamic": (dynamic, "dynamic shape"),
        "string": (strings, "string tensor"),
        "hybrid": (hybrid, "hybrid model"),
    }


@pytest.mark.parametrize("case", sorted(_bad_models()))
def test_bad_model_one_clear_message_exit_2(case, tmp_path, capsys):
    data, words = _bad_models()[case]
    path = save(tmp_path, f"{case}.tflite", data)
    code, out, err = run(capsys, "plan", path)
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith(f"arena-tool: {path}: error: ") and words in lines[0] and "(hint: " in lines[0]


@pytest.mark.skipif(not (MLPERF / KWS_HYBRID).is_file(), reason="the MLPerf kws float32 model is absent")
def test_kws_float32_is_hybrid_and_tflm_refuses_it_too(capsys):
    path = MLPERF / KWS_HYBRID
    code, out, err = run(capsys, "plan", path)
    assert code == 2 and "hybrid model" in err and "TFLite Micro refuses" in err and len(err.splitlines()) == 1
    data = path.read_bytes()
    with pytest.raises(ArenaError, match="Hybrid models are not supported"):  # TFLM says the same
        tflm.run_tflm(data, str(path), [[np.zeros((1, 49, 10, 1), np.float32)]])


def test_batch_dimension_of_one_is_not_dynamic(tmp_path):
    data = build([("x", "FLOAT32", [1, 16], None, [-1, 16]), ("c1", "FLOAT32", [1, 16], C1),
                  ("y", "FLOAT32", [1, 16], None, [-1, 16])], [("ADD", [0, 1], [2], opts("AddOptions"))], [0], [2])
    mp = liveness.model_problem(save(tmp_path, "b.tflite", data), ModelOptions())
    assert [t.shape for t in mp.tensors] == [(1, 16), (1, 16)]


def test_non_topological_order_is_refused(tmp_path, capsys):
    path = save(tmp_path, "branch.tflite", branch_model())
    code, out, err = run(capsys, "plan", path, "--order", "2,0,1", "-o", tmp_path / "p.tflite")
    assert code == 2 and "reads tensor a before it exists" in err and "topological" in err
    assert not (tmp_path / "p.tflite").exists()


# --- the planned model -----------------------------------------------------------------------

def test_planned_model_metadata_replaced_not_duplicated(tmp_path, capsys):
    src = save(tmp_path, "chain.tflite", chain_model())
    out1, out2 = tmp_path / "p1.tflite", tmp_path / "p2.tflite"
    assert run(capsys, "plan", src, "-o", out1)[0] == 0
    assert (tmp_path / "p1.plan.json").is_file()
    assert run(capsys, "plan", out1, "-o", out2)[0] == 0  # re-plan the planned model
    m1 = tflite_model.parse(out1.read_bytes(), "p1")
    m2 = tflite_model.parse(out2.read_bytes(), "p2")
    names = [tflite_write._name(md) for md in m2.metadata]
    assert names.count("OfflineMemoryAllocation") == 1 and len(m2.buffers) == len(m1.buffers)
    md = next(md for md in m2.metadata if tflite_write._name(md) == "OfflineMemoryAllocation")
    words = np.frombuffer(np.asarray(m2.buffers[md.buffer].data, np.uint8).tobytes(), "<i4")
    off = planfile.load(str(tmp_path / "p2.plan.json")).offsets()
    assert list(words[:3]) == [1, 1, 6]  # version, subgraphs, N tensors
    assert list(words[3:]) == [off["x"], -1, -1, off["a"], off["b"], off["y"]]  # weights -1
    data = out2.read_bytes()
    assert data[4:8] == b"TFL3"
    for b in m2.buffers:  # TFLM's re-packer: buffer data 16-byte aligned in the file
        if b.data is not None and len(b.data) > 8:
            assert data.find(np.asarray(b.data, np.uint8).tobytes()) % 16 == 0
    # `-o x.json` still writes the plan JSON only
    assert run(capsys, "plan", src, "-o", tmp_path / "x.json")[0] == 0
    assert planfile.load(str(tmp_path / "x.json")).model_kind == "tflite"


def test_overlapped_plan_changes_tflm_output_and_writer_refuses_it(tmp_path, capsys):
    src = save(tmp_path, "chain.tflite", chain_model())
    data = Path(src).read_bytes()
    pm = planning.plan_model(src, ModelOptions(), "optimal", planners.Params())
    good = tflite_write.planned_bytes(data, src, tflite_write.offsets_for(pm.mp, pm.plan_file))
    bad_plan = dataclasses.replace(  # every tensor at 0: a and b overwrite x, which y still reads
        pm.plan_file, buffers=tuple(dataclasses.replace(b, offset=0) for b in pm.plan_file.buffers))
    bad = tflite_write.planned_bytes(data, src, tflite_write.offsets_for(pm.mp, bad_plan))  # the unchecked hook
    x = [[np.linspace(-2, 2, 16, dtype=np.float32).reshape(1, 16)]]
    ref, ok, broken = (tflm.run_tflm(d, src, x) for d in (data, good, bad))
    assert ok.outputs[0][0].tobytes() == ref.outputs[0][0].tobytes()
    assert broken.outputs[0][0].tobytes() != ref.outputs[0][0].tobytes()  # TFLM used the offsets, unchecked
    assert broken.allocation.head == 64 and ok.allocation.head == pm.plan.arena_size
    out = tmp_path / "bad.tflite"
    with pytest.raises(CheckFailed, match="refusing to write a planned model: .* overlap"):
        tflite_write.write_planned(src, bad_plan, str(out))
    assert not out.exists()
    bad_path = save(tmp_path, "bad_planned.tflite", bad)
    code, out_text, err = run(capsys, "verify", src, bad_path, "--runs", "2")
    assert code == 1
    assert "arena's plan overlaps: " in err and "x [0, 64)" in err and "TFLM: output y:" in err  # named


def test_verify_fails_when_tflm_head_is_not_arenas(tmp_path, capsys):
    """x (live throughout) left to TFLM (-1) cannot fit between arena's a@0, b@64, y@128: TFLM's head grows."""
    src = save(tmp_path, "chain.tflite", chain_model())
    offsets = [-1, -1, -1, 0, 64, 128]  # x, c1, c2, a, b, y
    path = save(tmp_path, "p.tflite", tflite_write.planned_bytes(Path(src).read_bytes(), src, offsets))
    code, out_text, err = run(capsys, "verify", src, path, "--runs", "1")
    assert code == 1
    assert "TFLM's head 256 B differs from arena's plan 192 B: TFLM planned x itself" in err
    assert "bit-identical" in out_text  # the outputs are right; the head is not arena's


def test_operator_order_permutation(tmp_path, capsys):
    src = save(tmp_path, "branch.tflite", branch_model())
    out = tmp_path / "p.tflite"
    code, _, err = run(capsys, "plan", src, "--order", "1,0,2", "-o", out)
    assert code == 0, err
    m = tflite_model.parse(out.read_bytes(), str(out))
    written = [tflite_model.builtin_name(m, op) for op in m.subgraphs[0].operators]
    assert written == ["MUL", "ADD", "ADD"]
    assert [int(op.outputs[0]) for op in m.subgraphs[0].operators] == [4, 3, 5]
    assert planfile.load(str(tmp_path / "p.plan.json")).order == [1, 0, 2]
    code, out_text, err = run(capsys, "check", src, tmp_path / "p.plan.json")  # check re-derives in plan order
    assert code == 0, err
    code, out_text, err = run(capsys, "verify", src, out, "--runs", "3")
    assert code == 0, err
    assert "bit-identical" in out_text
    code, out_text, err = run(capsys, "verify", src, tmp_path / "p.plan.json")  # a plan JSON works too
    assert code == 0, err


def test_writer_refuses_what_if_plans(tmp_path, capsys):
    src = save(tmp_path, "chain.tflite", chain_model())
    code, _, err = run(capsys, "plan", src, "--activation-dtype", "int8", "-o", tmp_path / "p.tflite")
    assert code == 2 and "what-if TFLM does not run" in err and not (tmp_path / "p.tflite").exists()
    assert run(capsys, "plan", src, "--activation-dtype", "int8")[0] == 0  # planning the what-if is fine
    code, _, err = run(capsys, "plan", src, "--scratch", "row")
    assert code == 2 and "arena plans from the kernels option" in err


def test_verify_without_litert_says_so(tmp_path, capsys, monkeypatch):
    src = save(tmp_path, "chain.tflite", chain_model())
    assert run(capsys, "plan", src, "-o", tmp_path / "p.tflite")[0] == 0
    monkeypatch.setattr(tflm, "litert_available", lambda: "ai-edge-litert is not installed")
    code, out, err = run(capsys, "verify", src, tmp_path / "p.tflite", "--runs", "1")
    assert code == 0, err
    assert "LiteRT: skipped: ai-edge-litert is not installed" in out


def test_onnx_model_cannot_write_tflite(tmp_path, capsys):
    import models

    path = models.save(models.chain(), tmp_path / "chain.onnx")
    code, _, err = run(capsys, "plan", path, "-o", tmp_path / "x.tflite")
    assert code == 2 and "need a .tflite model" in err


# --- MLPerf Tiny in the real TFLM ----------------------------------------------------------

@pytest.fixture(scope="module")
def tflm_heads():
    """TFLM's own head per shared model (its GreedyMemoryPlanner), measured once."""
    heads = {}
    for folder, name in SHARED_TFLITE:
        data = (folder / name).read_bytes()
        ins, _ = tflm.io_specs(tflite_model.parse(data, name))
        heads[name] = tflm.run_tflm(data, name, tflm.random_inputs(ins, 1, 0)).allocation
    return heads


shared_ids = [n for _, n in SHARED_TFLITE]


@pytest.mark.skipif(not SHARED_TFLITE, reason=f"{MLPERF} and {TFLM_EXAMPLES} are absent on this machine")
@pytest.mark.parametrize("folder,name", SHARED_TFLITE, ids=shared_ids)
def test_mlperf_every_planner_and_greedy_is_tflm(folder, name, tflm_heads):
    """Every planner, its scratch buffers settled where TFLM puts them, passes check; greedy_size on
    arena's buffers (kernel scratch included) is TFLM's own head exactly; optimal is the lower bound."""
    path = str(folder / name)
    mp = liveness.model_problem(path, ModelOptions())
    problem = mp.problem()
    params = planners.Params(time_limit=2.0)
    for planner in planning.planner_names():
        plan = planning.tflm_settled(mp, problem, planning.run_planner(planner, problem, params))
        built = planfile.build(mp, plan, problem)
        check_json(built.to_json(), "plan", "plan.json")
        assert plancheck.check(built, mp, "plan.json") == [], planner
        if planner == "greedy_size":  # TFLM's GreedyMemoryPlanner on arena's ranges: TFLM's own head, exactly
            assert plan.arena_size == tflm_heads[name].head
        if planner == "optimal":
            assert plan.arena_size == plan.lower_bound and plan.optimal
    if name in VWW:
        assert tflm_heads[name].head == VWW[name][0]
    if EXAMPLE_HEADS.get(name):
        assert tflm_heads[name].head == EXAMPLE_HEADS[name]


@pytest.mark.skipif(not SHARED_TFLITE, reason=f"{MLPERF} and {TFLM_EXAMPLES} are absent on this machine")
@pytest.mark.parametrize("folder,name", SHARED_TFLITE, ids=shared_ids)
def test_mlperf_planned_model_verifies_in_tflm(folder, name, tmp_path, capsys, tflm_heads):
    """The head TFLM uses with arena's plan is the plan (its kernel scratch buffers included), never above
    TFLM's own; the floors: VWW int8 55,296 B, mnist_lstm <= 1,536 B, dtln <= 1,424 B."""
    src = folder / name
    out = tmp_path / "planned.tflite"
    code, text, err = run(capsys, "plan", src, "-o", out)
    assert code == 0, err
    plan = planfile.load(str(tmp_path / "planned.plan.json"))
    assert plan.optimal and plan.arena_size == plan.lower_bound
    report = tflm.verify(str(src), str(out), runs=3)
    assert report.failures == [], report.failures
    assert report.tflm_planned.head == plan.arena_size == report.arena_head
    assert report.tflm_model.head == tflm_heads[name].head
    assert report.tflm_planned.head <= report.tflm_model.head
    if name in VWW:
        assert report.tflm_planned.head <= VWW[name][1]
    if EXAMPLE_HEADS.get(name):
        assert report.tflm_planned.head <= EXAMPLE_HEADS[name]
    if tflm.litert_available() is None:
        assert "planned model = model" in report.litert
