"""Reading and writing arena's files: the one atomic writer, the one JSON reader, how
outputs name a path (relative to the project, so two clones write the same bytes), and arena's
own files (``package_files``, ``package_digest``: what a cache or a depfile keys on).

Every stage writes files; none of them should need the build cache or the schema finder for it.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import tempfile
from typing import Any, Iterable, Iterator

from arena_tool.core.errors import ArenaError, os_error, require_regular


def project_path(path: str, root: str | None = None) -> str:
    """``path`` as outputs record it: relative to ``root`` (the project; default the current
    folder, where SCons runs every action) when it lies inside, so two clones at different
    places write the same bytes; else as given. Forward slashes either way."""
    base = os.path.abspath(root or os.curdir)
    rel = os.path.relpath(os.path.abspath(path), base)
    inside = rel != os.pardir and not rel.startswith(os.pardir + os.sep) and not os.path.isabs(rel)
    return (rel if inside else path).replace(os.sep, "/")


def read_json(path: str, what: str, hint: str, schema: str | None = None) -> Any:
    """A JSON file, schema-checked when ``schema`` is given; every failure one ArenaError.

    what: what the file is, for messages ('plan file'); hint: how to make a good one.
    """
    require_regular(path, what)
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
        from arena_tool.core.schema import check_json  # here: writing a CSV needs no schema

        check_json(doc, schema, path)
    return doc


def _no_constant(name: str) -> Any:
    """json's parse_constant: NaN, Infinity and -Infinity are not JSON numbers."""
    raise ValueError(f"{name} is not a JSON number")


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


_HELD: dict[str, int] = {}  # build folder -> the open lock file this process holds until it exits
LOCK_NAME = ".arena.lock"


def hold_build_lock(folder: str) -> None:
    """Take ``folder``'s build lock for the rest of this process, or one error if another process
    holds it. Two builds writing one folder at once interleave their outputs and records (a
    stale "the link failed" kept every later build red until build/ was deleted): the second
    is refused instead. An advisory flock on ``<folder>/.arena.lock``, released by the OS when the
    holder exits, however it exits."""
    import fcntl

    key = os.path.abspath(folder)
    if key in _HELD:
        return
    try:
        os.makedirs(folder, exist_ok=True)
        fd = os.open(os.path.join(folder, LOCK_NAME), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as e:
        raise os_error(e, "create the build folder's lock file", os.path.join(folder, LOCK_NAME)) from e
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise ArenaError(f"another build is running in {folder} (it holds {LOCK_NAME})",
                         file=os.path.join(folder, LOCK_NAME),
                         hint="wait for it to finish, or build into another folder") from None
    _HELD[key] = fd


def release_build_lock(folder: str) -> None:
    """Give ``folder``'s lock back (a long-lived process, e.g. a test, that builds again later)."""
    fd = _HELD.pop(os.path.abspath(folder), None)
    if fd is not None:
        os.close(fd)


@contextlib.contextmanager
def waiting_lock(path: str) -> Iterator[None]:
    """Hold an exclusive advisory flock on the file ``path`` (made if absent), waiting for
    whoever holds it. For a folder in the machine's cache that two processes may fill at once
    (``arena-tool run``'s TFLM library, two test workers): the second waits and then finds the
    first one's work done, where both would have compiled into the same objects at once."""
    import fcntl

    try:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as e:
        raise os_error(e, "create the lock file", path) from e
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def package_files(package: str | None = None, schemas: str | None = None) -> list[str]:
    """Every ``.py`` and ``.json`` under the package folder (default: this package) and in its
    schemas folder (default: ``schema.schema_dir()``), sorted: what arena's loaders and
    generators are made of, found by walking rather than listed by hand."""
    package = package or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if schemas is None:
        from arena_tool.core.schema import schema_dir

        schemas = str(schema_dir())
    files = []
    for folder, dirs, names in os.walk(package):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        files += [os.path.join(folder, n) for n in sorted(names) if n.endswith((".py", ".json"))]
    if os.path.isdir(schemas):
        files += [os.path.join(schemas, n) for n in sorted(os.listdir(schemas)) if n.endswith(".json")]
    return files


@functools.lru_cache(maxsize=None)
def package_digest() -> str:
    """``files_digest(package_files())``: one value that changes with any edit to arena itself
    and is the same for every clone; computed once per process (about a millisecond)."""
    return files_digest(package_files())


def files_digest(files: Iterable[str]) -> str:
    """sha256 over each file's last two path parts (``core/schema.py``) and its bytes."""
    import hashlib  # here: a CSV plan writes files and needs no digest (hashlib loads OpenSSL, 2.5 ms)

    total = hashlib.sha256()
    for path in files:
        name = os.path.basename(os.path.dirname(path)) + "/" + os.path.basename(path)
        total.update(name.encode() + b"\0")
        with open(path, "rb") as f:
            total.update(hashlib.sha256(f.read()).digest())
    return total.hexdigest()
