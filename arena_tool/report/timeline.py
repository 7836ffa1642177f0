"""Where a plan's bytes go, op by op: the layout data behind ``arena-tool explain --timeline``
and the picture (plot.py), the text timeline itself, and the peak (``peak``) that explain and
the build report state.

Live bytes are explain's: an alias group (a root and the views / in-place outputs sharing its
bytes) counts once, at its root's planned size, over the union of its members' live ranges.
The text form needs no matplotlib, so a terminal-only user (or a CI log) gets the same story:

     op  name              live B  |0                              12,288 B|  live/peak
      0  mm0               10,240  |AAAAAAAAAAAAAAAAAAAAA.....BBBBBBBBBBBBBBBB|  ##########
      1  mm1               12,288  |AAAAAAAAAAAAAAAAAAAAACCCCCCCCCCCCCCCCCCCCC|  ############ <- peak

one row per op (the arena's offsets left to right, a letter per alias group, '.' free), then
one row per alias group saying which letter is which buffer.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from arena_tool.core.errors import ArenaBug
from arena_tool.plan.planfile import PlanFile, alias_groups, group_buffers
from arena_tool.core.problem import Buffer, Bytes, OpIndex, fmt_bytes

WIDTH = 100  # the widest line render() writes
MAP = 42  # characters of the arena map; the row around it takes the other 58
BAR = 12  # characters of the live/peak bar
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
PEAK = " <- peak"
TOP = 10  # the largest alias groups explain (and the build report) list


@dataclasses.dataclass(frozen=True)
class Rect:
    """One plan buffer as drawn: [first_op, last_op] x [offset, offset + size).

    index: its position in the plan's ``buffers`` (the picture's gid uses it).
    """

    index: int
    name: str
    kind: str
    dtype: str
    shape: tuple[int, ...]
    size: Bytes
    offset: Bytes
    first_op: OpIndex
    last_op: OpIndex
    alias_of: str | None


@dataclasses.dataclass(frozen=True)
class Group:
    """One alias group: the one rectangle the planner placed (root first in ``members``)."""

    members: tuple[str, ...]
    kind: str
    dtype: str
    size: Bytes
    offset: Bytes
    first_op: OpIndex
    last_op: OpIndex


@dataclasses.dataclass(frozen=True)
class Layout:
    """A plan document reduced to what the pictures show; live[i] is bytes live at op i."""

    model: str
    planner: str
    arena_size: Bytes
    lower_bound: Bytes
    op_names: tuple[str, ...]
    rects: tuple[Rect, ...]
    groups: tuple[Group, ...]
    live: tuple[Bytes, ...]

    @property
    def peak_op(self) -> OpIndex:
        """The first op where live bytes peak (explain's peak_op)."""
        return self.live.index(max(self.live)) if self.live else 0

    @property
    def ops(self) -> int:
        """Op columns to draw: the schedule, or further when a buffer outlives it."""
        return len(self.live)


def layout(plan: PlanFile) -> Layout:
    """The Layout of a plan file (planfile.load, planfile.build)."""
    bufs = plan.in_arena
    by_name = {b.name: b for b in bufs}
    rects = tuple(Rect(i, b.name, b.kind, b.dtype, b.shape, b.size, b.offset, b.first_op, b.last_op, b.alias_of)
                  for i, b in enumerate(bufs))
    members = alias_groups(bufs)
    groups: list[Group] = []
    for buf in group_buffers(bufs, plan.alignment):
        root = by_name[buf.name]
        groups.append(Group(tuple(m.name for m in members[buf.name]), root.kind, root.dtype, buf.size,
                            root.offset, buf.start, buf.end))
    horizon = max([len(plan.schedule)] + [g.last_op + 1 for g in groups])
    live = [0] * horizon
    for g in groups:
        for i in range(g.first_op, g.last_op + 1):
            live[i] += g.size
    return Layout(plan.model, plan.planner, plan.arena_size, plan.lower_bound,
                  tuple(s.name for s in plan.schedule), rects, tuple(groups), tuple(live))


def percent(part: int, whole: int) -> float:
    """part of whole in percent, two decimals (0 of nothing)."""
    return round(100.0 * part / whole, 2) if whole else 0.0


@dataclasses.dataclass(frozen=True)
class Peak:
    """Where a plan's live bytes peak, as explain's document says it (schemas/explain.schema.json):
    live[i] is the bytes live at op i; op is the first op at the peak, name and op_type its (""
    past the schedule); live_at_peak (with each group's share of the peak) and largest (the TOP
    biggest) are explain's rows of alias groups."""

    live: tuple[Bytes, ...]
    op: OpIndex
    bytes: Bytes
    name: str
    op_type: str
    live_at_peak: tuple[dict[str, Any], ...]
    largest: tuple[dict[str, Any], ...]


def peak(plan: PlanFile) -> Peak:
    """The Peak of a plan file, needing no model and no planner (``explain`` and the build report's
    view share it). Raises ArenaBug when the live-bytes peak is not the plan's lower bound."""
    bufs = plan.in_arena
    schedule = plan.schedule
    groups = alias_groups(bufs)
    gbufs = group_buffers(bufs, plan.alignment)
    horizon = max([len(schedule)] + [b.end + 1 for b in gbufs])

    live = [0] * horizon
    for g in gbufs:
        for i in range(g.start, g.end + 1):
            live[i] += g.size
    peak_bytes = max(live, default=0)
    peak_op = live.index(peak_bytes) if live else 0
    if peak_bytes != plan.lower_bound:
        raise ArenaBug(f"explain: the live bytes peak {fmt_bytes(peak_bytes)} is not the plan's "
                       f"lower bound {fmt_bytes(plan.lower_bound)}")

    def group_row(g: Buffer) -> dict[str, Any]:
        root = groups[g.name][0]
        return {"name": g.name, "size": g.size, "kind": root.kind, "dtype": root.dtype,
                "first_op": g.start, "last_op": g.end,
                "members": [m.name for m in groups[g.name][1:]]}

    at_peak = sorted((g for g in gbufs if g.start <= peak_op <= g.end), key=lambda g: (-g.size, g.name))
    live_at_peak = tuple({**group_row(g), "share": percent(g.size, peak_bytes)} for g in at_peak)
    largest = tuple(group_row(g) for g in sorted(gbufs, key=lambda g: (-g.size, g.name))[:TOP])
    name, op_type = (schedule[peak_op].name, schedule[peak_op].op_type) if peak_op < len(schedule) else ("", "")
    return Peak(tuple(live), peak_op, peak_bytes, name, op_type, live_at_peak, largest)


def _cut(text: str, width: int) -> str:
    """text in at most width characters; a cut one ends in '~' (ASCII: any terminal prints it)."""
    return text if len(text) <= width else text[:max(width - 1, 0)] + "~"


def _map_row(lay: Layout, op: OpIndex, letter: dict[int, str]) -> str:
    """The arena at one op, MAP characters wide: each cell shows the live group covering most
    of its bytes (ties: the earlier group), '.' where nothing live is."""
    arena = lay.arena_size
    best: list[tuple[int, int]] = [(0, 0)] * MAP  # per cell (covered bytes * MAP, -group index)
    for gi, g in enumerate(lay.groups):
        if not (g.first_op <= op <= g.last_op) or arena <= 0:
            continue
        # in 1/MAP bytes, so cell c is exactly [c * arena, (c + 1) * arena)
        lo, hi = g.offset * MAP, (g.offset + g.size) * MAP
        for c in range(lo // arena, min(-(-hi // arena), MAP)):
            cover = min(hi, (c + 1) * arena) - max(lo, c * arena)
            if cover > 0 and (cover, -gi) > best[c]:
                best[c] = (cover, -gi)
    return "".join(letter[-neg] if cover else "." for cover, neg in best)


def _bar(live: Bytes, peak: Bytes) -> str:
    return "#" * (round(live * BAR / peak) if peak else 0)


def _op_rows(lay: Layout) -> list[str]:
    letter = {gi: LETTERS[gi % len(LETTERS)] for gi in range(len(lay.groups))}
    peak, peak_op = max(lay.live, default=0), lay.peak_op
    top = fmt_bytes(lay.arena_size)
    ruler = "0" + top.rjust(MAP - 1)
    rows = [f"{'op':>4}  {'name':<14} {'live B':>11}  |{ruler}|  live/peak"]
    for i, live in enumerate(lay.live):
        name = _cut(lay.op_names[i] if i < len(lay.op_names) else "", 14)
        mark = PEAK if i == peak_op else ""
        row = f"{i:>4}  {name:<14} {live:>11,}  |{_map_row(lay, i, letter)}|  {_bar(live, peak):<{BAR}}{mark}"
        rows.append(row.rstrip())
    return rows


def _group_rows(lay: Layout) -> list[str]:
    rows = []
    for gi, g in enumerate(lay.groups):
        aliases = f"  (+ {', '.join(g.members[1:])})" if len(g.members) > 1 else ""
        line = (f"  {LETTERS[gi % len(LETTERS)]}  {_cut(g.members[0], 24):<24} {g.kind:<10} {g.dtype:<8} "
                f"{g.size:>11,} B @ {g.offset:>11,}  ops {g.first_op}..{g.last_op}{aliases}")
        rows.append(_cut(line, WIDTH))
    return rows


def render(plan: PlanFile) -> str:
    """The text timeline of a plan file: at most WIDTH columns, the same text every run."""
    lay = layout(plan)
    peak, op = max(lay.live, default=0), lay.peak_op
    name = lay.op_names[op] if op < len(lay.op_names) else ""
    cell = lay.arena_size / MAP
    out = [_cut(f"model   {lay.model}", WIDTH),
           f"arena   {fmt_bytes(lay.arena_size)} ({lay.planner}; lower bound {fmt_bytes(lay.lower_bound)})",
           _cut(f"peak    {fmt_bytes(peak)} at op {op} {name}", WIDTH),
           "",
           f"per op: the arena's offsets left to right (1 char = {cell:,.1f} B), a letter per live alias group,",
           "'.' free; live bytes count an alias group once; the bar is live bytes over the peak",
           *_op_rows(lay),
           "",
           f"buffers (one letter per alias group, at its root's planned size; {len(lay.groups)} groups, "
           f"{len(lay.rects)} tensors):",
           *_group_rows(lay)]
    return "\n".join(out)
