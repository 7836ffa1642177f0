"""The model options' parts of the manifest and plan schemas, derived from ModelOptions.

schemas/*.schema.json stay static files (editors read them); ``differences`` compares their
option parts with what each field's Option (problem.ModelOptions) gives, so an option added
there but not to a schema fails loudly (tests/core/test_options.py), with the fragment to paste:

    python3 -m arena_tool.target.option_schemas     # exit 1 and one line per difference
"""

from __future__ import annotations

import json
import sys
from typing import Any, Sequence

from arena_tool.plan.planfile import TOP_LEVEL_OPTIONS as PLAN_TOP_LEVEL
from arena_tool.core.problem import ModelOptions, option_fields
from arena_tool.core import schema

SPEC_KEYS = ("planner", "k", "time_limit", "fit")  # per-model manifest keys that are ModelSpec's, not options


def manifest_parts(cls: type[Any] = ModelOptions, spec_fields: dict[str, Any] | None = None) -> dict[str, Any]:
    """Where the manifest schema lists the options (a path of keys) -> what it must hold there.

    spec_fields: the schemas of SPEC_KEYS (the schema's own, which the options do not define).
    """
    spec_fields = spec_fields or {}
    names = [*SPEC_KEYS, *(f.name for f, _ in option_fields(cls))]
    return {
        "$defs.model_option_fields.properties": {**spec_fields,
                                                 **{f.name: dict(o.schema) for f, o in option_fields(cls)}},
        "$defs.model_options.properties": {n: True for n in names},
        "$defs.model.properties": {n: True for n in names},
    }


def plan_parts(cls: type[Any] = ModelOptions) -> dict[str, Any]:
    """Where the plan schema states the options -> what it must hold there."""
    inside = [(f, o) for f, o in option_fields(cls) if f.name not in PLAN_TOP_LEVEL]
    parts: dict[str, Any] = {
        "properties.options.properties": {f.name: dict(o.plan_schema) for f, o in inside},
        "properties.options.required": sorted(f.name for f, o in inside if o.plan_required),
    }
    for f, o in option_fields(cls):
        if f.name in PLAN_TOP_LEVEL:
            parts[f"properties.{f.name}"] = dict(o.plan_schema)
    return parts


def _at(doc: dict[str, Any], path: str) -> Any:
    for key in path.split("."):
        doc = doc.get(key, {}) if isinstance(doc, dict) else {}
    return doc


def _fragment(value: Any) -> str:
    return json.dumps(value, separators=(", ", ": "))


def _compare(file: str, doc: dict[str, Any], parts: dict[str, Any], skip: Sequence[str] = ()) -> list[str]:
    """A ``...properties`` part is compared option by option, any other part as one value."""
    out: list[str] = []
    for path, want in parts.items():
        have = _at(doc, path)
        if path.endswith(".required"):
            have = sorted(have or [])
        if not path.endswith(".properties"):
            if have != want:
                out.append(f"{file} {path}: {_fragment(have)}, the options give {_fragment(want)}")
            continue
        for key in want:
            if key not in have:
                out.append(f"{file} {path}.{key}: missing; add \"{key}\": {_fragment(want[key])}")
            elif have[key] != want[key]:
                out.append(f"{file} {path}.{key}: {_fragment(have[key])}, the option gives {_fragment(want[key])}")
        for key in have:
            if key not in want and key not in skip:
                out.append(f"{file} {path}.{key}: no such model option; remove it")
    return out


def differences(manifest: dict[str, Any], plan: dict[str, Any], cls: type[Any] = ModelOptions) -> list[str]:
    """One line per place the two schema documents disagree with ``cls``'s options ([] when they match)."""
    spec = {k: v for k, v in _at(manifest, "$defs.model_option_fields.properties").items() if k in SPEC_KEYS}
    return (_compare("schemas/manifest.schema.json", manifest, manifest_parts(cls, spec), skip=("name", "path"))
            + _compare("schemas/plan.schema.json", plan, plan_parts(cls)))


def with_options(manifest: dict[str, Any], plan: dict[str, Any],
                 cls: type[Any] = ModelOptions) -> tuple[dict[str, Any], dict[str, Any]]:
    """Copies of the two schema documents with their option parts made ``cls``'s (for tests)."""
    manifest, plan = json.loads(json.dumps(manifest)), json.loads(json.dumps(plan))
    spec = {k: v for k, v in _at(manifest, "$defs.model_option_fields.properties").items() if k in SPEC_KEYS}
    for doc, parts in ((manifest, manifest_parts(cls, spec)), (plan, plan_parts(cls))):
        for path, want in parts.items():
            *head, last = path.split(".")
            node = doc
            for key in head:
                node = node.setdefault(key, {})
            if isinstance(want, dict) and isinstance(node.get(last), dict):
                keep = {k: v for k, v in node[last].items() if k in ("name", "path")}
                node[last] = {**keep, **want}
            else:
                node[last] = want
    return manifest, plan


def main() -> int:
    lines = differences(schema.load_schema("manifest"), schema.load_schema("plan"))
    for line in lines:
        print(line)
    if not lines:
        print("the manifest and plan schemas list every model option as ModelOptions defines it")
    return 1 if lines else 0


if __name__ == "__main__":
    sys.exit(main())
