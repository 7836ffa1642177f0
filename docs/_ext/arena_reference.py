"""The reference pages' generated parts, made at build time from the sources of truth.

A page holds a line ``<!-- arena:generate WHAT -->`` (a comment, invisible on GitHub too): on
``source-read`` it becomes Markdown made from the file WHAT names, so the reference cannot drift
from the code. WHAT: ``schema NAME`` (schemas/NAME.schema.json: every key, its type and its
description), ``cli`` (arena_tool.cli.parser(): every command and flag with its help), ``c-api``
(arena_tool/runtime/arena_model.h: the header's guide and each declaration with its comment).
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
MARKER = re.compile(r"^(?:% arena:generate (.+)|<!-- arena:generate (.+) -->)$", re.M)


# --- JSON Schemas -------------------------------------------------------------------------------

def _resolve(schema: dict[str, Any], node: Any) -> Any:
    """node with a local $ref followed (its own description wins over the target's)."""
    while isinstance(node, dict) and "$ref" in node and node["$ref"].startswith("#/"):
        target: Any = schema
        for part in node["$ref"][2:].split("/"):
            target = target[part]
        extra = {k: v for k, v in node.items() if k != "$ref"}
        node = {**target, **extra}
    return node


def _properties(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    """An object's keys, those its allOf parts give included (the manifest's model options)."""
    props: dict[str, Any] = {}
    for part in node.get("allOf", []):
        props.update(_properties(schema, _resolve(schema, part)))
    for key, value in node.get("properties", {}).items():
        if value is True and key in props:
            continue  # `key: true` only admits a key an allOf part describes
        props[key] = value
    return props


def _type(schema: dict[str, Any], node: Any) -> str:
    node = _resolve(schema, node)
    if not isinstance(node, dict):
        return ""
    if "enum" in node:
        return " | ".join(f"`{v}`" if not isinstance(v, bool) else f"`{str(v).lower()}`" for v in node["enum"])
    if "const" in node:
        return f"`{node['const']}`"
    if "x-expected" in node:
        return str(node["x-expected"])
    for key in ("anyOf", "oneOf"):
        if key in node:
            return " or ".join(t for t in (_type(schema, n) for n in node[key]) if t)
    kind = node.get("type")
    if kind == "array":
        item = _type(schema, node.get("items", {}))
        return f"list of {item}" if item else "list"
    if kind == "object" and "additionalProperties" in node and isinstance(node["additionalProperties"], dict):
        return f"mapping to {_type(schema, node['additionalProperties'])}"
    if isinstance(kind, list):
        return " or ".join(kind)
    return str(kind or "")


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _schema_rows(schema: dict[str, Any], node: dict[str, Any], prefix: str, seen: set[str],
                 rows: list[tuple[str, str, str, bool]]) -> None:
    required = set(node.get("required", []))
    for key, value in _properties(schema, node).items():
        ref = value.get("$ref", "") if isinstance(value, dict) else ""
        sub = _resolve(schema, value)
        if not isinstance(sub, dict):
            continue
        name = f"{prefix}{key}"
        rows.append((name, _type(schema, sub) if sub.get("type") != "object" or "properties" not in sub
                     and "allOf" not in sub else "mapping", sub.get("description", ""), key in required))
        if ref and ref in seen:  # a recursive definition: once
            continue
        for inner, suffix in _inner_objects(schema, sub):
            _schema_rows(schema, inner, name + suffix, seen | {ref}, rows)


def _inner_objects(schema: dict[str, Any], node: dict[str, Any]) -> list[tuple[dict[str, Any], str]]:
    """The mappings a value may hold (itself, its list's items, any alternative of anyOf/oneOf),
    with the key suffix that leads into them ('.' or '[].')."""
    found: list[tuple[dict[str, Any], str]] = []
    for alt in [node, *node.get("anyOf", []), *node.get("oneOf", [])]:
        alt = _resolve(schema, alt)
        if not isinstance(alt, dict):
            continue
        suffix = "."
        if alt.get("type") == "array" and isinstance(alt.get("items"), dict):
            alt = _resolve(schema, alt["items"])
            if isinstance(alt, dict) and "else" in alt:  # boards: a name, or a mapping
                alt = _resolve(schema, alt["else"])
            suffix = "[]."
        if isinstance(alt, dict) and (alt.get("properties") or alt.get("allOf")) and \
                all(alt is not f for f, _ in found):
            found.append((alt, suffix))
        named = _resolve(schema, alt.get("additionalProperties")) if isinstance(alt, dict) else None
        if isinstance(named, dict) and named.get("properties"):  # a mapping of names to mappings
            found.append((named, ".<name>."))
    return found


def schema_markdown(name: str) -> str:
    path = ROOT / "schemas" / f"{name}.schema.json"
    schema = json.loads(path.read_text(encoding="utf-8"))
    rows: list[tuple[str, str, str, bool]] = []
    _schema_rows(schema, schema, "", set(), rows)
    out = [f"Generated from `schemas/{name}.schema.json` ({schema.get('title', name)}). "
           f"{_cell(schema.get('description', ''))}", "",
           "| key | value | what |", "|---|---|---|"]
    for key, kind, what, required in rows:
        out.append(f"| `{key}`{' (required)' if required else ''} | {_cell(kind)} | {_cell(what)} |")
    return "\n".join(out) + "\n"


# --- the command line ---------------------------------------------------------------------------

def _flags(action: argparse.Action) -> str:
    if not action.option_strings:
        return f"`{action.metavar or action.dest}`"
    names = ", ".join(f"`{s}`" for s in action.option_strings)
    if action.nargs == 0:
        return names
    metavar = action.metavar or (("{" + ",".join(map(str, action.choices)) + "}") if action.choices
                                 else action.dest.upper())
    return f"{names} `{metavar}`"


def _parser_markdown(p: argparse.ArgumentParser, title: str, level: int, out: list[str]) -> None:
    out += [f"{'#' * level} `{title}`", ""]
    usage = p.format_usage().strip().removeprefix("usage: ")
    out += ["```text", usage, "```", ""]
    if p.description:
        out += [_cell(p.description), ""]
    subparsers: list[tuple[str, argparse.ArgumentParser]] = []
    for group in p._action_groups:
        rows = []
        for action in group._group_actions:
            if isinstance(action, argparse._SubParsersAction):
                subparsers += list(action.choices.items())
                continue
            if isinstance(action, argparse._HelpAction):
                continue
            rows.append(f"| {_flags(action)} | {_cell(action.help or '')} |")
        if rows:
            out += [f"{group.title}:", "", "| argument | what |", "|---|---|", *rows, ""]
    if p.epilog:
        out += [_cell(p.epilog), ""]
    for name, sub in subparsers:
        _parser_markdown(sub, f"{title} {name}", level + 1, out)


def cli_markdown() -> str:
    from arena_tool import cli

    out = ["Generated from `arena_tool/cli.py`'s argparse parser (what `arena-tool COMMAND --help` prints).", ""]
    _parser_markdown(cli.parser(), "arena-tool", 2, out)
    return "\n".join(out)


# --- the C API ----------------------------------------------------------------------------------

_DECL_NAME = re.compile(r"\b([A-Za-z_]\w*)\s*(?:\(|\[|;|=)")


def _declarations(text: str) -> tuple[str, list[tuple[str, str, str]]]:
    """(the leading guide comment, [(name, comment, declaration)]) of a C header."""
    guide_match = re.match(r"\s*/\*(.*?)\*/", text, re.S)
    guide = ""
    if guide_match:
        guide = "\n".join(re.sub(r"^ ?\* ?", "", line) for line in guide_match.group(1).splitlines()).strip()
        text = text[guide_match.end():]
    items: list[tuple[str, str, str]] = []
    comment = ""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        if line.startswith("/*"):
            block = [line]
            while "*/" not in lines[i]:
                i += 1
                block.append(lines[i].strip())
            comment = " ".join(re.sub(r"^/?\*+/?|\*/$", "", b).strip() for b in block).strip()
            i += 1
            continue
        if re.fullmatch(r"#define \w+_H", line):  # the include guard
            i += 1
            continue
        if not line or line.startswith("#include") or line.startswith("#if") or line.startswith("#endif") \
                or line.startswith("#ifndef") or line.startswith("#undef") or line.startswith("struct arena_model;"):
            if not line:
                comment = comment if i + 1 < len(lines) and lines[i + 1].strip() else ""
            i += 1
            continue
        # one declaration: up to a ';' at brace depth 0, or an inline function's body
        start = i
        depth = 0
        body_at = None
        while True:
            current = lines[i]
            if "{" in current and body_at is None and "(" in "".join(lines[start:i + 1]) \
                    and not lines[start].lstrip().startswith(("typedef", "enum", "#")):
                body_at = i
            depth += current.count("{") - current.count("}")
            if depth == 0 and (current.rstrip().endswith((";", "}")) or current.lstrip().startswith("#define")):
                break
            i += 1
        decl_lines = lines[start:(body_at + 1 if body_at is not None else i + 1)]
        decl = "\n".join(decl_lines).rstrip()
        if body_at is not None:
            decl = decl.rstrip("{").rstrip() + ";"
        if decl.startswith("#define"):
            name = decl.split()[1]
        elif decl.startswith("typedef"):
            name = re.findall(r"\}\s*(\w+)\s*;", decl)[-1] if "}" in decl else decl.rstrip(";").split()[-1]
        elif decl.startswith("enum"):
            name = "enum (slot kinds)"
        else:
            m = _DECL_NAME.search(decl.split("(")[0] + "(") if "(" in decl else _DECL_NAME.search(decl)
            name = m.group(1) if m else decl.split()[0]
        items.append((name, comment, decl))
        comment = ""
        i += 1
    return guide, items


def c_api_markdown() -> str:
    header = ROOT / "arena_tool" / "runtime" / "arena_model.h"
    guide, items = _declarations(header.read_text(encoding="utf-8"))
    out = ["Generated from `arena_tool/runtime/arena_model.h` (installed as `arena_tool.runtime_dir()`/"
           "`arena_model.h`): first the header's own guide, then every declaration with its comment.", "",
           "## The header's guide", "", "```text", guide, "```", "", "## Declarations", ""]
    for name, comment, decl in items:
        out += [f"### `{name}`", ""]
        if comment:
            out += [comment.replace("*", "\\*").replace("<", "\\<"), ""]
        out += ["```c", decl, "```", ""]
    return "\n".join(out)


# --- Sphinx -------------------------------------------------------------------------------------

def generate(what: str) -> str:
    kind, _, arg = what.strip().partition(" ")
    if kind == "schema":
        return schema_markdown(arg.strip())
    if kind == "cli":
        return cli_markdown()
    if kind == "c-api":
        return c_api_markdown()
    raise ValueError(f"arena:generate: unknown {what!r} (schema NAME, cli or c-api)")


def _source_read(app: Any, docname: str, source: list[str]) -> None:
    source[0] = MARKER.sub(lambda m: generate(m.group(1) or m.group(2)), source[0])


def setup(app: Any) -> dict[str, Any]:
    app.connect("source-read", _source_read)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
