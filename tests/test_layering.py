"""arena_tool's imports point one way: core < model < plan < target < emit < builder < run < report < cli
(and build_steps, the SCons tool's actions, beside cli).

Read from the source with ast (nothing is imported), every import counts: top level, under
TYPE_CHECKING and inside functions. A module may import its own stage (without a cycle) and
the stages below it, never one above; the package root (``arena_tool/__init__.py``: the
version, runtime_dir) and each stage package's ``__init__`` import nothing of the package.
A function-local import of the package's own modules is allowed only where LAZY says why:
there it keeps a heavy module out of a path that must start fast, and it still points down
(the order and cycle checks see it like any other import).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "arena_tool"
STAGES = ("core", "model", "plan", "target", "emit", "builder", "run", "report")
# above every stage: the command line, and the SCons tool's steps (each runs stages up to the report's views)
TOP = ("arena_tool.cli", "arena_tool.__main__", "arena_tool.build_steps")

# importer -> the modules it may import inside a function, and why (None: every one).
LAZY: dict[str, tuple[frozenset[str] | None, str]] = {
    "arena_tool.cli": (None, "each command imports its stages when it runs: `arena-tool --help` and a "
                             "CSV plan import no onnx, matplotlib or TFLM"),
    "arena_tool.build_steps": (None, "every SCons run, a no-op one too, imports it for Build; "
                                     "a step imports its stages when it runs, and a no-op build runs none"),
    "arena_tool.builder.noop_cache": (None, "a cache hit imports nothing but json, os and hashlib "
                                                "(a no-op build starts here)"),
    "arena_tool.builder.build_graph": (frozenset({"arena_tool.target.manifest_data", "arena_tool.target.boards"}),
                                       "a no-op build wires the graph from the cached manifest document, "
                                       "without loading YAML, boards or the manifest's types"),
    "arena_tool.core.files": (frozenset({"arena_tool.core.schema"}), "a CSV plan writes its solution with "
                                                                      "write_atomic and checks no schema"),
    "arena_tool.plan.planners.optimal": (frozenset({"arena_tool.plan.planners.search"}),
                                         "the search runs only where the walks leave a part above its bound: "
                                         "a CSV plan at the bound imports none of it (issue 39)"),
    "arena_tool.plan.planners": (None, "the registry imports a planner when it first runs: a CSV plan with "
                                       "optimal imports neither exact_cover nor the one-pass planners (issue 39: "
                                       "its whole process's CPU against minimalloc's)"),
    "arena_tool.report.htmlreport": (frozenset({"arena_tool.report.plot"}),
                                     "matplotlib loads only when a picture is drawn; without it the report "
                                     "has no pictures"),
}
# the longest chain of imports, counting the module itself (goal: 10). 11, each link a real use:
# __main__ -> cli -> build_steps (`arena-tool generate` runs the SCons tool's steps) -> run.firmware (plans)
# or builder.noop_cache (the manifest loader's cache) -> plan.planning or target.manifest (the loader checks
# planner names) -> plan.planners (the registry) -> exact_cover -> optimal (exact_cover's byte-level proof)
# or greedy_size (its start) -> search or params -> sections or core.progress -> core.problem
MAX_LAYERS = 11


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        if "runtime" in rel.parts:
            continue
        name = ".".join(rel.parts)
        out[name[: -len(".__init__")] if name.endswith(".__init__") else name] = path
    return out


MODULES = _modules()


def _targets(module: str, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The package's modules an import statement loads: `from arena_tool.plan import planfile`
    names arena_tool.plan.planfile (not the stage package it passes through)."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        if node.level:  # relative: resolve against the importer's package
            base = module.split(".")
            if not MODULES[module].name == "__init__.py":
                base = base[:-1]
            base = base[: len(base) - node.level + 1]
            prefix = ".".join(base + ([node.module] if node.module else []))
        else:
            prefix = node.module or ""
        names = [f"{prefix}.{a.name}" for a in node.names if f"{prefix}.{a.name}" in MODULES] or [prefix]
    return [n for n in names if n in MODULES and n != module]


def _imports() -> dict[str, list[tuple[str, int, bool]]]:
    """module -> (imported module, line, inside a function) for every import of the package."""
    out: dict[str, list[tuple[str, int, bool]]] = {}
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        local = {id(n) for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                 for n in ast.walk(f) if isinstance(n, (ast.Import, ast.ImportFrom))}
        out[module] = [(t, n.lineno, id(n) in local) for n in ast.walk(tree)
                       if isinstance(n, (ast.Import, ast.ImportFrom)) for t in _targets(module, n)]
    return out


IMPORTS = _imports()


def rank(module: str) -> int:
    """0 for the package root, 1.. for the stages in order, above them the cli."""
    if module == "arena_tool":
        return 0
    if module in TOP:
        return len(STAGES) + 1
    stage = module.split(".")[1]
    assert stage in STAGES, f"{module} is in no stage package ({', '.join(STAGES)}): move it into one"
    return STAGES.index(stage) + 1


def test_every_module_is_in_a_stage() -> None:
    for module in MODULES:
        rank(module)


def test_no_import_runs_against_the_stage_order() -> None:
    against = [f"{m} (line {line}) imports {t}" for m, edges in IMPORTS.items() for t, line, _ in edges
               if rank(t) > rank(m)]
    assert against == [], "imports against the order core < model < ... < cli:\n" + "\n".join(against)


def test_the_root_and_the_stage_packages_import_nothing() -> None:
    """Importing a stage package must not import its modules (or anything else of arena_tool)."""
    for module in ("arena_tool", *(f"arena_tool.{s}" for s in STAGES)):
        assert IMPORTS[module] == [], f"{module} imports {IMPORTS[module]}"


def _graph() -> dict[str, set[str]]:
    return {m: {t for t, _, _ in edges} for m, edges in IMPORTS.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle() -> None:
    assert _cycles(_graph()) == []


def test_a_cycle_is_found() -> None:
    """The cycle check itself: two modules importing each other are one cycle."""
    assert _cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]


def layers(graph: dict[str, set[str]]) -> int:
    """The longest chain of imports (a module that imports nothing of the package is layer 1)."""
    depth: dict[str, int] = {}

    def d(v: str) -> int:
        if v not in depth:
            depth[v] = 1 + max((d(w) for w in graph[v]), default=0)
        return depth[v]

    return max(d(v) for v in graph)


def test_the_import_graph_is_shallow() -> None:
    assert layers(_graph()) <= MAX_LAYERS


def test_function_local_imports_are_only_the_documented_lazy_ones() -> None:
    hidden = []
    for module, edges in IMPORTS.items():
        allowed, _why = LAZY.get(module, (frozenset(), ""))
        hidden += [f"{module} (line {line}) imports {t} inside a function" for t, line, local in edges
                   if local and allowed is not None and t not in allowed]
    assert hidden == [], ("import at the top of the module (or add it to LAZY with the reason):\n"
                          + "\n".join(hidden))


@pytest.mark.parametrize("module", sorted(LAZY))
def test_every_lazy_entry_is_still_needed(module: str) -> None:
    assert any(local for _, _, local in IMPORTS[module]), f"{module} imports nothing lazily: drop it from LAZY"


def test_no_module_is_imported_by_name_at_run_time() -> None:
    """importlib.import_module or __import__ would hide an edge from every check above."""
    hidden = [f"{m}: {name}" for m, path in MODULES.items()
              for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
              for name in [getattr(node, "attr", None) or getattr(node, "id", None)]
              if name in ("import_module", "__import__")]
    assert hidden == []
