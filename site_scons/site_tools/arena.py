"""SCons tool ``arena``: plan ONNX models, generate C tables and linker scripts, gate RAM and flash.

Use it from any SConstruct::

    import arena_tool
    env = Environment(tools=["arena"], toolpath=[arena_tool.site_tools_dir()])
    env.ArenaFirmware("app/arena.yaml", sources=["app/startup.c", "app/main.c"], cpppath=["app"])

``ArenaFirmware`` reads the manifest (``arena_tool.manifest``; a JSON cache
under ``build/`` skips YAML and JSON Schema work while no input changed),
selects the boards from ``board=`` (one name, ``a,b`` or ``all``; all by
default) and wires, for each distinct (model, resolved options), one plan
``build/plans/<model>-<options digest>.plan.json`` (ArenaPlan <- model.onnx,
Value(options)) and its C tables ``build/tables/<model>-<digest>/model_<model>.{c,h}``
(ArenaTables <- plan, model.onnx): boards with the same options share both.
Then per board, under ``build/<board>/``::

    arena_gate.json            ArenaGate    <- every plan, Value(board settings), board file:
                               RAM budget, weights against the flash, and (runtime arena)
                               every op against what arena's runtime executes
    gen/arena_board.{c,h}      (ArenaGate, once it passes: the arena and the model entries)
    <board>.ld                 (ArenaGate: what ArenaLinkerScript writes from report and board file)
    arena_fragment.ld          instead, with ``linker: fragment``: arena's sections and ASSERTs for the
                               project's own ``linker_script`` to INCLUDE (linker_fragment; the gate
                               also checks that script); the link is ``-T <linker_script> -L build/<board>``
    firmware.elf               the link (when arm-none-eabi-gcc is on PATH), then the ELF check
    arena_report.json          ArenaReport  <- arena_gate.json [, firmware.elf]: the gate's report,
                               with RAM and flash measured on the ELF when linked
    arena_report.{html,md}     (ArenaReport, and every failure that writes the JSON: the same
                               document for people, with the plans' peak, buffers and pictures;
                               ``scons board=NAME report`` builds only the reports and what they need)
    run_report.json            the ``run`` alias: QEMU -icount run, sizes and instructions (runreport)

``runtime: tflm`` (``.tflite`` models; the firmware brings TFLite Micro): each plan
also gives ``build/tables/<model>-<digest>/<model>.tflm.json`` and ``<model>.planned.tflite``
(ArenaTflm <- plan, model.tflite: the planned model, arena's plan as TFLM's
OfflineMemoryAllocation, and TFLM's head and persistent tail as its host interpreter
measures them), which the gate reads (the budget counts head + tail), and
``model_<model>.{c,h}`` (ArenaTflmModel <- planned model, tflm.json: the model as a
16-byte aligned const array, ``<MODEL>_HEAD_SIZE``, ``<MODEL>_TENSOR_ARENA_SIZE``);
the board gets ``gen/tflm_arena.{c,h}`` (``uint8_t tensor_arena[N]`` in section
``.tensor_arena``) instead of ``arena_board.{c,h}``, a linker script whose ``.arena``
(NOLOAD) output section holds ``.tensor_arena``, and neither arena's runtime nor a
coverage check.

Objects are shared by every board with the same compile flags, under
``build/common/<flags>/``: the firmware's own sources (``<their path>.o``, so two
``main.c`` in different folders do not collide), arena's C runtime
(``arena_tool.runtime_dir()``, ``arena_runtime/*.o``; not with ``runtime: none``)
and each plan's tables (``tables/<model>-<digest>.o``): a big weight table
compiles once per flag set, not once per board. Every compile sees the user's
``CPPPATH`` and ``cpppath`` first, then the runtime folder (for
``arena_model.h``), and the environment's own ``CCFLAGS``/``CFLAGS``/
``CPPDEFINES``/``LINKFLAGS``/``LIBS`` after arena's (so a user's flag wins).
Build variables: ``board=``, ``VERBOSE=1``, ``link=0`` (stop after generation),
``gcc_prefix=`` (default ``arm-none-eabi-``). ``ARENA_PROGRESS=1`` in the
environment shows the planner's status line during long searches (off by
default: it would garble the build's output).

Every arena output also depends on ``arena_tool/**/*.{py,json}`` and
``schemas/*.json``: editing the generator rebuilds what it generates. The gate
runs before anything is compiled (every object requires the gates of the
boards that share it); when a board fails it (status over or unsupported) it
prints one ``arena: <board>: ...`` line per problem, writes ``arena_report.json``
saying why, deletes that board's generated files and fails with exit status 1.
A failed link writes the report too (status over when ld says a region
overflowed). ``scons -h`` lists the boards; ``VERBOSE=1`` shows full command
lines; ``scons board=NAME run`` runs the ELF under QEMU for boards with a QEMU
machine; the end of every build prints a per-board summary with PlatformIO-style
RAM and Flash lines.

Integrity: C tables are made only from a plan ``planfile.check`` finds true to
its model (else one error naming the plan, exit 1). Every target of arena's
environments is reused only while its file is the one the signature database
recorded (``_verify_targets``): a build killed before SCons wrote .sconsign
leaves no output a later build accepts. Paths in outputs are relative to the
project (the SConstruct's folder) and objects are compiled with
``-ffile-prefix-map=<project>=.``, so clones at different paths build the same
bytes.

This module only wires: all work happens in ``arena_tool`` calls, imported
inside the actions so reading the SConstruct stays cheap. Per-build values
(a board's settings) live in one ``_State`` held by ``env`` (shared by its
clones) and keyed by target path, never in module globals. A no-op
``scons board=all`` should stay within 1.5x of an empty SConstruct's
(bench/noop_build.py): every node and edge wired here is walked on every
build, so keep them few.
"""

from __future__ import annotations

import json
import os
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _import_arena_tool():
    """arena_tool from the installed package, else from the checkout this tool sits in."""
    try:
        import arena_tool
    except ImportError:
        if os.path.isdir(os.path.join(_ROOT, "arena_tool")) and _ROOT not in sys.path:
            sys.path.insert(0, _ROOT)
        import arena_tool
    return arena_tool


def exists(env) -> bool:
    try:
        _import_arena_tool()
    except ImportError:
        return False
    return True


def _report_error(err) -> None:
    """Render an ArenaError once, on stderr (convention 9)."""
    sys.stderr.write(err.render() + "\n")
    sys.stderr.flush()


def _guarded(body):
    """Make an action of ``body``: ArenaError -> its message and exit code, anything else -> arena bug.

    SCons turns a failing action's status into exit status 2. SystemExit (what
    ``env.Exit`` raises) becomes SCons's ExplicitExit, which keeps ours: 1 over
    budget or a failed check, 2 an input error; the build stops as for any
    failure and the signature database is still written.
    """

    def action(target, source, env) -> int:
        from arena_tool.errors import EXIT_BUG, EXIT_USAGE, ArenaError, os_error

        try:
            body(target, source, env)
        except ArenaError as err:
            if err.msg.startswith("arena: ") and not err.file:
                sys.stderr.write(err.msg + "\n")  # the gate's one line, as it stands
                sys.stderr.flush()
            else:
                _report_error(err)
            raise SystemExit(err.exit_code) from None
        except OSError as err:  # disk full, read-only build folder: the machine's, not an arena bug
            _report_error(os_error(err, "access the file"))
            raise SystemExit(EXIT_USAGE) from None
        except Exception:  # an arena bug: keep the traceback
            import traceback

            traceback.print_exc()
            sys.stderr.write("arena: this is an arena bug; please report it\n")
            raise SystemExit(EXIT_BUG) from None
        return 0

    action.__name__ = body.__name__
    return action


# ---------------------------------------------------------------- per-build state


class _State:
    """What the actions of one ArenaFirmware call look up by target path.

    One object referenced from ``env["ARENA_STATE"]``: SCons's Clone copies dicts
    held in an environment but shares other objects, so every clone sees this one.
    gates: gate path -> (target doc, files deleted when the gate fails, report path);
    elves: ELF path -> target doc; lowered: (plan path, model sha) -> the lowered model the
    coverage check reads (a model shared by boards is lowered once per build);
    written: reports a failure path wrote during this build (for the summary).
    """

    def __init__(self) -> None:
        self.gates: dict = {}
        self.elves: dict = {}
        self.lowered: dict = {}
        self.written: set = set()


def _write_failed(state, path: str, doc) -> None:
    from arena_tool import report

    report.write(path, doc)
    _write_views(state, path, doc)
    state.written.add(path)


def _write_views(state, json_path: str, doc, elf=None) -> None:
    """arena_report.{html,md} beside arena_report.json, from the same document (htmlreport)."""
    from arena_tool import htmlreport

    t = next(t for t, _, path in state.gates.values() if os.path.normpath(path) == os.path.normpath(json_path))
    htmlreport.write(json_path, doc, htmlreport.Memory.of_target(t), elf)


# ---------------------------------------------------------------- reuse only what was recorded


def _verify_targets(env) -> None:
    """Make ``env``'s Decider also rebuild a target whose file is not the one SCons recorded.

    SCons writes its signature database (.sconsign) at the end of a build, so a build killed
    after writing new outputs leaves files that the old records do not describe; once the edit
    is reverted, every input matches those records again and the stale files would be reused
    for ever. Each target's recorded content hash (sconsign's csig, which sits beside the hashes
    of the inputs it was built from) is compared with its file before reuse: by timestamp and
    size first (as max_drift trusts a stored checksum; SCons keeps whole seconds, so a file
    rewritten within the recorded second at the same size passes), by content when those differ.
    """
    inner_source, inner_target = env.decide_source, env.decide_target
    verdicts: dict = {}

    def decide(dependency, target, prev_ni, repo_node=None) -> bool:
        inner = inner_target if dependency.has_builder() else inner_source
        changed = inner(dependency, target, prev_ni, repo_node)
        return changed or not _as_recorded(target, verdicts)

    env.Decider(decide)


def _as_recorded(target, verdicts: dict) -> bool:
    """Whether ``target``'s file is the one its stored signature describes (True when nothing is
    recorded or the file is missing: SCons rebuilds those anyway)."""
    ninfo = getattr(target.get_stored_info(), "ninfo", None)
    csig = getattr(ninfo, "csig", None)
    if not csig or not hasattr(target, "get_content_hash") or not target.exists():
        return True
    stamp = (target.get_timestamp(), target.get_size())
    if stamp == (getattr(ninfo, "timestamp", None), getattr(ninfo, "size", None)):
        return True
    key = (target.get_abspath(), stamp)
    if key not in verdicts:
        verdicts[key] = target.get_content_hash() == csig
    return verdicts[key]


# ---------------------------------------------------------------- actions


@_guarded
def _plan_action(target, source, env) -> None:
    from arena_tool import planfile, planning, planners, progress
    from arena_tool.problem import ModelOptions

    spec = json.loads(source[1].read())
    options = ModelOptions.from_doc(spec["options"])
    model = source[0].path.replace(os.sep, "/")
    # a status line only when asked: it would garble the build's normal (and -j) output
    shown = progress.for_stream(sys.stderr, True) if os.environ.get("ARENA_PROGRESS") == "1" else None
    params = planners.Params(k=spec["k"], time_limit=spec["time_limit"], progress=shown)
    regions = [tuple(r) for r in spec.get("regions", ())]  # a split arena: (region, capacity) fastest first
    planfile.write(target[0].path, planning.plan_model(model, options, spec["planner"], params, regions).doc)


def _runtime_problems(state, board: str, spec, plan_path: str, plan_doc) -> list:
    """report.runtime_problems of one model; a model shared by boards is lowered once per build."""
    from arena_tool import planfile, report

    key = (plan_path, plan_doc["model_sha256"])
    lowered = state.lowered.get(key)
    if lowered is None:
        lowered = state.lowered[key] = planfile.lowered_model(spec.path, plan_doc)
    return report.runtime_problems(board, spec.name, plan_doc, lowered)


_REBUILD = "delete it and run scons again: arena makes it anew"


@_guarded
def _gate_action(target, source, env) -> None:
    from arena_tool import boards, manifest, report
    from arena_tool.errors import ArenaError
    from arena_tool.schema import read_json

    state = env["ARENA_STATE"]
    target_doc, outputs, report_path = state.gates[target[0].path]
    board_target = manifest.target_from_doc(target_doc)
    plans = [(spec.name, node.path, read_json(node.path, "plan file", _REBUILD, schema="plan"))
             for spec, node in zip(board_target.models, source)]

    def fastest(min_size: int, reserve: int) -> str | None:
        board = boards.load_board_file(board_target.board_file)
        try:
            return board.fastest_region(min_size, reserve=reserve).name
        except ArenaError:
            return None

    problems = []
    tflm = None
    if board_target.runtime == "tflm":  # then one tflm.json per model: TFLM's measured tail
        n = len(board_target.models)
        tflm = {spec.name: read_json(node.path, "TFLM allocation file", _REBUILD)
                for spec, node in zip(board_target.models, source[n:2 * n])}
    elif board_target.runtime != "none":
        for spec, (_, path, doc) in zip(board_target.models, plans):
            problems += _runtime_problems(state, board_target.name, spec, path, doc)
    rep = report.gate(board_target, plans, fastest, problems, tflm=tflm)
    doc = report.to_doc(rep)
    report.write(target[0].path, doc)
    failed = report.failure(rep)
    if failed is not None:
        for path in outputs:
            if os.path.exists(path):
                os.unlink(path)
        _write_failed(state, report_path, doc)
        raise failed
    if rep.warning:
        sys.stdout.write(rep.warning + "\n")
    if len(target) > 1:  # [gate, arena_board.c (tflm_arena.c), its .h, <board>.ld]
        _write_arena(doc, target[1].path, target[2].path)
        if board_target.linker == "fragment":
            _write_fragment(doc, board_target, target[3].path)
        else:
            _write_ld(doc, board_target.board_file, target[3].path)


@_guarded
def _report_action(target, source, env) -> None:
    """arena_report.json: the gate's report, with RAM and flash measured on the ELF when linked."""
    from arena_tool import elfcheck, report

    doc = report.read(source[0].path)
    if len(source) > 1:
        ram, flash = elfcheck.usage(source[1].path)
        doc = report.with_elf(doc, ram, flash, env["ARENA_STATE"].elves[source[1].path]["flash"][0])
    report.write(target[0].path, doc)
    _write_views(env["ARENA_STATE"], target[0].path, doc, source[1].path if len(source) > 1 else None)
    failed = report.failure(doc)
    if failed is not None:
        raise failed


@_guarded
def _tflm_action(target, source, env) -> None:
    """[<model>.tflm.json, <model>.planned.tflite] <- [plan, model.tflite]: the planned model and TFLM's arena."""
    from arena_tool import planfile, report
    from arena_tool.schema import write_atomic

    doc = planfile.read(source[0].path)
    data, alloc = report.tflm_measure(source[1].path.replace(os.sep, "/"), doc, source[0].path)
    write_atomic(target[1].path, data)
    write_atomic(target[0].path, json.dumps(alloc, indent=1, sort_keys=True) + "\n")


@_guarded
def _tflm_model_action(target, source, env) -> None:
    """model_<symbol>.{c,h} <- [<model>.planned.tflite, <model>.tflm.json]."""
    from arena_tool import codegen

    with open(source[0].abspath, "rb") as f:
        data = f.read()
    alloc = json.loads(source[1].get_text_contents())
    symbol = os.path.basename(target[0].path)[len("model_"):-len(".c")]
    header, body = codegen.tflm_model_sources(symbol, data, alloc["head"], alloc["tail"])
    codegen.write(target[1].path, header)
    codegen.write(target[0].path, body)


@_guarded
def _tables_action(target, source, env) -> None:
    """model_<symbol>.{c,h} <- [plan, model]: only from a plan planfile.check finds true to the model."""
    from arena_tool import codegen, planfile

    doc, lowered = planfile.verified(source[0].path, source[1].path.replace(os.sep, "/"))
    symbol = os.path.basename(target[0].path)[len("model_"):-len(".c")]  # model_<symbol>.c
    header, body = codegen.model_sources(doc, lowered, symbol)
    codegen.write(target[1].path, header)
    codegen.write(target[0].path, body)


def _write_arena(doc, c_path, h_path) -> None:
    """arena_board.{c,h} from a report."""
    from arena_tool import codegen

    bases = [(m["name"], m["base"]) for m in doc["models"]]
    if doc.get("runtime") == "tflm":
        header, body = codegen.tflm_arena_sources(doc["board"], doc["arena_size"], bases)
    else:
        header, body = codegen.arena_sources(doc["board"], doc["arena_size"], bases, doc.get("alignment", 16),
                                             doc.get("regions", ()))
    codegen.write(h_path, header)
    codegen.write(c_path, body)


def _write_ld(doc, board_file, path) -> None:
    from arena_tool import boards, linker

    board = boards.load_board_file(board_file)
    text = linker.render(board, doc["region"]["name"], doc["arena_size"], doc["reserve"]["stack"],
                         doc["reserve"]["heap"], arena_align=doc["alignment"],
                         arena_input=".tensor_arena" if doc.get("runtime") == "tflm" else ".arena",
                         regions=doc.get("regions", ()))
    linker.write(path, text)


def _write_fragment(doc, board_target, path) -> None:
    """arena_fragment.ld for the board's own linker script, after checking that script for the
    resolved region (region: auto is known only now)."""
    from arena_tool import boards, linker_fragment

    board = boards.load_board_file(board_target.board_file)
    names = dict(board_target.linker_regions)
    needed = linker_fragment.needed_names(linker_fragment.regions_of(board, doc), names)
    origins = {r.name: r.origin for r in (*board.ram, board.flash)}
    linker_fragment.check_script(board_target.linker_script, needed, field="linker_script", origins=origins)
    linker_fragment.write(path, linker_fragment.render_for_report(board, doc, names))


@_guarded
def _arena_action(target, source, env) -> None:
    from arena_tool import report

    _write_arena(report.read(source[0].path), target[0].path, target[1].path)


@_guarded
def _ld_action(target, source, env) -> None:
    from arena_tool import report

    _write_ld(report.read(source[0].path), source[1].path, target[0].path)


@_guarded
def _link_action(target, source, env) -> None:
    """Run $ARENA_LINKCOM with its output captured: a failed link still writes the board's report
    (status over, naming the region, when ld says one overflowed)."""
    import subprocess

    from arena_tool import report
    from arena_tool.errors import EXIT_USAGE, ArenaError

    cmd = [str(a) for a in env.subst_list("$ARENA_LINKCOM", 0, target, source)[0]]
    try:
        p = subprocess.run(cmd, env={k: str(v) for k, v in env["ENV"].items()}, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
    except OSError as e:
        raise ArenaError(f"cannot run the linker {cmd[0]}: {e}", hint="check gcc_prefix= and PATH") from None
    out = sys.stdout if p.returncode == 0 else sys.stderr
    out.write(p.stdout)
    out.flush()
    if p.returncode == 0:
        return
    state = env["ARENA_STATE"]
    elf = target[0].path
    t = state.elves[elf]
    bdir = os.path.dirname(elf)
    doc = report.read(os.path.join(bdir, "arena_gate.json"))
    doc = report.link_failure(doc, p.stdout, t["flash"][0], _region_lengths(t))
    _write_failed(state, os.path.join(bdir, "arena_report.json"), doc)
    failed = report.failure(doc)
    if doc["status"] == "error":
        failed.exit_code = EXIT_USAGE  # not a budget: a source or a flag the linker refused
    raise failed


def _region_lengths(t) -> dict:
    """Region name -> bytes for a failed link's messages: the board's, and with linker: fragment
    the MEMORY regions of the user's script (whose names ld reports)."""
    lengths = {r[0]: r[2] for r in t["regions"]}
    if t.get("linker") == "fragment":
        from arena_tool import linker_fragment

        lengths.update(linker_fragment.memory_lengths(t["linker_script"]))
    return lengths


@_guarded
def _elfcheck_action(target, source, env) -> None:
    from arena_tool import boards, elfcheck, report
    from arena_tool.errors import ArenaError

    state = env["ARENA_STATE"]
    elf = target[0].path
    bdir = os.path.dirname(elf)
    doc = report.read(os.path.join(bdir, "arena_gate.json"))
    try:
        board = boards.load_board_file(state.elves[elf]["board_file"])
        elfcheck.check(elf, board, doc)
    except ArenaError as err:
        if os.path.exists(elf):
            os.unlink(elf)
        msg = err.msg if err.msg.startswith(doc["board"] + ": ") else f"{doc['board']}: {err.msg}"
        failed = report.with_problem(doc, report.Problem("elf", f"arena: {msg}"))
        _write_failed(state, os.path.join(bdir, "arena_report.json"), failed)
        raise


@_guarded
def _run_action(target, source, env) -> None:
    """Run each ELF under QEMU (-icount shift=0), write build/<board>/run_report.json, print its table."""
    from arena_tool import boards, qemu, report, runreport
    from arena_tool.errors import CheckFailed

    tables = []
    failed = None
    for node in source:
        t = env["ARENA_QEMU"][node.path]
        machine = t["qemu"]
        rc, output = qemu.run(node.path, machine, env.get("ARENA_QEMU_TIMEOUT", 60), icount=True)
        sys.stdout.write(output if output.endswith("\n") or not output else output + "\n")
        sys.stdout.flush()
        board = boards.load_board_file(t["board_file"])
        rep_path = os.path.join(os.path.dirname(node.path), "arena_report.json")
        arena_doc = report.read(rep_path) if os.path.exists(rep_path) else None
        doc = runreport.build(t["name"], machine, node.path, rc, output, board.cpu.clock_hz, arena_doc)
        runreport.write(os.path.join(os.path.dirname(node.path), "run_report.json"), doc)
        tables.append(runreport.table(doc))
        if rc != 0 and failed is None:
            failed = CheckFailed(f"firmware exited with status {rc} under qemu -M {machine}", file=node.path)
    if tables:
        sys.stdout.write("\n".join(tables) + "\n")
        sys.stdout.flush()
    if failed is not None:
        raise failed


# ---------------------------------------------------------------- emitters


def _pair_emitter(target, source, env):
    """x.c -> [x.c, x.h]: both outputs are declared, so SCons scans and cleans both."""
    base, _ = os.path.splitext(str(target[0]))
    return [target[0], env.File(base + ".h")], source


def _report_emitter(target, source, env):
    """arena_report.json -> [it, arena_report.html, arena_report.md] (htmlreport's views)."""
    folder = os.path.dirname(str(target[0]))
    return [target[0]] + [env.File(os.path.join(folder, n)) for n in ("arena_report.html", "arena_report.md")], source


def _gate_emitter(target, source, env):
    """[gate, arena_board.c, x.ld] -> the same with arena_board.h after arena_board.c."""
    if len(target) > 1:
        base, _ = os.path.splitext(str(target[1]))
        target = [target[0], target[1], env.File(base + ".h")] + list(target[2:])
    return target, source


def _generator_deps(env):
    """One Value node: manifest_cache.package_digest(), the bytes of arena_tool/**/*.{py,json}
    and schemas/*.json (the same digest keys the manifest cache, computed once).

    Every arena output depends on it (convention 13), so editing the generator
    rebuilds what it generates. One digest node instead of ~60 file edges per
    target keeps the no-op build's dependency walk short; hashing the files
    costs about a millisecond.
    """
    from arena_tool import manifest_cache

    return [env.Value("arena_tool sources " + manifest_cache.package_digest())]


# ---------------------------------------------------------------- wiring


def _truthy(value) -> bool:
    return str(value).strip().lower() in ("1", "yes", "true", "on")


def _user_vars(env) -> dict:
    """What the user's environment brings to every compile and link (after arena's own flags):
    CCFLAGS, LINKFLAGS, CPPPATH, LIBS as lists; CFLAGS, CPPDEFINES, LIBPATH as they are."""
    out = {}
    for var in ("CCFLAGS", "LINKFLAGS", "CPPPATH", "LIBS"):
        value = env.get(var)
        if isinstance(value, str):
            value = value.split() if var in ("CCFLAGS", "LINKFLAGS") else [value]
        out[var] = list(value) if value else []
    for var in ("CFLAGS", "CPPDEFINES", "LIBPATH"):
        out[var] = env.get(var) or []
    return out


def _arena_firmware(env, manifest_path, sources=(), cpppath=(), board=None, link=None, build_dir=None,
                    board_dirs=()):
    """Wire every selected board of a manifest; returns {board: {name: node(s)}}.

    board: 'all', 'a,b' or one name (default: ARGUMENTS['board'], else all).
    link: False to stop after generation; default: link when the cross gcc is found.
    sources/cpppath: the firmware's own C files and include folders (arena's runtime is
    added unless the manifest says ``runtime: none``). The environment's CCFLAGS, CFLAGS,
    CPPDEFINES, CPPPATH, LINKFLAGS, LIBS and LIBPATH, as set before this call, reach
    every compile and the link.
    """
    from SCons.Action import Action
    from SCons.Script import ARGUMENTS, Exit, GetOption

    arena_tool = _import_arena_tool()
    from arena_tool import manifest_cache
    from arena_tool.errors import ArenaError

    build_dir = build_dir or env.subst("$ARENA_BUILD_DIR")
    board = board if board is not None else ARGUMENTS.get("board")
    try:
        manifest_path = manifest_cache.project_path(str(manifest_path), env.Dir("#").abspath)  # no clone's path in outputs
        m = manifest_cache.cached(manifest_path, tuple(board_dirs) + tuple(env["ARENA_BOARD_DIRS"]),
                                  os.path.join(build_dir, ".arena_manifest.json"))
        by_name = {t["name"]: t for t in m["targets"]}
        targets = [by_name[n] for n in manifest_cache.select_names(list(by_name), board, m["file"])]
    except ArenaError as err:
        _report_error(err)
        Exit(err.exit_code)
    if GetOption("help"):
        env.Help(_help_text(m, arena_tool), append=True)

    if link is None:
        link = _truthy(ARGUMENTS.get("link", "1"))
    if "gcc_prefix" in ARGUMENTS:
        env["ARENA_GCC_PREFIX"] = ARGUMENTS["gcc_prefix"]
    gcc = env.WhereIs(env.subst("${ARENA_GCC_PREFIX}gcc"), os.environ.get("PATH", "")) if link else None
    if link and not gcc and not GetOption("help") and not GetOption("clean"):
        print(f"arena: {env.subst('${ARENA_GCC_PREFIX}gcc')} not found on PATH: stopping after plans, "
              "C tables and linker scripts (install gcc-arm-none-eabi to link and check the ELF)")
    # The arena builders' environment: board settings are looked up by target path (no
    # override environment per call); no scanners, so an alias never re-reads generated C.
    state = _State()
    user = _user_vars(env)
    aenv = env.Clone(SCANNERS=[], ARENA_STATE=state)
    _verify_targets(aenv)
    wiring = _Wiring(aenv, build_dir, _generator_deps(aenv), sources, cpppath, user)
    if gcc:
        prefix = env.subst("$ARENA_GCC_PREFIX")
        cross = env.Clone(tools=["cc", "link"])  # not "gcc": it runs "gcc --version" on every read
        cross.Replace(CC=prefix + "gcc", LINK=prefix + "gcc", AS=prefix + "gcc", OBJSUFFIX=".o",
                      ARENA_STATE=state, ARENA_LINKCOM="$LINK -o $TARGET $LINKFLAGS $SOURCES $_LIBDIRFLAGS $_LIBFLAGS")
        cross.PrependENVPath("PATH", os.path.dirname(gcc))
        _verify_targets(cross)
        wiring.cross = cross
    result = {}
    reports = []
    views: list = []
    qemu_elves = {}
    generated: list = []
    tops: list = []
    for t in targets:
        nodes = wiring.board(t)
        result[t["name"]] = nodes
        reports += nodes["report"]
        views += nodes["views"]
        aenv.Alias(t["name"], nodes["top"])
        generated += nodes["generated"]
        tops += nodes["top"]
        if "elf" in nodes and t["qemu"]:
            qemu_elves[nodes["elf"][0].path] = t
    aenv.Alias("arena", generated)
    aenv.Alias("report", reports + views)  # the reports and what they need: plans, gate (and the ELF when linking)
    env.Default(aenv.Alias("boards", tops))
    if qemu_elves:
        run = env.Alias("run", [env.File(p) for p in sorted(qemu_elves)],
                        Action(_run_action, "$ARENARUNCOMSTR"), ARENA_QEMU=qemu_elves)
        env.Depends(run, [r for r in reports if os.path.dirname(r.path) + "/firmware.elf" in qemu_elves])
    else:
        run = env.Alias("run", [], Action(_no_run_action, None), ARENA_NO_RUN=(
            [t["name"] for t in targets], bool(gcc)))
    env.AlwaysBuild(run)
    if not (GetOption("help") or GetOption("clean") or GetOption("no_exec")):
        import atexit

        atexit.register(_print_summary, reports, state, os.path.join(build_dir, ".arena_summary.json"))
    return result


def _no_run_action(target, source, env) -> int:
    names, have_gcc = env["ARENA_NO_RUN"]
    why = "none of them has a qemu machine in its board file" if have_gcc else "no cross gcc to build an ELF"
    sys.stderr.write(f"arena: run: cannot run board(s) {', '.join(names)}: {why}\n")
    return 2


def scons_path(path: str) -> str:
    """``path`` as SCons must be given it to mean exactly that file: SCons expands ``$`` in
    strings, so ``$`` is written ``$$`` (a model called ``a$b.onnx`` stays ``a$b.onnx``)."""
    return path.replace("$", "$$")


def _digest(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()[:10]


class _Wiring:
    """The nodes of one ArenaFirmware call; shares plans, tables and objects between boards."""

    def __init__(self, env, build_dir, deps, sources, cpppath, user):
        self.env = env
        self.build_dir = build_dir
        self.deps = deps  # the generator digest: every arena output depends on it
        self.sources = list(sources)
        self.cpppath = list(cpppath)
        self.user = user  # the user's compile and link variables (_user_vars)
        self.cross = None  # the cross-compiling environment, when linking
        self.plans: dict = {}  # ModelSpec.key() -> (plan node, tables .c node, tables base name)
        self.allocs: dict = {}  # ModelSpec.key() -> [tflm.json node] (runtime tflm)
        self.flag_envs: dict = {}  # compile flags -> _FlagEnv
        self.runtime_dir = _import_arena_tool().runtime_dir()
        self.elfcheck = None
        self.top = None

    def plan(self, spec, tflm=False):
        """The plan of one model under one set of options and its C tables, shared by every board
        that uses them: build/plans/<model>-<digest>.plan.json and
        build/tables/<model>-<digest>/model_<model>.{c,h} (digest: first 10 hex digits of
        sha256(options))."""
        key = spec["key"]
        entry = self.plans.get(key)
        if entry is None:
            env = self.env
            name = f"{spec['name']}-{_digest(key)}"
            model = env.File(scons_path(spec["path"]))  # a node: no src_suffix added, no $ expanded
            plan = env.ArenaPlan(f"{self.build_dir}/plans/{name}.plan.json", [model, env.Value(key)])
            folder = f"{self.build_dir}/tables/{name}"
            if tflm:  # a .tflite (the manifest allows it on runtime: tflm boards only)
                alloc = env.ArenaTflm([f"{folder}/{spec['name']}.tflm.json", f"{folder}/{spec['name']}.planned.tflite"],
                                      [plan, model])
                tables = env.ArenaTflmModel(f"{folder}/model_{spec['name']}.c", [alloc[1], alloc[0]])
                env.Depends(alloc, self.deps)
                self.allocs[key] = alloc[:1]
            else:
                tables = env.ArenaTables(f"{folder}/model_{spec['name']}.c", [plan, model])
            env.Depends(plan + tables, self.deps)
            entry = self.plans[key] = (plan, tables, name)
        return entry

    def board(self, t):
        env = self.env
        bdir = f"{self.build_dir}/{t['name']}"
        gen = f"{bdir}/gen"
        gate_path = f"{bdir}/arena_gate.json"
        report_path = f"{bdir}/arena_report.json"
        board_file = env.File(scons_path(t["board_file"]))
        tflm = t.get("runtime") == "tflm"
        entries = [self.plan(spec, tflm) for spec in t["models"]]
        board_plans = [p for plan, _, _ in entries for p in plan]
        allocs = [a for spec in t["models"] for a in self.allocs[spec["key"]]] if tflm else []
        gate_key = env.Value(t["key"] + "|" + "|".join(s["key"] for s in t["models"]))
        env["ARENA_STATE"].gates[gate_path] = (t, _board_outputs(bdir, gen, t), report_path)
        # Once it passes, the gate also writes what follows from its report (as ArenaArena and
        # ArenaLinkerScript would): one node for all keeps a no-op build's walk short.
        fragment = t.get("linker") == "fragment"  # the user's script INCLUDEs arena_fragment.ld
        script = [env.File(scons_path(t["linker_script"]))] if fragment else []  # checked by the gate
        gate = env.ArenaGate([gate_path, f"{gen}/{'tflm_arena' if tflm else 'arena_board'}.c",
                              f"{bdir}/{'arena_fragment' if fragment else t['name']}.ld"],
                             board_plans + allocs + [gate_key, board_file] + script)
        rep, arena, ld = gate[:1], gate[1:3], gate[3:]
        tables = []
        for _, tab, _ in entries:
            env.Requires(tab, rep)  # order only: the gates pass before a table is generated
            tables += tab
        generated = board_plans + allocs + gate + tables
        env.Depends(gate, self.deps)
        nodes = {"plans": board_plans, "gate": rep, "tables": tables, "arena": arena, "ld": ld}
        if self.cross is not None:
            elf = self.elf(t, bdir, arena[0], ld, rep, entries)
            final = env.ArenaReport(report_path, rep + elf)
            nodes["elf"] = elf
        else:
            final = env.ArenaReport(report_path, rep)
        env.Depends(final, self.deps + board_plans)  # the HTML/Markdown views read the plans
        # Linked, the report depends on all the rest (short alias child lists); else the tables too.
        # ``generated`` (the "arena" alias) stops before compiling: the linked report is not in it.
        linked = "elf" in nodes
        nodes.update(report=final[:1], views=final[1:], generated=generated + ([] if linked else final),
                     all=generated + final + nodes.get("elf", []), top=final if linked else final + tables)
        return nodes

    def flag_env(self, t):
        """The compile environment and shared objects of one set of core flags (created once)."""
        flags = list(t["gcc_flags"])
        key = "_".join(f.split("=", 1)[-1] for f in flags if not f.startswith("-mthumb"))
        fe = self.flag_envs.get(key)
        if fe is None:
            fe = self.flag_envs[key] = _FlagEnv(self, key, flags)
        return fe

    def elf(self, t, bdir, arena_c, ld, rep, entries):
        """Compile and link one board's firmware; the ELF check runs right after the link.

        Boards with the same compile flags share one environment and every object but
        their own arena_board.o (build/<board>/obj/); the linker flags reach the board's
        script and map through $TARGET (build/<board>/firmware.elf).
        """
        from SCons.Action import Action

        fe = self.flag_env(t)
        self.env.Alias(fe.alias, rep)  # the objects this board shares wait for its gate too
        stem = os.path.splitext(os.path.basename(arena_c.path))[0]  # arena_board, or tflm_arena
        objs = fe.env.Object(f"{bdir}/obj/{stem}.o", arena_c) + fe.app_objects()
        if t.get("runtime", "arena") not in ("none", "tflm"):
            objs += fe.runtime_objects()
        for plan, tables, name in entries:
            objs += fe.tables_object(name, tables[0])
        if self.elfcheck is None:
            self.elfcheck = Action(_elfcheck_action, "$ARENAELFCHECKCOMSTR")
            cmdstr = "$LINKCOMSTR" if self.cross.get("LINKCOMSTR") else "$ARENA_LINKCOM"
            self.link = Action(_link_action, cmdstr, varlist=["ARENA_LINKCOM"])
        fenv = fe.env
        if t.get("linker") == "fragment":
            script = fenv.File(scons_path(t["linker_script"]))
            elf = fenv.Command(f"{bdir}/firmware.elf", objs, self.link,
                               LINKFLAGS=_fragment_linkflags(fenv["LINKFLAGS"], script.path))
            fenv.Depends(elf, script)
        else:
            elf = fenv.Command(f"{bdir}/firmware.elf", objs, self.link)
        fenv["ARENA_STATE"].elves[elf[0].path] = t
        fenv.Depends(elf, ld)  # the script holds everything the ELF check reads of the gate's report
        fenv.Clean(elf, [f"{bdir}/firmware.map", f"{bdir}/run_report.json"])
        fenv.AddPostAction(elf, self.elfcheck)
        return elf


class _FlagEnv:
    """One compile environment (core flags + arena's + the user's) and the objects its boards share.

    Objects under build/common/<key>/: the firmware's sources at their own path (see
    ``_object_name``), the runtime under arena_runtime/, each plan's tables under tables/. Every object requires the gates of the boards that link it (one Alias).
    """

    def __init__(self, wiring, key, flags):
        self.wiring = wiring
        self.key = key
        self.root = f"{wiring.build_dir}/common/{key}"
        user = wiring.user
        ccflags = flags + ["-Os", "-g", "-std=c99", "-Wall", "-Wextra", "-Werror=overflow", "-Wtrigraphs",
                           "-Werror=trigraphs", "-ffunction-sections", "-fdata-sections", _prefix_map(wiring.env)] + list(wiring.cross.get("ARENA_EXTRA_CCFLAGS", [])) + user.get("CCFLAGS", [])
        linkflags = flags + ["-nostartfiles", "--specs=nano.specs", "--specs=nosys.specs", "-Wl,--gc-sections",
                             "-Wl,-Map,${TARGET.dir}/firmware.map",
                             "-T", "${TARGET.dir}/${TARGET.dir.name}.ld"] + user.get("LINKFLAGS", [])
        cpppath = user.get("CPPPATH", []) + wiring.cpppath + [wiring.runtime_dir]
        self.env = wiring.cross.Clone(CPPPATH=cpppath, CCFLAGS=ccflags, CFLAGS=user.get("CFLAGS", []),
                                      CPPDEFINES=user.get("CPPDEFINES", []), LINKFLAGS=linkflags,
                                      LIBS=user.get("LIBS", []) + ["m"], LIBPATH=user.get("LIBPATH", []))
        _freeze_helpers(self.env)
        self.alias = wiring.env.Alias(f"arena-gates-{key}")  # the gates of the boards using this environment
        self._app = None
        self._runtime = None
        self._tables: dict = {}

    def _object(self, path, src):
        objs = self.env.Object(path, src)
        self.env.Requires(objs, self.alias)  # order only: nothing compiles before its boards' gates
        return objs

    def app_objects(self):
        if self._app is None:
            self._app = []
            for src in self.wiring.sources:
                node = self.env.File(str(src)) if not hasattr(src, "abspath") else src
                self._app += self._object(f"{self.root}/{_object_name(node.abspath, self.env.Dir('#').abspath, self.wiring.runtime_dir)}.o", node)
        return self._app

    def runtime_objects(self):
        if self._runtime is None:
            folder = self.wiring.runtime_dir
            names = sorted(n for n in os.listdir(folder) if n.endswith(".c"))
            self._runtime = []
            for n in names:
                self._runtime += self._object(f"{self.root}/arena_runtime/{n[:-2]}.o", os.path.join(folder, n))
        return self._runtime

    def tables_object(self, name, tables_c):
        obj = self._tables.get(name)
        if obj is None:
            obj = self._tables[name] = self._object(f"{self.root}/tables/{name}.o", tables_c)
        return obj


def _prefix_map(env) -> str:
    """-ffile-prefix-map=<project>=.: debug info and __FILE__ name project files relative to
    it, so two clones at different paths build byte-identical objects and ELFs."""
    return "-ffile-prefix-map=" + scons_path(env.Dir("#").abspath) + "=."


def _object_name(path, top, runtime_dir):
    """A source's object path below build/common/<flags>/, without suffix: its path in the
    project; under arena's runtime folder arena_runtime/<path there>; elsewhere outside the
    project _ext/<digest of its folder>/<name>. Same-named files in two folders never collide."""
    stem = os.path.splitext(path)[0]
    for base, prefix in ((runtime_dir, "arena_runtime/"), (top, "")):
        rel = os.path.relpath(stem, base)
        if not rel.startswith(".." + os.sep) and rel != ".." and not os.path.isabs(rel):
            return prefix + rel.replace(os.sep, "/")
    return f"_ext/{_digest(os.path.dirname(path))[:8]}/{os.path.basename(stem)}"


# SCons's compile and link lines call generic helpers (_concat over RDirs,
# _defines, _stripixes) every time a command is substituted, and a no-op
# build substitutes every command for its signature. Their inputs:
_FROZEN = {"_CPPINCFLAGS": ("INCPREFIX", "CPPPATH", "INCSUFFIX"),
           "_CPPDEFFLAGS": ("CPPDEFPREFIX", "CPPDEFINES", "CPPDEFSUFFIX"),
           "_LIBDIRFLAGS": ("LIBDIRPREFIX", "LIBPATH", "LIBDIRSUFFIX"),
           "_LIBFLAGS": ("LIBLINKPREFIX", "LIBS", "LIBLINKSUFFIX", "LIBPREFIXES", "LIBSUFFIXES")}


def _freeze_helpers(env) -> None:
    """Store those helpers' results in ``env`` as plain strings, computed once.

    Same command lines and signatures (a raw substitution keeps the ``$( $)``
    markers); a helper whose inputs mention ``$TARGET``/``$SOURCE`` stays as it is.
    """
    for var, inputs in _FROZEN.items():
        if var in env and not any(w in repr(env.get(k, "")) for k in inputs for w in ("TARGET", "SOURCE")):
            env[var] = env.subst("$" + var, raw=1)


def _fragment_linkflags(flags, script):
    """arena's link flags with ``-T <the user's script> -L <its folder> -L <the board folder>``
    instead of ``-T`` arena's script: ld finds INCLUDEd files through -L."""
    out = list(flags)
    i = out.index("-T")
    folder = os.path.dirname(script) or "."
    out[i:i + 2] = ["-T", scons_path(script), "-L", scons_path(folder), "-L", "${TARGET.dir}"]
    return out


def _board_outputs(bdir, gen, t):
    """Files deleted when the gate fails, so no stale board file, script or ELF survives."""
    return [f"{gen}/arena_board.c", f"{gen}/arena_board.h", f"{gen}/tflm_arena.c", f"{gen}/tflm_arena.h",
            f"{bdir}/{t['name']}.ld", f"{bdir}/arena_fragment.ld",
            f"{bdir}/firmware.elf", f"{bdir}/firmware.map", f"{bdir}/run_report.json"]


def _help_text(m, arena_tool) -> str:
    from arena_tool import boards

    shipped = boards.list_boards(list(m["board_dirs"]))
    lines = ["", "arena (manifest " + m["file"] + "):",
             "  scons board=NAME        build one board (also board=a,b and board=all; default all)",
             "  scons board=NAME run    run the firmware under QEMU (boards with a qemu machine)",
             "  scons board=NAME report build/NAME/arena_report.{json,html,md} (and what they need)",
             "  scons -c board=NAME     remove that board's outputs under build/NAME",
             "  VERBOSE=1               show full command lines;  link=0  stop after generation",
             "  gcc_prefix=PREFIX       cross compiler prefix (default arm-none-eabi-)",
             "", "  boards in the manifest:"]
    for t in m["targets"]:
        qemu = f", qemu {t['qemu']}" if t["qemu"] else ""
        runtime = f", runtime {t['runtime']}" if t.get("runtime", "arena") != "arena" else ""
        runtime += f", linker fragment for {t['linker_script']}" if t.get("linker") == "fragment" else ""
        lines.append(f"    {t['name']:<18} region {t['region']}, budget {t['budget']['text']}{qemu}{runtime}")
    lines.append("  all known boards: " + ", ".join(shipped))
    return "\n".join(lines) + "\n"


def _print_summary(report_nodes, state, cache_file) -> None:
    """At exit: one block per board whose report this build wrote or found up to date, or that a
    failure wrote (a board the build never reached is not shown)."""
    from SCons.Node import executed, up_to_date

    paths = [n.path for n in report_nodes
             if (n.get_state() in (executed, up_to_date) or n.path in state.written) and os.path.exists(n.path)]
    if paths:
        from arena_tool import manifest_cache

        sys.stdout.write(manifest_cache.summary(paths, cache_file) + "\n")
        sys.stdout.flush()


# ---------------------------------------------------------------- tool entry points


def generate(env, **kwargs) -> None:
    from SCons.Action import Action
    from SCons.Builder import Builder
    from SCons.Script import ARGUMENTS

    _import_arena_tool()
    verbose = _truthy(env.get("VERBOSE", ARGUMENTS.get("VERBOSE", "0")))
    env.SetDefault(ARENA_BUILD_DIR="build", ARENA_BOARD_DIRS=[], ARENA_GCC_PREFIX="arm-none-eabi-")
    comstrs = {
        "ARENAPLANCOMSTR": "Planning $TARGET",
        "ARENAGATECOMSTR": "Checking budget $TARGET",
        "ARENAREPORTCOMSTR": "Checking $TARGET",
        "ARENATABLESCOMSTR": "Generating $TARGET",
        "ARENATFLMCOMSTR": "Generating $TARGET",
        "ARENAARENACOMSTR": "Generating $TARGET",
        "ARENALDCOMSTR": "Generating $TARGET",
        "ARENAELFCHECKCOMSTR": "Checking $TARGET",
        "ARENARUNCOMSTR": "Running $SOURCES",
        "CCCOMSTR": "Compiling $TARGET",
        "LINKCOMSTR": "Linking $TARGET",
    }
    for key, text in comstrs.items():
        env.SetDefault(**{key: None if verbose else text})
    builders = {
        "ArenaPlan": Builder(action=Action(_plan_action, "$ARENAPLANCOMSTR"), suffix=".plan.json",
                             src_suffix=".onnx"),
        "ArenaGate": Builder(action=Action(_gate_action, "$ARENAGATECOMSTR"), suffix=".json",
                             src_suffix=".plan.json", emitter=_gate_emitter),
        "ArenaReport": Builder(action=Action(_report_action, "$ARENAREPORTCOMSTR"), suffix=".json",
                               src_suffix=".json", emitter=_report_emitter),
        "ArenaTables": Builder(action=Action(_tables_action, "$ARENATABLESCOMSTR"), suffix=".c",
                               src_suffix=".plan.json", emitter=_pair_emitter),
        "ArenaTflm": Builder(action=Action(_tflm_action, "$ARENATFLMCOMSTR"), suffix=".tflm.json",
                             src_suffix=".plan.json"),
        "ArenaTflmModel": Builder(action=Action(_tflm_model_action, "$ARENATFLMCOMSTR"), suffix=".c",
                                  src_suffix=".tflite", emitter=_pair_emitter),
        "ArenaArena": Builder(action=Action(_arena_action, "$ARENAARENACOMSTR"), suffix=".c",
                              src_suffix=".json", emitter=_pair_emitter),
        "ArenaLinkerScript": Builder(action=Action(_ld_action, "$ARENALDCOMSTR"), suffix=".ld",
                                     src_suffix=".json"),
    }
    env.Append(BUILDERS=builders)
    env.AddMethod(_arena_firmware, "ArenaFirmware")
