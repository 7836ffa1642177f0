"""The runtime's code per kernel, measured by compiling: arena_tool/runtime/code_size.json.

The gate counts a board's flash before the link: weights, tables (emit.table_bytes) and the
runtime code its models run. That code depends on the core's flags, the level and the kernels
``arena_kernels`` holds; this module compiles the runtime once per core of the shipped boards
and level, links it with ``--gc-sections`` from ``arena_run`` with an empty kernel table (the
*base*: dispatch, bounds, the math the runtime always keeps), then once per kernel with only
that kernel, and once with the tile loop (``arena_run_tiles``), and records each link's
functions beyond the base (name, bytes), the runtime's own (not the C library's). emit.code_size
adds up the union of the functions of a board's kernels, so code two kernels share counts once.

    python3 -m arena_tool.run.code_size      # rewrite the table (about two minutes)
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from arena_tool.core.files import write_atomic
from arena_tool.emit import code_size
from arena_tool.model import optable
from arena_tool.target import boards, flags

RUNTIME = Path(__file__).resolve().parent.parent / "runtime"
CC = "arm-none-eabi-gcc"


def _defined(objects: list[str]) -> set[str]:
    """The functions the runtime's objects define (the C library's, such as memcpy, are the
    application's: its startup code may bring its own)."""
    from elftools.elf.elffile import ELFFile
    from elftools.elf.sections import SymbolTableSection

    out: set[str] = set()
    for path in objects:
        with open(path, "rb") as f:
            for sec in ELFFile(f).iter_sections():
                if isinstance(sec, SymbolTableSection):
                    out.update(sym.name for sym in sec.iter_symbols()
                               if sym["st_info"]["type"] == "STT_FUNC" and sym["st_shndx"] != "SHN_UNDEF")
    return out


def _functions(elf: Path) -> dict[str, int]:
    from elftools.elf.elffile import ELFFile
    from elftools.elf.sections import SymbolTableSection

    out: dict[str, int] = {}
    with open(elf, "rb") as f:
        for sec in ELFFile(f).iter_sections():
            if isinstance(sec, SymbolTableSection):
                for sym in sec.iter_symbols():
                    if sym["st_info"]["type"] == "STT_FUNC" and sym["st_size"]:
                        out[f"{sym.name}:{sym['st_size']}"] = int(sym["st_size"])
    return out


def measure(cpu: tuple[str, ...], level: str, work: Path) -> dict[str, Any]:
    """One core's and level's table entry: base functions, and per kernel (and ``tiles``) the
    functions its link adds to the base."""
    cflags = [*cpu, *flags.cflags(level)]
    objects = []
    for src in sorted(RUNTIME.glob("*.c")):
        obj = work / f"{src.stem}.o"
        subprocess.run([CC, *cflags, f"-I{RUNTIME}", "-c", str(src), "-o", str(obj)], check=True,
                       capture_output=True, text=True)
        objects.append(str(obj))

    def link(name: str, kernels: list[tuple[str, str]], extra: tuple[str, ...] = ()) -> dict[str, int]:
        table = work / f"{name}.c"
        rows = "".join(f"[{enum}] = {kernel}, " for enum, kernel in kernels) or "0"
        table.write_text('#include "arena_kernels.h"\nconst arena_kernel_t arena_kernels[ARENA_OP_COUNT] = '
                         f"{{{rows}}};\n")
        elf = work / f"{name}.elf"
        subprocess.run([CC, *cflags, f"-I{RUNTIME}", str(table), *objects, *flags.LINKFLAGS, "-Wl,-e,arena_run",
                        *extra, *(f"-l{lib}" for lib in flags.LIBS), "-o", str(elf)], check=True,
                       capture_output=True, text=True)
        return _functions(elf)

    own = _defined(objects)
    base = {k: v for k, v in link("base", []).items() if k.rsplit(":", 1)[0] in own}
    entry: dict[str, Any] = {"base": base, "kernels": {}}
    kernels: dict[str, str] = {}
    for r in optable.RUNTIME:
        kernels.setdefault(r.kernel, r.enum)
    for kernel, enum in sorted(kernels.items()):
        got = link(kernel, [(enum, kernel)])
        entry["kernels"][kernel] = {k: v for k, v in sorted(got.items()) if k not in base and k.rsplit(":", 1)[0] in own}
    got = link("tiles", [], ("-Wl,-u,arena_run_tiles",))
    entry["tiles"] = {k: v for k, v in sorted(got.items()) if k not in base and k.rsplit(":", 1)[0] in own}
    return entry


def main() -> int:
    cpus = sorted({tuple(b.cpu.gcc_flags()) for b in (boards.load_board(n) for n in boards.list_boards())})
    doc: dict[str, Any] = {"format_version": 1, "compiler": subprocess.run(
        [CC, "-dumpversion"], capture_output=True, text=True, check=True).stdout.strip(), "entries": {}}
    for cpu in cpus:
        for level in flags.LEVELS:
            with tempfile.TemporaryDirectory(prefix="arena-code-size-") as d:
                doc["entries"][code_size.key(cpu, level)] = measure(cpu, level, Path(d))
            sys.stdout.write(f"{code_size.key(cpu, level)}\n")
    write_atomic(str(code_size.TABLE), json.dumps(doc, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
