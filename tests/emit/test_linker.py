"""linker: generated scripts are deterministic and really link, with the arena where planned."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from conftest import require_tool

from arena_tool.target import boards
from arena_tool.emit import linker
from arena_tool.target.boards import Board
from arena_tool.core.errors import ArenaError
from builders import printed_under_hash_seeds

ROOT = Path(__file__).resolve().parents[2]
STACK, HEAP = 2048, 1024

FIRMWARE = r"""
#include <stdint.h>
extern uint32_t _estack, _sidata, _sdata, _edata, _sbss, _ebss;
uint8_t arena[ARENA_BYTES] __attribute__((section(".arena"), aligned(16)));
volatile uint32_t counter = 7;
uint32_t zeroed[4];
int main(void) { arena[0] = (uint8_t)counter; zeroed[1] = arena[ARENA_BYTES - 1]; return 0; }
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


def _all_boards() -> list[Board]:
    return [boards.load_board(n, boards.board_dirs()) for n in boards.list_boards(boards.board_dirs())]


def _cases() -> list[tuple[str, str]]:
    """Every (board, region) an arena may go to: regions usable at reset."""
    return [(b.name, r.name) for b in _all_boards() for r in b.ram if not r.needs_init]


def _link(tmp_path: Path, board: Board, script: str, arena_bytes: int) -> subprocess.CompletedProcess[str]:
    (tmp_path / "fw.c").write_text(FIRMWARE)
    linker.write(tmp_path / "board.ld", script)
    cmd = [require_tool("arm-none-eabi-gcc"), *board.cpu.gcc_flags(), "-O1", "-ffreestanding", "-nostdlib", "-nostartfiles",
           f"-DARENA_BYTES={arena_bytes}", "-T", str(tmp_path / "board.ld"), str(tmp_path / "fw.c"),
           "-o", str(tmp_path / "fw.elf"), "-lgcc"]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60)


def _sections(elf_path: Path) -> tuple[dict[str, tuple[int, int, bool]], dict[str, int]]:
    """name -> (address, size, writable) for allocated sections; symbol -> value."""
    from elftools.elf.elffile import ELFFile
    from elftools.elf.constants import SH_FLAGS

    with open(elf_path, "rb") as handle:
        elf = ELFFile(handle)
        sections = {
            s.name: (s["sh_addr"], s["sh_size"], bool(s["sh_flags"] & SH_FLAGS.SHF_WRITE))
            for s in elf.iter_sections() if s["sh_flags"] & SH_FLAGS.SHF_ALLOC
        }
        symtab = elf.get_section_by_name(".symtab")
        symbols = {sym.name: sym["st_value"] for sym in symtab.iter_symbols() if sym.name}
    return sections, symbols


def test_render_is_byte_identical_across_hash_seeds() -> None:
    code = ("from arena_tool.target import boards; from arena_tool.emit import linker\n"
            "for n in boards.list_boards(boards.board_dirs()):\n"
            "    b = boards.load_board(n, boards.board_dirs())\n"
            "    print(linker.render(b, b.default_region, 4000, 2048, 512, 32), end='')\n")
    one, two = printed_under_hash_seeds(code)
    assert one == two and one.count("ENTRY(Reset_Handler)") >= 10


def test_script_contents() -> None:
    board = boards.load_board("nucleo_f746")
    text = linker.render(board, "DTCM", 65536, 4096, 0)
    assert "  DTCM    (rwx) : ORIGIN = 0x20000000, LENGTH = 0x00010000 /* 64 KiB, zero-wait, DMA */" in text
    assert "  BKPSRAM (rw)  : ORIGIN = 0x40024000, LENGTH = 0x00001000" in text
    assert "  } > SRAM1 AT> FLASH" in text
    assert "_estack = ORIGIN(SRAM1) + LENGTH(SRAM1);" in text
    assert '.arena (NOLOAD) : ALIGN(16)' in text
    assert 'ASSERT(__arena_end <= ORIGIN(DTCM) + LENGTH(DTCM), "arena: .arena overflows DTCM")' in text
    assert "(ADDR(.isr_vector) & 511) == 0" in text


def test_render_rejects_bad_input() -> None:
    board = boards.load_board("nucleo_f746")
    with pytest.raises(ArenaError) as info:
        linker.render(board, "DTCM", 65537, 4096, 0)
    assert str(info.value) == ("error: nucleo_f746: arena of 65,537 B does not fit in DTCM (65,536 B, over by "
                               "16 B) (hint: choose a larger region or shrink the arena)")
    assert info.value.exit_code == 1
    with pytest.raises(ArenaError) as info:
        linker.render(board, "SRAM1", 240 * 1024 - 4096, 4096, 8)
    assert "plus 4,104 B stack and heap does not fit in SRAM1" in str(info.value)
    with pytest.raises(ArenaError, match="unknown region 'SRAM3'"):
        linker.render(board, "SRAM3", 1, 1, 1)
    with pytest.raises(ArenaError, match="power of two"):
        linker.render(board, "DTCM", 16, 0, 0, arena_align=24)
    with pytest.raises(ArenaError, match="non-negative"):
        linker.render(board, "DTCM", -1, 0, 0)


def test_write_is_atomic_and_readable(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "x.ld"
    linker.write(target, "one\n")
    linker.write(target, "two\n")
    assert target.read_text() == "two\n"
    assert [p.name for p in target.parent.iterdir()] == ["x.ld"]  # no temp file left behind
    assert target.stat().st_mode & 0o044 == 0o044


@pytest.mark.parametrize("board_name, region_name", _cases())
def test_links_with_arena_in_region(tmp_path: Path, board_name: str, region_name: str) -> None:
    board = boards.load_board(board_name, boards.board_dirs())
    region = board.region(region_name)
    arena = min(4096, region.length // 2) - 16 + 4  # not a multiple of the alignment on purpose
    result = _link(tmp_path, board, linker.render(board, region_name, arena, STACK, HEAP), arena)
    assert result.returncode == 0, result.stderr
    sections, symbols = _sections(tmp_path / "fw.elf")
    start, size, _ = sections[".arena"]
    assert size == arena and start % 16 == 0
    assert region.origin <= start and start + size <= region.end
    assert (symbols["__arena_start"], symbols["__arena_end"]) == (start, start + size)
    data = board.region(board.data_region)
    for name in (".data", ".bss", "._user_heap_stack"):
        addr, length, writable = sections[name]
        assert writable and data.origin <= addr and addr + length <= data.end, name
    assert sections["._user_heap_stack"][1] >= STACK + HEAP
    assert symbols["_estack"] == data.end
    ram = {r.name: r for r in board.ram}
    for name, (addr, length, writable) in sections.items():
        if length == 0:  # ld marks an empty output section with whatever flags it saw last
            continue
        inside = [r for r in ram.values() if r.origin <= addr and addr + length <= r.end]
        if writable:
            assert inside, f"{name} at {addr:#x} is in no RAM region"
        else:
            assert board.flash.origin <= addr and addr + length <= board.flash.end, name
    assert sections[".isr_vector"][0] == board.flash.origin
    assert board.flash.origin <= symbols["_sidata"] < board.flash.end  # .data load image in flash


def test_arena_may_fill_its_region_exactly(tmp_path: Path) -> None:
    board = boards.load_board("nucleo_f746")
    result = _link(tmp_path, board, linker.render(board, "DTCM", 65536, STACK, HEAP), 65536)
    assert result.returncode == 0, result.stderr
    assert _sections(tmp_path / "fw.elf")[0][".arena"][:2] == (0x20000000, 65536)


def test_arena_larger_than_planned_fails_the_link(tmp_path: Path) -> None:
    board = boards.load_board("mps2_an500")
    result = _link(tmp_path, board, linker.render(board, "SSRAM23", 1024, STACK, HEAP), 2048)
    assert result.returncode != 0
    assert ("arena: .arena is larger than the planned 1024 B: the plan and the firmware disagree, "
            "regenerate them") in result.stderr


def test_arena_overflowing_its_region_fails_the_link(tmp_path: Path) -> None:
    board = boards.load_board("nucleo_f746")
    result = _link(tmp_path, board, linker.render(board, "DTCM", 65536, STACK, HEAP), 70000)
    assert result.returncode != 0
    assert "arena: .arena overflows DTCM" in result.stderr
    assert "will not fit in region `DTCM'" in result.stderr


def test_stack_reserve_overflow_fails_the_link(tmp_path: Path) -> None:
    board = boards.load_board("nucleo_g474re")  # data region SRAM2 is 16 KiB
    result = _link(tmp_path, board, linker.render(board, "SRAM1", 1024, 16 * 1024 - 8, 0), 1024)
    assert result.returncode != 0
    assert "arena: stack and heap reserve overflows SRAM2" in result.stderr


def test_empty_plan_links_with_a_one_byte_arena(tmp_path: Path) -> None:
    board = boards.load_board("mps2_an386")
    result = _link(tmp_path, board, linker.render(board, "BRAM", 0, STACK, HEAP, arena_align=1), 1)
    assert result.returncode == 0, result.stderr
    assert _sections(tmp_path / "fw.elf")[0][".arena"][:2] == (0x01000000, 1)
