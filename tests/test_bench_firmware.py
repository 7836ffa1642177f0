"""bench/firmware.py builds, runs and tabulates the firmware numbers (one small model, fast)."""

from __future__ import annotations

import re

from conftest import require_tool

from bench import firmware


def test_firmware_bench_one_model(capsys, tmp_path) -> None:
    require_tool("arm-none-eabi-gcc")
    require_tool("qemu-system-arm")
    rc = firmware.main(["--models", "kws_int8", "--no-callgrind", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert rc == 0, out
    rows = {m.group(1): [int(x.replace(",", "")) for x in m.group(2).split("|")[:5]]
            for m in re.finditer(r"^\| (kws_int8|all) +\|(.*)\|$", out, re.MULTILINE)}
    arena, lb, flash, ram, insns = rows["kws_int8"]
    assert rows["all"] == rows["kws_int8"]  # one model: the same ELF twice
    assert arena == lb == 8000 and flash > 16_000 and ram >= arena + firmware.STACK and insns > 1_000_000
    assert (tmp_path / "kws_int8" / "firmware.elf").is_file()
