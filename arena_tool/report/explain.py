"""Why a model needs the arena it needs: the peak op, what is live there, and what each
technique saved (``arena-tool explain``; schemas/explain.schema.json).

Everything is computed from a plan file (planfile.PlanFile: planfile.load), so a plan
file and the model it was made from explain identically. An alias group (a root and the
views / in-place outputs that share its bytes) is counted once: its root's planned size
over the union of its members' live ranges, exactly the Buffer the planner placed. The
peak of that sweep must equal the plan's lower bound; anything else is an arena bug.
"""

from __future__ import annotations

import dataclasses
import json
from typing import TYPE_CHECKING, Any, Callable, Sequence

from arena_tool import __version__
from arena_tool.core import dtypes
from arena_tool.plan import planners, planning
from arena_tool.core.errors import ArenaBug, ArenaError
from arena_tool.core.files import write_atomic
from arena_tool.core.problem import Buffer, Problem, align_up, elide, elide_apart, fmt_bytes, lower_bound
from arena_tool.core.schema import check_json
from arena_tool.plan.planfile import PlanBaselines, group_buffers
from arena_tool.report import timeline
from arena_tool.report.timeline import TOP, percent

if TYPE_CHECKING:
    from arena_tool.plan.planfile import PlanBuffer, PlanFile

FORMAT_VERSION = 1
WHAT_IF_DTYPE = "int8"


def _saving(technique: str, what: str, before: int, after: int, naive: int) -> dict[str, Any]:
    return {"technique": technique, "what": what, "before": before, "after": after,
            "saved": before - after, "percent": percent(before - after, naive)}


def _int8_size(plan: PlanFile) -> Callable[[PlanBuffer], int]:
    """A buffer's size were every activation int8 (as --activation-dtype int8 plans it):
    bitwidth-overridden tensors and scratch keep theirs."""
    a = plan.alignment
    pinned = {name for name, _ in plan.options.bitwidths}

    def size(b: PlanBuffer) -> int:
        if b.kind == "scratch" or b.name in pinned:
            return b.size
        return max(align_up(dtypes.nbytes(b.elements, dtypes.bits(WHAT_IF_DTYPE)), a), a)
    return size


def explain(plan: PlanFile, planner: str, params: planners.Params, io: bool = True,
            macs: Sequence[int] | None = None) -> dict[str, Any]:
    """The explain report (schemas/explain.schema.json) of one plan file (planfile.load or
    planfile.build).

    planner/params plan the comparisons (greedy_size always; the int8 what-if with ``planner``).
    macs: each op's MACs in the plan's order (macs.plan_macs), or None where the model is not at hand.
    Raises errors.ArenaBug when the live-bytes peak is not the plan's lower bound.
    io: also plan the model with and without each I/O choice (``io_choices``; the build report,
    which shows only the peak, leaves them out).
    """
    bufs = plan.in_arena
    schedule = plan.schedule
    align = plan.alignment
    by_name = {b.name: b for b in bufs}
    gbufs = group_buffers(bufs, align)
    at = timeline.peak(plan)  # raises ArenaBug when the peak is not the lower bound
    live, peak_op, peak_bytes = at.live, at.op, at.bytes

    # --- savings, each against the naive sum (every tensor its own bytes, nothing reused) ---
    flat = [Buffer(b.name, b.size, b.first_op, b.last_op, align) for b in bufs]
    naive = sum(b.size for b in flat)
    no_alias_lb = lower_bound(flat)
    problem = Problem(tuple(gbufs))
    greedy = planning.run_planner("greedy_size", problem, params)
    arena = plan.arena_size
    # The chain: each row starts where the one above ends, from the naive sum to the arena.
    techniques = [
        _saving("reuse", "naive sum -> no-alias lower bound (buffers share bytes once dead)",
                naive, no_alias_lb, naive),
        _saving("inplace_views", "no-alias lower bound -> lower bound (in-place outputs, views)",
                no_alias_lb, peak_bytes, naive),
        _saving("placement", f"lower bound -> {plan.planner}'s arena (gaps the placement leaves)",
                peak_bytes, arena, naive),
    ]
    # Each alone: what this plan would need without one choice, everything else as it is; these
    # do not add up (the chain above does).
    alone = [_saving("planner", f"greedy_size's arena -> {plan.planner}'s", greedy.arena_size, arena, naive)]
    base = plan.baselines or PlanBaselines()
    if base.no_inplace_depthwise is not None:
        alone.insert(0, _saving("inplace_depthwise", "lower bound with depthwise Convs not in place -> with",
                                base.no_inplace_depthwise, peak_bytes, naive))
    if base.sequential is not None:  # a cost: pipelining needs more than one op at a time
        alone.insert(0, _saving("pipelining", "lower bound run sequentially -> pipelined",
                                base.sequential, peak_bytes, naive))
    if base.graph_order is not None:
        alone.insert(0, _saving("schedule", "lower bound in the model's own op order -> this order",
                                base.graph_order, peak_bytes, naive))
    patches_doc: dict[str, Any] = {}
    if plan.patches is not None:
        p = plan.patches
        alone.insert(0, _saving("patches", f"lower bound untiled -> tiled (stages {p.stages})",
                                p.untiled_lower_bound, peak_bytes, naive))
        patches_doc = {"patches": {"stages": p.stages, "untiled_arena": p.untiled_arena,
                                   "untiled_lower_bound": p.untiled_lower_bound, "arena": plan.arena_size,
                                   "macs_untiled": p.macs_untiled, "macs": p.macs,
                                   "recomputed_macs": p.macs - p.macs_untiled, "status": str(p.status),
                                   "candidates": p.candidates}}

    act = [b for b in bufs if b.kind != "scratch"]
    by_dtype: dict[str, int] = {}
    for b in act:
        by_dtype[b.dtype] = by_dtype.get(b.dtype, 0) + b.size
    resized = group_buffers(bufs, align, _int8_size(plan))
    what_if = planning.run_planner(planner, Problem(tuple(resized)), params)
    dtype_doc = {
        "activation_dtypes": [{"dtype": k, "bytes": v} for k, v in sorted(by_dtype.items(), key=lambda kv: -kv[1])],
        "integer_ops": plan.integer_ops,
        "ops": len(schedule),
        "what_if": {
            "activation_dtype": WHAT_IF_DTYPE,
            "planner": what_if.planner,
            "lower_bound": what_if.lower_bound,
            "arena_size": what_if.arena_size,
            "saved": arena - what_if.arena_size,
            "percent": percent(arena - what_if.arena_size, naive),
        },
    }

    ops = []
    io_doc = {"io": io_choices(plan, planner, params)} if io else {}
    for i, s in enumerate(schedule):
        outs = [by_name[o] for o in s.outputs if o in by_name]
        ws = by_name.get(s.workspace) if s.workspace else None
        ops.append({"index": i, "name": s.name, "op_type": s.op_type, "live_bytes": live[i],
                    "output_bytes": sum(b.size for b in outs),
                    "aliased_output_bytes": sum(b.size for b in outs if b.alias_of is not None),
                    "workspace_bytes": ws.size if ws else 0, "macs": None if macs is None else macs[i]})

    return {
        "format_version": FORMAT_VERSION,
        "arena_tool_version": __version__,
        "model": plan.model,
        "planner": plan.planner,
        "arena_size": arena,
        "lower_bound": plan.lower_bound,
        "peak_op": peak_op,
        "peak_name": at.name,
        "peak_op_type": at.op_type,
        "peak_bytes": peak_bytes,
        "macs": None if macs is None else sum(macs),
        "live_at_peak": list(at.live_at_peak),
        "largest": list(at.largest),
        "savings": {"naive": naive, "no_alias_lower_bound": no_alias_lb, "lower_bound": peak_bytes,
                    "greedy_arena": greedy.arena_size, "arena": arena,
                    "techniques": techniques, "alone": alone, "dtype": dtype_doc, **io_doc, **patches_doc},
        "ops": ops,
    }


IO_CHOICES = (("io", "model", "int8"), ("io_buffers", "arena", "caller"))  # (option, default, the choice)


def io_choices(plan: PlanFile, planner: str, params: planners.Params) -> list[dict[str, Any]]:
    """What ``io: int8`` and ``io_buffers: caller`` save on this model: the model planned with the
    choice and without it (the one the plan did not make, re-planned from plan.model under the
    plan's other options), or why a choice does not apply (a float model for io: int8). Each side's
    caller-owned I/O bytes too: they leave the arena but still take the application's RAM."""
    out: list[dict[str, Any]] = []
    for key, default, choice in IO_CHOICES:
        chosen = getattr(plan.options, key) == choice
        row: dict[str, Any] = {"option": key, "choice": choice, "chosen": chosen, "without": None, "with": None,
                               "saved": None, "why": None, "caller_io_without": None, "caller_io_with": None}
        if plan.kind != "onnx":
            row["why"] = "applies to ONNX models"
            out.append(row)
            continue
        value = default if chosen else choice
        other = (dataclasses.replace(plan.options, io=value) if key == "io"
                 else dataclasses.replace(plan.options, io_buffers=value))
        try:
            alt = planning.plan_model(plan.model, other, planner, params).plan_file
        except ArenaError as e:
            row["why"] = e.msg
            out.append(row)
            continue
        without, with_ = (alt, plan) if chosen else (plan, alt)
        row["without"], row["with"] = without.arena_size, with_.arena_size
        row["saved"] = row["without"] - row["with"]
        row["caller_io_without"], row["caller_io_with"] = without.caller_io, with_.caller_io
        out.append(row)
    return out


def _io_lines(rows: list[dict[str, Any]]) -> list[str]:
    out = []
    for r in rows:
        name = f"{r['option']}: {r['choice']}"
        if r["saved"] is None:
            out.append(f"  {name:<20} does not apply: {r['why']}")
            continue
        state = "this plan" if r["chosen"] else "not this plan"
        c0, c1 = r["caller_io_without"], r["caller_io_with"]
        arena = (f"saves {fmt_bytes(r['saved'])} ({fmt_bytes(r['without'])} -> {fmt_bytes(r['with'])})"
                 if r["saved"] > 0 else f"saves nothing here (arena {fmt_bytes(r['with'])} either way)")
        if c0 == c1:
            saves = arena
        elif c0 == 0:  # io_buffers: caller: the I/O leaves the arena for the application's own buffers
            saves = arena + f", and the application's buffers hold the {fmt_bytes(c1)} of inputs and outputs"
        else:  # io: int8 with caller-owned buffers: the application's buffers shrink too
            in_arena = (f"{fmt_bytes(r['saved'])} of arena ({fmt_bytes(r['without'])} -> {fmt_bytes(r['with'])})"
                        if r["saved"] else f"nothing in the arena ({fmt_bytes(r['with'])} either way)")
            saves = (f"saves {in_arena} and {fmt_bytes(c0 - c1)} of the application's buffers "
                     f"({fmt_bytes(c0)} -> {fmt_bytes(c1)})")
        out.append(f"  {name:<20} {saves}; {state}")
    return out


def _table(header: list[str], rows: list[list[str]], right: set[int]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]

    def line(cells: list[str]) -> str:
        return "  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths))).rstrip()
    # a column without a header (the per-op table's "<- peak" mark) gets no rule: as many rules as headers
    return [line(header), line(["-" * w if h else " " * w for h, w in zip(header, widths)]), *(line(r) for r in rows)]


def _names(rows: list[dict[str, Any]]) -> list[str]:
    """Each buffer's cell: its root's name and its aliases', each bounded (``elide_apart``: two
    names that differ only in the middle stay apart)."""
    roots = elide_apart([str(row["name"]) for row in rows])
    out = []
    for name, row in zip(roots, rows):
        more = row["members"]
        out.append(name + (f" (+{len(more)} alias{'es' if len(more) > 1 else ''}: {elide(', '.join(more))})"
                           if more else ""))
    return out


def render(r: dict[str, Any]) -> str:
    s = r["savings"]
    out = [f"model        {r['model']}",
           f"arena        {fmt_bytes(r['arena_size'])} ({r['planner']}; lower bound {fmt_bytes(r['lower_bound'])})",
           f"peak         {fmt_bytes(r['peak_bytes'])} at op {r['peak_op']} {elide(r['peak_name'])} ({r['peak_op_type']})",
           f"MACs         " + (f"{r['macs']:,} per inference" if r["macs"] is not None
                                else "n/a (the ONNX model is not at hand)"),
           "",
           f"live at the peak (op {r['peak_op']}; an alias group counted once, at its root's size):"]
    out += ["  " + x for x in _table(
        ["buffer", "bytes", "share", "kind", "dtype", "ops"],
        [[n, f"{b['size']:,}", f"{b['share']:.1f} %", b["kind"], b["dtype"], f"{b['first_op']}..{b['last_op']}"]
         for n, b in zip(_names(r["live_at_peak"]), r["live_at_peak"])], {1, 2})]
    out += ["", f"largest buffers (top {TOP}):"]
    out += ["  " + x for x in _table(
        ["buffer", "bytes", "kind", "dtype", "ops"],
        [[n, f"{b['size']:,}", b["kind"], b["dtype"], f"{b['first_op']}..{b['last_op']}"]
         for n, b in zip(_names(r["largest"]), r["largest"])],
        {1})]
    out += ["", f"from the naive sum to the arena (each row starts where the one above ends; % of the naive sum "
                f"{fmt_bytes(s['naive'])}, every tensor its own bytes):"]
    labels = {"reuse": "reuse", "inplace_views": "in-place/views", "placement": "placement",
              "schedule": "op schedule", "inplace_depthwise": "in-place depthwise", "pipelining": "pipelining (cost)",
              "patches": "patches", "planner": "planner"}

    def rows(ts: list[dict[str, Any]]) -> list[list[str]]:
        return [[labels[t["technique"]], f"{t['before']:,}", f"{t['after']:,}", f"{t['saved']:,}",
                 f"{t['percent']:.1f}", t["what"]] for t in ts]

    out += ["  " + x for x in _table(["technique", "from B", "to B", "saved B", "%", "how"],
                                     rows(s["techniques"]), {1, 2, 3, 4})]
    if s.get("alone"):
        out += ["", "each choice alone (this plan without it -> with it, everything else as it is; not additive):"]
        out += ["  " + x for x in _table(["choice", "without B", "with B", "saved B", "%", "how"],
                                         rows(s["alone"]), {1, 2, 3, 4})]
    d = s["dtype"]
    w = d["what_if"]
    kinds = ", ".join(f"{x['dtype']} {fmt_bytes(x['bytes'])}" for x in d["activation_dtypes"])
    out += ["", f"activations  {kinds}; {d['integer_ops']} of {d['ops']} ops run on integers",
            f"what-if      with {w['activation_dtype']} activations (--activation-dtype {w['activation_dtype']}; "
            f"not this plan): arena {fmt_bytes(w['arena_size'])} "
            f"(lower bound {fmt_bytes(w['lower_bound'])}), "
            + (f"{fmt_bytes(w['saved'])} less ({w['percent']:.1f} % of naive)" if w["saved"] > 0
               else "no smaller: the buffers that set the peak are already 8-bit or narrower"),
            *(_patch_lines(s["patches"]) if "patches" in s else []),
            *(["", "inputs and outputs (each choice planned with and without it on this model):",
               *_io_lines(s["io"])] if "io" in s else []),
            "", "per op (live bytes: alias groups once; output bytes of in-place outputs and views marked *):"]
    out += ["  " + x for x in _table(
        ["op", "name", "type", "live B", "output B", "workspace B", "MACs", ""],
        [[str(o["index"]), shown, o["op_type"], f"{o['live_bytes']:,}",
          f"{o['output_bytes']:,}" + ("*" if o["aliased_output_bytes"] else " "), f"{o['workspace_bytes']:,}",
          "-" if o["macs"] is None else f"{o['macs']:,}",
          "<- peak" if o["index"] == r["peak_op"] else ""]
         for shown, o in zip(elide_apart([str(o["name"]) for o in r["ops"]]), r["ops"])], {0, 3, 4, 5, 6})]
    return "\n".join(out)


def _patch_lines(p: dict[str, Any]) -> list[str]:
    """Patch-based inference: the peak and MACs without and with the tiled stages."""
    extra = p["recomputed_macs"]
    pct = 100 * extra / p["macs_untiled"] if p["macs_untiled"] else 0.0
    return ["", f"patches      {p['stages']}: arena {fmt_bytes(p['untiled_arena'])} untiled -> "
                f"{fmt_bytes(p['arena'])} (lower bound {fmt_bytes(p['untiled_lower_bound'])} untiled); "
                f"MACs {p['macs_untiled']:,} -> {p['macs']:,} ({extra:,} recomputed in the halos, {pct:+.1f} %); "
                f"search {p['status']} over {p['candidates']} candidates"]


def write(path: str, report: dict[str, Any]) -> None:
    check_json(report, "explain", path)
    write_atomic(path, json.dumps(report, indent=1) + "\n")
