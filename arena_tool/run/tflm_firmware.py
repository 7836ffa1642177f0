"""``arena-tool run MODEL.tflite``: one model on TFLite Micro, built from the user's TFLM tree,
run on the host or under QEMU, and compared bit for bit with TFLM's host interpreter.

The firmware is the one a SCons build with ``runtime: tflm`` and ``tflm: {path: DIR}`` links:
the package's tflm/main.cc over a generated table (``tflm_app``), the planned model as a C array
and its ``tensor_arena`` (codegen), arena's linker script and startup.c on a target, and TFLM
as one static library (``tflm_lib``; the framework, the model's kernels, CMSIS-NN when asked).
The library is kept per tree, kernel set, core and compiler under ``$ARENA_CACHE_DIR``
(default ``~/.cache/arena-tool``)/tflm/, its objects in the machine's object cache, which a SCons
build's library shares (``tflm_lib.build``): a second run, or a run after a project build of the
same tree, kernels and core, compiles only the application. The application's objects and the
link are build-graph nodes too (``build_graph.firmware``), run by the same executor.

The reference is the ``tflite-micro`` wheel's interpreter (reference kernels, in a child
process: ``tflm.run_tflm``) on the same planned model and the same seeded random inputs; every
output must have the same bytes. The printout is the ONNX run's: arena (head + tail, the
tensor_arena the board holds), head (arena's plan), tail (TFLM's persistent part, measured on
the host), TFLM's own ``arena_used_bytes`` on this build, flash and instructions per inference.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence, TextIO

import numpy as np

import arena_tool
from arena_tool.builder import build_graph, execute, tflm_lib
from arena_tool.core.errors import EXIT_BUG, EXIT_CHECK_FAILED, EXIT_OK, ArenaError
from arena_tool.core.files import write_atomic
from arena_tool.core.schema import check_json
from arena_tool.core.problem import fmt_bytes
from arena_tool.emit import codegen, linker, tflm_app
from arena_tool.model import tflite_model, tflm_scratch
from arena_tool.plan import planning
from arena_tool.run import firmware, runreport, tflm, verify
from arena_tool.target import flags, tflm_sources

if TYPE_CHECKING:
    from arena_tool.core.problem import ModelOptions
    from arena_tool.plan import planners
    from arena_tool.target.boards import Board

TFLM_ENV = "ARENA_TFLM_DIR"
APP = Path(arena_tool.runtime_dir()) / "tflm"  # main.cc, arena_tflm.h
STACK = 16384  # TFLM's kernels keep more on the stack than arena's (LSTM's gate buffers)


def tflm_root(given: str | None, env: dict[str, str] | None = None) -> str:
    """The TFLM tree: ``--tflm``, else ``$ARENA_TFLM_DIR``; ArenaError (exit 2) when neither names one."""
    env = dict(os.environ) if env is None else env
    root = given or env.get(TFLM_ENV)
    if not root:
        raise ArenaError("a .tflite model runs on TFLite Micro, and no TFLM tree is given", field="--tflm",
                         hint=f"give --tflm DIR (a tflite-micro checkout with its downloads) or set {TFLM_ENV}")
    tflm_sources.check_tree(root, field="--tflm")
    return root


@dataclasses.dataclass(frozen=True)
class Built:
    """One TFLM firmware: the ELF (or host executable), its library, the cflags of its own code."""

    exe: Path
    library: str
    cflags: tuple[str, ...]


def build(out: Path, board: Board | None, root: str, kernels: str, models: Sequence[tuple[tflm_app.TflmEntry, bytes]],
          arena_size: int, optimize: str | None = None, jobs: int = 1, progress: TextIO | None = None) -> Built:
    """Generate and build the firmware of ``models`` (entry, planned bytes) run one after another
    in a tensor_arena of ``arena_size`` bytes; ArenaError (exit 3) when arena's own code does not build."""
    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    name = firmware.HOST if board is None else board.name
    prefix = "" if board is None else "arm-none-eabi-"
    cpu = () if board is None else tuple(board.cpu.gcc_flags())
    op_names = tuple(sorted({op for e, _ in models for op in e.ops}))
    spec = tflm_lib.LibrarySpec(root, kernels, op_names, cpu, prefix)
    lib = tflm_lib.build(spec, tflm_lib.library_dir(spec), jobs, progress=progress).path
    sources: list[Path] = []
    for e, data in models:
        h, c = codegen.tflm_model_sources(e.symbol, data, 0, 0)
        sym = codegen.sanitize(e.symbol).lower()
        codegen.write(str(out / f"model_{sym}.h"), h)
        codegen.write(str(out / f"model_{sym}.c"), c)
        sources.append(out / f"model_{sym}.c")
    h, c = codegen.tflm_arena_sources(name, arena_size, [(e.symbol, 0) for e, _ in models])
    codegen.write(str(out / "tflm_arena.h"), h)
    codegen.write(str(out / "tflm_arena.c"), c)
    sources.append(out / "tflm_arena.c")
    codegen.write(str(out / "arena_tflm.cc"), tflm_app.sources(name, [e for e, _ in models]))
    level = flags.LEVELS[flags.level(optimize, flags.HOST_OPTIMIZE if board is None else flags.DEFAULT_OPTIMIZE)]
    example = APP.parent / "example"
    hidden = ("$(", build_graph.prefix_map(str(out)), "$)")  # the build folder, out of objects and signatures
    link: tuple[str, ...] = ()
    if board is not None:
        script = out / f"{board.name}.ld"
        linker.write(str(script), linker.render(board, board.default_region, arena_size, STACK, 0,
                                                arena_align=16, arena_input=".tensor_arena"))
        link = (*cpu, *flags.LINKFLAGS, f"-Wl,-T,{script}", f"-Wl,-Map,{out / 'firmware.map'}")
    c_flags = flags.cflags(optimize) if board else flags.host_cflags(optimize)
    cc = build_graph.CompileEnv(key="c", ccflags=(*cpu, *c_flags, *hidden),
                                linkflags=link, cpppath=(str(example),), libs=flags.LIBS, cflags=(), cppdefines=(),
                                libpath=(), prefix=prefix)
    cxx = dataclasses.replace(cc, key="c++", ccflags=(*cpu, *tflm_sources.cxx_flags(kernels), level, *hidden),
                              cpppath=(str(APP), str(example), str(out), *tflm_sources.include_dirs(root)))
    c_sources = [*sources, *([example / "startup.c"] if board is not None else [])]
    exe = "firmware.elf" if board is not None else "fw_host"
    graph = build_graph.firmware(".", cc, [str(APP / "main.cc"), str(out / "arena_tflm.cc"), *map(str, c_sources)],
                                 exe, root=str(out), libraries=[lib], cxx_env=cxx)
    try:
        execute.Executor(graph, str(out)).build([exe])
    except subprocess.CalledProcessError as e:
        raise ArenaError(f"the TFLM firmware does not build: {execute.first_error(e)}", field="run", exit_code=EXIT_BUG,
                         hint=firmware.BUG_HINT) from e
    return Built(out / exe, lib, (*cpu, *tflm_sources.cxx_flags(kernels), level))


@dataclasses.dataclass
class Result:
    """One run: exit status, output text, outputs by index, ticks, TFLM's arena_used_bytes."""

    exit_status: int
    text: str
    outputs: list[np.ndarray | None]
    status: int | None
    ticks: int | None
    used: int | None
    calibration: tuple[int, int] | None


def run_exe(exe: Path, board: Board | None, symbol: str, n_outputs: int, names: Sequence[str],
            timeout: float) -> Result:
    try:
        rc, text = firmware.run_host(exe, timeout) if board is None else firmware.run_qemu(exe, board, timeout)
    except subprocess.TimeoutExpired:
        rc, text = 124, f"stopped after {timeout} s\n"
    parsed = verify.parse_output(text)
    got = parsed.outputs.get(symbol, {})
    outputs = [got.get(tflm_app.print_name(n)) for n in names[:n_outputs]]
    used = None
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[0] == "arena" and parts[1] == symbol and parts[2] == "used":
            used = int(parts[3])
    return Result(rc, text, outputs, parsed.status.get(symbol), parsed.ticks.get(symbol), used, parsed.calibration)


def run(model: str, board_name: str, options: ModelOptions, planner: str, params: planners.Params, *,
        tflm_dir: str | None = None, seed: int = 0, json_path: str | None = None,
        build_dir: str | None = None, timeout: float = firmware.TIMEOUT, optimize: str | None = None,
        out: TextIO | None = None, err: TextIO | None = None, jobs: int = 1) -> int:
    """The whole run; 0 when every output has TFLM's host bytes, 1 when one differs (or TFLM fails
    on the target); ArenaError for the rest."""
    out = out or sys.stdout
    err = err or sys.stderr
    board = firmware.resolve_board(board_name)
    root = tflm_root(tflm_dir)
    kernels = "reference" if options.kernels == "reference" else "cmsis_nn"  # what the library compiles
    if board is not None and options.kernels == "cmsis_nn":  # the variant the board's core runs
        options = dataclasses.replace(options, kernels=tflm_scratch.kernels_for(kernels, board.cpu.core))
    if board is not None and tflm_scratch.kernels_for(kernels, board.cpu.core) != options.kernels:
        raise ArenaError(f"--kernels {options.kernels}: board {board.name}'s {board.cpu.core} runs "
                         f"{tflm_scratch.kernels_for(kernels, board.cpu.core)}", field="--kernels",
                         hint=f"write --kernels {tflm_scratch.kernels_for(kernels, board.cpu.core)}")
    tflm_sources.check_kernels(kernels, root, field="--kernels")
    firmware.require_tools(board)
    if shutil.which("g++" if board is None else "arm-none-eabi-g++") is None:
        raise ArenaError("g++ is not on PATH: TFLite Micro is C++" if board is None else
                         "arm-none-eabi-g++ is not on PATH: TFLite Micro is C++", field="--board",
                         hint="install g++ (host) or libstdc++-arm-none-eabi-newlib and gcc-arm-none-eabi (.ci/setup)")
    result = planning.plan_model(model, options, planner, params)
    plan = result.plan_file
    data, alloc = tflm.tflm_measure(model, plan, model)  # the plan is in memory: name the model
    parsed = tflite_model.parse(data, model)
    ins, outs = tflm.io_specs(parsed)
    inputs = tflm.random_inputs(ins, 1, seed)
    want = tflm.run_tflm(data, model, inputs).outputs[0]
    symbol = codegen.sanitize(Path(model).stem).lower()
    methods = tuple(tflm_sources.resolver_methods(root, alloc["ops"], model))
    entry = tflm_app.TflmEntry(symbol, methods, int(alloc["tensor_arena_size"]), tuple(alloc["outputs"]),
                               tuple(np.ascontiguousarray(x).tobytes() for x in inputs[0]), tuple(alloc["ops"]))
    # On a target the firmware gets the plan's tensor_arena (head + tail); the 64-bit host's tail is the
    # host interpreter's own to the byte, which leaves AllocateTensors no room for its temporary planner
    # buffers, so the host build (an output check, not a memory proof) gets the arena the interpreter ran in.
    arena = int(alloc["tensor_arena_size"]) if board is not None else tflm.host_arena_size(data, model)
    entry = dataclasses.replace(entry, arena_bytes=arena)
    work = Path(build_dir) if build_dir else Path(tempfile.mkdtemp(prefix="arena-run-"))
    try:
        built = build(work, board, root, kernels, [(entry, data)], arena, optimize, jobs, progress=err)
        res = run_exe(built.exe, board, symbol, len(outs), [s.name for s in outs], timeout)
        sizes = runreport.elf_sizes(str(built.exe)) if board is not None else None
    finally:
        if not build_dir:
            shutil.rmtree(work, ignore_errors=True)
    lines, ok = summary(model, board, kernels, alloc, res, sizes, outs, want, arena)
    for line in lines:
        print(line, file=out)
    if json_path:
        doc = report(model, board_name, board, kernels, alloc, res, sizes, outs, want, ok)
        check_json(doc, "run_tflm", json_path)
        write_atomic(json_path, json.dumps(doc, indent=2) + "\n")
        print(f"wrote {json_path}", file=out)
    if res.status != 0 or any(o is None for o in res.outputs):
        tail = "\n".join(res.text.splitlines()[-20:])
        print(f"arena-tool: {model}: the firmware's last lines:\n{tail}", file=err)
        said = next((ln.split(" ", 2)[2] for ln in res.text.splitlines()
                     if ln.startswith(f"error {symbol} ") and len(ln.split(" ", 2)) == 3), "")
        print(f"arena-tool: {model}: error: TFLite Micro did not run the model on {board_name} "
              f"(exit status {res.exit_status}, status {res.status}){': ' + said if said else ''}", file=err)
        return EXIT_CHECK_FAILED
    if not ok:
        print(f"arena-tool: {model}: error: mismatch: the firmware's outputs differ from TFLM's host interpreter",
              file=err)
        return EXIT_CHECK_FAILED
    print("match: every output is bit-identical to TFLM's host interpreter", file=out)
    return EXIT_OK


def _same(got: np.ndarray | None, want: np.ndarray) -> bool:
    if got is None or got.size != want.size:
        return False
    return bool(got.astype(want.dtype).tobytes() == np.ascontiguousarray(want).reshape(-1).tobytes())


def summary(model: str, board: Board | None, kernels: str, alloc: dict[str, Any], res: Result,
            sizes: runreport.ElfSizes | None, outs: Sequence[tflm.Spec],
            want: Sequence[np.ndarray], arena: int | None = None) -> tuple[list[str], bool]:
    where = "host (native g++)" if board is None else f"{board.name} (qemu-system-arm -M {board.qemu} -icount shift=0)"
    lines = [f"run {model} on TFLite Micro ({kernels} kernels), {where}, input seeded random"]
    ok = True
    for spec, got, ref in zip(outs, res.outputs, want):
        same = _same(got, ref)
        ok = ok and same
        n = ("-" if got is None or got.size != ref.size else
             str(int(np.count_nonzero(got.astype(ref.dtype) != ref.reshape(-1)))))
        lines.append(f"output {spec.name} {spec.dtype} {list(spec.shape)}: {'bit-identical' if same else 'DIFFERS'} "
                     f"to TFLM's host interpreter ({n} of {ref.size} elements differ)")
    w = 12
    host = f"; the host build runs in {fmt_bytes(arena)}" if board is None and arena is not None else ""
    lines.append(f"{'arena':<{w}} {fmt_bytes(alloc['tensor_arena_size'])} tensor_arena (head + tail, rounded up to 16{host})")
    lines.append(f"{'head':<{w}} {fmt_bytes(alloc['head'])} (arena's plan)")
    lines.append(f"{'tail':<{w}} {fmt_bytes(alloc['tail'])} (TFLM's persistent part: measured on the host, "
                 f"plus the firmware kernels' extra)")
    lines.append(f"{'used':<{w}} " + ("n/a (the firmware printed none)" if res.used is None else
                                      f"{fmt_bytes(res.used)} (TFLM's arena_used_bytes on this build)"))
    if sizes is None:
        lines.append(f"{'flash':<{w}} n/a (host build)")
        lines.append(f"{'instructions':<{w}} n/a (host build)")
    else:
        lines.append(f"{'flash':<{w}} {fmt_bytes(sizes.flash)} (ELF; the planned model {fmt_bytes(alloc['planned_bytes'])})")
        lines.append(f"{'RAM':<{w}} {fmt_bytes(sizes.ram)} (ELF; tensor_arena {fmt_bytes(alloc['tensor_arena_size'])}, "
                     f"stack reserve {fmt_bytes(STACK)})")
        if res.ticks is not None and board is not None and board.cpu.clock_hz:
            lines.append(f"{'instructions':<{w}} {runreport.instructions(res.ticks, board.cpu.clock_hz):,} per inference "
                         f"(SysTick {res.ticks:,} ticks)")
        else:
            lines.append(f"{'instructions':<{w}} n/a (the firmware printed no ticks)")
    return lines, ok


def report(model: str, board_name: str, board: Board | None, kernels: str, alloc: dict[str, Any], res: Result,
           sizes: runreport.ElfSizes | None, outs: Sequence[tflm.Spec], want: Sequence[np.ndarray],
           ok: bool) -> dict[str, Any]:
    """The --json document of a TFLM run (schemas/run_tflm.schema.json; no times, no temporary paths)."""
    insns = (runreport.instructions(res.ticks, board.cpu.clock_hz)
             if res.ticks is not None and board is not None and board.cpu.clock_hz else None)
    return {"model": model.replace(os.sep, "/"), "runtime": "tflm", "kernels": kernels, "board": board_name,
            "head": alloc["head"], "tail": alloc["tail"], "tensor_arena_size": alloc["tensor_arena_size"],
            "used": res.used, "flash": sizes.flash if sizes else None, "ram": sizes.ram if sizes else None,
            "ticks": res.ticks, "instructions": insns, "exit_status": res.exit_status, "status": res.status,
            "outputs": [{"name": s.name, "dtype": s.dtype, "shape": list(s.shape), "bit_identical": _same(g, w)}
                        for s, g, w in zip(outs, res.outputs, want)],
            "result": "match" if ok and res.status == 0 else ("firmware_error" if res.status != 0 else "mismatch")}
