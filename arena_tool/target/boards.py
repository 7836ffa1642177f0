"""Board descriptors: ``boards/<name>.yaml`` -> a checked, frozen ``Board``.

A board file lists the core, the flash and every RAM region with the
attributes that matter for placing an activation arena (zero-wait, cacheable,
DMA-reachable, executable, an optional speed rank), and any external flash
(``external_flash``: a QSPI/OSPI NOR the core reads memory-mapped, XIP) that a model's
weights may be read from in place (``weights: QSPI``). ``load_board`` searches
the given folders in order, so a project's own board folder (listed first)
can add boards or shadow the shipped ones in the repo's ``boards/``.

An object that exists is valid: a ``Board`` returned by ``load_board`` has
unique region names, non-overlapping regions inside the 32-bit address space
with 4-byte aligned origins, an FPU its core can have (``FPUS``), and a
``default_region``/``data_region`` that exist. All sizes and addresses
are plain ints in bytes. ``Board.to_json``/``from_json`` give the same board as
a resolved board file (schema-checked, byte-identical round trips): how the
manifest cache carries each target's board to the SCons tool's actions.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
import sys
from pathlib import Path
from typing import Any, Mapping

from arena_tool.target import yamlio
from arena_tool.core.errors import ArenaError, did_you_mean
from arena_tool.target.yamlio import parse_size
from arena_tool.core.schema import check_json

__all__ = ["Board", "Cpu", "Region", "board_dirs", "default_board_dir", "list_boards",
           "load_board", "parse_size"]

_NAME_RE = re.compile(r"[a-z0-9][a-z0-9_]*")  # always fullmatch: '$' would accept a trailing newline
_ADDRESS_SPACE = 1 << 32
_ORIGIN_ALIGN = 4  # bytes: a region starts on a word boundary (MPU, linker ALIGN and VTOR assume it)

# The FPUs each core can have (GCC -mfpu names; "auto": derived from -mcpu). M0/M0+/M3/M23
# have none; M4 has FPv4-SP as an option; M7 FPv5 single or double precision; M33 FPv5-SP
# as an option; M55/M85 an optional FPv5 (with MVE), usually given as "auto".
FPUS = {
    "cortex-m0": ("none",),
    "cortex-m0plus": ("none",),
    "cortex-m3": ("none",),
    "cortex-m23": ("none",),
    "cortex-m4": ("none", "fpv4-sp-d16", "auto"),
    "cortex-m7": ("none", "fpv5-sp-d16", "fpv5-d16", "auto"),
    "cortex-m33": ("none", "fpv5-sp-d16", "auto"),
    "cortex-m55": ("none", "fpv5-sp-d16", "fpv5-d16", "auto"),
    "cortex-m85": ("none", "fpv5-sp-d16", "fpv5-d16", "auto"),
}


@dataclasses.dataclass(frozen=True)
class Region:
    """One memory region.

    name: linker MEMORY name (DTCM, SRAM1, FLASH).
    origin, length: bytes; the region is [origin, origin + length).
    zero_wait: the core accesses it without wait states (TCM, on-chip SRAM at core clock).
    cacheable: covered by the D-cache, so fast only while the cache hits and DMA needs maintenance.
    dma: reachable by the general-purpose DMA controllers.
    executable: code may run from it.
    speed: rank on this board, 1 = fastest; None = unranked (after all ranked ones).
    needs_init: what startup code must do before use (clock enable, SDRAM setup); None if usable at reset.
    """

    name: str
    origin: int
    length: int
    zero_wait: bool = True
    cacheable: bool = False
    dma: bool = True
    executable: bool = True
    speed: int | None = None
    needs_init: str | None = None
    note: str = ""

    @property
    def end(self) -> int:
        """One past the last byte."""
        return self.origin + self.length

    def to_json(self) -> dict[str, Any]:
        """A RAM region as a board file writes it (``ram[i]`` of schemas/board.schema.json); the
        optional keys only when set."""
        doc: dict[str, Any] = {"name": self.name, "origin": self.origin, "length": self.length,
                               "zero_wait": self.zero_wait, "cacheable": self.cacheable, "dma": self.dma,
                               "executable": self.executable}
        if self.speed is not None:
            doc["speed"] = self.speed
        if self.needs_init is not None:
            doc["needs_init"] = self.needs_init
        if self.note:
            doc["note"] = self.note
        return doc

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> "Region":
        """``to_json``'s inverse (origin and length as ints)."""
        return cls(name=doc["name"], origin=doc["origin"], length=doc["length"], zero_wait=doc["zero_wait"],
                   cacheable=doc["cacheable"], dma=doc["dma"], executable=doc["executable"],
                   speed=doc.get("speed"), needs_init=doc.get("needs_init"), note=doc.get("note", ""))


def _flash(name: str, origin: int, length: int, note: str = "") -> Region:
    """The flash region: read-only to the arena, reachable by DMA, code runs from it."""
    return Region(name=name, origin=origin, length=length, zero_wait=False, cacheable=False, dma=True,
                  executable=True, note=note)


def _external(name: str, origin: int, length: int, needs_init: str | None, note: str = "") -> Region:
    """An external flash read memory-mapped (QSPI/OSPI XIP): read-only, wait states; ``needs_init``
    is what startup code does before the first read (the controller's memory-mapped mode)."""
    return Region(name=name, origin=origin, length=length, zero_wait=False, cacheable=False, dma=True,
                  executable=True, needs_init=needs_init, note=note)


def _flash_doc(f: Region) -> dict[str, Any]:
    """An ``external_flash[i]`` entry of a board file (schemas/board.schema.json)."""
    doc: dict[str, Any] = {"name": f.name, "origin": f.origin, "length": f.length}
    if f.needs_init is not None:
        doc["needs_init"] = f.needs_init
    if f.note:
        doc["note"] = f.note
    return doc


@dataclasses.dataclass(frozen=True)
class Cpu:
    """core/fpu/float_abi are the GCC -mcpu/-mfpu/-mfloat-abi values; irqs = external interrupt lines."""

    core: str
    fpu: str
    float_abi: str
    clock_hz: int | None = None
    irqs: int | None = None

    def gcc_flags(self) -> tuple[str, ...]:
        """Compiler flags for this core, e.g. ('-mcpu=cortex-m7', '-mthumb', '-mfpu=fpv5-d16', '-mfloat-abi=hard')."""
        flags = [f"-mcpu={self.core}", "-mthumb"]
        if self.fpu != "none":
            flags.append(f"-mfpu={self.fpu}")
        flags.append(f"-mfloat-abi={'soft' if self.fpu == 'none' else self.float_abi}")
        return tuple(flags)

    def to_json(self) -> dict[str, Any]:
        """``cpu`` of schemas/board.schema.json; clock_hz and irqs only when known."""
        doc: dict[str, Any] = {"core": self.core, "fpu": self.fpu, "float_abi": self.float_abi}
        if self.clock_hz is not None:
            doc["clock_hz"] = self.clock_hz
        if self.irqs is not None:
            doc["irqs"] = self.irqs
        return doc

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> "Cpu":
        return cls(core=doc["core"], fpu=doc["fpu"], float_abi=doc["float_abi"], clock_hz=doc.get("clock_hz"),
                   irqs=doc.get("irqs"))


@dataclasses.dataclass(frozen=True)
class Uart:
    """The serial port the validation firmware talks over (``arena-tool validate``): its kind
    (the register interface; ``cmsdk_apb``: Arm's CMSDK APB UART of the MPS2 boards), base
    address and baud rate."""

    kind: str
    base: int
    baud: int
    rx_irq: int | None = None  # its receive interrupt: the firmware waits for a byte in WFI
    clock_hz: int | None = None  # its clock as the firmware leaves it (None: the core's)
    setup: tuple[tuple[int, int, int], ...] = ()  # (address, mask, value) written before it starts

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"kind": self.kind, "base": self.base, "baud": self.baud}
        if self.rx_irq is not None:
            doc["rx_irq"] = self.rx_irq
        if self.clock_hz is not None:
            doc["clock_hz"] = self.clock_hz
        if self.setup:
            doc["setup"] = [{"address": a, "mask": m, "value": v} for a, m, v in self.setup]
        return doc

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> "Uart":
        def number(v: Any) -> int:
            return int(v.replace("_", ""), 16) if isinstance(v, str) else int(v)

        setup = tuple((number(w["address"]), number(w.get("mask", w["value"])), number(w["value"]))
                      for w in doc.get("setup", ()))
        return cls(kind=doc["kind"], base=number(doc["base"]), baud=int(doc["baud"]), rx_irq=doc.get("rx_irq"),
                   clock_hz=doc.get("clock_hz"), setup=setup)


@dataclasses.dataclass(frozen=True)
class Board:
    """A checked board descriptor.

    ram: every RAM region in file order. default_region: where the arena goes
    unless the manifest says otherwise. data_region: where .data, .bss, heap
    and stack go. file: the YAML file it was loaded from ('' if built in code).
    """

    name: str
    description: str
    source: str
    cpu: Cpu
    flash: Region
    ram: tuple[Region, ...]
    default_region: str
    data_region: str
    qemu: str | None = None
    note: str = ""
    file: str = ""
    uart: Uart | None = None
    flash_command: str | None = None  # flash.command: programs the board (arena-tool validate), {elf}/{hex} in it
    external_flash: tuple[Region, ...] = ()  # memory-mapped (XIP) flash: read-only, weights read in place

    def to_json(self) -> dict[str, Any]:
        """The board as a board file with every value resolved (ints for sizes and addresses,
        ``data_region`` always written): valid against schemas/board.schema.json, so
        ``from_json(b.to_json(), b.file) == b`` for every loaded board and the text round-trips
        byte for byte. ``file`` is not part of it (the schema has no such key)."""
        flash: dict[str, Any] = {"name": self.flash.name, "origin": self.flash.origin, "length": self.flash.length}
        if self.flash.note:
            flash["note"] = self.flash.note
        if self.flash_command is not None:
            flash["command"] = self.flash_command
        doc: dict[str, Any] = {"name": self.name, "description": self.description, "source": self.source,
                               "cpu": self.cpu.to_json(), "flash": flash, "ram": [r.to_json() for r in self.ram],
                               "default_region": self.default_region, "data_region": self.data_region}
        if self.external_flash:
            doc["external_flash"] = [_flash_doc(f) for f in self.external_flash]
        if self.qemu is not None:
            doc["qemu"] = self.qemu
        if self.uart is not None:
            doc["uart"] = self.uart.to_json()
        if self.note:
            doc["note"] = self.note
        return doc

    @classmethod
    def from_json(cls, doc: Mapping[str, Any], file: str = "") -> "Board":
        """``to_json``'s inverse, schema-checked (a damaged cache is an ArenaError naming ``file``);
        the flash gets the loader's attributes. Not ``load_board_file``'s cross-checks: the
        document comes from a Board that passed them."""
        check_json(doc, "board", file or "(board document)")
        f = doc["flash"]
        return cls(name=doc["name"], description=doc["description"], source=doc["source"],
                   cpu=Cpu.from_json(doc["cpu"]), flash=_flash(f.get("name", "FLASH"), f["origin"], f["length"],
                                                               f.get("note", "")),
                   ram=tuple(Region.from_json(r) for r in doc["ram"]), default_region=doc["default_region"],
                   data_region=doc.get("data_region", doc["default_region"]), qemu=doc.get("qemu"),
                   note=doc.get("note", ""), file=file, uart=Uart.from_json(doc["uart"]) if "uart" in doc else None,
                   flash_command=f.get("command"),
                   external_flash=tuple(_external(x["name"], x["origin"], x["length"], x.get("needs_init"),
                                                  x.get("note", "")) for x in doc.get("external_flash", ())))

    def region_names(self) -> list[str]:
        """RAM region names in file order."""
        return [r.name for r in self.ram]

    def flash_names(self) -> list[str]:
        """Where weights can be read in place: ``flash`` (the internal flash), then each external flash."""
        return ["flash"] + [f.name for f in self.external_flash]

    def external(self, name: str) -> Region | None:
        """The external flash called ``name``, or None (a RAM region, ``flash``, or unknown)."""
        return next((f for f in self.external_flash if f.name == name), None)

    def memory(self, name: str) -> Region:
        """The RAM region or external flash called ``name`` (ArenaError as ``region`` otherwise)."""
        return self.external(name) or self.region(name)

    def region(self, name: str) -> Region:
        """The RAM region called ``name``; ArenaError with a did-you-mean otherwise."""
        for region in self.ram:
            if region.name == name:
                return region
        names = self.region_names()
        close = difflib.get_close_matches(name, names, n=1, cutoff=0.5)
        case = [n for n in names if n.lower() == name.lower()]
        guess = case or close
        hint = (f"did you mean '{guess[0]}'? " if guess else "") + "expected one of: " + ", ".join(names) + ", auto"
        raise ArenaError(f"unknown region '{name}' on board {self.name}", hint=hint)

    @property
    def vector_table_align(self) -> int:
        """Byte alignment VTOR needs: table size (16 + irqs words) rounded up to a power of two, >= 128."""
        entries = 16 + (self.cpu.irqs if self.cpu.irqs is not None else 240)
        size = entries * 4
        align = 128
        while align < size:
            align *= 2
        return align

    def fastest_region(self, min_size: int, *, reserve: int = 0, dma: bool = False) -> Region:
        """The region ``region: auto`` picks for an arena of ``min_size`` bytes.

        Candidates: regions usable at reset (no ``needs_init``) whose length,
        minus ``reserve`` when it is the data region (stack and heap live
        there), is at least ``min_size``; with ``dma`` only DMA-reachable ones.
        Ranking, best first: zero-wait before wait states; then uncached before
        cached (a cached region is fast only while the cache hits, and DMA
        into it needs maintenance); then the ``speed`` rank (unranked last);
        then file order. Raises ArenaError naming the largest region if none fits.
        """
        candidates = []
        for index, region in enumerate(self.ram):
            room = region.length - (reserve if region.name == self.data_region else 0)
            if region.needs_init or room < min_size or (dma and not region.dma):
                continue
            speed = region.speed if region.speed is not None else 1 << 30
            candidates.append(((not region.zero_wait, region.cacheable, speed, index), region))
        if candidates:
            return min(candidates, key=lambda item: item[0])[1]
        usable = [r for r in self.ram if not r.needs_init and (r.dma or not dma)]
        largest = max(usable, key=lambda r: r.length) if usable else None
        what = "DMA-reachable region" if dma else "region"
        detail = f"; the largest is {largest.name} with {largest.length:,} B" if largest else ""
        raise ArenaError(
            f"no {what} on board {self.name} holds {min_size:,} B{detail}",
            hint="shrink the arena (planner optimal, a smaller activation dtype) or name a region explicitly",
        )


# ---------------------------------------------------------------- loading


def reserve_bytes(stack: int, heap: int) -> int:
    """Bytes the stack and heap reserve take in the data region: each rounded up to 8, as the
    linker script's ``._user_heap_stack`` lays them out (AAPCS keeps the stack 8-byte aligned).
    The one number the gate, the region ranking and the linker script all count."""
    return -(-heap // 8) * 8 + -(-stack // 8) * 8


def default_board_dir() -> Path:
    """The shipped ``boards/``: beside ``arena_tool/`` in a checkout or editable install,
    else under ``<prefix>/share/arena/boards`` (wheel install)."""
    here = Path(__file__).resolve().parents[2] / "boards"
    if here.is_dir():
        return here
    return Path(sys.prefix) / "share" / "arena" / "boards"


def board_dirs(project_dirs: list[str] | tuple[str, ...] = ()) -> list[str]:
    """Search order: the project's board folders first, then the shipped ones."""
    return [str(d) for d in project_dirs] + [str(default_board_dir())]


def list_boards(search_dirs: list[str] | None = None) -> list[str]:
    """Sorted names of every ``<name>.yaml`` in the search folders."""
    dirs = board_dirs() if search_dirs is None else search_dirs
    names: set[str] = set()
    for folder in dirs:
        path = Path(folder)
        if path.is_dir():
            names.update(p.stem for p in path.glob("*.yaml") if _NAME_RE.fullmatch(p.stem))
    return sorted(names)


def find_board_file(name: str, search_dirs: list[str] | None = None) -> Path:
    """The first ``<name>.yaml`` along the search folders; ArenaError if none."""
    dirs = board_dirs() if search_dirs is None else search_dirs
    if not isinstance(name, str) or not _NAME_RE.fullmatch(name):
        raise ArenaError(f"invalid board name {name!r}",
                         hint="board names use lower-case letters, digits and '_' (like nucleo_f746)")
    for folder in dirs:
        candidate = Path(folder) / f"{name}.yaml"
        if candidate.is_file():
            return candidate
    known = list_boards(dirs)
    hint = did_you_mean(name, known) + "known boards: " + (", ".join(known) or "none")
    raise ArenaError(f"unknown board '{name}'", hint=hint)


def load_board(name: str, search_dirs: list[str] | None = None) -> Board:
    """Find, parse, schema-check and cross-check ``<name>.yaml``."""
    return load_board_file(str(find_board_file(name, search_dirs)))


def load_board_file(path: str) -> Board:
    """Parse and check one board file (its name must match the file name)."""
    doc = yamlio.load(path)
    yamlio.validate(doc, "board", path)
    data: dict[str, Any] = doc.data
    stem = Path(path).stem
    if data["name"] != stem:
        raise doc.error(f"board name '{data['name']}' does not match the file name {Path(path).name}",
                        ("name",), at_value=True, hint=f"use 'name: {stem}' or rename the file")

    def size(value: Any, where: tuple[Any, ...]) -> int:
        try:
            return parse_size(value)
        except ArenaError as exc:
            raise doc.locate(exc, where, at_value=True) from exc

    def address(value: Any, where: tuple[Any, ...]) -> int:
        number = int(value.replace("_", ""), 16) if isinstance(value, str) else int(value)
        if number >= _ADDRESS_SPACE:
            raise doc.error(f"address {number:#x} is outside the 32-bit address space", where, at_value=True)
        if number % _ORIGIN_ALIGN:
            what = "flash" if where[0] == "flash" else f"region '{data[where[0]][where[1]]['name']}'"
            down = number - number % _ORIGIN_ALIGN
            raise doc.error(f"{what} origin {number:#010x} is not {_ORIGIN_ALIGN}-byte aligned", where,
                            at_value=True, hint=f"memory regions start on a {_ORIGIN_ALIGN}-byte boundary; "
                                                f"check the memory map (did you mean {down:#010x}?)")
        return number

    c = data["cpu"]
    cpu = Cpu(core=c["core"], fpu=c["fpu"], float_abi=c["float_abi"],
              clock_hz=c.get("clock_hz"), irqs=c.get("irqs"))
    if cpu.fpu == "none" and cpu.float_abi == "hard":
        raise doc.error("float_abi 'hard' needs an FPU, but fpu is 'none'", ("cpu", "float_abi"),
                        at_value=True, hint="use 'float_abi: soft'")
    _check_fpu(doc, cpu)
    f = data["flash"]
    flash = _flash(f.get("name", "FLASH"), address(f["origin"], ("flash", "origin")),
                   size(f["length"], ("flash", "length")), f.get("note", ""))
    ram = []
    for i, r in enumerate(data["ram"]):
        ram.append(Region(
            name=r["name"], origin=address(r["origin"], ("ram", i, "origin")),
            length=size(r["length"], ("ram", i, "length")), zero_wait=r["zero_wait"],
            cacheable=r["cacheable"], dma=r["dma"], executable=r["executable"],
            speed=r.get("speed"), needs_init=r.get("needs_init"), note=r.get("note", ""),
        ))
    external = [_external(x["name"], address(x["origin"], ("external_flash", i, "origin")),
                          size(x["length"], ("external_flash", i, "length")), x.get("needs_init"), x.get("note", ""))
                for i, x in enumerate(data.get("external_flash") or ())]
    _check_regions(doc, flash, ram, external)
    names = [r.name for r in ram]
    for key in ("default_region", "data_region"):
        if key in data and data[key] not in names:
            raise doc.error(f"{key} '{data[key]}' is not a RAM region of this board", (key,), at_value=True,
                            hint=did_you_mean(data[key], names, cutoff=0.5) + "expected one of: " + ", ".join(names))
    data_region = data.get("data_region", data["default_region"])
    if ram[names.index(data_region)].needs_init:
        key = "data_region" if "data_region" in data else "default_region"
        raise doc.error(f"region '{data_region}' needs startup code before use, so it cannot hold "
                        ".data, .bss and the stack", (key,), at_value=True,
                        hint="set data_region to a region usable at reset")
    return Board(name=data["name"], description=data["description"], source=data["source"], cpu=cpu,
                 flash=flash, ram=tuple(ram), default_region=data["default_region"],
                 data_region=data_region, qemu=data.get("qemu"), note=data.get("note", ""), file=path,
                 uart=Uart.from_json(data["uart"]) if "uart" in data else None, flash_command=_flash_command(doc, f),
                 external_flash=tuple(external))


FLASH_PLACEHOLDERS = ("{elf}", "{hex}")


def _flash_command(doc: yamlio.Doc, flash: Mapping[str, Any]) -> str | None:
    """flash.command as written; it must name the firmware it programs ({elf} or {hex}, replaced
    by the validation firmware's path when arena-tool validate runs it) and split as a command line."""
    import shlex

    cmd = flash.get("command")
    if cmd is None:
        return None
    example = "openocd -f board/st_nucleo_f7.cfg -c \"program {elf} verify reset exit\""
    if not any(p in cmd for p in FLASH_PLACEHOLDERS):
        raise doc.error("flash.command names no firmware: it must hold {elf} or {hex}, where arena puts the "
                        "path of the ELF (or Intel hex) it programs", ("flash", "command"), at_value=True,
                        hint=f"like {example}")
    try:
        words = shlex.split(cmd)
    except ValueError as e:
        raise doc.error(f"flash.command does not split into words: {e}", ("flash", "command"), at_value=True,
                        hint=f"quote as a shell would, like {example}") from None
    if not words:
        raise doc.error("flash.command is empty", ("flash", "command"), at_value=True, hint=f"like {example}")
    return str(cmd)


def _check_fpu(doc: yamlio.Doc, cpu: Cpu) -> None:
    """The core can have this FPU: a cortex-m0 with hard floats builds nothing that runs."""
    allowed = FPUS.get(cpu.core)
    if allowed is None or cpu.fpu in allowed:
        return
    if allowed == ("none",):
        hint = "use 'fpu: none' and 'float_abi: soft'"
        msg = f"core {cpu.core} has no FPU, but fpu is '{cpu.fpu}'"
    else:
        hint = "expected one of: " + ", ".join(allowed)
        msg = f"core {cpu.core} cannot have FPU '{cpu.fpu}'"
    raise doc.error(msg, ("cpu", "fpu"), at_value=True, hint=hint)


def _check_regions(doc: yamlio.Doc, flash: Region, ram: list[Region], external: list[Region]) -> None:
    """Unique names, non-empty, inside 4 GiB, no overlaps (flash and external flash included);
    ``flash`` is no region's name (``weights: flash`` means the internal flash)."""
    seen: dict[str, str] = {flash.name: "the flash"}
    listed = [("ram", i, r) for i, r in enumerate(ram)] + [("external_flash", i, r) for i, r in enumerate(external)]
    for key, i, region in listed:
        if region.name in seen or region.name == "flash":
            other = seen.get(region.name, "weights: flash (the internal flash)")
            raise doc.error(f"region name '{region.name}' is already used by {other}", (key, i, "name"),
                            at_value=True, hint="give every region a unique name")
        seen[region.name] = f"{key}[{i}]"
        if region.length == 0:
            raise doc.error(f"region '{region.name}' has length 0", (key, i, "length"), at_value=True)
        if region.end > _ADDRESS_SPACE:
            raise doc.error(f"region '{region.name}' ends at {region.end:#x}, past the 32-bit address space",
                            (key, i, "length"), at_value=True)
    if flash.length == 0 or flash.end > _ADDRESS_SPACE:
        raise doc.error("flash must be non-empty and inside the 32-bit address space", ("flash", "length"),
                        at_value=True)
    spans = [(flash.origin, ("flash",), flash)] + [(r.origin, (key, i), r) for key, i, r in listed]
    spans.sort(key=lambda s: (s[0], s[1]))
    for (_, _, a), (_, j, b) in zip(spans, spans[1:]):
        if b.origin < a.end:
            where = (*j, "origin")
            raise doc.error(
                f"region '{b.name}' [{b.origin:#010x}, {b.end:#010x}) overlaps "
                f"'{a.name}' [{a.origin:#010x}, {a.end:#010x})",
                where, at_value=True, hint="fix origin or length (aliases of the same memory are one region)",
            )
