"""Check a linked firmware ELF against its board and its arena report (pyelftools).

What the link must show, whatever the linker script says:
- a ``.arena`` section, NOBITS (NOLOAD), inside the report's region, starting
  at a multiple of the report's alignment, at least the planned arena size and
  at most that size rounded up to the alignment;
- every allocated, writable section (.data, .bss, heap/stack reserve, .arena)
  inside one RAM region of the board; every allocated read-only section inside
  the flash or an executable RAM region; the load image of ``.data`` in flash;
- with the report's ``regions`` (gate.region_uses: a split arena, weights copied to RAM): each
  region's arena section (``.arena_<region>``, or ``.arena``) as above inside that region at
  its planned size, and each ``.weights_<region>`` inside its region, with contents (its load
  image, in flash; in an external flash, the weights themselves, read in place) and no larger
  than planned.

``problems`` returns every violation as a sentence; ``check`` raises one
CheckFailed (exit status 1) listing them. Zero-size sections are ignored.
``usage`` is what the firmware takes, for the report's RAM and Flash lines:
RAM = every allocated writable section (.data, .bss, .arena, the stack/heap
reserve), flash = every allocated section with contents (vectors, .text,
.rodata, the .data load image), as ``arm-none-eabi-size -A`` lists them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from arena_tool.core.errors import ArenaError, CheckFailed
from arena_tool.core.problem import align_up
from arena_tool.run.runreport import elf_sizes

if TYPE_CHECKING:
    from arena_tool.target.boards import Board, Region
    from arena_tool.builder.board_report import BoardReport

SHF_WRITE = 0x1
SHF_ALLOC = 0x2
_CALL_TABLES = ("SHT_INIT_ARRAY", "SHT_FINI_ARRAY", "SHT_PREINIT_ARRAY")


def _inside(addr: int, size: int, region: Region) -> bool:
    return region.origin <= addr and addr + size <= region.origin + region.length


def problems(elf_path: str, board: Board, rep: BoardReport) -> list[str]:
    """Every way the ELF disagrees with the board and the report (empty = fine)."""
    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile

    out: list[str] = []
    try:
        with open(elf_path, "rb") as f:
            elf = ELFFile(f)
            sections = [(s.name, s["sh_addr"], s["sh_size"], s["sh_flags"], s["sh_type"])
                        for s in elf.iter_sections()]
            segments = [(p["p_vaddr"], p["p_paddr"], p["p_filesz"]) for p in elf.iter_segments()
                        if p["p_type"] == "PT_LOAD"]
    except (OSError, ELFError) as e:
        raise ArenaError(f"cannot read the ELF: {e}", file=elf_path) from e

    align = rep.alignment
    arenas = [(r.arena_section, r.name, r.arena) for r in rep.regions if r.arena_section] or [
        (".arena", rep.region, rep.arena_size)]
    for name, region_name, planned in arenas:
        out += _arena_problems(sections, name, board.region(region_name), planned, align)
    for r in rep.regions:
        if r.weights_section:
            out += _weights_problems(sections, r.weights_section, board.memory(r.name), r.weights)

    ram = list(board.ram)
    for name, addr, size, flags, stype in sections:
        if not flags & SHF_ALLOC or size == 0:
            continue
        if any(_inside(addr, size, f) for f in board.external_flash):
            continue  # weights read in place from an external flash (weights: QSPI), checked above
        if stype in _CALL_TABLES and _inside(addr, size, board.flash):
            continue  # writable by ELF convention, read-only in flash on bare metal (the constructors)
        if flags & SHF_WRITE:
            if not any(_inside(addr, size, r) for r in ram):
                out.append(f"RAM section {name} [{addr:#010x}, +{size:,} B) is not inside any RAM region "
                           f"of board {board.name}")
        elif not (_inside(addr, size, board.flash) or any(_inside(addr, size, r) for r in ram if r.executable)):
            out.append(f"section {name} [{addr:#010x}, +{size:,} B) is not inside the flash of board {board.name}")
    for vaddr, paddr, filesz in segments:
        if filesz and vaddr != paddr and not _inside(paddr, filesz, board.flash):
            out.append(f"load image at {paddr:#010x} (+{filesz:,} B) of data at {vaddr:#010x} is not in flash")
    return out


def _arena_problems(sections: list[tuple[Any, ...]], name: str, region: Region, planned: int, align: int) -> list[str]:
    """One arena section: NOBITS, inside its region, aligned, at its planned size (a split arena's
    region with nothing planned has no section)."""
    found = [s for s in sections if s[0] == name]
    if not found:
        return [] if planned == 0 and name != ".arena" else [
            f"no {name} section (is the arena array placed in section {name}?)"]
    _, addr, size, _, stype = found[0]
    out = []
    if stype != "SHT_NOBITS":
        out.append(f"{name} is {stype}, expected NOBITS (NOLOAD): it would take flash")
    if not _inside(addr, size, region):
        out.append(f"{name} [{addr:#010x}, +{size:,} B) is not inside region {region.name} "
                   f"[{region.origin:#010x}, +{region.length:,} B)")
    if addr % align:
        out.append(f"{name} at {addr:#010x} is not aligned to {align} bytes")
    if not planned <= size <= align_up(max(planned, 1), align):
        out.append(f"{name} is {size:,} B, planned {planned:,} B")
    return out


def _weights_problems(sections: list[tuple[Any, ...]], name: str, region: Region, planned: int) -> list[str]:
    """Weights copied to RAM or read from an external flash: their section in its region, with
    contents, within the plan."""
    found = [s for s in sections if s[0] == name]
    if not found:
        return [f"no {name} section (are the model's weights generated with weights: {region.name}?)"]
    _, addr, size, _, stype = found[0]
    out = []
    if stype == "SHT_NOBITS":
        out.append(f"{name} is NOBITS: the weights would not be in the firmware's image")
    if not _inside(addr, size, region):
        out.append(f"{name} [{addr:#010x}, +{size:,} B) is not inside region {region.name} "
                   f"[{region.origin:#010x}, +{region.length:,} B)")
    if size > planned:
        out.append(f"{name} is {size:,} B, more than the {planned:,} B the gate counted")
    return out


def check(elf_path: str, board: Board, rep: BoardReport) -> None:
    """Raise CheckFailed naming every problem ``problems`` finds."""
    found = problems(elf_path, board, rep)
    if found:
        raise CheckFailed(f"{board.name}: ELF check failed: " + "; ".join(found), file=elf_path,
                          hint="the linker script and the arena report disagree; rebuild from clean")


def usage(elf_path: str, board: Board | None = None) -> tuple[int, int]:
    """(RAM bytes, flash bytes) the linked ELF takes (see the module docstring); what ``board``'s
    external flash holds is neither (its own limit is the gate's)."""
    sizes = elf_sizes(elf_path, [(f.origin, f.end) for f in (board.external_flash if board else ())])
    return sizes.ram, sizes.flash
