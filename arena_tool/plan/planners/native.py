"""The compiled search core (``walk.c``, ``search.c``): built with the host's C compiler on first use.

Why this way and not a setuptools extension: the package installs as pure Python
(``pip install -e .`` needs no compiler and no build step), every target of arena
already needs a C toolchain, and a missing or failing compiler costs speed, never
an answer: ``load`` returns None and the callers run the Python reference
(``walk.walk_py``, ``search.Search``), which the tests hold equal to the C one.

The shared object goes to ``native/`` in the machine's cache (``core.cache``:
``$ARENA_CACHE_DIR``, else ``~/.cache/arena-tool``) under a name that hashes the source and the command, written
atomically (a temporary file, then a rename), so concurrent first uses and edits of
the source never load a stale or half-written library. ``ARENA_NATIVE=0`` turns it off.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Sequence

import numpy as np

from arena_tool.core.cache import machine_cache

SOURCES = (Path(__file__).with_name("walk.c"), Path(__file__).with_name("search.c"))
FLAGS = ("-O2", "-shared", "-fPIC")
COMPILE_SECONDS = 60  # a first build takes ~0.2 s; a hung compiler must not hang planning

_loaded: list[ctypes.CDLL | None] = []  # memo: [] not tried yet, [None] unavailable


def cache_dir() -> Path:
    return Path(machine_cache()) / "native"


def _compiler() -> str | None:
    return shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")


def _build() -> Path | None:
    """The cached library, compiled now if missing; None when it cannot be built."""
    cc = _compiler()
    if cc is None or not all(p.is_file() for p in SOURCES):
        return None
    source = b"".join(p.read_bytes() for p in SOURCES)
    digest = hashlib.sha256(source + repr((cc, FLAGS)).encode()).hexdigest()[:16]
    target = cache_dir() / f"arena_walk-{digest}.so"
    if target.is_file():
        return target
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(suffix=".so", dir=target.parent)
        os.close(fd)
        done = subprocess.run([cc, *FLAGS, "-o", tmp, *map(str, SOURCES)], capture_output=True,
                              timeout=COMPILE_SECONDS, check=False)
        if done.returncode != 0:
            os.unlink(tmp)
            return None
        os.replace(tmp, target)
    except (OSError, subprocess.SubprocessError):
        return None
    return target


def load() -> ctypes.CDLL | None:
    """The compiled core, or None (no compiler, a failed build, ARENA_NATIVE=0)."""
    if os.environ.get("ARENA_NATIVE", "1") == "0":
        return None
    if not _loaded:
        path = _build()
        lib = None
        if path is not None:
            try:
                lib = ctypes.CDLL(str(path))
            except OSError:
                lib = None
        if lib is not None:
            p = ctypes.POINTER(ctypes.c_int64)
            lib.arena_walk.restype = ctypes.c_int64
            lib.arena_walk.argtypes = [ctypes.c_int64, p, p, p, p, p, ctypes.c_double, p, p]
            lib.arena_search.restype = ctypes.c_int64
            lib.arena_search.argtypes = [ctypes.c_int64, ctypes.c_int64, p, p, p, p, p, ctypes.c_int64,
                                         ctypes.c_int64, ctypes.c_int64, ctypes.c_double, ctypes.c_int64, p, p,
                                         p, p]
        _loaded.append(lib)
    return _loaded[0]


def walk(lib: ctypes.CDLL, s0: np.ndarray, s1: np.ndarray, size: np.ndarray, align: np.ndarray,
         rank: np.ndarray, deadline: float | None = None) -> tuple[list[int], bool] | None:
    """``arena_walk`` on int64 copies of the arrays: (offsets, cut by ``deadline``, a
    time.perf_counter() value), or None when it ran out of memory."""
    arrays = [np.ascontiguousarray(a, dtype=np.int64) for a in (s0, s1, size, align, rank)]
    off = np.empty(len(size), dtype=np.int64)
    cut = np.zeros(1, dtype=np.int64)
    p = ctypes.POINTER(ctypes.c_int64)
    top = lib.arena_walk(len(size), *(a.ctypes.data_as(p) for a in arrays), -1.0 if deadline is None else deadline,
                         off.ctypes.data_as(p), cut.ctypes.data_as(p))
    if top < 0:
        return None
    out: list[int] = off.tolist()
    return out, bool(cut[0])


def search(lib: ctypes.CDLL, n_sections: int, s0: np.ndarray, s1: np.ndarray, size: np.ndarray,
           align: np.ndarray, rank: np.ndarray, capacity: int, rules: int, node_limit: int | None,
           deadline: float | None, keys: Sequence[np.ndarray | None] = ()) -> tuple[int, np.ndarray, int]:
    """``arena_search`` (search.c): (status 0 found, 1 infeasible, 2 aborted, 3 out of memory;
    the offsets, valid when found; nodes). ``rules``: a bit per rule in ``Rules`` order,
    ``deadline`` a time.perf_counter() value; ``keys``: regroup by these key columns (None:
    T, the remaining loads)."""
    n = len(size)
    cols = np.ascontiguousarray(np.stack([np.zeros(n, dtype=np.int64) if k is None else k for k in keys])
                                if keys else np.zeros(1, dtype=np.int64), dtype=np.int64)
    is_t = np.array([int(k is None) for k in keys] or [0], dtype=np.int64)
    arrays = [np.ascontiguousarray(a, dtype=np.int64) for a in (s0, s1, size, align, rank)]
    off = np.empty(len(size), dtype=np.int64)
    nodes = np.zeros(1, dtype=np.int64)
    p = ctypes.POINTER(ctypes.c_int64)
    status = lib.arena_search(len(size), n_sections, *(a.ctypes.data_as(p) for a in arrays), capacity, rules,
                              -1 if node_limit is None else node_limit, -1.0 if deadline is None else deadline,
                              len(keys), cols.ctypes.data_as(p), is_t.ctypes.data_as(p),
                              off.ctypes.data_as(p), nodes.ctypes.data_as(p))
    return int(status), off, int(nodes[0])
