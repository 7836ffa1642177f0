"""Graph -> ModelProblem: the schedule, every arena tensor's size and inclusive live range,
in-place and view aliases, and per-op scratch workspaces.

Live ranges are inclusive schedule indices. A graph input lives from op 0, an op's
output from its op, each to its last reader; graph outputs to the last op; an output
nobody reads just during its op. Size = ceil(elements * bits / 8) rounded up to the
alignment (a zero-element tensor still takes one aligned unit, as Buffer sizes are > 0).

Worked example (the design notes' chain, MatMuls that cannot work in place)::

    T0 (input, 4 KB) -MatMul-> T1 (6 KB) -MatMul-> T2 (6 KB) -MatMul-> T3 (output, 2 KB)
    T0 [0, 0]   T1 [0, 1]   T2 [1, 2]   T3 [2, 2]     lower bound 12 KB

Aliases (options.inplace, on by default). ``alias_of`` names the root whose bytes a
tensor shares, never a chain; ModelProblem.problem() merges each group's ranges.

* Views: Reshape/Flatten/Squeeze/Unsqueeze/Identity outputs share their input's bytes
  when the planned bytes are identical (same elements and bits). Nothing is written.
* In place: a pure element-wise op (UNARY, or BINARY with every input of the output's
  shape, i.e. no broadcasting) writes over its input X when (a) this op is the last
  reader of every tensor sharing X's bytes, (b) none of them is a graph output, whose
  bytes must survive the run, (c) none is a graph input: graph inputs belong to the
  caller, who may read them again after the run (the plan never clobbers them), and
  (d) elements match and the output's element is no wider than X's, so writing
  element i never reaches an element not yet read (Cast/QuantizeLinear narrowing
  qualifies, DequantizeLinear widening does not).
* Never: Conv, Gemm/MatMul, pools and everything else not listed.
"""

from __future__ import annotations

import math
from typing import Mapping

from arena_tool import dtypes, onnx_graph, schema
from arena_tool.errors import ArenaError, fail
from arena_tool.onnx_graph import Graph, Node
from arena_tool.problem import KINDS, ModelOptions, ModelProblem, Step, Tensor, align_up

VIEWS = frozenset({"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"})
UNARY = frozenset({
    "Relu", "Clip", "Sigmoid", "Tanh", "LeakyRelu", "HardSigmoid", "HardSwish", "Neg", "Abs", "Exp",
    "Log", "Sqrt", "Elu", "Selu", "Celu", "Softplus", "Softsign", "Erf", "Gelu", "Mish",
    "ThresholdedRelu", "Reciprocal", "Floor", "Ceil", "Round", "Sign", "Sin", "Cos", "Not", "PRelu",
    "Cast", "QuantizeLinear", "DequantizeLinear", "BatchNormalization",
})  # element-wise over input 0; other inputs (Clip bounds, BN statistics, PRelu slope) are only read
BINARY = frozenset({"Add", "Sub", "Mul", "Div", "Sum", "Max", "Min", "Mean"})
CONVS = {"Conv": 1, "ConvInteger": 1, "QLinearConv": 3}  # op -> index of the weight input
SCRATCH_MODES = ("none", "row", "full")


def model_problem(path: str, options: ModelOptions) -> ModelProblem:
    """Load the model at ``path`` and reduce it to a ModelProblem under ``options``."""
    _check_options(options)
    try:
        graph = onnx_graph.load(path, options.input_shapes)
        return _Builder(graph, options).build()
    except ArenaError as e:  # deep code may not know which file it is reading
        raise e.located(file=path)


def read_bitwidths(path: str) -> tuple[tuple[str, int], ...]:
    """The bitwidth map file ({"tensor": bits, ...}, schemas/bitwidths.schema.json), sorted by name."""
    hint = f'write {{"tensor_name": bits, ...}} with integer bits from 1 to {dtypes.MAX_BITS}'
    doc = schema.read_json(path, "bitwidth file", hint)
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
    if options.scratch not in SCRATCH_MODES:
        fail(f"unknown scratch mode {options.scratch!r}", field="scratch",
             hint=f"expected one of {', '.join(SCRATCH_MODES)}")
    if options.activation_dtype is not None:
        dtypes.check_name(options.activation_dtype, field="activation_dtype")
    for name, bits in options.bitwidths:
        if not isinstance(bits, int) or not 1 <= bits <= dtypes.MAX_BITS:
            fail(f"{bits!r} bits is not a bitwidth", field=f"bitwidths.{name}",
                 hint=f"use an integer from 1 to {dtypes.MAX_BITS}")


class _Builder:
    """One model_problem call's working state (never shared)."""

    def __init__(self, graph: Graph, options: ModelOptions) -> None:
        self.g = graph
        self.opt = options
        self.bitwidths = dict(options.bitwidths)
        self.steps = [graph.nodes[i] for i in graph.schedule]
        self.outputs = set(graph.outputs)
        known = set(graph.types) | {w.name for w in graph.weights} | set(graph.constant_shapes)
        for name in sorted(self.bitwidths):
            if name not in known:
                fail(f"no tensor {name!r} in the model", file=graph.path, field=f"bitwidths.{name}",
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
        alias = self._aliases() if self.opt.inplace else {}

        tensors = [self._tensor(name, "input", alias) for name in g.inputs]
        steps = []
        for s, node in enumerate(self.steps):
            for y in dict.fromkeys(node.outputs):
                if y and y not in g.inputs:  # every output of a scheduled node has a static type
                    tensors.append(self._tensor(y, "output" if y in self.outputs else "activation", alias))
            ws = self._workspace(s, node)
            if ws is not None:
                tensors.append(ws)
            steps.append(Step(node.index, node.name, node.op_type, node.inputs, node.outputs,
                              ws.name if ws is not None else None))
        return ModelProblem(
            model=g.path, model_sha256=g.sha256, options=self.opt, schedule=tuple(steps),
            tensors=tuple(tensors), weights_bytes=self._weights_bytes(),
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
        return Tensor(name, kind, self.dtype[name], t.shape, t.elements, self._size(t.elements, self.dtype[name]),
                      self.first_op[name], self.last_op[name], alias.get(name))

    def _weights_bytes(self) -> int:
        total = 0
        for w in self.g.weights:
            if w.shape is None or not w.dtype:
                continue  # no static size (strings, or no type from model or inference): not counted
            nbits = self.bitwidths.get(w.name, dtypes.bits(w.dtype))
            total += dtypes.nbytes(math.prod(w.shape), nbits)
        return total

    # --- aliases ---

    def _aliases(self) -> dict[str, str]:
        """tensor -> root, decided in schedule order from the tensors' own ranges."""
        root: dict[str, str] = {}
        members: dict[str, list[str]] = {}
        inputs = set(self.g.inputs)

        def root_of(x: str) -> str:
            return root.get(x, x)

        def join(y: str, x: str) -> None:
            r = root_of(x)
            root[y] = r
            members.setdefault(r, [r]).append(y)

        for s, node in enumerate(self.steps):
            ys = [y for y in node.outputs if y]
            if len(ys) != 1 or node.domain not in ("", "ai.onnx") or ys[0] not in self.g.types:
                continue
            y = ys[0]
            if node.op_type in VIEWS:
                x = node.inputs[0]
                if x in self.g.types and self._same_bytes(x, y):
                    join(y, x)
                continue
            for x in self._inplace_candidates(node, y):
                group = members.get(root_of(x), [root_of(x)])
                if (max(self.last_op[m] for m in group) == s
                        and not any(m in self.outputs or m in inputs for m in group)):
                    join(y, x)
                    break
        return root

    def _same_bytes(self, x: str, y: str) -> bool:
        tx, ty = self.g.types[x], self.g.types[y]
        return tx.elements == ty.elements and dtypes.bits(self.dtype[x]) == dtypes.bits(self.dtype[y])

    def _inplace_candidates(self, node: Node, y: str) -> list[str]:
        """Inputs ``node`` may overwrite with ``y``, by shape and element width alone."""
        ty = self.g.types[y]
        if node.op_type in UNARY:
            if node.op_type == "BatchNormalization" and node.attrs.get("training_mode", 0):
                return []
            xs = node.inputs[:1]
        elif node.op_type in BINARY:
            shapes = [self._shape(x) for x in node.inputs if x]
            if any(sh != ty.shape for sh in shapes):
                return []  # broadcasting: an input element is read for several outputs
            xs = list(dict.fromkeys(x for x in node.inputs if x))
        else:
            return []
        return [x for x in xs if x in self.g.types and self.g.types[x].elements == ty.elements
                and dtypes.bits(self.dtype[y]) <= dtypes.bits(self.dtype[x])]

    def _shape(self, name: str) -> tuple[int, ...] | None:
        if name in self.g.types:
            return self.g.types[name].shape
        return self.g.constant_shapes.get(name)

    # --- scratch ---

    def _workspace(self, s: int, node: Node) -> Tensor | None:
        """Conv im2col columns: 'full' = Cin/group*prod(K)*prod(out spatial), 'row' = one output row.

        None for 1x1 stride-1 unpadded convs (the input already is the column matrix,
        the GEMM reads it directly) and for depthwise convs (group == Cin > 1: each
        output channel is a small stencil over one input channel, computed directly,
        with no matrix multiply to feed).
        """
        if self.opt.scratch == "none" or node.op_type not in CONVS or node.domain not in ("", "ai.onnx"):
            return None
        x, y = node.inputs[0], node.outputs[0]
        w_index = CONVS[node.op_type]
        w = node.inputs[w_index] if len(node.inputs) > w_index else ""
        if x not in self.g.types or y not in self.g.types:
            return None
        cin, out_spatial = self.g.types[x].shape[1], self.g.types[y].shape[2:]
        kernel = tuple(node.attrs.get("kernel_shape") or (self._shape(w) or ())[2:])
        if not kernel or not out_spatial:
            return None
        group = int(node.attrs.get("group", 1))
        strides = tuple(node.attrs.get("strides") or (1,) * len(kernel))
        pads = tuple(node.attrs.get("pads") or (0,) * (2 * len(kernel)))
        auto_pad = node.attrs.get("auto_pad", b"NOTSET")
        auto_pad = auto_pad.decode() if isinstance(auto_pad, bytes) else str(auto_pad)
        padded = any(pads) or auto_pad in ("SAME_UPPER", "SAME_LOWER")
        if all(k == 1 for k in kernel) and all(st == 1 for st in strides) and not padded:
            return None
        if group > 1 and group == cin:
            return None
        per_pixel = cin // group * math.prod(kernel)
        elements = per_pixel * (math.prod(out_spatial) if self.opt.scratch == "full" else out_spatial[-1])
        name = f"{node.name}:workspace"  # unique: node names are, and a tensor of that name is unlikely
        while name in self.g.types:
            name += "_"
        dtype = self.dtype[x]
        return Tensor(name, "scratch", dtype, (elements,), elements, self._size(elements, dtype), s, s, None)
