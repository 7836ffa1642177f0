"""The firmware build as data: every file a manifest's boards make, what it is made from, and the
build's aliases, in frozen dataclasses and without SCons.

``graph_of(manifest, build_dir, toolchain)`` returns a :class:`BuildGraph`; the SCons tool
(``site_scons/site_tools/arena.py``) walks its ``nodes`` in order and maps each ``kind`` to one
Builder, so the graph is what the build does and this module is where its policy lives: file
names, which inputs each step reads, what shares a node between boards, the compile and link
flags, the aliases. The graph is a function of its inputs (the same manifest, folders and
toolchain give an equal graph), and reading it costs a no-op build about a millisecond.

Node kinds, with their targets and their sources in the order the tool's actions read them
(``<m>-<d>``: the model's name and the first 10 hex digits of sha256 of its resolved options,
so boards with the same options share a plan and its tables; ``<b>``: the board's folder
``build/<board>``)::

    plan         build/plans/<m>-<d>.plan.json        <- model file, Value(options key)
                                                      (depends: models whose weights a split region holds)
    tables       build/tables/<m>-<d>/model_<m>.{c,h}  <- plan, model file
    tflm         build/tables/<m>-<d>/<m>.tflm.json, <m>.planned.tflite  <- plan, model (runtime: tflm)
    tflm_tables  build/tables/<m>-<d>/model_<m>.{c,h}  <- planned model, tflm.json (runtime: tflm)
    gate         <b>/arena_gate.json, <b>/gen/arena_board.{c,h} (tflm_arena.{c,h}),
                 <b>/<board>.ld (linker: fragment: <b>/arena_fragment.ld)
                                                      <- every plan [, every tflm.json],
                                                         Value(board key), the manifest
                                                         (scanned: ``manifest_names``)
    tflm_app     <b>/gen/arena_tflm.cc (tflm: given)  <- Value(board, models, TFLM headers), every tflm.json
    tflm_lib     build/common/<core>_tflm_<kernels>/libtflm.a (tflm: {path}) <- Value(tree, kernels,
                                                         core, compiler), the tflm.json of every board using it
    object       one .o                               <- one .c/.cc/.cpp (env: its CompileEnv)
    elf          <b>/firmware.elf (link, ELF check)    <- the objects (and libtflm.a), in link order
                 <b>/validate.elf (a board file with uart:, arena's runtime): the validation
                 firmware, runtime_dir()/validate/main.c and example/startup.c over the same
                 arena, runtime and tables objects (the ``validate`` alias; not in ``boards``)
    report       <b>/arena_report.{json,html,md}      <- gate [, ELF when linked]
    status       build/.arena_status_<alias>.json     <- each board's report (or gate) the alias builds

A board that fails (its gate, link or ELF check) is a verdict in its report, not a failed step:
every other board is still planned, gated, linked and reported. A node made for boards
(``gates``: tables, objects, ELFs) is built when one of those boards' gates passed, and
skipped otherwise; each command-line alias ends in a ``status`` node, ordered after everything
the alias builds, that exits non-zero when one of its boards failed (and then leaves no
file, so the next build asks again).

Objects go to ``build/common/<flags key>/`` (one compile per set of core flags and optimisation
level, not per board; the level's ``_Os`` after the core flags when not the default;
the firmware's sources at their path in the project, arena's runtime under arena_runtime/, each
plan's tables under tables/), but a board's own ``obj/arena_board.o``. Every plan, table, gate
and report also depends on ``BuildGraph.generator`` (a digest of arena's own code: editing the
generator rebuilds what it generates); tables and shared objects are ordered after the gates of
the boards that use them (``requires``: the budget fails before anything compiles), never
rebuilt because of them, and built only when one of them passed (``gates``). A no-op build walks every node and edge, so the graph keeps them few
(the gate writes the board's C file and linker script itself).

Flags are SCons command-line strings: arena's paths with ``$`` written ``$$``, the user's flags
as given, ``${TARGET.dir}`` the ELF's folder. File paths are plain: the tool makes nodes of them
without substitution.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Union

from arena_tool.target import board_choice, flags, tflm_sources
from arena_tool.target.boards import Uart
from arena_tool import runtime_dir
from arena_tool.core import files
from arena_tool.core.errors import ArenaError

if TYPE_CHECKING:
    from arena_tool.target.manifest_data import Manifest

KINDS = ("plan", "tflm", "tables", "tflm_tables", "gate", "tflm_app", "tflm_lib", "object", "elf", "report",
         "status")


class _Fields:
    """Equality, hash and repr by fields, written once for the frozen dataclasses below.

    ``@dataclass`` would generate (compile) the three per class; every SCons run imports this
    module, and that would cost a no-op build about 1.5 ms. Equal when of the same class with
    equal fields, as a dataclass's own ``__eq__``.
    """

    __slots__ = ()
    __dataclass_fields__: ClassVar[dict[str, Any]]

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self.__dataclass_fields__)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Fields) and other.__class__ is self.__class__ and self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={value!r}" for name, value in zip(self.__dataclass_fields__, self._values()))
        return f"{self.__class__.__name__}({fields})"



@dataclass(frozen=True, eq=False, repr=False)
class Value(_Fields):
    """An input that is text, not a file (an SCons Value): its node changes when the text does."""

    text: str


Source = Union[str, Value]


@dataclass(frozen=True, eq=False, repr=False)
class Node(_Fields):
    """One build step: ``targets`` made together from ``sources`` by the action of ``kind``.

    depends: also rebuild when these change (not handed to the action); requires: build these
    first (targets or alias names), never a reason to rebuild; board: the board whose settings
    the action looks up (gate, elf, report); env: the key of the CompileEnv (object, elf); linkflags:
    the ELF's instead of its env's (``linker: fragment``); clean: also removed by ``scons -c``;
    cxx: the ELF links with the C++ driver; manifest: the manifest file when it is the last source (gate), there for the tool's scanner:
    the files it names for ``board`` (``BoardNodes.named``) are the node's implicit dependencies,
    while its own bytes are no reason to rebuild (the board's settings reach the gate as its Value);
    gates: the gates of the boards the node is made for (tables, objects, ELFs): it is built when
    one of them passed and skipped when all failed (``requires`` orders it after them).
    """

    kind: str
    targets: tuple[str, ...]
    sources: tuple[Source, ...]
    depends: tuple[Source, ...] = ()
    requires: tuple[str, ...] = ()
    board: str = ""
    env: str = ""
    linkflags: tuple[Any, ...] | None = None
    clean: tuple[str, ...] = ()
    manifest: str = ""
    gates: tuple[str, ...] = ()
    cxx: bool = False  # elf: link with the cross g++ (C++ objects: TFLM, .cc/.cpp sources)


@dataclass(frozen=True, eq=False, repr=False)
class Alias(_Fields):
    """A name on the command line (``scons report``): builds ``targets`` (and ``depends``).

    action: ``"run"`` runs each target ELF under QEMU; ``"no_run"`` says why no board can run;
    ``"validate"`` validates each board's validation firmware over the serial port ``port=``
    names (``arena-tool validate``); all run on every call (``always``).
    """

    name: str
    targets: tuple[str, ...]
    depends: tuple[str, ...] = ()
    action: str = ""
    always: bool = False


@dataclass(frozen=True, eq=False, repr=False)
class UserFlags(_Fields):
    """What the project's environment brings to every compile and link, after arena's own flags
    (so a user's flag wins) and with its include folders first. ``ccflags``, ``linkflags``,
    ``cpppath`` and ``libs`` as lists; ``cflags``, ``cppdefines`` and ``libpath`` as they are."""

    ccflags: tuple[Any, ...] = ()
    linkflags: tuple[Any, ...] = ()
    cpppath: tuple[Any, ...] = ()
    libs: tuple[Any, ...] = ()
    cflags: Any = ()
    cppdefines: Any = ()
    libpath: Any = ()

    @classmethod
    def of(cls, get: Callable[[str], Any]) -> UserFlags:
        """The flags of an environment whose variable ``name`` is ``get(name)`` (an SCons env's
        ``get``): a string CCFLAGS/LINKFLAGS split into words, a string CPPPATH/LIBS one item."""
        out: dict[str, Any] = {}
        for var in ("CCFLAGS", "LINKFLAGS", "CPPPATH", "LIBS"):
            value = get(var)
            if isinstance(value, str):
                value = value.split() if var in ("CCFLAGS", "LINKFLAGS") else [value]
            out[var.lower()] = tuple(value) if value else ()
        for var in ("CFLAGS", "CPPDEFINES", "LIBPATH"):
            out[var.lower()] = get(var) or []
        return cls(**out)


@dataclass(frozen=True, eq=False, repr=False)
class Toolchain(_Fields):
    """How the firmware compiles. link: a cross gcc is there and linking is on (else the graph
    stops after the plans, tables, gates and reports); sources: the firmware's own C files
    (arena's runtime is added unless ``runtime: none``/``tflm``); cpppath: its include folders;
    root: the project folder (the SConstruct's): objects keep a source's path below it, and
    ``-ffile-prefix-map`` maps it to ``.``; runtime_dir: arena's C runtime (default the
    package's); extra_ccflags: after arena's compile flags (``ARENA_EXTRA_CCFLAGS``)."""

    link: bool = False
    sources: tuple[str, ...] = ()
    cpppath: tuple[Any, ...] = ()
    root: str = "."
    runtime_dir: str = ""
    extra_ccflags: tuple[str, ...] = ()
    user: UserFlags = field(default_factory=UserFlags)
    prefix: str = "arm-none-eabi-"  # the cross compilers' (gcc_prefix=): TFLM's library is built with it


@dataclass(frozen=True, eq=False, repr=False)
class CompileEnv(_Fields):
    """One compile environment: the boards with these core flags share it and its objects
    (``build/common/<key>/``)."""

    key: str
    ccflags: tuple[Any, ...]
    linkflags: tuple[Any, ...]
    cpppath: tuple[Any, ...]
    libs: tuple[Any, ...]
    cflags: Any
    cppdefines: Any
    libpath: Any
    prefix: str = "arm-none-eabi-"  # the compilers' (gcc_prefix=; '' for the host's): the executor runs them


@dataclass(frozen=True, eq=False, repr=False)
class BoardNodes(_Fields):
    """One board's files, by role (paths; ``elf`` empty when not linking). deleted: what a
    failing gate deletes, so no stale board file, script or ELF survives. generated: what the
    ``arena`` alias builds of this board (up to the linker script; the reports too when not
    linking); top: what ``scons <board>`` builds; named: what the manifest names for this board
    (``manifest_names``), the scanner's answer for its gate."""

    name: str
    gate: str
    report: str
    views: tuple[str, ...]
    plans: tuple[str, ...]
    tables: tuple[str, ...]
    arena: tuple[str, ...]
    ld: str
    elf: str
    run_report: str
    deleted: tuple[str, ...]
    generated: tuple[str, ...]
    all: tuple[str, ...]
    top: tuple[str, ...]
    named: tuple[str, ...] = ()
    validate: str = ""  # the validation firmware (a board file with uart:, arena's runtime, linking)

    def groups(self) -> dict[str, tuple[str, ...]]:
        """The board's files by role, as ``ArenaFirmware`` returns them (``elf`` when linking)."""
        out = {"plans": self.plans, "gate": (self.gate,), "tables": self.tables, "arena": self.arena,
               "ld": (self.ld,), "report": (self.report,), "views": self.views, "generated": self.generated,
               "all": self.all, "top": self.top}
        return {**out, "elf": (self.elf,)} if self.elf else out


@dataclass(frozen=True, eq=False, repr=False)
class BuildGraph(_Fields):
    """Every node in wiring order (a node's sources that are built come before it), the aliases,
    the default targets (alias names), the compile environments and each board's files."""

    nodes: tuple[Node, ...]
    aliases: tuple[Alias, ...]
    default: tuple[str, ...]
    envs: tuple[CompileEnv, ...]
    boards: tuple[BoardNodes, ...]
    generator: Value

    def node(self, target: str) -> Node:
        """The node that makes ``target`` (KeyError if none does)."""
        for n in self.nodes:
            if target in n.targets:
                return n
        raise KeyError(target)

    def of_kind(self, kind: str) -> tuple[Node, ...]:
        return tuple(n for n in self.nodes if n.kind == kind)

    def alias(self, name: str) -> Alias:
        for a in self.aliases:
            if a.name == name:
                return a
        raise KeyError(name)

    def board(self, name: str) -> BoardNodes:
        for b in self.boards:
            if b.name == name:
                return b
        raise KeyError(name)

    def env(self, key: str) -> CompileEnv:
        for e in self.envs:
            if e.key == key:
                return e
        raise KeyError(key)

    def targets(self) -> tuple[str, ...]:
        """Every file the build makes, in node order."""
        return tuple(t for n in self.nodes for t in n.targets)


# ---------------------------------------------------------------- policy: names and flags


def digest(text: str) -> str:
    """The first 10 hex digits of sha256(text): a plan's and its tables' folder suffix."""
    return hashlib.sha256(text.encode()).hexdigest()[:10]


def scons_path(path: str) -> str:
    """``path`` as SCons must be given it to mean exactly that file: SCons expands ``$`` in
    strings, so ``$`` is written ``$$`` (a model called ``a$b.onnx`` stays ``a$b.onnx``)."""
    return path.replace("$", "$$")


def flags_key(gcc_flags: Sequence[str]) -> str:
    """The folder name of a set of core flags under build/common/: their values, without -mthumb
    (``cortex-m7_fpv5-sp-d16_hard``)."""
    return "_".join(f.split("=", 1)[-1] for f in gcc_flags if not f.startswith("-mthumb"))


# what the build prints for each action (VERBOSE=1: the command lines instead)
COMSTRS = {"ARENAPLANCOMSTR": "Planning $TARGET", "ARENAGATECOMSTR": "Checking budget $TARGET",
           "ARENAREPORTCOMSTR": "Checking $TARGET", "ARENATABLESCOMSTR": "Generating $TARGET",
           "ARENATFLMCOMSTR": "Generating $TARGET",
           "ARENAELFCHECKCOMSTR": "Checking $TARGET",
           "ARENARUNCOMSTR": "Running $SOURCES", "CCCOMSTR": "Compiling $TARGET", "CXXCOMSTR": "Compiling $TARGET",
           "LINKCOMSTR": "Linking $TARGET", "ARENATFLMLIBCOMSTR": "Compiling TFLite Micro into $TARGET"}
CXX_SUFFIXES = (".cc", ".cpp", ".cxx", ".C")  # sources the cross g++ compiles

# what a project build links with beyond the flag policy's: a map and arena's script beside the ELF
ARENA_LINKFLAGS = (*flags.LINKFLAGS, "-Wl,-Map,${TARGET.dir}/firmware.map", "-T", "${TARGET.dir}/${TARGET.dir.name}.ld")


def prefix_map(root: str) -> str:
    """-ffile-prefix-map=<project>=.: debug info and __FILE__ name project files relative to
    it, so two clones at different paths build byte-identical objects and ELFs."""
    return "-ffile-prefix-map=" + scons_path(os.path.abspath(root)) + "=."


def compile_flags(gcc_flags: Sequence[str], root: str, extra: Sequence[str] = (),
                  user: Sequence[Any] = (), optimize: str | None = None) -> list[Any]:
    """CCFLAGS of a board's compiles: its core flags, the flag policy's at the ``optimize`` level
    (``flags.cflags``), the project mapped to ``.`` (between ``$(`` and ``$)``: out of the
    signature, as it only keeps the clone's path out of the output, so two clones share one
    CacheDir), ``extra``, then the user's."""
    return [*gcc_flags, *flags.cflags(optimize), "$(", prefix_map(root), "$)", *extra, *user]


def link_flags(gcc_flags: Sequence[str], user: Sequence[Any] = ()) -> list[Any]:
    """LINKFLAGS of a board's link: its core flags, newlib-nano without start files, unused
    sections dropped, a map and arena's linker script beside the ELF, then the user's."""
    return [*gcc_flags, *ARENA_LINKFLAGS, *user]


def fragment_link_flags(flags: Sequence[Any], script: str) -> list[Any]:
    """``flags`` with ``-T <the project's script> -L <its folder> -L <the board folder>`` instead
    of ``-T`` arena's script (``linker: fragment``): ld finds INCLUDEd files through -L."""
    out = list(flags)
    i = out.index("-T")
    folder = os.path.dirname(script) or "."
    out[i:i + 2] = ["-T", scons_path(script), "-L", scons_path(folder), "-L", "${TARGET.dir}"]
    return out


def object_name(path: str, top: str, runtime_dir: str) -> str:
    """A source's object path below build/common/<flags>/, without suffix: its path in the
    project; under arena's runtime folder arena_runtime/<path there>; elsewhere outside the
    project _ext/<digest of its folder>/<name>. Same-named files in two folders never collide."""
    stem = os.path.splitext(path)[0]
    for base, prefix in ((runtime_dir, "arena_runtime/"), (top, "")):
        rel = os.path.relpath(stem, base)
        if not rel.startswith(".." + os.sep) and rel != ".." and not os.path.isabs(rel):
            return prefix + rel.replace(os.sep, "/")
    return f"_ext/{digest(os.path.dirname(path))[:8]}/{os.path.basename(stem)}"


def project_file(path: str, root: str) -> str:
    """``path`` as SCons names that file: relative to the project when inside it, else absolute."""
    top = os.path.abspath(root)
    full = os.path.normpath(os.path.join(top, path))
    rel = os.path.relpath(full, top)
    return full if rel == os.pardir or rel.startswith(os.pardir + os.sep) else rel


def board_outputs(bdir: str, name: str) -> tuple[str, ...]:
    """Files deleted when a board's gate fails (whichever of them exist)."""
    gen = f"{bdir}/gen"
    return (f"{gen}/arena_board.c", f"{gen}/arena_board.h", f"{gen}/tflm_arena.c", f"{gen}/tflm_arena.h",
            f"{bdir}/{name}.ld", f"{bdir}/arena_fragment.ld",
            f"{bdir}/firmware.elf", f"{bdir}/firmware.map", f"{bdir}/run_report.json")


def truthy(value: object) -> bool:
    """A build variable's yes (``link=0``, ``VERBOSE=1``, ``require_link=yes``)."""
    return str(value).strip().lower() in ("1", "yes", "true", "on")


def without_gcc(bdirs: Sequence[str], gcc: str, link: bool, required: bool) -> tuple[str, int]:
    """A build without the cross gcc: (what to print, exit status). Required (require_link=1,
    ARENA_REQUIRE_TOOLS=1) and meant to link, it is an error, exit 2; else each board's stale
    ELF, map and run report are removed and a build meant to link says it stops early."""
    for bdir in bdirs:
        remove_unlinked(bdir, board_report=link and required)
    if link and required:
        return (no_gcc_text(gcc).replace("stopping after", "required to link (require_link=1 or "
                                         "ARENA_REQUIRE_TOOLS=1), not stopping after", 1) + "\n", 2)
    return (no_gcc_text(gcc) + "\n" if link else "", 0)


def remove_unlinked(bdir: str, board_report: bool = False) -> None:
    """Delete a board's ELF, map and run report when this build does not link: left from an
    earlier build they would look current beside tables they were not made from. board_report:
    the board report too, for a build that stops before it runs (a required link without the
    cross gcc): its "ok, linked" beside the old ELF said the failed build had succeeded."""
    for name in ("firmware.elf", "firmware.map", "run_report.json") + (("arena_report.json",) if board_report else ()):
        path = os.path.join(bdir, name)
        if os.path.isfile(path):
            os.remove(path)


def env_key(gcc_flags: Sequence[str], optimize: str | None = None) -> str:
    """The folder under build/common/ of one compile environment: its core flags
    (``flags_key``), then the optimisation level when not the default (``flags.env_suffix``)."""
    return flags_key(gcc_flags) + flags.env_suffix(optimize)


def compile_env(gcc_flags: Sequence[str], toolchain: Toolchain, optimize: str | None = None) -> CompileEnv:
    """The compile environment of one set of core flags and one optimisation level: arena's
    flags, then the user's; the user's include folders, the firmware's, then arena's runtime
    (for ``arena_model.h``)."""
    user = toolchain.user
    return CompileEnv(
        key=env_key(gcc_flags, optimize),
        ccflags=tuple(compile_flags(gcc_flags, toolchain.root, toolchain.extra_ccflags, user.ccflags, optimize)),
        linkflags=tuple(link_flags(gcc_flags, user.linkflags)),
        cpppath=(*user.cpppath, *toolchain.cpppath, _runtime_dir(toolchain)),
        libs=(*user.libs, *flags.LIBS), cflags=user.cflags, cppdefines=user.cppdefines, libpath=user.libpath,
        prefix=toolchain.prefix)


def firmware(build_dir: str, env: CompileEnv, sources: Sequence[str], elf: str, root: str = ".",
             libraries: Sequence[str] = (), cxx_env: CompileEnv | None = None) -> BuildGraph:
    """One firmware outside a manifest (``arena-tool run --board host``, the tests' builds with
    their own flags, ``arena-tool run MODEL.tflite``): each source compiled in ``env`` (a C++
    one in ``cxx_env`` when given; one made in ``build_dir`` to an object beside it, any other
    to ``build_dir/obj/``, at its path as ``object_name`` gives it), then linked in the order
    given, with ``libraries`` after the objects, into ``elf``. ``env.linkflags`` come before the
    objects, ``env.libs`` after them."""
    top = os.path.abspath(root)
    runtime = runtime_dir()
    own = os.path.abspath(os.path.join(top, build_dir))
    folder = "" if own == top else build_dir.rstrip("/") + "/"
    objects: list[str] = []
    nodes: list[Node] = []
    for src in sources:
        full = os.path.normpath(os.path.join(top, src))
        stem = os.path.splitext(full)[0]
        if os.path.dirname(full) == own:
            obj = project_file(stem, top) + ".o"
        else:
            obj = f"{folder}obj/{object_name(full, top, runtime)}.o"
        if obj in objects:
            obj = f"{obj[:-2]}_{len(objects)}.o"
        objects.append(obj)
        cxx = src.endswith(CXX_SUFFIXES)
        nodes.append(Node("object", (obj,), (src,), env=(cxx_env if cxx and cxx_env else env).key))
    cxx = any(s.endswith(CXX_SUFFIXES) for s in sources)
    nodes.append(Node("elf", (elf,), (*objects, *libraries), env=env.key, cxx=cxx))
    return BuildGraph(nodes=tuple(nodes), aliases=(), default=(), envs=(env, *([cxx_env] if cxx_env else [])),
                      boards=(), generator=Value(""))


def _runtime_dir(toolchain: Toolchain) -> str:
    if toolchain.runtime_dir:
        return toolchain.runtime_dir

    return runtime_dir()


def _unique(items: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))


def manifest_names(t: Mapping[str, Any]) -> tuple[str, ...]:
    """The files the manifest names for one board (a target of ``manifest.to_doc``): its board
    file, its models in manifest order, with ``linker: fragment`` the project's linker script.
    What the SCons tool's manifest scanner returns for the board's gate, so an edit to any of
    them re-runs that gate and no other board's."""
    script = [t["linker_script"]] if t.get("linker") == "fragment" else []
    return _unique([t["board_file"], *(s["path"] for s in t["models"]), *script])


# ---------------------------------------------------------------- the graph


def graph_of(manifest: Mapping[str, Any] | Manifest, build_dir: str = "build", toolchain: Toolchain | None = None,
             boards: str | Sequence[str] | None = None, generator: str | None = None) -> BuildGraph:
    """The build graph of ``manifest`` (``manifest.to_doc``'s or ``noop_cache.cached``'s
    plain data, or a ``Manifest``) for the boards ``boards`` picks (``board=``'s text:
    ``all``/None, ``a,b``, one name; or a list of names; an unknown name is an ArenaError).

    generator: the digest of arena's own code every output depends on (default
    ``files.package_digest()``).
    """
    doc: Mapping[str, Any]
    if isinstance(manifest, Mapping):
        doc = manifest
    else:
        from arena_tool.target import manifest_data

        doc = manifest_data.to_doc(manifest)

    by_name = {t["name"]: t for t in doc["targets"]}
    spec = boards if boards is None or isinstance(boards, str) else ",".join(boards)
    names = board_choice.select_names(list(by_name), spec, doc["file"])
    if generator is None:
        generator = files.package_digest()
    g = _Graph(build_dir.rstrip("/") or build_dir, toolchain or Toolchain(), Value("arena_tool sources " + generator),
               doc["file"])
    for name in names:
        g.board(by_name[name])
    return g.finish()


class _Graph:
    """graph_of()'s accumulator: nodes by first target, shared between boards (plans, tables and
    objects), made into frozen Nodes once every board has added its requirements."""

    def __init__(self, build_dir: str, toolchain: Toolchain, generator: Value, manifest: str) -> None:
        self.build_dir = build_dir
        self.manifest = manifest
        self.toolchain = toolchain
        self.generator = generator
        self.nodes: dict[str, dict[str, Any]] = {}  # first target -> Node fields (requires a list)
        self.models: dict[str, tuple[str, str, str, str]] = {}  # model key -> (plan, tables .c, name, tflm.json)
        self.envs: dict[str, CompileEnv] = {}
        self.env_gates: dict[str, list[str]] = {}  # env key -> the gates of the boards compiling with it
        self.boards: list[BoardNodes] = []
        self.qemu: list[tuple[str, str]] = []  # (ELF, report) of each board with a QEMU machine
        self.validate: list[str] = []  # the validation firmware of each board with a uart:
        self._runtime: list[str] | None = None

    def add(self, kind: str, targets: Sequence[str], sources: Sequence[Source], gate: str = "",
            **fields: Any) -> str:
        """The node of ``targets`` (made once; a later board adds its ``gate`` to its ``gates``)."""
        first = targets[0]
        if first not in self.nodes:
            requires = list(fields.pop("requires", ()))
            self.nodes[first] = dict(kind=kind, targets=tuple(targets), sources=tuple(sources),
                                     requires=requires, gates=[], **fields)
        if gate:
            self.nodes[first]["gates"].append(gate)
        return first

    def model(self, spec: Mapping[str, Any], tflm: bool) -> tuple[str, str, str, str]:
        """The plan of one model under one set of options and its C tables, shared by every board
        that uses them: (plan, tables .c, ``<model>-<digest>``, tflm.json or '')."""
        key = spec["key"]
        entry = self.models.get(key)
        if entry is not None:
            return entry
        gen = (self.generator,)
        name = f"{spec['name']}-{digest(key)}"
        model = spec["path"]
        copied = tuple(c[1] for c in spec.get("copied", ()))  # a split's capacity depends on their weights
        plan_path = self.add("plan", [f"{self.build_dir}/plans/{name}.plan.json"], [model, Value(key)],
                             depends=(*gen, *copied))
        folder = f"{self.build_dir}/tables/{name}"
        c, h = f"{folder}/model_{spec['name']}.c", f"{folder}/model_{spec['name']}.h"
        alloc = ""
        if tflm:  # a .tflite (the manifest allows it on runtime: tflm boards only)
            alloc = f"{folder}/{spec['name']}.tflm.json"
            planned = f"{folder}/{spec['name']}.planned.tflite"
            self.add("tflm", [alloc, planned], [plan_path, model], depends=gen)
            self.add("tflm_tables", [c, h], [planned, alloc], depends=gen)
        else:
            self.add("tables", [c, h], [plan_path, model], depends=gen)
        entry = self.models[key] = (plan_path, c, name, alloc)
        return entry

    def board(self, t: Mapping[str, Any]) -> None:
        name = t["name"]
        bdir = f"{self.build_dir}/{name}"
        gen = f"{bdir}/gen"
        gate_path = f"{bdir}/arena_gate.json"
        report_path = f"{bdir}/arena_report.json"
        tflm = t.get("runtime") == "tflm"
        entries = [self.model(spec, tflm) for spec in t["models"]]
        plans = [e[0] for e in entries]
        allocs = [e[3] for e in entries] if tflm else []
        tables = [p for e in entries for p in self.nodes[e[1]]["targets"]]
        gate_key = Value(t["key"] + "|" + "|".join(s["key"] for s in t["models"]))
        # Once it passes, the gate also writes what follows from its report: the arena's C file
        # and the linker script (one node for all keeps a no-op build's walk short).
        fragment = t.get("linker") == "fragment"  # the project's script INCLUDEs arena_fragment.ld
        stem = "tflm_arena" if tflm else "arena_board"
        arena = (f"{gen}/{stem}.c", f"{gen}/{stem}.h")
        ld = f"{bdir}/{'arena_fragment' if fragment else name}.ld"
        gate = (gate_path, *arena, ld)
        self.add("gate", gate, [*plans, *allocs, gate_key, self.manifest],  # the manifest: scanned
                 depends=(self.generator,), board=name, manifest=self.manifest)
        for e in entries:  # the gates pass before a table is made; it is made when one passed
            self.nodes[e[1]]["requires"].append(gate_path)
            self.nodes[e[1]]["gates"].append(gate_path)
        generated = [*plans, *allocs, *gate, *tables]
        views = (f"{bdir}/arena_report.html", f"{bdir}/arena_report.md")
        final = (report_path, *views)
        elf = self.elf(t, bdir, arena[0], ld, gate_path, entries, allocs) if self.toolchain.link else ""
        self.add("report", final, [gate_path, elf] if elf else [gate_path],
                 depends=(self.generator, *plans), board=name)
        if elf and t["board"].get("qemu"):
            self.qemu.append((elf, report_path))
        self.boards.append(BoardNodes(
            name=name, gate=gate_path, report=report_path, views=views, plans=tuple(plans),
            tables=tuple(tables), arena=arena, ld=ld, elf=elf, run_report=f"{bdir}/run_report.json",
            deleted=board_outputs(bdir, name), generated=_unique(generated + ([] if elf else list(final))),
            all=_unique([*generated, *final, *([elf] if elf else [])]),
            top=final if elf else _unique([*final, *tables]), named=manifest_names(t),
            validate=f"{bdir}/validate.elf" if f"{bdir}/validate.elf" in self.nodes else ""))

    def compile_env(self, gcc_flags: Sequence[str], optimize: str | None) -> CompileEnv:
        key = env_key(gcc_flags, optimize)
        env = self.envs.get(key)
        if env is None:
            env = self.envs[key] = compile_env(gcc_flags, self.toolchain, optimize)
            self.env_gates[key] = []
        return env

    def obj(self, env: CompileEnv, target: str, source: str, gate: str, shared: bool = True) -> str:
        """One object for the board of ``gate``; a shared one (under build/common/) waits for the
        gates of its environment's boards."""
        return self.add("object", [target], [source], gate=gate, env=env.key,
                        requires=[gates_alias(env.key)] if shared else [])

    def elf(self, t: Mapping[str, Any], bdir: str, arena_c: str, ld: str, gate: str,
            entries: Sequence[tuple[str, str, str, str]], allocs: Sequence[str] = ()) -> str:
        """Compile and link one board's firmware; the ELF check runs right after the link.

        Boards with the same core flags share one environment and every object but their own
        arena_board.o (build/<board>/obj/)."""
        env = self.compile_env(t["gcc_flags"], t.get("optimize"))
        self.env_gates[env.key].append(gate)  # the objects this board shares wait for its gate too
        root = f"{self.build_dir}/common/{env.key}"
        stem = os.path.splitext(os.path.basename(arena_c))[0]  # arena_board, or tflm_arena
        objs = [self.obj(env, f"{bdir}/obj/{stem}.o", arena_c, gate, shared=False)]
        tc = self.toolchain
        runtime_dir = _runtime_dir(tc)
        top = os.path.abspath(tc.root)
        tflm = t.get("tflm")
        example_main = os.path.join(runtime_dir, "example", "main.c")
        for src in tc.sources:
            full = os.path.normpath(os.path.join(top, src))
            if tflm and is_example_main(full, example_main):
                continue  # the package's tflm/main.cc takes the example main.c's place
            objs.append(self.obj(env, f"{root}/{object_name(full, top, runtime_dir)}.o", src, gate))
        tail: list[str] = []
        if tflm:
            if t.get("linker") != "fragment":
                _needs_startup(t["name"], [os.path.normpath(os.path.join(top, s)) for s in tc.sources])
            tail = self.tflm(t, bdir, env, gate, allocs, objs)
        runtime: list[str] = []
        if t.get("runtime", "arena") not in ("none", "tflm"):
            if self._runtime is None:
                self._runtime = sorted(n for n in os.listdir(runtime_dir) if n.endswith(".c"))
            for n in self._runtime:
                runtime.append(self.obj(env, f"{root}/arena_runtime/{n[:-2]}.o", os.path.join(runtime_dir, n), gate))
        objs += runtime
        tables = [self.obj(env, f"{root}/tables/{name}.o", tables_c, gate) for _, tables_c, name, _ in entries]
        objs += tables
        linkflags = None
        depends: list[Source] = []
        if t.get("linker") == "fragment":
            script = project_file(t["linker_script"], tc.root)
            linkflags = tuple(fragment_link_flags(env.linkflags, script))
            depends.append(t["linker_script"])
        depends.append(ld)  # the script holds everything the ELF check reads of the board report
        cxx = bool(tflm) or any(os.path.splitext(s)[1] in CXX_SUFFIXES for s in tc.sources)
        if runtime and t["board"].get("uart"):
            self.validate_elf(t, bdir, env, gate, [objs[0], *runtime, *tables], linkflags, tuple(depends))
        return self.add("elf", [f"{bdir}/firmware.elf"], [*objs, *tail], gate=gate, depends=tuple(depends),
                        board=t["name"], env=env.key, linkflags=linkflags, cxx=cxx,
                        clean=(f"{bdir}/firmware.map", f"{bdir}/run_report.json"))

    def validate_elf(self, t: Mapping[str, Any], bdir: str, env: CompileEnv, gate: str, objs: Sequence[str],
                     linkflags: tuple[Any, ...] | None, depends: tuple[Source, ...]) -> None:
        """The board's validation firmware (``arena-tool validate``, the ``validate`` alias):
        ``runtime_dir()/validate/main.c`` with the board file's UART (compiled for this board
        alone), the example startup.c, and the firmware's own arena, runtime and tables objects,
        linked with the same script into ``<b>/validate.elf``."""
        runtime_dir = _runtime_dir(self.toolchain)
        uart = Uart.from_json(t["board"]["uart"])
        defines = (f"-DARENA_UART_{uart.kind.upper()}", f"-DARENA_UART_BASE=0x{uart.base:08x}u",
                   f"-DARENA_UART_BAUD={uart.baud}u", f"-DARENA_CLOCK_HZ={int(t['board']['cpu'].get('clock_hz') or 0)}u",
                   *([f"-DARENA_UART_CLOCK_HZ={uart.clock_hz}u"] if uart.clock_hz is not None else []),
                   *([f"-DARENA_UART_RX_IRQ={uart.rx_irq}u"] if uart.rx_irq is not None else []),
                   *(f"-DARENA_UART_SETUP_{k}_{what}=0x{n:08x}u" for k, w in enumerate(uart.setup)
                     for what, n in zip(("ADDR", "MASK", "VALUE"), w)))
        key = f"{env.key}_validate_{digest(' '.join(defines))}"
        if key not in self.envs:
            self.envs[key] = dataclasses.replace(env, key=key, ccflags=(*env.ccflags, *defines))
        startup = os.path.join(runtime_dir, "example", "startup.c")
        main = os.path.join(runtime_dir, "validate", "main.c")
        own = [self.obj(env, f"{self.build_dir}/common/{env.key}/arena_runtime/example/startup.o", startup, gate),
               self.obj(self.envs[key], f"{bdir}/obj/validate.o", main, gate, shared=False)]
        flags = [f.replace("/firmware.map", "/validate.map") if isinstance(f, str) else f
                 for f in (env.linkflags if linkflags is None else linkflags)]
        elf = self.add("elf", [f"{bdir}/validate.elf"], [objs[0], *own, *objs[1:]], gate=gate, depends=depends,
                       board=t["name"], env=env.key, linkflags=tuple(flags), clean=(f"{bdir}/validate.map",))
        self.validate.append(elf)

    def tflm(self, t: Mapping[str, Any], bdir: str, env: CompileEnv, gate: str, allocs: Sequence[str],
             objs: list[str]) -> list[str]:
        """A board's TFLM firmware (``tflm:`` given): the generated model table and the package's
        main.cc (TFLM's C++ flags, in one environment per core and kernel set), and TFLM's library:
        built (one per core and kernel set, shared by the boards using it) or the given one."""
        cfg = tflm_sources.TflmConfig.from_doc(t["tflm"])
        app_dir = os.path.join(_runtime_dir(self.toolchain), "tflm")
        key = f"{env.key}_tflm_{cfg.kernels}"
        cxx = self.envs.get(key)
        if cxx is None:
            cxx = self.envs[key] = dataclasses.replace(
                env, key=key, ccflags=(*t["gcc_flags"], *tflm_sources.cxx_flags(cfg.kernels),
                                       flags.LEVELS[flags.level(t.get("optimize"))], prefix_map(self.toolchain.root),
                                       *self.toolchain.user.ccflags),
                cpppath=(*env.cpppath, app_dir, os.path.join(app_dir, os.pardir, "example"), *cfg.headers()))
            self.env_gates[key] = []
        self.env_gates[key].append(gate)
        app = f"{bdir}/gen/arena_tflm.cc"
        names = [s["name"] for s in t["models"]]
        self.add("tflm_app", [app], [Value(json.dumps({"board": t["name"], "models": names,
                                                       "resolver": cfg.resolver_root()})), *allocs],
                 gate=gate, depends=(self.generator,), requires=[gate])
        objs.append(self.obj(cxx, f"{self.build_dir}/common/{key}/arena_runtime/tflm/main.o",
                             os.path.join(app_dir, "main.cc"), gate))
        objs.append(self.obj(cxx, f"{bdir}/obj/arena_tflm.o", app, gate, shared=False))
        if cfg.library:
            return [cfg.library]
        lib = f"{self.build_dir}/common/{key}/libtflm.a"
        spec = {"root": os.path.abspath(cfg.path), "kernels": cfg.kernels, "cpu_flags": list(t["gcc_flags"]),
                "prefix": self.toolchain.prefix}
        first = self.add("tflm_lib", [lib], [Value(json.dumps(spec, sort_keys=True))], gate=gate,
                         depends=(self.generator,), requires=[gates_alias(key)])
        node = self.nodes[first]
        node["sources"] = tuple(dict.fromkeys([*node["sources"], *allocs]))
        return [lib]

    def status(self, name: str, targets: Sequence[str]) -> Alias:
        """Alias ``name`` of ``targets`` and its status node: after them, it reads each board's
        report (the gate's when the alias builds no report) and exits non-zero if one failed."""
        verdicts = [b.report if b.report in targets else b.gate for b in self.boards
                    if b.report in targets or b.gate in targets]
        status = self.add("status", [f"{self.build_dir}/.arena_status_{name}.json"], verdicts,
                          depends=(self.generator,), requires=[t for t in targets if t not in verdicts])
        return Alias(name, (*targets, status))

    def finish(self) -> BuildGraph:
        aliases = [Alias(gates_alias(k), _unique(g)) for k, g in self.env_gates.items()]
        aliases += [self.status(b.name, b.top) for b in self.boards]
        aliases.append(self.status("arena", _unique(p for b in self.boards for p in b.generated)))
        # the reports and what they need: plans, gate (and the ELF when linking)
        aliases.append(self.status("report", (*(b.report for b in self.boards),
                                              *(v for b in self.boards for v in b.views))))
        aliases.append(self.status("boards", _unique(p for b in self.boards for p in b.top)))
        aliases.append(Alias("validate", tuple(self.validate), action="validate", always=True))
        if self.qemu:
            aliases.append(Alias("run", tuple(sorted(e for e, _ in self.qemu)),
                                 depends=tuple(r for e, r in self.qemu), action="run", always=True))
        else:
            aliases.append(Alias("run", (), action="no_run", always=True))
        nodes = tuple(Node(**dict(f, requires=_unique(f["requires"]), gates=_unique(f["gates"])))
                      for f in self.nodes.values())
        return BuildGraph(nodes=nodes, aliases=tuple(aliases), default=("boards",), envs=tuple(self.envs.values()),
                          boards=tuple(self.boards), generator=self.generator)


def _needs_startup(board: str, sources: Sequence[str]) -> None:
    """A TFLM firmware (``tflm:``: arena compiles TFLite Micro, minutes of C++) links with arena's
    script, which needs a vector table in ``.isr_vector`` and ``Reset_Handler``: without a source
    that defines them the link failed only after the whole TFLM compile. Said before any compile;
    a source that is not there yet (generated) leaves it to the link."""
    texts = []
    for path in sources:
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                texts.append(f.read())
        except OSError:
            return
    if any("Reset_Handler" in text and "isr_vector" in text for text in texts):
        return
    example = os.path.join(runtime_dir(), "example", "startup.c")
    raise ArenaError(f"board {board}: runtime: tflm with tflm: links the package's tflm/main.cc (in place of main.c) "
                     f"with your sources ({', '.join(os.path.basename(p) for p in sources) or 'none'}), and none of "
                     "them defines the vector table (section .isr_vector) and Reset_Handler that arena's linker script "
                     "needs", field="sources",
                     hint=f"add a startup file to the firmware's sources: the package's {example}, or your vendor's")


def is_example_main(path: str, example: str) -> bool:
    """``path`` is the package's example main.c, or a copy of it (docs/how-to/own-project.md's recipe copies it)."""
    if path == example:
        return True
    if os.path.basename(path) != "main.c":
        return False
    try:
        with open(path, "rb") as a, open(example, "rb") as b:
            return a.read() == b.read()
    except OSError:
        return False


def gates_alias(env_key: str) -> str:
    """The alias of the gates of every board compiling with ``env_key``: its shared objects
    require it."""
    return f"arena-gates-{env_key}"


# ---------------------------------------------------------------- scons -h


def no_gcc_text(gcc: str) -> str:
    """What a build that would link says when the cross gcc is missing."""
    return (f"arena: {gcc} not found on PATH: stopping after plans, C tables and linker scripts "
            "(install gcc-arm-none-eabi to link and check the ELF)")


def help_text(manifest: Mapping[str, Any]) -> str:
    """What ``scons -h`` adds: the commands, the build variables and the manifest's boards."""
    from arena_tool.target import boards

    shipped = boards.list_boards(list(manifest["board_dirs"]))
    lines = ["", "arena (manifest " + manifest["file"] + "):",
             "  scons board=NAME        build one board (also board=a,b and board=all; default all)",
             "  scons board=NAME run    run the firmware under QEMU (boards with a qemu machine)",
             "  scons board=NAME validate port=PORT   a data set through the validation firmware over the",
             "                          board's serial port (or port=qemu), compared with onnxruntime",
             "  scons board=NAME report build/NAME/arena_report.{json,html,md} (and what they need)",
             "  scons -c board=NAME     remove that board's outputs under build/NAME",
             "  VERBOSE=1               show full command lines;  link=0  stop after generation",
             "  gcc_prefix=PREFIX       cross compiler prefix (default arm-none-eabi-)",
             "", "  boards in the manifest:"]
    for t in manifest["targets"]:
        qemu = f", qemu {t['board']['qemu']}" if t["board"].get("qemu") else ""
        runtime = f", runtime {t['runtime']}" if t.get("runtime", "arena") != "arena" else ""
        runtime += f", linker fragment for {t['linker_script']}" if t.get("linker") == "fragment" else ""
        lines.append(f"    {t['name']:<18} region {t['region']}, budget {t['budget']['text']}{qemu}{runtime}")
    lines.append("  all known boards: " + ", ".join(shipped))
    lines += ["", "scons -H lists SCons's own options."]
    return "\n".join(lines) + "\n"
