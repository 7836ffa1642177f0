"""A no-op build's view of the manifest (and its end-of-build summary): plain JSON data,
reused while no input changed.

``cached(path, board_dirs, cache_file)`` returns ``manifest.to_doc(load(...))``
and stores it, keyed by the (path, mtime, size) of the manifest, every board
and model file it read, every board folder (a new board file changes the
folder's mtime) and the loader's own sources. On a hit nothing but ``json``
and ``os`` is imported: no PyYAML, no jsonschema, not even the dataclasses of
``manifest`` (building those types costs milliseconds a no-op build need not
spend). On a miss it loads the manifest for real; errors are ArenaErrors as
from ``manifest.load``.
"""

from __future__ import annotations

import json
import os
from typing import Any, Iterable

FORMAT = 2  # 2: targets carry flash and runtime


def _stamp(paths: Iterable[str]) -> list[list[Any]]:
    out: list[list[Any]] = []
    for p in paths:
        try:
            st = os.stat(p)
            out.append([p, st.st_mtime_ns, st.st_size])
        except OSError:
            out.append([p, None, None])
    return out


def _sources() -> list[str]:
    """The files whose change can change what ``manifest.load`` returns."""
    here = os.path.dirname(os.path.abspath(__file__))
    names = ["manifest.py", "manifest_cache.py", "boards.py", "yamlio.py", "problem.py", "errors.py",
             os.path.join("planners", "__init__.py")]
    schemas = os.path.join(os.path.dirname(here), "schemas")
    return [os.path.join(here, n) for n in names] + [
        os.path.join(schemas, n) for n in ("manifest.schema.json", "board.schema.json")]


def _watched(doc: dict[str, Any]) -> list[str]:
    return list(doc["inputs"]) + list(doc["board_dirs"]) + _sources()


def cached(path: str, board_dirs: tuple[str, ...], cache_file: str) -> dict[str, Any]:
    """``manifest.to_doc(manifest.load(path, board_dirs))``, from the cache when still valid."""
    key = [FORMAT, path, list(board_dirs)]
    try:
        with open(cache_file, encoding="utf-8") as f:
            entry = json.load(f)
        if entry["key"] == key and entry["stamps"] == _stamp(_watched(entry["manifest"])):
            return entry["manifest"]
    except (OSError, ValueError, KeyError, TypeError):
        pass
    from arena_tool import manifest

    doc = manifest.to_doc(manifest.load(path, board_dirs))
    entry = {"key": key, "stamps": _stamp(_watched(doc)), "manifest": doc}
    from arena_tool.schema import write_atomic

    write_atomic(cache_file, json.dumps(entry))
    return doc


def summary(report_paths: list[str], cache_file: str) -> str:
    """``report.summary`` of these reports, kept in ``cache_file`` with their stamps.

    Keyed by the (path, mtime, size) of every report and of ``report.py``: a
    no-op build prints the end-of-build table without importing
    ``arena_tool.report`` (a few milliseconds of dataclass set-up).
    """
    here = os.path.dirname(os.path.abspath(__file__))
    stamps = _stamp(list(report_paths) + [os.path.join(here, "report.py")])
    try:
        with open(cache_file, encoding="utf-8") as f:
            entry = json.load(f)
        if entry["format"] == FORMAT and entry["stamps"] == stamps:
            return str(entry["text"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    from arena_tool import report
    from arena_tool.schema import write_atomic

    docs = []
    for path in report_paths:
        with open(path, encoding="utf-8") as f:
            docs.append(json.load(f))
    text = report.summary(docs)
    try:
        write_atomic(cache_file, json.dumps({"format": FORMAT, "stamps": stamps, "text": text}))
    except OSError:
        pass  # only an optimisation
    return text


def select_names(names: list[str], spec: str | None, file: str) -> list[str]:
    """The board names ``board=`` picks: 'all', 'a,b' or one name (None or '' = all), in given order."""
    from arena_tool.errors import ArenaError

    if not spec or spec.strip() == "all":
        return list(names)
    chosen: list[str] = []
    for name in (s.strip() for s in spec.split(",")):
        if not name:
            continue
        if name not in names:
            from arena_tool.errors import did_you_mean

            guess = did_you_mean(name, sorted(names))
            raise ArenaError(f"board '{name}' is not in the manifest", field="board",
                             hint=f"{guess}expected one of: {', '.join(sorted(names))} (or add it to {file})")
        if name not in chosen:
            chosen.append(name)
    if not chosen:
        raise ArenaError("no board given", field="board", hint="use board=NAME, board=a,b or board=all")
    return chosen
