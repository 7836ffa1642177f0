"""Weights in external flash (issue 36 defect 11): a board's ``external_flash`` (a QSPI/OSPI NOR
read memory-mapped, XIP) and ``weights: QSPI``.

The board format and its loader, the manifest's ``weights:`` naming a region the board lacks,
the gate (each flash against its own size), the generated linker script and the fragment for a
vendor script (both linked with arm-none-eabi-gcc and read back with pyelftools: the weights'
section inside the QSPI's address range), the ImageNet MobileNetV2 w0.35 int8 (tests/zoo.py:
1.66 M weights) over a 1 MB part's flash and fitting with ``weights: QSPI``, and a firmware whose
weights sit in an "external flash" QEMU maps (mps2-an500's PSRAM, declared as external flash
instead of RAM by the test board here), run and compared with onnxruntime. QEMU models no STM32
QUADSPI, so the STM32 boards' XIP itself is not run.
"""

from __future__ import annotations

import dataclasses
import subprocess
from pathlib import Path

import numpy as np
import pytest
from conftest import require_tool

from arena_tool.builder import board_report, gate
from arena_tool.core.errors import ArenaError
from arena_tool.emit import linker, linker_fragment
from arena_tool.emit.linker_fragment import CopiedSection, RegionUse
from arena_tool.report import htmlreport
from arena_tool.run import elfcheck
from arena_tool.target import boards, linkscript
from builders import H743_MEMORY, ROOT, copy_example, plans, printed_under_hash_seeds, scons, target, vendor_script

F769 = "stm32f769i_disco"
QSPI_BASE, QSPI_SIZE = 0x90000000, 64 << 20

# nucleo_f746's part (STM32F746: 1 MB of flash) with the 16 MB QSPI NOR of ST's 32F746GDISCOVERY
# (N25Q128A on QUADSPI, memory-mapped at 0x90000000): a 1 MB part with an external flash.
F746_QSPI = (ROOT / "boards" / "nucleo_f746.yaml").read_text().replace("name: nucleo_f746", "name: f746_qspi") \
    .replace("default_region:", "external_flash:\n  - {name: QSPI, origin: 0x90000000, length: 16M}\ndefault_region:")

# mps2_an500 with its PSRAM (0x60000000, QEMU's "mps.ram") declared as an external flash called
# XIP rather than RAM: QEMU loads the ELF's segment there and the firmware reads the weights in place.
XIP_BOARD = """\
name: xip_an500
description: mps2_an500 with its PSRAM standing in for a memory-mapped external flash (a test board)
source: boards/mps2_an500.yaml (QEMU 7.2 -M mps2-an500 memory map)
cpu: {core: cortex-m7, fpu: fpv5-d16, float_abi: hard, clock_hz: 25000000, irqs: 32}
flash: {origin: 0x00000000, length: 4M}
ram:
  - {name: SSRAM23, origin: 0x20000000, length: 4M, zero_wait: true, cacheable: false, dma: true, executable: true}
external_flash:
  - {name: XIP, origin: 0x60000000, length: 16M, note: QEMU's PSRAM; on silicon a QSPI NOR in memory-mapped mode}
default_region: SSRAM23
qemu: mps2-an500
"""


def _section(elf: Path, name: str) -> tuple[int, int, str]:
    from elftools.elf.elffile import ELFFile

    with open(elf, "rb") as f:
        s = ELFFile(f).get_section_by_name(name)
        assert s is not None, name
        return s["sh_addr"], s["sh_size"], s["sh_type"]


# ---------------------------------------------------------------- the board file


def test_a_board_declares_its_external_flash() -> None:
    b = boards.load_board(F769)
    [q] = b.external_flash
    assert (q.name, q.origin, q.length, q.executable, q.zero_wait) == ("QSPI", QSPI_BASE, QSPI_SIZE, True, False)
    assert "memory-mapped mode" in (q.needs_init or "")
    assert b.flash_names() == ["flash", "QSPI"] and b.memory("QSPI") == q and b.external("SRAM1") is None
    assert boards.Board.from_json(b.to_json(), b.file) == b  # schema-checked round trip
    assert "QSPI" not in b.region_names()  # never a RAM region: no arena, no region: auto, no split


@pytest.mark.parametrize("entry, want", [
    ("{name: QSPI, origin: 0x08100000, length: 64M}", "external_flash[0].origin: region 'QSPI' [0x08100000, "
     "0x0c100000) overlaps 'FLASH' [0x08000000, 0x08200000)"),
    ("{name: SRAM1, origin: 0x90000000, length: 64M}", "external_flash[0].name: region name 'SRAM1' is already "
     "used by ram[2]"),
    ("{name: flash, origin: 0x90000000, length: 64M}", "region name 'flash' is already used by weights: flash"),
    ("{name: QSPI, origin: 0x90000002, length: 64M}", "external_flash[0].origin: region 'QSPI' origin 0x90000002 "
     "is not 4-byte aligned"),
    ("{name: QSPI, origin: 0x90000000, length: 64}", None),  # a byte count: valid (a small NOR)
])
def test_external_flash_errors_name_the_field(tmp_path: Path, entry: str, want: str | None) -> None:
    text = (ROOT / "boards" / f"{F769}.yaml").read_text()
    head, _, tail = text.partition("external_flash:\n")
    rest = tail[tail.index("default_region:"):]
    (tmp_path / "b.yaml").write_text((head + f"external_flash:\n  - {entry}\n" + rest).replace(f"name: {F769}", "name: b"))
    if want is None:
        assert boards.load_board_file(str(tmp_path / "b.yaml")).external_flash[0].length == 64
        return
    with pytest.raises(ArenaError) as e:
        boards.load_board_file(str(tmp_path / "b.yaml"))
    assert want in str(e.value) and "b.yaml" in str(e.value)


def test_weights_naming_a_region_the_board_lacks(tmp_path: Path) -> None:
    """One error naming the manifest, the field, the regions the board has and the fix."""
    with pytest.raises(ArenaError) as e:
        target(tmp_path, f"{{name: {F769}}}", models="a", defaults="{weights: QSPX}")
    text = str(e.value)
    assert "arena.yaml" in text and "defaults.weights" in text, text
    assert ("model a: weights: QSPX is not a region of board stm32f769i_disco (its flash: flash; its external "
            "flash: QSPI; its RAM: DTCM, ITCM, SRAM1, SRAM2, BKPSRAM, SDRAM)") in text
    assert "did you mean 'QSPI'?" in text
    with pytest.raises(ArenaError, match="its external flash: none; .*under external_flash:"):
        target(tmp_path, "{name: nucleo_f746}", models="a", defaults="{weights: QSPI}")
    assert target(tmp_path, f"{{name: {F769}}}", models="a", defaults="{weights: QSPI}").models[0].options.weights \
        == "QSPI"


# ---------------------------------------------------------------- the gate


def _doc(weights: int, region: str = "flash") -> dict[str, object]:
    options = {"activation_dtype": None, "bitwidths": {}, "inplace": True, "scratch": "none", "input_shapes": {},
               "weights": region}
    return {"planner": "greedy_size", "arena_size": 1000, "lower_bound": 1000, "optimal": None, "status": "heuristic",
            "model": "m.onnx", "model_sha256": "0" * 64, "weights_bytes": weights, "alignment": 16, "options": options,
            "buffers": [{"name": "t", "kind": "activation", "dtype": "int8"}], "integer_ops": 3}


def test_the_gate_checks_each_flash_against_its_own_size(tmp_path: Path) -> None:
    (tmp_path / "boards").mkdir()
    (tmp_path / "boards" / "f746_qspi.yaml").write_text(F746_QSPI)
    t = target(tmp_path, "{name: f746_qspi}", models="big,small", board_dirs="[boards]")
    # 1.7 MB in the 1 MB internal flash: over, and the hint is the external flash.
    r = gate.gate(t, plans(t, _doc(1_700_000), _doc(20_000)))
    [p] = r.problems
    assert (p.kind, p.region, p.need, p.limit, p.model) == ("flash", "FLASH", 1_700_000, 1 << 20, "big")
    assert p.message == ("arena: f746_qspi: model big's weights need 1,700,000 B of flash, FLASH has 1,048,576 B (over "
                         "by 651,424 B, before any code); try weights: QSPI for model big (the board's external flash, "
                         "16,777,216 B: read in place)")
    # weights: QSPI: the internal flash holds the small model's weights only, the QSPI the big one's.
    r = gate.gate(t, plans(t, _doc(1_700_000, "QSPI"), _doc(20_000)))
    assert r.passed, [p.message for p in r.problems]
    [q] = r.regions
    assert (q.name, q.origin, q.length, q.in_place, q.weights_section, q.arena_section) == (
        "QSPI", QSPI_BASE, 16 << 20, True, ".weights_QSPI", None)
    assert q.weights >= 1_700_000 and r.weights == 20_000 and r.flash.used == 20_000
    assert r.ram.used == r.arena_size + t.reserve  # in-place weights take no RAM
    doc = r.to_json()
    assert board_report.BoardReport.from_json(doc, "r.json") == r  # schema-checked round trip
    assert "  QSPI: weights " in board_report.summary([r])
    view = htmlreport.build(r, {"big": "missing", "small": "missing"}, htmlreport.Memory.of_board(t.board))
    shown = {u.region.name: [(o.name, o.size) for o in u.occupants] for u in view.regions}
    assert shown["FLASH"] == [("weights: small", 20_000)] and shown["QSPI"] == [("weights: big", 1_700_000)]
    # Over the QSPI's own length: one problem naming the board file's field and the fix.
    r = gate.gate(t, plans(t, _doc(17 << 20, "QSPI"), _doc(20_000)))
    [p] = r.problems
    assert (p.kind, p.region, p.limit) == ("flash", "QSPI", 16 << 20)
    assert p.message.startswith("arena: f746_qspi: model big with weights: QSPI needs ")
    assert "of QSPI, which has 16,777,216 B (f746_qspi.yaml external_flash[0].length; over by" in p.message, p.message
    assert p.message.endswith("; try for big weights: flash, or a larger flash chip (its size in f746_qspi.yaml "
                              "external_flash[0].length)")


# ---------------------------------------------------------------- the linker script and the fragment


def _in_place(board: boards.Board, name: str, size: int) -> RegionUse:
    f = board.memory(name)
    return RegionUse(name, f.origin, f.length, 0, size, 0, f.length, None, f".weights_{name}", True)


def test_scripts_are_byte_identical_across_hash_seeds() -> None:
    code = ("from arena_tool.target import boards; from arena_tool.emit import linker, linker_fragment as lf\n"
            "from arena_tool.emit.linker_fragment import RegionUse\n"
            "b = boards.load_board('stm32f769i_disco'); q = b.memory('QSPI')\n"
            "r = RegionUse('QSPI', q.origin, q.length, 0, 4096, 0, q.length, None, '.weights_QSPI', True)\n"
            "print(linker.render(b, 'DTCM', 4000, 2048, 512, 16, regions=[r]), end='')\n"
            "print(lf.fragment(b, [lf.ArenaSection('.arena', 'DTCM', 4000, 16)], 2048, {'QSPI': 'QSPI_FLASH'},\n"
            "                  (), [lf.CopiedSection('.weights_QSPI', 'QSPI', 4096)]), end='')\n")
    one, two = printed_under_hash_seeds(code)
    assert one == two
    assert "  QSPI    (rx)  : ORIGIN = 0x90000000, LENGTH = 0x04000000 /* 64 MiB, external flash, memory-mapped */" in one
    assert "  } > QSPI\n" in one and "  } > QSPI_FLASH\n" in one and "AT> QSPI" not in one


def test_in_place_weights_need_an_external_flash() -> None:
    b = boards.load_board(F769)
    fake = RegionUse("SRAM1", 0, 1, 0, 100, 0, 1, None, ".weights_SRAM1", True)
    with pytest.raises(ArenaError, match="not an external flash of the board .its external flash: QSPI."):
        linker.render(b, "DTCM", 4000, 2048, 512, regions=[fake])
    with pytest.raises(ArenaError, match="not an external flash of the board"):
        linker_fragment.fragment(b, [], 2048, None, (), [CopiedSection(".weights_SRAM1", "SRAM1", 100)])
    with pytest.raises(ArenaError, match="do not fit in the external flash QSPI"):
        linker_fragment.fragment(b, [], 2048, None, (), [CopiedSection(".weights_QSPI", "QSPI", QSPI_SIZE + 1)])


FIRMWARE = r"""
#include <stdint.h>
extern uint32_t _estack, _sidata, _sdata, _edata, _sbss, _ebss;
uint8_t arena[4000] __attribute__((section(".arena"), aligned(16)));
/* as codegen writes weights: QSPI (a writable array in section .weights_QSPI) */
static int8_t weights[WEIGHTS] __attribute__((section(".weights_QSPI"))) = {1, 2, 3};
volatile uint32_t sink;
int main(void) { sink = (uint32_t)weights[2] + arena[0]; return 0; }
void Reset_Handler(void) {
    uint32_t *src = &_sidata, *dst = &_sdata;
    while (dst < &_edata) *dst++ = *src++;
    for (dst = &_sbss; dst < &_ebss;) *dst++ = 0;
    main();
    for (;;) {}
}
__attribute__((section(".isr_vector"), used))
const void *const vectors[2] = { &_estack, (const void *)Reset_Handler };
"""


def _gcc(tmp_path: Path, board: boards.Board, script: str, weights: int, *extra: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "fw.c").write_text(FIRMWARE)
    return subprocess.run([require_tool("arm-none-eabi-gcc"), *board.cpu.gcc_flags(), "-O1", "-ffreestanding",
                           "-nostdlib", "-nostartfiles", f"-DWEIGHTS={weights}", "-T", script, *extra, "fw.c", "-o",
                           "fw.elf", "-lgcc"], cwd=tmp_path, capture_output=True, text=True, timeout=120)


@pytest.mark.slow
def test_the_generated_script_links_the_weights_into_the_qspi(tmp_path: Path) -> None:
    board = boards.load_board(F769)
    q = _in_place(board, "QSPI", 4096)
    linker.write(tmp_path / "board.ld", linker.render(board, "DTCM", 4000, 2048, 512, regions=[q]))
    p = _gcc(tmp_path, board, "board.ld", 4096)
    assert p.returncode == 0, p.stderr
    addr, size, kind = _section(tmp_path / "fw.elf", ".weights_QSPI")
    assert QSPI_BASE <= addr and addr + size <= QSPI_BASE + QSPI_SIZE and size == 4096 and kind == "SHT_PROGBITS"
    rep = dataclasses.replace(_report(), regions=(q,))
    assert elfcheck.problems(str(tmp_path / "fw.elf"), board, rep) == []
    ram, flash = elfcheck.usage(str(tmp_path / "fw.elf"), board)
    all_ram, all_flash = elfcheck.usage(str(tmp_path / "fw.elf"))
    assert (all_ram - ram, all_flash - flash) == (4096, 4096)  # the QSPI's bytes are neither RAM nor internal flash
    # More weights than planned: the script's ASSERT refuses the link.
    p = _gcc(tmp_path, board, "board.ld", 8192)
    assert p.returncode != 0 and "arena: .weights_QSPI is larger than the planned 4096 B of weights" in p.stderr


@pytest.mark.slow
def test_the_fragment_links_the_weights_into_the_vendor_scripts_qspi(tmp_path: Path) -> None:
    """A CubeMX-style script with its own name for the QSPI (QSPI_FLASH), mapped by linker_regions."""
    board = boards.load_board("nucleo_h743")
    h743 = board.to_json()
    h743["external_flash"] = [{"name": "QSPI", "origin": QSPI_BASE, "length": 16 << 20}]  # RM0433: QUADSPI bank
    board = boards.Board.from_json(h743)
    memory = H743_MEMORY + [("QSPI_FLASH", "rx", QSPI_BASE, "16M")]
    (tmp_path / "vendor.ld").write_text(vendor_script(memory, "RAM_D1"))
    rep = dataclasses.replace(_report(region="AXI_SRAM"), regions=(_in_place(board, "QSPI", 4096),))
    names = {"AXI_SRAM": "RAM_D1", "QSPI": "QSPI_FLASH"}
    assert linker_fragment.regions_of(board, rep) == ["AXI_SRAM", "QSPI"]
    linkscript.check_script(str(tmp_path / "vendor.ld"), linkscript.needed_names(["AXI_SRAM", "QSPI"], names))
    linker_fragment.write(tmp_path / linkscript.FRAGMENT_NAME, linker_fragment.render_for_report(board, rep, names))
    p = _gcc(tmp_path, board, "vendor.ld", 4096, "-L", ".")
    assert p.returncode == 0, p.stderr
    addr, size, kind = _section(tmp_path / "fw.elf", ".weights_QSPI")
    assert QSPI_BASE <= addr and addr + size <= QSPI_BASE + (16 << 20) and kind == "SHT_PROGBITS"
    # The board's QSPI mapped to a MEMORY region at another address: the literal-address guard says so.
    memory = H743_MEMORY + [("QSPI_FLASH", "rx", 0xA0000000, "16M")]
    (tmp_path / "vendor.ld").write_text(vendor_script(memory, "RAM_D1"))
    p = _gcc(tmp_path, board, "vendor.ld", 4096, "-L", ".")
    assert p.returncode != 0 and "arena: .weights_QSPI is outside the board's external flash QSPI" in p.stderr


def _report(region: str = "DTCM") -> board_report.BoardReport:
    return board_report.BoardReport(board="b", region=region, region_origin=0, region_length=1, region_auto=False,
                                    sharing="sequential", arena_size=4000, lower_bound=4000, alignment=16, budget=1,
                                    budget_spec="100%", limit=4000, reserve_stack=0, reserve_heap=0, warn_above=None,
                                    models=(), status="ok", warning=None)


# ---------------------------------------------------------------- whole builds


def _project(tmp: Path, board: str, board_yaml: str, manifest: str) -> Path:
    proj = copy_example(tmp)
    (proj / "example_firmware" / "boards").mkdir()
    (proj / "example_firmware" / "boards" / f"{board}.yaml").write_text(board_yaml)
    (proj / "example_firmware" / "arena.yaml").write_text(manifest)
    return proj


@pytest.mark.slow
def test_mobilenet_v2_int8_fits_a_1mb_part_only_with_weights_in_qspi(tmp_path: Path, qcache: Path) -> None:
    """The ImageNet MobileNetV2 w0.35 int8 (1.66 M weights) is over a 1 MB part's flash; with
    weights: QSPI it builds, its weights' section is in the QSPI and the internal flash keeps the rest."""
    import onnx

    import quantized
    import zoo

    require_tool("arm-none-eabi-gcc")
    src = tmp_path / "mobilenet_v2_imagenet.onnx"
    onnx.save(zoo.mobilenet_v2_imagenet(), str(src))
    model = quantized.quantized(src, "qdq", True, qcache)
    manifest = ("board_dirs: [boards]\nregion: auto\nbudget: 100%\ndefaults: {planner: greedy_size}\n"
                "models:\n  - {name: mnv2, path: models/mnv2.onnx, io: int8}\nboards:\n  - f746_qspi\n")
    proj = _project(tmp_path / "p", "f746_qspi", F746_QSPI, manifest)
    (proj / "example_firmware" / "models" / "mnv2.onnx").write_bytes(model.read_bytes())
    p = scons(proj, "board=f746_qspi", "link=0")
    out = p.stdout + p.stderr
    assert p.returncode == 1, out[-3000:]
    gate_doc = board_report.read(str(proj / "build" / "f746_qspi" / "arena_gate.json"))
    [m] = gate_doc.models
    assert 1_650_000 < m.weights_bytes < 1_800_000 and (1 << 20) < m.weights_bytes  # about 1.7 MB of weights
    assert (f"arena: f746_qspi: model mnv2's weights need {m.weights_bytes:,} B of flash, FLASH has 1,048,576 B"
            in out), out[-3000:]
    assert "try weights: QSPI for model mnv2 (the board's external flash, 16,777,216 B: read in place)" in out
    (proj / "example_firmware" / "arena.yaml").write_text(manifest.replace("io: int8}", "io: int8, weights: QSPI}"))
    p = scons(proj, "board=f746_qspi")
    assert p.returncode == 0, (p.stdout + p.stderr)[-3000:]
    bdir = proj / "build" / "f746_qspi"
    rep = board_report.read(str(bdir / "arena_report.json"))
    assert rep.passed and rep.stage == "linked" and rep.weights == 0 and rep.flash.used < (1 << 20)
    [q] = rep.regions
    assert (q.name, q.in_place) == ("QSPI", True) and q.weights >= m.weights_bytes
    addr, size, kind = _section(bdir / "firmware.elf", ".weights_QSPI")
    assert QSPI_BASE <= addr and addr + size <= QSPI_BASE + (16 << 20) and kind == "SHT_PROGBITS"
    assert m.weights_bytes <= size <= q.weights


@pytest.mark.slow
def test_weights_read_in_place_from_an_external_flash_run_under_qemu(tmp_path: Path) -> None:
    """kws_int8 with weights: XIP on xip_an500: linked into the "external flash" QEMU maps at
    0x60000000, read there in place (nothing copies them) and its outputs match onnxruntime."""
    from arena_tool.model import lowering
    from arena_tool.plan import planfile
    from arena_tool.run import firmware, verify

    require_tool("arm-none-eabi-gcc")
    require_tool("qemu-system-arm")
    manifest = ("board_dirs: [boards]\ndefaults: {time_limit: 5}\n"
                "models:\n  - {name: kws_int8, path: models/kws_int8.onnx, weights: XIP}\nboards:\n  - xip_an500\n")
    proj = _project(tmp_path, "xip_an500", XIP_BOARD, manifest)
    p = scons(proj, "board=xip_an500", "run")
    text = p.stdout + p.stderr
    assert p.returncode == 0, text[-3000:]
    bdir = proj / "build" / "xip_an500"
    rep = board_report.read(str(bdir / "arena_report.json"))
    [q] = rep.regions
    assert (q.name, q.in_place, q.weights_section) == ("XIP", True, ".weights_XIP")
    addr, size, kind = _section(bdir / "firmware.elf", ".weights_XIP")
    assert 0x60000000 <= addr and addr + size <= 0x61000000 and kind == "SHT_PROGBITS" and 0 < size <= q.weights
    assert "arena_init" not in (bdir / "gen" / "arena_board.c").read_text()  # nothing is copied
    [m] = rep.models
    path = str(proj / "example_firmware" / "models" / "kws_int8.onnx")
    plan = planfile.load(str(proj / m.plan))
    assert plan.options.weights == "XIP"
    run = verify.parse_output(text)
    assert run.status.get("kws_int8") == 0, text[-1500:]
    ref = verify.reference(path, plan)
    lw = lowering.load(path, plan.options.input_shapes)
    for out, got in run.outputs["kws_int8"].items():
        want = ref[out].reshape(-1).astype(np.float32)
        step = firmware.quant_step(lw, plan, out)
        tol = step + 1e-6 if step is not None else 1e-4 * max(float(np.max(np.abs(want))), 1e-30)
        assert float(np.max(np.abs(got.astype(np.float32) - want))) <= tol, out


def test_a_vendor_script_without_the_external_flash_is_one_error(tmp_path: Path) -> None:
    """The fragment needs a MEMORY region for the board's QSPI: a script that names it otherwise gets
    the linker_regions: mapping to write (found by its address), before ld says something obscure."""
    memory = H743_MEMORY + [("OCTOSPI1", "rx", QSPI_BASE, "16M")]
    (tmp_path / "vendor.ld").write_text(vendor_script(memory, "RAM_D1"))
    with pytest.raises(ArenaError) as e:
        linkscript.check_script(str(tmp_path / "vendor.ld"), {"QSPI": "QSPI", "AXI_SRAM": "RAM_D1"},
                                field="linker_script", origins={"QSPI": QSPI_BASE})
    text = e.value.render()
    assert "arena's sections go to MEMORY region QSPI, which" in text and "vendor.ld" in text
    assert "map the board's QSPI to your script's name for that memory: linker_regions: {QSPI: OCTOSPI1}" in text
