"""The compiled search core (``walk.c``, ``search.c``): built with the host's C compiler on first use
(``core.native``: why, where it is cached, ``ARENA_NATIVE=0``). Without a compiler ``load``
returns None and the callers run the Python reference (``walk.walk_py``, ``search.Search``),
which the tests hold equal to the C one.
"""

from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Sequence

import numpy as np

from arena_tool.core import native as core_native
from arena_tool.core.cache import machine_cache

SOURCES = (Path(__file__).with_name("walk.c"), Path(__file__).with_name("search.c"))

_typed: set[int] = set()  # id of each library whose functions are declared


def load() -> ctypes.CDLL | None:
    """The compiled core, or None (no compiler, a failed build, ARENA_NATIVE=0)."""
    lib = core_native.library("arena_walk", SOURCES, machine_cache())
    if lib is not None and id(lib) not in _typed:
        p = ctypes.POINTER(ctypes.c_int64)
        lib.arena_walk.restype = ctypes.c_int64
        lib.arena_walk.argtypes = [ctypes.c_int64, p, p, p, p, p, ctypes.c_double, p, p]
        lib.arena_search.restype = ctypes.c_int64
        lib.arena_search.argtypes = [ctypes.c_int64, ctypes.c_int64, p, p, p, p, p, ctypes.c_int64,
                                     ctypes.c_int64, ctypes.c_int64, ctypes.c_double, ctypes.c_int64, p, p,
                                     p, p]
        _typed.add(id(lib))
    return lib


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
