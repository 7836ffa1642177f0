"""TFLite Micro as one static library, compiled from the user's tree (``tflm: {path: DIR}``).

``build(spec, out_dir)`` compiles ``tflm_sources.library_sources`` (the framework, the kernels
of the ops asked for, CMSIS-NN when asked) with the cross compiler (or the host's, for
``arena-tool run --board host``) and archives them into ``out_dir/libtflm.a``. The library is
build-graph nodes (``graph``: objects, then an ``archive`` node) run by the graph's executor
(``builder.execute``), which compiles only what changed (content signatures) and keeps every
object in the machine's content-addressed cache: the library of one tree, kernel set and core
is compiled once per machine, whoever asks first. The archive is written with ``ar``'s
deterministic mode from the objects in a fixed order, and made again only when one of them
changed. A SCons build makes it once per set of core flags and kernels
(``build/common/<core>_tflm_<kernels>/``), shared by every board with those flags;
``arena-tool run``, ``verify``, the tests and the benchmarks call the same function.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import subprocess
from typing import Sequence, TextIO

from arena_tool.builder import execute
from arena_tool.builder.build_graph import BuildGraph, CompileEnv, Node, Value
from arena_tool.core import files
from arena_tool.core.errors import ArenaError
from arena_tool.target import tflm_sources


@dataclasses.dataclass(frozen=True)
class LibrarySpec:
    """What one library is made of: the TFLM tree, the kernel set, the ops, the core's flags
    (``cpu.gcc_flags()``; empty on the host) and the compilers' prefix (``arm-none-eabi-``, or
    '' for the host's g++/gcc/ar)."""

    root: str
    kernels: str
    ops: tuple[str, ...]
    cpu_flags: tuple[str, ...]
    prefix: str = "arm-none-eabi-"

    @property
    def target(self) -> bool:
        return bool(self.prefix)

    def compile_flags(self, lang: str) -> list[str]:
        """Every flag of a compile in ``lang`` but the level: the core, TFLM's, the include folders."""
        own = tflm_sources.cxx_flags(self.kernels) if lang == "c++" else tflm_sources.c_flags(self.kernels)
        return [*self.cpu_flags, *own, tflm_sources.prefix_map(self.root),
                *(f"-I{d}" for d in tflm_sources.include_dirs(self.root))]

    def to_json(self) -> dict[str, object]:
        return {"root": self.root, "kernels": self.kernels, "ops": list(self.ops), "cpu_flags": list(self.cpu_flags),
                "prefix": self.prefix}

    @classmethod
    def from_json(cls, doc: dict[str, object]) -> LibrarySpec:
        ops, cpu = doc["ops"], doc["cpu_flags"]
        assert isinstance(ops, list) and isinstance(cpu, list)
        return cls(str(doc["root"]), str(doc["kernels"]), tuple(map(str, ops)), tuple(map(str, cpu)),
                   str(doc["prefix"]))


def graph(spec: LibrarySpec, out_dir: str = "") -> BuildGraph:
    """The library as build-graph nodes: one object per source of ``tflm_sources.library_sources``
    (under ``out_dir/obj/``, at its path in the tree), in one compile environment per language
    and level, then ``out_dir/libtflm.a`` archived from them in that order."""
    root = os.path.abspath(spec.root)
    envs: dict[str, CompileEnv] = {}
    nodes: list[Node] = []
    sources = tflm_sources.library_sources(spec.root, spec.kernels, spec.ops, spec.target)
    # -DCMSIS_NN only where a file or its headers test it: the rest are the reference library's
    # objects (the same command, so the object cache compiles them once for both kernel sets)
    cmsis = tflm_sources.naming(spec.root, [s.path for s in sources if s.lang == "c++"], "CMSIS_NN") \
        if spec.kernels == "cmsis_nn" else set()
    for src in sources:
        kernels = spec.kernels if src.lang == "c" or src.path in cmsis else "reference"
        key = f"{src.lang}{src.level}{'' if kernels == 'reference' else '-' + kernels}"
        if key not in envs:
            own = tflm_sources.cxx_flags(kernels) if src.lang == "c++" else tflm_sources.c_flags(kernels)
            envs[key] = CompileEnv(key=key, ccflags=(*spec.cpu_flags, *own, tflm_sources.prefix_map(root), src.level),
                                   linkflags=(), cpppath=tuple(tflm_sources.include_dirs(root)), libs=(), cflags=(),
                                   cppdefines=(), libpath=(), prefix=spec.prefix)
        obj = os.path.join(out_dir, "obj", os.path.splitext(src.path)[0] + ".o")
        nodes.append(Node("object", (obj,), (os.path.join(root, src.path),), env=key))
    lib = os.path.join(out_dir, "libtflm.a")
    nodes.append(Node("archive", (lib,), tuple(n.targets[0] for n in nodes), env=next(iter(envs))))
    return BuildGraph(nodes=tuple(nodes), aliases=(), default=(), envs=tuple(envs.values()), boards=(),
                      generator=Value(""))


@dataclasses.dataclass(frozen=True)
class Library:
    """A built library: its path, and how many files this build compiled (0: every object came
    from the machine's object cache or was current)."""

    path: str
    compiles: int


def build(spec: LibrarySpec, out_dir: str, jobs: int = 1, progress: TextIO | None = None) -> Library:
    """Make ``out_dir/libtflm.a`` through the build graph's executor: an object is compiled when
    its command or the bytes of its source or of a header of TFLM's include folders changed,
    and taken from the machine's content-addressed object cache (``execute.cache_dir()``) when
    any build compiled it before: a SCons build, ``arena-tool run``, the tests and the benches
    share every object, and a second user of the same library compiles nothing. progress: where
    ``Compiling N/TOTAL`` lines go. ArenaError (exit 2) when the tree does not compile (it
    names the file and the compiler's first error)."""
    tflm_sources.check_tree(spec.root)
    tflm_sources.check_kernels(spec.kernels, spec.root)
    os.makedirs(out_dir, exist_ok=True)
    # one builder per folder: two at once (two `arena-tool run`s, two test workers) compiled into
    # the same object files and could archive, and cache, a half-written one; the second waits
    with files.waiting_lock(os.path.join(out_dir, files.LOCK_NAME)):
        return _build(spec, out_dir, jobs, progress)


def _build(spec: LibrarySpec, out_dir: str, jobs: int, progress: TextIO | None) -> Library:
    run = execute.Executor(graph(spec), out_dir, jobs=jobs, progress=progress)
    try:
        run.build(["libtflm.a"])
    except subprocess.CalledProcessError as e:
        tool = spec.prefix + "ar"
        if e.cmd and os.path.basename(str(e.cmd[0])) == tool:
            raise ArenaError(f"{tool} cannot archive TFLM's objects: {(e.stderr or '').strip()[:200]}",
                             field="tflm.path", hint="check the toolchain (binutils)") from None
        path = os.path.relpath(str(e.cmd[-1]), os.path.abspath(spec.root))
        raise ArenaError(f"TFLite Micro does not compile: {path}: {execute.first_error(e)}", field="tflm.path",
                         hint=f"check the tree at {spec.root} builds for this core") from None
    return Library(os.path.join(out_dir, "libtflm.a"), run.compiles)


def library_dir(spec: LibrarySpec) -> str:
    """Where ``arena-tool run`` keeps the library of ``spec``: one folder per tree, kernels, core
    and compiler in the machine's cache (the objects themselves are the object cache's)."""
    key = json.dumps([os.path.abspath(spec.root), spec.kernels, list(spec.cpu_flags), spec.prefix])
    return os.path.join(execute.cache_dir(), "tflm", hashlib.sha256(key.encode()).hexdigest()[:16])


def ops_of(paths: Sequence[str]) -> tuple[str, ...]:
    """The union of the builtin ops of allocation documents (``tflm.json``: ``ops``), sorted."""
    ops: set[str] = set()
    for path in paths:
        with open(path, encoding="utf-8") as f:
            ops.update(json.load(f).get("ops", []))
    return tuple(sorted(ops))
