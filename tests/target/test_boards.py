"""boards: shipped maps, search order, cross-checks, region: auto."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arena_tool.target import boards
from arena_tool.target.boards import Board, Cpu, Region
from arena_tool.core.errors import ArenaError

REQUIRED = ["nucleo_f746", "nucleo_h743", "stm32f769i_disco", "nucleo_l4r5zi", "nucleo_g474re",
            "nrf52840dk", "rpi_pico", "teensy41", "mps2_an385", "mps2_an386", "mps2_an500",
            "mps2_an505", "mps3_an547"]
K = 1024

# (board, region, origin, length) from /work/shared/research/boards.md (RM / Zephyr dts / QEMU mtree).
FACTS = [
    ("nucleo_f746", "DTCM", 0x20000000, 64 * K), ("nucleo_f746", "SRAM1", 0x20010000, 240 * K),
    ("nucleo_f746", "SRAM2", 0x2004C000, 16 * K), ("nucleo_f746", "FLASH", 0x08000000, 1024 * K),
    ("nucleo_h743", "DTCM", 0x20000000, 128 * K), ("nucleo_h743", "AXI_SRAM", 0x24000000, 512 * K),
    ("nucleo_h743", "SRAM4", 0x38000000, 64 * K), ("nucleo_h743", "FLASH", 0x08000000, 2048 * K),
    ("stm32f769i_disco", "DTCM", 0x20000000, 128 * K), ("stm32f769i_disco", "SRAM1", 0x20020000, 368 * K),
    ("stm32f769i_disco", "SRAM2", 0x2007C000, 16 * K),
    ("nucleo_l4r5zi", "SRAM1", 0x20000000, 192 * K), ("nucleo_l4r5zi", "SRAM2", 0x10000000, 64 * K),
    ("nucleo_l4r5zi", "SRAM3", 0x20040000, 384 * K),
    ("nucleo_g474re", "SRAM1", 0x20000000, 80 * K), ("nucleo_g474re", "SRAM2", 0x20014000, 16 * K),
    ("nucleo_g474re", "CCM", 0x10000000, 32 * K), ("nucleo_g474re", "FLASH", 0x08000000, 512 * K),
    ("nrf52840dk", "RAM", 0x20000000, 256 * K), ("nrf52840dk", "FLASH", 0x00000000, 1024 * K),
    ("rpi_pico", "SRAM", 0x20000000, 256 * K), ("rpi_pico", "SCRATCH_Y", 0x20041000, 4 * K),
    ("teensy41", "OCRAM", 0x20200000, 512 * K), ("teensy41", "FLASH", 0x60000000, 7936 * K),
    ("mps2_an386", "SSRAM23", 0x20000000, 4096 * K), ("mps2_an386", "BRAM", 0x01000000, 16 * K),
    ("mps2_an386", "PSRAM", 0x21000000, 16384 * K), ("mps2_an386", "FLASH", 0x00000000, 4096 * K),
    ("mps2_an500", "SSRAM23", 0x20000000, 4096 * K), ("mps2_an500", "PSRAM", 0x60000000, 16384 * K),
    ("mps2_an385", "SSRAM23", 0x20000000, 4096 * K), ("mps2_an385", "BRAM", 0x01000000, 16 * K),
    ("mps2_an385", "PSRAM", 0x21000000, 16384 * K), ("mps2_an385", "FLASH", 0x00000000, 4096 * K),
    # QEMU 7.2 hw/arm/mps2-tz.c and `info mtree -f`: the AN547 boots at 0 (its ITCM is the flash), the AN505 at 0x10000000
    ("mps3_an547", "FLASH", 0x00000000, 512 * K), ("mps3_an547", "DTCM", 0x20000000, 512 * K),
    ("mps3_an547", "SRAM", 0x01000000, 2048 * K), ("mps3_an547", "ISRAM", 0x21000000, 4096 * K),
    ("mps2_an505", "FLASH", 0x10000000, 4096 * K), ("mps2_an505", "SSRAM23", 0x38000000, 4096 * K),
    ("mps2_an505", "ISRAM", 0x30000000, 32 * K),
]

GOOD = """\
name: {name}
description: test board
source: made up for a test
cpu: {{core: cortex-m4, fpu: fpv4-sp-d16, float_abi: hard, irqs: 10}}
flash: {{origin: 0x08000000, length: 64K}}
ram:
  - {{name: TCM, origin: 0x10000000, length: 8K, zero_wait: true, cacheable: false, dma: false, executable: true}}
  - {{name: SRAM, origin: 0x20000000, length: 32K, zero_wait: true, cacheable: false, dma: true, executable: true}}
default_region: SRAM
"""


def _write(folder: Path, name: str, text: str) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.yaml").write_text(text)
    return str(folder)


def _load_error(tmp_path: Path, text: str, name: str = "t") -> str:
    folder = _write(tmp_path / "b", name, text)
    with pytest.raises(ArenaError) as info:
        boards.load_board(name, [folder])
    return str(info.value).replace(folder + "/", "")


def test_every_required_board_ships_and_loads() -> None:
    shipped = boards.list_boards(boards.board_dirs())
    assert set(REQUIRED) <= set(shipped)
    for name in shipped:
        board = boards.load_board(name, boards.board_dirs())
        text = Path(board.file).read_text()
        assert text.startswith("# yaml-language-server: $schema=../schemas/board.schema.json\n")
        assert board.name == name and board.source.strip()
        assert board.region(board.default_region) and board.region(board.data_region)


@pytest.mark.parametrize("board, region, origin, length", FACTS)
def test_shipped_memory_maps(board: str, region: str, origin: int, length: int) -> None:
    b = boards.load_board(board, boards.board_dirs())
    r = b.flash if region == "FLASH" else b.region(region)
    assert (r.origin, r.length) == (origin, length)


def test_attributes_that_change_placement() -> None:
    h7 = boards.load_board("nucleo_h743")
    assert not h7.region("DTCM").dma and h7.region("AXI_SRAM").cacheable
    f7 = boards.load_board("nucleo_f746")
    assert f7.cpu.fpu == "fpv5-sp-d16" and f7.region("DTCM").zero_wait and not f7.region("DTCM").cacheable
    assert boards.load_board("teensy41").region("OCRAM").cacheable
    pico = boards.load_board("rpi_pico")
    assert pico.cpu.gcc_flags() == ("-mcpu=cortex-m0plus", "-mthumb", "-mfloat-abi=soft")
    assert boards.load_board("mps2_an500").qemu == "mps2-an500"
    assert boards.load_board("mps2_an386").qemu == "mps2-an386"
    m3 = boards.load_board("mps2_an385")  # QEMU's AN385: a Cortex-M3, no FPU, no DSP extension
    assert m3.qemu == "mps2-an385" and m3.cpu.gcc_flags() == ("-mcpu=cortex-m3", "-mthumb", "-mfloat-abi=soft")


def test_vector_table_alignment() -> None:
    assert boards.load_board("nucleo_f746").vector_table_align == 512  # (16 + 98) * 4 = 456
    assert boards.load_board("nucleo_h743").vector_table_align == 1024  # (16 + 150) * 4 = 664
    assert boards.load_board("mps2_an500").vector_table_align == 256  # (16 + 32) * 4 = 192


def test_unknown_board_lists_known_ones() -> None:
    with pytest.raises(ArenaError) as info:
        boards.load_board("nucleo_f764", boards.board_dirs())
    assert str(info.value).startswith(
        "error: unknown board 'nucleo_f764' (hint: did you mean 'nucleo_f746'? known boards: mps2_an385, mps2_an386, ")
    with pytest.raises(ArenaError) as info:
        boards.load_board("../etc/passwd", boards.board_dirs())
    assert "invalid board name" in str(info.value)


def test_project_folder_comes_first(tmp_path: Path) -> None:
    folder = _write(tmp_path / "myboards", "nucleo_f746", GOOD.format(name="nucleo_f746"))
    _write(tmp_path / "myboards", "custom", GOOD.format(name="custom"))
    dirs = boards.board_dirs([folder])
    assert boards.load_board("nucleo_f746", dirs).description == "test board"
    assert boards.load_board("nucleo_f746").description != "test board"
    assert "custom" in boards.list_boards(dirs) and "custom" not in boards.list_boards()


def test_board_file_errors(tmp_path: Path) -> None:
    good = GOOD.format(name="t")
    assert boards.load_board("t", [_write(tmp_path / "ok", "t", good)]).region("TCM").length == 8 * K
    assert _load_error(tmp_path, good.replace("name: TCM", "name: SRAM")) == (
        "t.yaml:8:12: error: ram[1].name: region name 'SRAM' is already used by ram[0] "
        "(hint: give every region a unique name)")
    assert _load_error(tmp_path, good.replace("origin: 0x10000000", "origin: 0x1FFFF000")) == (
        "t.yaml:8:26: error: ram[1].origin: region 'SRAM' [0x20000000, 0x20008000) overlaps "
        "'TCM' [0x1ffff000, 0x20001000) (hint: fix origin or length (aliases of the same memory are one region))")
    assert _load_error(tmp_path, good.replace("default_region: SRAM", "default_region: SRMA")) == (
        "t.yaml:9:17: error: default_region: default_region 'SRMA' is not a RAM region of this board "
        "(hint: did you mean 'SRAM'? expected one of: TCM, SRAM)")
    assert _load_error(tmp_path, good, name="u").startswith(
        "u.yaml:1:7: error: name: board name 't' does not match the file name u.yaml")
    assert _load_error(tmp_path, good.replace("cpu: {", "cpu: {irqs: 1, ")) == (
        "t.yaml:4:68: error: cpu.irqs: duplicate key 'irqs' (first defined on line 4) "
        "(hint: keep only one of them)")
    assert _load_error(tmp_path, good.replace("fpu: fpv4-sp-d16", "fpu: none")) == (
        "t.yaml:4:46: error: cpu.float_abi: float_abi 'hard' needs an FPU, but fpu is 'none' "
        "(hint: use 'float_abi: soft')")
    assert _load_error(tmp_path, good.replace("cacheable: false, dma: true", "cachable: false, dma: true")) == (
        "t.yaml:8:68: error: ram[1].cachable: unknown key 'cachable' (hint: did you mean 'cacheable'? "
        "expected one of: cacheable, dma, executable, length, name, needs_init, note, origin, speed, zero_wait)")
    gated = good.replace("dma: false, executable: true}", "dma: false, executable: true, needs_init: clocks}")
    assert _load_error(tmp_path, gated + "data_region: TCM\n") == (
        "t.yaml:10:14: error: data_region: region 'TCM' needs startup code before use, so it cannot hold "
        ".data, .bss and the stack (hint: set data_region to a region usable at reset)")


def test_json_round_trip_is_exact_and_schema_valid(tmp_path: Path) -> None:
    """Board.to_json is a board file with every value resolved: valid against the board schema,
    from_json gives the same Board back, and the text round-trips byte for byte (the manifest
    cache carries boards this way)."""
    from arena_tool.core.schema import check_json

    for name in boards.list_boards():
        b = boards.load_board(name)
        doc = b.to_json()
        check_json(doc, "board", b.file)
        text = json.dumps(doc)
        back = Board.from_json(json.loads(text), b.file)
        assert back == b and json.dumps(back.to_json()) == text, name
    b = boards.load_board("nucleo_f746")  # optional keys: written when set, absent when not
    bkp = b.to_json()["ram"][-1]
    assert bkp["needs_init"].startswith("enable backup-domain") and bkp["speed"] == 5 and "note" in bkp
    assert "needs_init" not in b.to_json()["ram"][0] and "qemu" not in b.to_json()
    assert b.to_json()["cpu"] == {"core": "cortex-m7", "fpu": "fpv5-sp-d16", "float_abi": "hard",
                                  "clock_hz": 216000000, "irqs": 98}
    assert boards.load_board("mps2_an500").to_json()["qemu"] == "mps2-an500"
    # written without data_region, a board file's default; a damaged document is one error
    assert Board.from_json({k: v for k, v in b.to_json().items() if k != "data_region"}).data_region == "DTCM"
    with pytest.raises(ArenaError, match=r"\[0\] is not valid .*\(schema board.schema.json\)") as info:
        Board.from_json(dict(b.to_json(), ram=[dict(b.to_json()["ram"][0], origin=[0])]), "c.json")
    assert info.value.file == "c.json" and info.value.field == "ram[0].origin"


def test_overlap_is_reported_on_the_later_region(tmp_path: Path) -> None:
    text = GOOD.format(name="t").replace("origin: 0x10000000", "origin: 0x20007000")
    assert _load_error(tmp_path, text) == (
        "t.yaml:7:25: error: ram[0].origin: region 'TCM' [0x20007000, 0x20009000) overlaps "
        "'SRAM' [0x20000000, 0x20008000) (hint: fix origin or length (aliases of the same memory are one region))")


def test_region_lookup_did_you_mean() -> None:
    with pytest.raises(ArenaError) as info:
        boards.load_board("nucleo_f746").region("dtcm")
    assert str(info.value) == ("error: unknown region 'dtcm' on board nucleo_f746 (hint: did you mean 'DTCM'? "
                               "expected one of: DTCM, ITCM, SRAM1, SRAM2, BKPSRAM, auto)")


def _board(*regions: Region, data: str | None = None) -> Board:
    return Board(name="b", description="", source="", cpu=Cpu("cortex-m7", "fpv5-d16", "hard"),
                 flash=Region("FLASH", 0x08000000, 1 << 20), ram=regions,
                 default_region=regions[0].name, data_region=data or regions[0].name)


def test_fastest_region_ranking() -> None:
    slow = Region("SLOW", 0x30000000, 64 * K, zero_wait=False, cacheable=False)
    cached = Region("CACHED", 0x24000000, 64 * K, zero_wait=False, cacheable=True)
    tcm = Region("TCM", 0x20000000, 16 * K, zero_wait=True, speed=2)
    itcm = Region("ITCM", 0x00000000, 16 * K, zero_wait=True, speed=1)
    board = _board(slow, cached, tcm, itcm, data=slow.name)
    assert board.fastest_region(1 * K).name == "ITCM"  # zero-wait, then speed rank
    assert board.fastest_region(32 * K).name == "SLOW"  # uncached wait states beat cached
    assert board.fastest_region(60 * K, reserve=8 * K).name == "CACHED"  # reserve counts in the data region
    no_dma = Region("TCM", 0x20000000, 16 * K, dma=False)
    assert _board(no_dma, slow).fastest_region(1 * K, dma=True).name == "SLOW"
    gated = Region("SDRAM", 0xC0000000, 1 << 24, needs_init="FMC setup")
    with pytest.raises(ArenaError) as info:
        _board(tcm, gated).fastest_region(20 * K)
    assert str(info.value) == ("error: no region on board b holds 20,480 B; the largest is TCM with 16,384 B "
                               "(hint: shrink the arena (planner optimal, a smaller activation dtype) "
                               "or name a region explicitly)")


def test_fastest_region_on_shipped_boards() -> None:
    f7 = boards.load_board("nucleo_f746")
    assert f7.fastest_region(32 * K).name == "DTCM"
    assert f7.fastest_region(100 * K, reserve=4 * K).name == "SRAM1"
    assert boards.load_board("nucleo_h743").fastest_region(200 * K).name == "AXI_SRAM"
    with pytest.raises(ArenaError):
        boards.load_board("stm32f769i_disco").fastest_region(1 << 20)  # only the SDRAM, which needs init
