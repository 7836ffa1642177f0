"""SCons tool ``arena``: plan ONNX models, generate C tables and linker scripts, gate RAM and flash.

Use it from any SConstruct::

    import arena_tool
    env = Environment(tools=["arena"], toolpath=[arena_tool.site_tools_dir()])
    env.ArenaFirmware("app/arena.yaml", sources=["app/startup.c", "app/main.c"], cpppath=["app"])

This module only wires. ``ArenaFirmware`` reads the manifest through its JSON cache
(``arena_tool.builder.noop_cache``), asks ``arena_tool.builder.build_graph.graph_of`` for the build (every
file, what it is made from, the compile and link flags, the aliases: the policy is that
module's) and makes one Builder call per graph node, in order. Each builder's action calls the
function of its kind in ``arena_tool.build_steps`` with paths, where the work and its errors
live; the end of the build prints a per-board summary (``noop_cache.summary``).

Build variables: ``board=``, ``VERBOSE=1``, ``link=0`` and ``gcc_prefix=`` as ``scons -h`` says
(``build_graph.help_text``); ``require_link=1`` (or ``ARENA_REQUIRE_TOOLS=1``) as
``build_graph.without_gcc`` says: what a build without the cross gcc does.
``scons -h`` lists the boards, ``scons -c`` cleans, ``scons board=NAME run`` runs the ELFs
under QEMU, ``scons board=NAME report`` builds only the reports and what they need.
``ARENA_PROGRESS=1`` in the environment shows the planner's status line. The user's
``CPPPATH`` comes first on every compile and its ``CCFLAGS``/``CFLAGS``/``CPPDEFINES``/
``LINKFLAGS``/``LIBS``/``LIBPATH`` after arena's (so a user's flag wins).

Per-build values live in one ``build_steps.Build`` held by ``env["ARENA_STATE"]`` (SCons's
Clone shares it), never in module globals. Every target of arena's environments is reused
only while its file is the one the signature database recorded, and the database's write fails
with one line (``arena_sconsign`` beside this file, the tool's SCons-specific part): a build
killed before SCons wrote .sconsign leaves no output a later build accepts. A no-op
``scons board=all`` should stay within 1.5x of an empty SConstruct's (bench/noop_build.py):
every node and edge wired here is walked on every build, so keep them few.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

import arena_sconsign  # beside this file: SCons puts the tool's folder on sys.path while it loads a tool

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
Nodes = Sequence[Any]  # SCons nodes (SCons ships no type information)
Action = Callable[[Nodes, Nodes, Any], int]


def _import_arena_tool() -> Any:
    """arena_tool from the installed package, else from the checkout this tool sits in."""
    try:
        import arena_tool
    except ImportError:
        if os.path.isdir(os.path.join(_ROOT, "arena_tool")) and _ROOT not in sys.path:
            sys.path.insert(0, _ROOT)
        import arena_tool
    return arena_tool


def exists(env: Any) -> bool:
    try:
        _import_arena_tool()
    except ImportError:
        return False
    return True


def _paths(nodes: Nodes) -> list[str]:
    """The nodes as the steps read them: a file's path, a Value's text, an alias's name."""
    from SCons.Node.Python import Value

    return [n.read() if isinstance(n, Value) else getattr(n, "path", str(n)) for n in nodes]


def _step(name: str) -> Action:
    """The action of step ``name``: ``build_steps.<name>(build, targets, sources)``, guarded."""

    def action(target: Nodes, source: Nodes, env: Any) -> int:
        from arena_tool import build_steps

        step = getattr(build_steps, name)
        build_steps.guarded(lambda: step(env.get("ARENA_STATE"), _paths(target), _paths(source)))
        return 0

    action.__name__ = f"arena_{name}"
    return action


def _when_ready(inner: Any) -> Any:
    """``inner``, run only when ``Build.ready`` says a board it is made for passed (else nothing,
    silently: the board said why); its signature stays ``inner``'s."""
    from SCons.Action import Action

    skip = Action(lambda target, source, env: 0, None)

    def choose(target: Nodes, source: Nodes, env: Any, for_signature: bool) -> Any:
        build = env.get("ARENA_STATE")
        return inner if for_signature or build is None or build.ready(target[0].path) else skip

    return Action(choose, generator=1)


def _link(target: Nodes, source: Nodes, env: Any) -> int:
    from arena_tool import build_steps

    cmd = [str(a) for a in env.subst_list("$ARENA_LINKCOM", 0, target, source)[0]]
    environ = {k: str(v) for k, v in env["ENV"].items()}
    build_steps.guarded(lambda: build_steps.link(env["ARENA_STATE"], target[0].path, cmd, environ))
    return 0


def _no_run(target: Nodes, source: Nodes, env: Any) -> int:
    from arena_tool import build_steps
    return build_steps.no_run(*env["ARENA_NO_RUN"])


# The build graph names every target; these emitters add the ones a direct call leaves out.


def _pair_emitter(target: Nodes, source: Nodes, env: Any) -> tuple[Nodes, Nodes]:
    """x.c -> [x.c, x.h]: both outputs are declared, so SCons scans and cleans both."""
    if len(target) > 1:
        return target, source
    return [target[0], env.File(os.path.splitext(str(target[0]))[0] + ".h")], source


def _report_emitter(target: Nodes, source: Nodes, env: Any) -> tuple[Nodes, Nodes]:
    """arena_report.json -> [it, arena_report.html, arena_report.md] (htmlreport's views)."""
    if len(target) > 1:
        return target, source
    folder = os.path.dirname(str(target[0]))
    return [target[0]] + [env.File(os.path.join(folder, n)) for n in ("arena_report.html", "arena_report.md")], source


def _gate_emitter(target: Nodes, source: Nodes, env: Any) -> tuple[Nodes, Nodes]:
    """[gate, arena_board.c, x.ld] -> the same with arena_board.h after arena_board.c."""
    if len(target) == 3:
        target = [target[0], target[1], env.File(os.path.splitext(str(target[1]))[0] + ".h"), target[2]]
    return target, source


def _manifest_scanner() -> Any:
    """The gate builder's source scanner: for the manifest (a source of every board's gate) the
    files it names for that board (``BoardNodes.named``), so SCons re-runs a gate when one of
    them changes. Every gate has the same manifest node, so the scanner's path (which SCons
    computes per target and keys its scan cache with) is the gate's board. Other sources and
    a direct ArenaGate call scan to nothing."""
    from SCons.Scanner import Scanner

    def board_of(env: Any, dir: Any, target: Nodes, source: Nodes) -> tuple[str, ...]:
        build = env.get("ARENA_STATE")
        gate = build.gates.get(target[0].path) if build is not None and target else None
        return (gate.board,) if gate else ()

    def named(node: Any, env: Any, path: tuple[str, ...]) -> list[Any]:
        scan = env.get("ARENA_SCAN")
        if scan is None or not path or node is not scan.manifest:
            return []
        return list(scan.named.get(path[0], []))

    return Scanner(function=named, name="ArenaManifest", path_function=board_of)


class _Scan:
    """The manifest scanner's answers (one per ArenaFirmware call, held by ``env["ARENA_SCAN"]``):
    the manifest's node, and board name -> the nodes of the files it names for that board."""

    def __init__(self) -> None:
        self.manifest: Any = None
        self.named: dict[str, list[Any]] = {}


def _print_summary(report_nodes: Nodes, build: Any, cache_file: str) -> None:
    """At exit: one block per board whose report this build wrote or found up to date, or that a
    failure wrote (a board the build never reached is not shown)."""
    from SCons.Node import executed, up_to_date

    paths = [n.path for n in report_nodes
             if (n.get_state() in (executed, up_to_date) or n.path in build.written) and os.path.exists(n.path)]
    if paths:
        from arena_tool.builder import noop_cache

        sys.stdout.write(noop_cache.summary(paths, cache_file) + "\n")
        sys.stdout.flush()


def _arena_firmware(env: Any, manifest_path: str, sources: Sequence[Any] = (), cpppath: Sequence[str] = (),
                    board: str | None = None, link: bool | None = None, build_dir: str | None = None,
                    board_dirs: Sequence[str] = ()) -> dict[str, dict[str, list[Any]]]:
    """Wire every selected board of a manifest; returns {board: {name: nodes}}.

    board: 'all', 'a,b' or one name (default: ARGUMENTS['board'], else all); ``cache=DIR`` (or
    ARENA_CACHE) is the build's SCons CacheDir. link: False to
    stop after generation; default: link when the cross gcc is found. sources/cpppath: the
    firmware's own C files and include folders (arena's runtime is added unless the manifest
    says ``runtime: none``). The environment's flags as set before this call reach every
    compile and the link (``build_graph.UserFlags``).
    """
    from SCons.Action import Action
    from SCons.Builder import Builder
    from SCons.Script import ARGUMENTS, Exit, GetOption

    arena_tool = _import_arena_tool()
    from arena_tool import build_steps
    from arena_tool.builder import build_graph, noop_cache
    from arena_tool.core import files
    from arena_tool.core.errors import ArenaError

    build_dir = build_dir or env.subst("$ARENA_BUILD_DIR")
    board = board if board is not None else ARGUMENTS.get("board")
    if link is None:
        link = build_graph.truthy(ARGUMENTS.get("link", "1"))
    if "gcc_prefix" in ARGUMENTS:
        env["ARENA_GCC_PREFIX"] = ARGUMENTS["gcc_prefix"]
    # cache=DIR (or ARENA_CACHE=DIR): every plan, table, object and ELF through one SCons CacheDir,
    # shared by a CI matrix's jobs and by clones at other paths, in any project's SConstruct
    cache = ARGUMENTS.get("cache", os.environ.get("ARENA_CACHE", ""))
    if cache:
        env.CacheDir(cache)
    gcc = env.WhereIs(env.subst("${ARENA_GCC_PREFIX}gcc"), os.environ.get("PATH", "")) if link else None
    top = env.Dir("#").abspath
    app = [src if hasattr(src, "abspath") else env.File(str(src)) for src in sources]
    toolchain = build_graph.Toolchain(
        link=bool(gcc), sources=tuple(n.abspath for n in app), cpppath=tuple(cpppath), root=top,
        runtime_dir=arena_tool.runtime_dir(), extra_ccflags=tuple(env.get("ARENA_EXTRA_CCFLAGS", ())),
        user=build_graph.UserFlags.of(env.get), prefix=env.subst("$ARENA_GCC_PREFIX"))
    try:
        manifest_path = files.project_path(str(manifest_path), top)  # no clone's path in outputs
        if not (GetOption("help") or GetOption("no_exec")):
            files.hold_build_lock(build_dir)  # a second scons in this tree: one line, not interleaved outputs
        m = noop_cache.cached(manifest_path, tuple(board_dirs) + tuple(env["ARENA_BOARD_DIRS"]),
                              os.path.join(build_dir, ".arena_manifest.json"))
        try:  # fit: boards as the search picks them, from its cache (nothing imported) or searched
            m = noop_cache.fitted(m, build_dir)
        except LookupError:
            from arena_tool.run import fit

            m = fit.fitted(m, build_dir)
        graph = build_graph.graph_of(m, build_dir, toolchain, board)
        if gcc:  # a core this gcc cannot compile: refused before any plan
            build_steps.check_cores(m, [b.name for b in graph.boards], gcc)
    except ArenaError as err:
        sys.stderr.write(err.render() + "\n")
        Exit(err.exit_code)
    if GetOption("help"):
        env.Help(build_graph.help_text(m))  # arena's options first; scons -H gives SCons's own
    if not gcc and not (GetOption("help") or GetOption("clean") or GetOption("no_exec")):
        required = build_graph.truthy(ARGUMENTS.get("require_link", os.environ.get("ARENA_REQUIRE_TOOLS", "0")))
        text, code = build_graph.without_gcc([os.path.join(build_dir, b.name) for b in graph.boards],
                                             env.subst("${ARENA_GCC_PREFIX}gcc"), link, required)
        (sys.stderr if code else sys.stdout).write(text)
        if code:
            Exit(code)
    # arena's builders: no scanners but the gate's (an alias never re-reads generated C)
    timeout = float(env.get("ARENA_QEMU_TIMEOUT", build_steps.QEMU_TIMEOUT))
    build = build_steps.Build({t["name"]: t for t in m["targets"]}, timeout, int(GetOption("num_jobs") or 1),
                              samples=dict(m.get("samples", [])), manifest=str(m.get("file") or ""))
    scan = _Scan()
    aenv = env.Clone(SCANNERS=[], ARENA_STATE=build, ARENA_SCAN=scan)
    aenv.Decider(arena_sconsign.recorded_only(aenv.decide_source, aenv.decide_target))
    cross = None
    if gcc:
        prefix = env.subst("$ARENA_GCC_PREFIX")
        cross = env.Clone(tools=["cc", "c++", "link"])  # not "gcc": it runs "gcc --version" on every read
        cross.Replace(CC=prefix + "gcc", CXX=prefix + "g++", LINK=prefix + "gcc", AS=prefix + "gcc", OBJSUFFIX=".o",
                      ARENA_STATE=build,
                      ARENA_LINKCOM="$LINK -o $TARGET $LINKFLAGS $SOURCES $_LIBDIRFLAGS $_LIBFLAGS")
        cross.PrependENVPath("PATH", os.path.dirname(gcc))
        obj = cross["BUILDERS"]["Object"]  # its compile, for the boards that passed
        cross.Append(BUILDERS={"ArenaObject": Builder(action=_when_ready(obj.action), emitter=obj.emitter,
                                                      source_scanner=obj.source_scanner, single_source=True)})
        cross.Decider(arena_sconsign.recorded_only(cross.decide_source, cross.decide_target))
    node = _wire(graph, aenv, cross, build, scan, app)
    result = {b.name: {k: [node(p) for p in paths] for k, paths in b.groups().items()} for b in graph.boards}
    for a in graph.aliases:
        if a.name.startswith("arena-gates-"):
            continue  # wired with the objects that require them
        if a.action == "run":  # each ELF with its board, its report and the run report it writes
            made = env.Alias(a.name, [node(e) for e in a.targets], Action(_step("run"), "$ARENARUNCOMSTR"),
                             ARENA_STATE=build)
        elif a.action == "validate":  # each board's validation ELF over port= (build_steps.validate)
            build.port = ARGUMENTS.get("port", "")
            build.manifest = manifest_path
            build.validate = {node(b.validate).path: b.plans for b in graph.boards if b.validate}
            build.tolerances = build_steps.tolerances_of(m)
            made = env.Alias(a.name, [node(e) for e in a.targets], Action(_step("validate"), None),
                             ARENA_STATE=build)
        elif a.action == "no_run":
            made = env.Alias(a.name, [], Action(_no_run, None),
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

        atexit.register(_print_summary, [node(b.report) for b in graph.boards], build,
                        os.path.join(build_dir, ".arena_summary.json"))
    return result


def _wire(graph: Any, aenv: Any, cross: Any, build: Any, scan: _Scan, app: Sequence[Any]) -> Callable[[Any], Any]:
    """One Builder call per node of ``graph``, in its order; returns the function that maps a
    graph path (or Value) to its SCons node. Arena's nodes go to ``aenv``, objects and ELFs to
    one clone of ``cross`` per compile environment (shared by every board with those flags)."""
    from SCons.Action import Action

    from arena_tool.builder.build_graph import Value
    from arena_tool.build_steps import Elf, Gate

    fs = aenv.fs
    files = {n.abspath: n for n in app}  # the firmware's sources as the SConstruct gave them
    values: dict[str, Any] = {}

    def node(p: Any) -> Any:
        if isinstance(p, Value):
            if p.text not in values:
                values[p.text] = aenv.Value(p.text)
            return values[p.text]
        if p not in files:
            files[p] = fs.File(p)  # no $ expansion: the path exactly as written
        return files[p]

    aliases = {a.name: aenv.Alias(a.name, [node(t) for t in a.targets])
               for a in graph.aliases if a.name.startswith("arena-gates-")}
    fenvs = {e.key: cross.Clone(CPPPATH=list(e.cpppath), CCFLAGS=list(e.ccflags), CFLAGS=e.cflags,
                                CPPDEFINES=e.cppdefines, LINKFLAGS=list(e.linkflags), LIBS=list(e.libs),
                                LIBPATH=e.libpath) for e in graph.envs}
    boards = {b.name: b for b in graph.boards}
    builders = {"plan": aenv.ArenaPlan, "tflm": aenv.ArenaTflm, "tables": aenv.ArenaTables, "tflm_tables":
                aenv.ArenaTflmModel, "gate": aenv.ArenaGate, "report": aenv.ArenaReport, "status": aenv.ArenaStatus,
                "tflm_app": aenv.ArenaTflmApp, "tflm_lib": aenv.ArenaTflmLib}
    link = check = None
    depends: dict[tuple[Any, ...], list[Any]] = {}
    requires: dict[tuple[str, ...], list[Any]] = {}
    scanned: list[Any] = []
    for n in graph.nodes:
        targets, sources = [node(t) for t in n.targets], [node(s) for s in n.sources]
        env = fenvs[n.env] if n.env else aenv
        if n.kind == "object":
            made = env.ArenaObject(targets, sources)
        elif n.kind == "elf":
            if link is None:
                check = _when_ready(Action(_step("check_elf"), "$ARENAELFCHECKCOMSTR"))
                link = _when_ready(Action(_link, "$LINKCOMSTR" if cross.get("LINKCOMSTR") else "$ARENA_LINKCOM",
                                          varlist=["ARENA_LINKCOM"]))
            extra = {**({} if n.linkflags is None else {"LINKFLAGS": list(n.linkflags)}),
                     **({"LINK": cross["CXX"]} if n.cxx else {})}
            made = env.Command(targets, sources, link, **extra)
            b = boards[n.board]
            build.elves[made[0].path] = Elf(n.board, node(b.gate).path, node(b.report).path, b.run_report)
            env.Clean(made, [node(c) for c in n.clean])
            env.AddPostAction(made, check)
        else:
            made = builders[n.kind](targets, sources)
            if n.kind == "gate":
                b = boards[n.board]
                build.gates[made[0].path] = Gate(n.board, tuple(b.deleted), b.report)
                scan.named[n.board] = [node(p) for p in b.named]
        if n.gates:  # made only for the boards whose gates pass (Build.ready)
            build.needs[made[0].path] = tuple(node(g).path for g in n.gates)
        if n.manifest:  # a source for the gate builder's scanner only (_manifest_scanner)
            scan.manifest = node(n.manifest)
            scanned.extend(made)
        if n.depends:
            depends.setdefault(n.depends, []).extend(made)
        if n.requires:
            requires.setdefault(n.requires, []).extend(made)
    # one call per set of dependencies (most nodes share the generator's, or one alias of gates)
    for deps, made in depends.items():
        aenv.Depends(made, [node(d) for d in deps])
    for names, made in requires.items():  # order only
        aenv.Requires(made, [r for name in names for r in (aliases[name] if name in aliases else [node(name)])])
    if scanned:  # what the manifest names is; its own bytes reach a gate as the board's Value
        aenv.Ignore(scanned, scan.manifest)
    return node


def generate(env: Any, **kwargs: Any) -> None:
    from SCons.Action import Action
    from SCons.Builder import Builder
    from SCons.Script import ARGUMENTS

    _import_arena_tool()
    from arena_tool.builder.build_graph import COMSTRS, truthy
    arena_sconsign.use_for(env)  # a full disk or read-only build/ at SCons's last write: one line, exit 2
    verbose = truthy(env.get("VERBOSE", ARGUMENTS.get("VERBOSE", "0")))
    env.SetDefault(ARENA_BUILD_DIR="build", ARENA_BOARD_DIRS=[], ARENA_GCC_PREFIX="arm-none-eabi-")
    for key, text in COMSTRS.items():
        env.SetDefault(**{key: None if verbose else text})

    def builder(action: Action, comstr: str | None, suffix: str, src_suffix: str, ready: bool = False,
                **kw: Any) -> Any:
        act = Action(action, comstr)
        return Builder(action=_when_ready(act) if ready else act, suffix=suffix, src_suffix=src_suffix, **kw)

    env.Append(BUILDERS={
        "ArenaPlan": builder(_step("plan"), "$ARENAPLANCOMSTR", ".plan.json", ".onnx"),
        "ArenaGate": builder(_step("gate"), "$ARENAGATECOMSTR", ".json", ".plan.json", emitter=_gate_emitter,
                             source_scanner=_manifest_scanner()),
        "ArenaReport": builder(_step("final_report"), "$ARENAREPORTCOMSTR", ".json", ".json",
                               emitter=_report_emitter),
        "ArenaTables": builder(_step("tables"), "$ARENATABLESCOMSTR", ".c", ".plan.json", True, emitter=_pair_emitter),
        "ArenaTflm": builder(_step("tflm"), "$ARENATFLMCOMSTR", ".tflm.json", ".plan.json"),
        "ArenaTflmModel": builder(_step("tflm_tables"), "$ARENATFLMCOMSTR", ".c", ".tflite", True,
                                  emitter=_pair_emitter),
        "ArenaStatus": builder(_step("status"), None, ".json", ".json"),
        "ArenaTflmApp": builder(_step("tflm_app"), "$ARENATFLMCOMSTR", ".cc", ".json", True),
        "ArenaTflmLib": builder(_step("tflm_lib"), "$ARENATFLMLIBCOMSTR", ".a", ".json", True),
    })
    env.AddMethod(_arena_firmware, "ArenaFirmware")
