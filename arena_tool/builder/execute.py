"""The build graph run in-process, without SCons: what ``arena-tool run``, ``generate``, the
benches and the tests build with.

``Executor(graph, root).build(targets)`` makes ``targets`` and what they are made from, in
dependency order (a node's sources, ``depends`` and ``requires`` first). It runs the graph's
``object``, ``elf`` and ``archive`` (a static library: ``ar rcsD``) nodes itself, an object and
an ELF with the command line SCons's Builders run for the same node (``compile_command``,
``link_command``: SCons's CCCOM/CXXCOM/LINKCOM with the node's CompileEnv, paths relative to the
project as SCons passes them, from the project folder), so the objects and the ELF are SCons's
to the byte; any other kind runs the function ``steps`` maps it to, or, without one, is a file
the caller made. At most ``JOBS`` compiles run at a time.

Content signatures: a node is made again when its signature changed (the command without
``$(``...``$)``, the compiler's real path, size and time, the bytes of its sources and
``depends``, and for an object every header in and below its include folders and its own
folder), recorded in ``<root>/.arena_signatures.json`` (``remember``). An object compiled from a
file outside the build folder (arena's runtime, the application's sources, TFLM's tree) is also
kept in a content-addressed cache, ``cache_dir()/objects/<signature>.o``, shared by every build
of the machine: a test session or a bench builds hundreds of firmwares over the same runtime and
compiles it once, and a TFLM library is compiled by its first user only. ``compiles`` counts the
compiler and linker runs.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TextIO

from arena_tool.core.cache import CACHE_ENV, machine_cache
from arena_tool.builder.build_graph import CXX_SUFFIXES, BuildGraph, CompileEnv, Node, Value, project_file

JOBS = 2  # compiles at a time: the machines arena is measured on have two cores
HEADERS = (".h", ".hpp", ".hh", ".inc")  # what a compile's signature reads of its include folders
Step = Callable[[list[str], list[str]], None]  # (targets, sources: paths and Value texts)


def cache_dir() -> str:
    return machine_cache()


def _words(value: object) -> list[str]:
    """A flag variable as SCons reads it: a string split into words, a list as it is."""
    if not value:
        return []
    if isinstance(value, str):
        return value.split()
    assert isinstance(value, Iterable), value
    return [str(v) for v in value]


def substitute(args: Iterable[object], target: str) -> tuple[list[str], list[str]]:
    """SCons's substitution of arena's flags: (the command's words, its signature's words).
    ``$(``...``$)`` is in the command, not the signature; ``$$`` is ``$``; ``${TARGET.dir}``
    and ``${TARGET.dir.name}`` are the target's folder and that folder's name."""
    folder = os.path.dirname(target) or "."
    words: list[str] = []
    signed: list[str] = []
    hidden = False
    for a in map(str, args):
        if a in ("$(", "$)"):
            hidden = a == "$("
            continue
        w = (a.replace("${TARGET.dir.name}", os.path.basename(folder)).replace("${TARGET.dir}", folder)
             .replace("$$", "\0").replace("\0", "$"))
        words.append(w)
        if not hidden:
            signed.append(w)
    return words, signed


def _defines(value: object) -> list[str]:
    if isinstance(value, Mapping):
        return [f"-D{k}" if v is None else f"-D{k}={v}" for k, v in value.items()]
    return [f"-D{d}" for d in _words(value)]


def compile_command(env: CompileEnv, source: str, target: str, root: str) -> tuple[list[str], list[str]]:
    """SCons's ``$CC -o $TARGET -c $CFLAGS $CCFLAGS $_CCCOMCOM $SOURCES`` (C++: ``$CXX`` and
    ``$CXXFLAGS``, empty) for one object of ``env``: (command, signature words)."""
    cxx = source.endswith(CXX_SUFFIXES)
    rel = project_file(target, root)
    flags, signed = substitute([*([] if cxx else _words(env.cflags)), *env.ccflags], rel)
    tail = [*_defines(env.cppdefines), *(f"-I{project_file(str(d), root)}" for d in env.cpppath),
            project_file(source, root)]
    tool = env.prefix + ("g++" if cxx else "gcc")
    return [tool, "-o", rel, "-c", *flags, *tail], [tool, "-c", *signed, *tail]


def link_command(env: CompileEnv, node: Node, root: str) -> tuple[list[str], list[str]]:
    """SCons's ``$LINK -o $TARGET $LINKFLAGS $SOURCES $_LIBDIRFLAGS $_LIBFLAGS`` for an ELF node
    (the cross g++ when ``node.cxx``): (command, signature words)."""
    rel = project_file(node.targets[0], root)
    flags, signed = substitute(env.linkflags if node.linkflags is None else node.linkflags, rel)
    tail = [*(project_file(str(s), root) for s in node.sources),
            *(f"-L{project_file(str(d), root)}" for d in _words(env.libpath)),
            *(f"-l{lib}" for lib in _words(env.libs))]
    tool = env.prefix + ("g++" if node.cxx else "gcc")
    return [tool, "-o", rel, *flags, *tail], [tool, *signed, *tail]


class Executor:
    """Runs one graph's nodes from the project folder ``root`` (graph paths are relative to it).

    steps: kind -> the function that makes a node of that kind (targets, sources); a kind with
    none is made by the caller. ready: whether to make a node (``Build.ready``: only for boards
    whose gate passed); one that is not ready is skipped, with what only it needs. remember:
    keep the signatures (else every node asked for is made), in ``db`` (default
    ``<root>/.arena_signatures.json``). progress: where a batch of more than one compile says
    ``Compiling N/TOTAL target``."""

    def __init__(self, graph: BuildGraph, root: str = ".", *, steps: Mapping[str, Step] | None = None,
                 ready: Callable[[Node], bool] | None = None, remember: bool = True, jobs: int = JOBS,
                 cache: str | None = None, progress: TextIO | None = None, db: str | None = None) -> None:
        self.graph = graph
        self.root = os.path.abspath(root)
        self.steps = dict(steps or {})
        self.ready = ready
        self.jobs = max(1, min(jobs, JOBS))
        self.cache = cache if cache is not None else os.path.join(cache_dir(), "objects")
        self.progress = progress
        self.compiles = 0  # compiler and linker runs of this executor
        self._by_target = {t: n for n in graph.nodes for t in n.targets}
        self._envs = {e.key: e for e in graph.envs}
        self._aliases = {a.name: a for a in graph.aliases}
        self._headers: dict[str, str] = {}
        self._tools: dict[str, str] = {}
        self._db_path = (db or os.path.join(self.root, ".arena_signatures.json")) if remember else ""
        self._db: dict[str, str] = {}
        if self._db_path and os.path.isfile(self._db_path):
            try:
                with open(self._db_path, encoding="utf-8") as f:
                    self._db = dict(json.load(f))
            except (OSError, ValueError):
                self._db = {}

    # ------------------------------------------------------------------ order

    def plan(self, targets: Sequence[str]) -> list[Node]:
        """The nodes to visit for ``targets`` (files or alias names), each after what it needs."""
        order: list[Node] = []
        seen: set[int] = set()

        def visit(name: str) -> None:
            alias = self._aliases.get(name)
            if alias is not None and name not in self._by_target:
                for t in (*alias.targets, *alias.depends):
                    visit(t)
                return
            node = self._by_target.get(name)
            if node is None or id(node) in seen:
                return
            seen.add(id(node))
            for s in (*node.requires, *node.sources, *node.depends):
                if not isinstance(s, Value):
                    visit(s)
            order.append(node)

        for t in targets:
            visit(t)
        return order

    def build(self, targets: Sequence[str]) -> None:
        """Make ``targets``; CalledProcessError when a compile or link fails (the first), what a
        step raises otherwise."""
        pending: list[Node] = []
        try:
            for node in self.plan(targets):
                if node.kind == "object" and node.kind not in self.steps:
                    pending.append(node)
                    continue
                self._compile(pending)
                pending = []
                self._make(node)
            self._compile(pending)
        finally:
            self._save()

    # ------------------------------------------------------------------ signatures

    def _read(self, source: object) -> bytes:
        if isinstance(source, Value):
            return b"value\0" + source.text.encode()
        path = os.path.join(self.root, str(source))
        try:
            with open(path, "rb") as f:
                return hashlib.sha256(f.read()).digest()
        except OSError:
            return b"missing"

    def _headers_of(self, folder: str) -> str:
        """The digest of every header in ``folder`` and below: what a compile may include from it."""
        full = os.path.normpath(os.path.join(self.root, folder))
        digest = self._headers.get(full)
        if digest is None:
            h = hashlib.sha256()
            for top, dirs, names in os.walk(full):
                dirs.sort()
                for n in sorted(names):
                    if n.endswith(HEADERS):
                        path = os.path.join(top, n)
                        with open(path, "rb") as f:
                            h.update(os.path.relpath(path, full).encode() + b"\0" + hashlib.sha256(f.read()).digest())
            digest = self._headers[full] = h.hexdigest()
        return digest

    def _tool(self, name: str) -> str:
        """The program ``name`` runs as: its real path, size and time (an upgraded compiler is
        another program, so the cache does not hand out what the old one compiled)."""
        found = self._tools.get(name)
        if found is None:
            path = shutil.which(name)
            if path is None:
                found = name
            else:
                real = os.path.realpath(path)
                st = os.stat(real)
                found = f"{real}:{st.st_size}:{st.st_mtime_ns}"
            self._tools[name] = found
        return found

    def _signature(self, node: Node, words: Sequence[str], headers: Sequence[str] = ()) -> str:
        tool = [self._tool(words[0])] if words else []
        h = hashlib.sha256(json.dumps([node.kind, *tool, list(words)]).encode())
        for s in (*node.sources, *node.depends):
            h.update(self._read(s))
        for folder in headers:
            h.update(self._headers_of(folder).encode())
        return h.hexdigest()

    def _current(self, node: Node, signature: str) -> bool:
        return all(self._db.get(t) == signature and os.path.exists(os.path.join(self.root, t)) for t in node.targets)

    def _save(self) -> None:
        if not self._db_path:
            return
        os.makedirs(os.path.dirname(self._db_path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(self._db_path), prefix=".arena_signatures.")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(self._db, f, sort_keys=True, indent=0)
        os.replace(tmp, self._db_path)

    # ------------------------------------------------------------------ actions

    def _make(self, node: Node) -> None:
        if self.ready is not None and not self.ready(node):
            return
        if node.kind == "elf" and "elf" not in self.steps:
            command, signed = link_command(self._envs[node.env], node, self.root)
            signature = self._signature(node, signed)
            if not self._current(node, signature):
                self.compiles += 1
                self._run(command)
                self._db[node.targets[0]] = signature
            return
        if node.kind == "archive" and "archive" not in self.steps:
            env = self._envs[node.env]
            signature = self._signature(node, [env.prefix + "ar", "rcsD"])
            if not self._current(node, signature):
                self._archive(env.prefix + "ar", node)
                self._db[node.targets[0]] = signature
            return
        step = self.steps.get(node.kind)
        if step is None:
            return  # the caller's file
        signature = self._signature(node, []) if self._db_path else ""
        if signature and self._current(node, signature):
            return
        step(list(node.targets), [s.text if isinstance(s, Value) else s for s in node.sources])
        if signature:
            self._db.update(dict.fromkeys(node.targets, signature))

    def _archive(self, ar: str, node: Node) -> None:
        """``ar rcsD``: a static library of the node's objects in their order, deterministic (no
        times, owners or modes), written beside its path and moved there."""
        target = os.path.join(self.root, node.targets[0])
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with tempfile.TemporaryDirectory(dir=os.path.dirname(target)) as tmp:
            new = os.path.join(tmp, os.path.basename(target))
            subprocess.run([ar, "rcsD", new, *(os.path.join(self.root, str(s)) for s in node.sources)], check=True,
                           capture_output=True, text=True)
            os.replace(new, target)

    def _run(self, command: list[str]) -> None:
        subprocess.run(command, check=True, capture_output=True, text=True, cwd=self.root)

    def _object(self, node: Node) -> tuple[list[str], str, str] | None:
        """(command, signature, cached copy or '') of an object to compile, None when it is current
        (or was copied from the cache)."""
        if self.ready is not None and not self.ready(node):
            return None
        env = self._envs[node.env]
        source, target = str(node.sources[0]), node.targets[0]
        command, signed = compile_command(env, source, target, self.root)
        folders = [os.path.dirname(source) or ".", *(str(d) for d in env.cpppath)]
        signature = self._signature(node, signed, folders)
        if self._current(node, signature):
            return None
        full = os.path.join(self.root, target)
        cached = ""
        if not self._generated(source):
            cached = os.path.join(self.cache, signature[:2], signature + ".o")
            if os.path.isfile(cached):
                _copy(cached, full)
                self._db[target] = signature
                return None
        os.makedirs(os.path.dirname(full) or ".", exist_ok=True)
        return command, signature, cached

    def _generated(self, source: str) -> bool:
        """Whether ``source`` is made by this build (a node's target) or lies in its build folder."""
        if source in self._by_target:
            return True
        rel = os.path.relpath(os.path.join(self.root, source), self.root)
        return not rel.startswith(os.pardir)

    def _compile(self, nodes: Sequence[Node]) -> None:
        todo = [(n, job) for n in nodes if (job := self._object(n)) is not None]
        if not todo:
            return
        total = len(todo)
        done = 0
        self.compiles += total

        def one(item: tuple[Node, tuple[list[str], str, str]]) -> subprocess.CalledProcessError | None:
            node, (command, signature, cached) = item
            try:
                self._run(command)
            except subprocess.CalledProcessError as e:
                return e
            if cached:
                _copy(os.path.join(self.root, node.targets[0]), cached)
            return None

        failed: list[subprocess.CalledProcessError] = []
        with concurrent.futures.ThreadPoolExecutor(self.jobs) as pool:
            for (node, (_, signature, _)), err in zip(todo, pool.map(one, todo)):
                done += 1
                if err is not None:
                    failed.append(err)
                    continue
                self._db[node.targets[0]] = signature
                if self.progress is not None and total > 1:
                    self.progress.write(f"Compiling {done}/{total} {node.targets[0]}\n")
                    self.progress.flush()
        if failed:
            raise failed[0]


def _copy(src: str, dst: str) -> None:
    """``src`` to ``dst`` through a temporary file beside it: a reader sees the old bytes or the new."""
    os.makedirs(os.path.dirname(dst) or ".", exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(dst) or ".", prefix=".copy.")
    os.close(fd)
    try:
        shutil.copyfile(src, tmp)
        os.replace(tmp, dst)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def first_error(err: subprocess.CalledProcessError) -> str:
    """The compiler's first error line (or the start of what it said)."""
    text = err.stderr or ""
    return next((ln for ln in text.splitlines() if "error" in ln or "undefined" in ln), text.strip()[:300])

