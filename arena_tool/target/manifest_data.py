"""A loaded manifest as data: ``Manifest``, one ``BoardTarget`` per board, one ``ModelSpec`` per
model and board, the ``Budget``; and their plain JSON (``to_doc``/``from_doc``), which a no-op
build reads from noop_cache's file.

Apart from the loader (``manifest.load``, which checks the YAML and needs the planner registry
for the planner names), so what takes a loaded target (the gate, its hints, the build graph)
does not import the loader and what it imports.
"""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any, Iterable, Mapping

from arena_tool.core.problem import ModelOptions
from arena_tool.target import tflm_sources
from arena_tool.target.board_choice import select_names
from arena_tool.target.boards import Board, reserve_bytes


@dataclasses.dataclass(frozen=True)
class ModelSpec:
    """One model as planned on one board.

    name: C identifier, unique in the manifest.
    path: the ONNX file (manifest folder joined to what the manifest says).
    planner: planner registry name; k: bytes (exact_cover unit); time_limit: seconds.
    options: everything that changes the planning problem.
    regions: a split arena (board ``region: [A, B]`` or ``split: true``): (region, capacity in
      bytes) fastest first, the capacity as ``BoardTarget.region_limit`` gives it; () for one arena.
    copied: the other models of the board whose weights are copied into one of those regions
      (``weights: <region>``), as (region, model path, its options): resident while this model
      runs, their bytes are not this model's to plan (``planning.left_after_copies``).
    fixed: the option names the manifest sets for this model (defaults, the model, the board's
      override): ``arena-tool fit`` never turns them.
    fit: the model's own ``fit:`` (defaults, the model or the board's override): the objective
      (speed, ram, flash) under which the build searches this model's options (``builder.fit.scoped``);
      None: only a board's ``fit:`` turns them. Not in ``key``: the plan is the chosen options'.
    """

    name: str
    path: str
    planner: str
    k: int
    time_limit: float
    options: ModelOptions
    regions: tuple[tuple[str, int], ...] = ()
    copied: tuple[tuple[str, str, ModelOptions], ...] = ()
    fixed: tuple[str, ...] = ()
    fit: str | None = None

    def key(self) -> str:
        """A canonical JSON text of everything that changes this model's plan (regions only
        when split, so a one-arena model keeps the key it always had)."""
        doc: dict[str, Any] = {
            "name": self.name, "path": self.path.replace(os.sep, "/"), "planner": self.planner,
            "k": self.k, "time_limit": self.time_limit, "options": self.options.to_doc(),
        }
        if self.regions:
            doc["regions"] = [list(r) for r in self.regions]
        if self.copied:
            doc["copied"] = _copied_doc(self.copied)
        return json.dumps(doc, sort_keys=True, separators=(",", ":"))


def _copied_doc(copied: Iterable[tuple[str, str, ModelOptions]]) -> list[list[Any]]:
    return [[region, path.replace(os.sep, "/"), options.to_doc()] for region, path, options in copied]


@dataclasses.dataclass(frozen=True)
class Budget:
    """The arena's RAM budget: ``size`` bytes, or ``percent`` of the arena's region; or, for a
    split arena, one of those per region (``regions``: name -> Budget; ``budget: {DTCM: 60K,
    SRAM1: 90%}``), as one number cannot say 60K of a 64K TCM and 90 % of a 256K SRAM.

    text: as the user wrote it (for messages).
    """

    text: str
    size: int | None = None
    percent: float | None = None
    regions: tuple[tuple[str, Budget], ...] = ()

    def resolve(self, region_length: int, region: str | None = None) -> int:
        """Bytes, given the region's length in bytes (and, for a budget per region, its name)."""
        if self.regions:  # a region the split leaves out (fit's other configurations): no budget but its size
            named = dict(self.regions).get(region or "")
            return region_length if named is None else named.resolve(region_length)
        if self.size is not None:
            return self.size
        assert self.percent is not None
        return int(region_length * self.percent / 100.0)

    def to_doc(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"text": self.text, "size": self.size, "percent": self.percent}
        if self.regions:  # only then: a manifest without one keeps its document
            doc["regions"] = [[n, b.to_doc()] for n, b in self.regions]
        return doc

    @classmethod
    def from_doc(cls, d: Mapping[str, Any]) -> Budget:
        return cls(text=d["text"], size=d["size"], percent=d["percent"],
                   regions=tuple((str(n), cls.from_doc(b)) for n, b in d.get("regions", ())))


@dataclasses.dataclass(frozen=True)
class BoardOptions:
    """The board-level settings that are one plain value each. The manifest's top level sets one
    for every board and a board's entry overrides it (the loader reads each field by its name; its
    schema is schemas/manifest.schema.json's, top level and board). One that is set enters the
    board's key (the gate's Value) and its board report's ``options``; unset (None), neither, so
    adding a field changes no existing build's bytes. A new one is a field here, its schema, and
    the code that reads it.

    optimize: the level arena's runtime, the tables and the firmware's sources compile at
      (target/flags.py: size -Os, speed -O2; None: flags.DEFAULT_OPTIMIZE).
    """

    optimize: str | None = None

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls))

    def chosen(self) -> dict[str, Any]:
        """The options set, by name, in field order."""
        return {n: getattr(self, n) for n in self.names() if getattr(self, n) is not None}


@dataclasses.dataclass(frozen=True)
class FitConfig:
    """One configuration a ``fit:`` search weighed, as the build's reports show it.

    label: what it sets, per model (the searched options that differ from the manifest's, a split);
    optimize: its level; ram: arena + reserve + caller-owned I/O (the plans); flash: the linked ELF
    (None: not linked, the RAM does not fit); instructions: per inference, from the cost model;
    why: for a runner-up, why it lost ('' for the pick)."""

    label: str
    optimize: str
    ram: int
    flash: int | None
    instructions: int
    why: str = ""

    def to_doc(self) -> dict[str, Any]:
        return {"label": self.label, "optimize": self.optimize, "ram": self.ram, "flash": self.flash,
                "instructions": self.instructions, "why": self.why}

    @classmethod
    def from_doc(cls, d: dict[str, Any]) -> FitConfig:
        return cls(str(d["label"]), str(d["optimize"]), int(d["ram"]), d["flash"], int(d["instructions"]),
                   str(d["why"]))


@dataclasses.dataclass(frozen=True)
class FitChoice:
    """What a board's ``fit:`` search chose (``run.fit.choice``), carried by the board as picked
    into its gate and reports: the objective, how many configurations it weighed, the pick (None:
    nothing fits) and the runners-up, each with why it lost."""

    objective: str
    weighed: int
    pick: FitConfig | None
    runners_up: tuple[FitConfig, ...]

    def to_doc(self) -> dict[str, Any]:
        return {"objective": self.objective, "weighed": self.weighed,
                "pick": None if self.pick is None else self.pick.to_doc(),
                "runners_up": [r.to_doc() for r in self.runners_up]}

    @classmethod
    def from_doc(cls, d: dict[str, Any]) -> FitChoice:
        return cls(str(d["objective"]), int(d["weighed"]), None if d["pick"] is None else FitConfig.from_doc(d["pick"]),
                   tuple(FitConfig.from_doc(r) for r in d["runners_up"]))


@dataclasses.dataclass(frozen=True)
class BoardTarget:
    """One board of the manifest with every override applied.

    board: the loaded board (``boards.Board``: its file, RAM regions, default and data
      region (the stack and heap reserve is taken there), flash (the budget for weights and
      code), core (``board.cpu.gcc_flags()``) and QEMU machine); the manifest overrides none
      of its fields, so it is the board file's as ``boards.load_board`` returns it;
    region: the arena region name, or "auto" (the fastest region that fits, chosen
      after planning); budget: see Budget; reserve_stack/reserve_heap: bytes;
    warn_above: percent of the budget, or None; sharing: "sequential" | "concurrent";
    runtime: "arena" (the build compiles arena's C runtime and checks that it runs every op),
      "none" (plans, tables and linker script only: the project brings its own kernels) or
      "tflm" (.tflite models only: the planned model as a C array, TFLM's tensor_arena and the
      linker script; the project brings TFLite Micro);
    models: the models with this board's overrides applied, in manifest order;
    linker: "full" (arena writes the board's whole linker script) or "fragment" (arena writes
      arena_fragment.ld, which ``linker_script``, the project's own script, INCLUDEs);
    linker_script: that script's path (manifest folder joined), with linker fragment only;
    linker_regions: (board region, the script's MEMORY name) pairs where the names differ;
    split: a split arena's regions, fastest first (``region`` is the first); () for one arena;
    tflm: with runtime tflm, the TFLite Micro arena builds the firmware with (None: the project
      brings TFLM and its own main).
    fit: ``fit: auto`` (speed) or its objective (ram, flash): the build plans the configuration
      ``arena-tool fit`` picks (build_steps.fitted); None: the manifest's options as they are.
    fit_choice: the board as the search picked it: what it chose and the runners-up (its reports
      show them); None: not searched.
    """

    name: str
    board: Board
    region: str
    budget: Budget
    reserve_stack: int
    reserve_heap: int
    warn_above: float | None
    sharing: str
    models: tuple[ModelSpec, ...]
    runtime: str = "arena"
    linker: str = "full"
    linker_script: str | None = None
    linker_regions: tuple[tuple[str, str], ...] = ()
    split: tuple[str, ...] = ()
    options: BoardOptions = BoardOptions()
    tflm: tflm_sources.TflmConfig | None = None
    fit: str | None = None
    fit_choice: FitChoice | None = None

    @property
    def reserve(self) -> int:
        """Bytes the stack and heap reserve take in the data region (``boards.reserve_bytes``:
        each rounded up to 8, as the linker script lays them out)."""
        return reserve_bytes(self.reserve_stack, self.reserve_heap)

    def region_room(self, name: str) -> int:
        """Bytes of region ``name`` beside the stack and heap reserve (taken in the data region)."""
        r = self.board.region(name)
        return r.length - (self.reserve if name == self.board.data_region else 0)

    def region_limit(self, name: str) -> int:
        """What the arena may take in region ``name``: the budget (bytes, or a percentage of the
        region), but no more than its room; the gate's limit, and a split arena's capacity per region."""
        return min(self.budget.resolve(self.board.region(name).length, name), self.region_room(name))

    @property
    def objective(self) -> str | None:
        """What the build's search optimizes for this board: its ``fit``, else its models' (the
        loader has checked they agree); None: no search."""
        return self.fit or next((m.fit for m in self.models if m.fit), None)

    def key(self) -> str:
        """Canonical JSON of the board-level settings (the gate's Value); the linker keys only
        when not the default, so a board with linker: full keeps the key it always had. The
        rest of the board is the gate's through the board file, an input of the gate."""
        b = self.board
        doc: dict[str, Any] = {
            "name": self.name, "region": self.region, "budget": self.budget.text,
            "reserve": [self.reserve_stack, self.reserve_heap], "warn_above": self.warn_above,
            "sharing": self.sharing, "models": [m.name for m in self.models],
            "regions": [[r.name, r.origin, r.length] for r in b.ram],
            "default_region": b.default_region, "data_region": b.data_region,
            "flash": [b.flash.name, b.flash.origin, b.flash.length], "runtime": self.runtime,
        }
        if self.linker != "full":
            doc.update(linker=self.linker, linker_script=(self.linker_script or "").replace(os.sep, "/"),
                       linker_regions=[list(p) for p in self.linker_regions])
        if self.split:
            doc["split"] = list(self.split)
        doc.update(self.options.chosen())
        if self.fit is not None:
            doc["fit"] = self.fit
        if self.fit_choice is not None:  # the reports show it: a new choice re-runs the gate
            doc["fit_choice"] = self.fit_choice.to_doc()
        return json.dumps(doc, sort_keys=True, separators=(",", ":"))


@dataclasses.dataclass(frozen=True)
class Manifest:
    """A checked manifest.

    file: the manifest path as given; board_dirs: folders searched for boards,
    the manifest's own first; models: the top-level models (defaults applied);
    targets: one per board, in manifest order; inputs: every file read
    (manifest, boards, models) so a cache knows when to reload; samples: the
    manifest's ``inputs:``, (model name, .npz path joined to the manifest's folder)
    for ``arena-tool run MANIFEST``.
    """

    file: str
    board_dirs: tuple[str, ...]
    models: tuple[ModelSpec, ...]
    targets: tuple[BoardTarget, ...]
    inputs: tuple[str, ...]
    samples: tuple[tuple[str, str], ...] = ()
    tolerances: tuple[tuple[str, tuple[tuple[str, float], ...]], ...] = ()  # tolerances: (model, (bound, value))

    @property
    def board_names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.targets)

    def select(self, spec: str | None) -> tuple[BoardTarget, ...]:
        """Targets for ``board=`` ('all', 'a,b' or one name; None or '' means all)."""
        by_name = {t.name: t for t in self.targets}
        return tuple(by_name[n] for n in select_names(list(self.board_names), spec, self.file))


def to_doc(m: Manifest) -> dict[str, Any]:
    """The manifest as plain JSON data (``from_doc`` inverts it)."""
    return {"file": m.file, "board_dirs": list(m.board_dirs), "inputs": list(m.inputs),
            "models": [_spec_doc(s) for s in m.models], "targets": [target_doc(t) for t in m.targets],
            "samples": [list(s) for s in m.samples],
            "tolerances": [[n, [list(b) for b in bounds]] for n, bounds in m.tolerances]}


def from_doc(d: dict[str, Any]) -> Manifest:
    return Manifest(file=d["file"], board_dirs=tuple(d["board_dirs"]), inputs=tuple(d["inputs"]),
                    models=tuple(_spec_from(s) for s in d["models"]),
                    targets=tuple(target_from_doc(t) for t in d["targets"]),
                    samples=tuple((str(n), str(p)) for n, p in d.get("samples", [])),
                    tolerances=tuple((str(n), tuple((str(k), float(v)) for k, v in b)) for n, b in d.get("tolerances", [])))


def _spec_doc(s: ModelSpec) -> dict[str, Any]:
    return {"name": s.name, "path": s.path, "key": s.key(), "planner": s.planner, "k": s.k,
            "time_limit": s.time_limit, "options": s.options.to_doc(), "regions": [list(r) for r in s.regions],
            "copied": _copied_doc(s.copied), "fixed": list(s.fixed), **({"fit": s.fit} if s.fit else {})}


def _spec_from(d: dict[str, Any]) -> ModelSpec:
    return ModelSpec(name=d["name"], path=d["path"], planner=d["planner"], k=d["k"], time_limit=d["time_limit"],
                     options=ModelOptions.from_doc(d["options"]),
                     regions=tuple((str(n), int(c)) for n, c in d.get("regions", [])),
                     copied=tuple((str(r), str(p), ModelOptions.from_doc(o)) for r, p, o in d.get("copied", [])),
                     fixed=tuple(str(k) for k in d.get("fixed", [])), fit=d.get("fit"))


def target_doc(t: BoardTarget) -> dict[str, Any]:
    """One BoardTarget as plain data: its board as ``Board.to_json`` and ``board_file``, plus
    two derived values the SCons tool and build_graph wire from without building a Board:
    ``key`` and the core's ``gcc_flags`` (``target_from_doc`` ignores them)."""
    return {"name": t.name, "board": t.board.to_json(), "board_file": t.board.file, "region": t.region,
            "budget": t.budget.to_doc(),
            "reserve_stack": t.reserve_stack, "reserve_heap": t.reserve_heap, "warn_above": t.warn_above,
            "sharing": t.sharing, "models": [_spec_doc(s) for s in t.models], "runtime": t.runtime,
            "linker": t.linker, "linker_script": t.linker_script, "linker_regions": [list(p) for p in t.linker_regions],
            "split": list(t.split), **{n: getattr(t.options, n) for n in BoardOptions.names()}, "key": t.key(),
            "gcc_flags": list(t.board.cpu.gcc_flags()),
            "tflm": t.tflm.to_doc() if t.tflm else None, "fit": t.fit,
            **({"fit_choice": t.fit_choice.to_doc()} if t.fit_choice is not None else {})}


def target_from_doc(d: dict[str, Any]) -> BoardTarget:
    """``target_doc``'s inverse (the board schema-checked by ``Board.from_json``)."""
    return BoardTarget(
        name=d["name"], board=Board.from_json(d["board"], d["board_file"]), region=d["region"],
        budget=Budget.from_doc(d["budget"]), reserve_stack=d["reserve_stack"], reserve_heap=d["reserve_heap"],
        warn_above=d["warn_above"], sharing=d["sharing"], models=tuple(_spec_from(s) for s in d["models"]),
        runtime=d["runtime"], linker=d["linker"], linker_script=d["linker_script"],
        linker_regions=tuple((a, b) for a, b in d["linker_regions"]), split=tuple(d["split"]),
        options=BoardOptions(**{n: d.get(n) for n in BoardOptions.names()}),
        tflm=tflm_sources.TflmConfig.from_doc(d["tflm"]) if d.get("tflm") else None, fit=d.get("fit"),
        fit_choice=FitChoice.from_doc(d["fit_choice"]) if d.get("fit_choice") else None)
