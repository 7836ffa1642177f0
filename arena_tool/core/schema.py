"""Finding and applying the JSON Schemas in the repository's schemas/ folder.

Every file arena reads or writes has a schema there; this module is the one
place that turns a jsonschema failure into an ArenaError naming the file and
the field.
"""

from __future__ import annotations

import functools
import json
import numbers
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from arena_tool.core.errors import EXIT_BUG, ArenaError


def schema_dir() -> Path:
    """schemas/ at the source tree's root (checkout, editable install), else the installed share dir."""
    here = Path(__file__).resolve().parents[2] / "schemas"
    return here if here.is_dir() else Path(sys.prefix) / "share" / "arena" / "schemas"


def schema_path(name: str) -> Path:
    candidate = schema_dir() / f"{name}.schema.json"
    if candidate.is_file():
        return candidate
    raise ArenaError(f"schema '{name}' not found", exit_code=EXIT_BUG,
                     hint="reinstall arena (pip install -e .) so schemas/ ships with it")


@functools.lru_cache(maxsize=None)
def load_schema(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(schema_path(name).read_text(encoding="utf-8"))
    return doc


@functools.lru_cache(maxsize=None)
def validator_class() -> Any:
    """Draft 2020-12, except that 16.0 is not an integer (jsonschema's default says it is).

    Every integer arena reads ends up in ``&``, ``range`` or C, where a float is a crash.
    """
    import jsonschema

    base = jsonschema.Draft202012Validator

    def is_integer(_checker: Any, value: Any) -> bool:
        return isinstance(value, int) and not isinstance(value, bool)

    # types-jsonschema leaves validators.extend unannotated
    return jsonschema.validators.extend(  # type: ignore[no-untyped-call]
        base, type_checker=base.TYPE_CHECKER.redefine("integer", is_integer))


def dotted(path: Any) -> str:
    """('buffers', 3, 'offset') -> 'buffers[3].offset'."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def check_json(obj: Any, name: str, file: str) -> None:
    """Validate obj against schemas/<name>.schema.json; the first error (by path) as ArenaError.

    A document the compiled check passes is valid; any other goes through jsonschema, which
    decides and words the error (so a message never depends on the fast path).
    """
    fast = compiled(name)
    if fast is not None and fast(obj):
        return
    validator = validator_class()(load_schema(name))
    errors = sorted(validator.iter_errors(obj), key=lambda e: (list(map(str, e.absolute_path)), e.message))
    if errors:
        e = errors[0]
        raise ArenaError(
            f"{e.message} (schema {name}.schema.json)",
            file=file,
            field=dotted(e.absolute_path) or "(top level)",
            hint=f"this file does not match schemas/{name}.schema.json; regenerate it with arena-tool",
        )


# --- the schema compiled to Python predicates ------------------------------------------------
#
# jsonschema walks a 33,000-buffer plan in 5.5 s (a validator object and a reference scope per
# value); the same schema compiled once into nested closures checks it in a fraction of that.
# Each predicate is exactly jsonschema's Draft 2020-12 rule (with validator_class's integer) for
# the keywords below; a schema using any other keyword is not compiled (compiled() is None) and
# jsonschema alone checks it. The schema file stays the one statement of the format.

Check = Callable[[Any], bool]
_ANNOTATIONS = frozenset({"$schema", "$id", "$defs", "$comment", "title", "description", "default",
                          "examples", "deprecated", "readOnly", "writeOnly"})
_TYPES: dict[str, Check] = {
    "array": lambda v: isinstance(v, list),
    "boolean": lambda v: isinstance(v, bool),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "null": lambda v: v is None,
    "number": lambda v: isinstance(v, numbers.Number) and not isinstance(v, bool),
    "object": lambda v: isinstance(v, dict),
    "string": lambda v: isinstance(v, str),
}
# the Python types json.load makes for each JSON type: a quick yes before the exact test
_EXACT: dict[str, tuple[type, ...]] = {"array": (list,), "boolean": (bool,), "integer": (int,), "null": (type(None),),
                                       "number": (int, float), "object": (dict,), "string": (str,)}
_is_number, _is_string, _is_array, _is_object = (_TYPES["number"], _TYPES["string"], _TYPES["array"],
                                                 _TYPES["object"])


class _NotCompiled(Exception):
    """The schema uses a keyword (or a $ref) the compiler does not cover."""


def _equal(a: Any, b: Any) -> bool:
    """JSON Schema equality (jsonschema's): True is not 1, 1 is 1.0, containers compared by item."""
    if a is b:
        return True
    if isinstance(a, str) or isinstance(b, str):
        return bool(a == b)
    if isinstance(a, Sequence) and isinstance(b, Sequence):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return len(a) == len(b) and all(k in b and _equal(v, b[k]) for k, v in a.items())
    if isinstance(a, bool) or isinstance(b, bool):
        return False  # a is b was checked: True/False equal only themselves
    return bool(a == b)


def _unique(items: list[Any]) -> bool:
    return all(not _equal(items[i], items[j]) for i in range(len(items)) for j in range(i))


def _all(checks: list[Check]) -> Check:
    if not checks:
        return lambda v: True
    if len(checks) == 1:
        return checks[0]

    def every(v: Any) -> bool:
        for c in checks:
            if not c(v):
                return False
        return True
    return every


_OBJECT_KEYS = ("properties", "additionalProperties", "required")


def _compile(node: Any, root: dict[str, Any], refs: dict[str, Check]) -> Check:
    """The predicate of one (sub)schema; its keywords are a conjunction, as in jsonschema."""
    if node is True or node is False:
        return (lambda v: True) if node else (lambda v: False)
    if not isinstance(node, dict):
        raise _NotCompiled(repr(node))
    checks: list[Check] = []
    if any(k in node for k in _OBJECT_KEYS):
        checks.append(_object(node, root, refs))
    for key, arg in node.items():
        if key in _ANNOTATIONS or key.startswith("x-") or key in ("then", "else") or key in _OBJECT_KEYS:
            continue
        checks.append(_keyword(key, arg, node, root, refs))
    return _all(checks)


def _object(node: dict[str, Any], root: dict[str, Any], refs: dict[str, Check]) -> Check:
    """properties, additionalProperties and required of one object schema in one pass over its keys."""
    if "patternProperties" in node:
        raise _NotCompiled("patternProperties")
    props = {name: _compile(s, root, refs) for name, s in node.get("properties", {}).items()}
    rest = _compile(node.get("additionalProperties", True), root, refs)
    required = frozenset(node.get("required", ()))

    def check(v: Any) -> bool:
        if not isinstance(v, dict):
            return True
        for k, x in v.items():
            c = props.get(k)
            if c is None:
                if not rest(x):
                    return False
            elif not c(x):
                return False
        return required <= v.keys()
    return check


def _keyword(key: str, arg: Any, node: dict[str, Any], root: dict[str, Any], refs: dict[str, Check]) -> Check:
    sub = functools.partial(_compile, root=root, refs=refs)
    if key == "type":
        names = [arg] if isinstance(arg, str) else list(arg)
        preds, exact = [_TYPES[t] for t in names], frozenset(c for t in names for c in _EXACT[t])
        return lambda v: type(v) in exact or any(p(v) for p in preds)
    if key in ("enum", "const"):
        values = list(arg) if key == "enum" else [arg]
        return lambda v: any(_equal(e, v) for e in values)
    if key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        ok: Check = {"minimum": lambda v: not v < arg, "maximum": lambda v: not v > arg,
              "exclusiveMinimum": lambda v: not v <= arg, "exclusiveMaximum": lambda v: not v >= arg}[key]
        return lambda v: not _is_number(v) or ok(v)
    if key in ("minLength", "maxLength", "pattern"):
        if key == "pattern":
            rx = re.compile(arg)
            return lambda v: not _is_string(v) or rx.search(v) is not None
        short = key == "minLength"
        return lambda v: not _is_string(v) or (len(v) >= arg if short else len(v) <= arg)
    if key in ("minItems", "maxItems", "uniqueItems"):
        if key == "uniqueItems":
            return (lambda v: not _is_array(v) or _unique(v)) if arg else (lambda v: True)
        few = key == "minItems"
        return lambda v: not _is_array(v) or (len(v) >= arg if few else len(v) <= arg)
    if key == "items":
        if "prefixItems" in node:
            raise _NotCompiled("prefixItems")
        each = sub(arg)

        def items(v: Any) -> bool:
            if isinstance(v, list):
                for x in v:
                    if not each(x):
                        return False
            return True
        return items
    if key == "propertyNames":
        name = sub(arg)
        return lambda v: not _is_object(v) or all(name(k) for k in v)
    if key == "dependentRequired":
        deps = {k: list(d) for k, d in arg.items()}
        return lambda v: not _is_object(v) or all(n in v for k, d in deps.items() if k in v for n in d)
    if key in ("allOf", "anyOf", "oneOf"):
        parts = [sub(s) for s in arg]
        if key == "allOf":
            return lambda v: all(p(v) for p in parts)
        if key == "anyOf":
            return lambda v: any(p(v) for p in parts)
        return lambda v: sum(1 for p in parts if p(v)) == 1
    if key == "not":
        neg = sub(arg)
        return lambda v: not neg(v)
    if key == "if":
        cond, then, other = sub(arg), sub(node.get("then", True)), sub(node.get("else", True))
        return lambda v: then(v) if cond(v) else other(v)
    if key == "$ref":
        return _ref(arg, root, refs)
    raise _NotCompiled(key)


def _ref(ref: Any, root: dict[str, Any], refs: dict[str, Check]) -> Check:
    """A reference inside the same document ('#/$defs/x'), compiled once (recursion through the table)."""
    if not isinstance(ref, str) or not ref.startswith("#"):
        raise _NotCompiled(f"$ref {ref!r}")
    if ref not in refs:
        target: Any = root
        for part in [p for p in ref[1:].split("/") if p]:
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(target, dict) or part not in target:
                raise _NotCompiled(f"$ref {ref!r}")
            target = target[part]
        refs[ref] = lambda v: True  # placeholder while compiling a recursive reference
        compiled_ref = _compile(target, root, refs)
        refs[ref] = compiled_ref
    return lambda v: refs[ref](v)


@functools.lru_cache(maxsize=None)
def compiled(name: str) -> Check | None:
    """schemas/<name>.schema.json as one predicate, or None when it uses a keyword not compiled here."""
    root = load_schema(name)
    try:
        return _compile(root, root, {})
    except _NotCompiled:
        return None
