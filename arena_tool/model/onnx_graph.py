"""ONNX model -> Graph: the nodes that run, in order, and a static type for every activation.

Stages, each failing with one ArenaError (what, where, how to fix; exit 2):
read the bytes (sha256 of exactly those) -> parse without external data (planning
needs no weight values, so an absent external-data file is fine) -> refuse
external data whose location leaves the model's folder (``../``, an absolute
path, a symlink out), unless the caller allows it -> reject
subgraph ops (If/Loop/Scan) -> stable topological order -> onnx.checker -> pin
symbolic input dims -> repeat {shape inference, constant folding} until nothing
new folds -> every stated type (value_info, graph outputs) must be what the ops
compute -> every activation must have a static shape.

Constant folding (onnx_fold): ops whose inputs are all constant, and Shape/Size of
statically shaped tensors, are folded: they never run and cost no arena.

Limits: one graph, no subgraphs; an op that onnx shape inference does not know
(custom domains) needs value_info for its outputs in the model.
"""

from __future__ import annotations

import hashlib
import heapq
import os
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

import onnx
from onnx import TensorProto, helper

from arena_tool.core import dtypes
from arena_tool.core.errors import ArenaError, fail, require_regular
from arena_tool.model.onnx_fold import Folder, static_dims, type_of
from arena_tool.model.onnx_node import Graph as Graph, Node as Node, Shape as Shape, TensorType as TensorType, \
    Weight as Weight  # re-exported: the graph's vocabulary

_SUBGRAPH_ATTRS = (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)

def parse_input_shape(text: str) -> tuple[str, Shape]:
    """'NAME=1,3,96,96' -> ('NAME', (1, 3, 96, 96)); the name may contain ':' or '='."""
    name, sep, dims = text.rpartition("=")
    hint = "write NAME=D0,D1,... with positive integers, e.g. data=1,3,224,224"
    if not sep or not name:
        fail(f"{text!r} is not NAME=DIMS", field="--input-shape", hint=hint)
    try:
        shape = tuple(int(d) for d in dims.split(","))
    except ValueError:
        fail(f"{text!r}: dims {dims!r} are not comma-separated integers", field="--input-shape", hint=hint)
    if any(d < 1 for d in shape):
        fail(f"{text!r}: every dim must be >= 1", field="--input-shape", hint=hint)
    return name, shape


def load(path: str, input_shapes: Sequence[tuple[str, Sequence[int]]] = (), *,
         allow_external_data_outside: bool = False) -> Graph:
    """Load, check, pin, infer, fold (see the module docstring).

    allow_external_data_outside: accept external-data files outside the model's folder
    (the manifest option of the same name); by default such a model is refused.
    """
    data = _read(path)
    model = _parse(data, path)
    check_external_data(model, path, allow_outside=allow_external_data_outside)
    _check_tensor_types(model, path)
    graph = model.graph
    _reject_subgraphs(graph, path)
    order = _topological(graph, path)
    _check(model, order, path)
    _check_declared(model, path)
    init_names = {t.name for t in graph.initializer}
    inputs = tuple(v.name for v in graph.input if v.name not in init_names)
    pinned = _pin(graph, inputs, input_shapes, path)
    nodes = _nodes(graph)
    folder = Folder(model, nodes, order, pinned, path)
    folder.run()
    check_stated_shapes(folder, model, nodes, path)
    schedule = tuple(i for i in order if i not in folder.folded)
    outputs = tuple(v.name for v in graph.output)
    opset = max((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), default=1)
    types = _static_types(folder, nodes, schedule, inputs, pinned, path, opset)
    return Graph(
        path=path,
        sha256=hashlib.sha256(data).hexdigest(),
        nodes=nodes,
        schedule=schedule,
        folded=tuple(sorted(folder.folded)),
        inputs=inputs,
        outputs=outputs,
        types=types,
        weights=_weights(folder, nodes, schedule, outputs),
        constant_shapes={n: c.shape for n, c in folder.consts.items() if c.shape is not None},
        consts=folder.consts,
        model=model,
    )


# --- reading and checking -------------------------------------------------------------------

def _read(path: str) -> bytes:
    if not os.path.isdir(path):  # a folder has its own message below
        require_regular(path, "the model")
    try:
        return Path(path).read_bytes()
    except FileNotFoundError:
        fail("model file not found", file=path, hint="check the path (relative paths start at the current directory)")
    except IsADirectoryError:
        fail("model path is a directory, not an .onnx file", file=path, hint="name the .onnx file itself")
    except OSError as e:
        raise ArenaError(f"cannot read the model: {e.strerror or e}", file=path,
                         hint="check the file's permissions") from e


def _parse(data: bytes, path: str) -> onnx.ModelProto:
    model = onnx.ModelProto()
    hint = "expected a binary ONNX model (onnx.save, torch.onnx.export, tf2onnx ...)"
    try:
        model.ParseFromString(data)
    except Exception as e:  # protobuf raises DecodeError or RuntimeError depending on backend
        raise ArenaError(f"not an ONNX model ({type(e).__name__}: {e})", file=path, hint=hint) from e
    if model.ir_version <= 0 or not model.HasField("graph") or not model.graph.output:
        fail("not an ONNX model (no IR version or no graph with outputs)", file=path, hint=hint)
    return model


def _tensors(model: onnx.ModelProto) -> Iterator[TensorProto]:
    """Every tensor that may keep its data in an external file: initializers (dense and
    sparse) and tensor attributes of the graph's and the functions' nodes."""
    graph = model.graph
    yield from graph.initializer
    sparse = list(graph.sparse_initializer)
    for node in list(graph.node) + [n for f in model.functions for n in f.node]:
        for attr in node.attribute:
            if attr.HasField("t"):
                yield attr.t
            yield from attr.tensors
            if attr.HasField("sparse_tensor"):
                sparse.append(attr.sparse_tensor)
            sparse.extend(attr.sparse_tensors)
    for sp in sparse:
        yield sp.values
        yield sp.indices


def _inside(folder: str, location: str) -> bool:
    """``location`` (relative to ``folder``) names a file inside ``folder`` once symlinks are resolved."""
    if os.path.isabs(location) or os.path.splitdrive(location)[0]:
        return False
    target = os.path.realpath(os.path.join(folder, location))
    return os.path.commonpath([folder, target]) == folder and target != folder


def check_external_data(model: onnx.ModelProto, path: str, *, allow_outside: bool = False) -> None:
    """Refuse tensors whose external data lies outside the model's folder, before any is read.

    A model names its data files itself, so without this check a downloaded model
    could make arena (and onnx.load) read any file on the machine: '../../x', an
    absolute path, or a symlink in the model's folder that points out of it.
    ``allow_outside`` is the explicit opt-in for models one trusts.
    """
    folder = os.path.realpath(os.path.dirname(os.path.abspath(path)))
    for tensor in _tensors(model):
        if tensor.data_location != TensorProto.EXTERNAL:
            continue
        location = next((e.value for e in tensor.external_data if e.key == "location"), "")
        if not location:
            fail(f"tensor {tensor.name!r} has external data without a location", file=path,
                 hint="re-save the model with onnx.save_model(..., save_as_external_data=True)")
        if "\0" in location:
            fail(f"tensor {tensor.name!r} has external data at {location!r}, a location with a NUL byte no file "
                 "can have", file=path, hint="re-save the model with its data files beside it")
        if not allow_outside and not _inside(folder, location):
            fail(f"tensor {tensor.name!r} keeps its data outside the model's folder (location {location!r})",
                 file=path, hint=EXTERNAL_OUTSIDE_HINT)


def _check_tensor_types(model: onnx.ModelProto, path: str) -> None:
    """Every constant tensor's data type is one ONNX defines (a damaged file's 57 reached
    numpy_helper.to_array: KeyError, exit 3)."""
    known = set(TensorProto.DataType.values()) - {TensorProto.UNDEFINED}
    for tensor in _tensors(model):
        if tensor.data_type not in known:
            fail(f"tensor {tensor.name!r} has data type {tensor.data_type}, which ONNX does not define", file=path,
                 hint="the file is damaged or from a newer ONNX; re-export the model")


EXTERNAL_OUTSIDE_HINT = ("move the data file into the model's folder and re-save the model with a relative "
                         "location; or, if you trust the model, allow it with allow_external_data_outside")


def _reject_subgraphs(graph: onnx.GraphProto, path: str) -> None:
    for i, node in enumerate(graph.node):
        for attr in node.attribute:
            if attr.type in _SUBGRAPH_ATTRS:
                label = node.name or f"{node.op_type}_{i}"
                fail(f"node {label!r} ({node.op_type}) holds a subgraph in attribute {attr.name!r}; "
                     "control flow (If/Loop/Scan) cannot be planned statically",
                     file=path, field=f"graph.node[{i}]",
                     hint="export the model without control flow (unroll loops, fold If on constant "
                          "conditions, e.g. with onnxsim)")


def _topological(graph: onnx.GraphProto, path: str) -> tuple[int, ...]:
    """Kahn's algorithm, always taking the smallest ready node index (stable)."""
    producer: dict[str, int] = {}
    for i, node in enumerate(graph.node):
        for o in node.output:
            if o:
                producer.setdefault(o, i)
    waiting = [0] * len(graph.node)
    readers: list[list[int]] = [[] for _ in graph.node]
    for i, node in enumerate(graph.node):
        deps = sorted({producer[x] for x in node.input if x in producer and producer[x] != i})
        waiting[i] = len(deps)
        for d in deps:
            readers[d].append(i)
    ready = [i for i, w in enumerate(waiting) if w == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        i = heapq.heappop(ready)
        order.append(i)
        for r in readers[i]:
            waiting[r] -= 1
            if waiting[r] == 0:
                heapq.heappush(ready, r)
    if len(order) != len(graph.node):
        stuck = min(i for i, w in enumerate(waiting) if w > 0)
        node = graph.node[stuck]
        fail(f"the graph has a cycle through node {node.name or node.op_type + '_' + str(stuck)!r} "
             f"({node.op_type})", file=path, field=f"graph.node[{stuck}]",
             hint="an ONNX graph must be acyclic; re-export the model")
    return tuple(order)


def _check(model: onnx.ModelProto, order: Sequence[int], path: str) -> None:
    """onnx.checker on the model, or on a weight-less copy where the real one cannot pass.

    The copy is used when the graph needs reordering (the checker demands topological
    order) or when initializers live in external data (the checker opens the file;
    planning does not need it). The copy moves those initializers to typed inputs.
    """
    external = [t for t in model.graph.initializer if t.data_location == TensorProto.EXTERNAL]
    target = model
    reordered = list(order) != list(range(len(model.graph.node)))
    if external or reordered:
        target = onnx.ModelProto()
        if external:
            _copy_without(model, target, {t.name for t in external})
        else:
            target.CopyFrom(model)
        if reordered:
            nodes = [target.graph.node[i] for i in order]
            copies = [onnx.NodeProto() for _ in nodes]
            for c, n in zip(copies, nodes):
                c.CopyFrom(n)
            del target.graph.node[:]
            target.graph.node.extend(copies)
    try:
        onnx.checker.check_model(target)
    except (onnx.checker.ValidationError, ValueError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ArenaError(f"the ONNX checker rejects the model: {first}", file=path,
                         hint="repair or re-export the model so that onnx.checker.check_model accepts it") from e


def _check_declared(model: onnx.ModelProto, path: str) -> None:
    """What the checker lets pass and no runtime runs: an ONNX opset newer than onnx knows, a
    negative dimension, a constant as a graph output (the firmware writes outputs from the arena)."""
    newest = onnx.defs.onnx_opset_version()
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx") and not 1 <= o.version <= newest:
            fail(f"the model imports ONNX opset {o.version}; onnx {onnx.__version__} knows opsets 1..{newest}",
                 file=path, hint="export the model at an opset onnxruntime runs (e.g. 13..17)")
    g = model.graph
    for what, infos in (("graph input", g.input), ("graph output", g.output), ("value_info", g.value_info)):
        for v in infos:
            for k, d in enumerate(v.type.tensor_type.shape.dim):
                if d.HasField("dim_value") and d.dim_value < 0:
                    fail(f"{what} {v.name!r} dim {k} is {d.dim_value}; a dimension is >= 0", file=path,
                         hint="export the model again with its real shape, or a symbolic dim and --input-shape")
    constants = {t.name for t in g.initializer} | {n.output[0] for n in g.node if n.op_type == "Constant" and n.output}
    for v in g.output:
        if v.name in constants and v.name not in {i.name for i in g.input}:
            fail(f"graph output {v.name!r} is a constant (an initializer or a Constant node), not computed at run time; the firmware "
                 f"writes graph outputs from the arena", file=path,
                 hint="drop it from the graph outputs (its value is in the model already)")


def _copy_without(model: onnx.ModelProto, target: onnx.ModelProto, drop: set[str]) -> None:
    """target := model with the initializers in ``drop`` turned into typed graph inputs."""
    target.ir_version = max(model.ir_version, 4)  # initializers need not be inputs from IR 4 on
    target.opset_import.extend(model.opset_import)
    target.functions.extend(model.functions)
    g = target.graph
    g.name = model.graph.name
    g.node.extend(model.graph.node)
    g.output.extend(model.graph.output)
    g.value_info.extend(model.graph.value_info)
    g.input.extend(v for v in model.graph.input if v.name not in drop)
    listed = {v.name for v in model.graph.input}
    for t in model.graph.initializer:
        if t.name in drop:
            if t.name not in listed:  # IR < 4 already lists initializers as typed inputs
                g.input.append(helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)))
        else:
            g.initializer.append(t)


def _pin(graph: onnx.GraphProto, inputs: Sequence[str], input_shapes: Sequence[tuple[str, Sequence[int]]],
         path: str) -> dict[str, onnx.ValueInfoProto]:
    """Typed ValueInfo per activation input, with the user's dims where given."""
    declared = {v.name: v for v in graph.input}
    wanted = dict(input_shapes)
    valid = ", ".join(inputs) or "(none)"
    for name in sorted(wanted):
        if name not in inputs:
            fail(f"the model has no graph input {name!r}", file=path, field="--input-shape",
                 hint=f"valid inputs: {valid}")
    pinned: dict[str, onnx.ValueInfoProto] = {}
    for name in inputs:
        vi = onnx.ValueInfoProto()
        vi.CopyFrom(declared[name])
        if name in wanted:
            shape = tuple(wanted[name])
            tt = vi.type.tensor_type
            dims = list(tt.shape.dim) if tt.HasField("shape") else None
            if dims is not None and len(dims) != len(shape):
                fail(f"graph input {name!r} has rank {len(dims)}, --input-shape gives {len(shape)} dims",
                     file=path, field="--input-shape", hint=f"give {len(dims)} dims: {_render(dims)}")
            for k, (d, v) in enumerate(zip(dims or [], shape)):
                if d.HasField("dim_value") and d.dim_value != v:
                    fail(f"graph input {name!r} dim {k} is {d.dim_value} in the model, --input-shape gives {v}",
                         file=path, field="--input-shape", hint=f"keep the model's fixed dims: {_render(dims)}")
            tt.ClearField("shape")
            tt.shape.SetInParent()
            for v in shape:
                tt.shape.dim.add().dim_value = v
        pinned[name] = vi
    return pinned


def _render(dims: Sequence[Any] | None) -> str:
    if dims is None:
        return "(unknown rank)"
    return "[" + ", ".join(str(d.dim_value) if d.HasField("dim_value") else (d.dim_param or "?") for d in dims) + "]"


def _nodes(graph: onnx.GraphProto) -> tuple[Node, ...]:
    names = _stable_names(graph)
    out = []
    for i, n in enumerate(graph.node):
        attrs = {a.name: helper.get_attribute_value(a) for a in n.attribute if a.type not in _SUBGRAPH_ATTRS}
        out.append(Node(i, names[i], n.op_type, n.domain, tuple(n.input), tuple(n.output), attrs))
    return tuple(out)


def _stable_names(graph: onnx.GraphProto) -> list[str]:
    """Node names as given where non-empty and unique; else '<name or op_type>_<index>'."""
    counts: dict[str, int] = {}
    for n in graph.node:
        counts[n.name] = counts.get(n.name, 0) + 1
    taken = {n.name for n in graph.node if n.name and counts[n.name] == 1}
    names = []
    for i, n in enumerate(graph.node):
        if n.name and counts[n.name] == 1:
            names.append(n.name)
            continue
        cand = f"{n.name or n.op_type}_{i}"
        while cand in taken:
            cand += "_"
        taken.add(cand)
        names.append(cand)
    return names


# --- the static-shape contract ---------------------------------------------------------------

def check_stated_shapes(folder: Folder, model: onnx.ModelProto, nodes: Sequence[Node], path: str) -> None:
    """Every type the model states (value_info, graph outputs) is what its ops compute.

    onnx shape inference keeps a stated shape where it disagrees (outside strict mode), so
    a wrong value_info would be planned as stated and the firmware would overrun or
    under-fill that buffer. Inference is rerun with every stated type removed; wherever it
    then finds a type, the stated one must agree: same element type, same rank, equal
    dims where both are numbers. Tensors only a stated type describes (outputs of custom
    ops) are not compared.
    """
    stated = {vi.name: ("graph output", vi) for vi in model.graph.output}
    stated.update({vi.name: ("value_info", vi) for vi in model.graph.value_info if vi.name not in stated})
    if not stated:
        return
    computed = _computed_types(folder._inference_model())
    producer = {o: n for n in nodes for o in n.outputs if o}
    for name in sorted(stated):
        kind, vi = stated[name]
        said, got = type_of(vi), computed.get(name)
        if said is None or got is None or not _contradicts(said, got):
            continue
        node = producer.get(name)
        by = f"node {node.name!r} ({node.op_type}) computes" if node is not None else "its ops compute"
        fix = (f"remove or correct the value_info of {name!r} (onnx.shape_inference.infer_shapes recomputes it)"
               if kind == "value_info" else f"give graph output {name!r} the type {_shown(got)} or no shape")
        fail(f"{kind} {name!r} states {_shown(said)} but {by} {_shown(got)}", file=path,
             field=f"graph.{'output' if kind == 'graph output' else 'value_info'}.{name}", hint=fix)


def _computed_types(m: onnx.ModelProto) -> dict[str, tuple[int, Any]]:
    """Types onnx infers for ``m`` with its value_info and graph-output shapes removed."""
    del m.graph.value_info[:]
    for vi in m.graph.output:
        vi.type.tensor_type.ClearField("shape")
    try:
        inferred = onnx.shape_inference.infer_shapes(m, check_type=False, strict_mode=False, data_prop=True)
    except Exception:  # noqa: BLE001 - the folder's own inference already reported real failures
        return {}
    types: dict[str, tuple[int, Any]] = {}
    for info in [*inferred.graph.value_info, *inferred.graph.output]:
        t = type_of(info)
        if t is not None and t[1] is not None:
            types[info.name] = t
    return types


def _contradicts(said: tuple[int, Any], got: tuple[int, Any]) -> bool:
    if said[0] and got[0] and said[0] != got[0]:
        return True
    if said[1] is None or got[1] is None:
        return False
    return len(said[1]) != len(got[1]) or any(
        isinstance(a, int) and isinstance(b, int) and a != b for a, b in zip(said[1], got[1]))


def _shown(t: tuple[int, Any]) -> str:
    elem = TensorProto.DataType.Name(t[0]).lower() if t[0] else "?"
    dims = "(unknown rank)" if t[1] is None else "[" + ", ".join("?" if d is None else str(d) for d in t[1]) + "]"
    return f"{elem} {dims}"


def _static_types(folder: Folder, nodes: Sequence[Node], schedule: Sequence[int], inputs: Sequence[str],
                  pinned: Mapping[str, onnx.ValueInfoProto], path: str, opset: int) -> dict[str, TensorType]:
    types: dict[str, TensorType] = {}
    for name in inputs:
        t = type_of(pinned[name])
        shape = static_dims(t[1]) if t is not None else None
        if t is None or shape is None:
            dims = pinned[name].type.tensor_type.shape.dim if t is not None and t[1] is not None else None
            # 1 only for a symbolic batch (dim 0); any other symbolic dim is a size only the user knows
            unknown = [d.dim_param or "?" for k, d in enumerate(dims or []) if k and not d.HasField("dim_value")]
            example = ",".join(str(d.dim_value) if d.HasField("dim_value") else "1" if k == 0 else (d.dim_param or "?")
                               for k, d in enumerate(dims)) if dims else "1,3,224,224"
            shown = _render(dims) if dims is not None else "(unknown)"
            fail(f"graph input {name!r} has a dynamic shape {shown}", file=path, field=f"graph.input.{name}",
                 hint=f"pin it with --input-shape {name}={example}" + (
                     f" (put the real sizes for {', '.join(unknown)})" if unknown else "" if dims else
                     " (the model's real shape)"))
        types[name] = TensorType(dtypes.from_onnx(t[0], what=f"graph input {name!r}"), shape)
    for i in schedule:
        node = nodes[i]
        for out in node.outputs:
            if not out or out in types:
                continue
            elem, dims = folder.types.get(out, (0, None))
            if not elem and node.op_type == "Dropout" and node.outputs.index(out) == 1:
                # onnx infers no type for Dropout's mask; the spec gives it: input's shape,
                # the input's element type before opset 10, bool from then on.
                elem, dims = folder.types.get(node.inputs[0], (0, None))
                elem = elem if opset < 10 else TensorProto.BOOL
            where = f"output {out!r} of node {node.name!r} ({node.op_type})"
            if not elem:
                fail(f"{where} has no element type after shape inference", file=path, field=f"graph.node[{i}]",
                     hint="add value_info for it (ops from custom domains are not inferred) or re-export the model")
            out_shape = static_dims(dims)
            if dims is None or out_shape is None:
                shown = "(unknown rank)" if dims is None else "[" + ", ".join("?" if d is None else str(d) for d in dims) + "]"
                fail(f"{where} has a dynamic shape {shown} after shape inference", file=path,
                     field=f"graph.node[{i}]",
                     hint="its shape depends on runtime values; export the model with static shapes, "
                          "simplify it (e.g. onnxsim) or add value_info with static dims")
            types[out] = TensorType(dtypes.from_onnx(elem, what=where), out_shape)
    return types


def _weights(folder: Folder, nodes: Sequence[Node], schedule: Sequence[int], outputs: Sequence[str]) -> tuple[Weight, ...]:
    seen: set[str] = set()
    out: list[Weight] = []
    names = [x for i in schedule for x in nodes[i].inputs] + list(outputs)
    for name in names:
        if name and name in folder.consts and name not in seen:
            seen.add(name)
            c = folder.consts[name]
            known = c.elem and c.elem != TensorProto.STRING
            dtype = dtypes.from_onnx(c.elem, what=f"weight {name!r}") if known else ""
            out.append(Weight(name, dtype, c.shape))
    return tuple(out)
