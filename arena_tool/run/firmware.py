"""One model's firmware, built and run: on the host with gcc, or for a QEMU board (``arena-tool run``).

The firmware is the example application (``arena_tool/runtime/example``: main.c, startup.c)
over the C runtime and the tables ``codegen`` generates for one planned model. Two builds:

* ``host``: the same C compiled natively by ``gcc`` (``HOST_CFLAGS``) and run as a process;
  its exit status is main's. No flash, RAM or instruction counts.
* a board with a ``qemu`` machine (mps2_an385, mps2_an386, mps2_an500): the firmware a project build
  (SCons) makes of this one model on that board (``board_firmware``: the build graph of a
  one-board manifest, the board's default region and a manifest's default stack reserve,
  ``STACK``; -O2 or ``--optimize``'s level), the same objects and ELF byte for byte, run
  under ``qemu-system-arm -icount shift=0``. Flash and RAM come from the ELF's section headers,
  instructions per inference from main.c's SysTick ticks (x 40 on the mps2 machines; see
  arena_tool/run/runreport.py).

Inputs. Without a table the example fills each graph input with ``verify.input_pattern``.
``input_source`` writes ``arena_inputs`` (main.c's weak table), so the firmware copies exactly
the given arrays (an ``--input`` npz, or ``random_inputs``); onnxruntime gets the same arrays
(``reference``) and ``compare`` measures each output against it:

* float32: max absolute error within ``RTOL`` (1e-4) of the output's largest magnitude;
* integer outputs: within one quantization step (1);
* a float output a DequantizeLinear makes (a quantized model's dequantized output): within
  one step of its scale.

``run`` is the whole pipeline for ``arena-tool run`` (the CLI only parses arguments); the
report it writes follows schemas/run.schema.json and holds no times or temporary paths.
The lower-level pieces (``generate``, ``build_host``, ``run_host``, ``build_elf``: a firmware of
the caller's flags, ``build_graph.firmware``) are what the benches and tests/fwbuild.py build
with. Every build is build-graph nodes run by the graph's executor (``builder.execute``: the
runtime's objects compiled once per machine and flags); compiler failures propagate as
``subprocess.CalledProcessError``, and ``run`` turns them into an arena bug (exit 3).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import io
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence, TextIO

import numpy as np

import arena_tool
from arena_tool.builder import build_graph, execute
from arena_tool.target import boards, flags, toolchain
from arena_tool.core.errors import EXIT_BUG, EXIT_CHECK_FAILED, EXIT_OK, ArenaError, did_you_mean
from arena_tool.core.files import project_path, write_atomic
from arena_tool.target.manifest import DEFAULT_STACK
from arena_tool.run.verify import NUMPY_TYPES
from arena_tool.core.schema import check_json
from arena_tool.emit import codegen, runtime_support, linker, tileloop
from arena_tool.model import liveness, lowering, macs, tflite_model
from arena_tool.plan import plancheck, planfile, planners, planning, split_arena
from arena_tool.run import qemu, runreport, tflm_host, verify
from arena_tool.run.reference import (RTOL as RTOL, Comparison as Comparison, IntegerIO as IntegerIO,
                                     TensorSpec as TensorSpec, _e, compare as compare, dequantize as dequantize,
                                     graph_specs as graph_specs, load_inputs as load_inputs, ort_refuses as ort_refuses,
                                     quant_step as quant_step, quantize as quantize, random_inputs as random_inputs,
                                     reference as reference, reference_session as reference_session)
from arena_tool.emit.linker_fragment import RegionUse
from arena_tool.target.manifest_data import BoardOptions, BoardTarget, Budget, ModelSpec, target_doc

if TYPE_CHECKING:
    from arena_tool.target.boards import Board
    from arena_tool.emit.runtime_support import Gap
    from arena_tool.model.lowering import Boundary, Lowered
    from arena_tool.plan.planfile import PlanFile
    from arena_tool.core.problem import ModelOptions

HOST = "host"
RUNTIME = Path(arena_tool.runtime_dir())
APP = RUNTIME / "example"  # main.c, startup.c, semihost.h
STACK = DEFAULT_STACK  # a manifest's default stack reserve, as a SCons build has it
# the flag policy's (arena_tool.target.flags), at their default levels
HOST_CFLAGS = flags.host_cflags()
TARGET_CFLAGS = flags.cflags()
TARGET_LDFLAGS = flags.LINKFLAGS
TARGET_LIBS = tuple(f"-l{lib}" for lib in flags.LIBS)
PROFILE_FLAG = "-DARENA_PROFILE"  # arena_run's per-op hook (arena_kernels.h), main.c's SysTick per op
TIMEOUT = 120.0
FORMAT_VERSION = 1
_BITS = {"float32": ("uint32_t", np.uint32, 8), "int32": ("uint32_t", np.uint32, 8),
         "int8": ("uint8_t", np.uint8, 2), "uint8": ("uint8_t", np.uint8, 2),
         "int64": ("uint64_t", np.uint64, 16)}
BUG_HINT = "this is an arena bug; please report it with the command and the model"


# --- boards and tools ---------------------------------------------------------------------

def emulated_boards() -> list[str]:
    """The shipped boards QEMU can run (a ``qemu`` machine in their board file), sorted."""
    out = []
    for name in boards.list_boards():
        try:
            if boards.load_board(name).qemu:
                out.append(name)
        except ArenaError:
            continue
    return out


def _runnable_hint() -> str:
    return f"boards that run: {', '.join([HOST, *emulated_boards()])}"


def resolve_board(name: str) -> Board | None:
    """The Board to run on, or None for ``host``; ArenaError (exit 2) for an unknown board or
    one QEMU cannot emulate."""
    if name == HOST:
        return None
    known = boards.list_boards()
    if name not in known:
        raise ArenaError(f"unknown board '{name}'", field="--board",
                         hint=did_you_mean(name, [HOST, *known]) + _runnable_hint())
    board = boards.load_board(name)
    if not board.qemu:
        raise ArenaError(f"board {name} cannot be emulated: its board file names no QEMU machine",
                         field="--board", file=board.file or None,
                         hint=f"QEMU emulates {', '.join(emulated_boards())}; or run the same C natively "
                              f"with --board host")
    if shutil.which("arm-none-eabi-gcc") is not None:  # before any plan: a core this gcc cannot compile
        toolchain.check_core(board, "arm-none-eabi-gcc")
    return board


def require_tools(board: Board | None) -> None:
    """ArenaError (exit 2) naming the missing compiler or emulator."""
    if board is None:
        if shutil.which("gcc") is None:
            raise ArenaError("gcc is not on PATH: --board host compiles the firmware with it", field="--board",
                             hint="run .ci/setup to install gcc")
        return
    missing = [t for t in ("arm-none-eabi-gcc", "qemu-system-arm") if shutil.which(t) is None]
    if missing:
        raise ArenaError(f"{' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} not on PATH: "
                         f"--board {board.name} builds and emulates the firmware with "
                         f"{'it' if len(missing) == 1 else 'them'}", field="--board",
                         hint="run .ci/setup to install gcc-arm-none-eabi, libnewlib-arm-none-eabi and "
                              "qemu-system-arm, or use --board host")


# --- sources ------------------------------------------------------------------------------

def runtime_sources() -> list[Path]:
    """The runtime's C files, then the example main.c (startup.c is for targets only)."""
    return sorted(RUNTIME.glob("*.c")) + [APP / "main.c"]


def generate(out: Path, models: Sequence[tuple[str, str, PlanFile]], board: str = HOST, *,
             name: str = "model_{sym}", lowered: Mapping[str, Lowered] | None = None,
             arena: Path | None = None, loops: bool = True) -> list[Path]:
    """Write the tables of ``models`` (symbol, model path, plan file), run one after another in a
    shared arena, and the board's arena source; returns the generated .c files.

    name: path of each model's tables below ``out``, without suffix; lowered: symbol -> its
    lowered model (else loaded); arena: the arena source's path (default out/arena_board.c); loops:
    patched stages as tile loops (False: unrolled, codegen.model_sources)."""
    out = Path(out)
    sources = []
    for sym, path, plan in models:
        low = (lowered or {}).get(sym) or plancheck.lowered_model(str(path), plan)
        h, c = codegen.model_sources(plan, low, sym, loops)
        stem = out / name.format(sym=sym)
        stem.parent.mkdir(parents=True, exist_ok=True)
        codegen.write(f"{stem}.h", h)
        codegen.write(f"{stem}.c", c)
        sources.append(Path(f"{stem}.c"))
    size = max((p.arena_size for _, _, p in models), default=0)
    align = _alignment([p for _, _, p in models])
    placed = board_regions([p for _, _, p in models], copies=board != HOST)
    h, c = codegen.arena_sources(board, size, [(sym, 0) for sym, _, _ in models], align, placed,
                                 kernels=codegen.runtime_ops((p for _, _, p in models), loops))
    arena = arena or out / "arena_board.c"
    arena.parent.mkdir(parents=True, exist_ok=True)
    codegen.write(str(arena.with_suffix(".h")), h)
    codegen.write(str(arena), c)
    return sources + [arena]


def board_regions(plans: Sequence[PlanFile], copies: bool = True) -> tuple[RegionUse, ...]:
    """The board report's ``regions`` (RegionUse: what codegen and the linker
    read; origin, length and limit are not known here) for plans run one after another: a split plan's regions (each the largest of the
    models' arenas there), then the regions their weights are copied to (``weights: <region>``;
    copies False: none, as on the host, where the weights stay initialized data in their section)."""
    arena: dict[str, int] = {}
    weights: dict[str, int] = {}
    for plan in plans:
        for r in plan.regions or ():
            arena[r.name] = max(arena.get(r.name, 0), r.arena_size)
        w = plan.options.weights
        if copies and w != "flash":
            weights[w] = weights.get(w, 0) + split_arena.weights_ram_bytes_plan(plan)
    names = list(arena) + sorted(n for n in weights if n not in arena)
    return tuple(RegionUse(name=n, origin=0, length=1, arena=arena.get(n, 0), weights=weights.get(n, 0), reserve=0,
                           limit=0, arena_section=f".arena_{n}" if n in arena else None,
                           weights_section=f".weights_{n}" if n in weights else None) for n in names)


def input_source(models: Sequence[tuple[str, Sequence[tuple[str, np.ndarray]]]]) -> str:
    """C source of main.c's ``arena_inputs`` table: per model symbol, its graph inputs in the
    model's input order as (name, array). The arrays are stored as their exact bits (unsigned
    words of the element's width), so main.c's memcpy gives the firmware these values."""
    s = ["/* Generated by arena_tool.run.firmware: the input data main.c copies into the arena. Do not edit. */",
         "#include <stdint.h>", "", '#include "arena_model.h"', "",
         "typedef struct { /* as main.c's arena_input_t */",
         "    const arena_model_t *model;", "    uint32_t input;", "    const void *data;", "    uint32_t bytes;",
         "} arena_input_t;", ""]
    rows = []
    for sym, inputs in models:
        sym = codegen.sanitize(sym).lower()
        s.append(f"extern const arena_model_t {sym}_model;")
        for k, (tensor, arr) in enumerate(inputs):
            dt = str(arr.dtype)
            if dt not in _BITS:
                raise ArenaError(f"input {tensor!r} is {dt}; the firmware takes {', '.join(NUMPY_TYPES)}", field=tensor)
            c_type, word, digits = _BITS[dt]
            bits = np.ascontiguousarray(arr).reshape(-1).view(word)
            suffix = "ull" if word is np.uint64 else "u"
            ident = f"{sym}_input{k}"
            items = [f"0x{int(v):0{digits}x}{suffix}" for v in bits] or ["0"]
            s.append(f"static const {c_type} {ident}[{max(1, bits.size)}] = {{ /* {codegen.c_comment(tensor)} "
                     f"{dt} {list(arr.shape)} */")
            per = max(1, 96 // (len(items[0]) + 2))
            s += ["    " + ", ".join(items[i:i + per]) + "," for i in range(0, len(items), per)]
            s.append("};")
            rows.append(f"    {{&{sym}_model, {k}u, {ident}, {int(arr.nbytes)}u}},")
    s += ["", f"const arena_input_t arena_inputs[{len(rows) + 1}] = {{", *rows, "    {0, 0u, 0, 0u}", "};", ""]
    return "\n".join(s)


# --- building and running -----------------------------------------------------------------

def _env(key: str, prefix: str, ccflags: Sequence[str], linkflags: Sequence[str], libs: Sequence[str],
         cpppath: Sequence[Path], root: Path) -> build_graph.CompileEnv:
    """A compile environment of its own flags (the tests', the host's): the project (``root``)
    mapped to ``.`` outside the signature, as a board's, so objects do not name the build folder."""
    return build_graph.CompileEnv(key=key, ccflags=(*ccflags, "$(", build_graph.prefix_map(str(root)), "$)"),
                                  linkflags=tuple(linkflags), cpppath=tuple(map(str, cpppath)),
                                  libs=tuple(lib[2:] if lib.startswith("-l") else lib for lib in libs),
                                  cflags=(), cppdefines=(), libpath=(), prefix=prefix)


def _make(out: Path, env: build_graph.CompileEnv, sources: Sequence[Path], exe: Path) -> Path:
    """Compile ``sources`` and link them into ``exe`` through the build graph's executor (the
    objects of arena's runtime from the machine's cache); CalledProcessError when gcc fails."""
    graph = build_graph.firmware(".", env, [str(s) for s in sources if s.suffix != ".h"], exe.name, root=str(out))
    execute.Executor(graph, str(out)).build([exe.name])
    return exe


def build_host(out: Path, generated: Sequence[Path], cflags: Sequence[str] = HOST_CFLAGS,
               exe_name: str = "fw_host") -> Path:
    """Compile the firmware natively; the executable. CalledProcessError when gcc fails. The host
    build is a debug build: its tables keep every name (ARENA_NAMES, arena_model.h)."""
    out = Path(out).resolve()
    cflags = [*cflags, "-DARENA_NAMES"]
    env = _env("host", "", cflags, cflags, (), [RUNTIME], out)
    return _make(out, env, [*runtime_sources(), *generated], out / exe_name)


def run_host(exe: Path, timeout: float = TIMEOUT) -> tuple[int, str]:
    """(exit status, stdout + stderr) of the host firmware (sanitizer reports included)."""
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0", UBSAN_OPTIONS="print_stacktrace=1")
    p = subprocess.run([str(exe)], capture_output=True, text=True, timeout=timeout, env=env)
    return p.returncode, p.stdout + p.stderr


def build_elf(out: Path, generated: Sequence[Path], board: Board | str, arena_size: int, *, stack: int = STACK,
              cflags: Sequence[str] = TARGET_CFLAGS, ldflags: Sequence[str] = TARGET_LDFLAGS,
              libs: Sequence[str] = TARGET_LIBS, elf_name: str = "firmware.elf", arena_align: int = 16,
              regions: Sequence[RegionUse] = ()) -> Path:
    """Link the firmware for ``board`` (a Board or its name) with the linker script for an arena of
    ``arena_size`` bytes in its default region and ``stack`` bytes of stack reserve, compiled with
    ``cflags`` after the core's (the tests' and benches' own flags; ``arena-tool run`` builds a
    board's firmware as a project build does: ``board_firmware``).
    ArenaError when the arena cannot fit; CalledProcessError when the compiler fails."""
    if isinstance(board, str):
        board = boards.load_board(board)
    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    script = out / f"{board.name}.ld"
    for r in regions:  # an unknown region is the user's: ArenaError with a did-you-mean
        board.region(r.name)
    linker.write(str(script), linker.render(board, board.default_region, arena_size, stack, 0,
                                            arena_align=arena_align, regions=regions))
    cpu = board.cpu.gcc_flags()
    env = _env(elf_name, "arm-none-eabi-", [*cpu, *cflags], [*cpu, *cflags, *ldflags, f"-Wl,-T,{script}"], libs,
               [RUNTIME, APP], out)
    return _make(out, env, [APP / "startup.c", *runtime_sources(), *generated], out / elf_name)


def board_firmware(out: Path, spec: ModelSpec, plan: PlanFile, lowered: Lowered, board: Board,
                   inputs_c: str, optimize: str | None = None, build: str = "build",
                   extra: Sequence[str] = (), loops: bool = True) -> Path:
    """The ELF a project build (SCons) makes of ``spec``'s model alone on ``board``, in the project
    ``out``: the build graph of a manifest of that board (its default region, a manifest's
    default stack reserve) and that model, over the example main.c and startup.c and the run's
    input table (``arena_inputs.c`` in ``out``, one more source of the application). The plan's
    tables, the arena's C file and the linker script are written where the graph puts them, and
    the graph's executor compiles and links with SCons's commands: the same objects and ELF.
    build: the build folder below ``out``; extra: compile flags after arena's (ARENA_EXTRA_CCFLAGS);
    loops: as ``generate``'s."""
    out = Path(out).resolve()
    codegen.write(str(out / "arena_inputs.c"), inputs_c)
    target = BoardTarget(name=board.name, board=board, region=board.default_region,
                         budget=Budget("100%", percent=100.0), reserve_stack=STACK, reserve_heap=0, warn_above=None,
                         sharing="sequential", models=(spec,), options=BoardOptions(optimize=optimize))
    toolchain = build_graph.Toolchain(link=True, sources=(str(APP / "startup.c"), str(APP / "main.c"),
                                                          str(out / "arena_inputs.c")),
                                      cpppath=(str(APP),), root=str(out), extra_ccflags=tuple(extra))
    graph = build_graph.graph_of({"file": spec.path, "targets": [target_doc(target)]}, build, toolchain, generator="")
    b = graph.board(board.name)
    tables = Path(b.tables[0]).with_suffix("")
    generate(out, [(spec.name, spec.path, plan)], board.name, name=str(tables.parent / tables.name.replace(
        spec.name, "{sym}")), lowered={spec.name: lowered}, arena=out / b.arena[0], loops=loops)
    linker.write(str(out / b.ld), linker.render(board, board.default_region, plan.arena_size, STACK, 0,
                                                arena_align=_alignment([plan]), regions=board_regions([plan])))
    execute.Executor(graph, str(out)).build([b.elf])
    return out / b.elf


def _alignment(plans: Sequence[PlanFile]) -> int:
    """The arena's alignment: the largest a plan or one of its buffers asks, at least 16."""
    return max([16] + [b.alignment or p.alignment for p in plans for b in p.buffers])


def run_qemu(elf: Path, board: Board, timeout: float = TIMEOUT) -> tuple[int, str]:
    """(exit status, output) of the ELF under qemu-system-arm -icount shift=0 on the board's machine."""
    assert board.qemu is not None, "resolve_board only returns boards QEMU emulates"
    return qemu.run(str(elf), board.qemu, timeout=timeout, icount=True)


# --- the whole run ------------------------------------------------------------------------

@dataclasses.dataclass
class Firmware:
    """One build and run. outputs: graph output -> the firmware's array (graph shape)."""

    board: str
    machine: str | None
    exit_status: int
    text: str
    outputs: dict[str, np.ndarray]
    status: int | None
    cflags: list[str]
    flash: int | None = None
    ram: int | None = None
    tables_flash: int | None = None
    table_bytes: int | None = None  # the model's compiled tables besides its weights (runreport.table_bytes)
    ticks: int | None = None
    instructions: int | None = None
    instructions_per_tick: float | None = None
    calibration: tuple[int, int] | None = None
    op_ticks: dict[int, int] | None = None  # --profile: op index -> SysTick ticks (the profiled build)
    truncated: dict[str, str] = dataclasses.field(default_factory=dict)  # output -> what of it is missing


@dataclasses.dataclass(frozen=True)
class OpProfile:
    """One op of ``arena-tool run --profile``: its SysTick ticks in the profiled build (None when
    the firmware printed none), as instructions, and its MACs (arena_tool.model.macs)."""

    index: int
    name: str
    op_type: str
    ticks: int | None
    instructions: int | None
    macs: int

    def to_json(self) -> dict[str, Any]:
        per = None if not self.macs or self.instructions is None else round(self.instructions / self.macs, 3)
        return {"index": self.index, "name": self.name, "op_type": self.op_type, "ticks": self.ticks,
                "instructions": self.instructions, "macs": self.macs, "instructions_per_mac": per}


def firmware_profile(plan: PlanFile, macs: Sequence[int], fw: Firmware) -> tuple[OpProfile, ...]:
    """The per-op rows of a profiled run, in the tables' op order (the plan's schedule; a tile
    loop runs as its first member's row, which carries its stage's MACs, its other members none)."""
    ticks = fw.op_ticks or {}
    clock = round(1e9 / fw.instructions_per_tick) if fw.instructions_per_tick else None
    rows = []
    for i, (name, op_type, steps) in enumerate(tileloop.table_rows(plan)):
        t = ticks.get(i)
        rows.append(OpProfile(i, name, op_type, t,
                              None if t is None or clock is None else runreport.instructions(t, clock),
                              sum(macs[k] for k in steps)))
    return tuple(rows)


def profile_table(rows: Sequence[OpProfile], fw: Firmware) -> list[str]:
    """The per-op table ``arena-tool run --profile`` prints, in the tables' op order, and a total row."""
    total = sum(r.instructions or 0 for r in rows)
    macs = sum(r.macs for r in rows)

    def per(insns: int | None, n: int) -> str:
        return "-" if not n or insns is None else f"{insns / n:.2f}"

    head = ("op", "name", "type", "instructions", "share", "MACs", "instr/MAC")
    body = [(str(r.index), r.name, r.op_type, "-" if r.instructions is None else f"{r.instructions:,}",
             "-" if r.instructions is None or not total else f"{100.0 * r.instructions / total:.1f} %",
             f"{r.macs:,}", per(r.instructions, r.macs)) for r in rows]
    body.append(("", "total", "", f"{total:,}", "100.0 %" if total else "-", f"{macs:,}", per(total, macs)))
    widths = [max(len(x[i]) for x in [head, *body]) for i in range(len(head))]
    right = {0, 3, 4, 5, 6}

    def line(cells: Sequence[str]) -> str:
        return "  " + "  ".join(c.rjust(w) if i in right else c.ljust(w)
                                for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    ipt = f"{fw.instructions_per_tick:g}" if fw.instructions_per_tick else "?"
    out = [f"profile: per op, SysTick ticks x {ipt} in a build with -DARENA_PROFILE (the printing between ops "
           "is outside every count); MACs from the model's shapes"]
    out += [line(head), *(line(r) for r in body)]
    if fw.instructions is not None:
        out.append(f"  the whole inference in the normal build: {fw.instructions:,} instructions "
                   f"({fw.instructions - total:+,} outside the ops: arena_run's loop and dispatch)")
    return out


def build_and_run(out: Path, spec: ModelSpec, plan: PlanFile, lowered: Lowered, board: Board | None,
                  inputs: Sequence[tuple[str, np.ndarray]], timeout: float = TIMEOUT,
                  optimize: str | None = None, *, profile: bool = False, loops: bool = True) -> Firmware:
    """Generate, build and run the firmware of one model (``spec``: its name is the tables'
    symbol) in ``out`` with ``inputs`` (name, array) in the model's input order, compiled at the
    ``optimize`` level (``arena_tool.target.flags``; None: the build's default); on a board, the
    firmware a project build makes (``board_firmware``). ArenaError (exit 3) when it does not
    compile. The caller judges the run.

    profile (a QEMU board): also build ``profile/<board>/firmware.elf`` with -DARENA_PROFILE and
    run it for each op's ticks (``Firmware.op_ticks``); outputs, flash and the inference's count
    stay the normal build's, whose bytes the macro does not change. loops: as ``generate``'s."""
    out = Path(out)
    symbol = spec.name
    board_name = HOST if board is None else board.name
    inputs_c = input_source([(symbol, inputs)])
    try:
        if board is None:
            gen = generate(out, [(symbol, spec.path, plan)], board_name, lowered={symbol: lowered}, loops=loops)
            codegen.write(str(out / "arena_inputs.c"), inputs_c)
            cflags = list(flags.host_cflags(optimize))
            exe = build_host(out, [*gen, out / "arena_inputs.c"], cflags)
        else:
            cflags = [*board.cpu.gcc_flags(), *flags.cflags(optimize)]
            exe = board_firmware(out, spec, plan, lowered, board, inputs_c, optimize, loops=loops)
            if profile:
                prof = board_firmware(out, spec, plan, lowered, board, inputs_c, optimize, build="profile",
                                      extra=[PROFILE_FLAG])
    except subprocess.CalledProcessError as e:
        raise ArenaError(f"the firmware does not compile: {execute.first_error(e)}", field="run", exit_code=EXIT_BUG,
                         hint=BUG_HINT) from e
    try:
        rc, text = run_host(exe, timeout) if board is None else run_qemu(exe, board, timeout)
    except subprocess.TimeoutExpired:
        rc, text = 124, f"stopped after {timeout} s\n"
    (out / "firmware.out").write_text(text, encoding="utf-8")
    parsed = verify.parse_output(text)
    specs = graph_specs(plan, list(lowered.outputs))
    outputs = {}
    for s in specs:
        v = parsed.outputs.get(symbol, {}).get(s.name)
        if v is not None:
            v = v.astype(NUMPY_TYPES.get(s.dtype, v.dtype))
            outputs[s.name] = v.reshape(s.shape) if v.size == int(np.prod(s.shape, dtype=np.int64)) else v
    fw = Firmware(board_name, None if board is None else board.qemu, rc, text, outputs,
                  parsed.status.get(symbol), cflags, truncated=parsed.truncated.get(symbol, {}))
    if board is not None:
        sizes = runreport.elf_sizes(str(exe))
        fw.flash, fw.ram = sizes.flash, sizes.ram
        fw.tables_flash = runreport.model_flash(str(exe), [symbol])[symbol]
        obj = next(iter(sorted(out.rglob(f"model_{symbol}.o"))), None)  # the project build's first
        fw.table_bytes = None if obj is None else runreport.table_bytes(str(obj), symbol)
        fw.calibration = parsed.calibration
        ticks = parsed.ticks.get(symbol)
        if ticks is not None and board.cpu.clock_hz:
            fw.ticks = ticks
            fw.instructions = runreport.instructions(ticks, board.cpu.clock_hz)
            fw.instructions_per_tick = 1e9 / (board.cpu.clock_hz * (1 << runreport.ICOUNT_SHIFT))
        if profile:
            try:
                _, ptext = run_qemu(prof, board, timeout)
            except subprocess.TimeoutExpired:
                ptext = ""
            (out / "firmware_profile.out").write_text(ptext, encoding="utf-8")
            fw.op_ticks = verify.parse_output(ptext).op_ticks.get(symbol, {})
    return fw


def _failure(fw: Firmware, symbol: str, timeout: float, plan: PlanFile | None = None) -> str | None:
    """Why the firmware run failed, or None when it ran and printed every output. A release build's
    error line names the op by its index only (arena_model.h: ARENA_NAMES): ``plan`` names it."""
    if fw.exit_status == 124 and fw.status is None:
        return f"the firmware did not finish in {timeout:g} s"
    if fw.status not in (None, 0):
        err = next((ln for ln in fw.text.splitlines() if ln.startswith(f"error {symbol} ")), "")
        parts = err.split()
        if plan is not None and len(parts) == 6 and parts[2] == "op" and parts[3].isdigit():
            rows = tileloop.table_rows(plan)
            if int(parts[3]) < len(rows):
                name, op_type, _ = rows[int(parts[3])]
                err += f": {op_type} {name!r}"
        return f"arena_run returned {fw.status}" + (f" ({err})" if err else "")
    if fw.exit_status != 0:
        return f"the firmware exited with status {fw.exit_status}"
    if fw.status is None:
        return "the firmware printed no status line"
    return None


def _write_npz(path: str, arrays: dict[str, np.ndarray]) -> None:
    """np.savez's layout (one NAME.npy per array) with fixed member times: the same outputs give
    the same bytes, and any tensor name is a key (np.savez(file, **kw) cannot take 'file')."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as zf:
        for name, arr in arrays.items():
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            with zf.open(info, "w") as member:
                np.lib.format.write_array(member, np.ascontiguousarray(arr), allow_pickle=False)
    try:
        write_atomic(path, buf.getvalue())
    except ArenaError as e:
        raise e.located(field="--output")


def _num(v: float | None) -> float | None:
    return None if v is None or not math.isfinite(v) else float(v)


def report_doc(*, model: str, plan: PlanFile, board: str, machine: str | None, result: str,
               input_kind: str, input_file: str | None, seed: int | None, inputs: Sequence[TensorSpec],
               gaps: Sequence[Gap] = (), fw: Firmware | None = None,
               comparisons: Sequence[Comparison] = (), error: str | None = None, macs: int = 0,
               profile: Sequence[OpProfile] | None = None) -> dict[str, Any]:
    """The --json document (schemas/run.schema.json); paths relative to the current folder when inside it."""
    return {
        "format_version": FORMAT_VERSION,
        "model": project_path(model),
        "model_sha256": plan.model_sha256,
        "board": board,
        "machine": machine,
        "icount_shift": 0 if machine else None,
        "planner": plan.planner,
        "alignment": plan.alignment,
        "options": planfile.options_doc(plan.options),
        "input": {"kind": input_kind, "file": input_file and project_path(input_file), "seed": seed},
        "inputs": [{"name": s.name, "dtype": s.dtype, "shape": list(s.shape)} for s in inputs],
        "arena_size": plan.arena_size,
        "lower_bound": plan.lower_bound,
        "cflags": list(fw.cflags) if fw else [],
        "exit_status": fw.exit_status if fw else None,
        "flash": fw.flash if fw else None,
        "ram": fw.ram if fw else None,
        "tables_flash": fw.tables_flash if fw else None,
        "table_bytes": fw.table_bytes if fw else None,
        "ticks": fw.ticks if fw else None,
        "instructions": fw.instructions if fw else None,
        "instructions_per_tick": fw.instructions_per_tick if fw else None,
        "macs": macs,
        "profile": None if profile is None else [r.to_json() for r in profile],
        "gaps": [{"index": g.index, "name": g.name, "op_type": g.op_type, "why": g.why} for g in gaps],
        "outputs": [{"name": c.name, "dtype": c.dtype, "shape": list(c.shape),
                     "max_abs_error": _num(c.max_abs), "max_rel_error": _num(c.max_rel),
                     "tolerance": _num(c.tolerance), "tolerance_kind": c.kind,
                     "quantization_step": _num(c.step), "ok": c.ok} for c in comparisons],
        "error": error,
        "result": result,
    }


def write_report(path: str, report: dict[str, Any]) -> None:
    """Validate against schemas/run.schema.json, then write atomically."""
    check_json(report, "run", path)
    write_atomic(path, json.dumps(report, indent=2) + "\n")


def _fmt(n: int | None) -> str:
    return "n/a" if n is None else f"{n:,} B"


def summary(model: str, plan: PlanFile, board: Board | None, fw: Firmware, input_words: str,
            comparisons: Sequence[Comparison], macs: int = 0) -> list[str]:
    """The lines ``arena-tool run`` prints (no times, no temporary paths: deterministic)."""
    where = ("host (native gcc " + fw.cflags[0] + ")" if board is None
             else f"{board.name} (qemu-system-arm -M {board.qemu} -icount shift=0)")
    lines = [f"run {model} on {where}, planner {plan.planner}, input {input_words}"]
    lines += [c.line() for c in comparisons]
    w = 12
    lines.append(f"{'arena':<{w}} {_fmt(plan.arena_size)} (lower bound {_fmt(plan.lower_bound)})")
    if plan.options.io_buffers == "caller":
        io = [b for b in plan.buffers if b.kind in ("input", "output")]
        lines.append(f"{'I/O':<{w}} {_fmt(sum(b.size for b in io))} in {len(io)} caller-owned buffer"
                     f"{'s' if len(io) != 1 else ''}, outside the arena")
    if board is None:
        lines.append(f"{'flash':<{w}} n/a (host build)")
        lines.append(f"{'RAM':<{w}} n/a (host build)")
        lines.append(f"{'instructions':<{w}} n/a (host build; --board {' or '.join(emulated_boards()) or 'mps2_an500'} "
                     f"counts them under QEMU)")
    else:
        lines.append(f"{'flash':<{w}} {_fmt(fw.flash)} (ELF; the model's tables {_fmt(fw.tables_flash)}, "
                     f"{_fmt(fw.table_bytes)} of them besides the weights)")
        lines.append(f"{'RAM':<{w}} {_fmt(fw.ram)} (ELF; arena {_fmt(plan.arena_size)}, "
                     f"stack reserve {_fmt(STACK)})")
        if fw.instructions is not None:
            lines.append(f"{'instructions':<{w}} {fw.instructions:,} per inference (SysTick {fw.ticks:,} ticks x "
                         f"{fw.instructions_per_tick:g})")
        else:
            lines.append(f"{'instructions':<{w}} n/a (the firmware printed no ticks)")
    per = f" ({fw.instructions / macs:.2f} instructions per MAC)" if macs and fw.instructions is not None else ""
    lines.append(f"{'MACs':<{w}} {macs:,} per inference{per}")
    return lines


def run(model: str, board_name: str, options: ModelOptions, planner: str, params: planners.Params, *,
        input_path: str | None = None, seed: int = 0, output: str | None = None, json_path: str | None = None,
        build_dir: str | None = None, timeout: float = TIMEOUT, out: TextIO | None = None,
        err: TextIO | None = None, optimize: str | None = None, profile: bool = False) -> int:
    """``arena-tool run``: plan, generate, build, run, compare; prints the summary, returns the exit
    status (0 match, 1 mismatch or an op the runtime lacks); ArenaError for the rest.

    profile: also print (and put in the report) each op's instructions and MACs (a QEMU board)."""
    out = out or sys.stdout
    err = err or sys.stderr
    board = resolve_board(board_name)
    if profile and board is None:
        raise ArenaError("--profile counts each op's instructions under QEMU; the host build has no "
                         "instruction count", field="--profile",
                         hint=f"run on {' or '.join(emulated_boards()) or 'mps2_an500'} (--board)")
    if board is not None and options.weights != "flash":
        try:
            board.region(options.weights)
        except ArenaError as e:
            raise e.located(field="--weights") from None
    plan = planning.plan_model(model, options, planner, params).plan_file
    lowered = plancheck.lowered_model(model, plan)
    io = IntegerIO.of(model, plan) if options.io == "int8" else None
    op_macs = macs.plan_macs(plan.schedule, lowered)
    in_specs = io.specs if io is not None else graph_specs(plan, list(lowered.inputs))
    input_kind, input_file = ("file", input_path) if input_path else ("random", None)
    report_of = functools.partial(report_doc, model=model, plan=plan, board=board_name,
                                  machine=None if board is None else board.qemu, input_kind=input_kind,
                                  input_file=input_file, seed=None if input_path else seed, inputs=in_specs,
                                  macs=sum(op_macs))

    gaps = runtime_support.gaps(lowered)
    if gaps:
        for g in gaps:
            print(f"arena-tool: {model}: error: {g.message(Path(model).stem)}", file=err)
        print(f"arena-tool: {model}: nothing built: the runtime cannot execute "
              f"{len(gaps)} op{'s' if len(gaps) != 1 else ''} of the model", file=err)
        if json_path:
            write_report(json_path, report_of(result="unsupported", gaps=gaps,
                                              error=f"{len(gaps)} op(s) the runtime cannot execute"))
        return EXIT_CHECK_FAILED
    by_name = plan.by_name
    for name, t in lowered.types.items():
        b = by_name.get(name)
        if b is not None and b.kind != "scratch" and b.dtype != t.dtype:
            flag = "--bitwidths" if name in dict(options.bitwidths) else "--activation-dtype"
            raise ArenaError(f"plans sizes only: tensor {name!r} would be stored as {b.dtype}, but the "
                             f"model computes it as {t.dtype}, so the firmware cannot run it", field=flag, file=model,
                             hint=f"drop {flag} to run the model as it is, or quantize the model (QDQ int8)")
    inputs = load_inputs(input_path, in_specs) if input_path else random_inputs(in_specs, seed)
    require_tools(board)
    feeds = {s.name: a for s, a in zip(in_specs, inputs)}
    tflite = lowered.graph.model is None and tflite_model.is_tflite(model)  # a lowered .tflite: TFLM is the reference
    if tflite:
        want = tflm_reference(model, feeds, list(lowered.inputs), list(lowered.outputs))
        fw_inputs = [(s.name, a) for s, a in zip(in_specs, inputs)]
    elif io is not None:  # the model's own float inputs and outputs, and the integers at its boundary
        want = reference(model, feeds, [*lowered.outputs, *(b.model for b in io.outputs)], io.lowered)
        fw_inputs = io.quantize(inputs)
    else:
        want = reference(model, feeds, list(lowered.outputs), lowered)
        fw_inputs = [(s.name, a) for s, a in zip(in_specs, inputs)]

    compared = "onnxruntime's"
    if tflite:
        compared = "TFLite Micro's host interpreter's (bit for bit)"
    elif lowered.qdq_fused:  # the reference ran arena's lowering, not the file: say so, and whether the file runs
        compared = f"onnxruntime's run of arena's integer (QOperator) lowering of {model}"
        refused = ort_refuses(model)
        if refused:
            print(f"arena-tool: {model}: warning: onnxruntime refuses the model file itself ({refused}); the "
                  f"reference is arena's lowering of it", file=err)
            compared += " (onnxruntime refuses the file itself)"

    symbol = codegen.sanitize(Path(model).stem).lower()
    spec = ModelSpec(name=symbol, path=model, planner=planner, k=params.k, time_limit=params.time_limit,
                     options=options)
    work = Path(build_dir) if build_dir else Path(tempfile.mkdtemp(prefix="arena-run-"))
    try:
        fw = build_and_run(work, spec, plan, lowered, board, fw_inputs, timeout, optimize, profile=profile)
    finally:
        if not build_dir:
            shutil.rmtree(work, ignore_errors=True)
    why = _failure(fw, symbol, timeout, plan)
    missing = [n for n in lowered.outputs if n not in fw.outputs]
    if why is None and fw.truncated:  # lines lost on the way: no comparison can be made, none is reported
        name, what = next(iter(fw.truncated.items()))
        why = f"output truncated: the firmware's printout of {name!r} arrived with {what}; run again"
    if why is None and missing:
        why = f"the firmware printed no value for output {missing[0]!r}"
    if why is not None:
        tail = "\n".join(fw.text.splitlines()[-20:])
        print(f"arena-tool: {model}: the firmware's last lines:\n{tail}", file=err)
        if json_path:
            write_report(json_path, report_of(result="firmware_error", fw=fw, error=why))
        if fw.truncated:  # not arena's bug, and not a mismatch: nothing was compared
            raise ArenaError(why, file=model, field="run", exit_code=EXIT_CHECK_FAILED,
                             hint="the firmware's output was lost on its way (a loaded machine?); run again")
        raise ArenaError(why, file=model, field="run", exit_code=EXIT_BUG,
                         hint=BUG_HINT + (f"; the build is kept in {build_dir}" if build_dir else
                                          "; --build-dir DIR keeps the build"))
    comparisons = [compare(n, fw.outputs[n], want[n], quant_step(lowered, plan, n), exact=tflite) for n in lowered.outputs]
    if io is not None:  # the firmware's integers dequantized with the header's parameters: the model's floats
        for edge, value in zip(io.outputs, io.dequantize(fw.outputs)):
            fw.outputs[edge.model] = value
            comparisons.append(compare(edge.model, value, want[edge.model], float(edge.quant.scale[0])))
    words = f"{input_path}" if input_path else f"seeded random (seed {seed})"
    ok = all(c.ok for c in comparisons)
    for line in summary(model, plan, board, fw, words, comparisons, sum(op_macs)):
        print(line, file=out)
    rows = firmware_profile(plan, op_macs, fw) if profile else None
    if rows is not None:
        for line in profile_table(rows, fw):
            print(line, file=out)
    if output:
        _write_npz(output, {n: fw.outputs[n] for n in [*lowered.outputs, *(b.model for b in (io.outputs if io else ()))]})
        print(f"wrote {output}", file=out)
    if json_path:
        write_report(json_path, report_of(result="match" if ok else "mismatch", fw=fw,
                                          comparisons=comparisons, profile=rows))
        print(f"wrote {json_path}", file=out)
    if ok:
        print(f"match: every output equals {compared} within its tolerance", file=out)
        return EXIT_OK
    bad = [c.name for c in comparisons if not c.ok]
    print(f"arena-tool: {model}: error: mismatch: output{'s' if len(bad) > 1 else ''} {', '.join(bad)} "
          f"differ{'' if len(bad) > 1 else 's'} from {'TFLite Micro' if tflite else 'onnxruntime'}'s beyond "
          "tolerance", file=err)
    return EXIT_CHECK_FAILED


def quiet_run(model: str, board: str, options: ModelOptions, planner: str, params: planners.Params, *,
              input_path: str | None = None, timeout: float = TIMEOUT, optimize: str | None = None,
              err: TextIO | None = None) -> tuple[int, dict[str, Any]]:
    """``run`` with its summary kept quiet, and its --json report (schemas/run.schema.json): for a
    caller that sums up many runs in a line each (the run alias's samples, bench/int8_io.py --run).
    ArenaError as ``run``'s (a firmware that fails raises after writing its report)."""
    with tempfile.TemporaryDirectory(prefix="arena-run-") as tmp:
        report = os.path.join(tmp, "run.json")
        code = run(model, board, options, planner, params, input_path=input_path, json_path=report,
                   timeout=timeout, out=io.StringIO(), err=err, optimize=optimize)
        with open(report, encoding="utf-8") as f:
            doc: dict[str, Any] = json.load(f)
    return code, doc


def worst_error(doc: dict[str, Any]) -> float:
    """The largest max abs error over a run report's outputs (inf where one is not finite)."""
    return max((math.inf if o["max_abs_error"] is None else float(o["max_abs_error"]) for o in doc["outputs"]),
               default=0.0)


def sample_match(spec: ModelSpec, board: str, sample: str, timeout: float = TIMEOUT,
                 optimize: str | None = None) -> tuple[str, bool]:
    """The run alias's check of a model with a manifest ``inputs:`` file: ``run``, as
    ``arena-tool run MANIFEST`` runs it (its own one-model firmware on ``board``, the shipped ELF
    untouched), its summary kept quiet; one line naming the file, and whether it matched."""
    code, doc = quiet_run(spec.path, board, spec.options, spec.planner,
                          planners.Params(k=spec.k, time_limit=spec.time_limit), input_path=sample,
                          timeout=timeout, optimize=optimize)
    if doc["result"] not in ("match", "mismatch"):
        return f"{spec.name}: MISMATCH: {doc['error']} (input {sample})", False
    bad = [o["name"] for o in doc["outputs"] if not o["ok"]]
    head = f"MISMATCH in {', '.join(bad)}" if bad else "outputs match onnxruntime"
    return f"{spec.name}: {head} (max abs error {_e(worst_error(doc))}, input {sample})", code == EXIT_OK and not bad


def tflm_reference(model_path: str, feeds: dict[str, np.ndarray], inputs: Sequence[str],
                   names: Sequence[str]) -> dict[str, np.ndarray]:
    """TFLite Micro's host interpreter's outputs of the .tflite for ``feeds``: the reference a .tflite
    on arena's runtime must equal bit for bit (a lowered .tflite keeps its tensors' names)."""
    data = tflite_model.read_bytes(model_path)
    run = tflm_host.run_tflm(data, model_path, [[feeds[n] for n in inputs]])
    return dict(zip(names, run.outputs[0]))


def _tflite_outputs_match(name: str, path: str, plan: PlanFile, outputs: dict[str, np.ndarray]) -> str:
    """One model's line of ``outputs_match`` for a .tflite: its outputs against TFLite Micro's host
    interpreter's on main.c's input pattern, every element equal."""
    lw = liveness.lower(path, plan.options)
    by_name = plan.by_name
    feeds = {x: verify.input_pattern(by_name[x].shape, by_name[x].dtype, k) for k, x in enumerate(lw.inputs)}
    want = tflm_reference(path, feeds, list(lw.inputs), list(lw.outputs))
    bad = [out for out, got in outputs.items()
           if out not in want or got.size != want[out].size
           or not np.array_equal(got.reshape(-1).astype(np.int64), want[out].reshape(-1).astype(np.int64))]
    return f"{name}: " + (f"MISMATCH in {', '.join(bad)}" if bad else "outputs equal TFLite Micro's bit for bit") + \
        " (main.c's input pattern)"


def outputs_match(text: str, models: Sequence[tuple[str, str, PlanFile]]) -> tuple[list[str], bool]:
    """Each model's outputs in main.c's printout ``text`` against onnxruntime's on main.c's input
    pattern (``verify.reference``), for models given as (name, ONNX path, plan): one line per
    model and whether all matched, each output within one quantization step of a dequantized
    output, else 1e-4 of its largest magnitude (as ``arena-tool run``)."""
    run = verify.parse_output(text)
    lines, ok = [], True
    for name, path, plan in models:
        if run.status.get(name) != 0 or name not in run.outputs:
            lines.append(f"{name}: MISMATCH: it did not run to the end (status {run.status.get(name)})")
            ok = False
            continue
        if run.truncated.get(name):  # lines lost on the way: nothing to compare, not a mismatch
            out, what = next(iter(run.truncated[name].items()))
            lines.append(f"{name}: output truncated: {out} arrived with {what}; run again")
            ok = False
            continue
        if tflite_model.is_tflite(path):  # a .tflite on arena's runtime: TFLM's host interpreter, bit for bit
            lines.append(_tflite_outputs_match(name, path, plan, run.outputs[name]))
            ok = ok and "MISMATCH" not in lines[-1]
            continue
        ref = verify.reference(path, plan)
        lw = lowering.load(path, plan.options.input_shapes)
        worst, bad = 0.0, []
        for out, got in run.outputs[name].items():
            want = ref[out].reshape(-1).astype(np.float32)
            step = quant_step(lw, plan, out)
            tol = step + 1e-6 if step is not None else 1e-4 * max(float(np.max(np.abs(want))), 1e-30)
            err = float(np.max(np.abs(got.astype(np.float32) - want))) if want.size else 0.0
            worst = max(worst, err)
            if err > tol or got.size != want.size:
                bad.append(out)
        ok = ok and not bad
        lines.append(f"{name}: " + (f"MISMATCH in {', '.join(bad)}" if bad else "outputs match onnxruntime")
                     + f" (max abs error {worst:.3e}, main.c's input pattern)")
    return lines, ok

