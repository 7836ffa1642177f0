"""The board report (schemas/report.schema.json): the document the gate writes and the link
and the ELF check update, and its text (the end-of-build summary). It lives beside the gate,
its writer; a user never writes one.

Three documents are called reports, one word each: the **board report** (this module: the
gate's verdict, ``arena_gate.json`` at stage planned, ``arena_report.json`` at stage linked,
for CI), the **build report** (report/htmlreport.py: that document drawn for people,
``arena_report.{html,md}``) and the **run report** (run/runreport.py: what a firmware did under
QEMU, ``run_report.json``; ``arena-tool run --json`` writes its one-model form).

``BoardReport`` is the report as a value (ModelUse, BoardProblem, Usage below it, each region's
share a linker_fragment.RegionUse);
``BoardReport.from_json`` (schema-checked) and ``to_json`` are the one conversion between it and the
file, key order and optional keys included, so ``read`` then ``write`` gives the same bytes.
``with_problem`` and ``with_elf`` (and ``gate.link_failure``) return a new BoardReport. Its
``status``:

- ``ok``, ``warn`` (above ``warn_above``): the board passed the gate;
- ``over``: the arena does not fit its RAM budget, or the weights (later: the
  linked code and data) do not fit the flash; each BoardProblem names the region,
  what it needs, its limit and by how much it is over;
- ``unsupported``: an op of a model that arena's runtime cannot execute (or a
  plan that is only a what-if: see ``gate.runtime_problems``);
- ``error``: the link failed for another reason, or the ELF check found the
  firmware disagreeing with the plan.

``failure(report)`` is the CheckFailed (exit status 1) to raise when the status is not ok/warn.

The report is written at two stages (``stage``): ``planned`` by the gate
(RAM = arena + stack/heap reserve; flash = the weights), then ``linked`` from
the ELF (``with_elf``: RAM and flash as the sections take them). ``usage_lines``
prints both in PlatformIO's style::

    RAM:   [===       ]  31.2% (used 20,480 bytes from 65,536 bytes)
    Flash: [=         ]   8.1% (used 85,123 bytes from 1,048,576 bytes)

With ``runtime: tflm`` a model's ``arena_size`` is its ``tensor_arena``: ``head`` plus
``tail`` rounded up to 16 (``tflm_arena_size``); the tail is the host's (reference kernels)
plus what the firmware's kernels allocate beyond it (``model.tflm_persistent``).

The report document holds no times and no absolute paths, so two builds of the
same inputs write the same bytes. The headroom, percentage and bar are against
the effective limit: min(budget, region length - reserve when the stack and
heap share the region); over budget the headroom is negative.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Mapping, Sequence

from arena_tool import __version__
from arena_tool.core.errors import EXIT_CHECK_FAILED, EXIT_USAGE, CheckFailed
from arena_tool.core.files import read_json, write_atomic
from arena_tool.core.problem import align_up, fmt_bytes
from arena_tool.core.schema import check_json
from arena_tool.emit.linker_fragment import RegionUse
from arena_tool.target.manifest_data import FitChoice, FitConfig

FORMAT_VERSION = 2

STATUSES = ("ok", "warn", "over", "unsupported", "error")

KINDS = ("ram", "flash", "unsupported", "names", "link", "elf")

TFLM_ALIGNMENT = 16  # tflite::MicroArenaBufferAlignment()

TFLM_NOTE = ("tensor_arena = arena's plan (TFLM's head) + TFLM's persistent tail as measured on the host with "
             "TFLM's reference kernels plus what the firmware's kernels (CMSIS-NN's LSTM) allocate beyond them, "
             "rounded up to 16 B")


@dataclasses.dataclass(frozen=True)
class OpMacs:
    """One op of a model's plan and its MACs (arena_tool.model.macs; the report's ``ops`` rows)."""

    index: int
    name: str
    op_type: str
    macs: int

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "name": self.name, "op_type": self.op_type, "macs": self.macs}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> OpMacs:
        return cls(int(doc["index"]), str(doc["name"]), str(doc["op_type"]), int(doc["macs"]))


@dataclasses.dataclass(frozen=True)
class ModelUse:
    """One model's share of the board arena. Sizes and base are bytes."""

    name: str
    planner: str
    arena_size: int
    lower_bound: int
    optimal: bool | None
    status: str
    base: int
    plan: str
    model: str
    model_sha256: str
    weights_bytes: int
    head: int | None = None  # runtime tflm: arena's plan, TFLM's non-persistent head (bytes)
    tail: int | None = None  # runtime tflm: TFLM's persistent tail measured on the host (bytes)
    regions: tuple[tuple[str, int], ...] = ()  # a split plan: (region, arena bytes there), fastest first
    weights_region: str = "flash"  # where the weights run from (weights: <region> copies them there, or an external flash)
    weights_ram: int = 0  # bytes they take in that region, RAM or external (split_arena.weights_ram_bytes), 0 in flash
    caller_io: int = 0  # io_buffers: caller: bytes of the inputs and outputs the application owns, outside the arena
    ops: tuple[OpMacs, ...] | None = None  # MACs per op (arena_tool.model.macs); None: not counted (runtime tflm)
    unknown_scratch: tuple[str, ...] = ()  # runtime tflm: ops whose kernel scratch the plan omits (measured head)
    patches: tuple[str, int, int, int] | None = None  # (stages, untiled arena B, untiled MACs, MACs): patches set
    table_bytes: int = 0  # flash of the generated C tables besides the weights (emit.table_bytes); 0: none (tflm)

    @property
    def macs(self) -> int | None:
        """Multiply-accumulates per inference, the sum over ``ops``."""
        return None if self.ops is None else sum(o.macs for o in self.ops)

    @property
    def proven(self) -> bool:
        """Nothing smaller exists: the planner proved it, or it sits at the lower bound."""
        if self.unknown_scratch:  # the plan omits bytes arena cannot size: nothing is proven
            return False
        return bool(self.optimal) or self.status == "proven" or self.arena_size <= self.lower_bound

    def to_json(self) -> dict[str, Any]:
        """The report's ``models`` entry: head/tail only for runtime tflm, regions only for a split
        plan, the weights' region only when they are copied to RAM, MACs when they were counted."""
        return {"name": self.name, "planner": self.planner, "arena_size": self.arena_size,
                "lower_bound": self.lower_bound, "optimal": self.optimal, "status": self.status, "base": self.base,
                "plan": self.plan, "model": self.model, "model_sha256": self.model_sha256,
                "weights_bytes": self.weights_bytes, "table_bytes": self.table_bytes,
                **({"head": self.head, "tail": self.tail} if self.head is not None else {}),
                **({"regions": dict(self.regions)} if self.regions else {}),
                **({"weights_region": self.weights_region, "weights_ram": self.weights_ram}
                   if self.weights_region != "flash" else {}),
                **({"caller_io": self.caller_io} if self.caller_io else {}),
                **({"macs": self.macs, "ops": [o.to_json() for o in self.ops]} if self.ops is not None else {}),
                **({"unknown_scratch": list(self.unknown_scratch)} if self.unknown_scratch else {}),
                **({"patches": dict(zip(("stages", "untiled_arena", "macs_untiled", "macs"), self.patches))}
                   if self.patches is not None else {})}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> ModelUse:
        """From a ``models`` entry the report schema has checked."""
        return cls(name=str(doc["name"]), planner=str(doc["planner"]), arena_size=int(doc["arena_size"]),
                   lower_bound=int(doc["lower_bound"]), optimal=doc["optimal"], status=str(doc["status"]),
                   base=int(doc["base"]), plan=str(doc["plan"]), model=str(doc["model"]),
                   model_sha256=str(doc["model_sha256"]), weights_bytes=int(doc["weights_bytes"]),
                   table_bytes=int(doc.get("table_bytes", 0)),
                   head=doc.get("head"), tail=doc.get("tail"),
                   regions=tuple((str(k), int(v)) for k, v in (doc.get("regions") or {}).items()),
                   weights_region=str(doc.get("weights_region", "flash")), weights_ram=int(doc.get("weights_ram", 0)),
                   caller_io=int(doc.get("caller_io", 0)),
                   unknown_scratch=tuple(str(x) for x in doc.get("unknown_scratch", ())),
                   ops=None if "ops" not in doc else tuple(OpMacs.from_json(o) for o in doc["ops"]),
                   patches=None if "patches" not in doc else (
                       str(doc["patches"]["stages"]), int(doc["patches"]["untiled_arena"]),
                       int(doc["patches"]["macs_untiled"]), int(doc["patches"]["macs"])))

@dataclasses.dataclass(frozen=True)
class BoardProblem:
    """Why a board does not build. ``message`` is the one line printed (``arena: <board>: ...``).

    kind: ram | flash (over: region, need, limit in bytes) | unsupported (model, op_index,
    node, op_type, why) | names (two models' generated C would define one name) | link | elf | tflm (TFLM's
    host interpreter disagrees with the plan) | model (a model could not be planned or measured: its error
    line). model: the model it is about, when one is.
    """

    kind: str
    message: str
    region: str | None = None
    need: int | None = None
    limit: int | None = None
    model: str | None = None
    op_index: int | None = None
    node: str | None = None
    op_type: str | None = None
    why: str | None = None

    @property
    def over_by(self) -> int | None:
        return None if self.need is None or self.limit is None else self.need - self.limit

    def to_json(self) -> dict[str, Any]:
        """The report's ``problems`` entry (every key, ``over_by`` derived)."""
        return {"kind": self.kind, "message": self.message, "region": self.region, "need": self.need,
                "limit": self.limit, "over_by": self.over_by, "model": self.model, "op_index": self.op_index,
                "node": self.node, "op_type": self.op_type, "why": self.why}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> BoardProblem:
        return cls(kind=str(doc["kind"]), message=str(doc["message"]), region=doc["region"], need=doc["need"],
                   limit=doc["limit"], model=doc["model"], op_index=doc["op_index"], node=doc["node"],
                   op_type=doc["op_type"], why=doc["why"])

@dataclasses.dataclass(frozen=True)
class Usage:
    """Bytes used of a memory (all RAM regions together, or the flash); source: plan | elf."""

    used: int
    total: int
    source: str

    @property
    def percent(self) -> float:
        """100 * used / total as the report holds it (rounded to 2 decimals)."""
        return round(100.0 * self.used / self.total, 2) if self.total else 100.0

    def to_json(self) -> dict[str, Any]:
        return {"used": self.used, "total": self.total, "percent": self.percent, "source": self.source}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Usage:
        return cls(int(doc["used"]), int(doc["total"]), str(doc["source"]))


@dataclasses.dataclass(frozen=True)
class BoardReport:
    """One board's report (schemas/report.schema.json) after the gate, the link or the ELF
    check. All sizes in bytes. ``region_*`` and ``reserve_*`` are the document's ``region`` and
    ``reserve`` objects; ``headroom``, ``percent``, ``over_by``, each percent of ram/flash,
    ``flash.weights`` and ``tflm_note`` are derived, not held.

    limit: min(budget, room beside the reserve); headroom = limit - arena_size;
    percent: 100 * arena_size / limit; status: see the module docstring; stage: planned
    (the gate's numbers) or linked (``with_elf``); ram/flash: what the board uses (before
    linking: arena + reserve, and the weights; linked: the ELF's sections).
    """

    board: str
    region: str
    region_origin: int
    region_length: int
    region_auto: bool
    sharing: str
    arena_size: int
    lower_bound: int
    alignment: int
    budget: int
    budget_spec: str
    limit: int
    reserve_stack: int
    reserve_heap: int
    warn_above: float | None
    models: tuple[ModelUse, ...]
    status: str
    warning: str | None
    runtime: str = "arena"
    ram: Usage = Usage(0, 0, "plan")
    flash: Usage = Usage(0, 0, "plan")
    problems: tuple[BoardProblem, ...] = ()
    regions: tuple[RegionUse, ...] = ()  # a split arena's regions, regions with copied weights, external flash used
    stage: str = "planned"
    arena_tool_version: str = __version__
    options: tuple[tuple[str, Any], ...] = ()  # the board options the manifest set (manifest_data.BoardOptions)
    code_bytes: int | None = None  # the runtime code the board links (emit.code_size), None: not counted
    fit: FitChoice | None = None  # a fit: search's choice and runners-up (BoardTarget.fit_choice); None: no search

    @property
    def headroom(self) -> int:
        return self.limit - self.arena_size

    @property
    def percent(self) -> float:
        """100 * arena_size / limit as the report holds it (rounded to 2 decimals)."""
        return round(100.0 * self.arena_size / self.limit, 2) if self.limit else 100.0

    @property
    def weights(self) -> int:
        """The models' weights in the internal flash (``flash.weights``): not those read in place
        from an external flash (``regions``' ``in_place``), which have a flash of their own."""
        outside = {r.name for r in self.regions if r.in_place}
        return sum(m.weights_bytes for m in self.models if m.weights_region not in outside)

    @property
    def tables(self) -> int:
        """The models' generated tables besides their weights (``flash.tables``)."""
        return sum(m.table_bytes for m in self.models)

    @property
    def bases(self) -> list[tuple[str, int]]:
        return [(m.name, m.base) for m in self.models]

    @property
    def passed(self) -> bool:
        return self.status in ("ok", "warn")

    def to_json(self) -> dict[str, Any]:
        """The report document, key order included; optional keys (``options``, ``tflm_note``,
        ``regions``) present exactly when they apply."""
        return {
            "format_version": FORMAT_VERSION,
            "arena_tool_version": self.arena_tool_version,
            "board": self.board,
            "status": self.status,
            "stage": self.stage,
            "runtime": self.runtime,
            **({"options": dict(self.options)} if self.options else {}),
            "problems": [p.to_json() for p in self.problems],
            "region": {"name": self.region, "origin": self.region_origin, "length": self.region_length,
                       "auto": self.region_auto},
            "sharing": self.sharing,
            "arena_size": self.arena_size,
            "lower_bound": self.lower_bound,
            "alignment": self.alignment,
            "budget": self.budget,
            "budget_spec": self.budget_spec,
            "limit": self.limit,
            "headroom": self.headroom,
            "percent": self.percent,
            "reserve": {"stack": self.reserve_stack, "heap": self.reserve_heap},
            "warn_above": self.warn_above,
            "warning": self.warning,
            "ram": self.ram.to_json(),
            "flash": dict(self.flash.to_json(), weights=self.weights, tables=self.tables, code=self.code_bytes),
            "models": [m.to_json() for m in self.models],
            **({"tflm_note": TFLM_NOTE} if self.runtime == "tflm" else {}),
            **({"regions": [u.to_json() for u in self.regions]} if self.regions else {}),
            **({"fit": self.fit.to_doc()} if self.fit is not None else {}),
        }

    @classmethod
    def from_json(cls, doc: Mapping[str, Any], path: str = "<report>") -> BoardReport:
        """The report in ``doc``, once it is valid against the schema (else ArenaError naming ``path``)."""
        check_json(doc, "report", path)
        region, reserve = doc["region"], doc["reserve"]
        return cls(
            board=str(doc["board"]), region=str(region["name"]), region_origin=int(region["origin"]),
            region_length=int(region["length"]), region_auto=bool(region["auto"]), sharing=str(doc["sharing"]),
            arena_size=int(doc["arena_size"]), lower_bound=int(doc["lower_bound"]), alignment=int(doc["alignment"]),
            budget=int(doc["budget"]), budget_spec=str(doc["budget_spec"]), limit=int(doc["limit"]),
            reserve_stack=int(reserve["stack"]), reserve_heap=int(reserve["heap"]), warn_above=doc["warn_above"],
            models=tuple(ModelUse.from_json(m) for m in doc["models"]), status=str(doc["status"]),
            warning=doc["warning"], runtime=str(doc["runtime"]), ram=Usage.from_json(doc["ram"]),
            flash=Usage.from_json(doc["flash"]), problems=tuple(BoardProblem.from_json(p) for p in doc["problems"]),
            regions=tuple(RegionUse.from_json(r) for r in doc.get("regions") or ()),
            stage=str(doc["stage"]), arena_tool_version=str(doc["arena_tool_version"]),
            options=tuple(doc.get("options", {}).items()), code_bytes=doc["flash"].get("code"),
            fit=FitChoice.from_doc(doc["fit"]) if "fit" in doc else None)


def tflm_arena_size(head: int, tail: int) -> int:
    """TFLM's tensor_arena for a planned head and a measured persistent tail: their sum, rounded up to 16."""
    return align_up(head + tail, TFLM_ALIGNMENT)

def status_of(problems: Sequence[BoardProblem], warned: bool) -> str:
    """over before unsupported before error; else warn or ok."""
    kinds = {p.kind for p in problems}
    if kinds & {"ram", "flash"}:
        return "over"
    if "unsupported" in kinds:
        return "unsupported"
    if kinds:
        return "error"
    return "warn" if warned else "ok"

def failure(rep: BoardReport) -> CheckFailed | None:
    """The CheckFailed of a board that did not pass (one line per problem), or None; exit
    status 1, but 2 for a link that failed for another reason than a region's size (status
    error: a source or a flag the linker refused)."""
    lines = [p.message for p in rep.problems]
    if not lines:
        return None
    refused = rep.status == "error" and any(p.kind == "link" for p in rep.problems)
    return CheckFailed("\n".join(lines), exit_code=EXIT_USAGE if refused else EXIT_CHECK_FAILED)

def with_problem(rep: BoardReport, problem: BoardProblem) -> BoardReport:
    """The report after a later stage failed (link, ELF check): the problem added, the status updated."""
    problems = rep.problems + (problem,)
    return dataclasses.replace(rep, problems=problems, status=status_of(problems, rep.status == "warn"), warning=None)

def with_elf(rep: BoardReport, ram_used: int, flash_used: int, flash_name: str = "FLASH") -> BoardReport:
    """The linked report: RAM and flash as the ELF's sections take them; over the flash -> status over."""
    total = rep.flash.total
    out = dataclasses.replace(rep, stage="linked", ram=Usage(ram_used, rep.ram.total, "elf"),
                              flash=Usage(flash_used, total, "elf"))
    if total and flash_used > total:
        out = with_problem(out, BoardProblem(
            "flash", f"arena: {rep.board}: the firmware takes {fmt_bytes(flash_used)} of flash, {flash_name} has "
            f"{fmt_bytes(total)} (over by {fmt_bytes(flash_used - total)})",
            region=flash_name, need=flash_used, limit=total))
    return out

def dumps(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=1) + "\n"

def write(path: str, rep: BoardReport) -> None:
    """Schema-check, then write atomically."""
    doc = rep.to_json()
    check_json(doc, "report", path)
    write_atomic(path, dumps(doc))

def read(path: str) -> BoardReport:
    """The report at ``path``, checked against the schema (one ArenaError naming the file if not)."""
    return BoardReport.from_json(read_json(path, "report", "build the board first (scons board=NAME)"), path)


# ---------------------------------------------------------------- as text


def bar(percent: float, width: int = 10) -> str:
    """'[=====     ]' for 48.2 (rounded to the nearest cell, '>' past 100%)."""
    filled = min(width, max(0, round(percent * width / 100.0)))
    return "[" + "=" * filled + " " * (width - filled) + ("]" if percent <= 100.0 else ">")

def usage_line(label: str, used: int, total: int) -> str:
    """PlatformIO's line: 'RAM:   [===       ]  31.2% (used 20,480 bytes from 65,536 bytes)'."""
    pct = 100.0 * used / total if total else 100.0
    return f"{label + ':':<6} {bar(pct)} {pct:5.1f}% (used {used:,} bytes from {total:,} bytes)"

def usage_lines(rep: BoardReport) -> list[str]:
    """The RAM and Flash lines of a report; before linking they say what they count."""
    lines = [usage_line("RAM", rep.ram.used, rep.ram.total), usage_line("Flash", rep.flash.used, rep.flash.total)]
    if rep.stage != "linked":
        lines[0] += " [arena + stack/heap reserve, before linking]"
        lines[1] += f" [{flash_parts(rep)}, before linking]"
    return lines

def flash_parts(rep: BoardReport) -> str:
    """What the gate counts in the flash before the link: weights, tables and runtime code."""
    code = "runtime code not counted" if rep.code_bytes is None else f"runtime code {rep.code_bytes:,}"
    return f"weights {rep.weights:,} + tables {rep.tables:,} + {code}"


def summary(reps: Sequence[BoardReport]) -> str:
    """The end-of-build table: one block per board."""
    lines: list[str] = []
    for d in reps:
        region = d.region + (" (auto)" if d.region_auto else "")
        split = [r.name for r in d.regions if (r.arena_section or ".arena") != ".arena"]
        if split:
            region = "a split arena over " + "+".join(split)
        per_region = ": " in d.budget_spec  # budget: {DTCM: 60K, SRAM1: 90%}
        budget = (d.budget_spec if per_region else f"{d.budget_spec} of each region") if split else \
            f"{fmt_bytes(d.budget)} ({d.budget_spec})"
        if not split and d.limit < d.budget:  # the gate's limit, not the budget, is what the arena must fit
            held = d.region_length - d.limit
            budget += (f", limit {fmt_bytes(d.limit)}: {d.region}'s {fmt_bytes(d.region_length)}"
                       + (f" less the {fmt_bytes(held)} stack+heap reserve" if held > 0 else ""))
        lines.append(f"arena: {d.board}: {d.sharing} in {region}, budget {budget}"
                     + ("" if d.runtime == "arena" else f", runtime {d.runtime}"))
        rows = [("model", "planner", "arena", "lower bound", "base")]
        for m in d.models:
            rows.append((m.name, m.planner, fmt_bytes(m.arena_size), fmt_bytes(m.lower_bound), fmt_bytes(m.base)))
        widths = [max(len(r[c]) for r in rows) for c in range(5)]
        for j, r in enumerate(rows):
            cells = [r[0].ljust(widths[0]), r[1].ljust(widths[1])] + [r[c].rjust(widths[c]) for c in (2, 3, 4)]
            lines.append("  " + "  ".join(cells))
        room = "headroom" if d.headroom >= 0 else "over by"
        lines.append(f"  arena {fmt_bytes(d.arena_size)}, lower bound {fmt_bytes(d.lower_bound)}, "
                     f"{room} {fmt_bytes(abs(d.headroom))}  {'+'.join(split) or d.region} {bar(d.percent)} "
                     f"{d.percent:.1f}%" + ("  WARNING" if d.status == "warn" else ""))
        lines += summary_lines(d)
        lines += fit_lines(d.fit)
        callers = [m for m in d.models if m.caller_io]
        if callers:
            lines.append("  caller-owned I/O (the application's buffers, outside the arena and its budget): "
                         + ", ".join(f"{m.name} {fmt_bytes(m.caller_io)}" for m in callers))
        for m in d.models:
            if m.unknown_scratch:
                lines.append(f"  {m.name}: the plan omits the kernel scratch of {', '.join(m.unknown_scratch)}, "
                             f"which arena cannot size: its head is measured on the host (reference kernels; CMSIS-NN's can "
                             f"be larger, leave headroom)")
        lines += ["  " + ln for ln in usage_lines(d)]
        if d.stage == "linked" and d.runtime != "tflm":  # before the link the Flash line already splits it
            lines.append(f"  flash counted before the link: {flash_parts(d)} bytes")
        if d.runtime == "tflm":
            lines += [f"  tflm {m.name}: tensor_arena {fmt_bytes(m.arena_size)} = head {fmt_bytes(m.head)}"
                      f" + tail {fmt_bytes(m.tail or 0)}" for m in d.models if m.head is not None]
            lines.append("  note: " + TFLM_NOTE)
        if not d.passed:
            n = len(d.problems)
            lines.append(f"  FAILED: {d.status} ({n} problem{'s' if n != 1 else ''}; arena_report.json lists them)")
    failed = [d for d in reps if not d.passed]
    if len(reps) > 1:  # a product line: every board's outcome on one line
        passed = [d.board for d in reps if d.passed]
        lines.append(f"arena: {len(reps)} boards: {len(passed)} passed"
                     + (f" ({', '.join(passed)})" if passed and failed else "")
                     + (f", {len(failed)} failed ({', '.join(f'{d.board}: {d.status}' for d in failed)})"
                        if failed else ""))
    return "\n".join(lines)


def fit_config_text(c: FitConfig) -> str:
    """One configuration of a fit: search, as the reports say it: what it sets and its three costs."""
    flash = "not linked" if c.flash is None else f"flash {fmt_bytes(c.flash)}"
    return (f"{c.label}, optimize {c.optimize}: RAM {fmt_bytes(c.ram)}, {flash}, {c.instructions:,} instructions "
            "(cost model)")


def fit_lines(fit: FitChoice | None) -> list[str]:
    """The summary's lines of a fit: search: the pick, then each runner-up and why it lost."""
    if fit is None:
        return []
    head = f"  fit ({fit.objective}, {fit.weighed} configurations weighed): "
    out = [head + ("nothing fits" if fit.pick is None else "picked " + fit_config_text(fit.pick))]
    return out + [f"    runner-up: {fit_config_text(r)}: {r.why}" for r in fit.runners_up]


def summary_lines(rep: BoardReport) -> list[str]:
    """Per region: arena and weights against its limit, for ``summary``."""
    out = []
    for r in rep.regions:
        pct = 100.0 * r.used / r.limit if r.limit else 100.0
        what = ([f"arena {fmt_bytes(r.arena)}"] if r.arena_section else []) + (
            [f"weights {fmt_bytes(r.weights)}"] if r.weights else [])
        out.append(f"  {r.name}: {' + '.join(what)} of {fmt_bytes(r.limit)}  {bar(pct)} {pct:.1f}%")
    return out
