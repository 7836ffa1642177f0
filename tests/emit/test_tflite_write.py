"""tflite_write: the planned .tflite (TFLM's OfflineMemoryAllocation metadata, the operators in the
plan's order), and the writer's refusals."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from arena_tool.model import tflite_model
from arena_tool.plan import planfile, planners, planning
from arena_tool.emit import tflite_write
from arena_tool.run import tflm
from arena_tool.core.errors import CheckFailed
from arena_tool.core.problem import ModelOptions
from tflite_models import branch_model, chain_model, run, save


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


def test_onnx_model_cannot_write_tflite(tmp_path, capsys):
    import models

    path = models.save(models.chain(), tmp_path / "chain.onnx")
    code, _, err = run(capsys, "plan", path, "-o", tmp_path / "x.tflite")
    assert code == 2 and "need a .tflite model" in err
