"""Patch-based inference (MCUNetV2): a stage of the network run tile by tile.

A CNN's first high-resolution blocks hold the peak; computing the stage's output one spatial
tile at a time, each tile from its input window plus the halo its receptive field needs, keeps
only one tile's intermediates alive. This module is the geometry, the rewrite and, under ``patches: auto``,
the choice of where and how finely (``choose``; plan/planning.py plans with and without it).

A *stage* ends at an op (``split_after``) and is every op its output depends on, back to one
whole tensor (the graph input, or the previous stage's output): a chain or DAG of
convolutions, depthwise convolutions, windowed pools and element-wise ops. Its output is cut
into a rows x cols grid; backwards through the stage, each tensor's *region* is the bounding
box of what its readers need (a window op: ``[o0*s - p, (o1-1)*s - p + k)`` per axis, clamped
to the image, the clamped part becoming the tile-local pad, so padding stays at the image
border only)::

    output rows [0, 3) of a 3x3 s2 p1 conv over 12 rows: input [-1, 6) -> [0, 6), pad top 1

The rewrite (``apply``) turns the stage into ordinary lowered ops, so liveness, the planners,
codegen and the runtime see a longer op list and nothing special: per tile, a ``Slice`` where a
reader needs less than its input's region (always at the whole stage input), each stage op on
the tile tensors with tile-local pads (``Op.origin``: the node it tiles), and a ``PatchWrite``
(domain ``arena``) that copies the tile's output into the whole stage output; the partial
stage outputs form one in-place chain (PatchWrite writes over its input 1), whose last member
carries the stage output's own name, so the rest of the network reads it unchanged.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
import time
from typing import Mapping, Sequence

from arena_tool.core import dtypes
from arena_tool.core.errors import ArenaError, fail
from arena_tool.core.problem import ModelProblem, Quant, Status
from arena_tool.model import lowering, optable
from arena_tool.model.lowering import Lowered, Op
from arena_tool.model.onnx_graph import TensorType

Box = tuple[int, int, int, int]  # rows [h0, h1) x columns [w0, w1) of an image (NCHW or NHWC), half-open
# A lowered .tflite's window ops (NHWC; pads top, left, bottom, right as ONNX's, TFLite's SAME made explicit).
NHWC_WINDOW_OPS = frozenset({"TflConv2D", "TflDepthwiseConv2D", "TflAveragePool2D", "TflMaxPool2D", "TflConv2DF32",
                             "TflDepthwiseConv2DF32", "TflAveragePool2DF32", "TflMaxPool2DF32"})
WINDOW_OPS = frozenset({"Conv", "QLinearConv", "MaxPool", "AveragePool", "QLinearAveragePool"}) | NHWC_WINDOW_OPS
FIELD = "patches"
PATCH_OP = "PatchWrite"  # domain arena: copy a tile into its box of the whole tensor


@dataclasses.dataclass(frozen=True)
class StageSpec:
    """One patched stage as the user (or ``auto``) chose it: the op it ends after (an op
    name, or the name of the tensor it writes) and the tile grid."""

    split_after: str
    rows: int
    cols: int

    @property
    def tiles(self) -> int:
        return self.rows * self.cols


@dataclasses.dataclass(frozen=True)
class TileOp:
    """One stage op in one tile: its input window (the box of input 0 it reads, in the input's
    coordinates) and its tile-local pads (top, left, bottom, right), and the output box."""

    op: str
    input_box: Box
    pads: tuple[int, int, int, int]
    output_box: Box


@dataclasses.dataclass(frozen=True)
class Stage:
    """A stage found in a lowered model: its ops (indices into Lowered.ops, in order), the whole
    tensor it starts from, the tensor it ends with, the grid, and per tile the output box and
    what every stage op reads and writes (``TileOp``)."""

    spec: StageSpec
    ops: tuple[int, ...]
    input: str
    output: str
    rows: tuple[Axis, ...]  # per row of tiles, the stage's rows (the geometry is separable)
    cols: tuple[Axis, ...]  # per column of tiles, its columns

    @functools.cached_property
    def tiles(self) -> tuple[tuple[Box, tuple[TileOp, ...]], ...]:
        """Per tile (row-major) its output box and every stage op's boxes and pads."""
        out = []
        for r in self.rows:
            for c in self.cols:
                ops = tuple(TileOp(name, (ri[0], ri[1], ci[0], ci[1]), (rp[0], cp[0], rp[1], cp[1]),
                                   (ro[0], ro[1], co[0], co[1]))
                            for (name, ro, ri, rp), (_, co, ci, cp) in zip(r.ops, c.ops))
                out.append(((r.out[0], r.out[1], c.out[0], c.out[1]), ops))
        return tuple(out)


@dataclasses.dataclass(frozen=True)
class Axis:
    """One row (or column) of tiles along one axis: the interval of the stage output it covers,
    and per stage op (name, output interval, input 0's interval, pads before and after); ``key``
    what sets the tile's sizes (lengths, and which reads need a crop), for the search."""

    out: tuple[int, int]
    ops: tuple[tuple[str, tuple[int, int], tuple[int, int], tuple[int, int]], ...]
    key: tuple[object, ...]


def _fail(msg: str, field: str = FIELD, hint: str | None = None) -> None:
    fail(msg, field=field, hint=hint or "split after an earlier op, or write patches: auto")


def _axes(lw: Lowered) -> tuple[int, int]:
    """The image's row and column axes: NCHW's 2, 3 (ONNX), NHWC's 1, 2 (a lowered .tflite)."""
    return (1, 2) if lw.layout == "NHWC" else (2, 3)


def _hw(lw: Lowered, t: TensorType) -> tuple[int, int]:
    h, w = _axes(lw)
    return t.shape[h], t.shape[w]


def _at(lw: Lowered, h: int, w: int) -> list[int]:
    """A 4-D index with ``h`` and ``w`` on the image's row and column axes, 0 elsewhere."""
    out = [0, 0, 0, 0]
    a = _axes(lw)
    out[a[0]], out[a[1]] = h, w
    return out


def cuts(n: int, parts: int) -> list[tuple[int, int]]:
    """``n`` rows cut into ``parts`` nearly equal runs, the larger ones first."""
    return [(n * i // parts, n * (i + 1) // parts) for i in range(parts)]


def grid(shape: Sequence[int], rows: int, cols: int) -> list[Box]:
    """The tiles of an NCHW tensor, row-major (the tests' view of ``cuts``)."""
    return [(h0, h1, w0, w1) for h0, h1 in cuts(shape[2], rows) for w0, w1 in cuts(shape[3], cols)]


def _window_axis(o0: int, o1: int, stride: int, pad: int, kernel: int, n: int) -> tuple[int, int, int, int]:
    """Input rows [c0, c1) outputs [o0, o1) read, and the pads before and after them."""
    start, end = o0 * stride - pad, (o1 - 1) * stride - pad + kernel
    c0, c1 = max(0, start), min(n, end)
    return c0, c1, c0 - start, end - c1


def input_box(lw: Lowered, op: Op, out: Box, x: TensorType) -> tuple[Box, tuple[int, int, int, int]]:
    """The box of input ``x`` an op reads for output ``out``, and its tile-local pads."""
    if op.op_type not in WINDOW_OPS:
        return out, (0, 0, 0, 0)
    k, s, p = op.attrs["kernel_shape"], op.attrs["strides"], op.attrs["pads"]
    h, w = _hw(lw, x)
    h0, h1, pt, pb = _window_axis(out[0], out[1], s[0], p[0], k[0], h)
    w0, w1, pl, pr = _window_axis(out[2], out[3], s[1], p[1], k[1], w)
    return (h0, h1, w0, w1), (pt, pl, pb, pr)


def _why_not(lw: Lowered, op: Op) -> str | None:
    """Why ``op`` cannot run tile by tile (None: it can)."""
    acts = [x for x in op.inputs if x in lw.types]
    ys = [y for y in op.outputs if y]
    if len(ys) != 1 or not acts or any(len(lw.types[t].shape) != 4 for t in (*acts, ys[0])):
        return f"it is not an op on one {lw.layout} image"
    if op.op_type in WINDOW_OPS:
        a = op.attrs
        if len(a.get("kernel_shape", ())) != 2:
            return "only 2-D windows are tiled"
        if any(d != 1 for d in a.get("dilations", [1, 1])):
            return "dilated windows are not tiled"
        if a.get("ceil_mode", 0):
            return "ceil_mode windows are not tiled"
        return None if acts == [op.inputs[0]] else "it reads a second activation"
    spec = optable.spec(op.op_type)
    if spec is None or spec.inplace is None or not spec.applies(op.domain) or op.op_type == PATCH_OP:
        return "it is not a window op or an element-wise op (each output pixel reads more than a window)"
    y = lw.types[ys[0]]
    if any(lw.types[x].shape != y.shape for x in acts):
        return "it broadcasts an activation over another"
    if op.op_type in ("QuantizeLinear", "DequantizeLinear") and op.attrs.get("axis", 1) != 1:
        return "its quantization runs along a spatial axis"
    for c in (x for x in op.inputs if x and x not in lw.types):
        shape = lw.graph.constant_shapes.get(c)
        if shape is None or op.op_type in ("QuantizeLinear", "DequantizeLinear"):
            continue
        if lw.layout == "NHWC":  # a per-channel constant is the last axis (a vector broadcasts along it)
            varies = len(shape) >= 3 and tuple(shape[-3:-1]) != (1, 1) or len(shape) == 2 and shape[0] != 1
        else:
            varies = (len(shape) == 1 and shape[0] != 1) or (len(shape) >= 2 and tuple(shape[-2:]) != (1, 1))
        if varies:
            return f"its constant {c!r} varies over the image"
    return None


def _find_op(ops: Sequence[Op], name: str) -> int:
    for k, op in enumerate(ops):
        if op.name == name or name in op.outputs:
            return k
    names = [op.name for op in ops if op.op_type in WINDOW_OPS][:6]
    _fail(f"split_after: no op or tensor {name!r} in the model", field=f"{FIELD}.split_after",
          hint=f"name an op of the model (e.g. {', '.join(repr(n) for n in names)}), or write patches: auto")
    raise AssertionError  # unreachable


def find_stage(lw: Lowered, spec: StageSpec, whole: frozenset[str] = frozenset()) -> Stage:
    """The stage ending after ``spec.split_after``: every op its output depends on back to one
    whole tensor (a graph input, or a tensor in ``whole``: a previous stage's output). One error
    line naming the field when it is not a stage that can be tiled."""
    if spec.rows < 1 or spec.cols < 1:
        _fail(f"tiles: {spec.rows}x{spec.cols} is not a tile grid", field=f"{FIELD}.tiles",
              hint="write tiles: N (an N x N grid, N >= 1) or [rows, cols]")
    ops = lw.ops
    end = _find_op(ops, spec.split_after)
    out = ops[end].outputs[0]
    producer = {y: k for k, op in enumerate(ops) for y in op.outputs if y}
    stop = set(lw.inputs) | set(whole)
    members: set[int] = set()
    todo = [end]
    leaves: set[str] = set()
    while todo:
        k = todo.pop()
        if k in members:
            continue
        members.add(k)
        for x in ops[k].inputs:
            if x not in lw.types:
                continue
            if x in stop or x not in producer:
                leaves.add(x)
            else:
                todo.append(producer[x])
    order = tuple(sorted(members))
    where = f"{FIELD}.split_after"
    for k in order:
        why = _why_not(lw, ops[k])
        if why is not None:
            _fail(f"split_after {spec.split_after!r}: op {ops[k].name!r} ({ops[k].op_type}) of the stage cannot "
                  f"be tiled: {why}", field=where)
    if len(leaves) != 1:
        _fail(f"split_after {spec.split_after!r}: the stage starts from {len(leaves)} whole tensors "
              f"({', '.join(sorted(leaves)[:3])}), not one", field=where)
    (start,) = leaves
    readers: dict[str, list[int]] = {}
    for k, op in enumerate(ops):
        for x in op.inputs:
            readers.setdefault(x, []).append(k)
    for k in order:
        y = ops[k].outputs[0]
        if y != out and (y in lw.outputs or any(r not in members for r in readers.get(y, []))):
            _fail(f"split_after {spec.split_after!r}: {y!r} inside the stage is also read after it", field=where,
                  hint="split after the op where the branches meet, or write patches: auto")
    if out in lw.outputs or not readers.get(out):
        _fail(f"split_after {spec.split_after!r}: the stage output {out!r} is a graph output", field=where)
    h, w = _hw(lw, lw.types[out])
    if spec.rows > h or spec.cols > w:
        _fail(f"tiles: {spec.rows}x{spec.cols} is finer than the stage output's {h}x{w} pixels",
              field=f"{FIELD}.tiles", hint=f"use at most {h} rows and {w} columns")
    return regrid(lw, Stage(spec, order, start, out, (), ()), spec.rows, spec.cols)


def regrid(lw: Lowered, stage: Stage, rows: int, cols: int) -> Stage:
    """The same stage in another grid (the search's candidates share one find_stage)."""
    h, w = _hw(lw, lw.types[stage.output])
    return Stage(dataclasses.replace(stage.spec, rows=rows, cols=cols), stage.ops, stage.input, stage.output,
                 tuple(_axis(lw, stage.ops, stage.input, stage.output, part, 0) for part in cuts(h, rows)),
                 tuple(_axis(lw, stage.ops, stage.input, stage.output, part, 1) for part in cuts(w, cols)))


def _axis(lw: Lowered, order: Sequence[int], start: str, out: str, part: tuple[int, int], axis: int) -> Axis:
    """Backwards through the stage along one axis (0 rows, 1 columns): each tensor's interval is
    the union of what its readers need; each op's input-0 interval and pads."""
    region: dict[str, tuple[int, int]] = {out: part}
    rows: list[tuple[str, tuple[int, int], tuple[int, int], tuple[int, int]]] = []
    needs: list[list[tuple[str, tuple[int, int]]]] = []
    for k in reversed(order):
        op = lw.ops[k]
        r = region[op.outputs[0]]
        acts = [x for x in op.inputs if x in lw.types]
        got = [(x, _need(lw, op, r, lw.types[x], axis)) for x in acts]
        for x, (c0, c1, _, _) in got:
            old = region.get(x)
            region[x] = (c0, c1) if old is None else (min(old[0], c0), max(old[1], c1))
        c0, c1, pb, pa = got[0][1]
        rows.append((op.name, r, (c0, c1), (pb, pa)))
        needs.append([(x, (n0, n1)) for x, (n0, n1, _, _) in got])
    rows.reverse()
    needs.reverse()
    n = lw.types[start].shape[_axes(lw)[axis]]
    region[start] = (0, n)
    key = tuple((r[1] - r[0], i[1] - i[0], *((b - a, (a, b) == region[x]) for x, (a, b) in need))
                for (_, r, i, _), need in zip(rows, needs))
    return Axis(part, tuple(rows), key)


def _need(lw: Lowered, op: Op, out: tuple[int, int], x: TensorType, axis: int) -> tuple[int, int, int, int]:
    """The interval of x's axis an op reads for its output interval, and the pads around it."""
    if op.op_type not in WINDOW_OPS:
        return out[0], out[1], 0, 0
    k, s, p = op.attrs["kernel_shape"], op.attrs["strides"], op.attrs["pads"]
    return _window_axis(out[0], out[1], s[axis], p[axis], k[axis], x.shape[_axes(lw)[axis]])


# --- the rewrite -------------------------------------------------------------------------------

def _shape(lw: Lowered, t: TensorType, b: Box) -> tuple[int, ...]:
    """The shape of box ``b`` of image ``t``."""
    out = list(t.shape)
    h, w = _axes(lw)
    out[h], out[w] = b[1] - b[0], b[3] - b[2]
    return tuple(out)


def apply(lw: Lowered, specs: Sequence[StageSpec]) -> Lowered:
    """``lw`` with each stage run tile by tile (module docstring); stage i starts from stage
    i-1's output or a graph input. The result remembers the untiled model (``untiled``) and
    its stages (``stages``)."""
    if not specs:
        return lw
    base = lw
    whole: set[str] = set()
    stages: list[Stage] = []
    for spec in specs:
        stage = find_stage(lw, spec, frozenset(whole))
        lw = _rewrite(lw, stage)
        whole.add(stage.output)
        stages.append(stage)
    return dataclasses.replace(lw, untiled=base, stages=tuple(stages))


def _rewrite(lw: Lowered, stage: Stage) -> Lowered:
    ops = lw.ops
    types: dict[str, TensorType] = dict(lw.types)
    quant: dict[str, Quant] = dict(lw.quant)
    next_node = max([len(lw.graph.nodes) - 1, *(op.node for op in ops)]) + 1
    new: list[Op] = []
    members = [ops[k] for k in stage.ops]
    end = lw.types[stage.output]
    prev = ""
    for t, (box, rows) in enumerate(stage.tiles):
        name_of = {stage.input: stage.input}  # tensor -> its tile tensor
        box_of: dict[str, Box] = {stage.input: (0, _hw(lw, lw.types[stage.input])[0], 0, _hw(lw, lw.types[stage.input])[1])}
        region = {row.op: row.output_box for row in rows}
        for op, row in zip(members, rows):
            y = op.outputs[0]
            inputs = list(op.inputs)
            for i, x in enumerate(op.inputs):
                if x not in lw.types:
                    continue
                need = input_box(lw, op, row.output_box, lw.types[x])[0]
                src, have = name_of[x], box_of[x]
                crop = f"{x}@{t}:{op.name}"
                if need != have and crop in types:  # the op reads the same window twice (Add(x, x))
                    src = crop
                elif need != have:
                    types[crop] = TensorType(lw.types[x].dtype, _shape(lw, lw.types[x], need))
                    if x in lw.quant:
                        quant[crop] = lw.quant[x]
                    starts = _at(lw, need[0] - have[0], need[2] - have[2])
                    new.append(Op(next_node, f"{op.name}@{t}:crop{i}", "Slice", "", (src,), (crop,),
                                  {"starts": starts, "steps": [1, 1, 1, 1],
                                   "ends": [s + n for s, n in zip(starts, types[crop].shape)]}))
                    next_node += 1
                    src = crop
                inputs[i] = src
            ty = f"{y}@{t}"
            types[ty] = TensorType(lw.types[y].dtype, _shape(lw, lw.types[y], row.output_box))
            if y in lw.quant:
                quant[ty] = lw.quant[y]
            attrs = dict(op.attrs)
            if op.op_type in WINDOW_OPS:
                attrs["pads"] = list(row.pads)
            tile = Op(next_node, f"{op.name}@{t}", op.op_type, op.domain, tuple(inputs), (ty,), attrs, op.fused,
                      origin=op.origin if op.origin is not None else op.node)
            new.append(dataclasses.replace(tile, workspace=lowering.workspace_of(types, tile)))
            next_node += 1
            name_of[y], box_of[y] = ty, region[op.name]
        last = t == len(stage.tiles) - 1
        partial = stage.output if last else f"{stage.output}@upto{t}"
        if not last:
            types[partial] = end
            if stage.output in lw.quant:
                quant[partial] = lw.quant[stage.output]
        new.append(Op(next_node, f"{stage.output}@{t}:patch", PATCH_OP, "arena",
                      (name_of[stage.output],) + ((prev,) if prev else ()), (partial,),
                      {"starts": _at(lw, box[0], box[2])}))
        next_node += 1
        prev = partial
    # The tiles run where the stage's last op ran: every op before it that is not the stage's
    # reads nothing of the stage (find_stage), every op after it may read the stage output.
    inside = set(stage.ops)
    last_op = stage.ops[-1]
    before = tuple(op for k, op in enumerate(ops) if k < last_op and k not in inside)
    after = ops[last_op + 1:]
    return dataclasses.replace(lw, ops=before + tuple(new) + after, types=types, quant=quant)


# --- what it costs ---------------------------------------------------------------------------

def _op_macs(lw: Lowered, op: Op) -> int:
    """macs.op_macs (the op table's rule) over lw's shapes; that module sits above this one."""
    spec = optable.spec(op.op_type)
    if spec is None or spec.macs is None:
        return 0

    def shape(name: str) -> tuple[int, ...] | None:
        t = lw.types.get(name)
        return t.shape if t is not None else lw.graph.constant_shapes.get(name)

    n = spec.macs(op.attrs, [shape(x) if x else None for x in op.inputs], [shape(y) if y else None for y in op.outputs])
    return max(0, n) if n is not None else 0


def total_macs(lw: Lowered) -> int:
    return sum(_op_macs(lw, op) for op in lw.ops)


def tiled(lw: Lowered, option: str) -> Lowered:
    """``lw`` with the stages the patches option names (off and auto: as it is; planning
    chooses auto's)."""
    stages = parse(option)
    return apply(lw, stages) if stages else lw


def describe(stage: Stage) -> dict[str, object]:
    """The plan file's account of one stage (schemas/plan.schema.json ``patches.stages``)."""
    return {"split_after": stage.spec.split_after, "rows": stage.spec.rows, "cols": stage.spec.cols,
            "input": stage.input, "output": stage.output,
            "tiles": [{"output_box": list(box),
                       "ops": [{"op": r.op, "input_box": list(r.input_box), "pads": list(r.pads),
                                "output_box": list(r.output_box)} for r in rows]}
                      for box, rows in stage.tiles]}


def stage_names(lw: Lowered) -> Mapping[str, int]:
    """Each op that may end a stage (by name) and its index: window and element-wise ops."""
    return {op.name: k for k, op in enumerate(lw.ops) if _why_not(lw, op) is None}


def stage_macs(lw: Lowered, stage: Stage, per_op: Sequence[int] | None = None) -> tuple[int, int]:
    """(untiled, tiled) MACs of the stage's ops: an op's MACs are its output pixels times a
    constant (window ops), so the tiles' share is their output boxes' area (separable: the
    rows' lengths times the columns')."""
    untiled = tiled = 0
    for i, k in enumerate(stage.ops):
        op = lw.ops[k]
        n = _op_macs(lw, op) if per_op is None else per_op[k]  # per_op: each op's, computed once
        h, w = _hw(lw, lw.types[op.outputs[0]])
        rows = sum(r.ops[i][1][1] - r.ops[i][1][0] for r in stage.rows)
        cols = sum(c.ops[i][1][1] - c.ops[i][1][0] for c in stage.cols)
        untiled += n
        tiled += n * rows * cols // (h * w)
    return untiled, tiled


def stage_peak(lw: Lowered, stage: Stage, alignment: int) -> int:
    """The live bytes a stage's tiles reach, as liveness would plan the rewrite: the whole stage
    input and output, and per tile op its tile tensors (producer to last reader, a crop at its
    reader), an element-wise op or a depthwise conv writing over an input that dies there (the
    depthwise one with its one-channel workspace). The search's estimate; the chosen stages are
    then planned exactly."""
    def size(dtype: str, shape: Sequence[int]) -> int:
        n = max(1, -(-int(math.prod(shape)) * dtypes.bits(dtype) // 8))
        return -(-n // alignment) * alignment

    whole = size(lw.types[stage.input].dtype, lw.types[stage.input].shape) + \
        size(lw.types[stage.output].dtype, lw.types[stage.output].shape)
    members = [lw.ops[k] for k in stage.ops]
    last_reader: dict[str, int] = {}
    for i, op in enumerate(members):
        for x in op.inputs:
            last_reader[x] = i
    def tile_peak(rows: Sequence[TileOp]) -> int:
        peak = whole
        box = {stage.input: (0, 0, 0, 0)}
        live: dict[str, int] = {}
        for i, (op, row) in enumerate(zip(members, rows)):
            y = op.outputs[0]
            ty = lw.types[y]
            out = size(ty.dtype, _shape(lw, ty, row.output_box))
            extra = 0
            reuse = None
            for x in (x for x in op.inputs if x in lw.types):
                need = input_box(lw, op, row.output_box, lw.types[x])[0]
                if x == stage.input or need != box.get(x):
                    extra += size(lw.types[x].dtype, _shape(lw, lw.types[x], need))  # a crop
                elif last_reader[x] == i and x in live and reuse is None and (
                        op.op_type not in WINDOW_OPS or _depthwise(lw, op)) and live[x] >= out:
                    reuse = x
            if reuse is not None and op.op_type in WINDOW_OPS:
                b = box[reuse]
                extra += size(lw.types[reuse].dtype, (1, 1, b[1] - b[0], b[3] - b[2]))  # one channel saved
            peak = max(peak, whole + sum(live.values()) + extra + (0 if reuse is not None else out))
            for x in [x for x in live if last_reader.get(x) == i and x != reuse]:
                del live[x]
            if reuse is not None:
                live[y] = live.pop(reuse)
            elif y != stage.output:
                live[y] = out
            box[y] = row.output_box
        return peak

    rows_of = {r.key: r for r in stage.rows}  # tiles of equal sizes peak alike: one of each
    cols_of = {c.key: c for c in stage.cols}
    return max(tile_peak([TileOp(name, (ri[0], ri[1], ci[0], ci[1]), (rp[0], cp[0], rp[1], cp[1]),
                                 (ro[0], ro[1], co[0], co[1]))
                          for (name, ro, ri, rp), (_, co, ci, cp) in zip(rr.ops, cc.ops)])
               for rr in rows_of.values() for cc in cols_of.values())


def _bytes(lw: Lowered, name: str, alignment: int) -> int:
    t = lw.types[name]
    n = max(1, -(-t.elements * dtypes.bits(t.dtype) // 8))
    return -(-n // alignment) * alignment


def _depthwise(lw: Lowered, op: Op) -> bool:
    """A depthwise conv that may write over its input (liveness's in-place depthwise: NCHW only)."""
    if lw.layout != "NCHW":
        return False
    x, y = lw.types[op.inputs[0]], lw.types[op.outputs[0]]
    return int(op.attrs.get("group", 1)) == x.shape[1] == y.shape[1] and x.dtype == y.dtype


_STAGE = re.compile(r"(.+?):([0-9]+)(?:x([0-9]+))?(?:;|$)", re.S)


def parse(text: str) -> tuple[StageSpec, ...] | None:
    """The patches option's stages ('NODE:RxC' or 'NODE:N' joined by ';'; a node name may hold
    ';' itself, as tf2onnx's fused names do: a stage ends at ':digits' before ';' or the end);
    None for off and auto (auto: ``choose``). One error line naming the field otherwise."""
    if text in ("off", "auto"):
        return None
    out = []
    at = 0
    while at < len(text):
        m = _STAGE.match(text, at)
        if m is None:
            _fail(f"{text!r} is not off, auto or NODE:RxC", field=FIELD,
                  hint="write off, auto, or {split_after: NODE, tiles: N} (an N x N grid; tiles: [rows, cols])")
            raise AssertionError  # unreachable
        r = int(m.group(2))
        c = int(m.group(3)) if m.group(3) is not None else r
        if r < 1 or c < 1:
            _fail(f"{r}x{c} is not a tile grid", field=f"{FIELD}.tiles",
                  hint="write tiles: N (an N x N grid, N >= 1) or [rows, cols]")
        out.append(StageSpec(m.group(1), r, c))
        at = m.end()
    if not out:
        _fail(f"{text!r} is not off, auto or NODE:RxC", field=FIELD)
    return tuple(out)


def text(specs: Sequence[StageSpec]) -> str:
    """The option's text form of ``specs`` (parse's inverse); off for none."""
    return ";".join(f"{s.split_after}:{s.rows}x{s.cols}" for s in specs) or "off"


# --- auto: which stages, which grids ---------------------------------------------------------
# ``patches: auto``: which stages run tile by tile, and in which grids (MCUNetV2's choice).
#
# A candidate is a sequence of at most ``MAX_STAGES`` stages, each from a cut of the network (a
# point where one tensor is all that crosses: the graph input, or a stage output) to a later
# cut, each in one of ``GRIDS``. Stages are independent: a configuration's peak is the largest
# of its stages' peaks (model/patches.stage_peak) and of the untiled load after its last stage,
# its MACs the untiled MACs plus each stage's halo overhead. So the search weighs every
# (stage, grid) once, then, for each candidate peak P from the smallest, asks by dynamic
# programming over the cuts for the least-MAC sequence whose every part stays under P: the first
# P whose sequence keeps the MACs within ``MAC_CAP`` is the smallest peak over the candidates.
# The chosen stages are then planned exactly (planning.plan_model), and the untiled plan is
# kept when it is not larger.

GRIDS: tuple[tuple[int, int], ...] = (*((n, n) for n in range(2, 9)), *((n, 1) for n in range(2, 9)))
MAX_STAGES = 3
MAX_STAGE_OPS = 24  # ops in one stage (a candidate spans at most this many)
CANDIDATES_PER_SECOND = 2000  # the search's work per second of time_limit (about 0.2-0.5 ms of CPU each)
MAC_CAP = 0.20  # at most 20 % more MACs than the untiled network


@dataclasses.dataclass(frozen=True)
class Choice:
    """The stages auto chose (() : none beats the untiled peak), the peak the search expects,
    the MACs untiled and with them, how many (stage, grid) candidates it weighed, and whether it
    weighed them all (proven) or stopped at the time limit."""

    stages: tuple[StageSpec, ...]
    peak: int
    macs_untiled: int
    macs: int
    candidates: int
    status: Status


def _loads(mp: ModelProblem) -> list[int]:
    """Live bytes at each op of the untiled problem."""
    buffers = mp.problem().buffers
    n = len(mp.schedule)
    delta = [0] * (n + 1)
    for b in buffers:
        delta[b.start] += b.size
        delta[b.end + 1] -= b.size
    out, acc = [], 0
    for k in range(n):
        acc += delta[k]
        out.append(acc)
    return out


def _cuts(lw: Lowered) -> list[int]:
    """Ops k whose output is the only thing the ops after k need of ops 0..k (a stage from the
    graph input may end there: every op up to it is its ancestor and can be tiled)."""
    out = []
    for name, k in stage_names(lw).items():
        try:
            stage = find_stage(lw, StageSpec(name, 1, 1))
        except ArenaError:
            continue
        if stage.ops == tuple(range(k + 1)):
            out.append(k)
    return sorted(out)


def choose(lw: Lowered, mp: ModelProblem, time_limit: float) -> Choice:
    """The stages and grids with the smallest peak under the MAC cap (module docstring); lw is the
    untiled lowered model, mp its problem."""
    return ladder(lw, mp, time_limit)[0]


def ladder(lw: Lowered, mp: ModelProblem, time_limit: float) -> list[Choice]:
    """``choose``'s answer first, then each larger peak whose stages recompute fewer MACs, up to
    the untiled network (stages ()) last: the trade between RAM and time auto weighs, which
    ``arena-tool fit`` searches (a faster choice is worth it when its peak still fits)."""
    # A work budget, not the clock: the same model and limit weigh the same candidates on a busy
    # machine too, so the plan is byte-identical run to run; the clock only guards a pathological
    # model (three times the limit).
    budget_candidates = max(1, int(CANDIDATES_PER_SECOND * time_limit))
    deadline = time.monotonic() + 3 * max(0.0, time_limit)
    per_op = [_op_macs(lw, op) for op in lw.ops]
    macs0 = sum(per_op)
    loads = _loads(mp)
    n = len(loads)
    cuts = _cuts(lw)
    rest = [max(loads[k + 1:], default=0) for k in range(n)]  # untiled load after op k
    options: dict[tuple[int, int], list[tuple[int, int, StageSpec]]] = {}  # (from, to) -> (peak, extra MACs, spec)
    weighed = 0
    status = Status.PROVEN
    starts = [-1, *cuts]
    top = max(loads, default=0)
    # Short stages first: under the time limit the search has weighed the cheap ones (long stages
    # rarely win: their halos grow with every window op).
    spans = sorted(((a, b) for a in starts for b in cuts if a < b <= a + MAX_STAGE_OPS), key=lambda ab: (ab[1] - ab[0], ab))
    for a, b in spans:
        if weighed >= budget_candidates or time.monotonic() > deadline:
            status = Status.TIME_LIMIT
            break
        start = lw.inputs[0] if a < 0 else lw.ops[a].outputs[0]
        if a < 0 and len(lw.inputs) != 1:
            continue
        if _bytes(lw, start, mp.options.alignment) + _bytes(lw, lw.ops[b].outputs[0], mp.options.alignment) >= top:
            continue  # the whole input and output alone reach the untiled peak
        try:
            base = find_stage(lw, StageSpec(lw.ops[b].name, 1, 1), frozenset() if a < 0 else frozenset({start}))
        except ArenaError:
            continue
        if base.ops != tuple(range(a + 1, b + 1)):
            continue  # not a stage from this cut
        h, w = _hw(lw, lw.types[base.output])
        for rows, cols in GRIDS:
            if rows > h or cols > w:
                continue
            stage = regrid(lw, base, rows, cols)
            weighed += 1
            untiled, tiled = stage_macs(lw, stage, per_op)
            options.setdefault((a, b), []).append(
                (stage_peak(lw, stage, mp.options.alignment), tiled - untiled, stage.spec))
    whole = Choice((), max(loads, default=0), macs0, macs0, weighed, status)
    budget = int(MAC_CAP * macs0)
    out: list[Choice] = []
    for peak in sorted({p for opts in options.values() for p, _, _ in opts}):
        if peak >= whole.peak:
            break
        found = _cheapest(starts, cuts, options, rest, peak, budget if not out else out[-1].macs - macs0 - 1)
        if found is not None:
            extra, specs = found
            out.append(Choice(tuple(specs), max(peak, *(rest[b] for b in [_end(lw, specs[-1])])),
                              macs0, macs0 + extra, weighed, status))
            if extra == 0:
                break
    return [*out, whole]


def _end(lw: Lowered, spec: StageSpec) -> int:
    return next(k for k, op in enumerate(lw.ops) if op.name == spec.split_after)


def _cheapest(starts: Sequence[int], cuts: Sequence[int],
              options: dict[tuple[int, int], list[tuple[int, int, StageSpec]]], rest: Sequence[int], peak: int,
              budget: int) -> tuple[int, list[StageSpec]] | None:
    """The least extra MACs of at most MAX_STAGES consecutive stages from the graph input, each
    under ``peak`` and ending where the untiled rest stays under it; None when over ``budget``."""
    # cost[(cut, stages used)] = (extra MACs, the specs so far)
    cost: dict[tuple[int, int], tuple[int, list[StageSpec]]] = {(-1, 0): (0, [])}
    for b in cuts:  # increasing: every stage before b is done
        for a in starts:
            if a >= b:
                break
            fits = [(extra, spec) for p, extra, spec in options.get((a, b), []) if p <= peak]
            if not fits:
                continue
            extra, spec = min(fits, key=lambda e: (e[0], e[1].tiles))
            for used in range(MAX_STAGES):
                prev = cost.get((a, used))
                if prev is None:
                    continue
                cand = (prev[0] + extra, [*prev[1], spec])
                key = (b, used + 1)
                if key not in cost or cand[0] < cost[key][0]:
                    cost[key] = cand
    ends = [v for (b, used), v in cost.items() if b >= 0 and rest[b] <= peak and v[0] <= budget]
    return min(ends, key=lambda v: (v[0], len(v[1]))) if ends else None
