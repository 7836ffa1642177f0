"""Board x planned arena -> an ld fragment for a linker script that is yours (manifest ``linker: fragment``).

A firmware whose linker script comes from STM32CubeMX, Zephyr or a vendor SDK keeps it: its
MEMORY, vectors, .text, .data, .bss, heap and stack stay as they are. The script INCLUDEs
``arena_fragment.ld`` inside its SECTIONS command (after .bss, before the heap/stack section)
and the build links with ``-T your.ld -L build/<board>``. The fragment holds only arena's
output sections and the same guards as the full script (``arena_tool.emit.linker``)::

    .arena (NOLOAD) : ALIGN(a) { __arena_start = .; KEEP(*(.arena .arena.*)) __arena_end = .; } > RAM_D1

ASSERTs (each message starts with ``arena:``, so ``linker.failed_asserts`` finds them): the arena
is no larger than planned, starts on the plan's alignment, ends inside the script's MEMORY region,
lies inside the board's region (literal addresses from the board file: a MEMORY name mapped to
the wrong RAM is caught), and stays clear of the ``reserve.stack`` bytes below ``_estack``
(STM32CubeMX) or ``__StackTop`` (CMSIS, nRF, NXP) when the script defines one before the INCLUDE.

Region names: the fragment writes MEMORY names of *your* script. A board region's name
(``boards/<board>.yaml``) is used as it is unless the manifest maps it:
``linker_regions: {AXI_SRAM: RAM_D1}`` (the board's flash name maps the same way, for the load
address of copied sections). ``linkscript.check_script`` reads your script without ld for the mistakes
whose ld messages are obscure: no INCLUDE of the fragment, an INCLUDE outside SECTIONS, a MEMORY
command without the arena's region.

Issue 12's split arena and copied weights: ``sections_of`` turns a board report into arena sections
(one ``.arena``, or the ``.arena_<region>`` sections its ``regions`` name) and ``copies_of`` into
``.data``-like sections for ``weights: <region>`` (run address in that region, ``AT>`` the flash;
symbols ``__weights_<region>_start``/``_end``/``_load`` for the start-up copy); ``in_place_of``
into sections in an external flash (``weights: QSPI``: ``> QSPI``, no copy). Output is plain
text with literal numbers, byte-identical for the same inputs.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any, Mapping, Protocol, Sequence

from arena_tool.target.boards import Board, Region
from arena_tool.core.errors import EXIT_CHECK_FAILED, ArenaError
from arena_tool.target.linkscript import FRAGMENT_NAME
from arena_tool.core.problem import align_up, fmt_bytes
from arena_tool.core.files import write_atomic


STACK_TOPS = ("_estack", "__StackTop")  # STM32CubeMX; CMSIS gcc templates, nRF MDK, NXP
_ALIGN_OK = tuple(1 << i for i in range(13))  # 1 .. 4096, as arena_tool.emit.linker


@dataclasses.dataclass(frozen=True)
class ArenaSection:
    """One NOLOAD arena output section: ``size`` planned bytes in board region ``region``.

    name: ``.arena`` (or ``.arena_<region>`` for a split arena); align: bytes, a power of two;
    inputs: the input sections it collects (``.tensor_arena`` for runtime: tflm).
    Its symbols are ``__<name>_start`` / ``__<name>_end`` (``__arena_start`` for ``.arena``).
    """

    name: str
    region: str
    size: int
    align: int
    inputs: str = ".arena"

    @property
    def symbol(self) -> str:
        return "__" + self.name.lstrip(".")


@dataclasses.dataclass(frozen=True)
class CopiedSection:
    """A section linked into flash and copied once to ``region`` at start-up (``.data``-like).

    For weights in fast RAM (issue 12 item 2; ``copies_of`` reads them from a board report). Symbols for the copy loop:
    ``__<name>_start``/``_end`` (in RAM) and ``__<name>_load`` (in flash).
    """

    name: str
    region: str
    size: int
    align: int = 16  # as linker.py's .weights_<region>

    @property
    def symbol(self) -> str:
        return "__" + self.name.lstrip(".")


@dataclasses.dataclass(frozen=True)
class RegionUse:
    """One RAM region of a board, or one of its external flash (``in_place``: weights read there in
    place, never copied; no arena). Sizes in bytes; sections are None where it holds nothing."""

    name: str
    origin: int
    length: int
    arena: int
    weights: int
    reserve: int
    limit: int
    arena_section: str | None
    weights_section: str | None
    in_place: bool = False

    @property
    def used(self) -> int:
        return self.arena + self.weights

    @property
    def headroom(self) -> int:
        return self.limit - self.used

    def to_json(self) -> dict[str, Any]:
        """The report's ``regions`` entry (``headroom`` derived)."""
        return {"name": self.name, "origin": self.origin, "length": self.length, "arena": self.arena,
                "weights": self.weights, "reserve": self.reserve, "limit": self.limit, "headroom": self.headroom,
                "arena_section": self.arena_section, "weights_section": self.weights_section,
                **({"in_place": True} if self.in_place else {})}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> "RegionUse":
        """From a ``regions`` entry the report schema has checked."""
        return cls(name=str(doc["name"]), origin=int(doc["origin"]), length=int(doc["length"]),
                   arena=int(doc["arena"]), weights=int(doc["weights"]), reserve=int(doc["reserve"]),
                   limit=int(doc["limit"]), arena_section=doc["arena_section"], weights_section=doc["weights_section"],
                   in_place=bool(doc.get("in_place", False)))


def arena_section(region: str, split: bool) -> str:
    return f".arena_{region}" if split else ".arena"

def weights_section(region: str) -> str:
    return f".weights_{region}"


class ArenaLayout(Protocol):
    """What the fragment reads of a board report (builder.board_report.BoardReport): its runtime,
    the arena's region, size and alignment, its split regions and the stack reserve."""

    @property
    def runtime(self) -> str: ...
    @property
    def region(self) -> str: ...
    @property
    def arena_size(self) -> int: ...
    @property
    def alignment(self) -> int: ...
    @property
    def regions(self) -> Sequence[RegionUse]: ...
    @property
    def reserve_stack(self) -> int: ...


def sections_of(rep: ArenaLayout) -> list[ArenaSection]:
    """The arena sections a board report asks for: one ``.arena`` in its region, or, where the
    report lists ``regions`` (RegionUse: a split arena), each region's arena section."""
    inputs = ".tensor_arena" if rep.runtime == "tflm" else ".arena"
    held = [(r, r.arena_section) for r in rep.regions if r.arena_section]
    if not held:
        return [ArenaSection(".arena", rep.region, rep.arena_size, rep.alignment, inputs)]
    return [ArenaSection(section, r.name, r.arena, rep.alignment, inputs if section == ".arena" else section)
            for r, section in held]


def copies_of(rep: ArenaLayout) -> list[CopiedSection]:
    """The weights a board report copies to RAM (``weights: <region>``): one section per region."""
    return [CopiedSection(r.weights_section, r.name, r.weights) for r in rep.regions
            if r.weights_section and not r.in_place]


def in_place_of(rep: ArenaLayout) -> list[CopiedSection]:
    """The weights a board report reads in place from an external flash (``weights: QSPI``):
    one section per external flash, nothing copied."""
    return [CopiedSection(r.weights_section, r.name, r.weights) for r in rep.regions
            if r.weights_section and r.in_place]


def regions_of(board: Board, rep: ArenaLayout) -> list[str]:
    """The board regions a report's fragment names: its arena and weights regions (external flash
    included), and the flash when weights are copied from it (their load address)."""
    names = [s.region for s in sections_of(rep)] + [c.region for c in copies_of(rep) + in_place_of(rep)]
    names += [board.flash.name] if copies_of(rep) else []
    return sorted(set(names))


# ---------------------------------------------------------------- rendering


def _check_numbers(board: Board, sections: Sequence[ArenaSection], copies: Sequence[CopiedSection],
                   stack_size: int) -> None:
    """Refuse what no link could accept, before ld says it less clearly."""
    every: list[ArenaSection | CopiedSection] = [*sections, *copies]
    for label, value in [("stack size", stack_size)] + [(f"{s.name} size", s.size) for s in every]:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ArenaError(f"{label} must be a non-negative integer, got {value!r}")
    for s in every:
        if s.align not in _ALIGN_OK:
            raise ArenaError(f"{s.name} alignment must be a power of two from 1 to 4096, got {s.align!r}")
    need: dict[str, list[int]] = {}  # region -> [bytes planned, bytes once aligned]
    for s in every:
        sizes = need.setdefault(s.region, [0, 0])
        sizes[0] += s.size
        sizes[1] += align_up(s.size, s.align)
    weights = {c.region for c in copies}
    for name, (planned, aligned) in need.items():
        region = board.region(name)
        if aligned > region.length:
            what = "arena and copied weights" if name in weights else "arena"
            raise ArenaError(
                f"{board.name}: {what} of {fmt_bytes(planned)} {'do' if name in weights else 'does'} not fit in "
                f"{region.name} ({fmt_bytes(region.length)}, over by {fmt_bytes(aligned - region.length)})",
                exit_code=EXIT_CHECK_FAILED, hint="choose a larger region or shrink the arena")


def _stack_guard(s: ArenaSection | CopiedSection, stack_size: int) -> list[str]:
    """ASSERTs that a section misses the stack below the script's stack top, if it defines one.

    The ternary evaluates only its chosen branch: a script without the symbol still links.
    """
    out = []
    for top in STACK_TOPS:
        out.append(
            f"  ASSERT(DEFINED({top}) ? ({s.symbol}_end <= {top} - {stack_size} || {s.symbol}_start >= {top}) : 1, "
            f"\"arena: {s.name} overlaps the {stack_size} B stack below {top}: INCLUDE {FRAGMENT_NAME} before "
            f"the heap/stack section (._user_heap_stack), or put the arena in another region\")")
    return out


def _arena_text(s: ArenaSection, region: Region, memory: str, stack_size: int) -> list[str]:
    """One arena output section and its ASSERTs."""
    sym, limit, end = s.symbol, max(s.size, 1), region.origin + region.length
    mapped = "" if memory == region.name else f" (board region {region.name})"
    return [
        f"  {sym}_planned_size = {s.size};",
        f"  {s.name} (NOLOAD) : ALIGN({s.align})",
        "  {",
        f"    {sym}_start = .;",
        f"    KEEP(*({s.inputs} {s.inputs}.*))",
        f"    {sym}_end = .;",
        f"  }} > {memory}",
        f"  ASSERT({sym}_end - {sym}_start <= {limit}, \"arena: {s.name} is larger than the planned {s.size} B: "
        "the plan and the firmware disagree, regenerate them\")",
        f"  ASSERT(({sym}_start & {s.align - 1}) == 0, "
        f"\"arena: {s.name} does not start on a {s.align}-byte boundary\")",
        f"  ASSERT({sym}_end <= ORIGIN({memory}) + LENGTH({memory}), \"arena: {s.name} overflows {memory}{mapped}\")",
        f"  ASSERT({sym}_start >= 0x{region.origin:08X} && {sym}_end <= 0x{end:08X}, \"arena: {s.name} is outside "
        f"the board's {region.name} [0x{region.origin:08X}, 0x{end:08X}): MEMORY region {memory} of your script "
        "is not that RAM; map the board region to the right MEMORY name with linker_regions:\")",
        *_stack_guard(s, stack_size),
    ]


def _copied_text(c: CopiedSection, memory: str, flash: str) -> list[str]:
    """A section with its contents in flash (``AT>``) and its run address in ``memory``: the text
    of linker.py's ``_weights_text``, with the script's MEMORY names."""
    sym = c.symbol
    return [
        f"  {c.name} : ALIGN({c.align})",
        "  {",
        f"    {sym}_start = .;",
        f"    KEEP(*({c.name} {c.name}.*))",
        "    . = ALIGN(4);",
        f"    {sym}_end = .;",
        f"  }} > {memory} AT> {flash}",
        f"  {sym}_load = LOADADDR({c.name});",
        f"  ASSERT({sym}_end - {sym}_start <= {max(c.size, 1)}, \"arena: {c.name} is larger than the planned "
        f"{c.size} B of weights: the plan and the firmware disagree, regenerate them\")",
        f"  ASSERT({sym}_end <= ORIGIN({memory}) + LENGTH({memory}), \"arena: {c.name} overflows {memory}\")",
    ]


def _in_place_text(c: CopiedSection, region: Region, memory: str) -> list[str]:
    """Weights read in place from an external flash: contents in ``memory``, no copy; guarded like
    an arena section, with the board's literal addresses (a MEMORY name mapped to the wrong chip)."""
    sym, end = c.symbol, region.origin + region.length
    mapped = "" if memory == region.name else f" (board region {region.name})"
    return [
        f"  {c.name} : ALIGN({c.align})",
        "  {",
        f"    {sym}_start = .;",
        f"    KEEP(*({c.name} {c.name}.*))",
        "    . = ALIGN(4);",
        f"    {sym}_end = .;",
        f"  }} > {memory}",
        f"  ASSERT({sym}_end - {sym}_start <= {max(c.size, 1)}, \"arena: {c.name} is larger than the planned "
        f"{c.size} B of weights: the plan and the firmware disagree, regenerate them\")",
        f"  ASSERT({sym}_end <= ORIGIN({memory}) + LENGTH({memory}), \"arena: {c.name} overflows {memory}{mapped}\")",
        f"  ASSERT({sym}_start >= 0x{region.origin:08X} && {sym}_end <= 0x{end:08X}, \"arena: {c.name} is outside "
        f"the board's external flash {region.name} [0x{region.origin:08X}, 0x{end:08X}): MEMORY region {memory} of "
        "your script is not that flash; map the board region to the right MEMORY name with linker_regions:\")",
    ]


def fragment(board: Board, sections: Sequence[ArenaSection], stack_size: int,
             names: Mapping[str, str] | None = None, copies: Sequence[CopiedSection] = (),
             in_place: Sequence[CopiedSection] = ()) -> str:
    """The fragment placing ``sections`` (and ``copies``, ``in_place``) in the MEMORY regions of a user's script.

    stack_size: bytes the arena must leave below the script's stack top (manifest ``reserve.stack``).
    names: board region (or flash, or external flash) name -> the script's MEMORY name, where they differ.
    in_place: weights read from an external flash of the board (``board.external_flash``).
    Raises ArenaError for an unknown region, bad numbers or sections larger than their region.
    """
    names = dict(names or {})
    _check_numbers(board, sections, copies, stack_size)
    for c in in_place:
        region = board.external(c.region)
        if region is None:
            raise ArenaError(f"{board.name}: weights in place in '{c.region}', which is not an external flash of "
                             f"the board (its external flash: {', '.join(board.flash_names()[1:]) or 'none'})")
        if c.size > region.length:
            raise ArenaError(f"{board.name}: {fmt_bytes(c.size)} of weights do not fit in the external flash "
                             f"{c.region} ({fmt_bytes(region.length)})", exit_code=EXIT_CHECK_FAILED)
    every: list[ArenaSection | CopiedSection] = [*copies, *in_place, *sections]
    where = ", ".join(f"{s.name} {s.size} B in {s.region} (your {names.get(s.region, s.region)})" for s in every)
    out = [f"/* Generated by arena (arena_tool/emit/linker_fragment.py) for board {board.name}. Do not edit. */",
           f"/* INCLUDE it inside your linker script's SECTIONS {{ }}, after .bss and before the heap/stack",
           f"   section: INCLUDE {FRAGMENT_NAME} (arena's build links with -L and this file's folder). */",
           f"/* {where}; stack guard {stack_size} B below {' or '.join(STACK_TOPS)} */", ""]
    flash = names.get(board.flash.name, board.flash.name)
    for c in copies:
        out += _copied_text(c, names.get(c.region, c.region), flash)
        out += _stack_guard(c, stack_size) + [""]
    for c in in_place:
        out += _in_place_text(c, board.memory(c.region), names.get(c.region, c.region)) + [""]
    for s in sections:
        out += _arena_text(s, board.region(s.region), names.get(s.region, s.region), stack_size) + [""]
    return "\n".join(out[:-1]) + "\n"


def render_for_report(board: Board, rep: ArenaLayout, names: Mapping[str, str] | None = None) -> str:
    """The fragment a board report asks for."""
    return fragment(board, sections_of(rep), rep.reserve_stack, names, copies_of(rep), in_place_of(rep))


def write(path: str | os.PathLike[str], text: str) -> None:
    """Write the fragment atomically (files.write_atomic)."""
    write_atomic(path, text)


# ---------------------------------------------------------------- reading the user's script
