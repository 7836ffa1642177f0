"""A patched stage as one tile loop in the C tables, not as its unrolled op list.

The plan runs a patched stage (model/patches.py) as ordinary ops, tile after tile: per tile the
crops (``Slice``), the stage's ops on tile tensors and a ``PatchWrite``. Written out as they are,
the tables repeat every op row, tensor row and name per tile (MobileNetV2's 8x8 grid: 279 conv,
64 slice and 64 patch-write rows, +113 KB of flash). Here the tables hold the stage's ops once,
as the untiled model has them (the *members*, each with its own pads), their outputs once (a tile
tensor row each, the untiled tensor's name), and per tile only the plan's offsets; the runtime
(runtime/tile_loop.c) derives the rest for each tile, as model/patches.py does:

* the tile's box of the stage output (the grid's cut: ``[n * i // parts, n * (i + 1) // parts)``);
* backwards through the members, each member output's box (the union of what its readers read),
  each window member's input window and tile-local pads (the part of the window outside the
  image), a crop where a member reads less than the box its input has (copied by the runtime,
  not a table row), and the depthwise in-place workspace's elements;
* after the members, the tile's copy into the whole stage output (the plan's PatchWrite).

Images are NCHW (ONNX) or NHWC (a lowered .tflite: the loop's ``nhwc``, rows and columns on dims 1
and 2, a pixel's channels copied as one run). The plan is the unrolled one, unchanged (same
buffers, offsets and arena). ``loops`` reads each
stage back out of the plan's schedule and buffers; ``check`` replays the runtime's derivation for
every tile against the plan (its boxes, pads, crops, shapes and offsets), so tables the runtime
would run differently from the plan are an arena bug (exit 3), never a silent difference. A stage
the loop cannot hold (a split arena, a schedule that interleaves other ops with its tiles, im2col
workspaces, more slots than the runtime's stack rows) stays unrolled.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Mapping, Sequence

from arena_tool.core.errors import ArenaError
from arena_tool.core.problem import ARENA_KERNELS

if TYPE_CHECKING:
    from arena_tool.model.lowering import Op
    from arena_tool.plan.planfile import PlanFile, PlanStep

MAX_SLOTS = 24  # arena_model.h ARENA_TILE_SLOTS: the runtime's stack rows per loop
OUT, WS_IN, CROP, SCRATCH = range(4)  # slot kinds (arena_model.h ARENA_SLOT_*)
Box = tuple[int, int, int, int]  # rows [h0, h1) x columns [w0, w1)


@dataclasses.dataclass(frozen=True)
class Slot:
    """One tile tensor of the loop: its kind (a member's output, its depthwise in-place workspace,
    or a crop of its input ``pos``), the member (index) it belongs to, the name its row shows
    (the untiled tensor's), and per tile its plan buffer (None: a crop this tile does not need,
    or a depthwise conv not in place in this tile)."""

    kind: int
    member: int
    pos: int
    display: str
    buffers: tuple[str | None, ...]
    row: str | None = None  # SCRATCH: the smallest tile's buffer, whose row every tile keeps

    @property
    def key(self) -> str:
        """The slot's table name: its first tile's buffer (a SCRATCH slot's: its row's)."""
        return self.row or next(b for b in self.buffers if b is not None)


@dataclasses.dataclass(frozen=True)
class Member:
    """One stage op as the loop runs it: the schedule step of its first tile, its name, and its
    inputs/output/workspace as table names (an OUT or WS slot's key, the stage input, a constant;
    a cropped input names the crop's source, which the runtime replaces by the crop)."""

    step: PlanStep
    name: str
    inputs: tuple[str, ...]
    output: str
    workspace: str | None


@dataclasses.dataclass(frozen=True)
class Loop:
    """A patched stage as the runtime's tile loop: where its unrolled steps are in the schedule
    ([first, end)), the grid, the members, the slots (those with a table row first: OUT and WS,
    then the crops), the stage's whole input and output, and the plan's per-tile account
    (``detail``: per tile, per member, its input box, pads and output box)."""

    first: int
    end: int
    rows: int
    cols: int
    members: tuple[Member, ...]
    slots: tuple[Slot, ...]
    input: str
    output: str
    folded: frozenset[str]  # plan buffers the loop replaces (tile tensors and partial outputs)
    detail: tuple[tuple[tuple[Box, tuple[int, int, int, int], Box], ...], ...]
    nhwc: bool = False  # the images' layout: NHWC for a lowered .tflite (kernels arena), else NCHW

    @property
    def image_axes(self) -> slice:
        """The rows and columns of a 4-D image: NCHW's dims 2 and 3, NHWC's 1 and 2."""
        return slice(1, 3) if self.nhwc else slice(2, 4)

    @property
    def tiles(self) -> int:
        return self.rows * self.cols

    @property
    def rowed(self) -> tuple[Slot, ...]:
        """The slots with a table row (OUT, WS_IN and SCRATCH), contiguous in the table."""
        return tuple(s for s in self.slots if s.kind != CROP)


def loops(plan: PlanFile) -> tuple[Loop, ...]:
    """The plan's patched stages that run as tile loops (module docstring), in schedule order."""
    if plan.patches is None or not plan.patches.detail or plan.regions:
        return ()
    found = (_loop(plan, d) for d in plan.patches.detail)
    return tuple(sorted((lp for lp in found if lp is not None), key=lambda lp: lp.first))


def _loop(plan: PlanFile, d: Mapping[str, object]) -> Loop | None:
    rows, cols = int(str(d["rows"])), int(str(d["cols"]))
    tiles = list(d["tiles"])  # type: ignore[call-overload]
    names = tuple(str(o["op"]) for o in tiles[0]["ops"])
    stage_in, stage_out = str(d["input"]), str(d["output"])
    steps_by_name = {st.name: k for k, st in enumerate(plan.schedule)}
    patches = [steps_by_name.get(f"{stage_out}@{t}:patch") for t in range(rows * cols)]
    if None in patches:
        return None
    # tile t's steps: after tile t-1's PatchWrite, up to its own
    first = patches[0] or 0
    while first > 0 and _member_of(plan.schedule[first - 1].name, names, 0) is not None:
        first -= 1
    crops: dict[tuple[int, int], list[PlanStep | None]] = {}  # (member, crop index) -> per tile
    member_steps: list[list[PlanStep]] = [[] for _ in names]
    start = first
    for t, p in enumerate(patches):
        assert p is not None
        if p < start:
            return None
        for st in plan.schedule[start:p]:
            role = _member_of(st.name, names, t)
            if role is None:
                return None  # other ops run between the tiles
            m, crop = role
            if crop is None:
                member_steps[m].append(st)
            else:
                crops.setdefault((m, crop), [None] * len(patches))[t] = st
        start = p + 1
    if any(len(s) != len(patches) for s in member_steps):
        return None
    by_name = plan.by_name
    out_of: dict[str, int] = {}  # a member's tile output buffer -> member
    for m, steps in enumerate(member_steps):
        out_of.update((s.outputs[0], m) for s in steps)
    slots: list[Slot] = []
    crop_slots: list[Slot] = []
    members: list[Member] = []

    def source(t: int, name: str) -> str | None:
        """A tile tensor's table name in tile t: an OUT slot's key, the stage input, a constant."""
        if name in out_of:
            return slots[[s.kind == OUT and s.member == out_of[name] for s in slots].index(True)].key
        return name if name == stage_in or name not in by_name else None

    for m, steps in enumerate(member_steps):
        crop_of: dict[str, str] = {}  # this member's crop buffers (every tile) -> the crop's source
        for (mm, _), per in sorted(crops.items()):
            if mm != m:
                continue
            srcs = {source(t, st.inputs[0]) for t, st in enumerate(per) if st is not None}
            if len(srcs) != 1 or None in srcs:
                return None
            src = srcs.pop() or ""
            for crop_step in per:
                if crop_step is not None:
                    crop_of[crop_step.outputs[0]] = src
        inputs: list[str] = []
        for pos in range(len(steps[0].inputs)):
            got: set[str | None] = set()
            for t, tile_step in enumerate(steps):
                x = tile_step.inputs[pos]
                got.add(crop_of[x] if x in crop_of else source(t, x) if x else "")
            if len(got) != 1 or None in got:
                return None
            inputs.append(got.pop() or "")
            cropped = [s.inputs[pos] if s.inputs[pos] in crop_of else None for s in steps]
            if any(cropped):
                shown = next((s.display for s in slots if s.key == inputs[-1]), inputs[-1])
                crop_slots.append(Slot(CROP, m, pos, shown, tuple(cropped)))
        y = steps[0].outputs[0]
        out = Slot(OUT, m, 0, y[:-len("@0")] if y.endswith("@0") else y, tuple(s.outputs[0] for s in steps))
        slots.append(out)
        ws = None
        if any(s.workspace for s in steps):
            if _in_place_channel(plan, steps):  # a depthwise conv in place in (some) tiles
                slots.append(Slot(WS_IN, m, 0, f"{names[m]}:workspace", tuple(s.workspace for s in steps)))
            elif plan.options.kernels == ARENA_KERNELS and all(s.workspace for s in steps):
                # a .tflite conv's im2col columns: the kernel takes as many as its row holds, so every
                # tile keeps the smallest tile's row (its own buffer, at least as large, at its offset)
                ws_bufs = tuple(str(s.workspace) for s in steps)
                smallest = min(ws_bufs, key=lambda b: (by_name[b].elements, ws_bufs.index(b)))
                slots.append(Slot(SCRATCH, m, 0, f"{names[m]}:workspace", ws_bufs, smallest))
            else:
                return None  # an ONNX conv's im2col columns (scratch: row | full) stay unrolled
            ws = slots[-1].key
        members.append(Member(steps[0], names[m], tuple(inputs), out.key, ws))
    patch_steps = [plan.schedule[p or 0] for p in patches]
    last = next(s for s in reversed(slots) if s.kind == OUT)
    if any(st.inputs[0] != last.buffers[t] for t, st in enumerate(patch_steps)):
        return None
    partials = [st.outputs[0] for st in patch_steps]
    if any(by_name[p].offset != by_name[stage_out].offset for p in partials):
        return None  # the partial outputs are one in-place chain over the stage output
    slots += crop_slots
    if len(slots) > MAX_SLOTS or len(members) > MAX_SLOTS:
        return None
    if any(x and (x == stage_in or x in [s.key for s in slots]) for m in members for x in m.inputs[4:]):
        return None  # the runtime looks for activations among a member's first four inputs
    offsets = {tuple(by_name[b].offset if b is not None else 0 for b in (s.buffers[t] for s in slots))
               for t in range(len(patches))}
    if len(offsets) > 256:
        return None  # a tile's row of offsets is a uint8_t
    folded = frozenset(b for s in slots for b in s.buffers if b is not None) | frozenset(partials[:-1])
    detail = tuple(tuple((_box(o["input_box"]), _box(o["pads"]), _box(o["output_box"])) for o in tile["ops"])
                   for tile in tiles)
    return Loop(first, (patches[-1] or 0) + 1, rows, cols, tuple(members), tuple(slots), stage_in, stage_out,
                folded, detail, plan.options.kernels == ARENA_KERNELS)  # a lowered .tflite keeps TFLite's NHWC


def _box(v: Sequence[object]) -> tuple[int, int, int, int]:
    a, b, c, d = (int(str(x)) for x in v)
    return a, b, c, d


def _member_of(name: str, members: Sequence[str], t: int) -> tuple[int, int | None] | None:
    """(member index, crop index or None) of a step named like tile t's steps, else None."""
    for m, op in enumerate(members):
        head = f"{op}@{t}"
        if name == head:
            return m, None
        if name.startswith(head + ":crop") and name[len(head) + 5:].isdigit():
            return m, int(name[len(head) + 5:])
    return None


def _in_place_channel(plan: PlanFile, steps: Sequence[PlanStep]) -> bool:
    """A member's workspace is a depthwise conv's in-place channel in every tile that has one:
    its input's plane (what the runtime makes it)."""
    by_name = plan.by_name
    for s in steps:
        if not s.workspace:
            continue  # not in place in this tile: the kernel reads no workspace
        x = by_name.get(s.inputs[0])
        if x is None or len(x.shape) != 4 or by_name[s.workspace].elements != x.shape[2] * x.shape[3]:
            return False
    return True


def table_ops(plan: PlanFile, found: Sequence[Loop]) -> int:
    """Rows of the op table: the schedule's steps, each loop's unrolled steps as its members."""
    return len(plan.schedule) - sum(lp.end - lp.first - len(lp.members) for lp in found)


def table_rows(plan: PlanFile, tile_loops: bool = True) -> list[tuple[str, str, range]]:
    """Per row of the op table (codegen.model_sources, ``loops`` as ``tile_loops``): its name, op
    type and the schedule steps it runs; a loop runs (and --profile times) as its first member's
    row, which carries the stage's unrolled steps, its other members none of their own."""
    out: list[tuple[str, str, range]] = []
    at = 0
    for lp in loops(plan) if tile_loops else ():
        out += [(st.name or st.outputs[0], st.op_type, range(i, i + 1))
                for i, st in enumerate(plan.schedule[at:lp.first], at)]
        out += [(f"{m.name} (stage of {lp.tiles} tiles)" if j == 0 else m.name, m.step.op_type,
                 range(lp.first, lp.end) if j == 0 else range(0)) for j, m in enumerate(lp.members)]
        at = lp.end
    return out + [(st.name or st.outputs[0], st.op_type, range(i, i + 1))
                  for i, st in enumerate(plan.schedule[at:], at)]


def table_buffers(plan: PlanFile, found: Sequence[Loop]) -> list[str]:
    """The plan's arena buffers the tables list: every buffer no loop folds, then each loop's
    slots with a row (contiguous: the runtime finds a slot by its index)."""
    folded = frozenset().union(*(lp.folded for lp in found)) if found else frozenset()
    return [b.name for b in plan.buffers if b.name not in folded] + [s.key for lp in found for s in lp.rowed]


# --- what the runtime derives, replayed against the plan ---------------------------------------

Derived = tuple[list[Box], list[tuple[int, int, int, int]], list[list[Box | None]]]


def derive(loop: Loop, originals: Sequence[Op], windows: Sequence[bool], whole: Sequence[int],
           r: int, c: int) -> Derived:
    """What tile_loop.c derives for tile (r, c): per member its output box, pads (top, left,
    bottom, right) and per input the box it reads (None: not an activation). whole: the stage
    input's (H, W)."""
    producer = {m.output: j for j, m in enumerate(loop.members)}
    full: list[tuple[int, int]] = []  # each member output's (H, W), forwards
    for j, op in enumerate(originals):
        x = next(x for x in loop.members[j].inputs if x == loop.input or x in producer)
        n = tuple(whole) if x == loop.input else full[producer[x]]
        if windows[j]:
            k, s, p = op.attrs["kernel_shape"], op.attrs["strides"], op.attrs["pads"]
            n = tuple((n[a] + p[a] + p[a + 2] - k[a]) // s[a] + 1 for a in (0, 1))
        full.append((int(n[0]), int(n[1])))
    last = len(loop.members) - 1
    h, w = full[last]
    region: list[list[int]] = [[1 << 30, -(1 << 30), 1 << 30, -(1 << 30)] for _ in loop.members]
    region[last] = [h * r // loop.rows, h * (r + 1) // loop.rows, w * c // loop.cols, w * (c + 1) // loop.cols]
    pads = [(0, 0, 0, 0)] * len(loop.members)
    reads: list[list[Box | None]] = [[] for _ in loop.members]
    for j in range(last, -1, -1):
        o = region[j]
        op = originals[j]
        for x in loop.members[j].inputs:
            if x != loop.input and x not in producer:
                reads[j].append(None)
                continue
            n = tuple(whole) if x == loop.input else full[producer[x]]
            need = [o[0], o[1], o[2], o[3]]
            pad = [0, 0, 0, 0]
            if windows[j]:
                k, s, p = op.attrs["kernel_shape"], op.attrs["strides"], op.attrs["pads"]
                for a in (0, 1):
                    start, end = o[2 * a] * s[a] - p[a], (o[2 * a + 1] - 1) * s[a] - p[a] + k[a]
                    need[2 * a], need[2 * a + 1] = max(0, start), min(int(n[a]), end)
                    pad[a], pad[a + 2] = need[2 * a] - start, end - need[2 * a + 1]
            reads[j].append((need[0], need[1], need[2], need[3]))
            if not any(v is not None for v in reads[j][:-1]):
                pads[j] = (pad[0], pad[1], pad[2], pad[3])
            if x in producer:
                q = region[producer[x]]
                region[producer[x]] = [min(q[0], need[0]), max(q[1], need[1]), min(q[2], need[2]), max(q[3], need[3])]
    return [(b[0], b[1], b[2], b[3]) for b in region], pads, reads


def check(plan: PlanFile, loop: Loop, originals: Sequence[Op], windows: Sequence[bool]) -> None:
    """Replay the runtime (tile_loop.c) for every tile and compare with the plan: each member's
    output box, input window and pads, each crop's presence, each slot's shape or elements.
    ArenaError (an arena bug) on the first difference. originals: the stage's untiled ops (their
    own pads), windows: which are window ops."""
    by_name = plan.by_name
    whole = by_name[loop.input].shape[loop.image_axes]
    index = {m.output: j for j, m in enumerate(loop.members)}
    for r in range(loop.rows):
        for c in range(loop.cols):
            t = r * loop.cols + c
            region, pads, reads = derive(loop, originals, windows, whole, r, c)
            for j, (inp, pad, out) in enumerate(loop.detail[t]):
                first = next(b for b in reads[j] if b is not None)
                if (region[j], first if windows[j] else inp, pads[j]) != (out, inp, pad):
                    raise _bug(loop, t, f"{loop.members[j].name!r}: the runtime would read {list(first)} with pads "
                               f"{list(pads[j])} for {list(region[j])}; the plan: {list(inp)}, {list(pad)}, {list(out)}")
            for s in loop.slots:
                name = s.buffers[t]
                m = loop.members[s.member]
                if s.kind == SCRATCH:
                    if name is None or by_name[name].elements < by_name[s.key].elements:
                        raise _bug(loop, t, f"{m.name!r}'s workspace is smaller than the row every tile keeps")
                    continue
                if s.kind == CROP:
                    x = m.inputs[s.pos]
                    have = (0, whole[0], 0, whole[1]) if x == loop.input else region[index[x]]
                    need = reads[s.member][s.pos]
                    if (need != have) != (name is not None):
                        raise _bug(loop, t, f"{m.name!r} input {s.pos}: the runtime would "
                                   f"{'' if need != have else 'not '}crop it")
                    box = need
                elif s.kind == OUT:
                    box = region[s.member]
                else:
                    box = reads[s.member][0]
                if name is None or box is None:
                    continue
                buf = by_name[name]
                if s.kind == WS_IN:
                    if buf.elements != (box[1] - box[0]) * (box[3] - box[2]):
                        raise _bug(loop, t, f"{name!r} has {buf.elements} elements, the runtime would make "
                                   f"{(box[1] - box[0]) * (box[3] - box[2])}")
                elif tuple(buf.shape[loop.image_axes]) != (box[1] - box[0], box[3] - box[2]):
                    raise _bug(loop, t, f"{name!r} is {list(buf.shape)}, the runtime would make it "
                               f"{box[1] - box[0]} x {box[3] - box[2]}")


def _bug(loop: Loop, t: int, what: str) -> ArenaError:
    return ArenaError(f"tile loop of stage {loop.output!r}, tile {t}: {what}", field="patches",
                      hint="an arena bug: please report it with the model")
