"""SCons tool ``arena``: plan ONNX models, generate C tables and linker scripts, gate RAM and flash.

Use it from any SConstruct::

    import arena_tool
    env = Environment(tools=["arena"], toolpath=[arena_tool.site_tools_dir()])
    env.ArenaFirmware("app/arena.yaml", sources=["app/startup.c", "app/main.c"], cpppath=["app"])

``ArenaFirmware`` reads the manifest (``arena_tool.target.manifest``; a JSON cache
under ``build/`` skips YAML and JSON Schema work while no input changed),
selects the boards from ``board=`` (one name, ``a,b`` or ``all``; all by
default) and asks ``arena_tool.builder.build_graph.plan`` for the build: every file to
make, what it is made from, the compile and link flags, the aliases. The file
names, which inputs each step reads, what boards share and the flags are that
module's (its docstring lists the nodes); this one makes one Builder call per
node, in the graph's order, with these actions (thin calls into ``arena_tool``):

    plan         ArenaPlan: planning.plan_model (a split arena over its regions)
    tables       ArenaTables: codegen.model_sources, only from a plan plancheck.check
                 finds true to its model (else one error naming the plan, exit 1)
    tflm,        runtime: tflm: the planned .tflite and TFLM's measured head and tail
    tflm_tables  (tflm.tflm_measure), then the model as a const array (codegen)
    gate         ArenaGate: gate.gate (RAM budget, weights against the flash, every op
                 against arena's runtime); once it passes, arena_board.{c,h} (tflm_arena.{c,h})
                 and the linker script (linker.render) or, with ``linker: fragment``,
                 arena_fragment.ld for the project's own script (which the gate checks);
                 its source scanner (``_manifest_scanner``) makes what the manifest names
                 for the board (board file, models, the project's script) its dependencies
    object       the cross environment's Object (the C scanner on)
    elf          the link (``$ARENA_LINKCOM``, output captured), then the ELF check (elfcheck)
    report       ArenaReport: the gate's report with RAM and flash measured on the ELF when
                 linked, and arena_report.{html,md} beside it (htmlreport)

and the ``run`` alias (QEMU -icount run, ``run_report.json``, runreport).
``scons -h`` lists the boards; ``scons board=NAME report`` builds only the
reports and what they need. ``runtime: tflm`` (``.tflite`` models; the firmware
brings TFLite Micro): the planned model carries arena's plan as TFLM's
OfflineMemoryAllocation, the gate's budget counts TFLM's head and persistent
tail as its host interpreter measures them, ``model_<model>.{c,h}`` hold the
model as a 16-byte aligned const array with ``<MODEL>_HEAD_SIZE`` and
``<MODEL>_TENSOR_ARENA_SIZE``, ``gen/tflm_arena.{c,h}`` the ``uint8_t
tensor_arena[N]`` (section ``.tensor_arena``, inside the script's NOLOAD
``.arena``); no arena runtime, no coverage check.
Without ``arm-none-eabi-gcc`` on PATH (or with ``link=0``) the graph stops after
the plans, tables, gates and reports. Build variables: ``board=``,
``VERBOSE=1``, ``link=0``, ``gcc_prefix=`` (default ``arm-none-eabi-``).
``ARENA_PROGRESS=1`` in the environment shows the planner's status line during
long searches (off by default: it would garble the build's output). The user's
``CPPPATH`` comes first on every compile and its ``CCFLAGS``/``CFLAGS``/
``CPPDEFINES``/``LINKFLAGS``/``LIBS`` after arena's (so a user's flag wins).

When a board fails its gate (status over or unsupported) it prints one
``arena: <board>: ...`` line per problem, writes ``arena_report.json`` (and its
views) saying why, deletes that board's generated files and fails with exit
status 1. A failed link or ELF check writes the report too (status over when ld
says a region overflowed). The end of every build prints a per-board summary
with PlatformIO-style RAM and Flash lines.

Integrity: every target of arena's environments is reused only while its file
is the one the signature database recorded (``_verify_targets``): a build killed
before SCons wrote .sconsign leaves no output a later build accepts. Paths in
outputs are relative to the project (the SConstruct's folder) and objects are
compiled with ``-ffile-prefix-map=<project>=.``, so clones at different paths
build the same bytes.

All work happens in ``arena_tool`` calls, imported inside the actions so
reading the SConstruct stays cheap. Per-build values
(each board's ``manifest.BoardTarget``, its ``boards.Board`` included, made from
the cached document when an action first asks) live in one ``_State`` held by
``env`` (shared by its clones) and keyed by board name and target path, never in
module globals; the tool assigns nothing into SCons's own objects or ``_*``
variables (``_flags_once`` names arena's own ones in the public CCCOM). A no-op
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
        from arena_tool.core.errors import EXIT_BUG, EXIT_USAGE, ArenaError, os_error

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
    docs: board name -> its target document (``manifest.target_doc``, from the cache);
    ``target(name)`` makes the ``manifest.BoardTarget`` of one the first time an action asks
    (a no-op build runs no action, so it never imports the manifest's types);
    gates: gate path -> (board name, files deleted when the gate fails, report path);
    elves: ELF path -> (board name, its gate's path, its report's path); lowered: (plan path,
    model sha) -> the lowered model the coverage check reads (a model shared by boards is
    lowered once per build); written: reports a failure path wrote during this build (for the summary);
    manifest: the manifest's node; named: board name -> the nodes of the files the manifest
    names for it (``build_graph.manifest_names``), the manifest scanner's answer for its gate.
    """

    def __init__(self, docs=None) -> None:
        self.docs: dict = dict(docs or {})
        self.targets: dict = {}
        self.gates: dict = {}
        self.elves: dict = {}
        self.lowered: dict = {}
        self.written: set = set()
        self.manifest = None
        self.named: dict = {}

    def target(self, name: str):
        """The manifest.BoardTarget of board ``name``, its board included (made once per build)."""
        t = self.targets.get(name)
        if t is None:
            from arena_tool.target import manifest

            t = self.targets[name] = manifest.target_from_doc(self.docs[name])
        return t


def _write_failed(state, path: str, rep) -> None:
    """Write a failed board's report (a board_report.BoardReport) and its views."""
    from arena_tool.target import board_report

    board_report.write(path, rep)
    _write_views(state, path, rep)
    state.written.add(path)


def _write_views(state, json_path: str, rep, elf=None) -> None:
    """arena_report.{html,md} beside arena_report.json, from the same report (htmlreport)."""
    from arena_tool.report import htmlreport

    name = next(n for n, _, path in state.gates.values() if os.path.normpath(path) == os.path.normpath(json_path))
    htmlreport.write(json_path, rep, htmlreport.Memory.of_board(state.target(name).board), elf)


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
    The Decider runs once per (input, target) pair; the answer for a target is kept with the
    record it was checked against (SCons makes a new one when it builds the target).
    """
    inner_source, inner_target = env.decide_source, env.decide_target
    verdicts: dict = {}
    checked: dict = {}  # target node -> (its stored info, whether its file is the one recorded)

    def decide(dependency, target, prev_ni, repo_node=None) -> bool:
        inner = inner_target if dependency.has_builder() else inner_source
        if inner(dependency, target, prev_ni, repo_node):
            return True
        info = target.get_stored_info()
        seen = checked.get(target)
        if seen is None or seen[0] is not info:
            seen = checked[target] = (info, _as_recorded(target, verdicts))
        return not seen[1]

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
    from arena_tool.core import progress
    from arena_tool.plan import planfile, planners, planning
    from arena_tool.core.problem import ModelOptions

    spec = json.loads(source[1].read())
    options = ModelOptions.from_doc(spec["options"])
    model = source[0].path.replace(os.sep, "/")
    # a status line only when asked: it would garble the build's normal (and -j) output
    shown = progress.for_stream(sys.stderr, True) if os.environ.get("ARENA_PROGRESS") == "1" else None
    params = planners.Params(k=spec["k"], time_limit=spec["time_limit"], progress=shown)
    regions = [tuple(r) for r in spec.get("regions", ())]  # a split arena: (region, capacity) fastest first
    planfile.write(target[0].path, planning.plan_model(model, options, spec["planner"], params, regions).plan_file)


def _runtime_problems(state, board: str, spec, plan_path: str, plan) -> list:
    """gate.runtime_problems of one model (a planfile.PlanFile); a model shared by boards is
    lowered once per build."""
    from arena_tool.plan import plancheck
    from arena_tool.builder import gate

    key = (plan_path, plan.model_sha256)
    lowered = state.lowered.get(key)
    if lowered is None:
        lowered = state.lowered[key] = plancheck.lowered_model(spec.path, plan)
    return gate.runtime_problems(board, spec.name, plan, lowered)


_REBUILD = "delete it and run scons again: arena makes it anew"


@_guarded
def _gate_action(target, source, env) -> None:
    from arena_tool.plan import planfile
    from arena_tool.target import board_report
    from arena_tool.builder import gate
    from arena_tool.core.errors import ArenaError
    from arena_tool.core.files import read_json

    state = env["ARENA_STATE"]
    name, outputs, report_path = state.gates[target[0].path]
    board_target = state.target(name)
    plans = [(spec.name, node.path, planfile.load(node.path, _REBUILD))
             for spec, node in zip(board_target.models, source)]

    def fastest(min_size: int, reserve: int) -> str | None:
        try:
            return board_target.board.fastest_region(min_size, reserve=reserve).name
        except ArenaError:
            return None

    problems = []
    tflm = None
    if board_target.runtime == "tflm":  # then one tflm.json per model: TFLM's measured tail
        n = len(board_target.models)
        tflm = {spec.name: read_json(node.path, "TFLM allocation file", _REBUILD)
                for spec, node in zip(board_target.models, source[n:2 * n])}
    elif board_target.runtime != "none":
        for spec, (_, path, plan) in zip(board_target.models, plans):
            problems += _runtime_problems(state, board_target.name, spec, path, plan)
    rep = gate.gate(board_target, plans, fastest, problems, tflm=tflm)
    board_report.write(target[0].path, rep)
    failed = board_report.failure(rep)
    if failed is not None:
        for path in outputs:
            if os.path.exists(path):
                os.unlink(path)
        _write_failed(state, report_path, rep)
        raise failed
    if rep.warning:
        sys.stdout.write(rep.warning + "\n")
    if len(target) > 1:  # [gate, arena_board.c (tflm_arena.c), its .h, <board>.ld]
        _write_arena(rep, target[1].path, target[2].path)
        if board_target.linker == "fragment":
            _write_fragment(rep, board_target, target[3].path)
        else:
            _write_ld(rep, board_target.board, target[3].path)


@_guarded
def _report_action(target, source, env) -> None:
    """arena_report.json: the gate's report, with RAM and flash measured on the ELF when linked."""
    from arena_tool.target import board_report
    from arena_tool.run import elfcheck

    rep = board_report.read(source[0].path)
    if len(source) > 1:
        ram, flash = elfcheck.usage(source[1].path)
        state = env["ARENA_STATE"]
        rep = board_report.with_elf(rep, ram, flash, state.target(state.elves[source[1].path][0]).board.flash.name)
    board_report.write(target[0].path, rep)
    _write_views(env["ARENA_STATE"], target[0].path, rep, source[1].path if len(source) > 1 else None)
    failed = board_report.failure(rep)
    if failed is not None:
        raise failed


@_guarded
def _tflm_action(target, source, env) -> None:
    """[<model>.tflm.json, <model>.planned.tflite] <- [plan, model.tflite]: the planned model and TFLM's arena."""
    from arena_tool.plan import planfile
    from arena_tool.run import tflm
    from arena_tool.core.files import write_atomic

    plan = planfile.load(source[0].path)
    data, alloc = tflm.tflm_measure(source[1].path.replace(os.sep, "/"), plan, source[0].path)
    write_atomic(target[1].path, data)
    write_atomic(target[0].path, json.dumps(alloc, indent=1, sort_keys=True) + "\n")


@_guarded
def _tflm_model_action(target, source, env) -> None:
    """model_<symbol>.{c,h} <- [<model>.planned.tflite, <model>.tflm.json]."""
    from arena_tool.emit import codegen

    with open(source[0].abspath, "rb") as f:
        data = f.read()
    alloc = json.loads(source[1].get_text_contents())
    symbol = os.path.basename(target[0].path)[len("model_"):-len(".c")]
    header, body = codegen.tflm_model_sources(symbol, data, alloc["head"], alloc["tail"])
    codegen.write(target[1].path, header)
    codegen.write(target[0].path, body)


@_guarded
def _tables_action(target, source, env) -> None:
    """model_<symbol>.{c,h} <- [plan, model]: only from a plan plancheck.check finds true to the model."""
    from arena_tool.plan import plancheck
    from arena_tool.emit import codegen

    plan, lowered = plancheck.verified(source[0].path, source[1].path.replace(os.sep, "/"))
    symbol = os.path.basename(target[0].path)[len("model_"):-len(".c")]  # model_<symbol>.c
    header, body = codegen.model_sources(plan, lowered, symbol)
    codegen.write(target[1].path, header)
    codegen.write(target[0].path, body)


def _write_arena(rep, c_path, h_path) -> None:
    """arena_board.{c,h} from a report (a board_report.BoardReport)."""
    from arena_tool.emit import codegen

    if rep.runtime == "tflm":
        header, body = codegen.tflm_arena_sources(rep.board, rep.arena_size, rep.bases)
    else:
        header, body = codegen.arena_sources(rep.board, rep.arena_size, rep.bases, rep.alignment, rep.regions)
    codegen.write(h_path, header)
    codegen.write(c_path, body)


def _write_ld(rep, board, path) -> None:
    """<board>.ld for the gate's report ``rep`` (a board_report.BoardReport) on ``board`` (a boards.Board)."""
    from arena_tool.emit import linker

    text = linker.render(board, rep.region, rep.arena_size, rep.reserve_stack, rep.reserve_heap,
                         arena_align=rep.alignment, arena_input=".tensor_arena" if rep.runtime == "tflm" else ".arena",
                         regions=rep.regions)
    linker.write(path, text)


def _write_fragment(rep, board_target, path) -> None:
    """arena_fragment.ld for the board's own linker script, after checking that script for the
    resolved region (region: auto is known only now)."""
    from arena_tool.target import linkscript
    from arena_tool.emit import linker_fragment

    board = board_target.board
    names = dict(board_target.linker_regions)
    needed = linkscript.needed_names(linker_fragment.regions_of(board, rep), names)
    origins = {r.name: r.origin for r in (*board.ram, board.flash)}
    linkscript.check_script(board_target.linker_script, needed, field="linker_script", origins=origins)
    linker_fragment.write(path, linker_fragment.render_for_report(board, rep, names))


@_guarded
def _arena_action(target, source, env) -> None:
    from arena_tool.target import board_report

    _write_arena(board_report.read(source[0].path), target[0].path, target[1].path)


@_guarded
def _ld_action(target, source, env) -> None:
    from arena_tool.target import board_report, boards

    _write_ld(board_report.read(source[0].path), boards.load_board_file(source[1].path), target[0].path)


@_guarded
def _link_action(target, source, env) -> None:
    """Run $ARENA_LINKCOM with its output captured: a failed link still writes the board's report
    (status over, naming the region, when ld says one overflowed)."""
    import subprocess

    from arena_tool.target import board_report
    from arena_tool.emit import linker
    from arena_tool.core.errors import EXIT_USAGE, ArenaError

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
    name, gate, report_path = state.elves[target[0].path]
    t = state.target(name)
    rep = linker.link_failure(board_report.read(gate), p.stdout, t.board.flash.name, _region_lengths(t))
    _write_failed(state, report_path, rep)
    failed = board_report.failure(rep)
    if rep.status == "error":
        failed.exit_code = EXIT_USAGE  # not a budget: a source or a flag the linker refused
    raise failed


def _region_lengths(t) -> dict:
    """Region name -> bytes for a failed link's messages (``t``: a manifest.BoardTarget): the
    board's RAM regions, and with linker: fragment the MEMORY regions of the user's script
    (whose names ld reports)."""
    lengths = {r.name: r.length for r in t.board.ram}
    if t.linker == "fragment":
        from arena_tool.target import linkscript

        lengths.update(linkscript.memory_lengths(t.linker_script))
    return lengths


@_guarded
def _elfcheck_action(target, source, env) -> None:
    from arena_tool.target import board_report
    from arena_tool.run import elfcheck
    from arena_tool.core.errors import ArenaError

    state = env["ARENA_STATE"]
    elf = target[0].path
    name, gate, report_path = state.elves[elf]
    rep = board_report.read(gate)
    try:
        elfcheck.check(elf, state.target(name).board, rep)
    except ArenaError as err:
        if os.path.exists(elf):
            os.unlink(elf)
        msg = err.msg if err.msg.startswith(rep.board + ": ") else f"{rep.board}: {err.msg}"
        failed = board_report.with_problem(rep, board_report.BoardProblem("elf", f"arena: {msg}"))
        _write_failed(state, report_path, failed)
        raise


@_guarded
def _run_action(target, source, env) -> None:
    """Run each ELF under QEMU (-icount shift=0), write build/<board>/run_report.json, print its table."""
    from arena_tool.target import board_report
    from arena_tool.run import qemu, runreport
    from arena_tool.core.errors import CheckFailed

    tables = []
    failed = None
    for node in source:
        name, rep_path, run_path = env["ARENA_QEMU"][node.path]
        t = env["ARENA_STATE"].target(name)
        machine = t.board.qemu
        rc, output = qemu.run(node.path, machine, env.get("ARENA_QEMU_TIMEOUT", 60), icount=True)
        sys.stdout.write(output if output.endswith("\n") or not output else output + "\n")
        sys.stdout.flush()
        arena = board_report.read(rep_path) if os.path.exists(rep_path) else None
        run = runreport.build(t.name, machine, node.path, rc, output, t.board.cpu.clock_hz, arena)
        runreport.write(run_path, run)
        tables.append(runreport.table(run))
        if rc != 0 and failed is None:
            failed = CheckFailed(f"firmware exited with status {rc} under qemu -M {machine}", file=node.path)
    if tables:
        sys.stdout.write("\n".join(tables) + "\n")
        sys.stdout.flush()
    if failed is not None:
        raise failed


# ---------------------------------------------------------------- emitters


# The build graph names every target; these add the ones a direct call leaves out.


def _pair_emitter(target, source, env):
    """x.c -> [x.c, x.h]: both outputs are declared, so SCons scans and cleans both."""
    if len(target) > 1:
        return target, source
    base, _ = os.path.splitext(str(target[0]))
    return [target[0], env.File(base + ".h")], source


def _report_emitter(target, source, env):
    """arena_report.json -> [it, arena_report.html, arena_report.md] (htmlreport's views)."""
    if len(target) > 1:
        return target, source
    folder = os.path.dirname(str(target[0]))
    return [target[0]] + [env.File(os.path.join(folder, n)) for n in ("arena_report.html", "arena_report.md")], source


def _gate_emitter(target, source, env):
    """[gate, arena_board.c, x.ld] -> the same with arena_board.h after arena_board.c."""
    if len(target) == 3:
        base, _ = os.path.splitext(str(target[1]))
        target = [target[0], target[1], env.File(base + ".h")] + list(target[2:])
    return target, source


# ---------------------------------------------------------------- wiring


def _truthy(value) -> bool:
    return str(value).strip().lower() in ("1", "yes", "true", "on")


def _user_flags(env):
    """build_graph.UserFlags of what the user's environment brings to every compile and link:
    CCFLAGS, LINKFLAGS, CPPPATH, LIBS as lists; CFLAGS, CPPDEFINES, LIBPATH as they are."""
    from arena_tool.builder.build_graph import UserFlags

    out = {}
    for var in ("CCFLAGS", "LINKFLAGS", "CPPPATH", "LIBS"):
        value = env.get(var)
        if isinstance(value, str):
            value = value.split() if var in ("CCFLAGS", "LINKFLAGS") else [value]
        out[var.lower()] = tuple(value) if value else ()
    for var in ("CFLAGS", "CPPDEFINES", "LIBPATH"):
        out[var.lower()] = env.get(var) or []
    return UserFlags(**out)


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
    from arena_tool.core import files
    from arena_tool.builder import build_graph, noop_cache
    from arena_tool.core.errors import ArenaError

    build_dir = build_dir or env.subst("$ARENA_BUILD_DIR")
    board = board if board is not None else ARGUMENTS.get("board")
    if link is None:
        link = _truthy(ARGUMENTS.get("link", "1"))
    if "gcc_prefix" in ARGUMENTS:
        env["ARENA_GCC_PREFIX"] = ARGUMENTS["gcc_prefix"]
    gcc = env.WhereIs(env.subst("${ARENA_GCC_PREFIX}gcc"), os.environ.get("PATH", "")) if link else None
    top = env.Dir("#").abspath
    app = [src if hasattr(src, "abspath") else env.File(str(src)) for src in sources]
    toolchain = build_graph.Toolchain(
        link=bool(gcc), sources=tuple(n.abspath for n in app), cpppath=tuple(cpppath), root=top,
        runtime_dir=arena_tool.runtime_dir(), extra_ccflags=tuple(env.get("ARENA_EXTRA_CCFLAGS", ())),
        user=_user_flags(env))
    try:
        manifest_path = files.project_path(str(manifest_path), top)  # no clone's path in outputs
        m = noop_cache.cached(manifest_path, tuple(board_dirs) + tuple(env["ARENA_BOARD_DIRS"]),
                                  os.path.join(build_dir, ".arena_manifest.json"))
        graph = build_graph.plan(m, build_dir, toolchain, board)
    except ArenaError as err:
        _report_error(err)
        Exit(err.exit_code)
    if GetOption("help"):
        env.Help(build_graph.help_text(m))  # arena's options first; scons -H gives SCons's own
    if link and not gcc and not GetOption("help") and not GetOption("clean"):
        print(f"arena: {env.subst('${ARENA_GCC_PREFIX}gcc')} not found on PATH: stopping after plans, "
              "C tables and linker scripts (install gcc-arm-none-eabi to link and check the ELF)")
    # The arena builders' environment: board settings are looked up by target path (no
    # override environment per call); no scanners (but the gate's, of the manifest), so an
    # alias never re-reads generated C.
    state = _State({t["name"]: t for t in m["targets"]})
    aenv = env.Clone(SCANNERS=[], ARENA_STATE=state)
    _verify_targets(aenv)
    cross = None
    if gcc:
        prefix = env.subst("$ARENA_GCC_PREFIX")
        cross = env.Clone(tools=["cc", "link"])  # not "gcc": it runs "gcc --version" on every read
        cross.Replace(CC=prefix + "gcc", LINK=prefix + "gcc", AS=prefix + "gcc", OBJSUFFIX=".o",
                      ARENA_STATE=state, ARENA_LINKCOM="$LINK -o $TARGET $LINKFLAGS $SOURCES $ARENA_LIBFLAGS",
                      ARENA_LIBFLAGS="$_LIBDIRFLAGS $_LIBFLAGS")
        cross.PrependENVPath("PATH", os.path.dirname(gcc))
        _verify_targets(cross)
    node = _wire(graph, aenv, cross, state, app)
    result = {}
    for b in graph.boards:
        groups = {"plans": b.plans, "gate": [b.gate], "tables": b.tables, "arena": b.arena, "ld": [b.ld],
                  "report": [b.report], "views": b.views, "generated": b.generated, "all": b.all, "top": b.top}
        if b.elf:
            groups["elf"] = [b.elf]
        result[b.name] = {k: [node(p) for p in paths] for k, paths in groups.items()}
    boards = {b.elf: b for b in graph.boards}
    for a in graph.aliases:
        if a.name.startswith("arena-gates-"):
            continue  # wired with the objects that require them
        if a.action == "run":  # each ELF with its board, its report and the run report it writes
            elves = {node(e).path: (boards[e].name, boards[e].report, boards[e].run_report) for e in a.targets}
            made = env.Alias(a.name, [node(e) for e in a.targets], Action(_run_action, "$ARENARUNCOMSTR"),
                             ARENA_QEMU=elves, ARENA_STATE=state)
        elif a.action == "no_run":
            made = env.Alias(a.name, [], Action(_no_run_action, None),
                             ARENA_NO_RUN=([b.name for b in graph.boards], bool(gcc)))
        else:
            made = aenv.Alias(a.name, [node(p) for p in a.targets])
        if a.depends:
            env.Depends(made, [node(d) for d in a.depends])
        if a.always:
            env.AlwaysBuild(made)
    for name in graph.default:
        env.Default(aenv.Alias(name))
        # scons -c removes what the tool itself keeps beside the outputs, dot-files included
        env.Clean(aenv.Alias(name), [os.path.join(build_dir, f) for f in (".arena_manifest.json", ".arena_summary.json")])
    if not (GetOption("help") or GetOption("clean") or GetOption("no_exec")):
        import atexit

        atexit.register(_print_summary, [node(b.report) for b in graph.boards], state,
                        os.path.join(build_dir, ".arena_summary.json"))
    return result


def _wire(graph, aenv, cross, state, app):
    """One Builder call per node of ``graph`` (arena_tool.builder.build_graph), in its order; returns the
    function that maps a graph path to its SCons node.

    Arena's nodes go to ``aenv`` (no scanners but the gate builder's manifest scanner), objects
    and ELFs to one clone of ``cross`` per compile environment (shared by every board with those
    core flags; the C scanner on).
    """
    from SCons.Action import Action

    from arena_tool.builder.build_graph import Value

    fs = aenv.fs
    files = {n.abspath: n for n in app}  # the firmware's sources as the SConstruct gave them
    values = {}

    def node(p):
        if isinstance(p, Value):
            v = values.get(p.text)
            if v is None:
                v = values[p.text] = aenv.Value(p.text)
            return v
        n = files.get(p)
        if n is None:
            n = files[p] = fs.File(p)  # no $ expansion: the path exactly as written
        return n

    aliases = {a.name: aenv.Alias(a.name, [node(t) for t in a.targets])
               for a in graph.aliases if a.name.startswith("arena-gates-")}

    def required(name):
        return aliases[name] if name in aliases else [node(name)]

    fenvs = {}
    for e in graph.envs:
        fe = fenvs[e.key] = cross.Clone(CPPPATH=list(e.cpppath), CCFLAGS=list(e.ccflags), CFLAGS=e.cflags,
                                        CPPDEFINES=e.cppdefines, LINKFLAGS=list(e.linkflags), LIBS=list(e.libs),
                                        LIBPATH=e.libpath)
        _flags_once(fe)
    boards = {b.name: b for b in graph.boards}
    builders = {"plan": aenv.ArenaPlan, "tflm": aenv.ArenaTflm, "tables": aenv.ArenaTables,
                "tflm_tables": aenv.ArenaTflmModel, "gate": aenv.ArenaGate, "report": aenv.ArenaReport}
    link = elfcheck = None
    depends, requires, scanned = {}, {}, []
    for n in graph.nodes:
        targets = [node(t) for t in n.targets]
        sources = [node(s) for s in n.sources]
        env = fenvs[n.env] if n.env else aenv
        if n.kind == "object":
            made = env.Object(targets, sources)
        elif n.kind == "elf":
            if link is None:
                elfcheck = Action(_elfcheck_action, "$ARENAELFCHECKCOMSTR")
                cmdstr = "$LINKCOMSTR" if cross.get("LINKCOMSTR") else "$ARENA_LINKCOM"
                link = Action(_link_action, cmdstr, varlist=["ARENA_LINKCOM"])
            extra = {} if n.linkflags is None else {"LINKFLAGS": list(n.linkflags)}
            made = env.Command(targets, sources, link, **extra)
            b = boards[n.board]
            state.elves[made[0].path] = (n.board, node(b.gate).path, node(b.report).path)
            env.Clean(made, [node(c) for c in n.clean])
            env.AddPostAction(made, elfcheck)
        else:
            made = builders[n.kind](targets, sources)
            if n.kind == "gate":
                b = boards[n.board]
                state.gates[made[0].path] = (n.board, list(b.deleted), b.report)
                state.named[n.board] = [node(p) for p in b.named]
        if n.manifest:  # a source for the gate builder's scanner only (_manifest_scanner)
            state.manifest = node(n.manifest)
            scanned.extend(made)
        if n.depends:
            depends.setdefault(n.depends, []).extend(made)
        if n.requires:
            requires.setdefault(n.requires, []).extend(made)
    # one call per set of dependencies (most nodes share the generator's, or one alias of gates)
    for deps, made in depends.items():
        aenv.Depends(made, [node(d) for d in deps])
    for names, made in requires.items():  # order only
        aenv.Requires(made, [r for name in names for r in required(name)])
    if scanned:  # what the manifest names is; its own bytes reach a gate as the board's Value
        aenv.Ignore(scanned, state.manifest)
    return node


def _manifest_scanner():
    """The gate builder's source scanner: for the manifest, a source of every board's gate, the
    files it names for that board (``build_graph.manifest_names``: board file, models, the
    project's linker script), so SCons itself re-runs a gate when one of them changes.

    Every gate has the same manifest node, so the scanner's path (which SCons computes per
    target and keys its per-node scan cache with) is the gate's board; the answer is the graph's,
    already nodes. Other sources (plans, the Value) and a direct ArenaGate call scan to nothing.
    """
    from SCons.Scanner import Scanner

    def board_of(env, dir, target, source):
        state = env.get("ARENA_STATE")
        entry = state.gates.get(target[0].path) if state is not None and target else None
        return (entry[0],) if entry else ()

    def named(node, env, path):
        state = env.get("ARENA_STATE")
        if state is None or not path or node is not state.manifest:
            return []
        return state.named.get(path[0], [])

    return Scanner(function=named, name="ArenaManifest", path_function=board_of)


def _no_run_action(target, source, env) -> int:
    names, have_gcc = env["ARENA_NO_RUN"]
    why = "none of them has a qemu machine in its board file" if have_gcc else "no cross gcc to build an ELF"
    sys.stderr.write(f"arena: run: cannot run board(s) {', '.join(names)}: {why}\n")
    return 2


def scons_path(path: str) -> str:
    """``path`` as SCons must be given it in a string (``$`` written ``$$``): build_graph.scons_path."""
    from arena_tool.builder.build_graph import scons_path as escaped

    return escaped(path)


# SCons's compile and link lines call generic helpers (_concat over RDirs, _defines,
# _stripixes) every time a command is substituted, and a no-op build substitutes every command
# for its signature. What each of the two parts below computes once reads:
_CC_INPUTS = ("CPPFLAGS", "CPPDEFPREFIX", "CPPDEFINES", "CPPDEFSUFFIX", "INCPREFIX", "CPPPATH", "INCSUFFIX")
_LIB_INPUTS = ("LIBDIRPREFIX", "LIBPATH", "LIBDIRSUFFIX", "LIBLINKPREFIX", "LIBS", "LIBLINKSUFFIX", "LIBPREFIXES",
               "LIBSUFFIXES")


def _flags_once(env) -> None:
    """Give ``env``'s compile and link lines their -D/-I and -L/-l flags as text computed once.

    ``CCCOM`` names ``$ARENA_CCCOMCOM`` where the cc tool's names ``$_CCCOMCOM`` (``$CPPFLAGS
    $_CPPDEFFLAGS $_CPPINCFLAGS``), and ``ARENA_LIBFLAGS`` (which ``$ARENA_LINKCOM`` names) is
    ``$_LIBDIRFLAGS $_LIBFLAGS``'s text: a raw substitution keeps the ``$( $)`` markers, so the
    command lines and their signatures are the same, without SCons's helpers on every
    substitution. Public variables only (CCCOM and arena's own); SCons's ``_*`` helpers stay as
    they are, and so does CPPPATH, which the C scanner reads. A part whose inputs mention
    ``$TARGET``/``$SOURCE`` (or a CCCOM without ``$_CCCOMCOM``) is left to SCons. Worth ~10 ms
    of a ~0.17 s no-op ``scons board=all`` (bench/noop_build.py, 15 alternating runs).
    """

    def fixed(inputs) -> bool:
        return not any(w in repr(env.get(k, "")) for k in inputs for w in ("TARGET", "SOURCE"))

    cccom = env.get("CCCOM", "")
    if isinstance(cccom, str) and "$_CCCOMCOM" in cccom and fixed(_CC_INPUTS):
        env.Replace(ARENA_CCCOMCOM=env.subst("$_CCCOMCOM", raw=1), CCCOM=cccom.replace("$_CCCOMCOM", "$ARENA_CCCOMCOM"))
    if fixed(_LIB_INPUTS):
        env.Replace(ARENA_LIBFLAGS=env.subst("$ARENA_LIBFLAGS", raw=1))


def _print_summary(report_nodes, state, cache_file) -> None:
    """At exit: one block per board whose report this build wrote or found up to date, or that a
    failure wrote (a board the build never reached is not shown)."""
    from SCons.Node import executed, up_to_date

    paths = [n.path for n in report_nodes
             if (n.get_state() in (executed, up_to_date) or n.path in state.written) and os.path.exists(n.path)]
    if paths:
        from arena_tool.builder import noop_cache

        sys.stdout.write(noop_cache.summary(paths, cache_file) + "\n")
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
                             src_suffix=".plan.json", emitter=_gate_emitter, source_scanner=_manifest_scanner()),
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
