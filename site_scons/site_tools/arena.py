"""SCons tool ``arena``: plan ONNX models, generate C tables and linker scripts, gate RAM and flash.

Use it from any SConstruct::

    import arena_tool
    env = Environment(tools=["arena"], toolpath=[arena_tool.site_tools_dir()])
    env.ArenaFirmware("app/arena.yaml", sources=["app/startup.c", "app/main.c"], cpppath=["app"])

``ArenaFirmware`` reads the manifest (``arena_tool.manifest``; a JSON cache
under ``build/`` skips YAML and JSON Schema work while no input changed),
selects the boards from ``board=`` (one name, ``a,b`` or ``all``; all by
default) and asks ``arena_tool.build_graph.plan`` for the build: every file to
make, what it is made from, the compile and link flags, the aliases. The file
names, which inputs each step reads, what boards share and the flags are that
module's (its docstring lists the nodes); this one makes one Builder call per
node, in the graph's order, with these actions (thin calls into ``arena_tool``):

    plan         ArenaPlan: planning.plan_model (a split arena over its regions)
    tables       ArenaTables: codegen.model_sources, only from a plan planfile.check
                 finds true to its model (else one error naming the plan, exit 1)
    tflm,        runtime: tflm: the planned .tflite and TFLM's measured head and tail
    tflm_tables  (report.tflm_measure), then the model as a const array (codegen)
    gate         ArenaGate: report.gate (RAM budget, weights against the flash, every op
                 against arena's runtime); once it passes, arena_board.{c,h} (tflm_arena.{c,h})
                 and the linker script (linker.render) or, with ``linker: fragment``,
                 arena_fragment.ld for the project's own script (which the gate checks)
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
    elves: ELF path -> (target doc, its gate's path, its report's path); lowered: (plan path,
    model sha) -> the lowered model the coverage check reads (a model shared by boards is
    lowered once per build); written: reports a failure path wrote during this build (for the summary).
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


def _runtime_problems(state, board: str, spec, plan_path: str, plan) -> list:
    """report.runtime_problems of one model (a planfile.PlanFile); a model shared by boards is
    lowered once per build."""
    from arena_tool import planfile, report

    plan_doc = plan.to_json()  # runtime_problems and lowered_model still read the document
    key = (plan_path, plan.model_sha256)
    lowered = state.lowered.get(key)
    if lowered is None:
        lowered = state.lowered[key] = planfile.lowered_model(spec.path, plan_doc)
    return report.runtime_problems(board, spec.name, plan_doc, lowered)


_REBUILD = "delete it and run scons again: arena makes it anew"


@_guarded
def _gate_action(target, source, env) -> None:
    from arena_tool import boards, manifest, planfile, report
    from arena_tool.errors import ArenaError
    from arena_tool.schema import read_json

    state = env["ARENA_STATE"]
    target_doc, outputs, report_path = state.gates[target[0].path]
    board_target = manifest.target_from_doc(target_doc)
    plans = [(spec.name, node.path, planfile.load(node.path, _REBUILD))
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
        for spec, (_, path, plan) in zip(board_target.models, plans):
            problems += _runtime_problems(state, board_target.name, spec, path, plan)
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
        doc = report.with_elf(doc, ram, flash, env["ARENA_STATE"].elves[source[1].path][0]["flash"][0])
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

    plan, lowered = planfile.verified(source[0].path, source[1].path.replace(os.sep, "/"))
    symbol = os.path.basename(target[0].path)[len("model_"):-len(".c")]  # model_<symbol>.c
    header, body = codegen.model_sources(plan, lowered, symbol)
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
    t, gate, report_path = state.elves[target[0].path]
    doc = report.link_failure(report.read(gate), p.stdout, t["flash"][0], _region_lengths(t))
    _write_failed(state, report_path, doc)
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
    t, gate, report_path = state.elves[elf]
    doc = report.read(gate)
    try:
        board = boards.load_board_file(t["board_file"])
        elfcheck.check(elf, board, doc)
    except ArenaError as err:
        if os.path.exists(elf):
            os.unlink(elf)
        msg = err.msg if err.msg.startswith(doc["board"] + ": ") else f"{doc['board']}: {err.msg}"
        failed = report.with_problem(doc, report.Problem("elf", f"arena: {msg}"))
        _write_failed(state, report_path, failed)
        raise


@_guarded
def _run_action(target, source, env) -> None:
    """Run each ELF under QEMU (-icount shift=0), write build/<board>/run_report.json, print its table."""
    from arena_tool import boards, qemu, report, runreport
    from arena_tool.errors import CheckFailed

    tables = []
    failed = None
    for node in source:
        t, rep_path, run_path = env["ARENA_QEMU"][node.path]
        machine = t["qemu"]
        rc, output = qemu.run(node.path, machine, env.get("ARENA_QEMU_TIMEOUT", 60), icount=True)
        sys.stdout.write(output if output.endswith("\n") or not output else output + "\n")
        sys.stdout.flush()
        board = boards.load_board_file(t["board_file"])
        arena_doc = report.read(rep_path) if os.path.exists(rep_path) else None
        doc = runreport.build(t["name"], machine, node.path, rc, output, board.cpu.clock_hz, arena_doc)
        runreport.write(run_path, doc)
        tables.append(runreport.table(doc))
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
    from arena_tool.build_graph import UserFlags

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
    from arena_tool import build_graph, manifest_cache
    from arena_tool.errors import ArenaError

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
        manifest_path = manifest_cache.project_path(str(manifest_path), top)  # no clone's path in outputs
        m = manifest_cache.cached(manifest_path, tuple(board_dirs) + tuple(env["ARENA_BOARD_DIRS"]),
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
    # override environment per call); no scanners, so an alias never re-reads generated C.
    state = _State()
    aenv = env.Clone(SCANNERS=[], ARENA_STATE=state)
    _verify_targets(aenv)
    cross = None
    if gcc:
        prefix = env.subst("$ARENA_GCC_PREFIX")
        cross = env.Clone(tools=["cc", "link"])  # not "gcc": it runs "gcc --version" on every read
        cross.Replace(CC=prefix + "gcc", LINK=prefix + "gcc", AS=prefix + "gcc", OBJSUFFIX=".o",
                      ARENA_STATE=state, ARENA_LINKCOM="$LINK -o $TARGET $LINKFLAGS $SOURCES $_LIBDIRFLAGS $_LIBFLAGS")
        cross.PrependENVPath("PATH", os.path.dirname(gcc))
        _verify_targets(cross)
    by_name = {t["name"]: t for t in m["targets"]}
    node = _wire(graph, aenv, cross, by_name, state, app)
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
            elves = {node(e).path: (by_name[boards[e].name], boards[e].report, boards[e].run_report)
                     for e in a.targets}
            made = env.Alias(a.name, [node(e) for e in a.targets], Action(_run_action, "$ARENARUNCOMSTR"),
                             ARENA_QEMU=elves)
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


def _wire(graph, aenv, cross, by_name, state, app):
    """One Builder call per node of ``graph`` (arena_tool.build_graph), in its order; returns the
    function that maps a graph path to its SCons node.

    Arena's nodes go to ``aenv`` (no scanners), objects and ELFs to one clone of ``cross`` per
    compile environment (shared by every board with those core flags; the C scanner on).
    """
    from SCons.Action import Action

    from arena_tool.build_graph import Value

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
        _freeze_helpers(fe)
    boards = {b.name: b for b in graph.boards}
    builders = {"plan": aenv.ArenaPlan, "tflm": aenv.ArenaTflm, "tables": aenv.ArenaTables,
                "tflm_tables": aenv.ArenaTflmModel, "gate": aenv.ArenaGate, "report": aenv.ArenaReport}
    link = elfcheck = None
    depends, requires = {}, {}
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
            state.elves[made[0].path] = (by_name[n.board], node(b.gate).path, node(b.report).path)
            env.Clean(made, [node(c) for c in n.clean])
            env.AddPostAction(made, elfcheck)
        else:
            made = builders[n.kind](targets, sources)
            if n.kind == "gate":
                b = boards[n.board]
                state.gates[made[0].path] = (by_name[n.board], list(b.deleted), b.report)
        if n.depends:
            depends.setdefault(n.depends, []).extend(made)
        if n.requires:
            requires.setdefault(n.requires, []).extend(made)
    # one call per set of dependencies (most nodes share the generator's, or one alias of gates)
    for deps, made in depends.items():
        aenv.Depends(made, [node(d) for d in deps])
    for names, made in requires.items():  # order only
        aenv.Requires(made, [r for name in names for r in required(name)])
    return node


def _no_run_action(target, source, env) -> int:
    names, have_gcc = env["ARENA_NO_RUN"]
    why = "none of them has a qemu machine in its board file" if have_gcc else "no cross gcc to build an ELF"
    sys.stderr.write(f"arena: run: cannot run board(s) {', '.join(names)}: {why}\n")
    return 2


def scons_path(path: str) -> str:
    """``path`` as SCons must be given it in a string (``$`` written ``$$``): build_graph.scons_path."""
    from arena_tool.build_graph import scons_path as escaped

    return escaped(path)


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
