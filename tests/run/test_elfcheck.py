"""elfcheck: a linked ELF against its board and report. The section rules on section tables by
hand (the linked firmwares are checked in test_scons and test_linker_fragment)."""

from __future__ import annotations

import pytest

from arena_tool.core.errors import ArenaError
from arena_tool.run import elfcheck
from arena_tool.target.boards import Region

SRAM = Region("SRAM", 0x2000_0000, 0x1_0000)
NOBITS, PROGBITS = "SHT_NOBITS", "SHT_PROGBITS"
WA = elfcheck.SHF_WRITE | elfcheck.SHF_ALLOC


def _arena(addr: int, size: int, stype: str = NOBITS, planned: int = 1000, align: int = 16) -> list[str]:
    return elfcheck._arena_problems([(".arena", addr, size, WA, stype)], ".arena", SRAM, planned, align)


def test_an_arena_as_planned_passes() -> None:
    assert _arena(0x2000_0100, 1000) == []
    assert _arena(0x2000_0100, 1008) == []  # rounded up to the alignment


@pytest.mark.parametrize("addr, size, stype, words", [
    (0x2000_0100, 1000, PROGBITS, "expected NOBITS"),
    (0x2000_fff0, 1000, NOBITS, "is not inside region SRAM"),
    (0x2000_0108, 1000, NOBITS, "not aligned to 16 bytes"),
    (0x2000_0100, 999, NOBITS, "planned 1,000 B"),
    (0x2000_0100, 1024, NOBITS, "planned 1,000 B"),
])
def test_each_arena_fault_is_named(addr: int, size: int, stype: str, words: str) -> None:
    found = _arena(addr, size, stype)
    assert len(found) == 1 and words in found[0], found


def test_a_missing_arena_section_is_named_unless_nothing_is_planned_there() -> None:
    assert "no .arena section" in elfcheck._arena_problems([], ".arena", SRAM, 0, 16)[0]
    assert elfcheck._arena_problems([], ".arena_SRAM", SRAM, 0, 16) == []  # an empty split region
    assert elfcheck._arena_problems([], ".arena_SRAM", SRAM, 64, 16) != []


def test_copied_weights_need_contents_in_their_region_within_the_gate() -> None:
    w = ".weights_SRAM"
    assert elfcheck._weights_problems([(w, 0x2000_0000, 512, WA, PROGBITS)], w, SRAM, 512) == []
    found = elfcheck._weights_problems([(w, 0x2000_0000, 600, WA, NOBITS)], w, SRAM, 512)
    assert len(found) == 2 and "NOBITS" in found[0] and "more than the 512 B" in found[1]
    assert "no .weights_SRAM section" in elfcheck._weights_problems([], w, SRAM, 512)[0]


def test_a_file_that_is_not_an_elf_is_one_error(tmp_path) -> None:
    path = tmp_path / "firmware.elf"
    path.write_bytes(b"not an elf")
    with pytest.raises(ArenaError, match="cannot read the ELF") as info:
        elfcheck.problems(str(path), None, None)  # type: ignore[arg-type]
    assert info.value.file == str(path)
