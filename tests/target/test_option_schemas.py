"""option_schemas: the manifest and plan schemas list every model option as problem.ModelOptions
defines it, and a missed schema edit is named field by field."""

from __future__ import annotations

import json

from arena_tool.target import option_schemas
from conftest import model_option_schemas


def test_the_schemas_list_every_option_as_defined():
    assert option_schemas.differences(*model_option_schemas()) == []
    assert option_schemas.main() == 0


def test_a_missed_schema_edit_is_named():
    m, p = json.loads(json.dumps(model_option_schemas()))
    del m["$defs"]["model_option_fields"]["properties"]["weights"]
    m["$defs"]["model"]["properties"]["bogus"] = True
    p["properties"]["options"]["properties"]["scratch"] = {"enum": ["none"]}
    p["properties"]["options"]["required"].remove("inplace")
    p["properties"]["alignment"]["minimum"] = 2  # the one option a plan states at its top level
    lines = option_schemas.differences(m, p)
    assert len(lines) == 5, lines
    assert any(line.startswith("schemas/plan.schema.json properties.alignment: ") for line in lines)
    assert any("model_option_fields.properties.weights: missing" in line for line in lines)
    assert any("model.properties.bogus: no such model option" in line for line in lines)
    assert any("options.properties.scratch" in line for line in lines)
    assert any("options.required" in line for line in lines)
