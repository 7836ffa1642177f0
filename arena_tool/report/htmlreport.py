"""The build report for people: ``build/<board>/arena_report.html`` and ``arena_report.md``.

Both are views of the one report ``arena_report.json`` holds (``board_report.BoardReport``: the gate's,
``with_elf``, ``with_problem``), so every number in them is that document's, or the plan
file's it names: per model the planner, arena size, lower bound, gap, region, budget,
headroom, the peak op and what is live there (``explain``: an alias group counted once),
the largest buffers and the layout picture (``plot.svg``, when that module is there);
per board every RAM region and the flash with what occupies them. Before linking that is
the arena (in its region) and the stack/heap reserve (in the data region), and the weights
in flash; linked, it is the ELF's allocated sections (``runreport.elf_sizes``), placed in
the region holding their address, the ``.data`` load image in flash. Either way the
occupants of the RAM regions add up to the report's ``ram.used`` and those of the flash
to ``flash.used``.

Invariants: the HTML is one self-contained file (inline CSS, inline SVG, no script, no
external resource; a Content-Security-Policy forbids both); every string that comes from a
model, a board or a problem message is escaped (``html.escape``; in Markdown also its
table and emphasis characters), since tensor names are hostile input; the same inputs
give the same bytes (no times, no absolute paths, every list in document order or sorted).
``build`` and the renderers are pure; ``write`` does the reading and the atomic writing.
"""

from __future__ import annotations

import dataclasses
import html
import json
import os
import re
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Sequence

from arena_tool.core.problem import elide, elide_apart
from arena_tool.target.boards import reserve_bytes
from arena_tool.core.errors import ArenaError
from arena_tool.core.files import write_atomic
from arena_tool.plan.planfile import PlanFile
from arena_tool.report import timeline
from arena_tool.run.runreport import elf_sizes
from arena_tool.builder.board_report import TFLM_NOTE

if TYPE_CHECKING:
    from arena_tool.plan.planfile import PlanFile
    from arena_tool.builder.board_report import ModelUse, BoardReport, Usage
    from arena_tool.target.manifest_data import FitChoice
    from arena_tool.run.runreport import Section

HTML_NAME = "arena_report.html"
MD_NAME = "arena_report.md"
BAR_WIDTH = 640  # px, one region's bar in the memory picture

Picture = Callable[[Sequence[tuple[str, "PlanFile"]]], str]


# ---------------------------------------------------------------- the view


@dataclasses.dataclass(frozen=True)
class Region:
    """One memory region of the board: origin and length in bytes; kind ram | flash."""

    name: str
    origin: int
    length: int
    kind: str

    def holds(self, addr: int) -> bool:
        return self.origin <= addr < self.origin + self.length


@dataclasses.dataclass(frozen=True)
class Memory:
    """The board's memory map: its RAM regions (file order), its flash, where .data/stack go."""

    ram: tuple[Region, ...]
    flash: Region
    data_region: str
    external: tuple[Region, ...] = ()  # external flash (weights: QSPI reads its weights there in place)

    @classmethod
    def of_board(cls, board: Any) -> "Memory":
        """From a loaded board (``boards.Board``; a manifest_data.BoardTarget's ``board``)."""
        return cls(tuple(Region(r.name, r.origin, r.length, "ram") for r in board.ram),
                   Region(board.flash.name, board.flash.origin, board.flash.length, "flash"), board.data_region,
                   tuple(Region(f.name, f.origin, f.length, "flash") for f in board.external_flash))


@dataclasses.dataclass(frozen=True)
class Occupant:
    """Something that takes bytes of a region: kind picks its colour (arena, reserve, data, code, const)."""

    name: str
    size: int
    kind: str
    what: str


@dataclasses.dataclass(frozen=True)
class RegionUse:
    region: Region
    occupants: tuple[Occupant, ...]
    holds_arena: bool = False

    @property
    def used(self) -> int:
        return sum(o.size for o in self.occupants)


@dataclasses.dataclass(frozen=True)
class BufferRow:
    """One alias group (explain's row): its root's name and size (bytes), live over ops first..last."""

    name: str
    size: int
    kind: str
    dtype: str
    first_op: int
    last_op: int
    members: tuple[str, ...]
    share: float | None = None  # percent of the peak, for the rows live there


@dataclasses.dataclass(frozen=True)
class Peak:
    """Where the model needs its lower bound: op index, name and type, live bytes (= lower bound)."""

    op: int
    name: str
    op_type: str
    bytes: int
    live: tuple[BufferRow, ...]
    largest: tuple[BufferRow, ...]


@dataclasses.dataclass(frozen=True)
class ModelView:
    """One model of the board: its report entry (``use``) and what the plan adds. Bytes
    throughout; gap = arena_size - lower_bound.

    headroom: limit - arena_size for sequential models (each alone in the arena); the board's
    headroom for concurrent ones (their slices share the budget). peak/picture: None with a
    note saying why (no plan file, or explain refused it).
    """

    use: ModelUse
    headroom: int
    peak: Peak | None
    picture: str | None
    notes: tuple[str, ...]

    @property
    def gap(self) -> int:
        return self.use.arena_size - self.use.lower_bound


@dataclasses.dataclass(frozen=True)
class BoardView:
    """One board's report as shown: the document's numbers (bytes, percent) plus the plans' detail."""

    board: str
    status: str
    stage: str
    runtime: str
    version: str
    sharing: str
    region: str
    region_auto: bool
    budget: int
    budget_spec: str
    limit: int
    arena_size: int
    lower_bound: int
    headroom: int
    percent: float
    reserve_stack: int
    reserve_heap: int
    ram: Usage
    flash: Usage
    weights: int
    tables: int  # the models' generated tables besides the weights (flash.tables)
    code: int | None  # the runtime code the board links (flash.code), None: not counted
    problems: tuple[tuple[str, str], ...]  # (kind, message)
    warning: str | None
    note: str | None
    models: tuple[ModelView, ...]
    regions: tuple[RegionUse, ...]
    measured: bool  # regions from the linked ELF's sections (else from the plan)
    picture_note: str | None
    options: tuple[tuple[str, Any], ...] = ()  # the board options the manifest set, by name
    split: tuple[tuple[str, int, int], ...] = ()  # a split arena: (region, arena + weights there, its limit)
    fit: FitChoice | None = None  # a fit: search's choice and runners-up (the report's ``fit``)

    @property
    def passed(self) -> bool:
        return self.status in ("ok", "warn")


# ---------------------------------------------------------------- building it


def _rows(rows: Iterable[Mapping[str, Any]]) -> tuple[BufferRow, ...]:
    return tuple(BufferRow(r["name"], r["size"], r["kind"], r["dtype"], r["first_op"], r["last_op"],
                           tuple(r["members"]), r.get("share")) for r in rows)


def peak_of(plan: PlanFile) -> Peak:
    """explain's peak, live set and largest buffers of a plan (timeline.peak: no planner runs)."""
    r = timeline.peak(plan)
    return Peak(r.op, r.name, r.op_type, r.bytes, _rows(r.live_at_peak), _rows(r.largest))


def _model(m: ModelUse, rep: BoardReport, plan: PlanFile | str, picture: Picture | None) -> ModelView:
    """plan: the model's plan file, or why there is none."""
    notes: list[str] = []
    peak = svg = None
    if isinstance(plan, str):
        notes.append(f"plan file {m.plan} {plan}: no peak, buffers or picture")
    else:
        if m.head is None and plan.arena_size != m.arena_size:
            notes.append(f"plan file {m.plan} says arena_size {plan.arena_size}, not the report's "
                         f"{m.arena_size:,} B: it changed after this report (rebuild)")
        try:
            peak = peak_of(plan)
        except ArenaError as e:  # explain refuses a plan whose peak is not its lower bound
            notes.append(f"explain: {e.msg}")
        if picture is not None:
            svg = inline_svg(picture([(m.name, plan)]), f"m-{m.name}-")
    if m.head is not None:
        notes.append(f"the plan is TFLM's head ({m.head:,} B); arena_size adds TFLM's persistent "
                     f"tail ({m.tail or 0:,} B), rounded up to 16")
    headroom = rep.limit - m.arena_size if rep.sharing == "sequential" else rep.headroom
    return ModelView(m, headroom, peak, svg, tuple(notes))


def inline_svg(svg: str, prefix: str) -> str:
    """An SVG document as an element of the page: its XML prolog dropped, and every id (and each
    ``#id`` reference) prefixed, since two pictures share matplotlib's ids (axes_1, clip paths)."""
    start = svg.find("<svg")
    body = svg[start:] if start >= 0 else svg
    body = re.sub(r'(?<=\s)id="', f'id="{prefix}', body)
    return re.sub(r'(url\(#|href="#)', lambda m: m.group(1) + prefix, body)


# (part of a section's name, kind, what it holds): the first match names a section.
_SECTION_KINDS = (("arena", "arena", "the arena"), ("weights", "const", "model weights copied here at startup"),
                  ("init_array", "const", "constructor pointers"), ("fini_array", "const", "destructor pointers"),
                  ("heap", "reserve", "stack and heap reserve"),
                  ("stack", "reserve", "stack and heap reserve"), ("rodata", "const", "constants (weights, tables)"),
                  ("bss", "data", "zero-initialised variables"), ("data", "data", "initialised variables"),
                  ("isr", "code", "vector table"), ("vector", "code", "vector table"), ("text", "code", "code"))


def section_kind(name: str) -> tuple[str, str]:
    """(kind, what) of an ELF section by its name; unknown ones are kind 'other'."""
    low = name.lower()
    return next(((kind, what) for part, kind, what in _SECTION_KINDS if part in low), ("other", ""))


def _elf_uses(memory: Memory, sections: Sequence["Section"], models: str,
              copied: Mapping[str, str] | None = None) -> tuple[RegionUse, ...]:
    """Each section in the region holding its address (RAM), the ones with contents in the flash
    (a writable one at a flash address, such as .init_array, only there). copied: a
    ``.weights_<region>`` section -> the models whose weights it holds."""
    ram: dict[str, list[Occupant]] = {r.name: [] for r in memory.ram}
    outside: dict[str, list[Occupant]] = {r.name: [] for r in memory.external}
    flash: list[Occupant] = []
    stray: list[Occupant] = []
    for s in sorted(sections, key=lambda s: (s.addr, s.name)):
        kind, what = section_kind(s.name)
        if kind == "arena":
            what = f"the arena ({models})"
        chip = next((r for r in memory.external if r.holds(s.addr)), None)
        if chip is not None:  # weights read in place from an external flash
            outside[chip.name].append(Occupant(s.name, s.size, "const", f"the weights of {(copied or {}).get(s.name, '')}, "
                                               "read here in place"))
            continue
        if s.name in (copied or {}):
            what = f"the weights of {(copied or {})[s.name]}, copied here at startup"
        if s.ram and s.flash and memory.flash.holds(s.addr):
            flash.append(Occupant(s.name, s.size, kind, what))  # runs from flash: no RAM taken
            continue
        if s.ram:
            home = next((r for r in memory.ram if r.holds(s.addr)), None)
            (ram[home.name] if home else stray).append(Occupant(s.name, s.size, kind, what))
        if s.flash:
            load = s.ram  # writable with contents: its initial values sit in flash
            flash.append(Occupant(s.name + (" (load image)" if load else ""), s.size, kind,
                                  "initial values of " + s.name if load else what))
    out = [RegionUse(r, tuple(ram[r.name]), any(o.kind == "arena" for o in ram[r.name])) for r in memory.ram]
    if stray:
        out.append(RegionUse(Region("(outside every RAM region)", 0, sum(o.size for o in stray), "ram"), tuple(stray)))
    return tuple(out) + (RegionUse(memory.flash, tuple(flash)),) + tuple(
        RegionUse(r, tuple(outside[r.name])) for r in memory.external if outside[r.name])


def _plan_uses(memory: Memory, rep: BoardReport, models: str, copied: Mapping[str, str]) -> tuple[RegionUse, ...]:
    """Before linking: the arena in its region (a split arena's part in each of its regions), the
    weights copied to a RAM region, the stack/heap reserve in the data region, the weights."""
    out = []
    per = {u.name: u for u in rep.regions}
    split = _split(rep)
    for r in memory.ram:
        occ = []
        u = per.get(r.name)
        if split and u is not None and u.arena_section:
            occ.append(Occupant(u.arena_section, u.arena, "arena", f"the arena's part in {r.name} ({models})"))
        elif not split and r.name == rep.region:
            occ.append(Occupant("arena", rep.arena_size, "arena", f"the arena ({models})"))
        if u is not None and u.weights_section and u.weights:
            occ.append(Occupant(u.weights_section, u.weights, "const",
                                f"the weights of {copied.get(u.weights_section, '')}, copied here at startup"))
        if r.name == memory.data_region:
            occ.append(Occupant("stack + heap reserve", reserve_bytes(rep.reserve_stack, rep.reserve_heap), "reserve",
                                f"stack {rep.reserve_stack:,} B, heap {rep.reserve_heap:,} B"))
        out.append(RegionUse(r, tuple(occ), any(o.kind == "arena" for o in occ)))
    chips = {u.name for u in rep.regions if u.in_place}
    weights = tuple(Occupant(f"weights: {m.name}", m.weights_bytes, "const",
                             "the planned .tflite (C array)" if m.head is not None else "the model's weights")
                    for m in rep.models if m.weights_region not in chips)
    tables = tuple(Occupant(f"tables: {m.name}", m.table_bytes, "const", "the model's generated tables")
                   for m in rep.models if m.table_bytes)
    code = (Occupant("runtime code", rep.code_bytes, "code", "the kernels and dispatch the board links"),) \
        if rep.code_bytes else ()
    external = tuple(RegionUse(r, tuple(Occupant(f"weights: {m.name}", m.weights_bytes, "const",
                                                 "the model's weights, read here in place")
                                        for m in rep.models if m.weights_region == r.name))
                     for r in memory.external if r.name in chips)
    return tuple(out) + (RegionUse(memory.flash, weights + tables + code),) + external


def build(rep: BoardReport, plans: Mapping[str, PlanFile | str], memory: Memory,
          sections: Sequence["Section"] | None = None, picture: Picture | None = None) -> BoardView:
    """The view of one report. plans: model name -> its plan file, or why there is none (missing: not found);
    sections: the linked ELF's allocated sections (runreport.Section), for a ``linked`` report;
    picture: plot.svg, or None."""
    who = "+".join(m.name for m in rep.models)
    models = f"{'shared by' if rep.sharing == 'sequential' else 'slices of'} {who}"
    linked = sections is not None and rep.stage == "linked"
    copied = {u.weights_section: "+".join(m.name for m in rep.models if m.weights_region == u.name)
              for u in rep.regions if u.weights_section}
    regions = _elf_uses(memory, sections or (), models, copied) if linked else _plan_uses(memory, rep, models, copied)
    return BoardView(
        board=rep.board, status=rep.status, stage=rep.stage, runtime=rep.runtime,
        version=rep.arena_tool_version, sharing=rep.sharing, region=rep.region,
        region_auto=rep.region_auto, budget=rep.budget, budget_spec=rep.budget_spec, limit=rep.limit,
        arena_size=rep.arena_size, lower_bound=rep.lower_bound, headroom=rep.headroom,
        percent=rep.percent, reserve_stack=rep.reserve_stack, reserve_heap=rep.reserve_heap,
        ram=rep.ram, flash=rep.flash, weights=rep.weights, tables=rep.tables, code=rep.code_bytes,
        problems=tuple((p.kind, p.message) for p in rep.problems), warning=rep.warning,
        note=TFLM_NOTE if rep.runtime == "tflm" else None,
        models=tuple(_model(m, rep, plans.get(m.name, "not found"), picture) for m in rep.models),
        regions=regions, measured=linked,
        picture_note=None if picture else "no layout pictures: arena_tool.report.plot (matplotlib) is not available",
        options=rep.options, split=tuple((u.name, u.used, u.limit) for u in rep.regions if _split(rep)),
        fit=rep.fit,
    )


def _split(rep: BoardReport) -> bool:
    """Whether the report's arena is split over regions (``.arena_<region>`` sections)."""
    return any(u.arena_section not in (None, ".arena") for u in rep.regions)


# ---------------------------------------------------------------- shared wording


def _num(n: int) -> str:
    return f"{n:,}"


def _room(headroom: int) -> str:
    """The report's headroom (negative over the limit), and by how much it is over."""
    return f"{_num(headroom)} B" + (f" (over by {_num(-headroom)} B)" if headroom < 0 else "")


def _verdict(v: BoardView) -> str:
    """The one sentence at the top: passed, or what stopped the build."""
    if v.passed and v.split:
        return (f"passed the gate ({v.status}): a split arena of {_num(v.arena_size)} B, each region within its "
                "limit: " + ", ".join(f"{name} {_num(used)} B of {_num(limit)} B" for name, used, limit in v.split))
    if v.passed:
        return (f"passed the gate ({v.status}): arena {_num(v.arena_size)} B of the {_num(v.limit)} B limit in "
                f"{v.region}, {v.percent:.2f} %")
    n = len(v.problems)
    return f"FAILED: {v.status}, the build stopped ({n} problem{'s' if n != 1 else ''} below)"


def _board_rows(v: BoardView) -> list[tuple[str, str, str]]:
    """(label, key, value) of the board table; key names the report field (data-key in the HTML)."""
    return [
        ("region", "region", v.region + (" (auto)" if v.region_auto else "")),
        ("sharing", "sharing", v.sharing),
        ("budget", "budget", f"{_num(v.budget)} B ({v.budget_spec})"),
        ("limit", "limit", f"{_num(v.limit)} B" + (" (" + " + ".join(f"{name} {_num(limit)} B" for name, _, limit
                                                                   in v.split) + ")" if v.split else "")),
        ("arena", "arena_size", f"{_num(v.arena_size)} B"),
        ("lower bound", "lower_bound", f"{_num(v.lower_bound)} B"),
        ("headroom", "headroom", _room(v.headroom)),
        ("of the limit", "percent", f"{v.percent:.2f} %"),
        ("stack + heap reserve", "reserve", f"{_num(v.reserve_stack)} B + {_num(v.reserve_heap)} B"),
        ("RAM used", "ram.used", f"{_num(v.ram.used)} B of {_num(v.ram.total)} B ({v.ram.percent:.2f} %, "
                                 f"{_source(v.ram.source, 'ram')})"),
        ("flash used", "flash.used", f"{_num(v.flash.used)} B of {_num(v.flash.total)} B "
                                     f"({v.flash.percent:.2f} %, {_source(v.flash.source, 'flash')})"),
        ("weights", "flash.weights", f"{_num(v.weights)} B"),
        ("tables", "flash.tables", f"{_num(v.tables)} B"),
        ("runtime code", "flash.code", "not counted" if v.code is None else f"{_num(v.code)} B"),
        ("runtime", "runtime", v.runtime),
        *((name, f"options.{name}", str(value)) for name, value in v.options),
        ("stage", "stage", v.stage),
    ]


_FIT_COLUMNS = ("", "configuration", "optimize", "RAM B", "flash B", "instructions (cost model)", "why it lost")
_FIT_KEYS = ("label", "optimize", "ram", "flash", "instructions", "why")


def _fit_note(fit: FitChoice) -> str:
    what = "nothing fits" if fit.pick is None else "the pick, the best by the objective and those ranked just " \
        "ahead of it, then the next that fit"
    return (f"fit: objective {fit.objective}, {_num(fit.weighed)} configurations weighed; {what} "
            "(RAM: arena + stack/heap reserve + caller-owned I/O from the plans; flash: the firmware linked "
            "for the board; instructions per inference from the per-op cost model)")


def _fit_rows(fit: FitChoice) -> tuple[list[list[str]], list[list[str | None]]]:
    """The fit table's cells and data-keys: the pick, then the runners-up."""
    rows: list[list[str]] = []
    keys: list[list[str | None]] = []
    shown = ([("pick", "fit.pick", fit.pick)] if fit.pick is not None else []) + [
        ("runner-up", f"fit.runners_up.{i}", r) for i, r in enumerate(fit.runners_up)]
    for role, key, c in shown:
        rows.append([role, c.label, c.optimize, _num(c.ram), "not linked" if c.flash is None else _num(c.flash),
                     _num(c.instructions), c.why])
        keys.append([None] + [f"{key}.{k}" for k in _FIT_KEYS])
    return rows, keys


def _source(source: str, what: str) -> str:
    if source == "elf":
        return "measured on the ELF"
    return "arena + stack/heap reserve, before linking" if what == "ram" else \
        "weights + tables + runtime code, before linking"


_MODEL_COLUMNS = ("model", "planner", "arena B", "lower bound B", "gap B", "base", "region", "budget B",
                  "headroom B", "status")
_MODEL_KEYS = ("name", "planner", "arena_size", "lower_bound", "gap", "base", "region", "budget", "headroom",
               "status")


def _model_cells(v: BoardView, m: ModelView) -> list[str]:
    u = m.use
    status = u.status or ("optimal" if u.optimal else "")
    return [u.name, u.planner, _num(u.arena_size), _num(u.lower_bound), _num(m.gap), _num(u.base), v.region,
            _num(v.budget), _num(m.headroom), status]


_BUFFER_COLUMNS = ("buffer", "aliases", "bytes", "share", "kind", "dtype", "ops")


def _buffer_cells(b: BufferRow, share: bool) -> list[str]:
    return [b.name, ", ".join(b.members), _num(b.size), f"{b.share:.1f} %" if share and b.share is not None else "",
            b.kind, b.dtype, f"{b.first_op}..{b.last_op}"]


_MACS_COLUMNS = ("op", "name", "type", "MACs", "share")


def _macs_rows(u: ModelUse) -> list[list[str]]:
    """MACs per op (arena_tool.model.macs), in the tables' op order, with each op's share of the total."""
    total = u.macs or 0
    return [[str(o.index), o.name, o.op_type, _num(o.macs), f"{100.0 * o.macs / total:.1f} %" if total else ""]
            for o in u.ops or ()]


def _peak_line(p: Peak, name: str | None = None) -> str:
    """The peak's sentence; ``name``: the op's name as shown (default the whole)."""
    shown = p.name if name is None else name
    return f"peak {_num(p.bytes)} B live at op {p.op} {shown} ({p.op_type}); an alias group counted once"


# ---------------------------------------------------------------- HTML


_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1d2329;background:#fff;
margin:24px auto;max-width:1100px;padding:0 16px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #d5dbe1}
h3{font-size:16px;margin:20px 0 6px}
table{border-collapse:collapse;margin:6px 0 12px}th,td{padding:3px 10px;border-bottom:1px solid #e4e8ec;
text-align:left;vertical-align:top}th{background:#f3f5f7;font-weight:600}td.n{text-align:right;
font-variant-numeric:tabular-nums}.kv th{width:190px}
.verdict{padding:10px 14px;border-radius:6px;font-weight:600;margin:10px 0}
.s-ok,.s-warn{background:#e5f4e8;color:#155724}.s-warn{background:#fff4d6;color:#6b4e00}
.s-over,.s-unsupported,.s-error{background:#fbe3e4;color:#8a1c22}
.problems li{margin:4px 0;font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12.5px;white-space:pre-wrap}
.meter{display:inline-block;width:200px;height:10px;background:#e4e8ec;border-radius:5px;vertical-align:middle;
overflow:hidden;margin-left:8px}.meter span{display:block;height:100%;background:#4c78a8}
.meter span.over{background:#d62728}
.note{color:#5a6570;font-size:13px}figure{margin:8px 0;overflow-x:auto}figure svg{max-width:100%;height:auto}
svg.mem text{font:11px system-ui,sans-serif;fill:#1d2329}.free{fill:#eef1f4;stroke:#c4ccd4}
.limit{stroke:#d62728;stroke-width:2}
.sw{display:inline-block;width:10px;height:10px;margin-right:6px;border-radius:2px}
.k-arena{fill:#4c78a8;background:#4c78a8}.k-reserve{fill:#f58518;background:#f58518}
.k-data{fill:#54a24b;background:#54a24b}.k-code{fill:#b279a2;background:#b279a2}
.k-const{fill:#e45756;background:#e45756}.k-other{fill:#9d755d;background:#9d755d}
""".strip()

_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _table(header: Sequence[str], rows: Iterable[Sequence[str]], numeric: set[int],
           keys: Sequence[Sequence[str | None]] | None = None, lead: Sequence[str] | None = None,
           names: Sequence[int] = ()) -> str:
    """A table; columns in ``numeric`` right-aligned; keys[r][c] becomes that cell's data-key;
    lead[r]: markup (ours, not escaped) put before row r's first cell text; a long cell of a
    column in ``names`` (tensor and op names) shows ``elide_apart``'s, the whole on hover."""
    out = ["<table><thead><tr>" + "".join(f"<th>{_e(h)}</th>" for h in header) + "</tr></thead><tbody>"]
    rows = [list(row) for row in rows]
    elided = {c: elide_apart([row[c] for row in rows]) for c in names}  # two names never read the same
    for r, row in enumerate(rows):
        cells = []
        for c, text in enumerate(row):
            key = keys[r][c] if keys else None
            attrs = (' class="n"' if c in numeric else "") + (f' data-key="{_e(key)}"' if key else "")
            pre = lead[r] if lead and c == 0 else ""
            shown = elided[c][r] if c in names else text
            if shown != text:
                attrs += f' title="{_e(text)}"'
            cells.append(f"<td{attrs}>{pre}{_e(shown)}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    return "".join(out) + "</tbody></table>"


def _meter(percent: float) -> str:
    width = max(0.0, min(100.0, percent))
    cls = ' class="over"' if percent > 100.0 else ""
    return f'<span class="meter"><span{cls} style="width:{width:.1f}%"></span></span>'


def _region_svg(u: RegionUse, limit: int | None) -> str:
    """The region as a bar to scale: each occupant in order, then what is free; a red line at
    ``limit`` bytes (the arena's limit, in the region that holds it)."""
    length = max(u.region.length, u.used, 1)
    h = 22
    x = 0.0
    parts = [f'<svg class="mem" xmlns="http://www.w3.org/2000/svg" width="{BAR_WIDTH}" height="{h + 2}" '
             f'viewBox="0 0 {BAR_WIDTH} {h + 2}" role="img" aria-label="{_e(u.region.name)}">',
             f'<rect class="free" x="0.5" y="0.5" width="{BAR_WIDTH - 1}" height="{h}"/>']
    for o in u.occupants:
        w = BAR_WIDTH * o.size / length
        if o.size:
            parts.append(f'<rect class="k-{o.kind}" x="{x:.2f}" y="1" width="{max(w, 1.0):.2f}" height="{h - 1}">'
                         f"<title>{_e(o.name)}: {_num(o.size)} B</title></rect>")
        x += w
    if limit is not None:
        lx = min(BAR_WIDTH - 1.0, BAR_WIDTH * limit / length)
        parts.append(f'<line class="limit" x1="{lx:.2f}" y1="0" x2="{lx:.2f}" y2="{h + 2}">'
                     f"<title>limit {_num(limit)} B</title></line>")
    return "".join(parts) + "</svg>"


def _memory_note(v: BoardView) -> str:
    if v.measured:
        return ("The linked ELF's allocated sections, each in the region holding its address; flash holds "
                "the sections with contents and the .data load image.")
    return ("Before linking (no ELF): the arena in its region, the stack/heap reserve in the data region, "
            "the weights in flash; .data, .bss and code are not counted yet.")


def _memory_html(v: BoardView) -> list[str]:
    out = ["<h2>Memory</h2>", f'<p class="note">{_e(_memory_note(v))}</p>']
    for u in v.regions:
        r = u.region
        title = (f"{r.kind.upper() if r.kind == 'ram' else 'Flash'} {r.name}: {_num(u.used)} B used of "
                 f"{_num(r.length)} B" + (" (holds the arena)" if u.holds_arena else ""))
        out.append(f'<h3 data-key="region.{_e(r.name)}.used" data-value="{u.used}">{_e(title)}</h3>')
        out.append(f'<p class="note">origin {r.origin:#010x}, length {_num(r.length)} B</p>')
        limits = {name: limit for name, _, limit in v.split}
        mark = limits.get(r.name, v.limit if not v.split else None) if u.holds_arena and not v.measured else None
        out.append(f"<figure>{_region_svg(u, mark)}</figure>")
        if u.occupants:
            rows = [[o.name, _num(o.size), f"{100.0 * o.size / r.length:.2f} %" if r.length else "", o.what]
                    for o in u.occupants]
            out.append(_table(("occupant", "bytes", "of the region", "what"), rows, {1, 2},
                              [[None, f"region.{r.name}.{o.name}", None, None] for o in u.occupants],
                              [f'<span class="sw k-{o.kind}"></span>' for o in u.occupants]))
    return out


def _model_html(v: BoardView, m: ModelView) -> list[str]:
    u = m.use
    k = f"model.{u.name}."
    rows = [("planner", "planner", u.planner + (" (proven optimal)" if u.optimal else "")),
            ("arena size", "arena_size", f"{_num(u.arena_size)} B"),
            ("lower bound", "lower_bound", f"{_num(u.lower_bound)} B"),
            ("gap", "gap", f"{_num(m.gap)} B" + (f" ({100.0 * m.gap / u.lower_bound:.2f} % above the lower bound)"
                                               if u.lower_bound else "")),
            ("base in the board arena", "base", _num(u.base)),
            ("region", "region", v.region), ("budget", "budget", f"{_num(v.budget)} B"),
            ("headroom", "headroom", _room(m.headroom)),
            ("weights", "weights_bytes", f"{_num(u.weights_bytes)} B"),
            ("tables", "table_bytes", f"{_num(u.table_bytes)} B (the generated C tables besides the weights)"),
            ("model", "model", u.model), ("plan", "plan", u.plan)]
    if u.caller_io:
        rows[2:2] = [("caller-owned I/O", "caller_io",
                      f"{_num(u.caller_io)} B (the application's buffers, outside the arena)")]
    if u.macs is not None:
        rows.append(("MACs per inference", "macs", _num(u.macs)))
    if u.patches is not None:  # patch-based inference: what the tiles save and what they recompute
        stages, untiled, macs0, macs1 = u.patches
        rows += [("patches (stages run tile by tile)", "patches.stages", stages),
                 ("arena without patches", "patches.untiled_arena", f"{_num(untiled)} B"),
                 ("MACs without patches", "patches.macs_untiled", _num(macs0)),
                 ("MACs with patches", "patches.macs", _num(macs1))]
    if u.head is not None:
        rows[2:2] = [("TFLM head (the plan)", "head", f"{_num(u.head)} B"),
                     ("TFLM persistent tail", "tail", f"{_num(u.tail or 0)} B")]
    out = [f'<section class="model" id="model-{_e(u.name)}"><h3>Model {_e(u.name)}</h3>',
           '<table class="kv"><tbody>' + "".join(
               f'<tr><th>{_e(label)}</th><td data-key="{_e(k + key)}">{_e(value)}</td></tr>'
               for label, key, value in rows) + "</tbody></table>"]
    out += [f'<p class="note">{_e(n)}</p>' for n in m.notes]
    if m.peak is not None:
        p = m.peak
        shown = elide(p.name)
        hover = f' title="{_e(p.name)}"' if shown != p.name else ""
        out.append(f'<p data-key="{_e(k)}peak" data-op="{p.op}" data-value="{p.bytes}"{hover}>'
                   f"<b>{_e(_peak_line(p, shown))}</b></p>")
        out.append("<h4>Live at the peak</h4>" + _buffer_table(p.live, True, k + "live."))
        out.append(f"<h4>Largest buffers (top {len(p.largest)})</h4>" + _buffer_table(p.largest, False, k + "largest."))
    if u.ops:
        out.append("<h4>MACs per op</h4>" + _table(_MACS_COLUMNS, _macs_rows(u), {0, 3, 4},
                                                    [[None, None, None, f"{k}ops.{o.index}.macs", None] for o in u.ops],
                                                    names=(1,)))
    if m.picture:
        out.append(f"<h4>Layout</h4><figure>{m.picture}</figure>")
    return out + ["</section>"]


def _buffer_table(rows: Sequence[BufferRow], share: bool, key: str) -> str:
    """A buffer table; ``share`` (percent of the peak) only for the rows live at the peak: the
    largest buffers' table has no such column (it was there, empty)."""
    keep = [c for c in range(len(_BUFFER_COLUMNS)) if share or _BUFFER_COLUMNS[c] != "share"]
    keys = [[f"{key}{i}.name", None, f"{key}{i}.size", None, None, None, None] for i in range(len(rows))]
    return _table([_BUFFER_COLUMNS[c] for c in keep], [[_buffer_cells(b, share)[c] for c in keep] for b in rows],
                  {2, 3} if share else {2}, [[k[c] for c in keep] for k in keys], names=(0, 1))


def render_html(v: BoardView) -> str:
    """The HTML page (see the module docstring for what it promises)."""
    status = f"s-{v.status}"
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">',
           f"<title>arena report: {_e(v.board)} ({_e(v.status)})</title><style>{_CSS}</style></head><body>",
           f'<h1>arena report: board {_e(v.board)}</h1>',
           f'<p class="note">arena-tool {_e(v.version)}; stage {_e(v.stage)}; runtime {_e(v.runtime)}; '
           f'the same numbers as arena_report.json</p>',
           f'<div class="verdict {status}" data-key="status" data-value="{_e(v.status)}">{_e(_verdict(v))}</div>']
    if v.problems:
        out.append('<h2>Problems</h2><ul class="problems">' + "".join(
            f'<li data-kind="{_e(kind)}">{_e(msg)}</li>' for kind, msg in v.problems) + "</ul>")
    if v.warning:
        out.append(f'<p class="verdict s-warn">{_e(v.warning)}</p>')
    out.append("<h2>Board</h2>")
    rows = "".join(f'<tr><th>{_e(label)}</th><td data-key="{_e(key)}">{_e(value)}'
                   + (_meter(v.percent) if key == "percent" else "") + "</td></tr>"
                   for label, key, value in _board_rows(v))
    out.append(f'<table class="kv"><tbody>{rows}</tbody></table>')
    if v.note:
        out.append(f'<p class="note">{_e(v.note)}</p>')
    if v.fit is not None:
        cells, keys = _fit_rows(v.fit)
        out += ["<h2>Fit</h2>", f'<p class="note">{_e(_fit_note(v.fit))}</p>',
                _table(_FIT_COLUMNS, cells, {3, 4, 5}, keys)]
    out += _memory_html(v)
    out.append("<h2>Models</h2>")
    out.append(_table(_MODEL_COLUMNS, [_model_cells(v, m) for m in v.models], {2, 3, 4, 5, 7, 8},
                      [[f"models.{m.use.name}.{c}" for c in _MODEL_KEYS] for m in v.models]))
    if v.picture_note:
        out.append(f'<p class="note">{_e(v.picture_note)}</p>')
    for m in v.models:
        out += _model_html(v, m)
    out.append("</body></html>")
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------- Markdown


# Backslash-escaped: what could start emphasis, code, a link, strike-through or end a cell; ``_``
# only at a word's edge (inside a word, as in greedy_size, it is plain text).
_MD_SPECIAL = re.compile(r"([\\`*\[\]|~]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9]))")


def md_escape(text: Any) -> str:
    """A string safe in a Markdown table cell: no raw HTML, no emphasis, links or cell breaks."""
    one_line = " ".join(str(text).split())
    return _MD_SPECIAL.sub(r"\\\1", html.escape(one_line, quote=False))


def _md_table(header: Sequence[str], rows: Iterable[Sequence[str]], numeric: set[int]) -> list[str]:
    out = ["| " + " | ".join(md_escape(h) for h in header) + " |",
           "|" + "|".join("---:" if i in numeric else "---" for i in range(len(header))) + "|"]
    return out + ["| " + " | ".join(md_escape(c) for c in row) + " |" for row in rows]


def _md_memory(v: BoardView) -> list[str]:
    out = ["", "## Memory", "", md_escape(_memory_note(v))]
    for u in v.regions:
        r = u.region
        out += ["", f"### {'RAM' if r.kind == 'ram' else 'Flash'} {md_escape(r.name)}: {_num(u.used)} B used of "
                    f"{_num(r.length)} B" + (" (holds the arena)" if u.holds_arena else ""), ""]
        if u.occupants:
            out += _md_table(("occupant", "bytes", "of the region", "what"),
                             [[o.name, _num(o.size), f"{100.0 * o.size / r.length:.2f} %" if r.length else "", o.what]
                              for o in u.occupants], {1, 2})
        else:
            out.append("(nothing of this build)")
    return out


def render_markdown(v: BoardView) -> str:
    """The Markdown report: the HTML's tables, without the pictures."""
    out = [f"# arena report: board {md_escape(v.board)}", "",
           f"arena-tool {md_escape(v.version)}; stage {md_escape(v.stage)}; runtime {md_escape(v.runtime)}; "
           "the same numbers as arena_report.json; pictures: arena_report.html", "",
           f"**{md_escape(_verdict(v))}**", ""]
    if v.problems:
        out += ["## Problems", ""] + [f"- {md_escape(kind)}: {md_escape(msg)}" for kind, msg in v.problems] + [""]
    if v.warning:
        out += [f"warning: {md_escape(v.warning)}", ""]
    out += ["## Board", ""] + _md_table(("", "value"), [(label, value) for label, _, value in _board_rows(v)], set())
    if v.note:
        out += ["", md_escape(v.note)]
    if v.fit is not None:
        out += ["", "## Fit", "", md_escape(_fit_note(v.fit)), ""] + _md_table(_FIT_COLUMNS, _fit_rows(v.fit)[0],
                                                                               {3, 4, 5})
    out += _md_memory(v)
    out += ["", "## Models", ""] + _md_table(_MODEL_COLUMNS, [_model_cells(v, m) for m in v.models],
                                             {2, 3, 4, 5, 7, 8})
    for m in v.models:
        out += ["", f"### Model {md_escape(m.use.name)}", ""]
        out += [f"- {md_escape(n)}" for n in m.notes]
        out.append(f"- model {md_escape(m.use.model)}, plan {md_escape(m.use.plan)}, "
                   f"weights {_num(m.use.weights_bytes)} B, tables {_num(m.use.table_bytes)} B"
                   + (f", {_num(m.use.macs)} MACs per inference" if m.use.macs is not None else ""))
        if m.use.caller_io:
            out.append(f"- caller-owned I/O {_num(m.use.caller_io)} B (the application's buffers, outside the arena)")
        if m.use.patches is not None:
            stages, untiled, macs0, macs1 = m.use.patches
            out.append(f"- patches {md_escape(stages)}: arena {_num(untiled)} B without, {_num(m.use.arena_size)} B "
                       f"with; MACs {_num(macs0)} without, {_num(macs1)} with (the halos recomputed)")
        if m.peak is not None:
            out += [f"- {md_escape(_peak_line(m.peak))}", "", "Live at the peak:", ""]
            out += _md_table(_BUFFER_COLUMNS, [_buffer_cells(b, True) for b in m.peak.live], {2, 3})
            out += ["", f"Largest buffers (top {len(m.peak.largest)}):", ""]
            out += _md_table(_BUFFER_COLUMNS, [_buffer_cells(b, False) for b in m.peak.largest], {2, 3})
        if m.use.ops:
            out += ["", "MACs per op:", ""] + _md_table(_MACS_COLUMNS, _macs_rows(m.use), {0, 3, 4})
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------- reading and writing


def _picture() -> Picture | None:
    try:
        from arena_tool.report import plot
    except ImportError:
        return None
    return getattr(plot, "svg", None)


def _plans(rep: BoardReport, root: str) -> dict[str, PlanFile | str]:
    """Each model's plan file, read from the path the report names, or why there is none."""
    out: dict[str, PlanFile | str] = {}
    for m in rep.models:
        path = os.path.join(root, m.plan)
        try:
            with open(path, encoding="utf-8") as f:
                out[m.name] = PlanFile.from_json(json.load(f), path)
        except (OSError, ValueError):
            out[m.name] = "not found"
        except ArenaError as e:
            out[m.name] = f"is not a plan file ({e.msg})"
    return out


def _sections(elf_path: str | None) -> tuple["Section", ...] | None:
    if elf_path is None:
        return None

    return elf_sizes(elf_path).sections


def paths(json_path: str) -> tuple[str, str]:
    """(arena_report.html, arena_report.md) beside a board's arena_report.json."""
    folder = os.path.dirname(json_path)
    return os.path.join(folder, HTML_NAME), os.path.join(folder, MD_NAME)


def write(json_path: str, rep: BoardReport, memory: Memory, elf_path: str | None = None,
          root: str = "") -> BoardView:
    """Write both views of ``rep`` beside ``json_path``, atomically. root: the folder the report's
    plan paths are relative to (the SCons top directory). Returns the view it rendered."""
    view = build(rep, _plans(rep, root), memory, _sections(elf_path), _picture())
    html_path, md_path = paths(json_path)
    write_atomic(html_path, render_html(view))
    write_atomic(md_path, render_markdown(view))
    return view
