"""The manifest: which models run on which boards, in which region, under which budget.

``load(path, board_dirs) -> Manifest`` reads the YAML (``yamlio`` keeps every
key's position), checks it against ``schemas/manifest.schema.json``, then checks
what a schema cannot (model files exist, boards and regions exist, names are
unique, alignment is a power of two, a budget fits its region ...). Every error
is an ArenaError naming the file, line, column and field, with a fix.

Invariants of a loaded Manifest:
- every BoardTarget names an existing board, and its ``region`` is ``"auto"``
  or one of that board's regions; a byte budget fits a named region;
- every ModelSpec's file exists; model names are C identifiers, unique even ignoring case;
- a target with ``linker: fragment`` names a ``linker_script`` that exists and INCLUDEs
  ``arena_fragment.ld`` inside SECTIONS (``linkscript.check_script``); ``linker_regions``
  keys are the board's region (or flash) names;
- per-board model overrides are already applied: ``target.models`` is final: the manifest's models, or
  the board's own ``models: [...]`` list of them, each one the board's runtime runs (runtime tflm: the
  .tflite ones; arena and none: ONNX and .tflite, the latter with kernels arena, lowered for arena's
  runtime); a model it cannot run is an error, never dropped;
- paths are as given, joined to the manifest's folder (relative stays relative),
  so plans and messages do not depend on where the checkout lives.

The module imports only the standard library at import time (``yamlio`` pulls
in jsonschema and PyYAML). A no-op SCons build does not import it at all: it
reads ``noop_cache``'s JSON (``manifest_data.to_doc``/``from_doc`` convert, and hold
the loaded manifest's types).
"""

from __future__ import annotations

import dataclasses
import os
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from arena_tool.target.boards import Board, reserve_bytes
from arena_tool.core.errors import ArenaError, did_you_mean
from arena_tool.core.problem import ARENA_KERNELS, ModelOptions, fmt_bytes, option_fields
from arena_tool.model import tflm_scratch
from arena_tool.plan import planners
from arena_tool.target import boards, linkscript, tflm_sources, yamlio
from arena_tool.target.yamlio import field_name
from arena_tool.target.manifest_data import BoardOptions, BoardTarget as BoardTarget, Budget as Budget, Manifest as Manifest, \
    ModelSpec as ModelSpec, from_doc as from_doc, target_doc as target_doc, target_from_doc as target_from_doc, \
    to_doc as to_doc  # re-exported: a loaded manifest's data (manifest_data)

if TYPE_CHECKING:
    from arena_tool.target.boards import Board
    from arena_tool.target.yamlio import Doc

DEFAULT_PLANNER = planners.DEFAULT_PLANNER
DEFAULT_BUDGET = "100%"
DEFAULT_STACK = 4096  # bytes
DEFAULT_HEAP = 0  # bytes
MAX_NAME = 64  # characters of a model name: it prefixes generated file names and C symbols (a 300-character one failed on the file system)
SHARING = ("sequential", "concurrent")
RUNTIMES = ("arena", "none", "tflm")  # arena: compile arena's C runtime and check coverage; none: bring your own;
# tflm: .tflite models run by TFLite Micro, which the firmware brings (arena writes the planned model and its arena)
TFLM_ALIGNMENT = 16  # tflite::MicroArenaBufferAlignment()

# A hint for schema failures that come without one, by the failing field's last key; the model
# options' own hints are their Option's (problem.ModelOptions), added by _field_hint.
_FIELD_HINTS = {
    "k": "k is the exact_cover size unit in bytes; use 1 to plan exact sizes",
    "time_limit": "time_limit is in seconds, e.g. 10",
    "warn_above": "warn_above is a percentage of the budget, e.g. 90",
    "budget": "write a byte count like 65536, '64K', '64KiB', or a percentage like '80%'",
    "stack": "write a byte count like 4096 or '4K'",
    "heap": "write a byte count like 0 or '8K'",
    "name": "use letters, digits and '_', not starting with a digit",
    "path": "give the ONNX file's path relative to the manifest",
    "models": "list the models as mappings with at least 'name:' and 'path:'",
    "boards": "list board names, or mappings with 'name:' and overrides",
    "region": "write a region name of the board, auto, or a list of region names fastest first, e.g. [DTCM, SRAM1]",
    "split": "write true (a split arena over the board's regions by speed) or false",
    "runtime": "write arena (compile arena's C runtime, the default), none (bring your own kernels) "
               "or tflm (.tflite models run by TFLite Micro, which your firmware brings)",
    "linker": "write full (arena writes the whole linker script, the default) or fragment (your own linker "
              "script INCLUDEs arena_fragment.ld)",
    "linker_script": "give your linker script's path relative to the manifest",
    "linker_regions": "map board region names to your script's MEMORY names, e.g. {AXI_SRAM: RAM_D1}",
}


def _field_hint(field: str) -> str | None:
    """The hint of the innermost part of a dotted field that has one."""
    import re

    hints = {**_FIELD_HINTS, **{f.name: o.hint for f, o in option_fields(ModelOptions) if o.hint}}
    for part in reversed([p for p in re.split(r"[.\[\]]", field) if p and not p.isdigit()]):
        if part in hints:
            return hints[part]
    return None


def is_tflite_path(path: str) -> bool:
    """A TFLite flatbuffer: a .tflite file name, or TFL3 at bytes 4..8 (tflite_model.is_tflite, stdlib only)."""
    if str(path).lower().endswith(".tflite"):
        return True
    try:
        with open(path, "rb") as f:
            return f.read(8)[4:8] == b"TFL3"
    except OSError:
        return False


def _objective(raw: Any) -> str | None:
    """A ``fit:`` as its objective: ``auto`` -> speed, ``{objective: X}`` -> X, absent -> None."""
    if raw is None:
        return None
    return "speed" if raw == "auto" else str(raw["objective"])


def board_models(raw: Any) -> tuple[list[str] | None, dict[str, tuple[dict[str, Any], tuple[Any, ...]]]]:
    """A board entry's ``models:`` as (the models the board runs, or None for all of the manifest's;
    per model its option overrides and where they are under ``models:``). A mapping overrides options
    and keeps every model; a list (names, or one-key mappings ``{name: {options}}``) is the board's
    own selection: a model it leaves out is skipped on that board, on purpose."""
    if raw is None:
        return None, {}
    if isinstance(raw, dict):
        return None, {name: (opts or {}, (name,)) for name, opts in raw.items()}
    chosen: list[str] = []
    overrides: dict[str, tuple[dict[str, Any], tuple[Any, ...]]] = {}
    for j, item in enumerate(raw):
        if isinstance(item, str):
            chosen.append(item)
            overrides[item] = ({}, (j,))
        else:
            (name, opts), = item.items()
            chosen.append(name)
            overrides[name] = (opts or {}, (j, name))
    return chosen, overrides


def _did_you_mean(word: str, options: list[str]) -> str:
    return f"{did_you_mean(word, options)}expected one of: {', '.join(options)}"


# ---------------------------------------------------------------- loading


def load(path: str, board_dirs: Iterable[str] = ()) -> Manifest:
    """Read and check a manifest.

    Boards are searched in the manifest's own ``board_dirs``, then ``board_dirs``,
    then the shipped ``boards/`` folder.
    """
    doc = yamlio.load(path)
    if doc.data is None:
        raise ArenaError("the manifest is empty", file=path, line=1, col=1,
                         hint="declare at least 'models:' and 'boards:'")
    try:
        yamlio.validate(doc, "manifest")
    except ArenaError as err:
        if err.hint is None and err.field:
            err.hint = _field_hint(err.field)
        raise
    return _Loader(doc, path, tuple(board_dirs)).manifest()


class _Loader:
    """Semantic checks after the schema, with positions from the Doc."""

    def __init__(self, doc: Doc, path: str, extra_dirs: tuple[str, ...]) -> None:
        self.doc = doc
        self.data: dict[str, Any] = doc.data
        self.path = path
        self.base = os.path.dirname(path)
        self.extra_dirs = extra_dirs
        self.inputs: list[str] = [path]

    def err(self, msg: str, where: tuple[Any, ...], hint: str | None = None, at_value: bool = True) -> ArenaError:
        return self.doc.error(msg, where, hint=hint, at_value=at_value)

    def size(self, value: Any, where: tuple[Any, ...]) -> int:
        try:
            return yamlio.parse_size(value)
        except ArenaError as e:
            raise self.doc.locate(e, where, at_value=True) from None

    # -- models

    def options(self, raw: dict[str, Any], base: dict[str, Any], where: tuple[Any, ...]) -> dict[str, Any]:
        """Merge ``raw`` model options over ``base`` after checking the ones schemas cannot."""
        out = dict(base)
        powers_of_two = {f.name for f, o in option_fields(ModelOptions) if o.power_of_two}
        for key, value in raw.items():
            if key in ("name", "path"):
                continue
            if key in powers_of_two and value is not None and value & (value - 1):
                raise self.err(f"{key} {value} is not a power of two", where + (key,),
                               hint="use 1, 2, 4, 8, 16, 32 ...")
            if key == "planner":
                self.check_planner(value, where + (key,))
            out[key] = value
        return out

    def check_planner(self, name: str, where: tuple[Any, ...]) -> None:
        names = sorted(planners.PLANNERS)
        if name not in names:
            raise self.err(f"unknown planner '{name}'", where, hint=_did_you_mean(name, names))

    def spec(self, name: str, path: str, o: dict[str, Any]) -> ModelSpec:
        return ModelSpec(
            name=name, path=path, planner=o.get("planner", DEFAULT_PLANNER), k=int(o.get("k", 1)),
            time_limit=float(o.get("time_limit", 10.0)),
            options=ModelOptions.from_doc({f.name: o[f.name] for f, _ in option_fields(ModelOptions) if f.name in o}),
            fixed=tuple(f.name for f, _ in option_fields(ModelOptions) if f.name in o), fit=_objective(o.get("fit")),
        )

    def models(self) -> tuple[list[ModelSpec], dict[str, dict[str, Any]]]:
        defaults = self.options(self.data.get("defaults") or {}, {}, ("defaults",))
        specs: list[ModelSpec] = []
        raws: dict[str, dict[str, Any]] = {}
        seen: dict[str, int] = {}
        for i, m in enumerate(self.data["models"]):
            where = ("models", i)
            name = m["name"]
            if len(name) > MAX_NAME:
                raise self.err(f"model name '{name[:24]}...' has {len(name)} characters, more than {MAX_NAME}",
                               where + ("name",), hint="shorten it: it names the generated files and C symbols")
            if name in seen:
                raise self.err(f"duplicate model name '{name}' (also models[{seen[name]}])", where + ("name",),
                               hint="give every model its own name")
            self.check_case(name, seen, where + ("name",))
            seen[name] = i
            path = os.path.normpath(os.path.join(self.base, m["path"]))
            if not os.path.isfile(path):
                raise self.err(f"model file not found: {path}", where + ("path",),
                               hint=f"the path is relative to the manifest's folder ({self.base or '.'})")
            self.inputs.append(path)
            merged = self.options(m, defaults, where)
            raws[name] = merged
            specs.append(self.spec(name, path, merged))
        return specs, raws

    def check_case(self, name: str, seen: dict[str, int], where: tuple[Any, ...]) -> None:
        """Names equal but for case collide: model_kws.c vs model_KWS.c on a case-insensitive
        file system, and the KWS_... macros of the generated C in every build."""
        for other, j in seen.items():
            if other.lower() == name.lower():
                raise self.err(f"model names '{other}' (models[{j}]) and '{name}' differ only in case; their "
                               f"generated C (model_{other}.c, model_{name}.c, {name.upper()}_* macros) "
                               "would collide", where, hint="give the models names that differ in more than case")

    # -- boards

    def board_dirs(self) -> tuple[str, ...]:
        dirs: list[str] = []
        for i, d in enumerate(self.data.get("board_dirs") or []):
            full = os.path.normpath(os.path.join(self.base, d))
            if not os.path.isdir(full):
                raise self.err(f"board folder not found: {full}", ("board_dirs", i),
                               hint=f"the path is relative to the manifest's folder ({self.base or '.'})")
            dirs.append(full)
        return tuple(dirs) + self.extra_dirs

    def budget(self, value: Any, where: tuple[Any, ...], split: Sequence[str] | None = None,
               board: str = "") -> Budget:
        """A budget: bytes or a percentage; for a split arena (``split``: its regions) one per
        region, every region of the split named once."""
        if isinstance(value, dict):
            if not split:
                raise self.err("a budget per region needs a split arena", where, at_value=False,
                               hint="write region: [A, B] (or split: true), or one budget for the arena's region")
            for name in value:
                if name not in split:
                    raise self.err(f"region '{name}' is not in board {board}'s split arena ({', '.join(split)})",
                                   where + (name,), at_value=False, hint=_did_you_mean(name, list(split)))
            missing = [n for n in split if n not in value]
            if missing:
                raise self.err(f"no budget for region {', '.join(missing)} of the split arena", where, at_value=False,
                               hint="give every region of the split its budget: " +
                                    ", ".join(f"{n}: 90%" for n in split))
            regions = tuple((n, self.budget(value[n], where + (n,))) for n in split)
            return Budget(text=", ".join(f"{n}: {b.text}" for n, b in regions), regions=regions)
        if isinstance(value, str) and value.strip().endswith("%"):
            pct = float(value.strip()[:-1])
            if not 0 < pct <= 100:
                raise self.err(f"budget {value.strip()} is not a percentage in (0, 100]", where,
                               hint="write e.g. '80%' of the region, or a byte count like '64K'")
            return Budget(text=value.strip(), percent=pct)
        size = self.size(value, where)
        if size <= 0:
            raise self.err("budget must be more than 0 bytes", where, hint="write e.g. '64K' or '80%'")
        return Budget(text=str(value).strip(), size=size)

    def manifest(self) -> Manifest:
        specs, raws = self.models()
        dirs = tuple(boards.board_dirs(list(self.board_dirs())))
        known = sorted(boards.list_boards(list(dirs)))
        top: dict[str, Any] = {k: self.data[k] for k in (
            "sharing", "region", "split", "budget", "reserve", "warn_above", "runtime", "linker", "linker_script",
            "linker_regions", "tflm", "fit", *BoardOptions.names()) if k in self.data}
        targets: list[BoardTarget] = []
        seen: dict[str, int] = {}
        for i, item in enumerate(self.data["boards"]):
            entry = {"name": item} if isinstance(item, str) else item
            name = entry["name"]
            where = ("boards", i) if isinstance(item, str) else ("boards", i, "name")
            if name in seen:
                raise self.err(f"board '{name}' is listed twice (also boards[{seen[name]}])", where,
                               hint="merge the two entries into one")
            seen[name] = i
            if name not in known:
                raise self.err(f"unknown board '{name}'", where,
                               hint=_did_you_mean(name, known) + "; or add a board folder in 'board_dirs:'")
            try:
                board = boards.load_board(name, list(dirs))
            except ArenaError as e:
                raise self.doc.locate(e, where) from None
            self.inputs.append(board.file)
            targets.append(self.target(board, entry, i, top, specs, raws))
        return Manifest(file=self.path, board_dirs=dirs, models=tuple(specs), targets=tuple(targets),
                        inputs=tuple(self.inputs), samples=self.samples(specs), tolerances=self.tolerances(specs))

    def samples(self, specs: list[ModelSpec]) -> tuple[tuple[str, str], ...]:
        """``inputs:``: each key a model of the manifest, each file there (read when run)."""
        names = [s.name for s in specs]
        out = []
        for name, path in (self.data.get("inputs") or {}).items():
            if name not in names:
                raise self.err(f"inputs: '{name}' is not a model of the manifest", ("inputs", name),
                               hint=_did_you_mean(name, names))
            full = os.path.normpath(os.path.join(self.base, path))
            if not os.path.isfile(full):
                raise self.err(f"inputs: {name}: file not found: {full}", ("inputs", name),
                               hint=f"the path is relative to the manifest's folder ({self.base or '.'})")
            out.append((name, full))
        return tuple(out)

    def tolerances(self, specs: list[ModelSpec]) -> tuple[tuple[str, tuple[tuple[str, float], ...]], ...]:
        """``tolerances:`` (arena-tool validate's bounds): each key a model of the manifest."""
        names = [s.name for s in specs]
        out = []
        for name, bounds in (self.data.get("tolerances") or {}).items():
            if name not in names:
                raise self.err(f"tolerances: '{name}' is not a model of the manifest", ("tolerances", name),
                               hint=_did_you_mean(name, names))
            out.append((name, tuple(sorted((str(k), float(v)) for k, v in bounds.items()))))
        return tuple(out)

    def target(self, board: Board, entry: dict[str, Any], i: int, top: dict[str, Any],
               specs: list[ModelSpec], raws: dict[str, dict[str, Any]]) -> BoardTarget:
        def where_of(key: str) -> tuple[Any, ...]:
            return ("boards", i, key) if key in entry else (key,)

        def pick(key: str, default: Any) -> Any:
            return entry.get(key, top.get(key, default))

        regions = board.ram
        region_names = [r.name for r in regions]
        region, split = self.split_regions(board, pick, where_of)
        if region != "auto" and region not in region_names:
            raise self.err(f"board {board.name} has no region '{region}'", where_of("region"),
                           hint=_did_you_mean(region, region_names) + ", or auto")
        budget = self.budget(pick("budget", DEFAULT_BUDGET), where_of("budget"), split, board.name)
        if region != "auto" and budget.size is not None and not split:
            length = next(r.length for r in regions if r.name == region)
            if budget.size > length:
                bigger = [r.name for r in regions if r.length >= budget.size]
                fix = f"choose region {' or '.join(bigger)}" if bigger else "lower the budget"
                raise self.err(f"budget {fmt_bytes(budget.size)} is larger than region {region} of board "
                               f"{board.name} ({fmt_bytes(length)})", where_of("budget"),
                               hint=f"{fix}, or write a percentage like '90%'")
        reserve = pick("reserve", {}) or {}
        rwhere = where_of("reserve")
        stack = self.size(reserve.get("stack", DEFAULT_STACK), rwhere + ("stack",))
        heap = self.size(reserve.get("heap", DEFAULT_HEAP), rwhere + ("heap",))
        data_len = next(r.length for r in regions if r.name == board.data_region)
        if reserve_bytes(stack, heap) > data_len:
            raise self.err(f"reserve of {fmt_bytes(reserve_bytes(stack, heap))} (stack + heap) does not fit region "
                           f"{board.data_region} of board {board.name} ({fmt_bytes(data_len)})", rwhere,
                           hint="lower 'stack:' or 'heap:'")
        chosen, overrides = board_models(entry.get("models"))
        names = [s.name for s in specs]
        for j, name in enumerate(chosen or []):
            if name in (chosen or [])[:j]:
                raise self.err(f"model '{name}' is listed twice for board {board.name}", ("boards", i, "models", j),
                               hint="list each model once")
        for name, (_, at) in overrides.items():
            if name not in names:
                raise self.err(f"no model named '{name}' in 'models:'", ("boards", i, "models") + at,
                               hint=_did_you_mean(name, names), at_value=isinstance(at[-1], int))
        models: list[ModelSpec] = []
        for s in specs:
            if chosen is not None and s.name not in chosen:
                continue  # the board's own model list skips it
            if s.name in overrides:
                raw, at = overrides[s.name]
                merged = self.options(raw, raws[s.name], ("boards", i, "models") + at)
                s = self.spec(s.name, s.path, merged)
            models.append(s)
        runtime = pick("runtime", "arena")
        models = self.check_runtime(board.name, runtime, where_of("runtime") if "runtime" in entry or "runtime" in top
                                    else ("boards", i, "name"), models, listed=chosen is not None)
        warn = pick("warn_above", None)
        linker, script, memory_names = self.linker(board, pick, where_of, region)
        target = BoardTarget(
            name=board.name, board=board, region=region, budget=budget, reserve_stack=stack, reserve_heap=heap,
            warn_above=None if warn is None else float(warn), sharing=pick("sharing", "sequential"),
            models=tuple(models), runtime=runtime, linker=linker, linker_script=script,
            linker_regions=memory_names, split=split,
            options=BoardOptions(**{n: pick(n, None) for n in BoardOptions.names()}),
            tflm=self.tflm(board.name, runtime, pick("tflm", None), where_of("tflm"), board.cpu.core),
            fit=self.fit(board.name, runtime, pick("fit", None), where_of("fit")),
        )
        self.model_fits(target, where_of("fit") if target.fit else ("boards", i))
        if target.tflm is not None:
            target = dataclasses.replace(target, models=self.tflm_kernels(target, where_of("tflm")))
        else:  # a model's kernels: cmsis_nn is the variant this board's core runs
            target = dataclasses.replace(target, models=tuple(
                dataclasses.replace(m, options=dataclasses.replace(
                    m.options, kernels=tflm_scratch.kernels_for(m.options.kernels, board.cpu.core)))
                if m.options.kernels == "cmsis_nn" else m for m in target.models))
        return self.placed(target, where_of)

    def fit(self, board: str, runtime: str, raw: Any, where: tuple[Any, ...]) -> str | None:
        """``fit: auto`` -> speed, ``{objective: X}`` -> X; only a board whose firmware arena builds."""
        if raw is None:
            return None
        if runtime != "arena":
            raise self.err(f"fit on board {board} with runtime: {runtime}: the search builds and runs arena's runtime",
                           where, hint="drop fit:, or use runtime: arena")
        return _objective(raw)

    def model_fits(self, t: BoardTarget, where: tuple[Any, ...]) -> None:
        """A model's ``fit:`` needs arena's runtime, and one board searches for one objective: its
        models' and its own agree (where: the board's fit, when it has one)."""
        objective, by = (t.fit, "the board's fit:") if t.fit else (None, "")
        for m in t.models:
            if m.fit is None:
                continue
            at = self.option_where(t.name, m.name, "fit") or where
            if t.runtime != "arena":
                raise self.err(f"model {m.name}: fit on board {t.name} with runtime: {t.runtime}: the search builds "
                               "and runs arena's runtime", at, hint="drop the model's fit:, or use runtime: arena")
            if objective is None:
                objective, by = m.fit, f"model {m.name}'s fit:"
            elif m.fit != objective:
                raise self.err(f"model {m.name}: fit objective {m.fit} on board {t.name}, but {by} asks for "
                               f"{objective}; a board's models are searched together, for one objective", at,
                               hint=f"write the same objective (fit: {{objective: {objective}}}), or drop one fit:")

    def tflm_kernels(self, t: BoardTarget, where: tuple[Any, ...]) -> tuple[ModelSpec, ...]:
        """The models planned for the kernels the firmware links (tflm.kernels refined by the core:
        the scratch buffers CMSIS-NN asks for are in the plan); a model option that says other is an error."""
        assert t.tflm is not None
        want = tflm_scratch.kernels_for(t.tflm.kernels, t.board.cpu.core)
        out = []
        for m in t.models:
            if tflm_scratch.kernels_for(m.options.kernels, t.board.cpu.core) not in ("reference", want):
                raise self.err(f"model {m.name}: kernels: {m.options.kernels}, but board {t.name}'s firmware links "
                               f"{want} (tflm.kernels: {t.tflm.kernels} on a {t.board.cpu.core})",
                               self.option_where(t.name, m.name, "kernels") or where,
                               hint=f"drop the model's kernels: (tflm.kernels sets it) or write kernels: {want}")
            out.append(dataclasses.replace(m, options=dataclasses.replace(m.options, kernels=want)))
        return tuple(out)

    def tflm(self, board: str, runtime: str, raw: dict[str, Any] | None,
             where: tuple[Any, ...], core: str) -> tflm_sources.TflmConfig | None:
        """``tflm:`` checked: only with runtime tflm; a tree with its downloads, or a library and its
        folders. ``kernels`` takes the names a model's kernels: takes: a CMSIS-NN variant must be the
        one the board's ``core`` runs, and the library is built with CMSIS-NN (``cmsis_nn``)."""
        if raw is None:
            return None
        if runtime != "tflm":
            raise self.err(f"tflm: is read only with runtime: tflm (board {board} has runtime: {runtime})", where,
                           at_value=False, hint="add 'runtime: tflm', or remove tflm:")
        if bool(raw.get("path")) == bool(raw.get("library")):
            raise self.err("tflm: needs either path: (a tflite-micro tree to build) or library: (a prebuilt "
                           "libtflm.a with include:), not both", where, at_value=False,
                           hint="write tflm: {path: ../tflite-micro, kernels: reference}")
        kernels = raw.get("kernels", "reference")
        if kernels not in ("reference", "cmsis_nn"):
            runs = tflm_scratch.kernels_for("cmsis_nn", core)
            if kernels != runs:
                raise self.err(f"kernels: {kernels}, but board {board}'s {core} runs {runs}", where + ("kernels",),
                               at_value=True, hint=f"write kernels: cmsis_nn (the core's variant) or {runs}")
            kernels = "cmsis_nn"  # the library: CMSIS-NN, built for the core
        if raw.get("path"):
            path = os.path.normpath(os.path.join(self.base, raw["path"]))
            try:
                tflm_sources.check_tree(path, field="tflm.path")
                tflm_sources.check_kernels(kernels, path)
            except ArenaError as e:
                key = "kernels" if e.field == "tflm.kernels" else "path"
                raise self.err(e.msg, where + (key,), hint=f"tflm.{key}: {e.hint} (paths are relative to the "
                                                           f"manifest's folder, {self.base or '.'})") from None
            return tflm_sources.TflmConfig(path=path, kernels=kernels)
        lib = os.path.normpath(os.path.join(self.base, raw["library"]))
        if not os.path.isfile(lib):
            raise self.err(f"TFLM library not found: {lib}", where + ("library",),
                           hint=f"tflm.library: give the prebuilt libtflm.a relative to the manifest's folder "
                                f"({self.base or '.'}), or path: a tflite-micro tree to build")
        include = []
        for i, d in enumerate(raw.get("include") or []):
            full = os.path.normpath(os.path.join(self.base, d))
            if not os.path.isdir(full):
                raise self.err(f"TFLM include folder not found: {full}", where + ("include", i),
                               hint="tflm.include: the library's header folders, relative to the manifest")
            include.append(full)
        config = tflm_sources.TflmConfig(kernels=kernels, library=lib, include=tuple(include))
        try:
            config.resolver_root()
        except ArenaError as e:
            raise self.err(e.msg, where + ("include",), hint=e.hint, at_value=False) from None
        return config

    def split_regions(self, board: Any, pick: Any, where_of: Any) -> tuple[str, tuple[str, ...]]:
        """(region, split): ``region: [A, B]`` lists a split arena's regions fastest first,
        ``split: true`` takes the board's regions usable at reset by speed (unranked last, then
        file order); one region is no split."""
        names = [r.name for r in board.ram]
        region = pick("region", board.default_region)
        if isinstance(region, list):
            for k, name in enumerate(region):
                if name not in names:
                    raise self.err(f"board {board.name} has no region '{name}'", where_of("region") + (k,),
                                   hint=_did_you_mean(name, names))
            chosen = tuple(region)
        elif pick("split", False):
            if region not in ("auto", board.default_region):
                raise self.err(f"split: true takes every region of board {board.name} by speed, but region "
                               f"is {region}", where_of("split"),
                               hint="list the regions instead, fastest first: region: "
                                    f"[{', '.join(r.name for r in board.ram if not r.needs_init)}]")
            ranked = sorted((r.speed if r.speed is not None else 1 << 30, k, r.name)
                            for k, r in enumerate(board.ram) if not r.needs_init)
            chosen = tuple(name for _, _, name in ranked)
        else:
            return region, ()
        return chosen[0], (chosen if len(chosen) > 1 else ())

    def placed(self, t: BoardTarget, where_of: Any) -> BoardTarget:
        """The target with its split capacities on every model (``ModelSpec.regions``), after
        checking what a split arena and ``weights: <region>`` need."""
        for m in t.models:
            w = m.options.weights
            places = t.board.flash_names() + t.board.region_names()
            if w not in places:
                external = ", ".join(f.name for f in t.board.external_flash) or "none"
                raise self.err(f"model {m.name}: weights: {w} is not a region of board {t.name} (its flash: "
                               f"flash; its external flash: {external}; its RAM: {', '.join(t.board.region_names())})",
                               self.option_where(t.name, m.name, "weights") or where_of("region"),
                               hint=did_you_mean(w, places) + "write one of those, or add the QSPI/OSPI flash "
                                    f"to {os.path.basename(t.board.file) or 'the board file'} under external_flash:")
            if w != "flash" and t.runtime == "tflm":
                raise self.err(f"model {m.name}: weights: {w} on board {t.name} with runtime: tflm, whose model "
                               "array stays in flash", self.option_where(t.name, m.name, "weights") or
                               where_of("runtime"), hint="use weights: flash with runtime: tflm")
        if not t.split:
            return t
        if t.sharing != "sequential" or t.runtime == "tflm":
            what = "sharing: concurrent" if t.sharing != "sequential" else "runtime: tflm (one tensor_arena)"
            raise self.err(f"a split arena (region: [{', '.join(t.split)}]) on board {t.name} needs sharing: "
                           f"sequential and runtime arena or none, not {what}",
                           where_of("sharing" if t.sharing != "sequential" else "runtime"),
                           hint="use one region, or run the models one at a time")
        caps = tuple((name, t.region_limit(name)) for name in t.split)

        def copied(m: ModelSpec) -> tuple[tuple[str, str, ModelOptions], ...]:
            return tuple((o.options.weights, o.path, o.options) for o in t.models
                         if o is not m and o.options.weights in t.split)

        return dataclasses.replace(t, models=tuple(dataclasses.replace(m, regions=caps, copied=copied(m))
                                                   for m in t.models))

    def linker(self, board: Any, pick: Any, where_of: Any,
               region: str) -> tuple[str, str | None, tuple[tuple[str, str], ...]]:
        """(linker, linker_script, linker_regions) of one board, checked: a fragment needs a script
        that exists and INCLUDEs it; the mapped names are board regions (or its flash)."""
        mode, script, names = pick("linker", "full"), pick("linker_script", None), pick("linker_regions", None)
        if mode == "full":
            for key, value in (("linker_script", script), ("linker_regions", names)):
                if value is not None:
                    raise self.err(f"{key}: is read only with linker: fragment (board {board.name} has linker: full)",
                                   where_of(key), at_value=False,
                                   hint="add 'linker: fragment' to link with your own linker script, which "
                                        f"INCLUDEs {linkscript.FRAGMENT_NAME}; or remove it")
            return mode, None, ()
        if script is None:
            raise self.err(f"board {board.name} has linker: fragment but no linker_script:", where_of("linker"),
                           hint=f"add linker_script: path/to/your.ld (relative to the manifest); its SECTIONS "
                                f"INCLUDEs {linkscript.FRAGMENT_NAME}, which arena writes")
        pairs = self.linker_regions(board, names or {}, where_of("linker_regions"))
        path = os.path.normpath(os.path.join(self.base, script))
        if not os.path.isfile(path):
            raise self.err(f"linker script not found: {path}", where_of("linker_script"),
                           hint=f"the path is relative to the manifest's folder ({self.base or '.'})")
        needed = {} if region == "auto" else linkscript.needed_names([region], dict(pairs))
        origins = {r.name: r.origin for r in (*board.ram, board.flash, *board.external_flash)}

        script_at = where_of("linker_script")  # linker_regions: belongs beside it when not written yet
        regions_at = where_of("linker_regions") if names is not None else script_at[:-1] + ("linker_regions",)
        linkscript.check_script(path, needed, field=field_name(script_at), origins=origins,
                                     regions_field=field_name(regions_at))
        self.inputs.append(path)
        return mode, path, pairs

    def linker_regions(self, board: Any, names: dict[str, str],
                       where: tuple[Any, ...]) -> tuple[tuple[str, str], ...]:
        """linker_regions as sorted pairs, each key a RAM region, the flash or an external flash of the board."""
        known = [r.name for r in board.ram] + [board.flash.name] + [f.name for f in board.external_flash]
        for key in names:
            if key not in known:
                raise self.err(f"board {board.name} has no region '{key}'", where + (key,), at_value=False,
                               hint=_did_you_mean(key, known) + " (the keys are the board's region names, the "
                                    "values your script's MEMORY names)")
        return tuple(sorted((k, v) for k, v in names.items() if k != v))

    def option_where(self, board: str, model: str, key: str) -> tuple[Any, ...] | None:
        """Where the manifest sets ``key`` for ``model`` on ``board``: the board's override, the model, the defaults."""
        for i, item in enumerate(self.data["boards"]):
            if isinstance(item, dict) and item.get("name") == board:
                raw, at = board_models(item.get("models"))[1].get(model, ({}, ()))
                if key in raw:
                    return ("boards", i, "models", *at, key)
        for j, m in enumerate(self.data["models"]):
            if m.get("name") == model and key in m:
                return ("models", j, key)
        return ("defaults", key) if key in (self.data.get("defaults") or {}) else None

    def check_runtime(self, board: str, runtime: str, where: tuple[Any, ...],
                      models: list[ModelSpec], listed: bool = False) -> list[ModelSpec]:
        """Every model a board gets is one its runtime runs (runtime tflm: .tflite models only; arena and
        none: ONNX and .tflite, a .tflite lowered for arena's runtime: kernels arena), else one error
        naming the model, the board and the runtime that would run it: nothing is left out silently;
        a board skips a model only by its own ``models: [...]`` list. Returns the models, a .tflite
        set to kernels arena where arena's runtime (or tables) run it."""
        runnable = [m.name for m in models if runtime != "tflm" or is_tflite_path(m.path)]
        out = []
        for m in models:
            tflite = is_tflite_path(m.path)
            if runtime == "tflm" and not tflite:
                fixes = [f"write 'runtime: arena' for board {board}", "give the model's .tflite file"]
                if listed:
                    fixes.append(f"drop {m.name} from board {board}'s models: list")
                elif runnable:
                    fixes.append(f"skip it on board {board} with the board's own model list: "
                                 f"models: [{', '.join(runnable)}]")
                raise self.err(f"model {m.name} is an ONNX model, which board {board}'s runtime tflm does not run "
                               "(TFLite Micro runs .tflite models); runtime arena runs it", where,
                               hint=", or ".join(fixes))
            if runtime == "tflm" and m.options.kernels == ARENA_KERNELS:
                raise self.err(f"model {m.name}: kernels: arena on board {board} with runtime: tflm, whose firmware "
                               "runs the model on TFLite Micro's kernels", self.option_where(board, m.name, "kernels")
                               or where, hint="drop kernels: arena, or write 'runtime: arena' for the board")
            if tflite and runtime != "tflm":
                if m.options.kernels not in ("reference", ARENA_KERNELS):
                    raise self.err(f"model {m.name}: kernels: {m.options.kernels} names TFLite Micro's kernels, but "
                                   f"board {board} has runtime: {runtime}, which lowers the .tflite for arena's runtime",
                                   self.option_where(board, m.name, "kernels") or where,
                                   hint="drop kernels:, or write 'runtime: tflm' for the board")
                m = dataclasses.replace(m, options=dataclasses.replace(m.options, kernels=ARENA_KERNELS))
            out.append(m)
            o = m.options
            if runtime == "tflm" and (o.alignment != TFLM_ALIGNMENT or o.activation_dtype or o.bitwidths):
                what = (f"alignment {o.alignment}" if o.alignment != TFLM_ALIGNMENT else
                        "activation_dtype/bitwidths (a what-if that re-sizes tensors)")
                key = "alignment" if o.alignment != TFLM_ALIGNMENT else (
                    "activation_dtype" if o.activation_dtype else "bitwidths")
                raise self.err(f"model {m.name}: {what} on board {board} with runtime: tflm, which TFLM does not run",
                               self.option_where(board, m.name, key) or where,
                               hint=f"TFLM aligns every tensor to {TFLM_ALIGNMENT} bytes and runs the model's "
                                    f"own types: drop the option (alignment {TFLM_ALIGNMENT} is the default)")
        return out
