"""``arena-tool fit MANIFEST --board B``: the fastest configuration of a board's models that fits
its RAM and flash, and the QEMU run that proves it.

Three costs per configuration (a candidate per model, ``builder.fit``, and an ``optimize``
level for the board):

* RAM: from the plans (``builder.fit.combine``: arena, reserve, caller-owned I/O), exact;
* flash: the linked ELF of the configuration's firmware (the runtime, the tables, the weights:
  ``firmware.generate`` + ``firmware.build_elf`` for the core's emulated board, whose code is
  the target's: same compiler flags), exact; built only for configurations that fit RAM;
* time: instructions per inference from a per-op cost model (``CostModel``): each op's
  instructions per MAC (or per output byte, for an op without MACs) from ``arena-tool run
  --profile`` runs of the model at each level (its manifest configuration, and the smallest-peak
  patched one where patches are searched), applied to each candidate's ops and MACs; an op it has
  not seen takes its op type's rate. Its error against QEMU is measured on the pick.

The pick is the fastest configuration that fits (ties: less RAM, less flash), proven by
``firmware.run`` on the emulated board: outputs equal onnxruntime's, instructions measured.
"""

from __future__ import annotations

import dataclasses
import io
import json
import math
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Sequence, TextIO

from arena_tool.builder import fit as search, noop_cache
from arena_tool.builder.fit import Candidate, Combo, ModelSpace
from arena_tool.core.errors import EXIT_CHECK_FAILED, EXIT_OK, ArenaError
from arena_tool.core.files import project_path, write_atomic
from arena_tool.core.problem import fmt_bytes
from arena_tool.core.schema import check_json
from arena_tool.model import macs as op_macs, patches as patch_stages
from arena_tool.plan import plancheck, planners
from arena_tool.emit import table_bytes
from arena_tool.run import firmware, runreport
from arena_tool.target import boards, flags, manifest
from arena_tool.target import manifest_data
from arena_tool.target.manifest_data import BoardTarget

FORMAT_VERSION = 1
OBJECTIVES = ("speed", "ram", "flash")
SETTLE = 0.15  # the fitting configurations predicted within 15 % of the fastest are measured on QEMU ...
MAX_SETTLE = 3  # ... at most this many: the model ranks, QEMU settles the close ones


def emulated_for(target: BoardTarget) -> boards.Board:
    """The board QEMU runs for ``target``: itself when emulated, else a shipped emulated board whose
    core compiles with the same flags (the same ISA features: the same code and counts)."""
    if target.board.qemu:
        return target.board
    want = target.board.cpu.gcc_flags()
    for name in firmware.emulated_boards():
        b = boards.load_board(name)
        if b.cpu.gcc_flags() == want:
            return b
    raise ArenaError(f"no emulated board has board {target.name}'s core ({' '.join(want)}), so no pick can be "
                     "proven", field="--board", hint="fit a board QEMU emulates, or one with the core of "
                     + " or ".join(firmware.emulated_boards()))


# ---------------------------------------------------------------- time: the per-op cost model


def _key(name: str) -> tuple[str, str]:
    """(the node an op comes from, what it is): a tiled op 'conv3@2' is ('conv3', 'tile'), its
    input crop 'conv3@2:crop0' ('conv3', 'crop'), a tile's write 'y@2:patch' ('y', 'patch')."""
    base, at, rest = name.partition("@")
    if not at:
        return base, "op"
    return base, "crop" if ":crop" in rest else "patch" if rest.endswith(":patch") else "tile"


@dataclasses.dataclass(frozen=True)
class OpWork:
    name: str
    op_type: str
    work: int  # MACs, or output bytes for an op without MACs
    per_mac: bool


def op_work(c: Candidate) -> list[OpWork]:
    """The work of each op of the candidate's plan (MACs, or output bytes)."""
    lowered = plancheck.lowered_model(c.path, c.plan)
    counts = op_macs.plan_macs(c.plan.schedule, lowered)
    by_name = c.plan.by_name
    out = []
    for step, n in zip(c.plan.schedule, counts):
        if n:
            out.append(OpWork(step.name, step.op_type, n, True))
        else:
            size = sum(by_name[y].size for y in step.outputs if y in by_name)
            out.append(OpWork(step.name, step.op_type, size, False))
    return out


@dataclasses.dataclass
class CostModel:
    """Instructions per unit of work, learnt from profiled runs at one optimize level: per op key
    (``_key``), per op type (mean over the ops seen) and the instructions outside the ops.

    A tile's rate depends on its size (a small tile pays its loop set-up on fewer MACs): a tiled
    op's rate is interpolated in log(MACs per tile) between the tiles profiled (``tiles``) and
    the whole op (``by_key``'s 'op' entry), and kept at the nearer end outside them."""

    by_key: dict[tuple[str, str, bool], float] = dataclasses.field(default_factory=dict)
    by_type: dict[tuple[str, bool], list[float]] = dataclasses.field(default_factory=dict)
    tiles: dict[str, list[tuple[int, float]]] = dataclasses.field(default_factory=dict)
    whole: dict[str, tuple[int, float]] = dataclasses.field(default_factory=dict)
    outside: list[int] = dataclasses.field(default_factory=list)

    def learn(self, work: Sequence[OpWork], doc: dict[str, Any]) -> None:
        rows = {r["name"]: r for r in doc["profile"] or []}
        total = 0
        for w in work:
            r = rows.get(w.name)
            if r is None or r["instructions"] is None or not w.work:
                continue
            rate = r["instructions"] / w.work
            base, kind = _key(w.name)
            self.by_key[(base, kind, w.per_mac)] = rate
            self.by_type.setdefault((w.op_type, w.per_mac), []).append(rate)
            if w.per_mac and kind == "tile":
                self.tiles.setdefault(base, []).append((w.work, rate))
            elif w.per_mac and kind == "op":
                self.whole[base] = (w.work, rate)
            total += r["instructions"]
        if doc["instructions"] is not None:
            self.outside.append(max(0, int(doc["instructions"]) - total))

    def _tile_rate(self, base: str, n: int) -> float | None:
        points: list[tuple[int, float]] = sorted({*self.tiles.get(base, ()), *([self.whole[base]] if base in self.whole else [])})
        if not points:
            return None
        if n <= points[0][0]:
            return points[0][1]
        if n >= points[-1][0]:
            return points[-1][1]
        for (n0, r0), (n1, r1) in zip(points, points[1:]):
            if n0 <= n <= n1:
                f = 0.0 if n1 == n0 else (math.log(n) - math.log(n0)) / (math.log(n1) - math.log(n0))
                return r0 + f * (r1 - r0)
        return points[-1][1]

    def rate(self, w: OpWork) -> float:
        base, kind = _key(w.name)
        if kind == "tile" and w.per_mac:
            tile = self._tile_rate(base, w.work)
            if tile is not None:
                return tile
        for key in ((base, kind, w.per_mac), (base, "op", w.per_mac)):
            if key in self.by_key:
                return self.by_key[key]
        seen = self.by_type.get((w.op_type, w.per_mac))
        if seen:
            return sum(seen) / len(seen)
        every = [r for (_, per), rs in self.by_type.items() if per == w.per_mac for r in rs]
        return sum(every) / len(every) if every else 0.0

    def predict(self, work: Sequence[OpWork]) -> int:
        outside = sum(self.outside) / len(self.outside) if self.outside else 0.0
        return round(sum(self.rate(w) * w.work for w in work) + outside)


# ---------------------------------------------------------------- the search


@dataclasses.dataclass(frozen=True)
class Config:
    """One board configuration: a combination and a level, with its three costs (flash None:
    not built, the RAM does not fit) and whether it fits."""

    combo: Combo
    optimize: str
    flash: int | None
    instructions: int
    fits_ram: bool
    fits_flash: bool | None

    @property
    def fits(self) -> bool:
        return self.fits_ram and bool(self.fits_flash)


@dataclasses.dataclass(frozen=True)
class Proof:
    """The pick's QEMU run per model: result, measured instructions, flash and RAM of its ELF."""

    model: str
    board: str
    result: str
    instructions: int | None
    max_abs_error: float | None


@dataclasses.dataclass(frozen=True)
class FitResult:
    """One board's search: its candidates, every configuration with its costs, the front, the
    pick (None: nothing fits) and the QEMU runs of the pick and its close contenders."""

    target: BoardTarget
    emulated: str
    objective: str
    spaces: tuple[ModelSpace, ...]
    configs: tuple[Config, ...]
    front: tuple[int, ...]  # indices into configs: the Pareto front (RAM, flash, instructions)
    pick: int | None
    proofs: tuple[tuple[int, tuple[Proof, ...]], ...]  # (config index, its runs): the pick and close contenders
    calibration: tuple[tuple[str, str, str, int, int], ...]  # (model, level, configuration, predicted, measured)
    flash_limit: int

    @property
    def picked(self) -> Config | None:
        return None if self.pick is None else self.configs[self.pick]


def _levels(target: BoardTarget, board_wide: bool = True) -> list[str]:
    """The optimize levels searched: the board's when the manifest sets one (or the search may not
    turn the board's settings), else every level."""
    if target.options.optimize is not None or not board_wide:
        return [flags.level(target.options.optimize)]
    return sorted(flags.LEVELS, reverse=True)


# Runs and links already made in this process, by what determines them (a bench fits one model
# at many budgets and boards of one core: the same candidate is not run or linked twice).
_MEASURED: dict[str, Any] = {}


def _memo_key(*parts: Any) -> str:
    return json.dumps(parts, sort_keys=True, default=str)


def candidate_key(c: Candidate) -> list[Any]:
    """What a candidate's firmware is made from: the model (its path and bytes: an edited model is
    measured again in the same process), options, planner and split regions."""
    return [c.path, c.plan.model_sha256, c.options.to_doc(), c.planner, c.params.k, c.params.time_limit,
            list(c.split)]


def measure(c: Candidate, board: str, level: str, timeout: float = 300.0) -> dict[str, Any]:
    """``arena-tool run``'s report of one candidate on an emulated board at a level (memoized):
    outputs against onnxruntime, instructions measured."""
    key = _memo_key("run", candidate_key(c), board, level)
    if key not in _MEASURED:
        _MEASURED[key] = firmware.quiet_run(c.path, board, c.options, c.planner, c.params, timeout=timeout,
                                            optimize=level)[1]
    doc: dict[str, Any] = _MEASURED[key]
    return doc


def _profile(c: Candidate, board: str, level: str, timeout: float) -> dict[str, Any]:
    """``arena-tool run --profile``'s report of one candidate (memoized; raises when the firmware fails)."""
    key = _memo_key("profile", candidate_key(c), board, level)
    if key not in _MEASURED:
        _MEASURED[key] = _profile_run(c, board, level, timeout)
    doc: dict[str, Any] = _MEASURED[key]
    return doc


def _profile_run(c: Candidate, board: str, level: str, timeout: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="arena-fit-") as tmp:
        report = os.path.join(tmp, "run.json")
        firmware.run(c.path, board, c.options, c.planner, c.params, json_path=report, timeout=timeout,
                     out=io.StringIO(), err=io.StringIO(), optimize=level, profile=True)
        with open(report, encoding="utf-8") as f:
            doc: dict[str, Any] = json.load(f)
    return doc


def tables(c: Candidate) -> int:
    """Flash bytes of the candidate's generated tables besides its weights (emit.table_bytes: the
    gate's count, the compiled object's to a few bytes), memoized."""
    key = _memo_key("tables", candidate_key(c))
    if key not in _MEASURED:
        _MEASURED[key] = table_bytes.table_bytes(c.plan, plancheck.lowered_model(c.path, c.plan), c.model.lower())
    n: int = _MEASURED[key]
    return n


_OVERFLOW = re.compile(r"region `([^']+)' overflowed by ([0-9]+) bytes")


def _flash(combo: Combo, board: boards.Board, level: str) -> int:
    """``_link``, memoized."""
    key = _memo_key("flash", [candidate_key(p) for p in combo.picks], board.name, level)
    if key not in _MEASURED:
        _MEASURED[key] = _link(combo, board, level)
    flash: int = _MEASURED[key]
    return flash


def _link(combo: Combo, board: boards.Board, level: str) -> int:
    """Flash bytes of the configuration's firmware linked for ``board`` (its own memory map; no
    input table: the product's flash). A firmware over the board's flash does not link: then
    the flash length plus what ld says it overflowed by."""
    syms = [(p.model.lower(), p.path, p.plan) for p in combo.picks]
    with tempfile.TemporaryDirectory(prefix="arena-fit-") as tmp:
        out = Path(tmp)
        gen = firmware.generate(out, syms, board.name)
        try:
            elf = firmware.build_elf(out, gen, board, max(p.arena for p in combo.picks),
                                     regions=firmware.board_regions([p.plan for p in combo.picks]),
                                     cflags=flags.cflags(level))
        except subprocess.CalledProcessError as e:
            over = {m.group(1): int(m.group(2)) for m in _OVERFLOW.finditer(e.stderr or "")}
            flash = board.flash
            if flash is None or set(over) != {flash.name}:
                raise
            return flash.length + over[flash.name]
        return runreport.elf_sizes(str(elf)).flash


def _front(configs: Sequence[Config]) -> tuple[int, ...]:
    """Indices of the configurations no other beats in RAM, flash and instructions together."""
    known = [(i, c) for i, c in enumerate(configs) if c.flash is not None]

    def costs(c: Config) -> tuple[int, int, int]:
        assert c.flash is not None
        return c.combo.ram, c.flash, c.instructions

    out = []
    for i, c in known:
        a = costs(c)
        if not any(all(x <= y for x, y in zip(costs(d), a)) and costs(d) != a for _, d in known):
            out.append(i)
    return tuple(out)


def fit(target: BoardTarget, *, objective: str = "speed", prove: bool = True, timeout: float = 300.0,
        log: TextIO | None = None, board_wide: bool = True) -> FitResult:
    """Search, measure, pick and prove (module docstring). board_wide: False keeps the board's own
    settings (its optimize level, or the default; one arena, no split): a model's ``fit:``."""
    log = log or io.StringIO()
    emu = emulated_for(target)
    room = search.room(target)
    spaces = []
    for m in target.models:
        print(f"fit {target.name}: planning {m.name}'s candidates", file=log, flush=True)
        spaces.append(search.model_space(m, room, split=search.split_caps(target) if board_wide else ()))
    levels = _levels(target, board_wide)
    models: dict[tuple[str, str], CostModel] = {}
    calibration: list[tuple[str, str, str, int, int]] = []
    work: dict[int, list[OpWork]] = {}
    for s in spaces:
        for c in s.candidates:
            work[id(c)] = op_work(c)
        first = s.candidates[0]
        tiled = [c for c in s.candidates if c.plan.patches is not None and c.plan.patches.stages != "off"]
        probes = [first] + ([min(tiled, key=lambda c: (c.ram, c.macs))] if tiled else [])
        for level in levels:
            cm = models.setdefault((s.spec.name, level), CostModel())
            docs = []
            for c in probes:
                print(f"fit {target.name}: profiling {s.spec.name} ({c.label(s.spec.options)}) at {level}",
                      file=log, flush=True)
                docs.append((c, _profile(c, emu.name, level, timeout)))
                cm.learn(work[id(c)], docs[-1][1])
            calibration += [(s.spec.name, level, c.label(s.spec.options), cm.predict(work[id(c)]),
                             int(doc["instructions"] or 0)) for c, doc in docs]
    configs = []
    flash_limit = target.board.flash.length if target.board.flash is not None else 0
    for combo in search.combos(target, spaces):
        for level in levels:
            instr = sum(models[(p.model, level)].predict(work[id(p)]) for p in combo.picks)
            fits_ram = combo.region is not None
            flash = _flash(combo, target.board, level) if fits_ram else None
            configs.append(Config(combo, level, flash, instr, fits_ram,
                                  None if flash is None else (not flash_limit or flash <= flash_limit)))

    def key(c: Config) -> tuple[int, int, int]:
        costs = {"speed": (c.instructions, c.combo.ram, c.flash or 0), "ram": (c.combo.ram, c.instructions, c.flash or 0),
                 "flash": (c.flash or 0, c.instructions, c.combo.ram)}
        return costs[objective]

    fitting = sorted((i for i, c in enumerate(configs) if c.fits), key=lambda i: (key(configs[i]), i))
    pick = fitting[0] if fitting else None
    proofs: dict[int, tuple[Proof, ...]] = {}
    if pick is not None and prove:
        best = configs[pick].instructions
        contenders = [i for i in fitting if configs[i].instructions <= best * (1 + SETTLE)][:MAX_SETTLE] \
            if objective == "speed" else [pick]
        for i in contenders:
            proofs[i] = _prove(configs[i], emu, timeout, log)
        proven = [i for i in contenders if all(p.result == "match" for p in proofs[i])]
        pick = min(proven, key=lambda i: (sum(p.instructions or 0 for p in proofs[i]), key(configs[i]), i)) \
            if proven and objective == "speed" else contenders[0]
    return FitResult(target, emu.name, objective, tuple(spaces), tuple(configs), _front(configs), pick,
                     tuple(sorted(proofs.items())), tuple(calibration), flash_limit)


def _prove(c: Config, emu: boards.Board, timeout: float, log: TextIO) -> tuple[Proof, ...]:
    """Each model of the configuration run on QEMU through ``arena-tool run``'s path: outputs
    against onnxruntime's, instructions measured."""
    out = []
    for p in c.combo.picks:
        print(f"fit: running {p.model} ({p.options.io}/{p.options.io_buffers}/{p.options.schedule}/"
              f"patches {p.options.patches}, {c.optimize}) on {emu.name} (QEMU)", file=log, flush=True)
        doc = measure(p, emu.name, c.optimize, timeout)
        out.append(Proof(p.model, emu.name, doc["result"], doc["instructions"],
                         firmware.worst_error(doc) if doc["outputs"] else None))
    return tuple(out)



# ---------------------------------------------------------------- what it says


def names(combo: Combo, spaces: Sequence[ModelSpace]) -> str:
    return "; ".join(f"{p.model}: {p.label(s.spec.options)}" for p, s in zip(combo.picks, spaces))


def _measured(result: FitResult, i: int) -> int | None:
    """The instructions QEMU measured for configuration ``i`` (its proof runs), None: not run."""
    runs = dict(result.proofs).get(i)
    return None if not runs else sum(r.instructions or 0 for r in runs)


def why_lost(result: FitResult, i: int) -> str:
    """Why configuration ``i`` is not the pick, with the numbers: what it needs over what the
    board has, or how much more of the objective it costs ('' for the pick)."""
    c, pick, t = result.configs[i], result.picked, result.target
    if i == result.pick:
        return ""
    if not c.fits_ram:
        if any(p.split for p in c.combo.picks):
            return f"its split arena ({fmt_bytes(c.combo.arena)}) is over a region's limit"
        return f"needs {fmt_bytes(c.combo.arena)} of arena > {fmt_bytes(search.room(t))}"
    if not c.fits_flash:
        return f"needs {fmt_bytes(c.flash or 0)} of flash > {fmt_bytes(result.flash_limit)}"
    if pick is None or result.pick is None:
        return ""
    mine, theirs = _measured(result, i), _measured(result, result.pick)
    if result.objective == "speed" and mine is not None and theirs is not None and mine != theirs:
        return f"{mine / theirs:.2f}x the pick's instructions, measured on QEMU ({mine:,} vs {theirs:,})"
    costs = {"speed": (c.instructions, pick.instructions, "the instructions"),
             "ram": (c.combo.ram, pick.combo.ram, "the RAM"),
             "flash": (c.flash or 0, pick.flash or 0, "the flash")}
    order = [result.objective] + [k for k in ("speed", "ram", "flash") if k != result.objective]
    for k in order:  # the objective, then the tie-breaks in the order the pick is ranked by
        mine_, theirs_, what = costs[k]
        if mine_ != theirs_:
            ratio = f"{mine_ / theirs_:.2f}x {what}" if theirs_ else f"{mine_:,} B against none"
            lead = "" if k == result.objective else f"as good for {result.objective}, but "
            return f"{lead}{ratio} ({mine_ - theirs_:+,})"
    return "the same costs, ranked after it"


RUNNERS_UP = 4  # configurations the build's reports show beside the pick


def runners_up(result: FitResult) -> list[int]:
    """Up to ``RUNNERS_UP`` configurations to show beside the pick: the best by the objective
    (whether it fits or not) and the ones ranked just ahead of the pick (they lost on RAM or
    flash), then the next fitting ones behind it; without a pick, the first by the objective."""
    rank = sorted(range(len(result.configs)), key=lambda i: (_rank(result.configs[i], result.objective), i))
    if result.pick is None:
        return rank[:RUNNERS_UP]
    at = rank.index(result.pick)
    ahead = list(dict.fromkeys(rank[:1] + rank[max(1, at - 1):at])) if at else []
    behind = [i for i in rank[at + 1:] if result.configs[i].fits][:RUNNERS_UP - len(ahead)]
    return ahead + behind


def _rank(c: Config, objective: str) -> tuple[int, int, int]:
    """The objective's costs in the order a pick is ranked by (``fit``'s key)."""
    flash = c.flash or 0
    return {"speed": (c.instructions, c.combo.ram, flash), "ram": (c.combo.ram, c.instructions, flash),
            "flash": (flash, c.instructions, c.combo.ram)}[objective]


def choice(result: FitResult) -> manifest_data.FitChoice:
    """What the search chose, for the build's reports: the pick and the runners-up, each with why it lost."""
    def one(i: int) -> manifest_data.FitConfig:
        c = result.configs[i]
        return manifest_data.FitConfig(names(c.combo, result.spaces), c.optimize, c.combo.ram, c.flash,
                                       c.instructions, why_lost(result, i))

    return manifest_data.FitChoice(result.objective, len(result.configs),
                                   None if result.pick is None else one(result.pick),
                                   tuple(one(i) for i in runners_up(result)))


def smallest(result: FitResult) -> tuple[Config, Config | None]:
    """(the configuration with the least RAM, the one with the least flash among those built)."""
    by_ram = min(result.configs, key=lambda c: (c.combo.ram, c.instructions))
    built = [c for c in result.configs if c.flash is not None]
    return by_ram, min(built, key=lambda c: (c.flash or 0, c.instructions)) if built else None


def render(result: FitResult) -> list[str]:
    """The console report: the Pareto front, what fits, the pick and its proof."""
    t = result.target
    pick = result.picked
    lines = [f"fit {t.name}: {len(result.configs)} configurations of {'+'.join(m.name for m in t.models)} "
             f"({t.sharing}), objective {result.objective}; RAM = arena + {fmt_bytes(t.reserve)} reserve "
             f"(+ caller-owned I/O), flash = the linked ELF ({fmt_bytes(result.flash_limit)} on the board), "
             f"instructions from the per-op cost model (calibrated on {result.emulated})"]
    for s in result.spaces:
        for p in s.pruned:
            lines.append(f"  {s.spec.name}: not planned: {p.options.io}/{p.options.io_buffers}/{p.options.schedule}: "
                         f"{p.why}")
        if not s.complete:
            lines.append(f"  {s.spec.name}: the search stopped at its time bound")
    lines.append("Pareto front (RAM, flash, instructions); * fits, > the pick:")
    shown = [i for i in result.front]
    shown += [i for i, c in enumerate(result.configs) if c.flash is None and i not in shown]
    for i in shown:
        c = result.configs[i]
        mark = ">" if i == result.pick else "*" if c.fits else " "
        flash = "not built" if c.flash is None else f"{c.flash:,} B"
        lines.append(f" {mark} RAM {c.combo.ram:>9,} B  flash {flash:>12}  instr {c.instructions:>12,}  "
                     f"{c.optimize:<5}  {names(c.combo, result.spaces)}"
                     + ("" if i == result.pick else f"  ({why_lost(result, i)})"))
    for model, level, label, predicted, measured in result.calibration:
        err = 100.0 * (predicted - measured) / measured if measured else 0.0
        lines.append(f"  cost model: {model} {label} at {level}: predicted {predicted:,}, QEMU {measured:,} "
                     f"({err:+.1f} %, calibration run)")
    if pick is None:
        least, thin = smallest(result)
        lines.append(f"fit {t.name}: nothing fits; the smallest RAM reachable is {fmt_bytes(least.combo.ram)} "
                     f"(arena {fmt_bytes(least.combo.arena)}, set by {'+'.join(least.combo.peak)}: "
                     f"{names(least.combo, result.spaces)})" + (
                         f"; the smallest flash {fmt_bytes(thin.flash or 0)} (set by "
                         f"{_flash_owner(thin)}: {names(thin.combo, result.spaces)}, {thin.optimize})"
                         if thin is not None else "; no configuration fits RAM, so no flash was measured"))
        return lines
    lines.append(f"pick: {names(pick.combo, result.spaces)}, optimize {pick.optimize}, region {pick.combo.region}: "
                 f"RAM {fmt_bytes(pick.combo.ram)}, flash {fmt_bytes(pick.flash or 0)} (weights "
                 f"{fmt_bytes(sum(p.weights for p in pick.combo.picks))}, tables "
                 f"{fmt_bytes(sum(tables(p) for p in pick.combo.picks))}), "
                 f"{pick.instructions:,} instructions predicted")
    for i, runs in result.proofs:
        c = result.configs[i]
        total = sum(r.instructions or 0 for r in runs)
        what = "pick" if i == result.pick else "contender"
        for run in runs:
            lines.append(f"  {what} proof: {run.model} on {run.board} (QEMU): {run.result}, {run.instructions or 0:,} "
                         f"instructions" + (f", max abs error {run.max_abs_error:.3e}" if run.max_abs_error is not None
                                            else "") + ("" if i == result.pick else f" ({names(c.combo, result.spaces)}, {c.optimize})"))
        if total:
            lines.append(f"    cost model error: {100.0 * (c.instructions - total) / total:+.1f} % "
                         f"({c.instructions:,} predicted, {total:,} measured)")
    return lines


def _flash_owner(c: Config) -> str:
    """The model with the most weights in a configuration (what sets most of its flash)."""
    return max(c.combo.picks, key=lambda p: (p.weights, p.model)).model


def to_json(result: FitResult) -> dict[str, Any]:
    """The --json document (schemas/fit.schema.json)."""
    t = result.target

    def config(i: int, c: Config) -> dict[str, Any]:
        return {"index": i, "optimize": c.optimize, "ram": c.combo.ram, "arena": c.combo.arena,
                "region": c.combo.region, "flash": c.flash, "instructions": c.instructions,
                "fits_ram": c.fits_ram, "fits_flash": c.fits_flash, "front": i in result.front,
                "peak": list(c.combo.peak),
                "models": [{"name": p.model, "model": project_path(p.path), "changes": p.changes(s.spec.options),
                            "options": p.options.to_doc(), "arena": p.arena, "ram": p.ram, "macs": p.macs,
                            "weights": p.weights, "tables": tables(p)} for p, s in zip(c.combo.picks, result.spaces)]}

    ram, flash = smallest(result)
    return {
        "format_version": FORMAT_VERSION, "board": t.name, "emulated": result.emulated, "sharing": t.sharing,
        "objective": result.objective, "reserve": t.reserve, "flash_limit": result.flash_limit,
        "configurations": [config(i, c) for i, c in enumerate(result.configs)],
        "pick": result.pick,
        "proofs": [{"index": i, "model": p.model, "board": p.board, "result": p.result,
                    "instructions": p.instructions, "max_abs_error": p.max_abs_error}
                   for i, runs in result.proofs for p in runs],
        "calibration": [{"model": m, "optimize": lv, "configuration": lab, "predicted": pr, "measured": me}
                        for m, lv, lab, pr, me in result.calibration],
        "smallest_ram": {"ram": ram.combo.ram, "set_by": list(ram.combo.peak)},
        "smallest_flash": None if flash is None else {"flash": flash.flash, "set_by": [_flash_owner(flash)]},
        "pruned": [{"model": p.model, "options": p.options.to_doc(), "why": p.why}
                   for s in result.spaces for p in s.pruned],
    }


def write_choice(manifest_path: str, results: Sequence[FitResult], path: str) -> None:
    """The manifest with each board's pick recorded as its own settings (the models' options in
    the board's ``models:`` overrides, ``optimize``, a split's ``region: [...]``), written to
    ``path`` atomically; a product freezes the choice by building from it. Read with PyYAML and
    written back: comments are not kept, so ``path`` beside the manifest keeps the original."""
    import yaml

    with open(manifest_path, encoding="utf-8") as f:
        data = yaml.safe_load(f)
    base = os.path.dirname(os.path.abspath(manifest_path))
    here = os.path.dirname(os.path.abspath(path))
    for key in ("board_dirs",):
        if key in data:
            data[key] = [os.path.relpath(os.path.join(base, d), here) for d in data[key]]
    for m in data.get("models", []):
        m["path"] = os.path.relpath(os.path.join(base, m["path"]), here)
    if isinstance(data.get("inputs"), dict):
        data["inputs"] = {k: os.path.relpath(os.path.join(base, v), here) for k, v in data["inputs"].items()}
    for r in results:
        c = r.picked
        if c is None:
            continue
        boards_list = data["boards"]
        i = next(k for k, b in enumerate(boards_list) if (b if isinstance(b, str) else b["name"]) == r.target.name)
        entry = {"name": boards_list[i]} if isinstance(boards_list[i], str) else dict(boards_list[i])
        chosen, given = manifest.board_models(entry.get("models"))
        overrides = {name: raw for name, (raw, _) in given.items()}
        for p, space in zip(c.combo.picks, r.spaces):
            changes: dict[str, Any] = dict(p.changes(space.spec.options))
            stages = patch_stages.parse(changes.get("patches", "off"))
            if stages:  # as the manifest spells stages (a node name may hold ';')
                changes["patches"] = [{"split_after": x.split_after, "tiles": [x.rows, x.cols]} for x in stages]
            if changes:
                overrides[p.model] = {**(overrides.get(p.model) or {}), **changes}
        if chosen is not None:  # the board's own model list stays a list, each item with its overrides
            entry["models"] = [{n: overrides[n]} if overrides.get(n) else n for n in chosen]
        elif overrides:
            entry["models"] = overrides
        if r.target.options.optimize is None:
            entry["optimize"] = c.optimize
        split = next((p.split for p in c.combo.picks if p.split), ())
        if split:
            entry["region"] = [name for name, _ in split]
        boards_list[i] = entry
    text = "# written by arena-tool fit --write from " + os.path.basename(manifest_path) + ": each board's pick\n"
    write_atomic(path, text + yaml.safe_dump(data, sort_keys=False, default_flow_style=False))


def main(manifest_path: str, board: str, *, objective: str = "speed", json_path: str | None = None,
         prove: bool = True, timeout: float = 300.0, out: TextIO | None = None, err: TextIO | None = None,
         write: str | None = None) -> int:
    """``arena-tool fit``: exit 0 when a configuration fits (and its proof matched), 1 when none does."""
    out = out or sys.stdout
    if objective not in OBJECTIVES:
        raise ArenaError(f"unknown objective '{objective}'", field="--objective",
                         hint=f"expected one of: {', '.join(OBJECTIVES)}")
    m = manifest.load(manifest_path)
    targets = m.select(board)
    code = EXIT_OK
    docs = []
    results = []
    for t in targets:
        if t.runtime != "arena":
            raise ArenaError(f"board {t.name} has runtime {t.runtime}; fit builds and runs arena's runtime",
                             file=manifest_path, field="runtime", hint="fit a board with runtime: arena")
        result = fit(t, objective=objective, prove=prove, timeout=timeout, log=err or sys.stderr)
        for line in render(result):
            print(line, file=out)
        docs.append(to_json(result))
        results.append(result)
        if result.pick is None or any(p.result != "match" for i, runs in result.proofs if i == result.pick
                                      for p in runs):
            code = EXIT_CHECK_FAILED
    if json_path:
        doc = {"format_version": FORMAT_VERSION, "manifest": project_path(manifest_path), "boards": docs}
        check_json(doc, "fit", json_path)
        write_atomic(json_path, json.dumps(doc, indent=2, sort_keys=True) + "\n")
        print(f"wrote {json_path}", file=out)
    if write:
        write_choice(manifest_path, results, write)
        manifest.load(write)  # what it wrote loads as a manifest (schema and checks)
        print(f"wrote {write}", file=out)
    return code


def chosen(result: FitResult) -> BoardTarget:
    """The board as the build plans it under ``fit:``: each model with its pick's options (a split
    pick's regions and the board's split too), the pick's level where the manifest sets none; the
    board unchanged when nothing fits (its gate then says why, with the configurations' hints).
    Either way it carries the search's ``choice`` for its reports."""
    t, c = dataclasses.replace(result.target, fit_choice=choice(result)), result.picked
    if c is None:
        return t
    split = next((p.split for p in c.combo.picks if p.split), ())
    caps = tuple((name, t.region_limit(name)) for name, _ in split)
    models = tuple(dataclasses.replace(spec, options=p.options, regions=caps or spec.regions)
                   for spec, p in zip(t.models, c.combo.picks))
    out = dataclasses.replace(t, models=models, options=dataclasses.replace(
        t.options, optimize=t.options.optimize or c.optimize))
    if caps:
        out = dataclasses.replace(out, region=caps[0][0], split=tuple(n for n, _ in caps))
    return out


# ---------------------------------------------------------------- fit: in the manifest


def fitted(doc: dict[str, Any], out: str) -> dict[str, Any]:
    """``noop_cache.fitted`` with this module's search for the boards it has not cached."""
    return noop_cache.fitted(doc, out, _fit_board)


def _fit_board(manifest_file: str, t: dict[str, Any], out: str) -> dict[str, Any]:
    """One board's search (``fitted``): its report printed and written, the board as picked."""
    target = manifest_data.target_from_doc(t)
    result = fit(search.scoped(target), objective=target.objective or "speed", prove=False,
                 board_wide=target.fit is not None)
    sys.stdout.write("".join(line + "\n" for line in render(result)))
    report = {"format_version": FORMAT_VERSION, "manifest": manifest_file, "boards": [to_json(result)]}
    path = os.path.join(out, target.name, "arena_fit.json")
    check_json(report, "fit", path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    write_atomic(path, json.dumps(report, indent=2, sort_keys=True) + "\n")
    picked = chosen(result)  # the models' fixed options as the manifest has them (scoped fixes more)
    return manifest_data.target_doc(dataclasses.replace(picked, models=tuple(
        dataclasses.replace(p, fixed=m.fixed) for p, m in zip(picked.models, target.models))))
