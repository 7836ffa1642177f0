"""Finding and applying the JSON Schemas in the repository's schemas/ folder.

Every file arena reads or writes has a schema there; this module is the one
place that turns a jsonschema failure into an ArenaError naming the file and
the field.
"""

from __future__ import annotations

import functools
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from arena_tool.errors import EXIT_BUG, ArenaError, os_error


def schema_dir() -> Path:
    """schemas/ at the source tree's root (checkout, editable install), else the installed share dir."""
    here = Path(__file__).resolve().parent.parent / "schemas"
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


def read_json(path: str, what: str, hint: str, schema: str | None = None) -> Any:
    """A JSON file, schema-checked when ``schema`` is given; every failure one ArenaError.

    what: what the file is, for messages ('plan file'); hint: how to make a good one.
    """
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f, parse_constant=_no_constant)
    except FileNotFoundError as e:
        raise ArenaError(f"{what} not found", file=path, hint=hint) from e
    except json.JSONDecodeError as e:
        raise ArenaError(f"not JSON: {e.msg}", file=path, line=e.lineno, col=e.colno,
                         hint=f"truncated or damaged? {hint}") from e
    except ValueError as e:  # NaN/Infinity (json accepts them, JSON does not)
        raise ArenaError(f"not JSON: {e}", file=path, hint=f"damaged? {hint}") from e
    except (OSError, UnicodeDecodeError) as e:
        raise ArenaError(f"cannot read {what}: {e}", file=path, hint=hint) from e
    if schema is not None:
        check_json(doc, schema, path)
    return doc


def _no_constant(name: str) -> Any:
    """json's parse_constant: NaN, Infinity and -Infinity are not JSON numbers."""
    raise ValueError(f"{name} is not a JSON number")


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


def write_atomic(path: str | os.PathLike[str], text: str | bytes) -> None:
    """Write text (or bytes) so that readers see the old file or the whole new one, never a part.

    The one writer of every file arena makes (plans, reports, C, linker scripts, CSV, npz):
    a temporary file in the same folder, then ``os.replace``. A file that cannot be
    written (no folder, read-only, disk full) is one ArenaError naming it (exit 2),
    and no temporary or partial file is left behind.
    """
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=os.path.basename(path))
    except OSError as e:
        raise os_error(e, "write", path) from e
    try:
        if isinstance(text, bytes):
            with os.fdopen(fd, "wb") as fb:
                fb.write(text)
        else:
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
                f.write(text)
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; generated files are ordinary files
        os.replace(tmp, path)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(e, OSError):
            raise os_error(e, "write", path) from e
        raise
