"""qemu: the qemu-system-arm command line (``qemu.run`` itself runs in the firmware tests, which
are marked slow: tests/test_markers.py counts every call of it as running firmware)."""

from __future__ import annotations

from arena_tool.run import qemu


def test_the_command_runs_the_elf_with_semihosting_on_the_machine() -> None:
    cmd = qemu.command("fw.elf", "mps2-an500")
    assert cmd[0] == "qemu-system-arm" and cmd[cmd.index("-M") + 1] == "mps2-an500"
    assert cmd[cmd.index("-kernel") + 1] == "fw.elf" and "-semihosting" in cmd and "-icount" not in cmd
    timed = qemu.command("fw.elf", "mps2-an500", icount=True)
    assert timed[timed.index("-icount") + 1] == "shift=0" and sorted(set(timed) - set(cmd)) == ["-icount", "shift=0"]

