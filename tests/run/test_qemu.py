"""qemu: the qemu-system-arm command line, and what a missing QEMU or a firmware that never
exits becomes (QEMU itself runs in the firmware tests)."""

from __future__ import annotations

import subprocess

import pytest

from arena_tool.core.errors import ArenaError
from arena_tool.run import qemu


def test_the_command_runs_the_elf_with_semihosting_on_the_machine() -> None:
    cmd = qemu.command("fw.elf", "mps2-an500")
    assert cmd[0] == "qemu-system-arm" and cmd[cmd.index("-M") + 1] == "mps2-an500"
    assert cmd[cmd.index("-kernel") + 1] == "fw.elf" and "-semihosting" in cmd and "-icount" not in cmd
    timed = qemu.command("fw.elf", "mps2-an500", icount=True)
    assert timed[timed.index("-icount") + 1] == "shift=0" and sorted(set(timed) - set(cmd)) == ["-icount", "shift=0"]


def test_a_missing_qemu_is_one_error_with_the_fix(monkeypatch) -> None:
    monkeypatch.setattr(qemu.shutil, "which", lambda name: None)
    with pytest.raises(ArenaError, match="qemu-system-arm is not installed") as info:
        qemu.run("fw.elf", "mps2-an500")
    assert "apt-get install qemu-system-arm" in (info.value.hint or "")


def test_a_firmware_that_never_exits_is_stopped_with_the_timeout_status(monkeypatch) -> None:
    def never(cmd, **kw):
        raise subprocess.TimeoutExpired(cmd, kw["timeout"], output=b"booted\n")

    monkeypatch.setattr(qemu.shutil, "which", lambda name: "/usr/bin/" + name)
    monkeypatch.setattr(qemu.subprocess, "run", never)
    status, out = qemu.run("fw.elf", "mps2-an500", timeout=0.5)
    assert status == qemu.TIMEOUT_STATUS and out == "booted\n\nqemu: stopped after 0.5 s\n"
