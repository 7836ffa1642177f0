"""schema: the compiled checks agree with jsonschema on every schema, and a large plan skips jsonschema.

check_json passes a document its compiled predicate accepts and sends every other one to
jsonschema, so the predicate must never accept what jsonschema refuses (nor, to stay fast and
worded the same, refuse what it accepts). The agreement is tested on documents generated from
each schema and then bent: wrong types, True for 1, 16.0 for 16, NaN, a missing or extra field.
"""

from __future__ import annotations

import json
import math
import random
import re
import time
from pathlib import Path
from typing import Any

import pytest

from arena_tool.core import schema
from arena_tool.core.errors import ArenaError

NAMES = sorted(p.name.split(".")[0] for p in schema.schema_dir().glob("*.schema.json"))
ODD: list[Any] = [True, False, 0, 1, -1, 1.0, 16.0, 0.5, math.nan, math.inf, 2 ** 40, "", "x", "0" * 64,
                  "a" * 64 + "\n", None, [], {}, [1], [True], {"a": 1}, [1, 1], ["x", "x"]]


def _resolve(node: Any, root: dict[str, Any]) -> Any:
    while isinstance(node, dict) and "$ref" in node and len(node) <= 2:
        target: Any = root
        for part in [p for p in node["$ref"][1:].split("/") if p]:
            target = target[part]
        node = target
    return node


STRINGS = ["kws", "a", "DTCM", "0123456789abcdef" * 4, "0x2000_0000", "64K", " 16 KiB ", "90%", "12.5 %",
           "cortex-m7", "a.b$c-d"]


def generate(node: Any, root: dict[str, Any], rng: random.Random, bend: float, depth: int = 0) -> Any:
    """A value of ``node``; each value is bent with probability ``bend`` (0: mostly a valid document)."""
    node = _resolve(node, root)
    if node is False or rng.random() < bend or depth > 8:
        return rng.choice(ODD)
    if not isinstance(node, dict):
        return rng.choice(STRINGS)
    for key in ("oneOf", "anyOf"):
        if key in node:
            return generate(rng.choice(node[key]), root, rng, bend, depth + 1)
    if "const" in node:
        return node["const"]
    if "enum" in node:
        return rng.choice(node["enum"])
    types = node.get("type", "object" if "properties" in node else "string")
    kind = rng.choice([types] if isinstance(types, str) else types)
    if kind == "object":
        out: dict[str, Any] = {}
        for name, sub in node.get("properties", {}).items():
            if name in node.get("required", ()) or rng.random() < 0.5:
                out[name] = generate(sub, root, rng, bend, depth + 1)
        extra = node.get("additionalProperties", True)
        if isinstance(extra, dict):
            for i in range(rng.randint(0, 2)):
                out[f"k{i}"] = generate(extra, root, rng, bend, depth + 1)
        if rng.random() < bend:
            out["unexpected"] = 1
        return out
    if kind == "array":
        n = rng.randint(node.get("minItems", 0), node.get("minItems", 0) + 2)
        return [generate(node.get("items", True), root, rng, bend, depth + 1) for _ in range(n)]
    if kind in ("integer", "number"):
        bounds = [node[k] for k in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum") if k in node]
        return rng.choice(bounds or [0]) + rng.choice([0, 0, 1, 7, -1 if bend else 0])
    if kind == "string":
        fits = [t for t in STRINGS if re.search(node.get("pattern", ""), t)
                and node.get("minLength", 0) <= len(t) <= node.get("maxLength", 99)]
        return rng.choice(fits or STRINGS)
    if kind == "boolean":
        return rng.choice([True, False])
    return None


@pytest.mark.parametrize("name", [n for n in NAMES if n != "manifest"])
def test_the_compiled_check_is_jsonschemas_answer(name: str) -> None:
    fast = schema.compiled(name)
    assert fast is not None
    root = schema.load_schema(name)
    validator = schema.validator_class()(root)
    rng = random.Random(name)
    answers = {True: 0, False: 0}
    for _ in range(600):
        doc = generate(root, root, rng, rng.choice([0.0, 0.0, 0.01, 0.05, 0.2]))
        want = validator.is_valid(doc)
        assert fast(doc) == want, (name, json.dumps(doc, default=str)[:2000])
        answers[want] += 1
    assert min(answers.values()) > 30, answers  # both answers were tested, not only one


INLINE: list[tuple[Any, list[Any]]] = [
    ({"oneOf": [{"type": "integer"}, {"minimum": 0}]}, [-1, 1, 0.5, "x", True]),
    ({"anyOf": [{"type": "string"}, {"const": 1}], "not": {"enum": ["no", 2]}}, ["no", "a", 1, 1.0, True, 2]),
    ({"if": {"type": "integer"}, "then": {"maximum": 3}, "else": {"type": "string"}}, [3, 4, "x", 4.0, None]),
    ({"uniqueItems": True, "maxItems": 3}, [[1, 1.0], [1, True], [[1], [1]], [{"a": 1}, {"a": 1}], [0, False],
                                            [1, 2, 3, 4], "x"]),
    ({"propertyNames": {"maxLength": 2}, "dependentRequired": {"a": ["b"]}}, [{"a": 1}, {"a": 1, "b": 2},
                                                                              {"abc": 1}, {}, []]),
    ({"exclusiveMaximum": 3, "exclusiveMinimum": 1, "type": "number"}, [1, 2, 3, 2.5, math.nan, True]),
    ({"properties": {"a": False, "b": True}, "additionalProperties": {"type": "null"}},
     [{"a": 1}, {"b": 1}, {"c": None}, {"c": 0}, 7]),
    ({"items": {"type": ["integer", "null"]}, "minItems": 1}, [[], [None], [1, 2.0], [True], "ab"]),
    ({"const": [1, {"x": False}]}, [[1, {"x": False}], [1.0, {"x": False}], [1, {"x": 0}], [True, {"x": False}]]),
]


@pytest.mark.parametrize("node,values", INLINE)
def test_keywords_the_shipped_schemas_do_not_use_yet(node: Any, values: list[Any]) -> None:
    fast = schema._compile(node, node, {})
    validator = schema.validator_class()(node)
    assert [fast(v) for v in values] == [validator.is_valid(v) for v in values]


def test_only_the_manifest_is_left_to_jsonschema() -> None:
    """unevaluatedProperties (manifest) is not compiled; every other schema is (else big files are slow again)."""
    assert [n for n in NAMES if schema.compiled(n) is None] == ["manifest"]


def test_equality_is_json_schemas() -> None:
    assert schema._equal(1, 1.0) and not schema._equal(True, 1) and not schema._equal(0, False)
    assert schema._equal([1, {"a": "x"}], [1.0, {"a": "x"}]) and not schema._equal([True], [1])
    assert not schema._equal({"a": 1}, {"a": 1, "b": 2}) and not schema._equal("1", 1)


def _big_plan(tmp_path: Path, buffers: int) -> dict[str, Any]:
    import models as M
    from arena_tool.cli import main

    plan = tmp_path / "p.json"
    assert main(["plan", M.save(M.chain(), tmp_path / "m.onnx"), "-o", str(plan)]) == 0
    doc: dict[str, Any] = json.loads(plan.read_text())
    first = doc["buffers"][0]
    doc["buffers"] = [dict(first, name=f"t{i}", first_op=i % 3) for i in range(buffers)]
    return doc


def test_a_valid_plan_does_not_reach_jsonschema(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """jsonschema took 5.5 s on a 33,000-buffer plan (check and plan both validate it); compiled it is 0.27 s."""
    doc = _big_plan(tmp_path, 3000)
    validator = schema.validator_class()(schema.load_schema("plan"))
    t0 = time.perf_counter()
    assert validator.is_valid(doc)
    slow = time.perf_counter() - t0

    def refuse() -> Any:
        raise AssertionError("a valid plan went through jsonschema")
    monkeypatch.setattr(schema, "validator_class", refuse)
    t0 = time.perf_counter()
    schema.check_json(doc, "plan", "p.json")
    assert time.perf_counter() - t0 < slow / 4, slow


def test_an_invalid_plan_is_still_jsonschemas_message(tmp_path: Path) -> None:
    doc = _big_plan(tmp_path, 10)
    doc["buffers"][7]["offset"] = 16.0
    with pytest.raises(ArenaError) as info:
        schema.check_json(doc, "plan", "p.json")
    assert info.value.field == "buffers[7].offset" and "16.0 is not of type 'integer'" in info.value.msg
