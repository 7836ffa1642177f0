"""What arena's SCons tool (``arena.py`` beside it) adds to SCons's own bookkeeping, through SCons's
documented hooks only (tests/test_site_sconsign.py):

* ``recorded_only``: the Decider (``env.Decider``) of arena's environments. It also rebuilds a
  target whose file is not the one the signature database recorded (``as_recorded``): SCons
  writes that record at the end of a build, so a build killed after writing new outputs leaves
  files the old records do not describe, and once the edit is reverted every input matches those
  records again and the stale files would be reused for ever.
* this module as the signature database (``env.SConsignFile``'s ``dbm_module``; ``use_for``): the
  same file as SCons's dblite (``<name>.dblite``, a pickled dict of bytes), whose one write, after
  the last action, fails on a full disk or a read-only build folder with one line naming the file
  and the fix, exit 2, the partial temporary file removed and the old database kept. (SCons's own
  showed its stack twice, the write and then again at exit, and left ``.sconsign.tmp``.) Every
  output was written whole by its action, and a later build checks each one against the old
  record (``recorded_only``) and rebuilds what it does not match.

Nothing here holds state between builds or patches SCons: the Decider is per environment, the
database module is SCons's documented ``dbm_module`` interface (``open``, then a mapping with
``sync`` and ``close``).
"""

from __future__ import annotations

import io
import os
import pickle
import sys
from collections.abc import Callable, Iterator
from typing import Any

Decide = Callable[..., bool]  # an SCons Decider: (dependency, target, prev_ni, repo_node=None) -> changed

SUFFIX = ".dblite"  # SCons's dblite names its file so: an existing build's records are read as they are


# ---------------------------------------------------------------- reuse only what was recorded


def as_recorded(recorded: tuple[str | None, Any, Any], stamp: tuple[Any, Any], content_hash: Callable[[], str],
                verdicts: dict[tuple[str, Any], bool], path: str) -> bool:
    """Whether a target's file is the one its signature database record describes. recorded: the
    record's (content hash, timestamp, size); stamp: the file's (timestamp, size), compared first
    (as max_drift trusts a stored checksum; SCons keeps whole seconds, so a file rewritten within
    the recorded second at the same size passes); by content when they differ, once per
    (path, stamp) in ``verdicts``. True when nothing is recorded."""
    csig, timestamp, size = recorded
    if not csig or stamp == (timestamp, size):
        return True
    key = (path, stamp)
    if key not in verdicts:
        verdicts[key] = content_hash() == csig
    return verdicts[key]


def recorded_only(inner_source: Decide, inner_target: Decide) -> Decide:
    """A Decider over an environment's own deciders for sources and for built dependencies
    (``env.decide_source``/``decide_target``) that also rebuilds a target whose file is not the
    recorded one. SCons nodes are read through their methods only. It runs once per (input,
    target) pair; the answer for a target is kept with the record it was checked against (SCons
    makes a new one on a build)."""
    verdicts: dict[tuple[str, Any], bool] = {}
    checked: dict[Any, tuple[Any, bool]] = {}  # target node -> (its stored info, whether its file is recorded)

    def recorded(target: Any) -> bool:
        ninfo = getattr(target.get_stored_info(), "ninfo", None)
        if not hasattr(target, "get_content_hash") or not target.exists():
            return True  # SCons rebuilds a missing file anyway
        record = (getattr(ninfo, "csig", None), getattr(ninfo, "timestamp", None), getattr(ninfo, "size", None))
        stamp = (target.get_timestamp(), target.get_size())
        return as_recorded(record, stamp, target.get_content_hash, verdicts, target.get_abspath())

    def decide(dependency: Any, target: Any, prev_ni: Any, repo_node: Any = None) -> bool:
        inner = inner_target if dependency.has_builder() else inner_source
        if inner(dependency, target, prev_ni, repo_node):
            return True
        info = target.get_stored_info()
        seen = checked.get(target)
        if seen is None or seen[0] is not info:
            seen = checked[target] = (info, recorded(target))
        return not seen[1]

    return decide


# ---------------------------------------------------------------- the signature database


class Database:
    """One signature database file: read whole when opened, written whole by ``sync`` (to
    ``<name>.tmp``, then renamed over the file). flag: dbm's ``r`` (read only), ``w``, ``c``
    (create when absent) or ``n`` (always empty)."""

    def __init__(self, name: str, flag: str = "r") -> None:
        base, ext = os.path.splitext(name)
        self.path = name if ext == SUFFIX else name + SUFFIX
        self.tmp = (base if ext == SUFFIX else name) + ".tmp"
        self.writable = flag != "r"
        self.dirty = flag == "n"
        self.failed = False
        self.data: dict[str, bytes] = {}
        if flag != "n":
            try:
                with io.open(self.path, "rb") as f:
                    raw = f.read()
            except FileNotFoundError:
                if flag != "c":
                    raise
                raw = b""
            self.data = pickle.loads(raw) if raw else {}
        if flag in ("c", "n") and not os.path.exists(self.path):
            self.dirty = True  # created, as dblite does, at the first sync

    def __getitem__(self, key: str) -> bytes:
        return self.data[key]

    def __setitem__(self, key: str, value: bytes) -> None:
        if not self.writable:
            raise OSError(f"read-only signature database: {self.path}")
        if not isinstance(key, str) or not isinstance(value, bytes):
            raise TypeError(f"a signature database holds str -> bytes, not {type(key)} -> {type(value)}")
        self.data[key] = value
        self.dirty = True

    def __delitem__(self, key: str) -> None:
        del self.data[key]
        self.dirty = True

    def __contains__(self, key: object) -> bool:
        return key in self.data

    def __iter__(self) -> Iterator[str]:
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)

    def keys(self) -> Any:
        return self.data.keys()

    def items(self) -> Any:
        return self.data.items()

    def values(self) -> Any:
        return self.data.values()

    def sync(self) -> None:
        """Write the records whole, or fail with one line and exit 2 (the old file kept, the
        temporary file removed); after a failure, nothing (SCons closes the database again)."""
        if not self.dirty or not self.writable or self.failed:
            return
        try:
            with io.open(self.tmp, "wb") as f:
                pickle.dump(self.data, f, pickle.HIGHEST_PROTOCOL)
            os.replace(self.tmp, self.path)
        except OSError as err:
            self.failed = True
            if os.path.islink(self.tmp) or os.path.isfile(self.tmp):
                os.remove(self.tmp)
            from arena_tool.build_steps import signature_error

            sys.stderr.write(signature_error(err, self.path) + "\n")
            sys.stderr.flush()
            raise SystemExit(2) from None
        self.dirty = False

    def close(self) -> None:
        self.sync()


def open(name: str, flag: str = "r", mode: int = 0o666) -> Database:  # noqa: A001 (the dbm interface's name)
    """The dbm interface SCons opens a signature database through (mode: unused, the umask's)."""
    return Database(name, flag)


def use_for(env: Any) -> None:
    """Make this module the signature database (``env.SConsignFile``), keeping the file name SCons
    would use, unless the SConstruct chose its own database module or per-directory files. A later
    ``env.SConsignFile(name)`` without a module keeps it (SCons changes the module only when given one)."""
    import SCons.SConsign
    import SCons.dblite

    if SCons.SConsign.DB_Module is not SCons.dblite:
        return  # already arena's, or the SConstruct's choice
    name = SCons.SConsign.DB_Name or SCons.SConsign.current_sconsign_filename()
    env.SConsignFile(name, sys.modules[__name__])
