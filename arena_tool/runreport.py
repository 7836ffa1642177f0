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
from typing import Any

import numpy as np

from arena_tool.errors import ArenaError
from arena_tool.schema import check_json, write_atomic

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


@dataclasses.dataclass(frozen=True)
class ElfSizes:
    """flash/ram: bytes; sections: the allocated, non-empty sections in file order."""

    flash: int
    ram: int
    sections: tuple[Section, ...]


def elf_sizes(elf_path: str) -> ElfSizes:
    """Flash and RAM bytes of a linked ELF (see the module docstring)."""
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
            out.append(Section(name, addr, size, stype != "SHT_NOBITS", bool(flags & SHF_WRITE)))
    return ElfSizes(sum(s.size for s in out if s.flash), sum(s.size for s in out if s.ram), tuple(out))


_TABLE_SYMBOL = re.compile(r"_(c_.+|tensors|ops|op\d+_(in|out)|inputs|outputs|model)$")


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


def instructions(ticks: int, clock_hz: int, shift: int = ICOUNT_SHIFT) -> int:
    """Instructions that took `ticks` SysTick ticks at `clock_hz` under -icount shift=`shift`."""
    return round(ticks * 1_000_000_000 / (clock_hz * (1 << shift)))


def _value(v: Any) -> float | int | None:
    if isinstance(v, (np.floating, float)):
        f = float(v)
        return f if math.isfinite(f) else None
    return int(v)


def build(board: str, machine: str, elf_path: str, exit_status: int, output: str, clock_hz: int | None,
          arena_doc: dict[str, Any] | None) -> dict[str, Any]:
    """The run report document of one QEMU run (validated when written)."""
    from arena_tool import verify

    if not clock_hz:
        raise ArenaError(f"board {board} has no cpu.clock_hz: it is needed to turn SysTick ticks into "
                         "instructions", field="cpu.clock_hz",
                         hint="add the SysTick clock QEMU models for the machine (mps2: 25000000)")

    run = verify.parse_output(output)
    sizes = elf_sizes(elf_path)
    uses = {m["name"]: m for m in (arena_doc or {}).get("models", [])}
    names = list(uses) or list(run.status)
    names += [n for n in run.status if n not in names]
    flash = model_flash(elf_path, names)
    per_tick = 1_000_000_000 / (clock_hz * (1 << ICOUNT_SHIFT))
    models = []
    for name in names:
        use = uses.get(name, {})
        ticks = run.ticks.get(name)
        outs = [{"name": t, "dtype": str(v.dtype), "values": [_value(x) for x in v.tolist()]}
                for t, v in sorted(run.outputs.get(name, {}).items())]
        models.append({
            "name": name, "status": run.status.get(name), "arena_size": use.get("arena_size"),
            "lower_bound": use.get("lower_bound"), "planner": use.get("planner"), "tables_flash": flash[name],
            "ticks": ticks, "instructions": instructions(ticks, clock_hz) if ticks is not None else None,
            "outputs": outs,
        })
    cal = None
    if run.calibration is not None:
        loop, ticks = run.calibration
        cal = {"loop_instructions": loop, "ticks": ticks,
               "instructions_per_tick": round(loop / ticks, 3) if ticks else None}
    return {
        "format_version": FORMAT_VERSION, "board": board, "machine": machine,
        "elf": elf_path.replace("\\", "/"), "exit_status": exit_status,
        "icount_shift": ICOUNT_SHIFT, "systick_hz": clock_hz, "instructions_per_tick": per_tick,
        "resolution": math.ceil(per_tick), "calibration": cal,
        "flash": sizes.flash, "ram": sizes.ram,
        "arena_size": (arena_doc or {}).get("arena_size"),
        "sections": [{"name": s.name, "addr": s.addr, "size": s.size, "flash": s.flash, "ram": s.ram}
                     for s in sizes.sections],
        "models": models,
    }


def write(path: str, doc: dict[str, Any]) -> None:
    """Validate against schemas/run_report.schema.json, then write atomically."""
    check_json(doc, "run_report", path)
    write_atomic(path, json.dumps(doc, indent=2, sort_keys=False) + "\n")


def read(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as f:
            doc: dict[str, Any] = json.load(f)
    except (OSError, ValueError) as e:
        raise ArenaError(f"cannot read the run report: {e}", file=path) from e
    check_json(doc, "run_report", path)
    return doc


def _n(v: int | None) -> str:
    return "-" if v is None else f"{v:,}"


def table(doc: dict[str, Any]) -> str:
    """The per-model table printed at the end of ``scons ... run``."""
    head = ("model", "status", "arena B", "lower bound B", "tables flash B", "instructions")
    rows = [(m["name"], "-" if m["status"] is None else str(m["status"]), _n(m["arena_size"]),
             _n(m["lower_bound"]), _n(m["tables_flash"]), _n(m["instructions"])) for m in doc["models"]]
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]

    def fmt(r: tuple[str, ...]) -> str:
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))

    title = (f"arena: run {doc['board']} (qemu -M {doc['machine']} -icount shift={doc['icount_shift']}): "
             f"ELF flash {doc['flash']:,} B, RAM {doc['ram']:,} B, exit status {doc['exit_status']}")
    lines = [title, "  " + fmt(head)]
    lines += ["  " + fmt(r) for r in rows]
    cal = doc.get("calibration")
    lines.append(f"  instructions = SysTick ticks x {doc['instructions_per_tick']:g} "
                 f"(+-{doc['resolution']})" + (f"; calibration loop {cal['loop_instructions']:,} instructions"
                                               f" = {cal['ticks']:,} ticks" if cal else ""))
    return "\n".join(lines)
