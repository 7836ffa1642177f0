"""The firmware's run under QEMU, as numbers: build/<board>/run_report.json.

``scons board=mps2_an500 run`` (and any board with a QEMU machine) runs the
ELF with ``-icount shift=0`` and writes, per board (schemas/run_report.schema.json):

- the ELF's flash and RAM (pyelftools section headers, the same sizes
  ``arm-none-eabi-size -A`` lists): flash = every allocated section with
  contents (vectors, .text, .rodata, the load image of .data); RAM = every
  allocated writable section (.data, .bss, .arena, the stack/heap reserve);
- per model: the arena and lower bound (from the board's arena_report.json),
  the flash its generated tables take (the sizes of its ``<model>_*``
  symbols: constants, tensor table, op list), its status, its outputs, and
  its instructions per inference.

Instructions per inference. main.c times each ``arena_run`` with SysTick on
the processor clock (CLKSOURCE = 1), which QEMU's mps2 machines drive at
25 MHz (hw/arm/mps2.c; the board file's ``cpu.clock_hz``). With
``-icount shift=S`` QEMU's virtual clock advances exactly 2^S ns per guest
instruction, so ``ticks = floor(instructions * 2^S * clock_hz / 1e9)`` and

    instructions = ticks * 1e9 / (clock_hz * 2^S)    (40 per tick at 25 MHz, S = 0)

to within one tick (``resolution`` instructions) plus the few instructions of
the timer reads. The firmware checks the constant itself: before the models it
times a loop of a known instruction count (``calibrate N ticks T``), and the
report keeps both numbers so a reader can see they agree.

The document holds no times or absolute paths (deterministic for the same ELF).
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Mapping

import numpy as np

from arena_tool.core.errors import ArenaError
from arena_tool.core.files import write_atomic
from arena_tool.core.schema import check_json
from arena_tool.run import verify

if TYPE_CHECKING:
    from arena_tool.builder.board_report import BoardReport

FORMAT_VERSION = 1
ICOUNT_SHIFT = 0
SHF_WRITE = 0x1
SHF_ALLOC = 0x2


@dataclasses.dataclass(frozen=True)
class Section:
    name: str
    addr: int
    size: int
    flash: bool  # occupies flash (allocated, with contents)
    ram: bool  # occupies RAM (allocated, writable)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "addr": self.addr, "size": self.size, "flash": self.flash, "ram": self.ram}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Section:
        return cls(str(doc["name"]), int(doc["addr"]), int(doc["size"]), bool(doc["flash"]), bool(doc["ram"]))


@dataclasses.dataclass(frozen=True)
class ElfSizes:
    """flash/ram: bytes; sections: the allocated, non-empty sections in file order."""

    flash: int
    ram: int
    sections: tuple[Section, ...]


def elf_sizes(elf_path: str, external: Sequence[tuple[int, int]] = ()) -> ElfSizes:
    """Flash and RAM bytes of a linked ELF (see the module docstring). external: [start, end) of
    each external flash (weights read in place there): sections inside one count as neither."""
    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile

    try:
        with open(elf_path, "rb") as f:
            secs = [(s.name, s["sh_addr"], s["sh_size"], s["sh_flags"], s["sh_type"])
                    for s in ELFFile(f).iter_sections()]
    except (OSError, ELFError) as e:
        raise ArenaError(f"cannot read the ELF: {e}", file=elf_path) from e
    out = []
    for name, addr, size, flags, stype in secs:
        if flags & SHF_ALLOC and size:
            inside = any(a <= addr and addr + size <= b for a, b in external)
            out.append(Section(name, addr, size, stype != "SHT_NOBITS" and not inside,
                               bool(flags & SHF_WRITE) and not inside))
    return ElfSizes(sum(s.size for s in out if s.flash), sum(s.size for s in out if s.ram), tuple(out))


# a model's generated symbols: arena's tables, or with runtime tflm its planned flatbuffer (<model>_tflite)
_TABLE_SYMBOL = re.compile(r"_(c_.+|tensors|ops|op\d+_(in|out)|inputs|outputs|model|tflite)$")


def model_flash(elf_path: str, symbols: Sequence[str]) -> dict[str, int]:
    """Bytes of each model's generated tables in the ELF: the sizes of the symbols codegen
    names ``<symbol>_...``; a symbol belongs to the longest model symbol that prefixes it."""
    from elftools.elf.elffile import ELFFile
    from elftools.elf.sections import SymbolTableSection

    lower = sorted({s.lower() for s in symbols}, key=lambda s: (-len(s), s))
    sizes = {s: 0 for s in lower}
    seen: set[tuple[str, int]] = set()
    with open(elf_path, "rb") as f:
        for sec in ELFFile(f).iter_sections():
            if not isinstance(sec, SymbolTableSection):
                continue
            for sym in sec.iter_symbols():
                if sym["st_info"]["type"] != "STT_OBJECT" or not sym["st_size"]:
                    continue
                key = (sym.name, sym["st_value"])
                for m in lower:
                    if sym.name.startswith(m) and _TABLE_SYMBOL.fullmatch(sym.name[len(m):]) and key not in seen:
                        seen.add(key)
                        sizes[m] += int(sym["st_size"])
                        break
    return {s: sizes[s.lower()] for s in symbols}


def table_bytes(object_path: str, symbol: str) -> int:
    """Flash bytes of one model's compiled tables besides its weights: the object's allocated
    sections (the load image of writable ones too), less the sections of its constants' arrays
    (``<symbol>_c_*``, each in its own section under -fdata-sections)."""
    from elftools.elf.constants import SH_FLAGS
    from elftools.elf.elffile import ELFFile
    from elftools.elf.sections import SymbolTableSection

    prefix = f"{symbol.lower()}_c_"
    with open(object_path, "rb") as f:
        elf = ELFFile(f)
        weights = {int(sym["st_shndx"]) for sec in elf.iter_sections() if isinstance(sec, SymbolTableSection)
                   for sym in sec.iter_symbols()
                   if sym.name.startswith(prefix) and sym["st_info"]["type"] == "STT_OBJECT"
                   and isinstance(sym["st_shndx"], int)}
        return sum(int(sec["sh_size"]) for i, sec in enumerate(elf.iter_sections())
                   if sec["sh_flags"] & SH_FLAGS.SHF_ALLOC and sec["sh_type"] != "SHT_NOBITS" and i not in weights)


def instructions(ticks: int, clock_hz: int, shift: int = ICOUNT_SHIFT) -> int:
    """Instructions that took `ticks` SysTick ticks at `clock_hz` under -icount shift=`shift`."""
    return round(ticks * 1_000_000_000 / (clock_hz * (1 << shift)))


def _value(v: Any) -> float | int | None:
    if isinstance(v, (np.floating, float)):
        f = float(v)
        return f if math.isfinite(f) else None
    return int(v)


@dataclasses.dataclass(frozen=True)
class Output:
    """One graph output of a model as the firmware printed it; None: NaN or infinite."""

    name: str
    dtype: str
    values: tuple[float | int | None, ...]

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "dtype": self.dtype, "values": list(self.values)}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Output:
        return cls(str(doc["name"]), str(doc["dtype"]), tuple(doc["values"]))


@dataclasses.dataclass(frozen=True)
class ModelRun:
    """One model of the run: arena_size/lower_bound/planner from the board's report (None without
    one); status None when it never finished; tables_flash in bytes; instructions per inference."""

    name: str
    status: int | None
    arena_size: int | None
    lower_bound: int | None
    planner: str | None
    tables_flash: int
    ticks: int | None
    instructions: int | None
    outputs: tuple[Output, ...]

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "status": self.status, "arena_size": self.arena_size,
                "lower_bound": self.lower_bound, "planner": self.planner, "tables_flash": self.tables_flash,
                "ticks": self.ticks, "instructions": self.instructions, "outputs": [o.to_json() for o in self.outputs]}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> ModelRun:
        return cls(name=str(doc["name"]), status=doc["status"], arena_size=doc["arena_size"],
                   lower_bound=doc["lower_bound"], planner=doc["planner"], tables_flash=int(doc["tables_flash"]),
                   ticks=doc["ticks"], instructions=doc["instructions"],
                   outputs=tuple(Output.from_json(o) for o in doc["outputs"]))


@dataclasses.dataclass(frozen=True)
class Calibration:
    """The firmware's timed loop of a known instruction count (``calibrate N ticks T``)."""

    loop_instructions: int
    ticks: int

    @property
    def instructions_per_tick(self) -> float | None:
        return round(self.loop_instructions / self.ticks, 3) if self.ticks else None

    def to_json(self) -> dict[str, Any]:
        return {"loop_instructions": self.loop_instructions, "ticks": self.ticks,
                "instructions_per_tick": self.instructions_per_tick}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Calibration:
        return cls(int(doc["loop_instructions"]), int(doc["ticks"]))


@dataclasses.dataclass(frozen=True)
class RunReport:
    """build/<board>/run_report.json (schemas/run_report.schema.json). Sizes in bytes;
    ``instructions_per_tick`` and ``resolution`` derive from systick_hz and icount_shift."""

    board: str
    machine: str
    elf: str
    exit_status: int
    systick_hz: int
    calibration: Calibration | None
    flash: int
    ram: int
    arena_size: int | None
    sections: tuple[Section, ...]
    models: tuple[ModelRun, ...]
    icount_shift: int = ICOUNT_SHIFT

    @property
    def instructions_per_tick(self) -> float:
        return 1_000_000_000 / (self.systick_hz * (1 << self.icount_shift))

    @property
    def resolution(self) -> int:
        return math.ceil(self.instructions_per_tick)

    def to_json(self) -> dict[str, Any]:
        return {
            "format_version": FORMAT_VERSION, "board": self.board, "machine": self.machine, "elf": self.elf,
            "exit_status": self.exit_status, "icount_shift": self.icount_shift, "systick_hz": self.systick_hz,
            "instructions_per_tick": self.instructions_per_tick, "resolution": self.resolution,
            "calibration": None if self.calibration is None else self.calibration.to_json(),
            "flash": self.flash, "ram": self.ram, "arena_size": self.arena_size,
            "sections": [s.to_json() for s in self.sections], "models": [m.to_json() for m in self.models],
        }

    @classmethod
    def from_json(cls, doc: Mapping[str, Any], path: str = "<run report>") -> RunReport:
        """The run report in ``doc``, once it is valid against the schema (else ArenaError naming ``path``)."""
        check_json(doc, "run_report", path)
        cal = doc["calibration"]
        return cls(board=str(doc["board"]), machine=str(doc["machine"]), elf=str(doc["elf"]),
                   exit_status=int(doc["exit_status"]), systick_hz=int(doc["systick_hz"]),
                   calibration=None if cal is None else Calibration.from_json(cal), flash=int(doc["flash"]),
                   ram=int(doc["ram"]), arena_size=doc["arena_size"],
                   sections=tuple(Section.from_json(x) for x in doc["sections"]),
                   models=tuple(ModelRun.from_json(m) for m in doc["models"]), icount_shift=int(doc["icount_shift"]))


def build(board: str, machine: str, elf_path: str, exit_status: int, output: str, clock_hz: int | None,
          arena: BoardReport | None) -> RunReport:
    """The run report of one QEMU run (validated when written); arena: the board's report, if any."""
    if not clock_hz:
        raise ArenaError(f"board {board} has no cpu.clock_hz: it is needed to turn SysTick ticks into "
                         "instructions", field="cpu.clock_hz",
                         hint="add the SysTick clock QEMU models for the machine (mps2: 25000000)")

    run = verify.parse_output(output)
    sizes = elf_sizes(elf_path, [(r.origin, r.origin + r.length) for r in (arena.regions if arena else ()) if r.in_place])
    uses = {m.name: m for m in (arena.models if arena is not None else ())}
    names = list(uses) or list(run.status)
    names += [n for n in run.status if n not in names]
    flash = model_flash(elf_path, names)
    models = []
    for name in names:
        use = uses.get(name)
        ticks = run.ticks.get(name)
        outs = tuple(Output(t, str(v.dtype), tuple(_value(x) for x in v.tolist()))
                     for t, v in sorted(run.outputs.get(name, {}).items()))
        models.append(ModelRun(
            name=name, status=run.status.get(name), arena_size=None if use is None else use.arena_size,
            lower_bound=None if use is None else use.lower_bound, planner=None if use is None else use.planner,
            tables_flash=flash[name], ticks=ticks,
            instructions=instructions(ticks, clock_hz) if ticks is not None else None, outputs=outs))
    cal = None if run.calibration is None else Calibration(*run.calibration)
    return RunReport(board=board, machine=machine, elf=elf_path.replace("\\", "/"), exit_status=exit_status,
                     systick_hz=clock_hz, calibration=cal, flash=sizes.flash, ram=sizes.ram,
                     arena_size=None if arena is None else arena.arena_size, sections=sizes.sections,
                     models=tuple(models))


def write(path: str, rep: RunReport) -> None:
    """Validate against schemas/run_report.schema.json, then write atomically."""
    doc = rep.to_json()
    check_json(doc, "run_report", path)
    write_atomic(path, json.dumps(doc, indent=2, sort_keys=False) + "\n")


def read(path: str) -> RunReport:
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        raise ArenaError(f"cannot read the run report: {e}", file=path) from e
    return RunReport.from_json(doc, path)


def _n(v: int | None) -> str:
    return "-" if v is None else f"{v:,}"


def table(rep: RunReport) -> str:
    """The per-model table printed at the end of ``scons ... run``."""
    head = ("model", "status", "arena B", "lower bound B", "tables flash B", "instructions")
    rows = [(m.name, "-" if m.status is None else str(m.status), _n(m.arena_size),
             _n(m.lower_bound), _n(m.tables_flash), _n(m.instructions)) for m in rep.models]
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]

    def fmt(r: tuple[str, ...]) -> str:
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))

    title = (f"arena: run {rep.board} (qemu -M {rep.machine} -icount shift={rep.icount_shift}): "
             f"ELF flash {rep.flash:,} B, RAM {rep.ram:,} B, exit status {rep.exit_status}")
    lines = [title, "  " + fmt(head)]
    lines += ["  " + fmt(r) for r in rows]
    cal = rep.calibration
    lines.append(f"  instructions = SysTick ticks x {rep.instructions_per_tick:g} "
                 f"(+-{rep.resolution})" + (f"; calibration loop {cal.loop_instructions:,} instructions"
                                            f" = {cal.ticks:,} ticks" if cal else ""))
    return "\n".join(lines)
