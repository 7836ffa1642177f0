"""Whether the installed cross gcc can compile for a board's core.

The board schema accepts every Cortex-M core arena knows, but GCC learnt the newer ones late:
``-mcpu=cortex-m85`` only from GCC 13 (Debian bookworm's arm-none-eabi-gcc 12.2 refuses it with a
page of valid names). A build or ``arena-tool run`` for such a board is refused here, in one line
naming the version needed, before anything is planned; a build that does not compile (``link=0``,
no cross gcc) is not asked.
"""

from __future__ import annotations

import functools
import subprocess

from arena_tool.core.errors import ArenaError
from arena_tool.target.boards import Board

# The first GCC release whose -mcpu= knows the core (GCC's release notes); older cores: any GCC.
FIRST_GCC = {"cortex-m23": 7, "cortex-m33": 7, "cortex-m55": 10, "cortex-m85": 13}


@functools.lru_cache(maxsize=None)
def gcc_version(gcc: str) -> str | None:
    """``gcc -dumpfullversion`` (e.g. '12.2.1'), None when it does not run."""
    try:
        p = subprocess.run([gcc, "-dumpfullversion", "-dumpversion"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    text = p.stdout.strip()
    return text if p.returncode == 0 and text[:1].isdigit() else None


def check_core(board: Board, gcc: str) -> None:
    """ArenaError (exit 2) when ``gcc`` is older than the first GCC that compiles ``board``'s core."""
    check(board.name, board.cpu.core, board.file, gcc)


def check(name: str, core: str, file: str, gcc: str) -> None:
    """``check_core`` for board ``name`` (its file ``file``) of core ``core``."""
    need = FIRST_GCC.get(core)
    version = gcc_version(gcc) if need is not None else None
    if need is None or version is None:
        return
    if int(version.split(".")[0]) < need:
        raise ArenaError(f"board {name}: core {core} needs arm-none-eabi-gcc {need} or newer; {gcc} is {version}",
                         file=file or None, field="cpu.core",
                         hint=f"install Arm GNU Toolchain {need} or newer (gcc_prefix= names it), "
                              f"or plan only (link=0)")
