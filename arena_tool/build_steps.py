"""What each node of the build graph does: the actions of a firmware build as plain functions
over file paths, without SCons.

``build_graph`` says which files a build makes from which; this module makes them. The SCons
tool (``site_scons/site_tools/arena.py``) maps each node ``kind`` to one builder whose action
calls the function of that name here as ``step(build, targets, sources)``: the build's
:class:`Build`, then paths relative to the project (where SCons runs every action), a Value as
its text::

    plan          planning.plan_model -> the plan file
    tables        codegen.model_sources, only from a plan plancheck.verified finds true to its model
    tflm          the planned .tflite and TFLM's measured arena (runtime: tflm)
    tflm_tables   the planned model as a const C array
    tflm_app      the board's table of TFLM models (tflm_app.sources) for the package's tflm/main.cc
    tflm_lib      TFLite Micro as one static library (tflm_lib.build) for the models' ops
    gate          gate.gate; once it passes, the board's arena C file and linker script (or fragment)
    elf           ``link(build, elf, command, env)``: the link, its output captured; then check_elf
    final_report  the board report, measured on the ELF when linked, and its views
    status        an alias's end: exit non-zero when one of its boards' reports failed
    run           the run alias: each ELF under QEMU, its run_report.json

Every function raises ArenaError for what the user can fix; ``guarded`` renders it once and
turns it into the build's exit status (1 a failed check, 2 an input error, 3 an arena bug).
A board whose gate, link or ELF check fails is not a failed step: its message is printed, its
``arena_report.json`` (and its views) says why, it loses its generated files (no stale script
or ELF survives), ``Build.ready`` skips what only failed boards need, and the other boards
build on; the alias's ``status`` step then gives the build its exit status.

It sits on top of the stages, beside ``cli`` (tests/test_layering.py): a step runs stages up
to the report's views. Each step imports what it uses when it runs: every SCons run, a no-op
one too, imports this module for :class:`Build`, and a no-op build runs no step. What is
SCons's own (the Decider, the signature database) is the tool's, in
``site_scons/site_tools/arena_sconsign.py``; nothing here imports SCons.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from arena_tool.core.errors import ArenaError
    from arena_tool.model.lowering import Lowered
    from arena_tool.target.manifest_data import BoardTarget
    from arena_tool.builder.board_report import BoardProblem, BoardReport, OpMacs
    from arena_tool.plan.planfile import PlanFile

REBUILD = "delete it and run scons again: arena makes it anew"
QEMU_TIMEOUT = 60.0  # seconds a firmware may run under the run alias (the env's ARENA_QEMU_TIMEOUT)


@dataclass(frozen=True)
class Gate:
    """One board's gate: the board, the files its failure deletes, its report's path."""

    board: str
    deleted: tuple[str, ...]
    report: str


@dataclass(frozen=True)
class Elf:
    """One board's ELF: the board, its gate's, its report's and its run report's paths."""

    board: str
    gate: str
    report: str
    run_report: str


@dataclass
class Build:
    """What one build's actions look up by target path (one per ``ArenaFirmware`` call).

    docs: board name -> its target document (``manifest_data.target_doc``, from the manifest cache);
    ``target(name)`` makes its ``manifest_data.BoardTarget`` the first time an action asks (a no-op
    build runs no action, so it never imports the manifest's types); gates, elves: by the
    gate's and the ELF's path; lowered: (plan path, model sha) -> the lowered model the coverage
    check reads (a model shared by boards is lowered once per build); written: the reports a
    failure wrote during this build (the summary shows those boards too); qemu_timeout: seconds
    a firmware may run under the run alias; needs: target path -> the gates of the boards it is
    made for (``build_graph.Node.gates``); failed: board -> the report of each board whose gate,
    link or ELF check failed during this build (the report step writes it again after SCons
    removed its targets); gate_verdicts: gate path -> whether it passed (this build's, or read); jobs: scons -j, the
    TFLM library's parallel compiles; samples: model name -> the manifest's ``inputs:`` file (the run alias).
    """

    docs: Mapping[str, Mapping[str, Any]]
    qemu_timeout: float = QEMU_TIMEOUT
    jobs: int = 1  # parallel compiles of TFLM's library (scons -j)
    gates: dict[str, Gate] = field(default_factory=dict)
    elves: dict[str, Elf] = field(default_factory=dict)
    lowered: dict[tuple[str, str], Lowered] = field(default_factory=dict)
    written: set[str] = field(default_factory=set)
    needs: dict[str, tuple[str, ...]] = field(default_factory=dict)
    failed: dict[str, BoardReport] = field(default_factory=dict)
    _targets: dict[str, BoardTarget] = field(default_factory=dict)
    gate_verdicts: dict[str, bool] = field(default_factory=dict)
    samples: Mapping[str, str] = field(default_factory=dict)
    manifest: str = ""  # the manifest's path (the validate alias)
    port: str = ""  # port=: where the validate alias finds the boards
    validate: dict[str, tuple[str, ...]] = field(default_factory=dict)  # validation ELF -> its board's plans
    tolerances: Mapping[str, Mapping[str, float]] = field(default_factory=dict)  # the manifest's tolerances:

    def target(self, name: str) -> BoardTarget:
        """The manifest_data.BoardTarget of board ``name``, its board included (made once per build)."""
        t = self._targets.get(name)
        if t is None:
            from arena_tool.target import manifest_data

            t = self._targets[name] = manifest_data.target_from_doc(dict(self.docs[name]))
        return t

    def board_of_report(self, path: str) -> str:
        return next(g.board for g in self.gates.values() if os.path.normpath(g.report) == os.path.normpath(path))

    def ready(self, target: str) -> bool:
        """Whether to make ``target``: one of the boards it is made for passed its gate and has
        not failed since (a target made for no board in particular always is)."""
        gates = self.needs.get(target)
        return not gates or any(self.passed(g) for g in gates)

    def passed(self, gate: str) -> bool:
        """Whether the board of ``gate`` (a gate's path) is still good: its board report passed
        (read once; a dry run, before any gate ran, reads none) and nothing failed since."""
        if self.gates[gate].board in self.failed:
            return False
        if gate not in self.gate_verdicts:
            from arena_tool.builder import board_report

            self.gate_verdicts[gate] = not os.path.exists(gate) or board_report.read(gate).passed
        return self.gate_verdicts[gate]

    def fail(self, board: str, report: str, rep: BoardReport) -> None:
        """Board ``board`` failed: say why (its problems' lines, on stderr), write its report and
        views, and skip from now on what only it needs."""
        from arena_tool.builder import board_report

        failed = board_report.failure(rep)
        assert failed is not None, "a failed board has a problem"
        _say(failed)
        _write_failed(self, report, rep)
        self.failed[board] = rep


def guarded(body: Callable[[], None]) -> None:
    """Run one action: an ArenaError is its message (the gate's lines as they stand) and its exit
    code, an OSError the machine's (exit 2), anything else an arena bug (traceback, exit 3).

    SCons turns SystemExit into ExplicitExit, which keeps the code: the build stops as for any
    failure and the signature database is still written."""
    from arena_tool.core.errors import EXIT_BUG, EXIT_USAGE, ArenaError, os_error

    try:
        body()
    except ArenaError as err:
        _say(err)
        raise SystemExit(err.exit_code) from None
    except OSError as err:  # disk full, read-only build folder: the machine's, not an arena bug
        sys.stderr.write(os_error(err, "access the file").render() + "\n")
        sys.stderr.flush()
        raise SystemExit(EXIT_USAGE) from None
    except Exception:  # an arena bug: keep the traceback
        import traceback

        traceback.print_exc()
        sys.stderr.write("arena: this is an arena bug; please report it\n")
        raise SystemExit(EXIT_BUG) from None


def _say(err: ArenaError) -> None:
    """An error on stderr: the gate's lines as they stand, anything else rendered with its place."""
    text = err.msg if err.msg.startswith("arena: ") and not err.file else err.render()
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def signature_error(err: OSError, path: str | None) -> str:
    """The one line of a failed signature-database write (the SCons tool's database,
    site_scons/site_tools/arena_sconsign.py): the file, the machine's reason, the fix."""
    from arena_tool.core.errors import os_error

    e = os_error(err, "write SCons's signature database", path)
    folder = f"{os.path.dirname(path) or '.'}/" if path else "the build folder"
    fix = (f"free some space on the disk of {folder}" if err.errno in (errno.ENOSPC, errno.EDQUOT)
           else f"make {folder} writable (or move what is in the way)")
    e.hint = f"{fix} and build again; every output was written whole, and the next build checks each one"
    return e.render()


def _posix(path: str) -> str:
    return path.replace(os.sep, "/")


def _symbol(c_path: str) -> str:
    """model_<symbol>.c -> <symbol>."""
    return os.path.basename(c_path)[len("model_"):-len(".c")]


# ---------------------------------------------------------------- per model


def _fastest(t: BoardTarget, min_size: int, reserve: int) -> str | None:
    """gate.gate's ``fastest``: the fastest region of ``t``'s board with that much room, or None."""
    from arena_tool.core.errors import ArenaError

    try:
        return t.board.fastest_region(min_size, reserve=reserve).name
    except ArenaError:
        return None


@contextlib.contextmanager
def _model_failure(build: Build, stem: str) -> Iterator[None]:
    """A model that cannot be planned or measured (``stem``: its ``<model>-<digest>``) fails every board
    using it with a report saying so (status error, a ``model`` problem: the error's line), so CI has a
    file to read; the error itself goes on to ``guarded`` (one line, its exit status)."""
    from arena_tool.builder import gate as gate_module
    from arena_tool.builder.build_graph import digest
    from arena_tool.core.errors import ArenaError
    from arena_tool.builder.board_report import BoardProblem

    try:
        yield
    except ArenaError as err:
        for g in build.gates.values():
            names = [m["name"] for m in build.docs[g.board].get("models", ())
                     if f"{m['name']}-{digest(m['key'])}" == stem]
            if names and g.board not in build.failed:
                t = build.target(g.board)
                problem = BoardProblem("model", err.render(), model=names[0])
                rep = gate_module.gate(t, [], functools.partial(_fastest, t), [problem])
                _write_failed(build, g.report, rep)
                build.failed[g.board] = rep
        raise


_SHAPE_FLAG = re.compile(r"--input-shape ([^\s=]+)=([^\s)]+)")


def in_manifest(err: ArenaError, manifest: str, model: str) -> ArenaError:
    """A model's error about its input shapes as the manifest spells them: the CLI's
    ``--input-shape x=1,16`` is the model entry's ``input_shapes: {x: [1, 16]}``, at that entry's
    line (the model file is in the message); any other error, or without a manifest, as it is."""
    from arena_tool.core.errors import ArenaError
    from arena_tool.target import yamlio

    if not manifest or not (err.field or "").startswith(("--input-shape", "graph.input.")):
        return err
    try:
        doc = yamlio.load(manifest)
    except ArenaError:
        return err
    entries: list[Any] = list(doc.data.get("models") or []) if isinstance(doc.data, dict) else []
    index = next((i for i, m in enumerate(entries) if isinstance(m, dict) and m.get("name") == model), None)
    if index is None:
        return err

    def spelled(text: str) -> str:
        text = _SHAPE_FLAG.sub(lambda m: f"input_shapes: {{{m.group(1)}: [{', '.join(m.group(2).split(','))}]}}", text)
        return text.replace("--input-shape", "input_shapes")

    where = ("models", index, "input_shapes") if "input_shapes" in entries[index] else ("models", index)
    line, col = doc.value_position(where) if len(where) == 3 else doc.position(where)
    hint = spelled(err.hint) if err.hint else None
    return ArenaError(f"model {model} ({err.file}): {spelled(err.msg)}" if err.file else spelled(err.msg),
                      file=manifest, line=line, col=col, field=yamlio.field_name(where), hint=hint,
                      exit_code=err.exit_code)


def plan(build: Build, targets: Sequence[str], sources: Sequence[str]) -> None:
    """<model>.plan.json <- [model, Value(options key): its JSON text]."""
    from arena_tool.core import progress
    from arena_tool.core.errors import ArenaError
    from arena_tool.plan import planfile, planners, planning
    from arena_tool.core.problem import ModelOptions

    model, spec = sources[0], json.loads(sources[1])
    options = ModelOptions.from_doc(spec["options"])
    # a status line only when asked: it would garble the build's normal (and -j) output
    shown = progress.for_stream(sys.stderr, True) if os.environ.get("ARENA_PROGRESS") == "1" else None
    params = planners.Params(k=spec["k"], time_limit=spec["time_limit"], progress=shown)
    regions = [(str(n), int(c)) for n, c in spec.get("regions", ())]  # a split arena: (region, capacity) fastest first
    copied = [(r, _posix(path), ModelOptions.from_doc(o)) for r, path, o in spec.get("copied", ())]
    regions = planning.left_after_copies(regions, copied)
    stem = os.path.basename(targets[0])[:-len(".plan.json")]
    with _model_failure(build, stem):
        try:
            result = planning.plan_model(_posix(model), options, spec["planner"], params, regions)
        except ArenaError as err:
            raise in_manifest(err, build.manifest, stem.rsplit("-", 1)[0]) from None
    planfile.write(targets[0], result.plan_file)


def tables(build: Build, targets: Sequence[str], sources: Sequence[str]) -> None:
    """model_<symbol>.{c,h} <- [plan, model]: only from a plan plancheck.check finds true to the model."""
    from arena_tool.emit import codegen
    from arena_tool.plan import plancheck

    p, lowered = plancheck.verified(sources[0], _posix(sources[1]))
    header, body = codegen.model_sources(p, lowered, _symbol(targets[0]))
    codegen.write(targets[1], header)
    codegen.write(targets[0], body)


def tflm(build: Build, targets: Sequence[str], sources: Sequence[str]) -> None:
    """[<model>.tflm.json, <model>.planned.tflite] <- [plan, model.tflite]: the planned model and TFLM's arena."""
    from arena_tool.plan import planfile
    from arena_tool.core.files import write_atomic
    from arena_tool.run.tflm import tflm_measure
    from arena_tool.core.errors import CheckFailed

    with _model_failure(build, os.path.basename(os.path.dirname(targets[0]))):  # TFLM refused or crashed
        plan = planfile.load(sources[0])
        try:
            data, alloc = tflm_measure(_posix(sources[1]), plan, sources[0])
        except CheckFailed as e:  # a verdict on the plan: every board's gate reports it (arena_report.json)
            data, alloc = b"", {"model": plan.model, "error": e.msg, "head": plan.arena_size, "tail": 0,
                                "planned_bytes": 0, "tensor_arena_size": plan.arena_size, "ops": [], "outputs": []}
    write_atomic(targets[1], data)
    write_atomic(targets[0], json.dumps(alloc, indent=1, sort_keys=True) + "\n")


def tflm_tables(build: Build, targets: Sequence[str], sources: Sequence[str]) -> None:
    """model_<symbol>.{c,h} <- [<model>.planned.tflite, <model>.tflm.json]."""
    from arena_tool.emit import codegen

    with open(sources[0], "rb") as f:
        data = f.read()
    with open(sources[1], encoding="utf-8") as f:
        alloc = json.load(f)
    header, body = codegen.tflm_model_sources(_symbol(targets[0]), data, alloc["head"], alloc["tail"])
    codegen.write(targets[1], header)
    codegen.write(targets[0], body)


def tflm_app(build: Build, targets: Sequence[str], sources: Sequence[str]) -> None:
    """<b>/gen/arena_tflm.cc <- [Value(board, model names, TFLM headers), each model's tflm.json]."""
    from arena_tool.core.files import read_json
    from arena_tool.emit import codegen, tflm_app as app
    from arena_tool.target import tflm_sources

    spec = json.loads(sources[0])
    entries = []
    for name, path in zip(spec["models"], sources[1:]):
        alloc = read_json(path, "TFLM allocation file", REBUILD)
        methods = tflm_sources.resolver_methods(spec["resolver"], alloc.get("ops", []), f"model {name}")
        entries.append(app.TflmEntry(name, tuple(methods), int(alloc["tensor_arena_size"]),
                                     tuple(alloc.get("outputs", [])), ops=tuple(alloc.get("ops", []))))
    codegen.write(targets[0], app.sources(spec["board"], entries))


def tflm_lib(build: Build, targets: Sequence[str], sources: Sequence[str]) -> None:
    """libtflm.a <- [Value(tree, kernels, core flags, prefix), every tflm.json of the boards using it]:
    the kernels of the union of their ops."""
    from arena_tool.builder import tflm_lib as lib

    doc = dict(json.loads(sources[0]), ops=list(lib.ops_of(sources[1:])))
    lib.build(lib.LibrarySpec.from_json(doc), os.path.dirname(targets[0]), build.jobs, progress=sys.stdout)


# ---------------------------------------------------------------- per board


def _write_failed(build: Build, path: str, rep: BoardReport) -> None:
    """A failed board's report and its views."""
    from arena_tool.builder import board_report

    board_report.write(path, rep)
    _write_views(build, path, rep)
    build.written.add(path)


def _write_views(build: Build, json_path: str, rep: BoardReport, elf: str | None = None) -> None:
    """arena_report.{html,md} beside arena_report.json, from the same report (htmlreport)."""
    from arena_tool.report import htmlreport

    board = build.target(build.board_of_report(json_path)).board
    htmlreport.write(json_path, rep, htmlreport.Memory.of_board(board), elf)


def _lowered(build: Build, model_path: str, plan_path: str, p: PlanFile) -> Lowered:
    """The lowered model of a plan (for its runtime problems and MACs); a model shared by boards
    is lowered once per build."""
    from arena_tool.plan import plancheck

    key = (plan_path, p.model_sha256)
    lowered = build.lowered.get(key)
    if lowered is None:
        lowered = build.lowered[key] = plancheck.lowered_model(model_path, p)
    return lowered


def gate(build: Build, targets: Sequence[str], sources: Sequence[str]) -> None:
    """[arena_gate.json, arena C file, its header, linker script] <- [every plan, every tflm.json
    (runtime: tflm), ...]: gate.gate; a failure deletes the board's generated files and fails
    the board (``Build.fail``); a pass writes what follows from the report."""
    from arena_tool.plan import planfile
    from arena_tool.builder import board_report
    from arena_tool.builder import gate as gate_module
    from arena_tool.core.errors import ArenaError
    from arena_tool.core.files import read_json
    from arena_tool.emit import code_size, codegen, table_bytes, tileloop
    from arena_tool.target import flags

    g = build.gates[targets[0]]
    t = build.target(g.board)
    plans = [(spec.name, path, planfile.load(path, REBUILD)) for spec, path in zip(t.models, sources)]

    def fastest(min_size: int, reserve: int) -> str | None:
        try:
            return t.board.fastest_region(min_size, reserve=reserve).name
        except ArenaError:
            return None

    problems: list[BoardProblem] = []
    alloc = None
    macs: dict[str, tuple[OpMacs, ...]] = {}
    tables: dict[str, int] = {}  # the generated tables' flash, with arena's runtime
    if t.runtime == "tflm":  # then one tflm.json per model: TFLM's measured tail
        n = len(t.models)
        alloc = {spec.name: read_json(path, "TFLM allocation file", REBUILD)
                 for spec, path in zip(t.models, sources[n:2 * n])}
        problems += [board_report.BoardProblem("tflm", f"arena: {t.name}: model {name}: TFLM check failed: "
                                               f"{doc['error']}", model=name)
                     for name, doc in alloc.items() if doc.get("error")]
    else:
        for spec, (_, path, p) in zip(t.models, plans):
            if p.kind != "onnx" and t.runtime == "none":  # a .tflite model the project runs: no MACs counted
                continue
            lowered = _lowered(build, spec.path, path, p)
            macs[spec.name] = gate_module.macs_rows(p, lowered)
            if t.runtime != "none":
                problems += gate_module.runtime_problems(t.name, spec.name, p, lowered)
                tables[spec.name] = table_bytes.table_bytes(p, lowered, spec.name)
    code = None
    if t.runtime == "arena":
        code = code_size.code_bytes(t.board.cpu.gcc_flags(), flags.level(t.options.optimize),
                                    codegen.runtime_ops(p for _, _, p in plans),
                                    any(tileloop.loops(p) for _, _, p in plans))
    remedy = None
    if t.runtime != "tflm" and all(p.kind == "onnx" for _, _, p in plans):
        from arena_tool.builder import fit

        remedy = fit.remedy
    rep = gate_module.gate(t, plans, fastest, problems, tflm=alloc, macs=macs, remedy=remedy,
                           tables=tables, code=code)
    board_report.write(targets[0], rep)
    build.gate_verdicts[targets[0]] = rep.passed
    if not rep.passed:
        for path in g.deleted:
            if os.path.exists(path):
                os.unlink(path)
        build.fail(g.board, g.report, rep)
        return
    if rep.warning:
        sys.stdout.write(rep.warning + "\n")
    if len(targets) > 1:
        write_arena(rep, targets[1], targets[2], [plan for _, _, plan in plans])
        if t.linker == "fragment":
            _write_fragment(rep, t, targets[3])
        else:
            _write_ld(rep, t.board, targets[3])


def write_arena(rep: BoardReport, c_path: str, h_path: str, plans: Sequence[PlanFile] | None = None) -> None:
    """arena_board.{c,h} (runtime tflm: tflm_arena.{c,h}) from a board report; with arena's runtime,
    its kernel table holds the ops of the models' plans (``plans``, else read from the report's paths)."""
    from arena_tool.emit import codegen
    from arena_tool.plan import planfile

    if rep.runtime == "tflm":
        header, body = codegen.tflm_arena_sources(rep.board, rep.arena_size, rep.bases)
    else:
        kernels = None
        if rep.runtime == "arena":
            if plans is None:
                plans = [planfile.load(m.plan, REBUILD) for m in rep.models]
            kernels = codegen.runtime_ops(plans)
        header, body = codegen.arena_sources(rep.board, rep.arena_size, rep.bases, rep.alignment, rep.regions,
                                             kernels=kernels)
    codegen.write(h_path, header)
    codegen.write(c_path, body)


def _write_ld(rep: BoardReport, board: Any, path: str) -> None:
    """<board>.ld for the board report on ``board`` (a boards.Board)."""
    from arena_tool.emit import linker

    text = linker.render(board, rep.region, rep.arena_size, rep.reserve_stack, rep.reserve_heap,
                         arena_align=rep.alignment, arena_input=".tensor_arena" if rep.runtime == "tflm" else ".arena",
                         regions=rep.regions)
    linker.write(path, text)


def _write_fragment(rep: BoardReport, t: BoardTarget, path: str) -> None:
    """arena_fragment.ld for the board's own linker script, after checking that script for the
    resolved region (region: auto is known only now)."""
    from arena_tool.emit import linker_fragment
    from arena_tool.target import linkscript

    board, script = t.board, t.linker_script
    assert script is not None, "linker: fragment names the project's script (manifest)"
    names = dict(t.linker_regions)
    needed = linkscript.needed_names(linker_fragment.regions_of(board, rep), names)
    origins = {r.name: r.origin for r in (*board.ram, board.flash, *board.external_flash)}
    linkscript.check_script(script, needed, field="linker_script", origins=origins)
    linker_fragment.write(path, linker_fragment.render_for_report(board, rep, names))


def link(build: Build, elf: str, command: Sequence[str], env: Mapping[str, str]) -> None:
    """Run the link ``command`` with its output captured: a failed link fails the board, its
    report saying why (status over, naming the region, when ld says one overflowed; else error,
    exit 2), and leaves no ELF."""
    from arena_tool.builder import board_report, gate
    from arena_tool.core.errors import ArenaError

    try:
        p = subprocess.run(list(command), env=dict(env), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    except OSError as err:
        raise ArenaError(f"cannot run the linker {command[0]}: {err}", hint="check gcc_prefix= and PATH") from None
    out = sys.stdout if p.returncode == 0 else sys.stderr
    out.write(p.stdout)
    out.flush()
    if p.returncode == 0:
        return
    e = build.elves[elf]
    t = build.target(e.board)
    rep = gate.link_failure(board_report.read(e.gate), p.stdout, t.board.flash.name, _region_lengths(t))
    if os.path.exists(elf):
        os.unlink(elf)
    build.fail(e.board, e.report, rep)


def _region_lengths(t: BoardTarget) -> dict[str, int]:
    """Region name -> bytes for a failed link's messages: the board's RAM regions, and with
    linker: fragment the MEMORY regions of the user's script (whose names ld reports)."""
    lengths = {r.name: r.length for r in t.board.ram}
    if t.linker == "fragment" and t.linker_script:
        from arena_tool.target import linkscript

        lengths.update(linkscript.memory_lengths(t.linker_script))
    return lengths


def check_elf(build: Build, targets: Sequence[str], sources: Sequence[str]) -> None:
    """The ELF check against the board report; a failure deletes the ELF and fails the board."""
    from arena_tool.run import elfcheck
    from arena_tool.builder import board_report
    from arena_tool.core.errors import CheckFailed

    elf = targets[0]
    e = build.elves[elf]
    rep = board_report.read(e.gate)
    try:
        elfcheck.check(elf, build.target(e.board).board, rep)
    except CheckFailed as err:
        if os.path.exists(elf):
            os.unlink(elf)
        msg = err.msg if err.msg.startswith(rep.board + ": ") else f"{rep.board}: {err.msg}"
        build.fail(e.board, e.report,
                   board_report.with_problem(rep, board_report.BoardProblem("elf", f"arena: {msg}")))


def final_report(build: Build, targets: Sequence[str], sources: Sequence[str]) -> None:
    """arena_report.{json,html,md} <- [gate, ELF when linked]: the board report, with RAM and
    flash measured on the ELF when linked; a board that failed already has its report."""
    from arena_tool.run import elfcheck
    from arena_tool.builder import board_report

    board = build.board_of_report(targets[0])
    if board in build.failed:  # the gate, the link or the ELF check said why (Build.fail)
        _write_failed(build, targets[0], build.failed[board])
        return
    rep = board_report.read(sources[0])
    elf = sources[1] if len(sources) > 1 and rep.passed else None
    if elf is not None:
        ram, flash = elfcheck.usage(elf, build.target(board).board)
        rep = board_report.with_elf(rep, ram, flash, build.target(board).board.flash.name)
    if not rep.passed:
        build.fail(board, targets[0], rep)
        return
    board_report.write(targets[0], rep)
    _write_views(build, targets[0], rep, elf)


def status(build: Build, targets: Sequence[str], sources: Sequence[str]) -> None:
    """build/.arena_status_<alias>.json <- each board's report (or gate) the alias built: written
    when every one passed; else removed (the next build asks again) and the build exits with
    the worst board's status (1 a failed check, 2 a link the linker refused). Each failed
    board's lines were printed when it failed; the summary lists every board's outcome."""
    from arena_tool.builder import board_report
    from arena_tool.core.files import write_atomic

    outcome = {}
    code = 0
    for path in sources:
        rep = board_report.read(path)
        failed = board_report.failure(rep)
        outcome[rep.board] = rep.status
        code = max(code, failed.exit_code if failed else 0)
    if code:
        if os.path.exists(targets[0]):
            os.unlink(targets[0])
        raise SystemExit(code)
    write_atomic(targets[0], json.dumps({"boards": outcome}, indent=1, sort_keys=True) + "\n")


# ---------------------------------------------------------------- the run alias


def run(build: Build, targets: Sequence[str], sources: Sequence[str]) -> None:
    """The run alias: each ELF of ``sources`` under QEMU (-icount shift=0), its board's
    run_report.json, its table; with arena's runtime every ONNX model's outputs compared with
    onnxruntime's, every .tflite's with TFLite Micro's bit for bit (``firmware.outputs_match``), a
    mismatch failing the alias; a board that failed
    has no ELF to run and fails the alias."""
    from arena_tool.plan import planfile
    from arena_tool.run import firmware, qemu, runreport
    from arena_tool.builder import board_report
    from arena_tool.core.errors import CheckFailed

    tables = []
    failed: BaseException | None = None
    for elf in sources:
        e = build.elves[elf]
        t = build.target(e.board)
        if not os.path.exists(elf):  # its gate, link or ELF check failed and said why
            skipped = board_report.failure(board_report.read(e.report)) if os.path.exists(e.report) else None
            failed = failed or SystemExit(skipped.exit_code if skipped else 1)
            continue
        machine = t.board.qemu
        assert machine is not None, "the run alias holds only boards with a qemu machine"
        rc, output = qemu.run(elf, machine, build.qemu_timeout, icount=True)
        sys.stdout.write(output if output.endswith("\n") or not output else output + "\n")
        sys.stdout.flush()
        arena = board_report.read(e.report) if os.path.exists(e.report) else None
        result = runreport.build(t.name, machine, elf, rc, output, t.board.cpu.clock_hz, arena)
        runreport.write(e.run_report, result)
        tables.append(runreport.table(result))
        if rc != 0 and failed is None:
            failed = CheckFailed(f"firmware exited with status {rc} under qemu -M {machine}", file=elf)
        if arena is not None:  # every model gets a line: what it was compared with, or why not
            specs = {s.name: s for s in t.models}
            lines: list[str] = []
            ok = True
            for m in arena.models:
                path = _posix(specs[m.name].path)
                if not path.lower().endswith((".onnx", ".tflite")):  # a .tflite: against TFLM, bit for bit
                    continue
                if t.runtime != "arena":  # TFLM's own firmware: its printout is not main.c's pattern
                    lines.append(f"{m.name}: not compared here: runtime {t.runtime} (arena-tool run {path} --board "
                                 f"{t.board.name} compares TFLite Micro's firmware with its host interpreter)")
                elif m.name in build.samples:  # its inputs: data, in arena-tool run MANIFEST's firmware
                    line, good = firmware.sample_match(specs[m.name], t.board.name, build.samples[m.name],
                                                       build.qemu_timeout, t.options.optimize)
                    lines.append(line)
                    ok = ok and good
                elif (plan := planfile.load(m.plan, REBUILD)).options.io == "model":
                    more, good = firmware.outputs_match(output, [(m.name, path, plan)])
                    lines += more
                    ok = ok and good
                else:
                    lines.append(f"{m.name}: not compared with onnxruntime: io: {plan.options.io} (main.c's pattern "
                                 f"fills its int8 inputs, not the model's float ones; arena-tool run {path} --board "
                                 f"{t.board.name} --io {plan.options.io}"
                                 + (" --io-buffers caller" if plan.options.io_buffers == "caller" else "")
                                 + " compares it)")
            tables.append("\n".join(f"run: {t.name}: {line}" for line in lines))
            if not ok and failed is None:
                failed = CheckFailed(f"{t.name}: a model's outputs differ from its reference's (onnxruntime, or "
                                     "TFLite Micro for a .tflite)", file=elf)
    if tables:
        sys.stdout.write("\n".join(tables) + "\n")
        sys.stdout.flush()
    if failed is not None:
        raise failed


def validate(build: Build, targets: Sequence[str], sources: Sequence[str]) -> None:
    """The validate alias (``scons board=B validate port=PORT``): each board's validation firmware
    through ``arena-tool validate``'s protocol over ``port=`` (``qemu``: the board's QEMU machine),
    its summary printed; a mismatch or a failed board fails the alias."""
    from arena_tool.core.errors import ArenaError, CheckFailed

    if not sources:
        raise ArenaError("validate: no board of this build has a validation firmware (its board file names no "
                         "uart:, or its runtime is not arena's)", field="board",
                         hint="add uart: to the board file, as boards/mps2_an500.yaml has it")
    if not build.port:
        raise ArenaError("validate needs the board's port: scons board=NAME validate port=PORT", field="port",
                         hint="a serial device (/dev/ttyACM0), tcp:HOST:PORT, socket://HOST:PORT, or qemu")
    if len(sources) > 1 and build.port != "qemu":
        raise ArenaError(f"port={build.port} is one board's, and this build validates {len(sources)}",
                         field="board", hint="pick the board on that port: scons board=NAME validate port=PORT")
    worst = 0
    for elf in sources:
        e = build.elves[elf]
        if not os.path.exists(elf):  # its gate, link or ELF check failed and said why
            raise CheckFailed(f"{e.board}: no validation firmware to run (the board failed)", file=elf)
        worst = max(worst, run_validate(build.manifest, build.docs[e.board], elf, build.validate[elf], build.port,
                                        samples=build.samples, tolerances=build.tolerances))
    if worst:
        raise SystemExit(worst)


def check_cores(manifest_doc: Mapping[str, Any], boards: Sequence[str], gcc: str) -> None:
    """ArenaError when ``gcc`` cannot compile the core of one of ``boards`` (toolchain.check)."""
    from arena_tool.target import toolchain

    for t in manifest_doc["targets"]:
        if t["name"] in boards:
            toolchain.check(t["name"], t["board"]["cpu"]["core"], str(t.get("board_file") or ""), gcc)


def no_run(boards: Sequence[str], have_gcc: bool) -> int:
    """The run alias when no board can run: why, on stderr; exit status 2."""
    why = "none of them has a qemu machine in its board file" if have_gcc else "no cross gcc to build an ELF"
    sys.stderr.write(f"arena: run: cannot run board(s) {', '.join(boards)}: {why}\n")
    return 2


# ---------------------------------------------------------------- arena-tool generate

# the order generate runs the graph's kinds in: the gates before any table is made (as the
# SCons tool's Requires orders them), the reports last, then the default alias's status
_GENERATE_ORDER = {"plan": 0, "tflm": 1, "gate": 2, "tables": 3, "tflm_tables": 4, "report": 5}
_COMSTR = {"plan": "Planning", "tflm": "Generating", "gate": "Checking budget", "tables": "Generating",
           "tflm_tables": "Generating", "report": "Checking"}


@dataclass(frozen=True)
class Generated:
    """What ``generate`` made: per board its depfile, the reports it wrote (for the summary), and
    the exit status (``status``: 0, or the worst failed board's)."""

    depfiles: tuple[str, ...]
    reports: tuple[str, ...]
    status: int = 0


def _manifest_doc(manifest_path: str, board_dirs: Sequence[str], out: str,
                  fitted: Callable[[dict[str, Any], str], dict[str, Any]] | None) -> dict[str, Any]:
    """The manifest document ``generate`` and ``validate_firmware`` build from, read under
    ``out``'s build lock through the no-op cache and, with ``fitted``, as its fit: boards pick it."""
    from arena_tool.builder import noop_cache
    from arena_tool.core import files

    files.hold_build_lock(out)
    loaded = noop_cache.cached(manifest_path, tuple(board_dirs), os.path.join(out, ".arena_manifest.json"))
    return fitted(loaded, out) if fitted is not None else loaded


def generate(manifest_path: str, board: str | None, out: str, board_dirs: Sequence[str] = (),
             depfile: str | None = None, listing: bool = False,
             fitted: Callable[[dict[str, Any], str], dict[str, Any]] | None = None) -> Generated:
    """Everything ``scons link=0`` makes for the boards ``board`` picks, from the same build graph
    and the same steps, with paths relative to the current folder (the project, as SCons's):
    byte-identical outputs. Before any step runs, each board's depfile (``<out>/<board>/arena.d``,
    or ``depfile`` for one board; its target the board's gate, the stamp every run touches) names
    every file its outputs are made from, so an outer build
    (Make, Ninja, CMake) reruns this exactly when one changes, a failed gate too. A board that
    fails is a verdict, as in SCons: its lines are printed, the other boards are made, and
    ``Generated.status`` is the exit status; any other failing step raises SystemExit with its
    exit code, its message printed once (``guarded``). fitted: the manifest document as the
    ``fit:`` boards pick it (``run.fit.fitted``)."""
    from arena_tool.builder import build_graph
    from arena_tool.core import files

    root = os.path.abspath(os.curdir)
    absolute = os.path.isabs(out)  # the depfile names the targets as the user named --out
    out = files.project_path(out, root)
    manifest_path = files.project_path(manifest_path, root)
    doc: dict[str, Any] = {}
    guarded(lambda: doc.update(_manifest_doc(manifest_path, board_dirs, out, fitted)))
    graph = build_graph.graph_of(doc, out, build_graph.Toolchain(link=False, root=root), board)
    if depfile is not None and len(graph.boards) != 1:
        guarded(lambda: _one_board(len(graph.boards)))
    build = Build({t["name"]: t for t in doc["targets"]}, needs={n.targets[0]: n.gates for n in graph.nodes if n.gates},
                  manifest=str(doc.get("file") or ""))
    by_name = {t["name"]: t for t in doc["targets"]}
    depfiles = []
    for b in graph.boards:
        build.gates[b.gate] = Gate(b.name, b.deleted, b.report)
        path = depfile or f"{out}/{b.name}/arena.d"
        if listing:
            sys.stdout.write("".join(f"{k}={v}\n" for k, v in listing_lines(b, by_name[b.name], path)))
            continue
        guarded(lambda: _write_depfile(path, [b.gate], depfile_inputs(manifest_path, by_name[b.name]), absolute))
        depfiles.append(path)
    if listing:
        return Generated(tuple(depfiles), ())
    from arena_tool.builder import execute

    def action(kind: str) -> execute.Step:
        step = globals()["final_report" if kind == "report" else kind]

        def run(targets: list[str], sources: list[str]) -> None:
            sys.stdout.write(f"{_COMSTR[kind]} {targets[0]}\n")
            sys.stdout.flush()
            guarded(lambda: step(build, targets, sources))

        return run

    # the graph's executor, each step only for boards whose gates passed; asked in kind order, it
    # runs them in that order. By content, as SCons: a step whose inputs' bytes and options are
    # those of its last run (<out>/.arena_signatures.json) is not run again, so an outer build
    # that calls generate after a model was touched, or the budget edited, re-plans no model and
    # rewrites no table (its compile of them stays up to date): only what changed is made.
    made = sorted((n for n in graph.nodes if n.kind in _GENERATE_ORDER), key=lambda n: _GENERATE_ORDER[n.kind])
    try:
        execute.Executor(graph, root, steps={k: action(k) for k in _GENERATE_ORDER}, db=f"{out}/.arena_signatures.json",
                         ready=lambda n: build.ready(n.targets[0])).build([n.targets[0] for n in made])
    finally:
        # the outer build's stamp: each board's gate is newer than every input after a run (an
        # unchanged gate is not rewritten), so Make and CMake do not call generate again
        for b in graph.boards:
            if os.path.exists(b.gate):
                os.utime(b.gate)
    last = graph.node(graph.alias("boards").targets[-1])
    code = 0
    try:
        status(build, list(last.targets), [str(s) for s in last.sources])
    except SystemExit as stop:
        code = int(stop.code or 0)
    return Generated(tuple(depfiles), tuple(b.report for b in graph.boards), code)


def listing_lines(b: Any, t: Mapping[str, Any], depfile: str) -> list[tuple[str, str]]:
    """What an outer build compiles and links for one board (``generate --list``), as (key,
    absolute path or flag) pairs: ``stamp`` the board's gate, which every run of generate leaves
    newer than its inputs (the others are rewritten only when their bytes change), ``output``
    every file generate makes,
    ``depfile``; ``source`` the generated C files, ``runtime`` arena's runtime's (none with
    ``runtime: none``), ``include`` their folders; ``script`` the script to link with (arena's,
    or with ``linker: fragment`` the project's), ``libdir`` where ld finds what it INCLUDEs;
    ``flag`` the core's compile and link flags, ``cflag`` arena's flags for its own sources
    (``flags.cflags``: the level, C99, whose strict floating point the outputs depend on, the
    warnings that guard the tables, one section per function and datum), as SCons compiles them;
    ``link`` the link flags SCons links with (newlib-nano, no start files: the project's startup
    is the reset handler; unused sections dropped) and ``lib`` the libraries (libm): without
    them the link of arena's runtime fails (``undefined reference to _exit``)."""
    from arena_tool import runtime_dir
    from arena_tool.target import flags

    def full(path: str) -> str:
        return os.path.abspath(path).replace(os.sep, "/")

    c_files = [b.arena[0], *(p for p in b.tables if p.endswith(".c"))]
    out: list[tuple[str, str]] = [("stamp", full(b.gate))]
    out += [("output", full(p)) for p in b.all]
    out.append(("depfile", full(depfile)))
    out += [("source", full(p)) for p in c_files]
    runtime = t.get("runtime", "arena")
    if runtime == "arena":
        folder = runtime_dir()
        out += [("runtime", full(os.path.join(folder, n))) for n in sorted(os.listdir(folder)) if n.endswith(".c")]
    folders = [os.path.dirname(p) for p in c_files] + ([] if runtime == "tflm" else [runtime_dir()])
    out += [("include", full(d)) for d in dict.fromkeys(folders)]
    if t.get("linker") == "fragment":
        out += [("script", full(t["linker_script"])), ("libdir", full(os.path.dirname(t["linker_script"]) or ".")),
                ("libdir", full(os.path.dirname(b.gate)))]
    else:
        out.append(("script", full(b.ld)))
    out += [("flag", f) for f in t["gcc_flags"]]
    out += [("cflag", f) for f in flags.cflags(t.get("optimize"))]
    out += [("link", f) for f in flags.LINKFLAGS]
    out += [("lib", lib) for lib in flags.LIBS]
    return out


def _one_board(count: int) -> None:
    from arena_tool.core.errors import ArenaError

    raise ArenaError(f"--depfile names one file but --board picks {count} boards", field="depfile",
                     hint="give one board, or leave --depfile out (each board gets <out>/<board>/arena.d)")


def depfile_inputs(manifest_path: str, t: Mapping[str, Any]) -> list[str]:
    """Every file one board's outputs are read from: the manifest, the board file, the models,
    with ``linker: fragment`` the project's script and the scripts it INCLUDEs, and arena's own
    code and schemas (``files.package_files``: an upgrade of arena regenerates)."""
    from arena_tool.builder import build_graph
    from arena_tool.core import files

    named = list(build_graph.manifest_names(t))
    if t.get("linker") == "fragment" and os.path.isfile(t["linker_script"]):
        from arena_tool.target import linkscript

        named += linkscript.read_script(t["linker_script"]).files
    return list(dict.fromkeys([manifest_path, *named, *files.package_files()]))


def _make_word(path: str, absolute: bool = True) -> str:
    """One path in Make/Ninja depfile syntax: absolute, or (``absolute`` False, a target when
    --out was relative) as named from the folder generate runs in, as a Makefile there names it
    (Make matches a target by its name: an absolute target never matched the Makefile's relative
    one, so an edit never reran generate); a space, ``#`` and ``:`` escaped with ``\\``, ``$``
    doubled, any other ``\\`` as it is (both read ``\\\\`` before a letter as two). A path neither
    can read back (a tab or newline; a ``\\`` before a space, ``#``, ``:`` or at the end, which GNU
    make and Ninja read differently) is one error naming it."""
    from arena_tool.core.errors import ArenaError

    full = (os.path.abspath(path) if absolute else os.path.normpath(path)).replace(os.sep, "/")
    if re.search(r"[\t\n\r]|\\(?=[ #:]|$)", full):
        raise ArenaError("a path with a tab, a newline, or a '\\' before a space, '#', ':' or at its end cannot "
                         "be written in a depfile that GNU make and Ninja read alike", file=full,
                         hint="rename the file or folder")
    drive = full[:2] if os.name == "nt" and re.match(r"[A-Za-z]:/", full) else ""  # C: is Make's on Windows
    rest = full[len(drive):]
    return drive + rest.replace(" ", "\\ ").replace("#", "\\#").replace(":", "\\:").replace("$", "$$")


def _write_depfile(path: str, targets: Sequence[str], inputs: Sequence[str], absolute: bool = True) -> None:
    """The rule ``targets: inputs``: the targets as --out names them (``absolute``: an absolute
    --out, as CMake passes), the inputs absolute (a prerequisite is a file Make stats)."""
    from arena_tool.core.files import write_atomic

    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    lines = [" ".join(_make_word(t, absolute) for t in targets) + ":"] + [" " + _make_word(p) for p in inputs]
    write_atomic(path, " \\\n".join(lines) + "\n")


# ---------------------------------------------------------------- arena-tool validate


@dataclass(frozen=True)
class ValidateBuild:
    """What ``validate_firmware`` made: the board's validation ELF, its target document and the
    plan file of each of its models (manifest order)."""

    elf: str
    target: Mapping[str, Any]
    plans: tuple[str, ...]


def validate_firmware(manifest_path: str, board: str, out: str, board_dirs: Sequence[str] = (),
                      extra_ccflags: Sequence[str] = (),
                      fitted: Callable[[dict[str, Any], str], dict[str, Any]] | None = None) -> ValidateBuild:
    """The validation firmware of ``board`` (``<out>/<board>/validate.elf``): the manifest's build
    graph run by the executor as ``scons board=B validate`` builds it (plans, gate, tables, the
    same objects and link), every step guarded (an error is one message and its exit status).
    extra_ccflags: after arena's (``-DARENA_PROFILE`` for ``--profile``); fitted: as ``generate``'s. ArenaError (exit 2) for a
    board whose board file names no ``uart:`` or whose runtime is not arena's."""
    from arena_tool.builder import build_graph, execute
    from arena_tool.core import files
    from arena_tool.core.errors import EXIT_BUG, ArenaError

    root = os.path.abspath(os.curdir)
    out = files.project_path(out, root)
    manifest_path = files.project_path(manifest_path, root)
    doc: dict[str, Any] = {}
    guarded(lambda: doc.update(_manifest_doc(manifest_path, board_dirs, out, fitted)))
    toolchain = build_graph.Toolchain(link=True, root=root, extra_ccflags=tuple(extra_ccflags))
    graph: list[build_graph.BuildGraph] = []
    guarded(lambda: graph.append(build_graph.graph_of(doc, out, toolchain, board)))
    b = graph[0].boards[0]
    t = next(t for t in doc["targets"] if t["name"] == b.name)
    elf = f"{out}/{b.name}/validate.elf"
    if elf not in graph[0].targets():
        if not t["board"].get("uart"):
            why, fix = ("its board file names no uart: (kind, base, baud)",
                        "add uart: to the board file (schemas/board.schema.json), as boards/mps2_an500.yaml has it")
        else:  # runtime: tflm or none: the firmware is the application's, built around another runtime
            why = (f"its runtime is {t.get('runtime')}, and the validation firmware runs the models on arena's "
                   "runtime (a TFLM one would need TFLM's interpreter and a C++ main of its own)")
            fix = (f"validate on arena's runtime, which runs a .tflite bit for bit as TFLM: boards: [{{name: {b.name}, "
                   f"runtime: arena}}]" + ("; or compare TFLM itself on QEMU: arena-tool run MODEL.tflite --board "
                                          f"{b.name}" if t.get("runtime") == "tflm" else ""))
        guarded(lambda: _raise(ArenaError(f"board {b.name} has no validation firmware: {why}", file=manifest_path,
                                          field="--board", hint=fix)))
    build = Build({t["name"]: t for t in doc["targets"]},
                  needs={n.targets[0]: n.gates for n in graph[0].nodes if n.gates})
    build.gates[b.gate] = Gate(b.name, b.deleted, b.report)
    kinds = ("plan", "gate", "tables")

    def action(kind: str) -> execute.Step:
        step = globals()[kind]

        def run(targets: list[str], sources: list[str]) -> None:
            sys.stderr.write(f"{_COMSTR[kind]} {targets[0]}\n")
            sys.stderr.flush()
            guarded(lambda: step(build, targets, sources))

        return run

    ex = execute.Executor(graph[0], root, steps={k: action(k) for k in kinds},
                          ready=lambda n: build.ready(n.targets[0]), db=os.path.join(out, ".arena_validate.json"))
    try:
        ex.build([elf])
    except subprocess.CalledProcessError as e:
        guarded(lambda: _raise(ArenaError(f"the validation firmware does not build: {execute.first_error(e)}",
                                          field="validate", exit_code=EXIT_BUG,
                                          hint="this is an arena bug; please report it with the command")))
    if not os.path.exists(elf):  # the gate failed: its lines were printed
        failed = build.failed.get(b.name)
        raise SystemExit(failed and board_report_exit(failed) or 1)
    return ValidateBuild(elf, t, b.plans)


def board_report_exit(rep: BoardReport) -> int:
    from arena_tool.builder import board_report

    err = board_report.failure(rep)
    return err.exit_code if err is not None else 1


def _raise(err: BaseException) -> None:
    raise err


def run_validate(manifest_path: str, target: Mapping[str, Any], elf: str, plans: Sequence[str], port: str,
                 **options: Any) -> int:
    """Validate one board's built validation firmware over ``port`` (``run.validate.main``'s
    options): the manifest's models of the board and their plans, its ``inputs:`` samples."""
    from arena_tool.plan import planfile
    from arena_tool.run import validate
    from arena_tool.target import manifest_data

    t = manifest_data.target_from_doc(dict(target))
    loaded = [planfile.load(p, REBUILD) for p in plans]
    samples = dict(options.pop("samples", {}))
    return validate.main(manifest_path, t.board, port, list(t.models), loaded, elf, samples=samples, **options)


def tolerances_of(doc: Mapping[str, Any]) -> dict[str, dict[str, float]]:
    """The manifest's ``tolerances:`` from its document (``manifest_data.to_doc``'s)."""
    return {str(n): {str(k): float(v) for k, v in b} for n, b in doc.get("tolerances", [])}
