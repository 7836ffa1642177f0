"""The per-region part of the gate: a split arena's regions and weights copied to RAM.

Why apart from ``report.gate``: one arena in one region is the common case and its messages
(suggestions, auto region) stay as they were; this module adds what several regions need.
Each RAM region that holds arena bytes or copied weights gets one ``RegionUse``:

- arena: bytes of the board's arena there: a split arena's region is the largest of the
  models' arenas in it (sequential sharing); one arena is the gate's whole arena;
- weights: bytes of every model's weights copied there (``weights: <region>``;
  ``regions.weights_ram_bytes`` per model: an upper bound of the ``.weights_<region>``
  section, checked on the ELF);
- limit: ``BoardTarget.region_limit`` for a region with arena bytes (the budget, but no more than
  the region less the stack and heap reserve of the data region); the room alone for a region
  with weights only (the budget is the arena's);
- the section names the firmware gives them: ``.arena`` for one arena, ``.arena_<region>`` for
  each region of a split arena, ``.weights_<region>`` for copied weights.

A region whose arena + weights pass its limit is one Problem (kind ram) naming both.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from arena_tool.problem import fmt_bytes

if TYPE_CHECKING:
    from arena_tool.manifest import BoardTarget
    from arena_tool.report import ModelUse, Problem, Report


@dataclasses.dataclass(frozen=True)
class RegionUse:
    """One RAM region of a board. Sizes in bytes; sections are None where it holds nothing."""

    name: str
    origin: int
    length: int
    arena: int
    weights: int
    reserve: int
    limit: int
    arena_section: str | None
    weights_section: str | None

    @property
    def used(self) -> int:
        return self.arena + self.weights

    @property
    def headroom(self) -> int:
        return self.limit - self.used

    def to_json(self) -> dict[str, Any]:
        """The report's ``regions`` entry (``headroom`` derived)."""
        return {"name": self.name, "origin": self.origin, "length": self.length, "arena": self.arena,
                "weights": self.weights, "reserve": self.reserve, "limit": self.limit, "headroom": self.headroom,
                "arena_section": self.arena_section, "weights_section": self.weights_section}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> "RegionUse":
        """From a ``regions`` entry the report schema has checked."""
        return cls(name=str(doc["name"]), origin=int(doc["origin"]), length=int(doc["length"]),
                   arena=int(doc["arena"]), weights=int(doc["weights"]), reserve=int(doc["reserve"]),
                   limit=int(doc["limit"]), arena_section=doc["arena_section"], weights_section=doc["weights_section"])


def arena_section(region: str, split: bool) -> str:
    return f".arena_{region}" if split else ".arena"


def weights_section(region: str) -> str:
    return f".weights_{region}"


def uses(target: BoardTarget, models: Sequence[ModelUse], arena_region: str, arena_size: int) -> tuple[RegionUse, ...]:
    """The regions holding arena bytes or copied weights: a split arena's in its order, then
    weight-only regions in board order; () when one arena holds everything and no weights are copied.

    models: report.ModelUse (``regions``: a split plan's (region, bytes); ``weights_region``,
    ``weights_ram``); arena_region/arena_size: the gate's one arena (ignored when split).
    """
    split = tuple(target.split)
    weights: dict[str, int] = {}
    for m in models:
        if m.weights_region != "flash":
            weights[m.weights_region] = weights.get(m.weights_region, 0) + m.weights_ram
    if not split and not weights:
        return ()
    arena: dict[str, int] = {}
    if split:
        for m in models:
            for name, size in m.regions:
                arena[name] = max(arena.get(name, 0), size)
        order = list(split)
    else:
        arena[arena_region] = arena_size
        order = [arena_region]
    order += [r.name for r in target.board.ram if r.name in weights and r.name not in order]
    reserve = target.reserve
    out = []
    for name in order:
        info = target.board.region(name)
        held = name in arena
        out.append(RegionUse(
            name=name, origin=info.origin, length=info.length, arena=arena.get(name, 0),
            weights=weights.get(name, 0), reserve=reserve if name == target.board.data_region else 0,
            limit=target.region_limit(name) if held else target.region_room(name),
            arena_section=arena_section(name, bool(split)) if held else None,
            weights_section=weights_section(name) if name in weights else None))
    return tuple(out)


def problems(target: BoardTarget, regions: Sequence[RegionUse], models: Sequence[ModelUse],
             arena_over: bool) -> list[Problem]:
    """One Problem per region over its limit; arena_over: the gate already reported the one
    arena over (then only the weights' share is news)."""
    from arena_tool import report

    split = bool(target.split)
    out = []
    for r in regions:
        if r.used <= r.limit or (arena_over and not split and r.arena_section is not None and r.arena > r.limit):
            continue
        parts = []
        if r.arena:
            who = [m.name for m in models if dict(m.regions).get(r.name, 0) > 0] if split else [m.name for m in models]
            parts.append(f"{fmt_bytes(r.arena)} of arena ({'+'.join(who)})")
        if r.weights:
            who = [m.name for m in models if m.weights_region == r.name]
            parts.append(f"{fmt_bytes(r.weights)} of weights ({'+'.join(who)})")
        why = f"limit {fmt_bytes(r.limit)}" + (f" (the region less the {fmt_bytes(r.reserve)} stack+heap reserve)"
                                               if r.reserve else "")
        tries = []
        if r.weights:
            tries.append("weights: flash for " + "+".join(m.name for m in models if m.weights_region == r.name))
        if split:
            tries.append("another region in region: [...] (a larger or a further one)")
        out.append(report.Problem(
            "ram", f"arena: {target.name}: {' and '.join(parts)} need {fmt_bytes(r.used)} in {r.name}, {why} "
            f"(over by {fmt_bytes(r.used - r.limit)})" + (f"; try {', or '.join(tries)}" if tries else ""),
            region=r.name, need=r.used, limit=r.limit))
    return out


def summary_lines(rep: Report) -> list[str]:
    """Per region: arena and weights against its limit, for report.summary."""
    from arena_tool.report import bar

    out = []
    for r in rep.regions:
        pct = 100.0 * r.used / r.limit if r.limit else 100.0
        what = ([f"arena {fmt_bytes(r.arena)}"] if r.arena_section else []) + (
            [f"weights {fmt_bytes(r.weights)}"] if r.weights else [])
        out.append(f"  {r.name}: {' + '.join(what)} of {fmt_bytes(r.limit)}  {bar(pct)} {pct:.1f}%")
    return out
