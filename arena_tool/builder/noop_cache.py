"""A no-op build's view of the manifest (and its end-of-build summary): plain JSON data,
reused while no input changed.

``cached(path, board_dirs, cache_file)`` returns ``manifest.to_doc(load(...))``
and stores it, keyed by the (path, mtime, size) of the manifest, every board
and model file it read and every board folder (a new board file changes the
folder's mtime), and by ``files.package_digest()``: the bytes of every ``.py`` and
``.json`` of the package and of its schemas, so no hand-kept list of the
loader's sources can miss one. On a hit nothing but ``json``, ``os``, ``hashlib``
and ``core.files`` (which the SCons tool imports anyway) is imported: no PyYAML, no
jsonschema, not even the dataclasses of ``manifest`` (building those types costs milliseconds a no-op build need not
spend). On a miss it loads the manifest for real; errors are ArenaErrors as
from ``manifest.load``.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any, Callable, Iterable

from arena_tool.core.files import package_digest

if TYPE_CHECKING:
    from arena_tool.target.manifest_data import Manifest

FORMAT = 3  # 2: targets carry flash and runtime; 3: targets carry their whole board (Board.to_json)


def stamps(paths: Iterable[str]) -> list[list[Any]]:
    """(path, mtime in ns, size) of each file, None where it is gone."""
    out: list[list[Any]] = []
    for p in paths:
        try:
            st = os.stat(p)
            out.append([p, st.st_mtime_ns, st.st_size])
        except OSError:
            out.append([p, None, None])
    return out


def _watched(doc: dict[str, Any]) -> list[str]:
    return list(doc["inputs"]) + list(doc["board_dirs"])


def cached(path: str, board_dirs: tuple[str, ...], cache_file: str) -> dict[str, Any]:
    """``manifest.to_doc(manifest.load(path, board_dirs))``, from the cache when still valid."""
    key = [FORMAT, path, list(board_dirs), package_digest()]
    try:
        with open(cache_file, encoding="utf-8") as f:
            entry = json.load(f)
        if entry["key"] == key and entry["stamps"] == stamps(_watched(entry["manifest"])):
            hit: dict[str, Any] = entry["manifest"]
            return hit
    except (OSError, ValueError, KeyError, TypeError):
        pass
    from arena_tool.target import manifest

    doc = manifest.to_doc(manifest.load(path, board_dirs))
    entry = {"key": key, "stamps": stamps(_watched(doc)), "manifest": doc}
    from arena_tool.core.files import write_atomic

    write_atomic(cache_file, json.dumps(entry))
    return doc


def load(path: str, board_dirs: Iterable[str], cache_file: str) -> Manifest:
    """``manifest.load`` through this JSON cache (``cached``), as a Manifest."""
    from arena_tool.target import manifest

    return manifest.from_doc(cached(path, tuple(board_dirs), cache_file))


FIT_FORMAT = 1


def fitted(doc: dict[str, Any], out: str,
           search: Callable[[str, dict[str, Any], str], dict[str, Any]] | None = None) -> dict[str, Any]:
    """The manifest document with every ``fit:`` board (or board with a ``fit:`` model) as ``arena-tool fit`` picks it, for the
    build graph to plan (``run.fit.fitted`` gives ``search``: (manifest, board document, build
    folder) -> the board as picked, ``run.fit.chosen``'s).

    Cached by content in ``<out>/.arena_fit.json``, per board: keyed by the board's document,
    the (path, mtime, size) of its board and model files and the package's digest. A hit reads
    that one JSON file and imports nothing (a no-op build stays one); a miss without ``search``
    raises LookupError (the caller then imports run.fit and asks again with it). A change re-runs
    the search of the boards it touches only."""
    if not any(_searched(t) for t in doc["targets"]):
        return doc
    import hashlib

    cache = os.path.join(out, ".arena_fit.json")
    try:
        with open(cache, encoding="utf-8") as f:
            entries: dict[str, Any] = json.load(f)
    except (OSError, ValueError):
        entries = {}
    digest = package_digest()
    targets, changed = [], False
    for t in doc["targets"]:
        if not _searched(t):
            targets.append(t)
            continue
        files = [t["board_file"], *(m["path"] for m in t["models"])]
        key = hashlib.sha256(json.dumps([FIT_FORMAT, digest, stamps(files), t], sort_keys=True).encode()).hexdigest()
        entry = entries.get(t["name"])
        if not isinstance(entry, dict) or entry.get("key") != key:
            if search is None:
                raise LookupError(t["name"])
            entry = {"key": key, "target": search(doc["file"], t, out)}
            entries[t["name"]] = entry
            changed = True
        targets.append(entry["target"])
    if changed:
        from arena_tool.core.files import write_atomic

        os.makedirs(out, exist_ok=True)
        write_atomic(cache, json.dumps(entries, sort_keys=True))
    return {**doc, "targets": targets}


def _searched(t: dict[str, Any]) -> bool:
    """A board the build's search picks for: its own ``fit:`` or a model's."""
    return bool(t.get("fit") or any(m.get("fit") for m in t["models"]))


def summary(report_paths: list[str], cache_file: str) -> str:
    """``board_report.summary`` of these reports, kept in ``cache_file`` with their stamps.

    Keyed by the (path, mtime, size) of every report and by ``package_digest()``
    (the code that renders them): a no-op build prints the end-of-build table
    without importing ``arena_tool.report`` (a few milliseconds of dataclass set-up).
    """
    seen = [package_digest(), *stamps(report_paths)]
    try:
        with open(cache_file, encoding="utf-8") as f:
            entry = json.load(f)
        if entry["format"] == FORMAT and entry["stamps"] == seen:
            return str(entry["text"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    from arena_tool.builder import board_report
    from arena_tool.core.files import write_atomic

    text = board_report.summary([board_report.read(path) for path in report_paths])
    try:
        write_atomic(cache_file, json.dumps({"format": FORMAT, "stamps": seen, "text": text}))
    except OSError:
        pass  # only an optimisation
    return text
