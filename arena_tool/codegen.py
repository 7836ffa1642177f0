"""Plan -> C: the tables the example runtime (example_firmware/runtime) executes.

Two generators, both pure functions of their arguments (deterministic text,
no timestamps, no dict/set iteration order reaches the output):

* ``model_sources(plan_doc, model_path, symbol)``: one model's header and
  source: ``<SYM>_ARENA_SIZE`` / ``<SYM>_LOWER_BOUND``, an enum of tensor
  indices, the tensor table (arena tensors at their planned offsets, then the
  constants as ``static const`` arrays in flash), the op list with the
  attributes a kernel needs, the model's inputs and outputs, and one
  ``const arena_model_t <sym>_model``.
* ``arena_sources(board, arena_size, bases)``: one board's arena, a 16-byte
  aligned ``uint8_t arena[N]`` in section ``.arena``, each model's base offset
  as a macro, and the ``arena_entries`` table main.c walks.

Tensor-table order (= the enum): the plan's buffers in plan order, then the
constants in order of first use. Identifiers come from tensor names with
non-identifier characters replaced by ``_``; a collision gets ``_2``, ``_3``
... in table order. An op or dtype the runtime lacks still gets a table row
(``ARENA_OP_UNSUPPORTED`` / ``ARENA_DT_OTHER``) so a build can plan and link
any model; only running it fails.
"""

from __future__ import annotations

import math
import re
from typing import Any, Iterable, Sequence

import numpy as np

from arena_tool.errors import ArenaError
from arena_tool.schema import write_atomic

MAX_RANK = 6

DTYPES = {"float32": "ARENA_DT_FLOAT32", "int8": "ARENA_DT_INT8", "uint8": "ARENA_DT_UINT8",
          "int32": "ARENA_DT_INT32", "int64": "ARENA_DT_INT64"}
C_TYPES = {"float32": "float", "int8": "int8_t", "uint8": "uint8_t", "int32": "int32_t", "int64": "int64_t"}

# ONNX op_type -> runtime op, and which input positions the kernel reads (None = all).
OPS: dict[str, tuple[str, tuple[int, ...] | None]] = {
    "Identity": ("ARENA_OP_IDENTITY", (0,)),
    "Reshape": ("ARENA_OP_IDENTITY", (0,)),
    "Flatten": ("ARENA_OP_IDENTITY", (0,)),
    "Squeeze": ("ARENA_OP_IDENTITY", (0,)),
    "Unsqueeze": ("ARENA_OP_IDENTITY", (0,)),
    "Dropout": ("ARENA_OP_IDENTITY", (0,)),
    "Conv": ("ARENA_OP_CONV", None),
    "Gemm": ("ARENA_OP_GEMM", None),
    "MatMul": ("ARENA_OP_MATMUL", None),
    "Relu": ("ARENA_OP_RELU", None),
    "Clip": ("ARENA_OP_CLIP", (0,)),
    "LeakyRelu": ("ARENA_OP_LEAKY_RELU", None),
    "Sigmoid": ("ARENA_OP_SIGMOID", None),
    "Add": ("ARENA_OP_ADD", None),
    "Sub": ("ARENA_OP_SUB", None),
    "Mul": ("ARENA_OP_MUL", None),
    "Div": ("ARENA_OP_DIV", None),
    "MaxPool": ("ARENA_OP_MAX_POOL", None),
    "AveragePool": ("ARENA_OP_AVERAGE_POOL", None),
    "GlobalAveragePool": ("ARENA_OP_GLOBAL_AVERAGE_POOL", None),
    "GlobalMaxPool": ("ARENA_OP_GLOBAL_MAX_POOL", None),
    "Softmax": ("ARENA_OP_SOFTMAX", None),
    "Concat": ("ARENA_OP_CONCAT", None),
    "BatchNormalization": ("ARENA_OP_BATCH_NORM", (0, 1, 2, 3, 4)),
    "QuantizeLinear": ("ARENA_OP_QUANTIZE_LINEAR", None),
    "DequantizeLinear": ("ARENA_OP_DEQUANTIZE_LINEAR", None),
    "QLinearConv": ("ARENA_OP_QLINEAR_CONV", None),
    "QLinearMatMul": ("ARENA_OP_QLINEAR_MATMUL", None),
}
SPATIAL = {"Conv", "QLinearConv", "MaxPool", "AveragePool"}


def sanitize(name: str) -> str:
    """A C identifier fragment from a tensor or model name."""
    s = re.sub(r"[^0-9A-Za-z_]", "_", name)
    if not s or s[0].isdigit():
        s = "t_" + s
    return s


def unique_ids(names: Iterable[str]) -> list[str]:
    """Sanitized, collision-free identifiers, suffixes assigned in order."""
    out: list[str] = []
    used: set[str] = set()
    for n in names:
        base = sanitize(n)
        cand, k = base, 2
        while cand.upper() in used:
            cand, k = f"{base}_{k}", k + 1
        used.add(cand.upper())
        out.append(cand)
    return out


def c_string(text: str) -> str:
    """A C string literal (ASCII; other bytes as octal escapes)."""
    out = []
    for ch in text.encode("utf-8"):
        c = chr(ch)
        if c in '"\\':
            out.append("\\" + c)
        elif 32 <= ch < 127 and c != "?":
            out.append(c)
        else:
            out.append(f"\\{ch:03o}")
    return '"' + "".join(out) + '"'


def c_float(v: float) -> str:
    """An exact C float literal for a float32 value."""
    v = float(np.float32(v))
    if math.isnan(v):
        return "NAN"
    if math.isinf(v):
        return "INFINITY" if v > 0 else "-INFINITY"
    s = "%.9g" % v
    if "." not in s and "e" not in s and "n" not in s:
        s += ".0"
    return s + "f"


def c_int(v: int, bits: int) -> str:
    v = int(v)
    suffix = "LL" if bits == 64 else ""
    if v == -(1 << (bits - 1)):
        return f"(-{(1 << (bits - 1)) - 1}{suffix} - 1)"
    return f"{v}{suffix}"


def _values(arr: np.ndarray, dtype: str) -> list[str]:
    flat = arr.reshape(-1)
    if dtype == "float32":
        return [c_float(x) for x in flat.astype(np.float32)]
    bits = {"int8": 8, "uint8": 8, "int32": 32, "int64": 64}[dtype]
    return [c_int(x, bits) for x in flat]


def _wrap(items: Sequence[str], per_line: int, indent: str = "    ") -> str:
    if not items:
        return indent + "0"
    lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
    return (",\n").join(indent + ln for ln in lines)


# --- constants: initializers, Constant nodes, folded values -----------------

def _np_dtype_name(arr: np.ndarray) -> str:
    if arr.dtype == np.bool_:
        return "uint8"
    return str(arr.dtype)


def _constant_values(model: Any, names: Sequence[str], plan_doc: dict[str, Any]) -> dict[str, np.ndarray]:
    """Values of the constant tensors `names`; folded ones are computed with onnxruntime."""
    from onnx import numpy_helper

    found: dict[str, np.ndarray] = {}
    for init in model.graph.initializer:
        if init.name in names:
            found[init.name] = numpy_helper.to_array(init)
    for node in model.graph.node:
        if node.op_type == "Constant" and node.output and node.output[0] in names:
            found[node.output[0]] = _constant_attr(node)
    missing = [n for n in names if n not in found]
    if missing:
        found.update(_fold_with_ort(model, missing, plan_doc))
    return found


def _constant_attr(node: Any) -> np.ndarray:
    from onnx import helper, numpy_helper

    for a in node.attribute:
        v = helper.get_attribute_value(a)
        if a.name == "value":
            return numpy_helper.to_array(v)
        if a.name in ("value_float", "value_int"):
            return np.array(v, dtype=np.float32 if a.name == "value_float" else np.int64)
        if a.name in ("value_floats", "value_ints"):
            return np.array(v, dtype=np.float32 if a.name == "value_floats" else np.int64)
    raise ArenaError(f"Constant node {node.name or node.output[0]!r} has no supported value attribute",
                     field="model")


def _fold_with_ort(model: Any, names: Sequence[str], plan_doc: dict[str, Any]) -> dict[str, np.ndarray]:
    """Folded constants do not depend on the inputs: run once on zeros and read them."""
    import onnx
    import onnxruntime as ort

    m = onnx.ModelProto()
    m.CopyFrom(model)
    del m.graph.output[:]
    for n in names:
        m.graph.output.append(onnx.ValueInfoProto(name=n))
    shapes = {b["name"]: (b["shape"], b["dtype"]) for b in plan_doc["buffers"]}
    init_names = {i.name for i in model.graph.initializer}
    feeds = {}
    for inp in model.graph.input:
        if inp.name in init_names:
            continue
        shape, dtype = shapes.get(inp.name, ([], "float32"))
        feeds[inp.name] = np.zeros(shape, dtype=np.dtype(dtype))
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(m.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    return dict(zip(names, sess.run(list(names), feeds)))


# --- op attributes ----------------------------------------------------------

def _attrs(node: Any) -> dict[str, Any]:
    from onnx import helper

    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _opset(model: Any) -> int:
    for imp in model.opset_import:
        if imp.domain in ("", "ai.onnx"):
            return int(imp.version)
    return 1


def _spatial(op_type: str, a: dict[str, Any], in_shape: list[int], out_shape: list[int],
             kernel: list[int]) -> dict[str, list[int]]:
    """Kernel, strides, pads, dilations as 2-D (1-D ops get H = 1); auto_pad resolved."""
    nd = len(kernel)
    if nd not in (1, 2):
        raise ArenaError(f"{op_type}: only 1-D and 2-D kernels are supported, got {nd}-D", field="model")
    strides = list(a.get("strides", [1] * nd))
    dil = list(a.get("dilations", [1] * nd))
    pads = list(a.get("pads", [0] * (2 * nd)))
    auto = a.get("auto_pad", b"NOTSET")
    auto = auto.decode() if isinstance(auto, bytes) else auto
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        pads = [0] * (2 * nd)
        for i in range(nd):
            size_in = in_shape[2 + i]
            size_out = out_shape[2 + i]
            total = max(0, (size_out - 1) * strides[i] + (kernel[i] - 1) * dil[i] + 1 - size_in)
            small, big = total // 2, total - total // 2
            pads[i], pads[nd + i] = (small, big) if auto == "SAME_UPPER" else (big, small)
    elif auto == "VALID":
        pads = [0] * (2 * nd)
    if nd == 1:
        return {"kernel": [1, kernel[0]], "strides": [1, strides[0]], "pads": [0, pads[0], 0, pads[1]],
                "dilations": [1, dil[0]]}
    return {"kernel": kernel, "strides": strides, "pads": pads, "dilations": dil}


def _op_attrs(op_type: str, node: Any, opset: int, shape_of: Any, const_of: Any,
              inputs: Sequence[str]) -> dict[str, Any]:
    a = _attrs(node)
    out: dict[str, Any] = {}
    if op_type in SPATIAL:
        x = shape_of(inputs[0])
        y = shape_of(node.output[0])
        w_idx = 3 if op_type == "QLinearConv" else 1
        if "kernel_shape" in a:
            kernel = list(a["kernel_shape"])
        elif op_type in ("Conv", "QLinearConv"):
            kernel = list(shape_of(inputs[w_idx])[2:])
        else:
            raise ArenaError(f"{op_type} {node.name!r} has no kernel_shape", field="model")
        out.update(_spatial(op_type, a, x, y, kernel))
        out["group"] = int(a.get("group", 1))
        out["count_include_pad"] = int(a.get("count_include_pad", 0))
    elif op_type == "Gemm":
        out.update(alpha=float(a.get("alpha", 1.0)), beta=float(a.get("beta", 1.0)),
                   trans_a=int(a.get("transA", 0)), trans_b=int(a.get("transB", 0)))
    elif op_type == "LeakyRelu":
        out["alpha"] = float(a.get("alpha", 0.01))
    elif op_type == "Clip":
        lo, hi = float(a.get("min", -np.inf)), float(a.get("max", np.inf))
        if opset >= 11:
            for pos, default in ((1, -np.inf), (2, np.inf)):
                if len(inputs) > pos and inputs[pos]:
                    v = const_of(inputs[pos])
                    if v is None:
                        raise ArenaError(f"Clip {node.name!r}: min/max must be constants", field="model")
                    if pos == 1:
                        lo = float(v.reshape(-1)[0])
                    else:
                        hi = float(v.reshape(-1)[0])
        out.update(min=max(lo, -3.4e38), max=min(hi, 3.4e38))
    elif op_type == "Softmax":
        rank = len(shape_of(inputs[0]))
        axis = int(a.get("axis", 1 if opset < 13 else -1))
        out.update(axis=axis % rank if rank else 0, legacy_axis=int(opset < 13))
    elif op_type == "Concat":
        rank = len(shape_of(inputs[0]))
        out["axis"] = int(a["axis"]) % rank
    elif op_type == "BatchNormalization":
        out["epsilon"] = float(a.get("epsilon", 1e-5))
    elif op_type in ("QuantizeLinear", "DequantizeLinear"):
        rank = len(shape_of(inputs[0]))
        out["axis"] = int(a.get("axis", 1)) % rank if rank else 0
    return out


def _attrs_init(attrs: dict[str, Any]) -> str:
    parts = []
    for key in ("kernel", "strides", "pads", "dilations"):
        if key in attrs:
            parts.append(f".{key} = {{{', '.join(str(int(v)) for v in attrs[key])}}}")
    for key in ("group", "axis", "trans_a", "trans_b", "count_include_pad", "legacy_axis"):
        if key in attrs:
            parts.append(f".{key} = {int(attrs[key])}")
    for key in ("alpha", "beta", "min", "max", "epsilon"):
        if key in attrs:
            parts.append(f".{key} = {c_float(attrs[key])}")
    return "{" + ", ".join(parts) + "}" if parts else "{.group = 0}"


# --- the model tables -------------------------------------------------------

def model_sources(plan_doc: dict[str, Any], model_path: str, symbol: str) -> tuple[str, str]:
    """(header text, source text) of one model's tables; `symbol` names the C objects."""
    import onnx

    try:
        model = onnx.load(model_path)
    except (OSError, Exception) as e:  # onnx raises DecodeError and friends
        raise ArenaError(f"cannot load the model: {e}", file=model_path) from e
    sym = sanitize(symbol).lower()
    SYM = sym.upper()
    opset = _opset(model)
    nodes = list(model.graph.node)
    buffers = plan_doc["buffers"]
    by_name = {b["name"]: b for b in buffers}
    arena_names = [b["name"] for b in buffers]

    # Constants the kernels read, in order of first use.
    const_names: list[str] = []
    for step in plan_doc["schedule"]:
        used = OPS.get(step["op_type"], ("", None))[1]
        for pos, name in enumerate(step["inputs"]):
            if not name or name in by_name or name in const_names:
                continue
            if used is None or pos in used:
                const_names.append(name)
    clip_consts = [n for s in plan_doc["schedule"] if s["op_type"] == "Clip"
                   for n in s["inputs"][1:] if n and n not in by_name]
    values = _constant_values(model, const_names + [n for n in clip_consts if n not in const_names], plan_doc)

    def shape_of(name: str) -> list[int]:
        if name in by_name:
            return list(by_name[name]["shape"])
        if name in values:
            return list(values[name].shape)
        raise ArenaError(f"tensor {name!r} is neither planned nor constant", file=model_path, field="buffers")

    ids = unique_ids(arena_names + const_names)
    index = {n: i for i, n in enumerate(arena_names + const_names)}
    enum_of = {n: f"{SYM}_T_{ids[i].upper()}" for n, i in index.items()}

    h: list[str] = []
    guard = f"ARENA_MODEL_{SYM}_H"
    h += [f"/* Generated by arena_tool.codegen from {c_comment(plan_doc.get('model', model_path))}"
          f" (planner {c_comment(str(plan_doc.get('planner')))}). Do not edit. */",
          f"#ifndef {guard}", f"#define {guard}", "", '#include "arena_model.h"', "",
          f"#define {SYM}_ARENA_SIZE {int(plan_doc['arena_size'])}u",
          f"#define {SYM}_LOWER_BOUND {int(plan_doc['lower_bound'])}u",
          f"#define {SYM}_WEIGHTS_BYTES {sum(int(v.nbytes) for v in values.values() if v is not None)}u",
          f"#define {SYM}_N_TENSORS {len(index)}u", f"#define {SYM}_N_OPS {len(plan_doc['schedule'])}u", "",
          "/* Tensor indices: arena tensors, then constants. */", f"enum {sym}_tensor {{"]
    for n in arena_names + const_names:
        h.append(f"    {enum_of[n]} = {index[n]},")
    h += [f"    {SYM}_T__COUNT = {len(index)}", "};", "",
          f"extern const arena_model_t {sym}_model;", "", f"#endif /* {guard} */", ""]

    # The source names no generated header, so build tools may name the files freely.
    s: list[str] = ["/* Generated by arena_tool.codegen. Do not edit. */", "#include <math.h>",
                    "", '#include "arena_model.h"', ""]
    s.append("/* Constants (flash). */")
    const_arrays: dict[str, str] = {}
    for n in const_names:
        v = values[n]
        dt = _np_dtype_name(v)
        ident = f"{sym}_c_{ids[index[n]]}"
        const_arrays[n] = ident
        if dt not in C_TYPES:
            dt, v = "uint8", np.frombuffer(np.ascontiguousarray(v).tobytes(), dtype=np.uint8)
        per = 8 if dt == "float32" else 16
        s.append(f"static const {C_TYPES[dt]} {ident}[{max(1, v.size)}] = {{ /* {c_comment(n)} */")
        s.append(_wrap(_values(np.asarray(v).astype(dt), dt), per))
        s.append("};")
    s.append("")
    s.append(f"static const arena_tensor_t {sym}_tensors[{max(1, len(index))}] = {{")
    for n in arena_names:
        b = by_name[n]
        root = by_name.get(b["alias_of"]) if b.get("alias_of") else None
        offset = b["offset"] if b.get("offset") is not None else (root or {}).get("offset", 0)
        s.append(_tensor_row(n, "NULL", int(offset), int(b["size"]), int(b["elements"]),
                             DTYPES.get(b["dtype"], "ARENA_DT_OTHER"), list(b["shape"]), model_path))
    for n in const_names:
        v = values[n]
        dt = _np_dtype_name(v)
        s.append(_tensor_row(n, const_arrays[n], 0, int(v.nbytes), int(v.size),
                             DTYPES.get(dt, "ARENA_DT_OTHER"), list(v.shape), model_path))
    if not index:
        s.append("    {0}")
    s += ["};", ""]

    def const_of(name: str) -> np.ndarray | None:
        return values.get(name)

    ops: list[str] = []
    for i, step in enumerate(plan_doc["schedule"]):
        op_type = step["op_type"]
        node = nodes[step["node"]]
        used = OPS.get(op_type, ("", None))[1]
        ins = [str(index[n]) if n and (used is None or p in used) and n in index else "-1"
               for p, n in enumerate(step["inputs"])]
        outs = [str(index[n]) if n in index else "-1" for n in step["outputs"]]
        s.append(f"static const int16_t {sym}_op{i}_in[{max(1, len(ins))}] = {{{', '.join(ins) or '-1'}}};")
        s.append(f"static const int16_t {sym}_op{i}_out[{max(1, len(outs))}] = {{{', '.join(outs) or '-1'}}};")
        kind = OPS.get(op_type, ("ARENA_OP_UNSUPPORTED", None))[0]
        attrs = _op_attrs(op_type, node, opset, shape_of, const_of, step["inputs"]) if op_type in OPS else {}
        ws = str(index[step["workspace"]]) if step.get("workspace") else "-1"
        ops.append(f"    {{{kind}, {len(ins)}, {len(outs)}, {ws}, {sym}_op{i}_in, {sym}_op{i}_out,\n"
                   f"     {c_string(step['name'] or step['outputs'][0])}, {c_string(op_type)},\n"
                   f"     {_attrs_init(attrs)}}},")
    s += ["", f"static const arena_op_t {sym}_ops[{max(1, len(ops))}] = {{"]
    s += ops or ["    {0}"]
    s += ["};", ""]

    init_names = {i.name for i in model.graph.initializer}
    g_in = [i.name for i in model.graph.input if i.name not in init_names]
    g_out = [o.name for o in model.graph.output]
    for kind, names in (("inputs", g_in), ("outputs", g_out)):
        for n in names:
            if n not in by_name:
                raise ArenaError(f"graph {kind[:-1]} {n!r} has no buffer in the plan", file=model_path,
                                 field="buffers", hint="re-plan the model")
        s.append(f"static const int16_t {sym}_{kind}[{max(1, len(names))}] = "
                 f"{{{', '.join(str(index[n]) for n in names) or '-1'}}};")
    s += ["", f"const arena_model_t {sym}_model = {{",
          f"    {c_string(symbol)}, {int(plan_doc['arena_size'])}u, {len(index)}u, {len(plan_doc['schedule'])}u,"
          f" {len(g_in)}, {len(g_out)},",
          f"    {sym}_tensors, {sym}_ops, {sym}_inputs, {sym}_outputs", "};", ""]
    return "\n".join(h), "\n".join(s)


def c_comment(text: str) -> str:
    return text.replace("*/", "* /").replace("/*", "/ *").encode("ascii", "replace").decode()


def _tensor_row(name: str, data: str, offset: int, size: int, elements: int, dtype: str,
                shape: list[int], model_path: str) -> str:
    if len(shape) > MAX_RANK:
        raise ArenaError(f"tensor {name!r} has rank {len(shape)}, the runtime supports up to {MAX_RANK}",
                         file=model_path, field="buffers")
    dims = ", ".join(str(int(d)) for d in shape) or "0"
    return (f"    {{{c_string(name)}, {data}, {offset}u, {size}u, {elements}u, {dtype}, {len(shape)},"
            f" {{{dims}}}}},")


# --- the board's arena ------------------------------------------------------

def arena_sources(board: str, arena_size: int, bases: list[tuple[str, int]]) -> tuple[str, str]:
    """(header, source) defining the board's arena and where each model starts in it."""
    B = sanitize(board).upper()
    syms = [sanitize(sym).lower() for sym, _ in bases]
    h = [f"/* Generated by arena_tool.codegen for board {c_comment(board)}. Do not edit. */",
         f"#ifndef ARENA_BOARD_{B}_H", f"#define ARENA_BOARD_{B}_H", "", "#include <stdint.h>", "",
         f"#define ARENA_SIZE {int(arena_size)}u", f"#define ARENA_MODEL_COUNT {len(bases)}u"]
    for sym, (_, base) in zip(syms, bases):
        h.append(f"#define ARENA_BASE_{sym.upper()} {int(base)}u")
    h += ["", f"extern uint8_t arena[{max(1, int(arena_size))}];", "", f"#endif /* ARENA_BOARD_{B}_H */", ""]
    s = [f"/* Generated by arena_tool.codegen for board {c_comment(board)}. Do not edit. */",
         '#include "arena_model.h"', "",
         "/* The one activation arena (linker section .arena, NOLOAD). */",
         f'__attribute__((section(".arena"), aligned(16))) uint8_t arena[{int(arena_size)}];' if arena_size > 0
         else "uint8_t arena[1]; /* no activations: kept out of .arena, whose planned size is 0 */",
         f"const uint32_t arena_size = {int(arena_size)}u;", ""]
    for sym in syms:
        s.append(f"extern const arena_model_t {sym}_model;")
    entries = [f"    {{&{sym}_model, {int(base)}u}}," for sym, (_, base) in zip(syms, bases)]
    s += ["", f"const arena_entry_t arena_entries[{max(1, len(bases))}] = {{"]
    s += entries or ["    {0, 0u}"]
    s += ["};", f"const uint32_t arena_entry_count = {len(bases)}u;", ""]
    return "\n".join(h), "\n".join(s)


def write(path: str, text: str) -> None:
    """Write a generated file atomically (readers never see half a file)."""
    write_atomic(path, text)
