"""TFLite Micro as one static library, compiled from the user's tree (``tflm: {path: DIR}``).

``build(spec, out_dir)`` compiles ``tflm_sources.library_sources`` (the framework, the kernels
of the ops asked for, CMSIS-NN when asked) with the cross compiler (or the host's, for
``arena-tool run --board host``) and archives them into ``out_dir/libtflm.a``. Like make, it
compiles only what changed: an object is reused while its command is the one recorded beside it
(``.cmd``) and no file its depfile names (``-MMD``) is newer. The archive is written with ``ar``'s
deterministic mode from the objects in a fixed order, and replaced only when its bytes change, so
a build that adds nothing relinks nothing. A SCons build makes it once per set of core flags and
kernels (``build/common/<core>/tflm_<kernels>/``), shared by every board with those flags; the
tests, ``arena-tool run`` and the benchmarks call the same function.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import json
import os
import shutil
import subprocess
import tempfile
from typing import Sequence

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


def _stale(obj: str, cmd_file: str, command: list[str]) -> bool:
    """Compile again: no object, another command, or a file the depfile names is newer."""
    try:
        with open(cmd_file, encoding="utf-8") as f:
            if json.load(f) != command:
                return True
        t = os.path.getmtime(obj)
        with open(obj[:-2] + ".d", encoding="utf-8") as f:
            deps = f.read().replace("\\\n", " ").split(":", 1)[1].split()
    except (OSError, ValueError, IndexError):
        return True
    return any(not os.path.exists(d) or os.path.getmtime(d) > t for d in deps if d != "\\")


KERNEL_DEFINE = "-DCMSIS_NN"  # the one flag the kernel sets' commands differ by (tflm_sources.defines)


def _deps(obj: str) -> list[str]:
    with open(obj[:-2] + ".d", encoding="utf-8") as f:
        return [d for d in f.read().replace("\\\n", " ").split(":", 1)[1].split() if d != "\\"]


def _reads_kernel_define(obj: str) -> bool:
    """Whether a file the object was compiled from (its depfile: the source and every header but
    the system ones) names the kernel define; one that names none compiles to the same bytes in
    either kernel set."""
    macro = KERNEL_DEFINE[2:].encode()
    try:
        for d in _deps(obj):
            with open(d, "rb") as f:
                if macro in f.read():
                    return True
    except (OSError, IndexError):
        return True
    return False


def _neutral(command: list[str], obj: str, shared_obj: str) -> list[str]:
    """The command without the kernel define, writing ``shared_obj``: the key of a shared object."""
    return [shared_obj if a == obj else a for a in command if a != KERNEL_DEFINE]


def _compile(command: list[str], cmd_file: str) -> str | None:
    """Run one compile; the compiler's first error line when it fails."""
    p = subprocess.run(command, capture_output=True, text=True)
    if p.returncode != 0:
        lines = [ln for ln in p.stderr.splitlines() if "error" in ln] or p.stderr.strip().splitlines() or ["?"]
        return lines[0]
    with open(cmd_file, "w", encoding="utf-8") as f:
        json.dump(command, f)
    return None


def build(spec: LibrarySpec, out_dir: str, jobs: int = 1, shared_dir: str | None = None) -> str:
    """Compile what changed and write ``out_dir/libtflm.a``; its path. ArenaError (exit 2) when
    the tree does not compile (it names the file and the compiler's first error).

    shared_dir: a folder the libraries of one tree and core share between kernel sets: an object
    whose files never name ``CMSIS_NN`` (the framework's, all but micro_profiler.cc) is the same
    in both sets, so it is kept there under its command without the define and copied from there
    instead of compiled again (a few minutes of the second set's build). Builds that may run at
    the same time (SCons's, one per kernel set) pass none."""
    tflm_sources.check_tree(spec.root)
    tflm_sources.check_kernels(spec.kernels, spec.root)
    root = os.path.abspath(spec.root)
    todo: list[tuple[str, list[str], str]] = []
    objects = []
    for src in tflm_sources.library_sources(spec.root, spec.kernels, spec.ops, spec.target):
        obj = os.path.join(out_dir, "obj", os.path.splitext(src.path)[0] + ".o")
        tool = spec.prefix + ("g++" if src.lang == "c++" else "gcc")
        command = [tool, *spec.compile_flags(src.lang), src.level, "-MMD", "-c", os.path.join(root, src.path),
                   "-o", obj]
        objects.append(obj)
        if _stale(obj, obj[:-2] + ".cmd", command):
            os.makedirs(os.path.dirname(obj), exist_ok=True)
            if shared_dir is None or not _copy_shared(command, obj, shared_dir, src.path):
                todo.append((src.path, command, obj[:-2] + ".cmd"))
    with concurrent.futures.ThreadPoolExecutor(max(1, jobs)) as pool:
        failures = [(path, err) for (path, _, _), err in
                    zip(todo, pool.map(lambda t: _compile(t[1], t[2]), todo)) if err is not None]
    if shared_dir is not None:
        failed = {p for p, _ in failures}
        for path, command, _ in todo:
            obj = command[command.index("-o") + 1]
            if path not in failed and not _reads_kernel_define(obj):
                _keep_shared(command, obj, shared_dir, path)
    if failures:
        path, err = failures[0]
        raise ArenaError(f"TFLite Micro does not compile: {path}: {err}", field="tflm.path",
                         hint=f"check the tree at {spec.root} builds for this core ({len(failures)} file(s) failed)")
    lib = os.path.join(out_dir, "libtflm.a")
    with tempfile.TemporaryDirectory(dir=out_dir) as tmp:
        new = os.path.join(tmp, "libtflm.a")
        p = subprocess.run([spec.prefix + "ar", "rcsD", new, *objects], capture_output=True, text=True)
        if p.returncode != 0:
            raise ArenaError(f"{spec.prefix}ar cannot archive TFLM's objects: {p.stderr.strip()[:200]}",
                             field="tflm.path", hint="check the toolchain (binutils)")
        with open(new, "rb") as f:
            data = f.read()
        try:
            with open(lib, "rb") as f:
                same = f.read() == data
        except OSError:
            same = False
        if not same:
            os.replace(new, lib)
    return lib


def _shared_obj(shared_dir: str, path: str) -> str:
    return os.path.join(shared_dir, "obj", os.path.splitext(path)[0] + ".o")


def _copy_shared(command: list[str], obj: str, shared_dir: str, path: str) -> bool:
    """Take ``obj`` from the shared folder when it holds it for this command without the define
    and none of its files names the define; whether it did."""
    shared = _shared_obj(shared_dir, path)
    if _stale(shared, shared[:-2] + ".cmd", _neutral(command, obj, shared)) or _reads_kernel_define(shared):
        return False
    _copy(shared, obj, command)
    return True


def _keep_shared(command: list[str], obj: str, shared_dir: str, path: str) -> None:
    shared = _shared_obj(shared_dir, path)
    os.makedirs(os.path.dirname(shared), exist_ok=True)
    _copy(obj, shared, _neutral(command, obj, shared))


def _copy(src: str, dst: str, command: list[str]) -> None:
    """The object and depfile ``src`` to ``dst`` recorded as made by ``command``: the command file
    goes first and comes back last, so an interrupted copy is compiled again, never trusted."""
    stem, src_stem = dst[:-2], src[:-2]
    if os.path.exists(stem + ".cmd"):
        os.remove(stem + ".cmd")
    for suffix in (".o", ".d"):
        tmp = f"{stem}{suffix}.{os.getpid()}.tmp"
        shutil.copyfile(src_stem + suffix, tmp)
        os.replace(tmp, stem + suffix)
    with open(stem + ".cmd", "w", encoding="utf-8") as f:
        json.dump(command, f)


def ops_of(paths: Sequence[str]) -> tuple[str, ...]:
    """The union of the builtin ops of allocation documents (``tflm.json``: ``ops``), sorted."""
    ops: set[str] = set()
    for path in paths:
        with open(path, encoding="utf-8") as f:
            ops.update(json.load(f).get("ops", []))
    return tuple(sorted(ops))
