"""The budget gate and the per-board report (schemas/report.schema.json).

``gate(target, plans, fastest)`` combines one board's model plans into the
board's arena: ``sequential`` models share one arena sized to the largest
(every base is 0); ``concurrent`` models each get a slice, placed one after the
other at the largest model alignment. It then resolves the region (``auto`` =
the fastest region that fits), the budget (bytes, or a percentage of that
region) and the room left beside the stack+heap reserve, and either returns a
Report or raises CheckFailed (exit status 1) with one line such as::

    arena: nucleo_f746: models kws+vww need 71,680 B in DTCM, budget 65,536 B
    (over by 6,144 B, lower bound 70,144 B); try region SRAM1, planner optimal,
    or activation_dtype int8

Suggestions are only those that could help: another region only when the
budget is a percentage or the reserve is what binds (a byte budget does not grow
with the region), the optimal planner only for a model above its lower bound,
int8 only for float activations.

The report document holds no times and no absolute paths, so two builds of the
same inputs write the same bytes. The headroom, percentage and bar are against
the effective limit: min(budget, region length - reserve when the stack and
heap share the region).
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Callable, Sequence

from arena_tool import __version__
from arena_tool.errors import CheckFailed
from arena_tool.problem import align_up, fmt_bytes

FORMAT_VERSION = 1
_FLOAT = ("float32", "float16", "bfloat16", "float64", "double", "float")


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
    alignment: int
    float_activations: bool


@dataclasses.dataclass(frozen=True)
class Report:
    """A board that passed the gate. All sizes in bytes.

    limit: min(budget, room beside the reserve); headroom = limit - arena_size;
    percent: 100 * arena_size / limit; status: 'ok' or 'warn' (above warn_above).
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

    @property
    def headroom(self) -> int:
        return self.limit - self.arena_size

    @property
    def percent(self) -> float:
        return 100.0 * self.arena_size / self.limit if self.limit else 100.0

    @property
    def bases(self) -> list[tuple[str, int]]:
        return [(m.name, m.base) for m in self.models]


def model_use(name: str, plan_path: str, doc: dict[str, Any]) -> ModelUse:
    acts = [b for b in doc["buffers"] if b["kind"] != "scratch"]
    return ModelUse(
        name=name, planner=doc["planner"], arena_size=doc["arena_size"], lower_bound=doc["lower_bound"],
        optimal=doc.get("optimal"), status=doc.get("status", ""), base=0, plan=plan_path.replace("\\", "/"),
        model=str(doc["model"]).replace("\\", "/"), model_sha256=doc["model_sha256"],
        weights_bytes=doc.get("weights_bytes", 0), alignment=doc.get("alignment", 16),
        float_activations=any(b["dtype"] in _FLOAT for b in acts),
    )


def _layout(sharing: str, uses: list[ModelUse]) -> tuple[list[ModelUse], int, int, int]:
    """(uses with bases, arena size, lower bound, slice alignment) for the sharing mode."""
    align = max((u.alignment for u in uses), default=16)
    if sharing == "sequential":
        size = max((u.arena_size for u in uses), default=0)
        lb = max((u.lower_bound for u in uses), default=0)
        return uses, size, lb, align
    placed: list[ModelUse] = []
    end = lb = 0
    for u in uses:
        base = align_up(end, align)
        placed.append(dataclasses.replace(u, base=base))
        end = base + u.arena_size
        lb += align_up(u.lower_bound, align)
    return placed, end, lb, align


def gate(target: Any, plans: Sequence[tuple[str, str, dict[str, Any]]],
         fastest: Callable[[int, int], str | None] | None = None) -> Report:
    """Check one board (a manifest.BoardTarget) against its budget.

    plans: (model name, plan path, plan document), in manifest order.
    fastest: (min_size, reserve) -> name of the fastest region with that much
    room (reserve counted in the data region), or None; only for ``region: auto``. Raises CheckFailed when over budget.
    """
    uses, need, lb, align = _layout(target.sharing, [model_use(n, p, d) for n, p, d in plans])
    reserve = target.reserve_stack + target.reserve_heap
    auto = target.region == "auto"
    names = "+".join(u.name for u in uses)

    def room(region_name: str) -> int:
        r = target.region_info(region_name)
        return r.length - (reserve if region_name == target.data_region else 0)

    if auto:
        chosen = fastest(need, reserve) if fastest else None
        if chosen is None or room(chosen) < need:
            largest = max(target.regions, key=lambda r: (room(r.name), r.name))
            tries = _tries(target, uses, need, lb, region=None)
            raise CheckFailed(
                f"arena: {target.name}: {_who(uses)} {fmt_bytes(need)}, more than any region of the board "
                f"(largest {largest.name}, {fmt_bytes(room(largest.name))} usable; lower bound {fmt_bytes(lb)})"
                + (f"; try {tries}" if tries else ""))
        region = chosen
    else:
        region = target.region
    info = target.region_info(region)
    budget = target.budget.resolve(info.length)
    usable = room(region)
    limit = min(budget, usable)
    if need > limit:
        over = need - limit
        offending = [u for u in uses if target.sharing == "concurrent" or u.arena_size > limit]
        alt = _better_region(target, need, region, room) if (
            target.budget.percent is not None or usable < budget) else None
        tries = _tries(target, offending, need, lb, region=alt, limit=limit)
        why = f"budget {fmt_bytes(budget)}"
        if usable < budget:
            why = f"room {fmt_bytes(usable)} ({fmt_bytes(info.length)} less the {fmt_bytes(reserve)} stack+heap reserve)"
        raise CheckFailed(
            f"arena: {target.name}: {_who(offending)} {fmt_bytes(need)} in {region}, {why} "
            f"(over by {fmt_bytes(over)}, lower bound {fmt_bytes(lb)})" + (f"; try {tries}" if tries else ""))
    warning = None
    status = "ok"
    pct = 100.0 * need / limit if limit else 100.0
    if target.warn_above is not None and pct > target.warn_above:
        status = "warn"
        warning = (f"arena: {target.name}: warning: {names} use {pct:.1f}% of the {fmt_bytes(limit)} budget in "
                   f"{region} (warn_above {target.warn_above:g}%)")
    return Report(
        board=target.name, region=region, region_origin=info.origin, region_length=info.length,
        region_auto=auto, sharing=target.sharing, arena_size=need, lower_bound=lb, alignment=align,
        budget=budget, budget_spec=target.budget.text, limit=limit, reserve_stack=target.reserve_stack,
        reserve_heap=target.reserve_heap, warn_above=target.warn_above, models=tuple(uses),
        status=status, warning=warning,
    )


def _who(uses: Sequence[ModelUse]) -> str:
    names = "+".join(u.name for u in uses)
    return f"model {names} needs" if len(uses) == 1 else f"models {names} need"


def _better_region(target: Any, need: int, current: str, room: Callable[[str], int]) -> str | None:
    """The smallest other region with room for ``need`` (ties: board order)."""
    fits = [(room(r.name), i, r.name) for i, r in enumerate(target.regions)
            if r.name != current and room(r.name) >= need]
    return min(fits)[2] if fits else None


def _tries(target: Any, uses: Sequence[ModelUse], need: int, lb: int, *, region: str | None,
           limit: int | None = None) -> str:
    """'region X, planner optimal, or activation_dtype int8': only what could help."""
    out: list[str] = []
    if region:
        out.append(f"region {region}")
    specs = {m.name: m for m in target.models}
    if (limit is None or lb <= limit) and any(
            u.planner != "optimal" and u.arena_size > u.lower_bound for u in uses):
        out.append("planner optimal")
    if any(u.float_activations and specs[u.name].options.activation_dtype != "int8"
           for u in uses if u.name in specs):
        out.append("activation_dtype int8")
    if len(out) > 1:
        return ", ".join(out[:-1]) + ", or " + out[-1]
    return out[0] if out else ""


# ---------------------------------------------------------------- documents


def to_doc(r: Report) -> dict[str, Any]:
    return {
        "format_version": FORMAT_VERSION,
        "arena_tool_version": __version__,
        "board": r.board,
        "region": {"name": r.region, "origin": r.region_origin, "length": r.region_length, "auto": r.region_auto},
        "sharing": r.sharing,
        "arena_size": r.arena_size,
        "lower_bound": r.lower_bound,
        "alignment": r.alignment,
        "budget": r.budget,
        "budget_spec": r.budget_spec,
        "limit": r.limit,
        "headroom": r.headroom,
        "percent": round(r.percent, 2),
        "reserve": {"stack": r.reserve_stack, "heap": r.reserve_heap},
        "warn_above": r.warn_above,
        "status": r.status,
        "warning": r.warning,
        "models": [
            {"name": m.name, "planner": m.planner, "arena_size": m.arena_size, "lower_bound": m.lower_bound,
             "optimal": m.optimal, "status": m.status, "base": m.base, "plan": m.plan, "model": m.model,
             "model_sha256": m.model_sha256, "weights_bytes": m.weights_bytes}
            for m in r.models
        ],
    }


def dumps(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=1) + "\n"


def write(path: str, doc: dict[str, Any]) -> None:
    """Schema-check, then write atomically."""
    from arena_tool.schema import check_json, write_atomic

    check_json(doc, "report", path)
    write_atomic(path, dumps(doc))


def read(path: str, check: bool = False) -> dict[str, Any]:
    """The report document; ``check`` validates it against the schema (slower: jsonschema)."""
    from arena_tool.schema import read_json

    return read_json(path, "report", "build the board first (scons board=NAME)", schema="report" if check else None)


def bar(percent: float, width: int = 10) -> str:
    """'[=====     ]' for 48.2 (rounded to the nearest cell, '>' past 100%)."""
    filled = min(width, max(0, round(percent * width / 100.0)))
    return "[" + "=" * filled + " " * (width - filled) + ("]" if percent <= 100.0 else ">")


def summary(docs: Sequence[dict[str, Any]]) -> str:
    """The end-of-build table: one block per board."""
    lines: list[str] = []
    for d in docs:
        region = d["region"]["name"] + (" (auto)" if d["region"]["auto"] else "")
        lines.append(f"arena: {d['board']}: {d['sharing']} in {region}, budget {fmt_bytes(d['budget'])}"
                     f" ({d['budget_spec']})")
        rows = [("model", "planner", "arena", "lower bound", "base")]
        for m in d["models"]:
            rows.append((m["name"], m["planner"], fmt_bytes(m["arena_size"]), fmt_bytes(m["lower_bound"]), str(m["base"])))
        widths = [max(len(r[c]) for r in rows) for c in range(5)]
        for j, r in enumerate(rows):
            cells = [r[0].ljust(widths[0]), r[1].ljust(widths[1])] + [r[c].rjust(widths[c]) for c in (2, 3, 4)]
            lines.append("  " + "  ".join(cells))
        lines.append(f"  arena {fmt_bytes(d['arena_size'])}, lower bound {fmt_bytes(d['lower_bound'])}, "
                     f"headroom {fmt_bytes(d['headroom'])}  {d['region']['name']} {bar(d['percent'])} "
                     f"{d['percent']:.1f}%" + ("  WARNING" if d["status"] == "warn" else ""))
    return "\n".join(lines)
