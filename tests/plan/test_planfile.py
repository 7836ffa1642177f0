"""Plan files: built from a ModelProblem and a Plan, schema-checked both ways, typed (PlanFile)
and byte-stable (the check against the model: test_plancheck.py)."""

from __future__ import annotations

import copy
import dataclasses
import json

import pytest

import models
from arena_tool.model import liveness
from arena_tool.plan import plancheck, planfile, planners, planning
from arena_tool.core.errors import ArenaError
from arena_tool.core.problem import ModelOptions
from builders import CHAIN_OPTIONS as OPTIONS


def test_round_trip_and_options(planned, tmp_path):
    path, pm = planned
    out = str(tmp_path / "p.json")
    planfile.write(out, pm.plan_file)
    plan = planfile.load(out)
    assert plan == pm.plan_file
    assert plan.options == OPTIONS
    assert plancheck.check(plan, liveness.model_problem(path, OPTIONS), out) == []
    assert plan.offsets() == {b["name"]: b["offset"] for b in json.load(open(out))["buffers"]}


def test_aliases_carry_their_roots_offset(tmp_path):
    m = models.model([models.node("MatMul", ["x", "w"], ["y"]), models.node("Relu", ["y"], ["z"]),
                      models.node("Reshape", ["z", "s"], ["r"]), models.node("MatMul", ["r", "w2"], ["o"])],
                     [models.vi("x", [4, 8])], [models.vi("o", [1, 8])],
                     [models.weight("w", [8, 8]), models.const("s", [1, 32]), models.weight("w2", [32, 8])])
    path = models.save(m, tmp_path / "m.onnx")
    pm = planning.plan_model(path, ModelOptions(), "first_fit", planners.Params())
    by = pm.plan_file.by_name
    assert by["z"].alias_of == "y" and by["r"].alias_of == "y"
    assert by["z"].offset == by["r"].offset == by["y"].offset
    assert plancheck.check(pm.plan_file, pm.mp, "p.json") == []


def test_write_refuses_a_schema_violation_and_leaves_no_file(planned, tmp_path):
    _, pm = planned
    first, *rest = pm.plan_file.buffers
    bad = dataclasses.replace(pm.plan_file, buffers=(dataclasses.replace(first, offset=-16), *rest))
    out = tmp_path / "p.json"
    with pytest.raises(ArenaError) as e:
        planfile.write(str(out), bad)
    assert e.value.field == "buffers[0].offset"
    assert not out.exists() and list(tmp_path.glob(".tmp-*")) == []


def test_plan_file_is_stable_text(planned, tmp_path):
    _, pm = planned
    text = planfile.dumps(pm.plan_file.to_json())
    assert text == planfile.dumps(json.loads(text))
    assert text.endswith("\n")


# --- the typed plan (PlanFile): from_json / to_json give back the same bytes -----------------

EXAMPLES = __import__("pathlib").Path(__file__).resolve().parents[2] / "example_firmware" / "models"
TYPED_CASES = [
    ("kws.onnx", ModelOptions(), ()),
    ("kws.onnx", ModelOptions(), (("FAST", 20_000), ("SLOW", 100_000))),  # a split plan: regions, split
    ("kws_int8.onnx", ModelOptions(scratch="row", io_alignment=32), ()),  # quant, buffer alignment
    ("resnet8.onnx", ModelOptions(schedule="memory", weights="SRAM"), ()),  # baselines, weights in RAM
    ("autoencoder.onnx", ModelOptions(execution="pipelined", activation_dtype="int8"), ()),
]


@pytest.mark.parametrize("model, opts, regions", TYPED_CASES)
def test_typed_plan_round_trips_byte_identical(model, opts, regions, tmp_path):
    """build -> write -> load -> to_json: the same bytes, and the same value."""
    pm = planning.plan_model(str(EXAMPLES / model), opts, "greedy_size", planners.Params(time_limit=5), regions)
    out = str(tmp_path / "p.json")
    planfile.write(out, pm.plan_file)
    typed = planfile.load(out)
    assert typed == pm.plan_file
    assert planfile.dumps(typed.to_json()) == planfile.dumps(pm.plan_file.to_json()) == open(out).read()
    assert planfile.PlanFile.from_json(json.load(open(out)), out) == typed
    assert typed.options == opts and typed.alignment == opts.alignment
    assert typed.is_split == bool(regions) and (typed.split is not None) == bool(regions)
    if model == "kws.onnx":  # in-place Clip/Relu and views: aliases at their roots' offsets
        assert any(b.alias_of for b in typed.buffers)


def test_typed_plan_round_trips_the_other_tests_plans(planned):
    _, pm = planned
    doc = pm.plan_file.to_json()
    typed = planfile.PlanFile.from_json(doc)
    assert typed == pm.plan_file and planfile.dumps(typed.to_json()) == planfile.dumps(doc)
    assert typed.status == doc["status"] and isinstance(typed.status, planfile.Status)


def test_typed_plan_is_schema_checked(planned):
    _, pm = planned
    bad = copy.deepcopy(pm.plan_file.to_json())
    bad["buffers"][0]["offset"] = -16
    with pytest.raises(ArenaError) as e:
        planfile.PlanFile.from_json(bad, "p.json")
    assert e.value.field == "buffers[0].offset"


def test_typed_plan_keeps_what_a_file_leaves_out(planned):
    """Schema-optional keys absent from a file stay absent (domain, fused, integer_ops ...)."""
    _, pm = planned
    doc = copy.deepcopy(pm.plan_file.to_json())
    for key in ("arena_tool_version", "model_kind", "baselines", "integer_ops", "qdq_fused"):
        del doc[key]
    for s in doc["schedule"]:
        del s["domain"], s["fused"]
    assert planfile.PlanFile.from_json(doc).to_json() == doc
    assert planfile.PlanFile.from_json(doc).kind == "onnx"
    assert plancheck.check(planfile.PlanFile.from_json(doc), pm.mp, "p.json") == []  # absent: the defaults
