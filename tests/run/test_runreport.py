"""run_report.json: the ELF's flash/RAM and the instructions per inference under QEMU -icount.

One small firmware (kws_int8 alone, the fastest example model) is built for
mps2-an500 and run once; the sizes are cross-checked with arm-none-eabi-size -A
and the ticks -> instructions rate with the firmware's calibration loop.
"""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess

import fwbuild
import pytest
from conftest import require_tool

from arena_tool.plan import planfile
from arena_tool.builder import gate
from arena_tool.run import qemu, runreport
from arena_tool.core.errors import ArenaError
from builders import target


@pytest.fixture(scope="module")
def fw(tmp_path_factory):
    """(elf path, QEMU exit status, output, plan file, generated header text) of kws_int8 on mps2-an500."""
    require_tool("arm-none-eabi-gcc")
    require_tool("qemu-system-arm")
    out = tmp_path_factory.mktemp("runreport")
    path = str(fwbuild.MODELS / "kws_int8.onnx")
    plan = fwbuild.plan(path, "optimal")
    gen = fwbuild.generate(out, [("kws_int8", path, plan)], "mps2_an500")
    elf = fwbuild.build_elf(out, gen, "mps2_an500", plan.arena_size)
    rc, text = qemu.run(str(elf), "mps2-an500", timeout=60, icount=True)
    return str(elf), rc, text, plan, (out / "kws_int8_model.h").read_text()


def test_instructions_from_ticks():
    assert runreport.instructions(1250, 25_000_000) == 50_000  # 40 ns per tick, 1 ns per instruction
    assert runreport.instructions(1250, 25_000_000, shift=1) == 25_000  # 2 ns per instruction
    assert runreport.instructions(0, 25_000_000) == 0


def test_elf_sizes_agree_with_size_A(fw):
    elf = fw[0]
    sizes = runreport.elf_sizes(elf)
    p = subprocess.run([require_tool("arm-none-eabi-size"), "-A", elf], capture_output=True, text=True, check=True)
    listed = {m.group(1): (int(m.group(2)), int(m.group(3)))
              for m in re.finditer(r"^(\S+)\s+(\d+)\s+(\d+)$", p.stdout, re.MULTILINE)}
    for s in sizes.sections:
        assert listed[s.name] == (s.size, s.addr), s
    flash = sum(listed[n][0] for n in (".isr_vector", ".text", ".rodata", ".data") if n in listed)
    ram = sum(listed[n][0] for n in (".data", ".bss", ".arena", "._user_heap_stack") if n in listed)
    assert (sizes.flash, sizes.ram) == (flash, ram)
    assert listed[".arena"][0] >= fw[3].arena_size


def test_run_report_document(fw, tmp_path):
    elf, rc, text, plan, header = fw
    assert rc == 0, text[-2000:]
    t = target(tmp_path, "mps2_an500", models="kws_int8")
    arena = gate.gate(t, [("kws_int8", "kws_int8.plan.json", plan)])
    run = runreport.build("mps2_an500", "mps2-an500", elf, rc, text, 25_000_000, arena)
    path = tmp_path / "run_report.json"
    runreport.write(str(path), run)
    assert runreport.read(str(path)) == run  # the typed run report, through its schema-checked file
    assert json.dumps(runreport.read(str(path)).to_json(), indent=2) + "\n" == path.read_text()  # same bytes
    back = run.to_json()
    # The firmware's own check of the rate: 50,000 loop instructions in 1,250 ticks (+- the timer reads).
    cal = back["calibration"]
    assert cal["loop_instructions"] == 50_000 and abs(cal["ticks"] * 40 - 50_000) <= 80, cal
    assert back["instructions_per_tick"] == 40 and back["resolution"] == 40
    (m,) = back["models"]
    assert m["status"] == 0 and m["ticks"] > 0 and m["instructions"] == m["ticks"] * 40
    assert m["arena_size"] == plan.arena_size and m["planner"] == "optimal"
    assert [o["name"] for o in m["outputs"]] == ["logits"] and len(m["outputs"][0]["values"]) == 12
    weights = int(re.search(r"KWS_INT8_WEIGHTS_BYTES (\d+)u", header).group(1))
    assert weights < m["tables_flash"] < back["flash"]
    table = runreport.table(run)
    assert "kws_int8" in table and f"{m['instructions']:,}" in table and "calibration loop 50,000" in table
    bad = dataclasses.replace(run, exit_status=True)  # not an integer in the file
    with pytest.raises(ArenaError, match="run_report"):
        runreport.write(str(tmp_path / "bad.json"), bad)
    assert not (tmp_path / "bad.json").exists()
    (tmp_path / "bad.json").write_text(json.dumps(dict(back, models="x")))
    with pytest.raises(ArenaError, match="run_report") as err:
        runreport.read(str(tmp_path / "bad.json"))
    assert err.value.exit_code == 2 and err.value.field == "models"


def test_board_without_clock_is_an_error(fw):
    with pytest.raises(ArenaError, match="clock_hz"):
        runreport.build("b", "m", fw[0], 0, "", None, None)
