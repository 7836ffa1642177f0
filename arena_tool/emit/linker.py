"""Board x planned arena -> a GNU ld linker script.

The script is plain text with literal numbers (no ``DEFINED()`` tricks, whose
``--defsym`` ordering silently changes the result) and is byte-identical for
the same inputs. Layout:

    FLASH:        .isr_vector (first, aligned as VTOR needs), .text, .rodata,
                  .ARM.extab/.ARM.exidx, init/fini arrays, the .data load image
    data_region:  .data (AT> FLASH), .bss, then ._user_heap_stack (heap, then a
                  stack reserve); _estack = end of the data region
    arena region: .arena (NOLOAD), ALIGN(arena_align), KEEP(*(.arena))
    split arena:  .arena_<region> (NOLOAD) in each region instead (``regions``)
    weights:      .weights_<region> in that region AT> FLASH, after .bss (weights: <region>)
    external:     each external flash in MEMORY (rx); .weights_<name> in it, read in place
                  (weights: <external_flash name>, e.g. QSPI at 0x90000000)

Symbols for startup code: _sidata/_sdata/_edata, _sbss/_ebss (also
__bss_start__/__bss_end__), __arena_start/__arena_end (split: __arena_<region>_start/_end),
__weights_<region>_start/_end/_load (the copy arena_init does), __heap_start/__heap_end,
end/_end/__end__ (newlib _sbrk), __stack_limit, _estack.

Link-time guards (``ASSERT``; each message starts with ``arena:``, ``failed_asserts`` finds
them in ld's output, ``overflows`` its "region X overflowed" lines): the arena
is no larger than planned, the arena and the heap/stack reserve end inside
their regions, the vector table is aligned. ``render`` itself refuses a plan
whose arena (plus the reserve, when they share a region) cannot fit.
"""

from __future__ import annotations

import os
import re
from typing import Mapping, Sequence

from arena_tool.emit.linker_fragment import RegionUse
from arena_tool.target.boards import Board, Region, reserve_bytes
from arena_tool.core.errors import EXIT_CHECK_FAILED, ArenaError
from arena_tool.core.files import write_atomic
from arena_tool.core.problem import align_up, fmt_bytes

_ALIGN_OK = tuple(1 << i for i in range(13))  # 1 .. 4096


def _size_words(n: int) -> str:
    """65536 -> '64 KiB'; 1000 -> '1000 B' (a comment, for people reading the script)."""
    for unit, name in ((1 << 20, "MiB"), (1 << 10, "KiB")):
        if n >= unit and n % unit == 0:
            return f"{n // unit} {name}"
    return f"{n} B"


def _attrs(region: Region, flash: bool = False) -> str:
    if flash:
        return "rx"
    return "rwx" if region.executable else "rw"


def _describe(region: Region) -> str:
    words = [_size_words(region.length)]
    words.append("zero-wait" if region.zero_wait else "wait states")
    if region.cacheable:
        words.append("cached")
    words.append("DMA" if region.dma else "no DMA")
    if region.needs_init:
        words.append("needs init")
    return ", ".join(words)


def render(
    board: Board,
    arena_region: str,
    arena_size: int,
    stack_size: int,
    heap_size: int,
    arena_align: int = 16,
    arena_input: str = ".arena",
    regions: Sequence[RegionUse] = (),
) -> str:
    """The linker script for ``board`` with an arena of ``arena_size`` bytes in ``arena_region``.

    stack_size, heap_size: bytes reserved in the board's data region.
    arena_align: byte alignment of ``.arena`` (a power of two, 1..4096).
    arena_input: the input sections the ``.arena`` output section collects (``.tensor_arena``
    for runtime: tflm, where TFLM's ``tensor_arena`` array is the arena; the output section
    keeps its name, which the ELF check looks for).
    regions: the board report's ``regions`` (linker_fragment.RegionUse): a split arena's ``.arena_<region>``
    sections replace ``.arena`` (then arena_region/arena_size only name the first region and the
    total), and each ``.weights_<region>`` is a ``.data``-like section in its region, loaded
    from flash (``_split_text``/``_weights_text``).
    The size guard allows max(arena_size, 1) bytes: C has no zero-length
    arrays, so an empty plan still defines a 1-byte arena.
    Raises ArenaError for an unknown region, bad numbers, or a planned arena
    (plus the reserve when it shares the data region) larger than its region.
    """
    split = [r for r in regions if r.arena_section not in (None, ".arena")]
    copies = [r for r in regions if r.weights_section and not r.in_place]
    in_place = [r for r in regions if r.weights_section and r.in_place]
    for use in in_place:
        if board.external(use.name) is None:
            names = ", ".join(f.name for f in board.external_flash) or "none"
            raise ArenaError(f"{board.name}: weights in place in '{use.name}', which is not an external flash of the "
                             f"board (its external flash: {names})")
    region = board.region(arena_region)
    for label, value in (("arena size", arena_size), ("stack size", stack_size), ("heap size", heap_size)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ArenaError(f"{label} must be a non-negative integer, got {value!r}")
    if arena_align not in _ALIGN_OK:
        raise ArenaError(f"arena alignment must be a power of two from 1 to 4096, got {arena_align!r}")
    data = board.region(board.data_region)
    reserve = reserve_bytes(stack_size, heap_size)
    need = align_up(arena_size, arena_align) + (reserve if region.name == data.name else 0)
    if split or copies:
        _check_regions(board, split, copies, reserve, arena_align, None if split else (region.name, arena_size))
    elif need > region.length:
        extra = f" plus {reserve:,} B stack and heap" if region.name == data.name else ""
        raise ArenaError(
            f"{board.name}: arena of {arena_size:,} B{extra} does not fit in {region.name} "
            f"({region.length:,} B, over by {need - region.length:,} B)",
            exit_code=EXIT_CHECK_FAILED,
            hint="choose a larger region or shrink the arena",
        )
    if reserve > data.length:
        raise ArenaError(f"{board.name}: stack and heap ({reserve:,} B) do not fit in {data.name} "
                         f"({data.length:,} B)", exit_code=EXIT_CHECK_FAILED)
    limit = max(arena_size, 1)
    flash = board.flash
    vt_align = board.vector_table_align
    width = max(len(r.name) for r in (flash, *board.ram, *board.external_flash))
    out: list[str] = []
    emit = out.append
    emit(f"/* Generated by arena (arena_tool/emit/linker.py) for board {board.name}. Do not edit. */")
    emit(f"/* {board.description} */")
    emit(f"/* arena: {arena_size} B in {region.name}, aligned to {arena_align};"
         f" stack {stack_size} B and heap {heap_size} B in {data.name} */")
    if arena_input != ".arena":
        emit(f"/* .arena (NOLOAD) holds the input sections {arena_input}: TFLM's tensor_arena */")
    if split:
        emit("/* split arena: " + ", ".join(f"{r.arena_section} {r.arena} B in {r.name}" for r in split) + " */")
    if copies:
        emit("/* weights copied at start-up: " + ", ".join(
            f"{r.weights_section} {r.weights} B in {r.name}" for r in copies) + " */")
    if in_place:
        emit("/* weights read in place from external flash: " + ", ".join(
            f"{u.weights_section} {u.weights} B in {u.name}" for u in in_place) + " */")
    emit("")
    emit("ENTRY(Reset_Handler)")
    emit("")
    emit("MEMORY")
    emit("{")
    emit(f"  {flash.name:<{width}} {'(' + _attrs(flash, True) + ')':<5} : ORIGIN = 0x{flash.origin:08X}, "
         f"LENGTH = 0x{flash.length:08X} /* {_size_words(flash.length)} */")
    for r in board.ram:
        emit(f"  {r.name:<{width}} {'(' + _attrs(r) + ')':<5} : ORIGIN = 0x{r.origin:08X}, "
             f"LENGTH = 0x{r.length:08X} /* {_describe(r)} */")
    for r in board.external_flash:
        emit(f"  {r.name:<{width}} {'(' + _attrs(r, True) + ')':<5} : ORIGIN = 0x{r.origin:08X}, "
             f"LENGTH = 0x{r.length:08X} /* {_size_words(r.length)}, external flash, memory-mapped */")
    emit("}")
    emit("")
    emit(f"__arena_planned_size = {arena_size};")
    emit(f"__stack_size = {stack_size};")
    emit(f"__heap_size = {heap_size};")
    emit(f"_estack = ORIGIN({data.name}) + LENGTH({data.name});")
    emit("__stack_limit = _estack - __stack_size;")
    emit("")
    emit("SECTIONS")
    emit("{")
    one_arena = f"""  .arena (NOLOAD) : ALIGN({arena_align})
  {{
    __arena_start = .;
    KEEP(*({arena_input} {arena_input}.*))
    __arena_end = .;
  }} > {region.name}
  ASSERT(__arena_end - __arena_start <= {limit}, "arena: .arena is larger than the planned {arena_size} B: the plan and the firmware disagree, regenerate them")
  ASSERT(__arena_end <= ORIGIN({region.name}) + LENGTH({region.name}), "arena: .arena overflows {region.name}")"""
    emit(f"""  .isr_vector :
  {{
    __vector_table = .;
    KEEP(*(.isr_vector))
    . = ALIGN(4);
  }} > {flash.name}
  ASSERT((ADDR(.isr_vector) & {vt_align - 1}) == 0, "arena: the vector table must start on a {vt_align}-byte boundary (VTOR)")
  ASSERT(SIZEOF(.isr_vector) > 0, "arena: no .isr_vector section: put the vector table in section .isr_vector")

  .text :
  {{
    . = ALIGN(4);
    *(.text .text.*)
    *(.glue_7) *(.glue_7t)
    *(.eh_frame)
    KEEP(*(.init))
    KEEP(*(.fini))
    . = ALIGN(4);
    _etext = .;
  }} > {flash.name}

  .rodata :
  {{
    . = ALIGN(4);
    *(.rodata .rodata.*)
    . = ALIGN(4);
  }} > {flash.name}

  .ARM.extab : {{ *(.ARM.extab* .gnu.linkonce.armextab.*) }} > {flash.name}
  .ARM.exidx :
  {{
    __exidx_start = .;
    *(.ARM.exidx* .gnu.linkonce.armexidx.*)
    __exidx_end = .;
  }} > {flash.name}

  .preinit_array :
  {{
    PROVIDE_HIDDEN(__preinit_array_start = .);
    KEEP(*(.preinit_array*))
    PROVIDE_HIDDEN(__preinit_array_end = .);
  }} > {flash.name}
  .init_array :
  {{
    PROVIDE_HIDDEN(__init_array_start = .);
    KEEP(*(SORT(.init_array.*)))
    KEEP(*(.init_array*))
    PROVIDE_HIDDEN(__init_array_end = .);
  }} > {flash.name}
  .fini_array :
  {{
    PROVIDE_HIDDEN(__fini_array_start = .);
    KEEP(*(SORT(.fini_array.*)))
    KEEP(*(.fini_array*))
    PROVIDE_HIDDEN(__fini_array_end = .);
  }} > {flash.name}

{_weights_text(in_place, None)}  _sidata = LOADADDR(.data);
  .data :
  {{
    . = ALIGN(4);
    _sdata = .;
    *(.data .data.*)
    . = ALIGN(4);
    _edata = .;
  }} > {data.name} AT> {flash.name}

  .bss :
  {{
    . = ALIGN(4);
    _sbss = .;
    __bss_start__ = _sbss;
    *(.bss .bss.*)
    *(COMMON)
    . = ALIGN(4);
    _ebss = .;
    __bss_end__ = _ebss;
  }} > {data.name}

{_weights_text(copies, flash.name)}{_split_text(split, arena_align) if split else one_arena}

  ._user_heap_stack (NOLOAD) : ALIGN(8)
  {{
    __heap_start = .;
    PROVIDE(end = .);
    PROVIDE(_end = .);
    PROVIDE(__end__ = .);
    . = . + __heap_size;
    . = ALIGN(8);
    __heap_end = .;
    . = . + __stack_size;
    . = ALIGN(8);
  }} > {data.name}
  ASSERT(__heap_end + __stack_size <= _estack, "arena: stack and heap reserve overflows {data.name}")

  .ARM.attributes 0 : {{ *(.ARM.attributes) }}
}}""")
    return "\n".join(out) + "\n"


def _check_regions(board: Board, split: Sequence[RegionUse], copies: Sequence[RegionUse],
                   reserve: int, arena_align: int, one: tuple[str, int] | None) -> None:
    """Every region's arena (a split arena's section, or the one arena) plus its copied weights
    (plus the reserve in the data region) fits the region; ArenaError (exit 1) naming the first that does not."""
    need: dict[str, list[int]] = {}
    for r in split:
        need.setdefault(r.name, [0, 0])[0] += align_up(r.arena, arena_align)
    if one is not None:
        need.setdefault(one[0], [0, 0])[0] += align_up(one[1], arena_align)
    for r in copies:
        need.setdefault(r.name, [0, 0])[1] += align_up(r.weights, 16)
    for name in sorted(need, key=lambda n: board.region_names().index(n)):
        region = board.region(name)
        arena, weights = need[name]
        extra = reserve if name == board.data_region else 0
        if arena + weights + extra > region.length:
            parts = [f"arena of {arena:,} B"] + ([f"{weights:,} B of weights"] if weights else []) + (
                [f"{extra:,} B stack and heap"] if extra else [])
            raise ArenaError(f"{board.name}: {' plus '.join(parts)} do not fit in {name} ({region.length:,} B, "
                             f"over by {arena + weights + extra - region.length:,} B)", exit_code=EXIT_CHECK_FAILED,
                             hint="choose larger regions, keep the weights in flash, or shrink the arena")


def _split_text(split: Sequence[RegionUse], align: int) -> str:
    """A split arena: one NOLOAD section per region (symbols __arena_<region>_start/_end), each
    guarded like .arena."""
    out = []
    for r in split:
        name, region, size = str(r.arena_section), r.name, r.arena
        sym = "__" + name.lstrip(".")
        out.append(f"""  {name} (NOLOAD) : ALIGN({align})
  {{
    {sym}_start = .;
    KEEP(*({name} {name}.*))
    {sym}_end = .;
  }} > {region}
  ASSERT({sym}_end - {sym}_start <= {max(size, 1)}, "arena: {name} is larger than the planned {size} B: the plan and the firmware disagree, regenerate them")
  ASSERT({sym}_end <= ORIGIN({region}) + LENGTH({region}), "arena: {name} overflows {region}")""")
    return "\n\n".join(out)


def _weights_text(copies: Sequence[RegionUse], flash: str | None) -> str:
    """Weights sections, per region, symbols __weights_<region>_start/_end: copied to RAM
    (``flash`` given: run address there, contents in flash by AT>, _load for arena_init's copy)
    or read in place from an external flash (``flash`` None: nothing copied); "" for none."""
    out = []
    for r in copies:
        name, region, size = str(r.weights_section), r.name, r.weights
        sym = "__" + name.lstrip(".")
        at = f" AT> {flash}\n  {sym}_load = LOADADDR({name});" if flash else ""
        where = region if flash else f"the external flash {region}"
        out.append(f"""  {name} : ALIGN(16)
  {{
    {sym}_start = .;
    KEEP(*({name} {name}.*))
    . = ALIGN(4);
    {sym}_end = .;
  }} > {region}{at}
  ASSERT({sym}_end - {sym}_start <= {max(size, 1)}, "arena: {name} is larger than the planned {size} B of weights: the plan and the firmware disagree, regenerate them")
  ASSERT({sym}_end <= ORIGIN({region}) + LENGTH({region}), "arena: {name} overflows {where}")

""")
    return "".join(out)


_OVERFLOW = re.compile(r"region [`'\"]?([A-Za-z0-9_.]+)['\"]? overflowed by (\d+) bytes")


def overflows(ld_output: str) -> list[tuple[str, int]]:
    """(region, bytes over) for every "region `X' overflowed by N bytes" of a failed link, first per region."""
    out: dict[str, int] = {}
    for m in _OVERFLOW.finditer(ld_output):
        out.setdefault(m.group(1), int(m.group(2)))
    return list(out.items())


def failed_asserts(ld_output: str) -> list[str]:
    """The messages of this script's ASSERTs that failed (each starts with 'arena:')."""
    seen: list[str] = []
    for line in ld_output.splitlines():
        i = line.find("arena: ")
        if i >= 0 and line[i:].strip() not in seen:
            seen.append(line[i:].strip())
    return seen


def write(path: str | os.PathLike[str], text: str) -> None:
    """Write the script atomically (files.write_atomic)."""
    write_atomic(path, text)
