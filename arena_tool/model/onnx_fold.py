"""Constant folding and shape inference for onnx_graph: alternate both until a fixed point.

A node whose inputs are all constant (initializers, Constant outputs, earlier
folded outputs) is folded, and so is Shape/Size of a tensor whose shape is static.
Folded nodes never run and cost no arena. Their outputs are evaluated with
onnx.reference only while small (EVAL_LIMIT elements): shape arithmetic needs the
values (a Reshape target), weights only need their shapes, and weights may have
no data at all (absent external data). Non-deterministic ops (Random*,
Bernoulli, Multinomial) are never folded. Shape inference runs on a light copy of
the model: the running nodes, small known constants as initializers, every other
constant as a typed graph input.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from arena_tool.core.errors import ArenaError

from arena_tool.model.onnx_node import EVAL_LIMIT, Const, Node

_RANDOM = frozenset({"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
                     "Bernoulli", "Multinomial"})

Shape = tuple[int, ...]
Dims = tuple[int | str | None, ...]  # inferred dims: int, symbolic name, or None (unknown)


class Folder:
    """Alternates shape inference and folding until a fixed point.

    After run(): folded = indices of folded nodes; consts = every constant by name
    (initializers, Constant outputs, folded outputs); types = name -> (ONNX elem
    code, dims) from the last shape inference, elem 0 when unknown.
    """

    def __init__(self, model: onnx.ModelProto, nodes: Sequence[Node], order: Sequence[int],
                 pinned: Mapping[str, onnx.ValueInfoProto], path: str) -> None:
        self.model = model
        self.nodes = nodes
        self.order = order
        self.pinned = pinned
        self.path = path
        self.folded: set[int] = set()
        self.consts: dict[str, Const] = {}
        self.types: dict[str, tuple[int, Dims | None]] = {}
        for t in model.graph.initializer:
            self.consts[t.name] = Const(t.data_type, tuple(t.dims), proto=t)

    def run(self) -> None:
        while True:
            self.types = self._infer()
            if not self._fold_pass():
                return

    def _fold_pass(self) -> bool:
        changed = False
        for i in self.order:
            if i in self.folded:
                continue
            node = self.nodes[i]
            if self._foldable(node):
                self._fold(node)
                self.folded.add(i)
                changed = True
        return changed

    def static_shape(self, name: str) -> Shape | None:
        if name in self.consts:
            return self.consts[name].shape
        _, dims = self.types.get(name, (0, None))
        return static_dims(dims)

    def _foldable(self, node: Node) -> bool:
        if node.op_type in _RANDOM:
            return False
        if node.domain in ("", "ai.onnx") and node.op_type in ("Shape", "Size") and node.inputs:
            return self.static_shape(node.inputs[0]) is not None
        present = [x for x in node.inputs if x]
        if not present:
            return node.op_type == "Constant"
        return all(x in self.consts for x in present)

    def _fold(self, node: Node) -> None:
        values = self._evaluate(node)
        for k, out in enumerate(node.outputs):
            if not out:
                continue
            v = values[k] if values is not None and k < len(values) else None
            if v is not None:
                v = np.asarray(v)
                self.consts[out] = Const(helper.np_dtype_to_tensor_dtype(v.dtype), tuple(v.shape), value=v)
                continue
            proto = node.attrs.get("value") if node.op_type == "Constant" else None
            if isinstance(proto, TensorProto):
                self.consts[out] = Const(proto.data_type, tuple(proto.dims), proto=proto)
                continue
            if node.op_type == "Constant" and isinstance(node.attrs.get("sparse_value"), onnx.SparseTensorProto):
                sp = node.attrs["sparse_value"]
                self.consts[out] = Const(sp.values.data_type, tuple(sp.dims))
                continue
            elem, dims = self.types.get(out, (0, None))
            self.consts[out] = Const(elem, static_dims(dims))

    def _evaluate(self, node: Node) -> list[np.ndarray] | None:
        """Output values, or None when too big, unknown or not evaluable."""
        if node.op_type in ("Shape", "Size") and node.domain in ("", "ai.onnx"):
            shape = self.static_shape(node.inputs[0])
            assert shape is not None
            if node.op_type == "Size":
                return [np.array(math.prod(shape), dtype=np.int64)]
            start, end = node.attrs.get("start", 0), node.attrs.get("end", len(shape))
            return [np.array(shape[start:end], dtype=np.int64)]
        if node.op_type == "Constant" and "value" in node.attrs:
            return None  # kept as its TensorProto, evaluated lazily
        args = {}
        for x in node.inputs:
            if x and x not in args:
                a = self.consts[x].array()
                if a is None:
                    return None
                args[x] = a
        if not self._small_output(node, args):
            return None
        try:
            return list(_run_node(self.model, node, args))
        except Exception:  # the reference evaluator fails on custom ops: fold by shape only
            return None

    def _small_output(self, node: Node, args: Mapping[str, np.ndarray]) -> bool:
        sizes = []
        for out in node.outputs:
            shape = self.static_shape(out) if out else ()
            if shape is None:
                break
            sizes.append(math.prod(shape))
        else:
            return max(sizes, default=0) <= EVAL_LIMIT
        arity = {"ConstantOfShape": 1, "Expand": 2, "Tile": 2, "Range": 3}.get(node.op_type)
        if arity is None:
            return True
        vals = [args[x] for x in node.inputs[:arity] if x]
        if len(vals) < arity:  # a required input is absent: not evaluable, fold by shape only
            return False
        if node.op_type == "ConstantOfShape":
            return math.prod([int(d) for d in vals[0].reshape(-1)]) <= EVAL_LIMIT
        if node.op_type == "Expand":
            target = [int(d) for d in vals[1].reshape(-1)]
            return math.prod([max(a, b) for a, b in _aligned(list(vals[0].shape), target)]) <= EVAL_LIMIT
        if node.op_type == "Tile":
            return vals[0].size * math.prod([int(r) for r in vals[1].reshape(-1)]) <= EVAL_LIMIT
        start, limit, delta = (float(v) for v in vals)  # Range
        return delta != 0 and max(math.ceil((limit - start) / delta), 0) <= EVAL_LIMIT

    def _infer(self) -> dict[str, tuple[int, Dims | None]]:
        m = self._inference_model()
        try:
            inferred = onnx.shape_inference.infer_shapes(m, check_type=False, strict_mode=False, data_prop=True)
        except Exception as e:  # onnx raises InferenceError, ValidationError or RuntimeError here
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise ArenaError(f"ONNX shape inference fails: {first}", file=self.path,
                             hint="the model's shapes are inconsistent; check the --input-shape values "
                                  "or re-export the model") from e
        types: dict[str, tuple[int, Dims | None]] = {}
        g = inferred.graph
        for vi in [*g.value_info, *g.input, *g.output]:
            t = type_of(vi)
            if t is None:
                continue
            old = types.get(vi.name)
            if old is None or _more_static(t[1], old[1]):
                types[vi.name] = t
        return types

    def _inference_model(self) -> onnx.ModelProto:
        """The running part of the graph; small known constants as initializers, the rest typed inputs."""
        src = self.model
        m = onnx.ModelProto()
        m.ir_version = max(src.ir_version, 4)
        m.opset_import.extend(src.opset_import)
        m.functions.extend(src.functions)
        g = m.graph
        g.name = src.graph.name or "main"
        g.input.extend(self.pinned[name] for name in self.pinned)
        used: set[str] = set()
        for i in self.order:
            if i not in self.folded:
                n = self.nodes[i]
                used.update(x for x in n.inputs if x)
                g.node.extend(_standin(src.graph.node[i]))
        used.update(v.name for v in src.graph.output)
        for name in sorted(used):
            c = self.consts.get(name)
            if c is None:
                continue
            value = c.array()
            if value is not None:
                g.initializer.append(numpy_helper.from_array(value, name))
            elif c.elem:
                g.input.append(helper.make_tensor_value_info(name, c.elem, list(c.shape) if c.shape is not None else None))
            else:
                g.input.append(onnx.ValueInfoProto(name=name))
        g.output.extend(src.graph.output)
        known = {v.name for v in g.input} | {t.name for t in g.initializer}
        g.value_info.extend(v for v in src.graph.value_info if v.name not in known)
        return m


# onnxruntime's quantized contrib ops (com.microsoft), which onnx shape inference does not
# know: op -> (float op, (tensor, scale, zero point) input positions, output (scale, zp)).
CONTRIB = {
    "QLinearAdd": ("Add", ((0, 1, 2), (3, 4, 5)), (6, 7)),
    "QLinearMul": ("Mul", ((0, 1, 2), (3, 4, 5)), (6, 7)),
    "QLinearAveragePool": ("AveragePool", ((0, 1, 2),), (3, 4)),
    "QLinearGlobalAveragePool": ("GlobalAveragePool", ((0, 1, 2),), (3, 4)),
    "QLinearSoftmax": ("Softmax", ((0, 1, 2),), (3, 4)),
    "QLinearSigmoid": ("Sigmoid", ((0, 1, 2),), (3, 4)),
    "QLinearLeakyRelu": ("LeakyRelu", ((0, 1, 2),), (3, 4)),
    "QGemm": ("Gemm", ((0, 1, 2), (3, 4, 5)), (7, 8)),
    "QLinearConcat": ("Concat", (), (0, 1)),
}
_STANDIN_ATTRS = {"AveragePool": ("auto_pad", "ceil_mode", "count_include_pad", "kernel_shape", "pads", "strides"),
                  "Softmax": ("axis",), "LeakyRelu": ("alpha",), "Gemm": ("alpha", "transA", "transB"),
                  "Concat": ("axis",)}


def _standin(node: onnx.NodeProto) -> list[onnx.NodeProto]:
    """The node itself, or for a quantized contrib op the DQ -> float op -> Q subgraph with
    the same output type, so onnx shape inference can type its output (NCHW only)."""
    if node.domain != "com.microsoft" or node.op_type not in CONTRIB:
        return [node]
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    if attrs.get("channels_last", 0):
        return [node]
    op, triples, result = CONTRIB[node.op_type]
    ins = list(node.input) + [""] * 9
    if node.op_type == "QLinearConcat":
        triples = tuple((i, i + 1, i + 2) for i in range(2, len(node.input), 3))
    out = node.output[0]
    nodes, floats = [], []
    for k, (t, s, z) in enumerate(triples):
        f = f"{out}::standin_dq{k}"
        nodes.append(helper.make_node("DequantizeLinear", [x for x in (ins[t], ins[s], ins[z]) if x], [f]))
        floats.append(f)
    if node.op_type == "QGemm" and ins[6]:
        floats.append("")  # the int32 bias does not change the shape
    keep = {k: v for k, v in attrs.items() if k in _STANDIN_ATTRS.get(op, ())}
    y_scale, y_zp = ins[result[0]], ins[result[1]]
    if not y_scale:  # QGemm without y_scale has a float output
        return nodes + [helper.make_node(op, [x for x in floats if x], [out], **keep)]
    f = f"{out}::standin_float"
    nodes.append(helper.make_node(op, [x for x in floats if x], [f], **keep))
    nodes.append(helper.make_node("QuantizeLinear", [x for x in (f, y_scale, y_zp) if x], [out]))
    return nodes


def _run_node(model: onnx.ModelProto, node: Node, args: Mapping[str, np.ndarray]) -> Sequence[np.ndarray]:
    from onnx.reference import ReferenceEvaluator  # slow import; only when folding evaluates

    src = model.graph.node[node.index]
    inputs = [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), list(v.shape))
              for k, v in args.items()]
    outputs = [onnx.ValueInfoProto(name=o) for o in node.outputs if o]
    g = helper.make_graph([src], "fold", inputs, outputs)
    m = helper.make_model(g, opset_imports=list(model.opset_import), functions=list(model.functions))
    m.ir_version = max(model.ir_version, 4)
    results = ReferenceEvaluator(m).run(None, dict(args))
    full: list[np.ndarray] = []
    it = iter(results)
    for o in node.outputs:
        full.append(next(it) if o else np.zeros(0))
    return full


def static_dims(dims: Dims | None) -> Shape | None:
    """The shape when every dim is a known int, else None."""
    ints = [d for d in dims if isinstance(d, int)] if dims is not None else []
    return tuple(ints) if dims is not None and len(ints) == len(dims) else None


def _aligned(a: list[int], b: list[int]) -> list[tuple[int, int]]:
    n = max(len(a), len(b))
    return list(zip([1] * (n - len(a)) + a, [1] * (n - len(b)) + b))


def type_of(vi: onnx.ValueInfoProto) -> tuple[int, Dims | None] | None:
    if not vi.type.HasField("tensor_type"):
        return None
    tt = vi.type.tensor_type
    if not tt.elem_type:
        return None
    if not tt.HasField("shape"):
        return tt.elem_type, None
    dims: list[int | str | None] = []
    for d in tt.shape.dim:
        dims.append(d.dim_value if d.HasField("dim_value") else (d.dim_param or None))
    return tt.elem_type, tuple(dims)


def _more_static(new: tuple[Any, ...] | None, old: tuple[Any, ...] | None) -> bool:
    def score(dims: tuple[Any, ...] | None) -> int:
        return -1 if dims is None else sum(isinstance(d, int) for d in dims)
    return score(new) > score(old)
