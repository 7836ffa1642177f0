"""linker: fragment: arena's sections INCLUDEd into a vendor linker script, linked with arm-none-eabi-gcc/ld.

The vendor scripts are written here in STM32CubeMX's style (their own MEMORY with CubeMX's
region names, .isr_vector, .text, .data AT> FLASH, .bss, ._user_heap_stack, /DISCARD/), with
``INCLUDE arena_fragment.ld`` inside SECTIONS. Link tests need the cross toolchain
(conftest.require_tool: skipped without it, failed under ARENA_REQUIRE_TOOLS=1).
"""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
from pathlib import Path

import pytest

from arena_tool.builder import board_report
from arena_tool.target import boards, linkscript, manifest
from arena_tool.emit import linker, linker_fragment
from arena_tool.run import elfcheck
from arena_tool.core.errors import ArenaError
from builders import ACTION, H743_MEMORY, INCLUDE, copy_example, printed_under_hash_seeds, scons, vendor_script
from conftest import require_tool

ROOT = Path(__file__).resolve().parents[2]
MPS2_MEMORY = [("FLASH", "rx", 0x00000000, "4096K"), ("RAM", "xrw", 0x20000000, "4096K"),
               ("PSRAM", "xrw", 0x60000000, "16M")]
H743_NAMES = {"AXI_SRAM": "RAM_D1", "DTCM": "DTCMRAM"}


FIRMWARE = r"""
#include <stdint.h>
extern uint32_t STACK_TOP, _sidata, _sdata, _edata, _sbss, _ebss;
uint8_t arena[ARENA_BYTES] __attribute__((section(".arena"), aligned(16)));
volatile uint32_t counter = 7;
uint32_t zeroed[BSS_WORDS];
int main(void) { arena[0] = (uint8_t)counter; zeroed[1] = arena[ARENA_BYTES - 1]; return 0; }
void Reset_Handler(void) {
    uint32_t *src = &_sidata, *dst = &_sdata;
    while (dst < &_edata) *dst++ = *src++;
    for (dst = &_sbss; dst < &_ebss;) *dst++ = 0;
    main();
    for (;;) {}
}
__attribute__((section(".isr_vector"), used))
const void *const vectors[2] = { &STACK_TOP, (const void *)Reset_Handler };
"""


def _fragment(board_name: str, region: str, size: int, names: dict[str, str], stack: int = 4096,
              align: int = 16) -> str:
    board = boards.load_board(board_name)
    return linker_fragment.fragment(board, [linker_fragment.ArenaSection(".arena", region, size, align)], stack, names)


def _link(tmp_path: Path, board_name: str, script: str, fragment: str, arena_bytes: int,
          bss_words: int = 4, stack_top: str = "_estack") -> subprocess.CompletedProcess[str]:
    """Link FIRMWARE with ``-T vendor.ld -L <the fragment's folder>``, as the SCons build does."""
    gcc = require_tool("arm-none-eabi-gcc")
    board = boards.load_board(board_name)
    (tmp_path / "vendor").mkdir(exist_ok=True)
    (tmp_path / "build").mkdir(exist_ok=True)
    (tmp_path / "vendor" / "vendor.ld").write_text(script)
    linker_fragment.write(tmp_path / "build" / linkscript.FRAGMENT_NAME, fragment)
    (tmp_path / "fw.c").write_text(FIRMWARE)
    cmd = [gcc, *board.cpu.gcc_flags(), "-O1", "-ffreestanding", "-nostdlib", "-nostartfiles",
           f"-DARENA_BYTES={arena_bytes}", f"-DBSS_WORDS={bss_words}", f"-DSTACK_TOP={stack_top}",
           "-T", "vendor/vendor.ld", "-L", "build", "fw.c", "-o", "fw.elf", "-lgcc"]
    return subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=60)


def _arena_section(elf: Path) -> tuple[int, int, str]:
    from elftools.elf.elffile import ELFFile

    with open(elf, "rb") as f:
        s = ELFFile(f).get_section_by_name(".arena")
        return s["sh_addr"], s["sh_size"], s["sh_type"]


def _doc(region: str, size: int, align: int = 16, **fields: object) -> board_report.BoardReport:
    """A board report of one arena: what the ELF check and the fragment read, the rest placeholders."""
    base = board_report.BoardReport(board="b", region=region, region_origin=0, region_length=1, region_auto=False,
                         sharing="sequential", arena_size=size, lower_bound=size, alignment=align, budget=1,
                         budget_spec="100%", limit=size, reserve_stack=0, reserve_heap=0, warn_above=None, models=(),
                         status="ok", warning=None)
    return dataclasses.replace(base, **fields)


# ---------------------------------------------------------------- the fragment's text


def test_fragment_contents() -> None:
    text = _fragment("nucleo_h743", "AXI_SRAM", 32000, H743_NAMES)
    assert not re.search(r"^\s*(ENTRY|MEMORY|SECTIONS)\b", text, re.M)  # a fragment, not a script
    assert "  .arena (NOLOAD) : ALIGN(16)\n" in text and "  } > RAM_D1\n" in text
    assert "    KEEP(*(.arena .arena.*))\n" in text
    assert ('ASSERT(__arena_end - __arena_start <= 32000, "arena: .arena is larger than the planned 32000 B: '
            'the plan and the firmware disagree, regenerate them")') in text
    assert ('ASSERT(__arena_end <= ORIGIN(RAM_D1) + LENGTH(RAM_D1), "arena: .arena overflows RAM_D1 (board '
            'region AXI_SRAM)")') in text
    assert "ASSERT(__arena_start >= 0x24000000 && __arena_end <= 0x24080000," in text
    assert "ASSERT((__arena_start & 15) == 0" in text
    assert "ASSERT(DEFINED(_estack) ? (__arena_end <= _estack - 4096 || __arena_start >= _estack) : 1," in text
    same = _fragment("nucleo_h743", "DTCM", 1000, {}, align=32)
    assert "  } > DTCM\n" in same and "ALIGN(32)" in same and "overflows DTCM\")" in same
    tflm = linker_fragment.render_for_report(boards.load_board("mps2_an500"),
                                             _doc("SSRAM23", 100, reserve_stack=8, runtime="tflm"), {"SSRAM23": "RAM"})
    assert "KEEP(*(.tensor_arena .tensor_arena.*))" in tflm and "  } > RAM\n" in tflm
    # The full script and the fragment say the same thing when the same guard fails.
    full = linker.render(boards.load_board("nucleo_h743"), "DTCM", 1000, 1024, 0)
    for line in ("arena: .arena is larger than the planned 1000 B", "arena: .arena overflows DTCM"):
        assert line in full and line in _fragment("nucleo_h743", "DTCM", 1000, {})


def test_copied_section_extension_point() -> None:
    """Weights copied to fast RAM (issue 12 item 2): VMA in the region, LMA in the script's flash."""
    board = boards.load_board("nucleo_h743")
    text = linker_fragment.fragment(board, [linker_fragment.ArenaSection(".arena", "AXI_SRAM", 64, 16)], 0,
                                    {"DTCM": "DTCMRAM", "FLASH": "ROM"},
                                    copies=[linker_fragment.CopiedSection(".weights_DTCM", "DTCM", 1000)])
    assert "  } > DTCMRAM AT> ROM\n" in text and "__weights_DTCM_load = LOADADDR(.weights_DTCM);" in text
    assert text.index(".weights_DTCM :") < text.index(".arena (NOLOAD)")


SPLIT_DOC = _doc("DTCM", 3000, reserve_stack=1024, regions=(
    linker_fragment.RegionUse("DTCM", 0, 1, arena=1000, weights=0, reserve=0, limit=0, arena_section=".arena_DTCM",
                          weights_section=None),
    linker_fragment.RegionUse("AXI_SRAM", 0, 1, arena=2000, weights=512, reserve=0, limit=0,
                          arena_section=".arena_AXI_SRAM", weights_section=".weights_AXI_SRAM")))
SPLIT_FIRMWARE = r"""
#include <stdint.h>
extern uint32_t _estack;
extern uint8_t __weights_AXI_SRAM_start[], __weights_AXI_SRAM_end[], __weights_AXI_SRAM_load[];
uint8_t arena_dtcm[1000] __attribute__((section(".arena_DTCM"), aligned(16)));
uint8_t arena_axi[2000] __attribute__((section(".arena_AXI_SRAM"), aligned(16)));
uint8_t weights[512] __attribute__((section(".weights_AXI_SRAM"), aligned(4))) = {1, 2, 3};
int main(void) { return arena_dtcm[0] + arena_axi[1] + weights[2]; }
void Reset_Handler(void) {
    for (uint8_t *s = __weights_AXI_SRAM_load, *d = __weights_AXI_SRAM_start; d < __weights_AXI_SRAM_end;) *d++ = *s++;
    main();
    for (;;) {}
}
__attribute__((section(".isr_vector"), used))
const void *const vectors[2] = { &_estack, (const void *)Reset_Handler };
"""


def test_split_arena_and_copied_weights_from_the_report() -> None:
    """A report with regions (issue 12: .arena_<region> sections, weights: <region>) gives one arena
    section per region and the weights' section in RAM with its load address in the script's flash."""
    board = boards.load_board("nucleo_h743")
    assert linker_fragment.regions_of(board, SPLIT_DOC) == ["AXI_SRAM", "DTCM", "FLASH"]
    text = linker_fragment.render_for_report(board, SPLIT_DOC, H743_NAMES)
    assert "  .arena_DTCM (NOLOAD) : ALIGN(16)\n" in text and "KEEP(*(.arena_DTCM .arena_DTCM.*))" in text
    assert "__arena_AXI_SRAM_end - __arena_AXI_SRAM_start <= 2000" in text
    assert "  } > RAM_D1 AT> FLASH\n" in text and "__weights_AXI_SRAM_load = LOADADDR(.weights_AXI_SRAM);" in text
    assert "arena: .weights_AXI_SRAM overlaps the 1024 B stack below _estack" in text
    with pytest.raises(ArenaError, match="arena and copied weights of 532,992 B do not fit in AXI_SRAM"):
        linker_fragment.render_for_report(board, dataclasses.replace(SPLIT_DOC, regions=(
            dataclasses.replace(SPLIT_DOC.regions[1], arena=520 * 1024),)), H743_NAMES)


def test_split_arena_and_copied_weights_link(tmp_path: Path) -> None:
    from elftools.elf.elffile import ELFFile

    gcc = require_tool("arm-none-eabi-gcc")
    board = boards.load_board("nucleo_h743")
    (tmp_path / "vendor.ld").write_text(vendor_script(H743_MEMORY, "RAM_D1"))
    linker_fragment.write(tmp_path / linkscript.FRAGMENT_NAME,
                          linker_fragment.render_for_report(board, SPLIT_DOC, H743_NAMES))
    (tmp_path / "fw.c").write_text(SPLIT_FIRMWARE)
    p = subprocess.run([gcc, *board.cpu.gcc_flags(), "-O1", "-ffreestanding", "-nostdlib", "-nostartfiles", "-T",
                        "vendor.ld", "-L", ".", "fw.c", "-o", "fw.elf", "-lgcc"], cwd=tmp_path, capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    with open(tmp_path / "fw.elf", "rb") as f:
        elf = ELFFile(f)
        sec = {s.name: (s["sh_addr"], s["sh_size"], s["sh_type"]) for s in elf.iter_sections()}
        sym = {s.name: s["st_value"] for s in elf.get_section_by_name(".symtab").iter_symbols()}
    for name, region, size in ((".arena_DTCM", "DTCM", 1000), (".arena_AXI_SRAM", "AXI_SRAM", 2000),
                               (".weights_AXI_SRAM", "AXI_SRAM", 512)):
        addr, length, kind = sec[name]
        r = board.region(region)
        assert length == size and r.origin <= addr and addr + length <= r.end, name
        assert kind == ("SHT_PROGBITS" if name.startswith(".weights") else "SHT_NOBITS"), name
    load = sym["__weights_AXI_SRAM_load"]
    assert board.flash.origin <= load and load + 512 <= board.flash.end  # AT> FLASH: the image is in flash


def test_fragment_is_byte_identical_across_hash_seeds() -> None:
    code = ("from arena_tool.target import boards; from arena_tool.emit import linker_fragment as lf\n"
            "for n in boards.list_boards(boards.board_dirs()):\n"
            "    b = boards.load_board(n, boards.board_dirs())\n"
            "    s = [lf.ArenaSection('.arena', b.default_region, 4000, 32)]\n"
            "    print(lf.fragment(b, s, 2048, {b.default_region: 'RAM', b.flash.name: 'ROM'}), end='')\n")
    one, two = printed_under_hash_seeds(code)
    assert one == two and one.count("(NOLOAD) : ALIGN(32)") >= 10


def test_fragment_rejects_bad_input() -> None:
    with pytest.raises(ArenaError) as info:
        _fragment("nucleo_f746", "DTCM", 65537, {})
    assert str(info.value) == ("error: nucleo_f746: arena of 65,537 B does not fit in DTCM (65,536 B, over by "
                               "16 B) (hint: choose a larger region or shrink the arena)")
    assert info.value.exit_code == 1
    with pytest.raises(ArenaError, match="unknown region 'RAM_D1'"):
        _fragment("nucleo_h743", "RAM_D1", 16, {})
    with pytest.raises(ArenaError, match="power of two"):
        _fragment("nucleo_h743", "DTCM", 16, {}, align=24)
    with pytest.raises(ArenaError, match="non-negative"):
        _fragment("nucleo_h743", "DTCM", 16, {}, stack=-1)


# ---------------------------------------------------------------- manifest keys


def _manifest(tmp_path: Path, board: str) -> Path:
    (tmp_path / "m.onnx").write_bytes((ROOT / "example_firmware" / "models" / "autoencoder.onnx").read_bytes())
    (tmp_path / "vendor").mkdir(exist_ok=True)
    (tmp_path / "vendor" / "h743.ld").write_text(vendor_script(H743_MEMORY, "RAM_D1"))
    path = tmp_path / "arena.yaml"
    path.write_text(f"models:\n  - {{name: m, path: m.onnx}}\nboards:\n{board}")
    return path


def _load_error(tmp_path: Path, board: str) -> ArenaError:
    with pytest.raises(ArenaError) as info:
        manifest.load(str(_manifest(tmp_path, board)))
    return info.value


def test_manifest_linker_keys(tmp_path: Path) -> None:
    board = ("  - name: nucleo_h743\n    region: AXI_SRAM\n    linker: fragment\n"
             "    linker_script: vendor/h743.ld\n    linker_regions: {AXI_SRAM: RAM_D1, DTCM: DTCMRAM, FLASH: FLASH}\n")
    m = manifest.load(str(_manifest(tmp_path, board)))
    [t] = m.targets
    assert (t.linker, t.linker_script) == ("fragment", os.path.join(str(tmp_path), "vendor", "h743.ld"))
    assert t.linker_regions == (("AXI_SRAM", "RAM_D1"), ("DTCM", "DTCMRAM"))  # FLASH: FLASH needs no mapping
    assert t.linker_script in m.inputs  # an edited script reloads the cached manifest
    assert manifest.target_from_doc(manifest.target_doc(t)) == t
    assert '"linker":"fragment"' in t.key()
    plain = manifest.load(str(_manifest(tmp_path, "  - nucleo_h743\n"))).targets[0]
    assert plain.linker == "full" and plain.linker_script is None and "linker" not in plain.key()


def test_manifest_linker_errors(tmp_path: Path) -> None:
    err = _load_error(tmp_path, "  - {name: nucleo_h743, linker: fragment}\n")
    assert "has linker: fragment but no linker_script:" in err.msg and err.field == "boards[0].linker"
    assert err.line == 4 and "INCLUDEs arena_fragment.ld" in err.hint
    err = _load_error(tmp_path, "  - {name: nucleo_h743, linker: fragment, linker_script: vendor/nope.ld}\n")
    assert err.msg == f"linker script not found: {os.path.join(str(tmp_path), 'vendor', 'nope.ld')}"
    assert err.field == "boards[0].linker_script" and "relative to the manifest's folder" in err.hint
    err = _load_error(tmp_path, "  - {name: nucleo_h743, linker_script: vendor/h743.ld}\n")
    assert "read only with linker: fragment" in err.msg and "add 'linker: fragment'" in err.hint
    err = _load_error(tmp_path, "  - {name: nucleo_h743, linker: fragment, linker_script: vendor/h743.ld, "
                                "linker_regions: {AXI_SRAMM: RAM_D1}}\n")
    assert err.msg == "board nucleo_h743 has no region 'AXI_SRAMM'" and err.hint.startswith("did you mean 'AXI_SRAM'?")
    err = _load_error(tmp_path, "  - {name: nucleo_h743, linker: partial}\n")
    assert err.field == "boards[0].linker" and err.hint == "expected one of: full, fragment"
    err = _load_error(tmp_path, "  - {name: nucleo_h743, region: AXI_SRAM, linker: fragment, "
                                "linker_script: vendor/h743.ld}\n")  # no mapping: AXI_SRAM is not a MEMORY name there
    assert err.file == os.path.join(str(tmp_path), "vendor", "h743.ld") and err.field == "boards[0].linker_regions"
    assert err.hint.endswith("linker_regions: {AXI_SRAM: RAM_D1}")
    (tmp_path / "vendor" / "h743.ld").write_text(vendor_script(H743_MEMORY, "RAM_D1", include=""))
    path = tmp_path / "arena.yaml"
    path.write_text(path.read_text().replace("region: AXI_SRAM, ", ""))
    with pytest.raises(ArenaError, match=r"h743\.ld never INCLUDEs arena_fragment\.ld") as info:
        manifest.load(str(path))
    assert info.value.file == os.path.join(str(tmp_path), "vendor", "h743.ld")


# ---------------------------------------------------------------- linked with arm-none-eabi-gcc


@pytest.mark.parametrize("region", ["AXI_SRAM", "DTCM"])
def test_fragment_links_into_the_vendor_script(tmp_path: Path, region: str) -> None:
    """AXI_SRAM shares CubeMX's RAM_D1 with .data, .bss and the stack; DTCM is a region of its own."""
    arena = 20000 + 4  # not a multiple of the alignment on purpose
    result = _link(tmp_path, "nucleo_h743", vendor_script(H743_MEMORY, "RAM_D1"),
                   _fragment("nucleo_h743", region, arena, H743_NAMES), arena)
    assert result.returncode == 0, result.stderr
    board = boards.load_board("nucleo_h743")
    assert elfcheck.problems(str(tmp_path / "fw.elf"), board, _doc(region, arena)) == []
    addr, size, kind = _arena_section(tmp_path / "fw.elf")
    r = board.region(region)
    assert size == arena and kind == "SHT_NOBITS" and addr % 16 == 0 and r.origin <= addr and addr + size <= r.end
    if region == "DTCM":
        assert addr == r.origin  # nothing else of the vendor's goes to DTCMRAM
    wrong = elfcheck.problems(str(tmp_path / "fw.elf"), board, _doc("SRAM1", arena + 64))
    assert any("not inside region SRAM1" in p for p in wrong) and any("planned" in p for p in wrong)


def test_script_without_a_known_stack_symbol_links(tmp_path: Path) -> None:
    """The stack guard's DEFINED() ? : 1 makes neither _estack nor __StackTop a requirement."""
    script = vendor_script(H743_MEMORY, "RAM_D1", include="", after_heap=INCLUDE, stack_top="__initial_sp")
    arena = 512 * 1024 - 4608  # would reach a stack at the top of RAM_D1: unknown here, not checked
    result = _link(tmp_path, "nucleo_h743", script, _fragment("nucleo_h743", "AXI_SRAM", arena, H743_NAMES), arena,
                   stack_top="__initial_sp")
    assert result.returncode == 0, result.stderr


def test_arena_too_big_for_the_region_fails_the_link(tmp_path: Path) -> None:
    """The vendor's .bss leaves less of RAM_D1 than the arena needs: the fragment's ASSERT says so."""
    arena = 64 * 1024
    result = _link(tmp_path, "nucleo_h743", vendor_script(H743_MEMORY, "RAM_D1"),
                   _fragment("nucleo_h743", "AXI_SRAM", arena, H743_NAMES), arena, bss_words=460 * 256)
    assert result.returncode != 0
    assert "arena: .arena overflows RAM_D1 (board region AXI_SRAM)" in result.stderr, result.stderr
    assert linker.failed_asserts(result.stderr)[0].startswith("arena: .arena overflows RAM_D1")


def test_arena_larger_than_planned_fails_the_link(tmp_path: Path) -> None:
    result = _link(tmp_path, "nucleo_h743", vendor_script(H743_MEMORY, "RAM_D1"),
                   _fragment("nucleo_h743", "DTCM", 1024, H743_NAMES), 2048)
    assert result.returncode != 0
    assert ("arena: .arena is larger than the planned 1024 B: the plan and the firmware disagree, "
            "regenerate them") in result.stderr


def test_memory_name_mapped_to_the_wrong_ram_fails_the_link(tmp_path: Path) -> None:
    result = _link(tmp_path, "nucleo_h743", vendor_script(H743_MEMORY, "RAM_D1"),
                   _fragment("nucleo_h743", "AXI_SRAM", 1024, {"AXI_SRAM": "RAM_D2"}), 1024)
    assert result.returncode != 0
    assert ("arena: .arena is outside the board's AXI_SRAM [0x24000000, 0x24080000): MEMORY region RAM_D2 of your "
            "script is not that RAM") in result.stderr, result.stderr


@pytest.mark.parametrize("top", ["_estack", "__StackTop"])
def test_arena_after_the_stack_reserve_fails_the_link(tmp_path: Path, top: str) -> None:
    """INCLUDEd after ._user_heap_stack, an arena that reaches the top of RAM_D1 would sit on the stack."""
    script = vendor_script(H743_MEMORY, "RAM_D1", include="", after_heap=INCLUDE, stack_top=top)
    arena = 512 * 1024 - 4608  # after the 1.5K heap/stack check it reaches the top 4K; before it, not
    result = _link(tmp_path, "nucleo_h743", script, _fragment("nucleo_h743", "AXI_SRAM", arena, H743_NAMES,
                                                              stack=4096), arena, stack_top=top)
    assert result.returncode != 0
    assert f"arena: .arena overlaps the 4096 B stack below {top}: INCLUDE arena_fragment.ld before" in result.stderr
    ok = _link(tmp_path, "nucleo_h743", vendor_script(H743_MEMORY, "RAM_D1", stack_top=top),
               _fragment("nucleo_h743", "AXI_SRAM", arena, H743_NAMES, stack=4096), arena, stack_top=top)
    assert ok.returncode == 0, ok.stderr  # INCLUDEd before it, the same arena fits


# ---------------------------------------------------------------- the SCons build


MPS2_FRAGMENT = """  - name: mps2_an500
    linker: fragment
    linker_script: vendor/mps2_an500.ld
    linker_regions: {SSRAM23: RAM}
    models: {kws_int8: {weights: PSRAM}}  # copied to PSRAM at start-up: .weights_PSRAM AT> FLASH
"""


def _fragment_project(tmp_path: Path) -> Path:
    """The example with nucleo_h743 (arena in AXI_SRAM = CubeMX's RAM_D1) and mps2_an500 (region
    auto, the vendor's RAM; kws_int8's weights copied to PSRAM), each linked against a vendor
    script of its own."""

    proj = copy_example(tmp_path / "p")
    fw = proj / "example_firmware"
    (fw / "vendor").mkdir()
    (fw / "vendor" / "STM32H743ZITX_FLASH.ld").write_text(vendor_script(H743_MEMORY, "RAM_D1"))
    (fw / "vendor" / "mps2_an500.ld").write_text(vendor_script(MPS2_MEMORY, "RAM"))
    text = (fw / "arena.yaml").read_text()
    text = text[:text.index("\nboards:\n")] + """
boards:
  - name: nucleo_h743
    region: AXI_SRAM
    linker: fragment                      # link with your own script, which INCLUDEs arena_fragment.ld
    linker_script: vendor/STM32H743ZITX_FLASH.ld
    linker_regions: {AXI_SRAM: RAM_D1}    # the board's name: your script's MEMORY name
""" + MPS2_FRAGMENT
    (fw / "arena.yaml").write_text(text)
    return proj


def _outputs(run_stdout: str) -> list[str]:
    """The example main.c's result lines: model, output, one line per element, status."""
    return re.findall(r"^(?:model|output|status|\d+ 0x).*$", run_stdout, re.M)


def test_scons_links_the_firmware_against_the_vendor_script(tmp_path: Path) -> None:
    require_tool("arm-none-eabi-gcc")

    proj = _fragment_project(tmp_path)
    both = "board=nucleo_h743,mps2_an500"
    p = scons(proj, both)
    assert p.returncode == 0, p.stdout + p.stderr
    for name, region, memory in (("nucleo_h743", "AXI_SRAM", "RAM_D1"), ("mps2_an500", "SSRAM23", "RAM")):
        b = proj / "build" / name
        board = boards.load_board(name)
        frag = (b / "arena_fragment.ld").read_text()
        gate = board_report.read(str(b / "arena_gate.json"))
        assert not (b / f"{name}.ld").exists() and gate.region == region
        assert frag == linker_fragment.render_for_report(board, gate, {region: memory})  # the same bytes anew
        doc = board_report.read(str(b / "arena_report.json"))
        assert doc.status == "ok" and doc.stage == "linked", doc.problems
        elf = b / "firmware.elf"
        assert elfcheck.problems(str(elf), board, doc) == []
        addr, size, kind = _arena_section(elf)
        r = board.region(region)
        assert kind == "SHT_NOBITS" and r.origin <= addr and addr + size <= r.end
        assert doc.arena_size <= size <= doc.arena_size + doc.alignment and addr % doc.alignment == 0
        mapfile = (b / "firmware.map").read_text()  # ld's memory configuration is the vendor's
        assert re.search(rf"^{memory} +0x0*{r.origin:x} ", mapfile, re.M | re.I), mapfile[:3000]
    assert not ACTION.search(scons(proj, both, "-n").stdout)  # a no-op build stays one
    board = boards.load_board("mps2_an500")
    with open(proj / "build" / "mps2_an500" / "firmware.elf", "rb") as f:
        from elftools.elf.elffile import ELFFile

        elf = ELFFile(f)
        weights = elf.get_section_by_name(".weights_PSRAM")
        load = {s.name: s["st_value"] for s in elf.get_section_by_name(".symtab").iter_symbols()}["__weights_PSRAM_load"]
        psram = board.region("PSRAM")
        assert psram.origin <= weights["sh_addr"] and weights["sh_size"] > 0 and weights["sh_type"] == "SHT_PROGBITS"
        assert board.flash.origin <= load and load + weights["sh_size"] <= board.flash.end
    require_tool("qemu-system-arm")  # the ELF above is checked; its run needs QEMU
    run = scons(proj, "board=mps2_an500", "run")
    assert run.returncode == 0, run.stdout + run.stderr
    for model in ("kws", "resnet8", "autoencoder", "kws_int8"):
        assert f"status {model} 0" in run.stdout
    # The same firmware with arena's full script and the weights in flash prints the same bits.
    manifest_path = proj / "example_firmware" / "arena.yaml"
    manifest_path.write_text(manifest_path.read_text().replace(MPS2_FRAGMENT, "  - mps2_an500\n"))
    full = scons(proj, "board=mps2_an500", "run")
    assert full.returncode == 0, full.stdout + full.stderr
    assert (proj / "build" / "mps2_an500" / "mps2_an500.ld").is_file()
    assert _outputs(run.stdout) == _outputs(full.stdout) and len(_outputs(run.stdout)) > 100


def test_scons_vendor_script_errors(tmp_path: Path) -> None:
    require_tool("arm-none-eabi-gcc")

    proj = _fragment_project(tmp_path)
    script = proj / "example_firmware" / "vendor" / "STM32H743ZITX_FLASH.ld"
    text = script.read_text()
    # The vendor keeps only 16K of RAM_D1: the planned 32,000 B arena fails the link with the ASSERT.
    script.write_text(text.replace("ORIGIN = 0x24000000, LENGTH = 512K", "ORIGIN = 0x24000000, LENGTH = 16K"))
    p = scons(proj, "board=nucleo_h743")
    assert p.returncode == 1, p.stdout + p.stderr
    assert "arena: .arena overflows RAM_D1 (board region AXI_SRAM)" in p.stderr
    doc = board_report.read(str(proj / "build" / "nucleo_h743" / "arena_report.json"))
    assert doc.status == "over" and not (proj / "build" / "nucleo_h743" / "firmware.elf").exists()
    messages = [q.message for q in doc.problems]
    assert any("overflow RAM_D1 by" in m and "(16,384 B;" in m for m in messages), messages
    assert any(m.endswith("the link refused the firmware: arena: .arena overflows RAM_D1 (board region AXI_SRAM)")
               for m in messages), messages
    # A script that never INCLUDEs the fragment: exit 2 before anything is built, naming the script.
    script.write_text(text.replace(INCLUDE, ""))
    q = scons(proj, "board=nucleo_h743")
    assert q.returncode == 2, q.stdout + q.stderr
    assert re.search(r"example_firmware/vendor/STM32H743ZITX_FLASH\.ld: error: boards\[0\]\.linker_script: "
                     r"\S+ never INCLUDEs arena_fragment\.ld", q.stderr), q.stderr
    assert "Traceback" not in q.stderr
