"""Where arena keeps what it compiles on this machine (objects, TFLM libraries, the planner's C
core), apart from any project's SCons cache (``cache=``): one place, one variable. A leaf module,
so the planners reach it without importing the file helpers above it."""

from __future__ import annotations

import os

CACHE_ENV = "ARENA_CACHE_DIR"


def machine_cache() -> str:
    """``$ARENA_CACHE_DIR``, else ``~/.cache/arena-tool``."""
    return os.environ.get(CACHE_ENV) or os.path.join(os.path.expanduser("~"), ".cache", "arena-tool")
