"""YAML in, with positions; JSON Schema checks with one plain message out.

PyYAML forgets where things came from once it has built dicts, so ``load``
composes the node tree itself and records, for every key path, where the key
(or list item) and its value start. A key path is a tuple of mapping keys and
list indices: ``('boards', 'nucleo_f746', 'budget')`` or ``('models', 0, 'path')``.
Positions are 1-based ``(line, col)``.

``validate`` runs a Draft 2020-12 schema from ``schemas/<name>.schema.json`` and
turns the most relevant failure into one ``ArenaError`` naming file, line,
column and the dotted field, e.g.::

    manifest.yaml:7:5: error: models.kws.regoin: unknown key 'regoin'
        (hint: did you mean 'region'? expected one of: k, path, planner, region)

A schema may add ``"x-expected": "<words>"`` to any subschema; failures of
that subschema (type, pattern, anyOf, ...) then say ``expected <words>``
instead of describing the raw keyword.

Invariants: duplicate keys are errors (PyYAML silently keeps the last one);
keys are kept as YAML parsed them (``0x10`` is the int 16); merge keys (``<<``)
are honoured, aliases are expanded, but a document may nest at most
``MAX_DEPTH`` levels and expand (through aliases) to at most ``MAX_NODES``
values, so an alias bomb is one error, not minutes and a MemoryError; numbers
are finite (``.nan`` and ``.inf`` are errors).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
from pathlib import Path
from typing import Any, Iterable, Mapping

import jsonschema
import yaml
from yaml.events import AliasEvent, ScalarEvent
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from arena_tool.core.errors import ArenaError, did_you_mean, require_regular
from arena_tool.core.schema import load_schema, schema_path, validator_class  # noqa: F401  (schema_path re-exported)

KeyPath = tuple[Any, ...]
Pos = tuple[int, int]  # (line, col), both 1-based

MAX_DEPTH = 100  # nesting levels; real manifests and boards use fewer than 10
MAX_NODES = 100_000  # values after alias expansion; a large manifest has a few thousand


@dataclasses.dataclass(frozen=True)
class Doc:
    """A loaded YAML document.

    data: plain dicts/lists/scalars (dict order = file order).
    keys: key path -> position of the key (mapping entries) or of the item
        (list entries); ``()`` is the document start.
    values: key path -> position where the value starts.
    file: the path the document was read from, as given to ``load``.
    """

    data: Any
    keys: Mapping[KeyPath, Pos]
    values: Mapping[KeyPath, Pos]
    file: str

    def position(self, path: Iterable[Any]) -> Pos:
        """Where the key (or list item) at ``path`` is; the nearest known ancestor otherwise."""
        return _nearest(self.keys, tuple(path))

    def value_position(self, path: Iterable[Any]) -> Pos:
        """Where the value at ``path`` starts; the nearest known ancestor otherwise."""
        path = tuple(path)
        if path in self.values:
            return self.values[path]
        return _nearest(self.keys, path)

    def error(
        self,
        msg: str,
        path: Iterable[Any],
        *,
        hint: str | None = None,
        at_value: bool = False,
        exit_code: int | None = None,
    ) -> ArenaError:
        """An ArenaError located at ``path`` (the key, or the value if ``at_value``)."""
        path = tuple(path)
        line, col = self.value_position(path) if at_value else self.position(path)
        kw: dict[str, Any] = {}
        if exit_code is not None:
            kw["exit_code"] = exit_code
        return ArenaError(
            msg, file=self.file, line=line, col=col, field=field_name(path) or None, hint=hint, **kw
        )

    def locate(self, err: ArenaError, path: Iterable[Any], *, at_value: bool = False) -> ArenaError:
        """Fill in file/line/col/field of ``err`` (only those still unknown) from ``path``."""
        path = tuple(path)
        line, col = self.value_position(path) if at_value else self.position(path)
        return err.located(file=self.file, line=line, col=col, field=field_name(path) or None)


def _nearest(table: Mapping[KeyPath, Pos], path: KeyPath) -> Pos:
    while path:
        if path in table:
            return table[path]
        path = path[:-1]
    return table.get((), (1, 1))


def field_name(path: Iterable[Any]) -> str:
    """``('models', 0, 'path')`` -> ``models[0].path``."""
    out = ""
    for part in path:
        if isinstance(part, int) and not isinstance(part, bool):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def _pos(node: Node) -> Pos:
    return (node.start_mark.line + 1, node.start_mark.column + 1)


class _Builder:
    """Turns a composed node tree into plain data plus position tables."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.constructor = yaml.SafeLoader("")  # only its scalar constructors are used
        self.keys: dict[KeyPath, Pos] = {}
        self.values: dict[KeyPath, Pos] = {}
        self.explicit: dict[int, set[int]] = {}  # mapping node id -> ids of its own key nodes

    def build(self, node: Node, path: KeyPath, depth: int = 0) -> Any:
        self.values.setdefault(path, _pos(node))
        if depth > MAX_DEPTH:  # _check_size refuses this first; kept as a guard
            raise ArenaError("document nests too deeply (recursive alias?)", file=self.file,
                             line=_pos(node)[0], col=_pos(node)[1], field=field_name(path) or None)
        if isinstance(node, ScalarNode):
            return self._scalar(node, path)
        if isinstance(node, SequenceNode):
            items = []
            for index, child in enumerate(node.value):
                self.keys.setdefault(path + (index,), _pos(child))
                items.append(self.build(child, path + (index,), depth + 1))
            return items
        if isinstance(node, MappingNode):
            explicit = self.explicit.get(id(node))
            if explicit is None:
                explicit = {id(k) for k, _ in node.value if k.tag != "tag:yaml.org,2002:merge"}
                self.explicit[id(node)] = explicit
                try:
                    self.constructor.flatten_mapping(node)  # resolves '<<' merge keys in place
                except yaml.MarkedYAMLError as exc:
                    raise _syntax_error(exc, self.file) from exc
            out: dict[Any, Any] = {}
            first: dict[Any, Pos] = {}
            merged: set[Any] = set()
            for key_node, value_node in node.value:
                if id(key_node) not in explicit:  # came in through '<<': first one wins
                    key = self._scalar(key_node, path) if isinstance(key_node, ScalarNode) else None
                    if key in out:
                        continue
                    merged.add(key)
                    self.keys[path + (key,)] = _pos(key_node)
                    out[key] = self.build(value_node, path + (key,), depth + 1)
                    continue
                key = self._scalar(key_node, path) if isinstance(key_node, ScalarNode) else None
                if key is None and not isinstance(key_node, ScalarNode):
                    line, col = _pos(key_node)
                    raise ArenaError("a key must be a plain value, not a list or mapping",
                                     file=self.file, line=line, col=col, field=field_name(path) or None)
                if key in merged:  # an explicit key overrides a merged one
                    merged.discard(key)
                    del out[key]
                    self.values.pop(path + (key,), None)
                elif key in first:
                    line, col = _pos(key_node)
                    raise ArenaError(
                        f"duplicate key '{key}' (first defined on line {first[key][0]})",
                        file=self.file, line=line, col=col, field=field_name(path + (key,)),
                        hint="keep only one of them",
                    )
                first[key] = _pos(key_node)
                self.keys[path + (key,)] = _pos(key_node)
                out[key] = self.build(value_node, path + (key,), depth + 1)
            return out
        raise AssertionError(f"unknown YAML node {node!r}")  # pragma: no cover

    def _scalar(self, node: ScalarNode, path: KeyPath) -> Any:
        try:
            value = self.constructor.construct_object(node, deep=True)
        except yaml.MarkedYAMLError as exc:
            raise _syntax_error(exc, self.file) from exc
        except ValueError as exc:  # e.g. a timestamp like 2024-13-45
            line, col = _pos(node)
            raise ArenaError(f"cannot read value {node.value!r}: {exc}", file=self.file,
                             line=line, col=col, field=field_name(path) or None) from exc
        if isinstance(value, float) and not math.isfinite(value):  # a time limit or percentage of nan/inf
            line, col = _pos(node)
            raise ArenaError(f"invalid number {node.value!r}: numbers must be finite", file=self.file,
                             line=line, col=col, field=field_name(path) or None,
                             hint="write a finite number such as 10 or 2.5")
        return value


class _BoundedLoader(yaml.SafeLoader):
    """SafeLoader whose composer stops at ``MAX_DEPTH`` levels (PyYAML's recursion would overflow)."""

    def __init__(self, text: str, file: str) -> None:
        super().__init__(text)
        self.file = file
        self.depth = 0

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        if self.check_event(AliasEvent, ScalarEvent):
            return super().compose_node(parent, index)
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]  # unannotated in types-PyYAML
                raise ArenaError(f"the document nests more than {MAX_DEPTH} levels deep", file=self.file,
                                 line=mark.line + 1, col=mark.column + 1,
                                 hint="a manifest or board file needs only a few levels; flatten the lists")
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1


def _children(node: Node, path: KeyPath) -> list[tuple[KeyPath, Node]]:
    """A node's children with their key paths (a mapping's keys count as values too)."""
    if isinstance(node, SequenceNode):
        return [(path + (i,), child) for i, child in enumerate(node.value)]
    if isinstance(node, MappingNode):
        out: list[tuple[KeyPath, Node]] = []
        for key, value in node.value:
            part = key.value if isinstance(key, ScalarNode) else "?"
            out += [(path + (part,), key), (path + (part,), value)]
        return out
    return []


def _check_size(root: Node, file: str) -> None:
    """Refuse a document that expands to more than MAX_NODES values or MAX_DEPTH levels.

    Aliases share nodes, so nine lines can stand for a billion values ("billion
    laughs"). Sizes are counted per node once (memoized), before merge keys are
    flattened or anything is built, so the check is linear in the text.
    """
    done: dict[int, tuple[int, int]] = {}  # node id -> (values, height)
    active: set[int] = set()
    aliased = False

    def fail(node: Node, path: KeyPath, msg: str, hint: str) -> ArenaError:
        line, col = _pos(node)
        return ArenaError(msg, file=file, line=line, col=col, field=field_name(path[:4]) or None, hint=hint)

    def walk(node: Node, path: KeyPath, depth: int) -> tuple[int, int]:
        nonlocal aliased
        if id(node) in active:
            raise fail(node, path, "an alias refers to a value that contains it (a recursive alias)",
                       "an alias (*name) may only refer to a value defined before and outside it")
        known = done.get(id(node))
        if known is None:
            if depth > MAX_DEPTH:
                raise fail(node, path, f"the document nests more than {MAX_DEPTH} levels deep (through aliases)",
                           "write the values out instead of nesting aliases")
            active.add(id(node))
            count, height = 1, 0
            for child_path, child in _children(node, path):
                n, h = walk(child, child_path, depth + 1)
                count, height = count + n, max(height, h + 1)
                if count > MAX_NODES:
                    what = "aliases expand this value to" if aliased else "the document has"
                    raise fail(node, path, f"{what} more than {MAX_NODES:,} values",
                               "an alias bomb? write the values out, or use fewer nested aliases (*name)"
                               if aliased else "a manifest or board file needs far fewer values")
            active.discard(id(node))
            known = done[id(node)] = (count, height)
        else:
            aliased = True
            if depth + known[1] > MAX_DEPTH:
                raise fail(node, path, f"the document nests more than {MAX_DEPTH} levels deep (through aliases)",
                           "write the values out instead of nesting aliases")
        return known

    walk(root, (), 0)


def _syntax_error(exc: yaml.MarkedYAMLError, file: str) -> ArenaError:
    mark = exc.problem_mark or exc.context_mark
    problem = exc.problem or "invalid YAML"
    if exc.context and exc.context_mark is not None and exc.problem_mark is not None:
        problem = f"{problem} ({exc.context} on line {exc.context_mark.line + 1})"
    line = mark.line + 1 if mark else None
    col = mark.column + 1 if mark else None
    return ArenaError(f"YAML syntax error: {problem}", file=file, line=line, col=col,
                      hint="check indentation, colons and quoting on this line or the one before")


def loads(text: str, file: str = "<string>") -> Doc:
    """Parse YAML text (one document) into a Doc; ``file`` is used in messages."""
    try:
        loader = _BoundedLoader(text, file)
    except yaml.reader.ReaderError as exc:  # a character YAML does not allow (a NUL byte), found before parsing
        line = text.count("\n", 0, exc.position) + 1
        raise ArenaError(f"character {exc.character:#06x} is not allowed in YAML", file=file, line=line,
                         hint="remove it (a binary file, or a NUL byte pasted into the text?)") from None
    try:
        node = loader.get_single_node()
    except yaml.MarkedYAMLError as exc:
        raise _syntax_error(exc, file) from exc
    except yaml.YAMLError as exc:  # e.g. several documents in one file
        raise ArenaError(f"YAML error: {exc}", file=file) from exc
    finally:
        loader.dispose()
    if node is not None:
        _check_size(node, file)
    builder = _Builder(file)
    builder.keys[()] = (1, 1)
    data = None if node is None else builder.build(node, ())
    return Doc(data=data, keys=dict(builder.keys), values=dict(builder.values), file=file)


def load(path: str) -> Doc:
    """Read and parse a YAML file; unreadable files and bad YAML raise ArenaError."""
    require_regular(str(path), "the file")
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise ArenaError("file not found", file=str(path), hint="check the path") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ArenaError(f"cannot read file: {exc}", file=str(path)) from exc
    return loads(text, str(path))


# ---------------------------------------------------------------- sizes

_SIZE_RE = re.compile(r"^\s*(0[xX][0-9a-fA-F_]+|[0-9][0-9_]*)\s*([kKmM](?:[iI]?[bB])?|[bB])?\s*$")
_SIZE_UNIT = {"": 1, "B": 1, "K": 1024, "M": 1024 * 1024}


def parse_size(value: Any) -> int:
    """Bytes from ``65536``, ``"64K"``, ``"64KiB"``, ``"64KB"``, ``"0x10000"`` or ``"1M"``.

    K/KB/KiB all mean 1024 and M/MB/MiB 1024*1024, as in GNU ld scripts; the unit in any case
    (256kb, 256KB, 256KiB: one size, never one accepted and the other refused).
    Percentages are not sizes; the manifest resolves them against a region.
    Raises ArenaError (without location: the caller knows it) on anything else.
    """
    if isinstance(value, bool):
        raise ArenaError(f"invalid size {value!r}: {_SIZE_EXPECTED}")
    if isinstance(value, int):
        if value < 0:
            raise ArenaError(f"invalid size {value}: must not be negative")
        return value
    if isinstance(value, str):
        match = _SIZE_RE.match(value)
        if match:
            digits, unit = match.group(1), (match.group(2) or "")
            number = int(digits.replace("_", ""), 16 if digits[:2].lower() == "0x" else 10)
            return number * _SIZE_UNIT[unit[:1].upper()]
        raise ArenaError(f"invalid size '{value}': {_SIZE_EXPECTED}")
    raise ArenaError(f"invalid size {_describe(value)}: {_SIZE_EXPECTED}")


_SIZE_EXPECTED = "expected a byte count like 65536, '64K', '64KiB', '1M' or '0x10000'"


# ---------------------------------------------------------------- schemas


@functools.lru_cache(maxsize=None)
def _validator(name: str) -> jsonschema.protocols.Validator:
    schema = load_schema(name)
    jsonschema.Draft202012Validator.check_schema(schema)
    validator: jsonschema.protocols.Validator = validator_class()(schema)  # 16.0 is no integer
    return validator


def validate(doc: Doc, schema_name: str, file: str | None = None) -> None:
    """Check ``doc.data`` against a schema; raise one ArenaError for the first failure.

    "First" means first in the file (then most specific), so the user fixes
    errors top to bottom. ``file`` overrides ``doc.file`` in the message.
    """
    errors = list(_validator(schema_name).iter_errors(doc.data))
    if not errors:
        return
    located = [_translate(doc, err) for err in errors]
    # A misspelt required key shows up twice (missing + unknown); the unknown
    # key, with its did-you-mean, is the useful one, so 'missing' goes last.
    unknown_at = {tuple(e.absolute_path) for e in errors
                  if e.validator in ("additionalProperties", "unevaluatedProperties")}

    def order(item: tuple[Pos, Any, int, ArenaError]) -> tuple[Any, ...]:
        demote = item[1].validator == "required" and tuple(item[1].absolute_path) in unknown_at
        return (demote, item[0], -len(item[1].path), item[2])

    located.sort(key=order)
    err = located[0][3]
    if file is not None:
        err.file = file
    raise err


_JSON_TYPES = {"object": "mapping", "array": "list", "string": "string", "integer": "integer",
               "number": "number", "boolean": "boolean (true/false)", "null": "null"}


def _describe(value: Any) -> str:
    """A short, YAML-flavoured rendering of a value for 'got ...'."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f"'{value}'" if len(value) <= 60 else f"'{value[:57]}...'"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return repr(value)


def _is_type(value: Any, json_type: str) -> bool:
    """Whether ``value`` is an instance of a JSON Schema type (bool is no integer)."""
    if json_type == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if json_type == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    kinds = {"string": str, "object": dict, "array": list, "boolean": bool, "null": type(None)}
    return isinstance(value, kinds.get(json_type, object))


def _expected_types(schema: Any) -> list[str]:
    types = schema.get("type") if isinstance(schema, dict) else None
    if types is None:
        return []
    return [types] if isinstance(types, str) else list(types)


def _union_types(err: jsonschema.ValidationError) -> list[str] | None:
    """For anyOf/oneOf where every branch failed on type alone: the accepted types."""
    branches = err.validator_value if isinstance(err.validator_value, list) else []
    names: list[str] = []
    for branch in branches:
        branch_types = _expected_types(branch)
        if not branch_types:
            return None
        names.extend(t for t in branch_types if t not in names)
    if not all(sub.validator == "type" for sub in err.context if not sub.relative_path):
        return None
    return names


def _translate(doc: Doc, err: jsonschema.ValidationError) -> tuple[Pos, Any, int, ArenaError]:
    """(position, error, tie-break, ArenaError) for one jsonschema error."""
    path = tuple(err.absolute_path)
    kw = err.validator
    schema = err.schema if isinstance(err.schema, dict) else {}
    # the stubs say "Any | Unset"; an error from iter_errors always carries both
    value: Any = err.instance
    wanted: Any = err.validator_value
    rank = 0
    hint: str | None = None
    at_value = True
    expected = schema.get("x-expected")

    if kw in ("additionalProperties", "unevaluatedProperties") and isinstance(value, dict):
        allowed = sorted(str(k) for k in schema.get("properties", {}))
        patterns = [re.compile(p) for p in schema.get("patternProperties", {})]
        extras = [k for k in value if str(k) not in allowed
                  and not any(p.search(str(k)) for p in patterns)]
        extra = extras[0] if extras else next(iter(value), "?")
        path = path + (extra,)
        at_value = False
        msg = f"unknown key '{extra}'"
        tail = "expected one of: " + ", ".join(allowed) if allowed else ""
        hint = (did_you_mean(str(extra), allowed) + tail).strip() or "remove it"
    elif kw == "required":
        missing = [k for k in wanted if isinstance(value, dict) and k not in value]
        key = missing[0] if missing else wanted[0]
        msg = f"missing required key '{key}'"
        at_value = False
        hint = f"add '{key}: ...'"
        sub = schema.get("properties", {}).get(key, {})
        if isinstance(sub, dict) and sub.get("description"):
            hint += f": {sub['description']}"
        err_field = field_name(path + (key,))
        line, col = doc.position(path)
        ae = ArenaError(msg, file=doc.file, line=line, col=col, field=err_field, hint=hint)
        return ((line, col), err, rank, ae)
    elif kw == "type":
        want = expected or " or ".join(_JSON_TYPES.get(t, t) for t in _expected_types(schema))
        msg = f"wrong type: expected {want}, got {_describe(value)}"
    elif kw in ("anyOf", "oneOf"):
        union = _union_types(err)
        # a list the list branch refused as a whole (empty, a duplicate): say that, not "a list"
        sized = [e for e in err.context if e.validator in ("minItems", "maxItems", "uniqueItems")
                 and not e.relative_path and isinstance(value, list)]
        if sized:
            item = _translate(doc, sized[0])
            return (item[0], item[1], 1, item[3])
        branch_types = [t for b in wanted if isinstance(b, dict) for t in _expected_types(b)]
        if expected and branch_types and not any(_is_type(value, t) for t in branch_types):
            msg = f"wrong type: expected {expected}, got {_describe(value)}"
        elif expected:
            msg = f"invalid value {_describe(value)}: expected {expected}"
        elif union:
            want = " or ".join(_JSON_TYPES.get(t, t) for t in union)
            msg = f"wrong type: expected {want}, got {_describe(value)}"
        elif err.context:
            best = jsonschema.exceptions.best_match(err.context)
            item = _translate(doc, best)
            return (item[0], item[1], 1, item[3])
        else:
            msg = f"invalid value {_describe(value)}"
        rank = 2
    elif kw == "enum":
        options = [str(o) for o in wanted]
        msg = f"invalid value {_describe(value)}"
        hint = did_you_mean(str(value), options) + "expected one of: " + ", ".join(options)
    elif kw == "const":
        msg = f"invalid value {_describe(value)}: must be {_describe(wanted)}"
    elif kw in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
        op = {"minimum": ">=", "exclusiveMinimum": ">", "maximum": "<=", "exclusiveMaximum": "<"}[kw]
        msg = f"invalid value {_describe(value)}: must be {op} {wanted}"
    elif kw in ("pattern", "format", "minLength", "maxLength", "multipleOf") and expected:
        msg = f"invalid value {_describe(value)}: expected {expected}"
    elif kw == "pattern":
        msg = f"invalid value {_describe(value)}: must match the pattern {wanted}"
    elif kw == "minLength":
        msg = f"invalid value {_describe(value)}: must be at least {wanted} characters"
    elif kw == "maxLength":
        msg = f"invalid value {_describe(value)}: must be at most {wanted} characters"
    elif kw == "multipleOf":
        msg = f"invalid value {_describe(value)}: must be a multiple of {wanted}"
    elif kw == "minItems":
        msg = (f"is an empty list: needs at least {wanted} item(s)" if not value
               else f"needs at least {wanted} item(s), got {len(value)}")
    elif kw == "maxItems":
        msg = f"allows at most {wanted} item(s), got {len(value)}"
    elif kw == "uniqueItems":
        items = value if isinstance(value, list) else []
        dup = next((v for k, v in enumerate(items) if v in items[:k]), None)
        msg = f"lists {_describe(dup)} twice: items must be unique" if dup is not None else "items must be unique"
    elif kw == "minProperties":
        msg = f"needs at least {wanted} key(s)"
    elif kw == "propertyNames" and err.context:
        sub = err.context[0]
        bad: Any = sub.instance
        path = path + (bad,)
        at_value = False
        msg = f"invalid name '{bad}'"
        hint = expected or (f"names must match {sub.validator_value}" if sub.validator == "pattern" else None)
    elif expected:
        msg = f"invalid value {_describe(value)}: expected {expected}"
    else:
        msg = f"invalid value {_describe(value)}: {err.message}"
    line, col = doc.value_position(path) if at_value else doc.position(path)
    ae = ArenaError(msg, file=doc.file, line=line, col=col, field=field_name(path) or None, hint=hint)
    return ((line, col), err, rank, ae)
