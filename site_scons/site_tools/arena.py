"""SCons tool ``arena``: plan ONNX models, generate C tables and linker scripts, gate the RAM budget.

Use it from any SConstruct::

    env = Environment(tools=["arena"])
    env.ArenaFirmware("app/arena.yaml", sources=["app/main.c", ...], cpppath=["app"])

``ArenaFirmware`` reads the manifest (``arena_tool.manifest``; a JSON cache
under ``build/`` skips YAML and JSON Schema work while no input changed),
selects the boards from ``board=`` (one name, ``a,b`` or ``all``; all by
default) and wires, for each distinct (model, resolved options), one plan
``build/plans/<model>-<options digest>.plan.json`` (ArenaPlan <- model.onnx,
Value(options); boards with the same options share it), then per board,
under ``build/<board>/``::

    arena_report.json          ArenaGate    <- every plan, Value(board settings), board file
    gen/arena_board.{c,h}      (ArenaGate, once it passes: what ArenaArena writes from the report)
    gen/arena_tables.c         (ArenaGate: #includes every generated .c: one object per board)
    <board>.ld                 (ArenaGate: what ArenaLinkerScript writes from report and board file)
    gen/model_<model>.{c,h}    ArenaTables  <- plan, model.onnx (ordered after the gate)
    firmware.elf               Program (when arm-none-eabi-gcc is on PATH), then the ELF check
    run_report.json            the ``run`` alias: QEMU -icount run, sizes and instructions (runreport)

The firmware's own sources are compiled once per distinct set of compile flags
under ``build/common/<flags>/`` (they see ``cpppath`` only, not gen/).
Build variables: ``board=``, ``VERBOSE=1``, ``link=0`` (stop after generation),
``gcc_prefix=`` (default ``arm-none-eabi-``).

Every arena output also depends on ``arena_tool/**/*.py`` and
``schemas/*.json``: editing the generator rebuilds what it generates. The gate
runs before any C table is generated or compiled; over budget it prints one
``arena: <board>: ...`` line, deletes that board's generated files and fails
with exit status 1. ``scons -h`` lists the boards; ``VERBOSE=1`` shows full
command lines; ``scons board=NAME run`` runs the ELF under QEMU for boards
with a QEMU machine; the end of every build prints a per-board summary.

This module only wires: all work happens in ``arena_tool`` calls, imported
inside the actions so reading the SConstruct stays cheap. Per-build values
(a board's settings) live in dicts held by ``env`` and keyed by target path,
never in module globals. A no-op ``scons board=all`` should stay within 1.5x
of an empty SConstruct's (bench/noop_build.py): every node and edge wired here
is walked on every build, so keep them few.
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
        from arena_tool.errors import EXIT_BUG, ArenaError

        try:
            body(target, source, env)
        except ArenaError as err:
            if err.msg.startswith("arena: ") and not err.file:
                sys.stderr.write(err.msg + "\n")  # the gate's one line, as it stands
                sys.stderr.flush()
            else:
                _report_error(err)
            raise SystemExit(err.exit_code) from None
        except Exception:  # an arena bug: keep the traceback
            import traceback

            traceback.print_exc()
            sys.stderr.write("arena: this is an arena bug; please report it\n")
            raise SystemExit(EXIT_BUG) from None
        return 0

    action.__name__ = body.__name__
    return action


# ---------------------------------------------------------------- actions


@_guarded
def _plan_action(target, source, env) -> None:
    from arena_tool import planfile, planning, planners
    from arena_tool.problem import ModelOptions

    spec = json.loads(source[1].read())
    options = ModelOptions(
        alignment=spec["alignment"], activation_dtype=spec["activation_dtype"],
        bitwidths=tuple((n, b) for n, b in spec["bitwidths"]), inplace=spec["inplace"],
        scratch=spec["scratch"], input_shapes=tuple((n, tuple(s)) for n, s in spec["input_shapes"]),
    )
    model = source[0].path.replace(os.sep, "/")
    params = planners.Params(k=spec["k"], time_limit=spec["time_limit"])
    planfile.write(target[0].path, planning.plan_model(model, options, spec["planner"], params).doc)


@_guarded
def _gate_action(target, source, env) -> None:
    from arena_tool import boards, manifest, report
    from arena_tool.errors import ArenaError, CheckFailed

    target_doc, outputs = env["ARENA_GATES"][target[0].path]
    board_target = manifest.target_from_doc(target_doc)
    plans = []
    for spec, node in zip(board_target.models, source):
        with open(node.abspath, encoding="utf-8") as f:
            plans.append((spec.name, node.path, json.load(f)))

    def fastest(min_size: int, reserve: int) -> str | None:
        board = boards.load_board_file(board_target.board_file)
        try:
            return board.fastest_region(min_size, reserve=reserve).name
        except ArenaError:
            return None

    try:
        rep = report.gate(board_target, plans, fastest)
    except CheckFailed:
        for path in outputs:
            if os.path.exists(path):
                os.unlink(path)
        raise
    if rep.warning:
        sys.stdout.write(rep.warning + "\n")
    doc = report.to_doc(rep)
    report.write(target[0].path, doc)
    if len(target) > 1:  # [report, arena_board.c, arena_board.h, arena_tables.c, <board>.ld]
        _write_arena(doc, target[1].path, target[2].path, target[3].path)
        _write_ld(doc, board_target.board_file, target[4].path)


@_guarded
def _tables_action(target, source, env) -> None:
    from arena_tool import codegen, planfile

    doc = planfile.read(source[0].path)
    symbol = os.path.basename(target[0].path)[len("model_"):-len(".c")]  # gen/model_<symbol>.c
    header, body = codegen.model_sources(doc, planfile.lowered_model(source[1].path, doc), symbol)
    codegen.write(target[1].path, header)
    codegen.write(target[0].path, body)


def _write_arena(doc, c_path, h_path, unity_path=None) -> None:
    """arena_board.{c,h} from a report; unity_path: also the board's one translation unit."""
    from arena_tool import codegen

    bases = [(m["name"], m["base"]) for m in doc["models"]]
    header, body = codegen.arena_sources(doc["board"], doc["arena_size"], bases)
    codegen.write(h_path, header)
    codegen.write(c_path, body)
    if unity_path:  # every model table, then the arena; quoted includes name files beside it
        names = [f"model_{m['name']}.c" for m in doc["models"]] + [os.path.basename(c_path)]
        lines = ["/* Generated by the arena SCons tool: the board's tables as one translation unit. */"]
        codegen.write(unity_path, "\n".join(lines + [f'#include "{n}"' for n in names]) + "\n")


def _write_ld(doc, board_file, path) -> None:
    from arena_tool import boards, linker

    board = boards.load_board_file(board_file)
    text = linker.render(board, doc["region"]["name"], doc["arena_size"], doc["reserve"]["stack"],
                         doc["reserve"]["heap"], arena_align=doc["alignment"])
    linker.write(path, text)


@_guarded
def _arena_action(target, source, env) -> None:
    from arena_tool import report

    _write_arena(report.read(source[0].path), target[0].path, target[1].path)


@_guarded
def _ld_action(target, source, env) -> None:
    from arena_tool import report

    _write_ld(report.read(source[0].path), source[1].path, target[0].path)


@_guarded
def _elfcheck_action(target, source, env) -> None:
    from arena_tool import boards, elfcheck, report
    from arena_tool.errors import ArenaError

    elf = target[0].path
    try:
        doc = report.read(os.path.join(os.path.dirname(elf), "arena_report.json"))
        board = boards.load_board_file(env["ARENA_ELVES"][elf]["board_file"])
        elfcheck.check(elf, board, doc)
    except ArenaError:
        if os.path.exists(elf):
            os.unlink(elf)
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


def _gate_emitter(target, source, env):
    """[report, arena_board.c, unity.c, x.ld] -> the same with arena_board.h after arena_board.c."""
    if len(target) > 1:
        base, _ = os.path.splitext(str(target[1]))
        target = [target[0], target[1], env.File(base + ".h")] + list(target[2:])
    return target, source


def _generator_deps(env):
    """One Value node: a digest of the bytes of arena_tool/**/*.py and schemas/*.json.

    Every arena output depends on it (convention 13), so editing the generator
    rebuilds what it generates. One digest node instead of ~40 file edges per
    target keeps the no-op build's dependency walk short; hashing the files
    costs about a millisecond.
    """
    import hashlib

    digest = hashlib.sha256()
    for path in _generator_files():
        digest.update(os.path.basename(path).encode() + b"\0")
        with open(path, "rb") as f:
            digest.update(hashlib.sha256(f.read()).digest())
    return [env.Value("arena_tool sources " + digest.hexdigest())]


def _generator_files():
    """arena_tool/**/*.py and schemas/*.json, sorted."""
    arena_tool = _import_arena_tool()
    pkg = os.path.dirname(os.path.abspath(arena_tool.__file__))
    files = []
    for folder, dirs, names in os.walk(pkg):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        files += [os.path.join(folder, n) for n in sorted(names) if n.endswith(".py")]
    from arena_tool.schema import schema_dir

    schemas = str(schema_dir())
    if os.path.isdir(schemas):
        files += [os.path.join(schemas, n) for n in sorted(os.listdir(schemas)) if n.endswith(".json")]
    return files


# ---------------------------------------------------------------- wiring


def _truthy(value) -> bool:
    return str(value).strip().lower() in ("1", "yes", "true", "on")


def _arena_firmware(env, manifest_path, sources=(), cpppath=(), board=None, link=None, build_dir=None,
                    board_dirs=()):
    """Wire every selected board of a manifest; returns {board: {name: node(s)}}.

    board: 'all', 'a,b' or one name (default: ARGUMENTS['board'], else all).
    link: False to stop after generation; default: link when the cross gcc is found.
    sources/cpppath: the firmware's own C files and include folders.
    """
    from SCons.Action import Action
    from SCons.Script import ARGUMENTS, Exit, GetOption

    arena_tool = _import_arena_tool()
    from arena_tool import manifest_cache
    from arena_tool.errors import ArenaError

    build_dir = build_dir or env.subst("$ARENA_BUILD_DIR")
    board = board if board is not None else ARGUMENTS.get("board")
    try:
        m = manifest_cache.cached(str(manifest_path), tuple(board_dirs) + tuple(env["ARENA_BOARD_DIRS"]),
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
    gates: dict = {}  # report path -> (target doc, files to delete when over budget)
    aenv = env.Clone(SCANNERS=[], ARENA_GATES=gates)
    wiring = _Wiring(aenv, build_dir, _generator_deps(aenv), sources, cpppath)
    if gcc:
        prefix = env.subst("$ARENA_GCC_PREFIX")
        cross = env.Clone(tools=["cc", "link"])  # not "gcc": it runs "gcc --version" on every read
        cross.Replace(CC=prefix + "gcc", LINK=prefix + "gcc", AS=prefix + "gcc", OBJSUFFIX=".o",
                      PROGSUFFIX=".elf", LIBS=["m"], ARENA_ELVES={})
        cross.PrependENVPath("PATH", os.path.dirname(gcc))
        wiring.cross = cross
    result = {}
    reports = []
    qemu_elves = {}
    generated: list = []
    tops: list = []
    for t in targets:
        nodes = wiring.board(t)
        result[t["name"]] = nodes
        reports.append(nodes["report"][0].path)
        aenv.Alias(t["name"], nodes["top"])
        generated += nodes["generated"]
        tops += nodes["top"]
        if "elf" in nodes and t["qemu"]:
            qemu_elves[nodes["elf"][0].path] = t
    aenv.Alias("arena", generated)
    env.Default(aenv.Alias("boards", tops))
    if qemu_elves:
        run = env.Alias("run", [env.File(p) for p in sorted(qemu_elves)],
                        Action(_run_action, "$ARENARUNCOMSTR"), ARENA_QEMU=qemu_elves)
    else:
        run = env.Alias("run", [], Action(_no_run_action, None), ARENA_NO_RUN=(
            [t["name"] for t in targets], bool(gcc)))
    env.AlwaysBuild(run)
    if not (GetOption("help") or GetOption("clean") or GetOption("no_exec")):
        import atexit

        atexit.register(_print_summary, reports, os.path.join(build_dir, ".arena_summary.json"))
    return result


def _no_run_action(target, source, env) -> int:
    names, have_gcc = env["ARENA_NO_RUN"]
    why = "none of them has a qemu machine in its board file" if have_gcc else "no cross gcc to build an ELF"
    sys.stderr.write(f"arena: run: cannot run board(s) {', '.join(names)}: {why}\n")
    return 2


class _Wiring:
    """The nodes of one ArenaFirmware call; shares plans and firmware objects between boards."""

    def __init__(self, env, build_dir, deps, sources, cpppath):
        self.env = env
        self.build_dir = build_dir
        self.deps = deps  # the generator digest: every arena output depends on it
        self.sources = sources
        self.cpppath = list(cpppath)
        self.cross = None  # the cross-compiling environment, when linking
        self.plans: dict = {}  # ModelSpec.key() -> plan node (one per distinct model and options)
        self.flag_envs: dict = {}  # compile flags -> (environment, objects of the firmware's own sources)
        self.elfcheck = None

    def plan(self, spec):
        """The plan of one model under one set of options, shared by every board that uses them.

        build/plans/<model>-<first 10 hex digits of sha256(options)>.plan.json.
        """
        key = spec["key"]
        node = self.plans.get(key)
        if node is None:
            import hashlib

            digest = hashlib.sha256(key.encode()).hexdigest()[:10]
            env = self.env
            node = env.ArenaPlan(f"{self.build_dir}/plans/{spec['name']}-{digest}.plan.json",
                                 [spec["path"], env.Value(key)])
            self.plans[key] = node
        return node

    def board(self, t):
        env = self.env
        bdir = f"{self.build_dir}/{t['name']}"
        gen = f"{bdir}/gen"
        report_path = f"{bdir}/arena_report.json"
        board_file = env.File(t["board_file"])
        board_plans = []
        for spec in t["models"]:
            board_plans += self.plan(spec)
        gate_key = env.Value(t["key"] + "|" + "|".join(s["key"] for s in t["models"]))
        env["ARENA_GATES"][report_path] = (t, _board_outputs(bdir, gen, t))
        # Once it passes, the gate also writes what follows from the report (as ArenaArena and
        # ArenaLinkerScript would) and gen/arena_tables.c, the board's generated C as one unit
        # (one compiler run per board): one node for all keeps a no-op build's walk short.
        gate = env.ArenaGate([report_path, f"{gen}/arena_board.c", f"{gen}/arena_tables.c",
                              f"{bdir}/{t['name']}.ld"], board_plans + [gate_key, board_file])
        rep, arena, unity, ld = gate[:1], gate[1:3], gate[3], gate[4:]
        tables = []
        for spec, plan in zip(t["models"], board_plans):
            tables += env.ArenaTables(f"{gen}/model_{spec['name']}.c", [plan, env.File(spec["path"])])
        env.Requires(tables, rep)  # order only: the gate passes before any table exists
        generated = board_plans + gate + tables
        env.Depends(generated, self.deps)
        nodes = {"plans": board_plans, "report": rep, "tables": tables, "arena": arena, "ld": ld,
                 "generated": generated, "all": generated, "top": generated}
        if self.cross is not None:
            elf = self.elf(t, bdir, [n for n in tables if n.path.endswith(".c")], unity, ld, rep)
            nodes["elf"] = elf
            nodes["all"] = generated + elf
            nodes["top"] = elf  # depends on all the rest: short alias child lists
        return nodes

    def elf(self, t, bdir, tables_c, unity, ld, rep):
        """Compile and link one board's firmware; the ELF check runs right after the link.

        Boards with the same compile flags share one environment and the objects of
        the firmware's own sources (build/common/<flags>/; they see ``cpppath`` only);
        gen/arena_tables.c includes files beside it, so needs no -I, and the linker
        flags reach the board's script and map through $TARGET (build/<board>/firmware.elf).
        """
        from SCons.Action import Action

        flags = list(t["gcc_flags"])
        key = "_".join(f.split("=", 1)[-1] for f in flags if not f.startswith("-mthumb"))
        entry = self.flag_envs.get(key)
        if entry is None:
            cross = self.cross
            ccflags = flags + ["-Os", "-g", "-std=c99", "-Wall", "-Wextra", "-ffunction-sections",
                               "-fdata-sections"] + list(cross.get("ARENA_EXTRA_CCFLAGS", []))
            linkflags = flags + ["-nostartfiles", "--specs=nano.specs", "--specs=nosys.specs",
                                 "-Wl,--gc-sections", "-Wl,--print-memory-usage",
                                 "-Wl,-Map,${TARGET.dir}/firmware.map",
                                 "-T", "${TARGET.dir}/${TARGET.dir.name}.ld"]
            fenv = cross.Clone(CPPPATH=self.cpppath, CCFLAGS=ccflags, LINKFLAGS=linkflags)
            _freeze_helpers(fenv)
            objs = []
            for src in self.sources:
                name = os.path.splitext(os.path.basename(str(src)))[0]
                objs += fenv.Object(f"{self.build_dir}/common/{key}/{name}.o", src)
            entry = self.flag_envs[key] = (fenv, objs)
            if self.elfcheck is None:
                self.elfcheck = Action(_elfcheck_action, "$ARENAELFCHECKCOMSTR")
        fenv, objs = entry
        obj = fenv.Object(f"{bdir}/obj/arena_tables.o", unity)
        fenv.Depends(obj, tables_c)  # also found by the C scanner; explicit, so the order never rests on it
        elf = fenv.Program(f"{bdir}/firmware.elf", objs + obj)
        fenv["ARENA_ELVES"][elf[0].path] = t
        fenv.Depends(elf, ld + rep)  # the script and the ELF check's input reach the ELF's signature
        fenv.Clean(elf, [f"{bdir}/firmware.map", f"{bdir}/run_report.json"])
        fenv.AddPostAction(elf, self.elfcheck)
        return elf


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


def _board_outputs(bdir, gen, t):
    """Files deleted when the gate fails, so no stale table, script or ELF survives."""
    out = [f"{gen}/model_{s['name']}.{x}" for s in t["models"] for x in ("c", "h")]
    out += [f"{gen}/arena_board.c", f"{gen}/arena_board.h", f"{gen}/arena_tables.c", f"{bdir}/{t['name']}.ld",
            f"{bdir}/firmware.elf", f"{bdir}/firmware.map", f"{bdir}/run_report.json"]
    return out


def _help_text(m, arena_tool) -> str:
    from arena_tool import boards

    shipped = boards.list_boards(list(m["board_dirs"]))
    lines = ["", "arena (manifest " + m["file"] + "):",
             "  scons board=NAME        build one board (also board=a,b and board=all; default all)",
             "  scons board=NAME run    run the firmware under QEMU (boards with a qemu machine)",
             "  scons -c board=NAME     remove that board's outputs under build/NAME",
             "  VERBOSE=1               show full command lines;  link=0  stop after generation",
             "  gcc_prefix=PREFIX       cross compiler prefix (default arm-none-eabi-)",
             "", "  boards in the manifest:"]
    for t in m["targets"]:
        qemu = f", qemu {t['qemu']}" if t["qemu"] else ""
        lines.append(f"    {t['name']:<18} region {t['region']}, budget {t['budget']['text']}{qemu}")
    lines.append("  all known boards: " + ", ".join(shipped))
    return "\n".join(lines) + "\n"


def _print_summary(report_paths, cache_file) -> None:
    """At exit: one block per board whose report exists and whose build did not fail."""
    from SCons.Script import GetBuildFailures

    failed = {str(f.node) for f in GetBuildFailures() if getattr(f, "node", None) is not None}
    paths = [p for p in report_paths if p not in failed and os.path.exists(p)]
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
        "ARENATABLESCOMSTR": "Generating $TARGET",
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
        "ArenaTables": Builder(action=Action(_tables_action, "$ARENATABLESCOMSTR"), suffix=".c",
                               src_suffix=".plan.json", emitter=_pair_emitter),
        "ArenaArena": Builder(action=Action(_arena_action, "$ARENAARENACOMSTR"), suffix=".c",
                              src_suffix=".json", emitter=_pair_emitter),
        "ArenaLinkerScript": Builder(action=Action(_ld_action, "$ARENALDCOMSTR"), suffix=".ld",
                                     src_suffix=".json"),
    }
    env.Append(BUILDERS=builders)
    env.AddMethod(_arena_firmware, "ArenaFirmware")
