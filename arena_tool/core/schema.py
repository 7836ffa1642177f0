"""Finding and applying the JSON Schemas in the repository's schemas/ folder.

Every file arena reads or writes has a schema there; this module is the one
place that turns a jsonschema failure into an ArenaError naming the file and
the field.
"""

from __future__ import annotations

import functools
import json
import sys
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
    """Validate obj against schemas/<name>.schema.json; the first error (by path) as ArenaError."""
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
