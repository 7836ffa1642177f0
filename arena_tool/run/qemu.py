"""Run a bare-metal ELF under qemu-system-arm with semihosting.

The firmware ends with semihosting SYS_EXIT_EXTENDED, whose subcode QEMU
turns into its own exit status, so the status is the firmware's verdict.
QEMU 7.2 writes SYS_WRITE0 text to stderr and UART/rdimon output to stdout;
both are captured, merged in the order written. Without ``-semihosting`` a
``bkpt`` would lock the core up (QEMU aborts, status 134); a firmware that
never exits is stopped after ``timeout`` seconds (see shared research
qemu.md).
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile

from arena_tool.core.errors import ArenaError

TIMEOUT_STATUS = 124  # like timeout(1): the firmware did not exit in time


def command(elf_path: str, machine: str, icount: bool = False) -> list[str]:
    """The qemu-system-arm command line for `elf_path` on `machine` (e.g. 'mps2-an500').

    icount: run with ``-icount shift=0`` (one virtual nanosecond per instruction,
    deterministic timing)."""
    cmd = ["qemu-system-arm", "-M", machine, "-nographic", "-semihosting", "-monitor", "none",
           "-kernel", elf_path]
    if icount:
        cmd[1:1] = ["-icount", "shift=0"]
    return cmd


def run(elf_path: str, machine: str, timeout: float = 60, icount: bool = False) -> tuple[int, str]:
    """(exit status, captured output). The status is the firmware's SYS_EXIT_EXTENDED code,
    TIMEOUT_STATUS when it ran longer than `timeout` seconds."""
    if shutil.which("qemu-system-arm") is None:
        raise ArenaError("qemu-system-arm is not installed",
                         hint="apt-get install qemu-system-arm (Debian), or run the host build instead")
    # Into a file, not a pipe: QEMU's stdio character device writes without blocking and drops what
    # a full pipe refuses, so a reader slowed by a loaded machine lost output lines (2,940 of 36,864
    # values at load 24, read as a mismatch); a file takes every write.
    with tempfile.TemporaryFile() as out:
        try:
            code = subprocess.run(command(elf_path, machine, icount), stdout=out, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, timeout=timeout).returncode
            tail = ""
        except subprocess.TimeoutExpired:
            code, tail = TIMEOUT_STATUS, f"\nqemu: stopped after {timeout} s\n"
        out.seek(0)
        return code, out.read().decode("utf-8", "replace") + tail
