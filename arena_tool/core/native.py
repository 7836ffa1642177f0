"""C helpers built with the host's C compiler on first use: the planners' search core and the
plan validator's sweep.

Why this way and not a setuptools extension: the package installs as pure Python
(``pip install -e .`` needs no compiler and no build step), every target of arena
already needs a C toolchain, and a missing or failing compiler costs speed, never
an answer: ``library`` returns None and the callers run their Python reference,
which the tests hold equal to the C one.

A shared object goes to ``native/`` in the machine's cache (the caller passes
``core.cache.machine_cache()``: this module stays a leaf, the import graph shallow) under a
name that hashes the sources and the command, written atomically (a temporary file, then a
rename), so concurrent first uses and edits of a source never load a stale or half-written
library. ``ARENA_NATIVE=0`` turns every one off.
"""

from __future__ import annotations

import ctypes
import os
from _blake2 import blake2b  # hashlib's own; hashlib itself loads OpenSSL first, 2.5 ms of every CSV plan
from pathlib import Path
from typing import Sequence

FLAGS = ("-O2", "-shared", "-fPIC")
COMPILE_SECONDS = 60  # a first build takes ~0.2 s; a hung compiler must not hang planning

_loaded: dict[str, ctypes.CDLL | None] = {}  # memo per stem: None unavailable


def _compiler() -> str | None:
    import shutil

    return shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")


def _build(stem: str, sources: Sequence[Path], cache: str) -> Path | None:
    """The cached library, compiled now if missing; None when it cannot be built."""
    cc = _compiler()
    if cc is None or not all(p.is_file() for p in sources):
        return None
    source = b"".join(p.read_bytes() for p in sources)
    digest = blake2b(source + repr((cc, FLAGS)).encode(), digest_size=8).hexdigest()
    target = Path(cache) / "native" / f"{stem}-{digest}.so"
    if target.is_file():
        return target
    import subprocess  # only to build: a built library's users (every CSV plan) need neither
    import tempfile

    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(suffix=".so", dir=target.parent)
        os.close(fd)
        done = subprocess.run([cc, *FLAGS, "-o", tmp, *map(str, sources)], capture_output=True,
                              timeout=COMPILE_SECONDS, check=False)
        if done.returncode != 0:
            os.unlink(tmp)
            return None
        os.replace(tmp, target)
    except (OSError, subprocess.SubprocessError):
        return None
    return target


def library(stem: str, sources: Sequence[Path], cache: str) -> ctypes.CDLL | None:
    """``sources`` compiled into one library under ``cache``/native (memoized under ``stem``),
    or None: no compiler, a failed build, ARENA_NATIVE=0. The caller declares its functions' types."""
    if os.environ.get("ARENA_NATIVE", "1") == "0":
        return None
    if stem not in _loaded:
        path = _build(stem, sources, cache)
        lib = None
        if path is not None:
            try:
                lib = ctypes.CDLL(str(path))
            except OSError:
                lib = None
        _loaded[stem] = lib
    return _loaded[stem]
