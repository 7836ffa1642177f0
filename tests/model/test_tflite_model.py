"""tflite_model: a .tflite under TFLM's rules (live ranges, names, variables, shapes, op order)
and one clear message for every model it cannot plan."""

from __future__ import annotations

import json
from pathlib import Path

import flatbuffers
import numpy as np
import pytest

from arena_tool.model import liveness, tflite_model
from arena_tool.plan import planfile, planners, planning
from arena_tool.core.problem import ModelOptions
from tflite_models import C1, branch_model, build, chain_model, opts, run, save

fb = tflite_model.schema()


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
