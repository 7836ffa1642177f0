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

from arena_tool.errors import EXIT_BUG, ArenaError


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
    return json.loads(schema_path(name).read_text(encoding="utf-8"))


def read_json(path: str, what: str, hint: str, schema: str | None = None) -> Any:
    """A JSON file, schema-checked when ``schema`` is given; every failure one ArenaError.

    what: what the file is, for messages ('plan file'); hint: how to make a good one.
    """
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except FileNotFoundError as e:
        raise ArenaError(f"{what} not found", file=path, hint=hint) from e
    except json.JSONDecodeError as e:
        raise ArenaError(f"not JSON: {e.msg}", file=path, line=e.lineno, col=e.colno, hint=hint) from e
    except (OSError, UnicodeDecodeError) as e:
        raise ArenaError(f"cannot read {what}: {e}", file=path, hint=hint) from e
    if schema is not None:
        check_json(doc, schema, path)
    return doc


def dotted(path: Any) -> str:
    """('buffers', 3, 'offset') -> 'buffers[3].offset'."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def check_json(obj: Any, name: str, file: str) -> None:
    """Validate obj against schemas/<name>.schema.json; the first error (by path) as ArenaError."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(load_schema(name))
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

    The one writer of every file arena makes (plans, reports, C, linker scripts, CSV, npz).
    A file that cannot be written is a user error naming it, not a traceback.
    """
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=os.path.basename(path))
    except OSError as e:
        raise ArenaError(f"cannot write: {e.strerror}", file=path,
                         hint="check that the folder exists and is writable") from e
    try:
        if isinstance(text, bytes):
            with os.fdopen(fd, "wb") as fb:
                fb.write(text)
        else:
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
                f.write(text)
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; generated files are ordinary files
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
