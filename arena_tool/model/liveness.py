"""Lowered -> ModelProblem: the schedule, every arena tensor's size and inclusive live range,
in-place and view aliases, and per-op scratch workspaces.

It plans what runs: the ops of the lowering stage (quantized QDQ models as their
integer ops), never the float graph they were exported as.

Live ranges are inclusive schedule indices. A graph input lives from op 0, an op's
output from its op, each to its last reader; graph outputs to the last op; an output
nobody reads just during its op. Size = ceil(elements * bits / 8) rounded up to the
alignment (a zero-element tensor still takes one aligned unit, as Buffer sizes are > 0).

Worked example (the design notes' chain, MatMuls that cannot work in place)::

    T0 (input, 4 KB) -MatMul-> T1 (6 KB) -MatMul-> T2 (6 KB) -MatMul-> T3 (output, 2 KB)
    T0 [0, 0]   T1 [0, 1]   T2 [1, 2]   T3 [2, 2]     lower bound 12 KB

Aliases (options.inplace, on by default). ``alias_of`` names the root whose bytes a
tensor shares, never a chain; ModelProblem.problem() merges each group's ranges.

The op table (``optable.OpSpec``: ``view``, ``inplace``, ``depthwise``) says which op may alias.

* Views: Reshape/Flatten/Squeeze/Unsqueeze/Identity outputs share their input's bytes
  when the planned bytes are identical (same elements and bits). Nothing is written.
* In place: a pure element-wise op (``optable.UNARY`` over input 0, or ``optable.BINARY`` with
  every input of the output's shape, i.e. no broadcasting; and their integer forms) writes
  over its input X when (a) this op is the last
  reader of every tensor sharing X's bytes, (b) none of them is a graph output, whose
  bytes must survive the run, (c) none is a graph input: graph inputs belong to the
  caller, who may read them again after the run (the plan never clobbers them), and
  (d) elements match and the output's element is no wider than X's, so writing
  element i never reaches an element not yet read (DequantizeLinear widening never
  qualifies), and (e) the output's planned size equals the group's: an alias never
  costs bytes. A narrower output (QuantizeLinear float -> int8, a narrowing Cast)
  that took the wider slot would hold all of it for its whole life, because one
  buffer has one size; it is planned as a buffer of its own instead.
* In-place depthwise (options.inplace_depthwise, TinyEngine's scheme): a depthwise Conv or
  QLinearConv (group = input channels = output channels, NCHW, same element type, no more
  output elements than input) writes over its input under (a)-(c); the runtime saves one
  input channel in the op's workspace before writing the output channel over it (output
  channel i only reaches input channels <= i). A TFLite DEPTHWISE_CONV_2D of depth multiplier 1
  (NHWC) too: output (pixel p, channel c) lands on input (p, c), so saving 4 channels' planes
  before writing those channels leaves every other channel's bytes alone. A stride-2 one leaves the output in the
  input's larger slot, which the element-wise op after it may share; such an alias into a
  larger slot is kept only where dropping it would not lower the bound (_best_aliasing).
* Concat views: a QLinearConcat's input that only it reads, produced by an op of this model,
  lies at its position of the output (``alias_offset`` bytes in) when that position is one run
  of the output's bytes (every dim before the axis 1: one image's NCHW channels) at an aligned
  offset; its producer writes it there and the concat copies nothing (_concat_parts). The
  group is one buffer from the first input's op on: kept where the bound is not lower without
  it (_best_aliasing). SqueezeNet's fire modules: both expand convs write into the concat.
* Never: other Convs, Gemm/MatMul, pools and everything else not listed.

Schedule (options.schedule): 'memory' plans the topological order scheduling.memory_order
finds when its lower bound is strictly below the graph order's.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Iterator, Mapping, Sequence

from arena_tool.core import dtypes, files, schema
from arena_tool.model import lowering, optable, scheduling, tflite_lower, tflite_model
from arena_tool.core.errors import ArenaError, fail
from arena_tool.model.lowering import Lowered, Op
from arena_tool.core.problem import ARENA_KERNELS, EXECUTIONS, KINDS, SCHEDULES, SCRATCHES, ModelOptions, ModelProblem, Quant, Step, \
    Tensor, align_up, lower_bound

def model_problem(path: str, options: ModelOptions, order: Sequence[int] | None = None,
                  lowered: Lowered | None = None) -> ModelProblem:
    """Load the model at ``path`` (ONNX, or a TFLite flatbuffer: tflite_model) and reduce it to a
    ModelProblem under ``options``.

    order: the ops to run, by node index (ONNX: the lowered op's anchor node; TFLite: the
    operator index), a topological permutation; None: the graph's order, or the memory
    schedule under ``schedule: memory``.
    lowered: the ONNX model already lowered (``lower``) with the same input shapes, so a
    caller deriving it under several options loads it once.
    """
    _check_options(options)

    if tflite_model.is_tflite(path) and options.kernels != ARENA_KERNELS:  # TFLM runs it (TFL3 at bytes 4..8)
        for key, default in (("io", "model"), ("io_buffers", "arena"), ("patches", "off")):
            if getattr(options, key) != default:
                fail(f"{key}: {getattr(options, key)} applies to ONNX models and to a .tflite on arena's runtime; "
                     f"planned for TFLite Micro, a .tflite model's inputs, outputs and their buffers are TFLM's",
                     file=path, field=key,
                     hint=f"drop {key} for this model, or run it on arena's runtime (--kernels arena; runtime: arena)"
                          if key != "io" else "drop io for this model (a full-integer .tflite already takes int8: "
                          "convert it with inference_input_type=tf.int8), or plan its ONNX export")
        mp = tflite_model.model_problem(path, options, order=order)
        if order is None and options.schedule == "memory":
            sched = scheduling.memory_order(scheduling.graph_of(mp))
            alt = tflite_model.model_problem(path, options, order=[mp.order[i] for i in sched.order])
            mp = alt if _bound(alt) < _bound(mp) else mp
        return mp
    try:
        return build(lowered or lower(path, options), options, order)
    except ArenaError as e:  # deep code may not know which file it is reading
        raise e.located(file=path)


def lower(path: str, options: ModelOptions) -> Lowered:
    """The ONNX model at ``path`` lowered under the options that change what is loaded; a .tflite
    (kernels: arena) lowered with TFLite's semantics (tflite_lower)."""
    if tflite_model.is_tflite(path):
        if options.kernels != ARENA_KERNELS:
            fail("this .tflite model is planned for TFLite Micro, whose kernels run it", file=path, field="kernels",
                 hint="set kernels: arena (--kernels arena) for arena's own runtime")
        if options.io != "model":
            fail(f"io: {options.io} does not apply to a .tflite model on arena's runtime: its inputs and outputs "
                 f"are the model's own tensors", file=path, field="io",
                 hint="drop io for this model (a full-integer .tflite already takes int8: convert it with "
                      "inference_input_type=tf.int8)")
        graph, quant = tflite_lower.load(path)
        lowered = lowering.lower(graph)
        return dataclasses.replace(lowered, quant={**quant, **lowered.quant}, _cache=lowered._cache, layout="NHWC")
    try:
        lowered = lowering.load(path, options.input_shapes,
                                allow_external_data_outside=options.allow_external_data_outside)
        return lowering.integer_io(lowered) if options.io == "int8" else lowered
    except ArenaError as e:
        raise e.located(file=path)


def build(lowered: Lowered, options: ModelOptions, order: Sequence[int] | None = None) -> ModelProblem:
    """model_problem of an already lowered model."""
    ops = _in_order(lowered, order) if order is not None else list(lowered.ops)
    mp, builder = _best_aliasing(lowered, options, ops)
    if order is None and options.schedule == "memory" and len(ops) > 1:
        sched = scheduling.memory_order(builder.sched_graph(mp))
        if list(sched.order) != list(range(len(ops))):
            alt, _ = _best_aliasing(lowered, options, [ops[i] for i in sched.order])
            if _bound(alt) < _bound(mp):  # never worse than the graph's order
                mp = alt
    return _grown(mp, ops)


def _grown(mp: ModelProblem, ops: Sequence[Op]) -> ModelProblem:
    """mp with each TFLite conv's im2col workspace grown, whole columns, into the room the peak
    leaves at its step (up to Workspace.full): the same lower bound, fewer GEMM calls."""
    by_name = {op.name: op for op in ops}
    grow = {st.workspace: by_name[st.name].workspace for st in mp.schedule
            if st.workspace is not None and st.name in by_name and st.op_type in lowering.TFL_SCRATCH}
    grow = {name: ws for name, ws in grow.items() if ws is not None and ws.column and ws.full > ws.row}
    if not grow:
        return mp
    buffers = mp.problem().buffers
    bound = lower_bound(buffers)
    tensors = []
    for t in mp.tensors:
        ws = grow.get(t.name)
        if ws is not None:
            load = max(sum(b.size for b in buffers if b.start <= s <= b.end) for s in range(t.first_op, t.last_op + 1))
            n = min(ws.full, ws.row + (bound - load) // ws.column * ws.column)
            while n > ws.row and align_up(n, mp.options.alignment) - t.size > bound - load:
                n -= ws.column
            t = dataclasses.replace(t, shape=(n,), elements=n, size=align_up(n, mp.options.alignment))
        tensors.append(t)
    return dataclasses.replace(mp, tensors=tuple(tensors))


def _bound(mp: ModelProblem) -> int:
    return lower_bound(mp.problem().buffers)


def _best_aliasing(lowered: Lowered, options: ModelOptions, ops: list[Op]) -> tuple[ModelProblem, "_Builder"]:
    """The problem with every alias that does not raise the lower bound.

    Element-wise in-place and views never cost bytes (equal sizes); an in-place depthwise
    Conv whose output is smaller than its input (stride 2) keeps the input's slot for the
    output's whole life, which can raise the peak later, and a TFLite one copies its channels
    first: each such alias is dropped when the bound without it is no higher."""
    builder = _Builder(lowered, options, ops)
    mp = builder.build()
    dropped: set[int] = set()
    for s in sorted(builder.shrinking):
        trial = _Builder(lowered, options, ops, no_shrink=frozenset(dropped | {s}))
        alt = trial.build()
        if _bound(alt) <= _bound(mp):
            dropped.add(s)
            mp = alt
    # a concat view copies nothing: kept unless the bound is lower without it (tried one by one
    # only where it is lower without them all: DenseNet's 58 concats cost one more build)
    if builder.concats:
        none = _Builder(lowered, options, ops, no_shrink=frozenset(dropped), no_view=frozenset(builder.concats)).build()
        copied: set[int] = set()
        for s in sorted(builder.concats) if _bound(none) < _bound(mp) else ():
            alt = _Builder(lowered, options, ops, no_shrink=frozenset(dropped), no_view=frozenset(copied | {s})).build()
            if _bound(alt) < _bound(mp):
                copied.add(s)
                mp = alt
    return mp, builder


def _in_order(lowered: Lowered, order: Sequence[int]) -> list[Op]:
    """The lowered ops in ``order`` (node indices), refused unless a topological permutation."""
    by_node = {op.node: op for op in lowered.ops}
    nodes = [int(k) for k in order]
    if sorted(nodes) != sorted(by_node):
        fail(f"schedule {nodes[:12]}{'...' if len(nodes) > 12 else ''} is not a permutation of the model's "
             f"{len(by_node)} ops (node indices {sorted(by_node)[:12]}...)", field="schedule",
             hint="list every op the model runs exactly once, by node index")
    written = {y for op in lowered.ops for y in op.outputs if y}
    ready = set(lowered.inputs)
    ops = []
    for k, node in enumerate(nodes):
        op = by_node[node]
        for x in op.inputs:
            if x in written and x not in ready:
                fail(f"schedule[{k}]: op {op.name or op.op_type} (node {node}) reads {x} before the op that "
                     f"writes it runs", field=f"schedule[{k}]", hint="the order must be topological")
        ready.update(y for y in op.outputs if y)
        ops.append(op)
    return ops


def read_bitwidths(path: str) -> tuple[tuple[str, int], ...]:
    """The bitwidth map file ({"tensor": bits, ...}, schemas/bitwidths.schema.json), sorted by name."""
    hint = f'write {{"tensor_name": bits, ...}} with integer bits from 1 to {dtypes.MAX_BITS}'
    doc = files.read_json(path, "bitwidth file", hint)
    try:
        schema.check_json(doc, "bitwidths", path)
    except ArenaError as e:
        e.hint = hint
        raise
    return tuple(sorted((str(k), int(v)) for k, v in doc.items()))


def _check_options(options: ModelOptions) -> None:
    if not isinstance(options.alignment, int) or options.alignment < 1:
        fail(f"alignment must be a positive integer, not {options.alignment!r}", field="alignment",
             hint="use a power of two such as 4, 8 or 16")
    if options.execution not in EXECUTIONS:
        fail(f"unknown execution {options.execution!r}", field="execution",
             hint=f"expected one of {', '.join(EXECUTIONS)}")
    io = options.io_alignment
    if io is not None and (not isinstance(io, int) or io < 1 or io & (io - 1)):
        fail(f"io_alignment must be a power of two, not {io!r}", field="io_alignment",
             hint="use the DMA's or the cache line's alignment, e.g. 32 on a Cortex-M7")
    if options.schedule not in SCHEDULES:
        fail(f"unknown schedule {options.schedule!r}", field="schedule", hint=f"expected one of {', '.join(SCHEDULES)}")
    if options.scratch not in SCRATCHES:
        fail(f"unknown scratch mode {options.scratch!r}", field="scratch",
             hint=f"expected one of {', '.join(SCRATCHES)}")
    if options.activation_dtype is not None:
        dtypes.check_name(options.activation_dtype, field="activation_dtype")
    for name, bits in options.bitwidths:
        if not isinstance(bits, int) or not 1 <= bits <= dtypes.MAX_BITS:
            fail(f"{bits!r} bits is not a bitwidth", field=f"bitwidths.{name}",
                 hint=f"use an integer from 1 to {dtypes.MAX_BITS}")


class _Builder:
    """One model_problem call's working state (never shared)."""

    def __init__(self, lowered: Lowered, options: ModelOptions, ops: list[Op] | None = None,
                 no_shrink: frozenset[int] = frozenset(), no_view: frozenset[int] = frozenset()) -> None:
        self.g = lowered
        self.opt = options
        self.bitwidths = dict(options.bitwidths)
        self.steps = list(lowered.ops) if ops is None else ops
        self.no_shrink = no_shrink  # steps that must not alias into a larger slot
        self.no_view = no_view  # concat steps that copy their inputs
        self.concats: set[int] = set()  # concat steps with an input written in place (a concat view)
        self.depthwise: set[int] = set()  # steps whose depthwise Conv works in place
        # steps whose alias is kept only where dropping it would raise the bound: an output aliasing a
        # larger slot, a TFLite depthwise conv in place (its channel copies cost instructions)
        self.shrinking: set[int] = set()
        self.outputs = set(lowered.outputs)
        self.offset: dict[str, int] = {}  # concat views: the input's bytes into the concat's output
        known = set(lowered.types) | set(lowered.graph.constant_shapes)
        for name in sorted(self.bitwidths):
            if name not in known:
                fail(f"no tensor {name!r} in the model", file=lowered.path, field=f"bitwidths.{name}",
                     hint="bitwidth names must be tensor names of the model (activations or weights)")

    def build(self) -> ModelProblem:
        g = self.g
        last = len(self.steps) - 1
        first_op: dict[str, int] = {name: 0 for name in g.inputs}
        last_op: dict[str, int] = {name: 0 for name in g.inputs}
        for s, node in enumerate(self.steps):
            for x in node.inputs:
                if x in last_op:
                    last_op[x] = s
            for y in node.outputs:
                if y and y not in first_op:
                    first_op[y] = last_op[y] = s
        for name in g.outputs:
            if name in last_op:
                last_op[name] = max(last, first_op[name])
        self.first_op, self.last_op = first_op, last_op
        self.dtype = {name: self._dtype(name) for name in first_op}
        alias = self._aliases() if self.opt.inplace and self.opt.execution == "sequential" else {}

        tensors = [self._tensor(name, "input", alias) for name in g.inputs]
        steps = []
        for s, node in enumerate(self.steps):
            for y in dict.fromkeys(node.outputs):
                if y and y not in g.inputs:  # every output of a scheduled node has a static type
                    tensors.append(self._tensor(y, "output" if y in self.outputs else "activation", alias))
            ws = self._workspace(s, node)
            if ws is not None:
                tensors.append(ws)
            steps.append(Step(node.node, node.name, node.op_type, node.inputs, node.outputs,
                              ws.name if ws is not None else None, node.domain, node.fused))
        if self.opt.execution == "pipelined":  # op k may overlap ops k-1 and k+1
            tensors = [dataclasses.replace(t, first_op=max(0, t.first_op - 1), last_op=min(last, t.last_op + 1))
                       for t in tensors]
        return ModelProblem(
            model=g.path, model_sha256=g.sha256, options=self.opt, schedule=tuple(steps),
            tensors=tuple(tensors), weights_bytes=self._weights_bytes(),
            integer_ops=g.integer_ops, qdq_fused=g.qdq_fused,
        )

    # --- sizes ---

    def _dtype(self, name: str) -> str:
        model_dtype = self.g.types[name].dtype
        if name in self.bitwidths:
            return dtypes.with_bits(model_dtype, self.bitwidths[name])
        return self.opt.activation_dtype or model_dtype

    def _size(self, elements: int, dtype: str) -> int:
        a = self.opt.alignment
        return max(align_up(dtypes.nbytes(elements, dtypes.bits(dtype)), a), a)

    def _tensor(self, name: str, kind: str, alias: Mapping[str, str]) -> Tensor:
        assert kind in KINDS
        t = self.g.types[name]
        q = self.g.quant.get(name)
        quant = q if q is not None and self.dtype[name] == t.dtype else None
        size, align = self._size(t.elements, self.dtype[name]), None
        dtypes.check_tensor_bytes(name, size, self.g.path)
        io_align = self.opt.io_alignment or 0
        if kind in ("input", "output") and io_align > self.opt.alignment:
            align = io_align
            size = align_up(size, io_align)  # whole cache lines: maintenance never touches a neighbour
        return Tensor(name, kind, self.dtype[name], t.shape, t.elements, size,
                      self.first_op[name], self.last_op[name], alias.get(name), quant, align,
                      self.offset.get(name, 0) if name in alias else 0)

    def _weights_bytes(self) -> int:
        """The constants' bytes as the firmware stores them (lowering.stored_constants: equal small
        constants once, a uniform weight zero point as one entry)."""
        total = 0
        outputs = set(self.g.outputs)
        stored = lowering.stored_constants(self.g, [n for n in self.g.constants if n not in outputs])
        for w in self.g.constants.values():
            if w.shape is None or not w.dtype or w.name in stored.shared:
                continue  # no static size (strings, or no type from model or inference): not counted
            nbits = self.bitwidths.get(w.name, dtypes.bits(w.dtype))
            total += dtypes.nbytes(1 if w.name in stored.one else math.prod(w.shape), nbits)
        return total

    # --- aliases ---

    def _aliases(self) -> dict[str, str]:
        """tensor -> root, decided in schedule order from the tensors' own ranges. Each group keeps
        what the decisions read of its members (largest planned size, last use, whether one is a
        graph input or output), so a 33,000-op in-place chain costs one step per op, not its group."""
        root: dict[str, str] = {}
        slot: dict[str, int] = {}  # root -> its members' largest planned size
        last: dict[str, int] = {}  # root -> its members' last use
        io: dict[str, bool] = {}  # root -> a member is a graph input or output
        inputs = set(self.g.inputs)

        def root_of(x: str) -> str:
            r = root.get(x, x)
            if r not in slot:
                slot[r], last[r], io[r] = self._planned(r), self.last_op[r], r in self.outputs or r in inputs
            return r

        def join(y: str, x: str) -> None:
            r = root_of(x)
            root[y] = r
            slot[r] = max(slot[r], self._planned(y))
            last[r] = max(last[r], self.last_op[y])
            io[r] = io[r] or y in self.outputs or y in inputs

        caller = self.opt.io_buffers == "caller"  # I/O in the application's buffers shares nothing
        members: set[str] = set()  # roots something joined
        self.offset.clear()
        for s, node, y, view in self._alias_sites():
            if caller and (y in self.outputs or y in inputs or (view is not None and io[root_of(view)])):
                continue
            if view is not None:
                join(y, view)
                members.add(root[y])
                continue
            parts = self._concat_parts(s, node, y) if s not in self.no_view else []
            if parts:
                for x, at in parts:
                    if x not in root and x not in members and x not in inputs and x not in self.outputs:
                        join(x, y)
                        self.offset[x] = at
                        members.add(y)
                        self.concats.add(s)
                continue
            dw = self._depthwise_input(s, node, y)
            if dw is not None:
                r = root_of(dw)
                if last[r] == s and self._planned(y) <= slot[r] and not io[r]:
                    shrinks = self._planned(y) < slot[r]
                    join(y, dw)
                    members.add(r)
                    self.depthwise.add(s)
                    if shrinks or node.domain == tflite_lower.DOMAIN:
                        self.shrinking.add(s)
                continue
            for x in self._inplace_candidates(node, y):
                r = root_of(x)
                planned = self._planned(y)
                # equal sizes never cost; a slot a shrinking depthwise Conv left larger may
                if (last[r] == s and self._planned(x) == planned
                        and (slot[r] == planned or s not in self.no_shrink) and not io[r]):
                    shrinks = slot[r] > planned
                    join(y, x)
                    members.add(r)
                    if shrinks:
                        self.shrinking.add(s)
                    break
        return root

    def _alias_sites(self) -> Iterator[tuple[int, Op, str, str | None]]:
        """(step, op, its one output, the input it is a view of) for each step that may alias:
        one typed output; a view op only where the bytes are identical (then never in place)."""
        for s, node in enumerate(self.steps):
            ys = [y for y in node.outputs if y]
            if len(ys) != 1 or ys[0] not in self.g.types:
                continue
            spec = optable.spec(node.op_type)
            if spec is not None and spec.view and spec.applies(node.domain):
                x = node.inputs[0]
                if x in self.g.types and self._same_bytes(x, ys[0]):
                    yield s, node, ys[0], x
                continue
            yield s, node, ys[0], None

    def _concat_parts(self, s: int, node: Op, y: str) -> list[tuple[str, int]]:
        """(input, byte offset in y) for each input of a QLinearConcat that can be written in place at
        its position of y: the dims before the axis all 1 (the input is one run of y's bytes, NCHW
        channels of one image, whatever the layout), this op its only reader, named once, as many
        bits an element as y, whole bytes at an aligned offset. The op then copies nothing for it
        (requantizes it in place where its scale differs; lowering._concat_codes has its conv write
        the concat's codes). The memory schedule's search (scheduling) plans such inputs as copies:
        its peak is then an upper bound of the one liveness gives the order (a view is kept only
        where the bound is not higher without it, _best_aliasing)."""
        if node.op_type != "QLinearConcat" or y not in self.g.types:
            return []
        ty = self.g.types[y]
        axis = int(node.attrs.get("axis", 0))
        bits = dtypes.bits(self.dtype[y])
        if not 0 <= axis < len(ty.shape) or math.prod(ty.shape[:axis]) != 1 or bits % 8:
            return []
        xs = node.inputs[2::3]
        out: list[tuple[str, int]] = []
        at = 0
        for x in xs:
            if not x:
                continue
            tx = self.g.types.get(x)
            if tx is None:  # a constant: copied, after the room it takes
                shape = self.g.graph.constant_shapes.get(x)
                if shape is None:
                    return out
                at += math.prod(shape) * bits // 8
                continue
            if (xs.count(x) == 1 and self.last_op.get(x) == s and dtypes.bits(self.dtype[x]) == bits
                    and at % self.opt.alignment == 0):
                out.append((x, at))
            at += tx.elements * bits // 8
        return out

    def _planned(self, name: str) -> int:
        return self._size(self.g.types[name].elements, self.dtype[name])

    def _same_bytes(self, x: str, y: str) -> bool:
        tx, ty = self.g.types[x], self.g.types[y]
        return tx.elements == ty.elements and dtypes.bits(self.dtype[x]) == dtypes.bits(self.dtype[y])

    def _inplace_candidates(self, node: Op, y: str) -> list[str]:
        """Inputs ``node`` may overwrite with ``y``, by shape and element width alone."""
        ty = self.g.types[y]
        spec = optable.spec(node.op_type)
        rule = spec.inplace if spec is not None and spec.applies(node.domain) else None
        if rule is None or (rule.unless and node.attrs.get(rule.unless, 0)):
            return []
        positions = rule.positions if rule.positions is not None else range(len(node.inputs))
        xs = list(dict.fromkeys(node.inputs[p] for p in positions if p < len(node.inputs) and node.inputs[p]))
        if rule.same_shape and any(self._shape(x) != ty.shape for x in xs):
            return []  # broadcasting: an input element is read for several outputs
        return [x for x in xs if x in self.g.types and self.g.types[x].elements == ty.elements
                and dtypes.bits(self.dtype[y]) <= dtypes.bits(self.dtype[x])]

    def _depthwise_input(self, s: int, node: Op, y: str) -> str | None:
        """The input a depthwise Conv may overwrite channel by channel (TinyEngine): one input
        channel per output channel, NCHW, no more output elements than input, same element type."""
        spec = optable.spec(node.op_type)
        if (not self.opt.inplace_depthwise or s in self.no_shrink or not node.inputs
                or spec is None or not spec.depthwise or not spec.applies(node.domain)):
            return None
        x = node.inputs[0]
        if x not in self.g.types:
            return None
        tx, ty = self.g.types[x], self.g.types[y]
        if len(tx.shape) != 4 or len(ty.shape) != 4:
            return None
        if node.domain == tflite_lower.DOMAIN:  # NHWC, TFLite's depth multiplier: one output per channel
            one = int(node.attrs["tfl"][4]) == 1 and ty.shape[3] == tx.shape[3]
        else:
            one = int(node.attrs.get("group", 1)) == tx.shape[1] == ty.shape[1]
        if not one or ty.shape[0] != tx.shape[0] or ty.elements > tx.elements or self.dtype[x] != self.dtype[y]:
            return None
        return x

    def sched_graph(self, mp: ModelProblem) -> scheduling.SchedGraph:
        """What the scheduler needs of this model: mp (this builder's, graph order) with its
        views and in-place candidates, by step."""
        views: dict[int, str] = {}
        inplace: dict[int, tuple[str, ...]] = {}
        if self.opt.inplace and self.opt.execution == "sequential":
            for k, node, y, view in self._alias_sites():
                if view is not None:
                    views[k] = view
                    continue
                x = self._depthwise_input(k, node, y)
                if x is not None and self._planned(x) == self._planned(y):
                    inplace[k] = (x,)  # its one-channel workspace is left out: small, and order-independent
                else:
                    inplace[k] = tuple(self._inplace_candidates(node, y))
        return scheduling.graph_of(mp, views, inplace)

    def _shape(self, name: str) -> tuple[int, ...] | None:
        if name in self.g.types:
            return self.g.types[name].shape
        return self.g.graph.constant_shapes.get(name)

    # --- scratch ---

    def _workspace(self, s: int, node: Op) -> Tensor | None:
        """The op's declared im2col need (lowering.Workspace) under the scratch mode."""
        if s in self.depthwise:  # in place: one input channel saved before it is overwritten
            x = node.inputs[0]
            shape = self.g.types[x].shape  # NHWC (TFLite): 4 channels' planes, interleaved, as its step reads them
            elements = min(4, shape[3]) * shape[1] * shape[2] if node.domain == tflite_lower.DOMAIN \
                else math.prod(shape[2:])
            return self._scratch(node, elements, self.dtype[x], s)
        if node.workspace is None or (self.opt.scratch == "none" and node.op_type not in lowering.TFL_SCRATCH):
            return None  # a TFLite kernel's scratch is its own need, no option
        tfl = node.op_type in lowering.TFL_SCRATCH  # grown later (_grown), whatever the mode
        elements = node.workspace.full if self.opt.scratch == "full" and not tfl else node.workspace.row
        return self._scratch(node, elements, self.dtype[node.inputs[0]], s)

    def _scratch(self, node: Op, elements: int, dtype: str, s: int) -> Tensor:
        name = f"{node.name}:workspace"  # unique: node names are, and a tensor of that name is unlikely
        while name in self.g.types:
            name += "_"
        return Tensor(name, "scratch", dtype, (elements,), elements, self._size(elements, dtype), s, s, None)
