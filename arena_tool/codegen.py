"""Plan -> C: the tables the C runtime (arena_tool/runtime, ``arena_tool.runtime_dir()``) executes.

Two generators, both pure functions of their arguments (deterministic text,
no timestamps, no dict/set iteration order reaches the output):

* ``model_sources(plan_doc, lowered, symbol)``: one model's header and
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
from arena_tool.lowering import Lowered, Op
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
    "QLinearAdd": ("ARENA_OP_QLINEAR_ADD", None),
    "QLinearMul": ("ARENA_OP_QLINEAR_MUL", None),
    "QGemm": ("ARENA_OP_QGEMM", None),
    "QLinearAveragePool": ("ARENA_OP_QLINEAR_AVERAGE_POOL", None),
    "QLinearGlobalAveragePool": ("ARENA_OP_QLINEAR_GLOBAL_AVERAGE_POOL", None),
    "QLinearConcat": ("ARENA_OP_QLINEAR_CONCAT", None),
    "QLinearSoftmax": ("ARENA_OP_QLINEAR_SOFTMAX", None),
    "QLinearSigmoid": ("ARENA_OP_QLINEAR_SIGMOID", None),
    "QLinearLeakyRelu": ("ARENA_OP_QLINEAR_LEAKY_RELU", None),
    "QLinearHardSwish": ("ARENA_OP_QLINEAR_HARD_SWISH", None),
    "Transpose": ("ARENA_OP_TRANSPOSE", (0,)),
    "Pad": ("ARENA_OP_PAD", (0,)),
    "Slice": ("ARENA_OP_SLICE", (0,)),
    "Split": ("ARENA_OP_SPLIT", (0,)),
    "Resize": ("ARENA_OP_RESIZE", (0,)),
    "Upsample": ("ARENA_OP_RESIZE", (0,)),
    "ReduceMean": ("ARENA_OP_REDUCE_MEAN", (0,)),
    "HardSigmoid": ("ARENA_OP_HARD_SIGMOID", (0,)),
    "HardSwish": ("ARENA_OP_HARD_SWISH", (0,)),
    "Tanh": ("ARENA_OP_TANH", (0,)),
    "Exp": ("ARENA_OP_EXP", (0,)),
    "Neg": ("ARENA_OP_NEG", (0,)),
    "Abs": ("ARENA_OP_ABS", (0,)),
    "Sqrt": ("ARENA_OP_SQRT", (0,)),
    "Erf": ("ARENA_OP_ERF", (0,)),
    "Elu": ("ARENA_OP_ELU", (0,)),
    "Sum": ("ARENA_OP_ADD", None),
    "Max": ("ARENA_OP_MAX", None),
    "Min": ("ARENA_OP_MIN", None),
    "PRelu": ("ARENA_OP_PRELU", None),
    "LRN": ("ARENA_OP_LRN", (0,)),
}
PAD_MODES = {"constant": 0, "reflect": 1, "edge": 2}
RESIZE_MODES = {"nearest": 0, "linear": 1}
COORDINATE_MODES = {"half_pixel": 0, "asymmetric": 1, "align_corners": 2, "pytorch_half_pixel": 3,
                    "tf_half_pixel_for_nn": 4, "half_pixel_symmetric": 5}
NEAREST_MODES = {"round_prefer_floor": 0, "round_prefer_ceil": 1, "floor": 2, "ceil": 3, "simple": 4}
SPATIAL = {"Conv", "QLinearConv", "MaxPool", "AveragePool", "QLinearAveragePool"}  # kernels reading kernel/strides/pads


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


def _np_dtype_name(arr: np.ndarray) -> str:
    if arr.dtype == np.bool_:
        return "uint8"
    return str(arr.dtype)


# --- op attributes ----------------------------------------------------------

_C_FIELDS = (("alpha", "alpha"), ("beta", "beta"), ("transA", "trans_a"), ("transB", "trans_b"),
             ("axis", "axis"), ("legacy_axis", "legacy_axis"), ("epsilon", "epsilon"),
             ("output_min", "out_min"), ("output_max", "out_max"))


def _c_attrs(op: Op, model: Lowered) -> dict[str, Any]:
    """A lowered op's normalized attributes as arena_attrs_t fields (2-D; a 1-D op gets H = 1;
    the op-specific ``ints``/``floats`` as arena_model.h's enum comments lay them out)."""
    a, path = op.attrs, model.path
    out: dict[str, Any] = {}
    if op.op_type in SPATIAL:
        if "kernel_shape" not in a:
            raise ArenaError(f"{op.op_type} {op.name!r} has no kernel_shape", file=path, field="model")
        k, st, d, p = a["kernel_shape"], a["strides"], a["dilations"], a["pads"]
        if len(k) not in (1, 2):
            raise ArenaError(f"{op.op_type} {op.name!r}: only 1-D and 2-D kernels are supported, got {len(k)}-D",
                             file=path, field="model")
        if len(k) == 1:
            k, st, d, p = [1, k[0]], [1, st[0]], [1, d[0]], [0, p[0], 0, p[1]]
        out.update(kernel=k, strides=st, dilations=d, pads=p, group=int(a.get("group", 1)),
                   count_include_pad=int(a.get("count_include_pad", 0)))
    for key, field in _C_FIELDS:
        if key in a:
            out[field] = a[key]
    if op.op_type == "Clip":
        out.update(min=max(float(a["min"]), -3.4e38), max=min(float(a["max"]), 3.4e38))
    x = model.types.get(op.inputs[0]) if op.inputs else None
    rank = len(x.shape) if x is not None else 0
    if op.op_type == "Transpose":
        out["ints"] = list(a.get("perm", []))
    elif op.op_type == "Pad" and "pads" in a:
        out.update(ints=list(a["pads"]), axis=PAD_MODES.get(a.get("mode", "constant"), -1), value=a.get("value", 0.0))
    elif op.op_type == "Slice" and "starts" in a:
        out["ints"] = [v for pair in zip(a["starts"], a["steps"]) for v in pair]
    elif op.op_type in ("Resize", "Upsample") and "scales" in a:
        out["ints"] = [RESIZE_MODES.get(a["mode"], -1), COORDINATE_MODES.get(a["coordinate_transformation_mode"], -1),
                       NEAREST_MODES.get(a["nearest_mode"], -1)]
        out["floats"] = list(a["scales"])
    elif op.op_type == "LRN":
        out.update(ints=[int(a["size"])], floats=[float(a["bias"])])
    elif op.op_type == "ReduceMean" and "axes" in a:
        out["ints"] = [int(d in a["axes"]) for d in range(rank)]
    return out


def _attrs_init(attrs: dict[str, Any]) -> str:
    parts = []
    for key in ("kernel", "strides", "pads", "dilations"):
        if key in attrs:
            parts.append(f".{key} = {{{', '.join(str(int(v)) for v in attrs[key])}}}")
    for key in ("group", "axis", "trans_a", "trans_b", "count_include_pad", "legacy_axis", "out_min", "out_max"):
        if key in attrs:
            parts.append(f".{key} = {int(attrs[key])}")
    for key in ("alpha", "beta", "min", "max", "epsilon", "value"):
        if key in attrs:
            parts.append(f".{key} = {c_float(attrs[key])}")
    for key in ("ints", "floats"):
        if key in attrs:  # the name of the op's static array, emitted just before
            parts.append(f".n_{key} = {int(attrs['n_' + key])}, .{key} = {attrs[key]}")
    return "{" + ", ".join(parts) + "}" if parts else "{.group = 0}"


# --- the model tables -------------------------------------------------------

def model_sources(plan_doc: dict[str, Any], model: Lowered, symbol: str) -> tuple[str, str]:
    """(header text, source text) of one model's tables; `symbol` names the C objects.

    ``model`` is the lowered model the plan was made from (planfile.lowered_model):
    the ops, their attributes and the constant values all come from it.
    """
    model_path = model.path
    if plan_doc["model_sha256"] != model.sha256:
        raise ArenaError("the model changed since it was planned", file=model_path, field="model_sha256",
                         hint="re-plan the model (the build does this when it sees the change)")
    sym = sanitize(symbol).lower()
    SYM = sym.upper()
    by_node = {op.node: op for op in model.ops}
    steps = [by_node.get(st["node"]) for st in plan_doc["schedule"]]  # the plan's order (scheduling)
    if len(model.ops) != len(steps) or len({st["node"] for st in plan_doc["schedule"]}) != len(steps) or any(
            op is None or op.op_type != st["op_type"] or list(op.outputs) != st["outputs"]
            for op, st in zip(steps, plan_doc["schedule"])):
        raise ArenaError("the plan's schedule is not the model's lowered ops", file=model_path, field="schedule",
                         hint="re-plan the model with this version of arena")
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
    for name in const_names:
        if name not in model.constants:
            raise ArenaError(f"tensor {name!r} is neither planned nor constant", file=model_path, field="buffers",
                             hint="re-plan the model")
    values = {n: model.value(n) for n in const_names}

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

    ops: list[str] = []
    for i, step in enumerate(plan_doc["schedule"]):
        op_type = step["op_type"]
        used = OPS.get(op_type, ("", None))[1]
        ins = [str(index[n]) if n and (used is None or p in used) and n in index else "-1"
               for p, n in enumerate(step["inputs"])]
        outs = [str(index[n]) if n in index else "-1" for n in step["outputs"]]
        s.append(f"static const int16_t {sym}_op{i}_in[{max(1, len(ins))}] = {{{', '.join(ins) or '-1'}}};")
        s.append(f"static const int16_t {sym}_op{i}_out[{max(1, len(outs))}] = {{{', '.join(outs) or '-1'}}};")
        kind = OPS.get(op_type, ("ARENA_OP_UNSUPPORTED", None))[0]
        attrs = _c_attrs(steps[i], model) if op_type in OPS else {}
        for key, c_type, fmt in (("ints", "int32_t", lambda v: c_int(v, 32)), ("floats", "float", c_float)):
            if attrs.get(key):
                s.append(f"static const {c_type} {sym}_op{i}_{key}[{len(attrs[key])}] = "
                         f"{{{', '.join(fmt(v) for v in attrs[key])}}};")
                attrs[f"n_{key}"], attrs[key] = len(attrs[key]), f"{sym}_op{i}_{key}"
            else:
                attrs.pop(key, None)
        ws = str(index[step["workspace"]]) if step.get("workspace") else "-1"
        ops.append(f"    {{{kind}, {len(ins)}, {len(outs)}, {ws}, {sym}_op{i}_in, {sym}_op{i}_out,\n"
                   f"     {c_string(step['name'] or step['outputs'][0])}, {c_string(op_type)},\n"
                   f"     {_attrs_init(attrs)}}},")
    s += ["", f"static const arena_op_t {sym}_ops[{max(1, len(ops))}] = {{"]
    s += ops or ["    {0}"]
    s += ["};", ""]

    g_in, g_out = list(model.inputs), list(model.outputs)
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


# --- runtime: tflm ------------------------------------------------------------

def tflm_model_sources(symbol: str, planned: bytes, head: int, tail: int) -> tuple[str, str]:
    """(header, source) of one planned .tflite for a firmware that brings TFLite Micro.

    The source holds the planned model (arena's plan as TFLM's OfflineMemoryAllocation
    metadata) as ``const unsigned char <symbol>_tflite[]``, 16-byte aligned and const (flash),
    and its length; the header its sizes: ``<SYMBOL>_HEAD_SIZE`` (the plan: TFLM's head),
    ``<SYMBOL>_TAIL_SIZE`` (TFLM's persistent tail measured on the host) and
    ``<SYMBOL>_TENSOR_ARENA_SIZE`` (their sum rounded up to 16: what MicroInterpreter needs).
    """
    sym = sanitize(symbol).lower()
    SYM = sym.upper()
    arena = (int(head) + int(tail) + 15) // 16 * 16
    h = [f"/* Generated by arena_tool.codegen for model {c_comment(symbol)} (runtime: tflm). Do not edit. */",
         f"#ifndef ARENA_TFLM_{SYM}_H", f"#define ARENA_TFLM_{SYM}_H", "",
         f"/* arena's plan: TFLM's non-persistent head (the planned tensors). */",
         f"#define {SYM}_HEAD_SIZE {int(head)}u",
         "/* TFLM's persistent tail, measured on the host with TFLM's reference kernels; kernel-specific",
         "   persistent data (e.g. CMSIS-NN's) can differ on the target. */",
         f"#define {SYM}_TAIL_SIZE {int(tail)}u",
         f"/* The arena to give tflite::MicroInterpreter: head + tail, rounded up to 16. */",
         f"#define {SYM}_TENSOR_ARENA_SIZE {arena}u",
         f"#define {SYM}_TFLITE_LEN {len(planned)}u", "",
         "#ifdef __cplusplus", 'extern "C" {', "#endif",
         f"extern const unsigned char {sym}_tflite[{len(planned)}];",
         f"extern const unsigned int {sym}_tflite_len;",
         "#ifdef __cplusplus", "}", "#endif", "", f"#endif /* ARENA_TFLM_{SYM}_H */", ""]
    rows = [", ".join(f"0x{b:02x}" for b in planned[i:i + 16]) for i in range(0, len(planned), 16)]
    s = [f"/* Generated by arena_tool.codegen for model {c_comment(symbol)} (runtime: tflm). Do not edit. */",
         f'#include "model_{sym}.h"', "",
         "/* The planned model: arena's plan as TFLM's OfflineMemoryAllocation metadata (const: flash). */",
         f"__attribute__((aligned(16))) const unsigned char {sym}_tflite[{len(planned)}] = {{"]
    s += [f"    {r}," for r in rows]
    s += ["};", f"const unsigned int {sym}_tflite_len = {len(planned)}u;", ""]
    return "\n".join(h), "\n".join(s)


def tflm_arena_sources(board: str, arena_size: int, bases: list[tuple[str, int]]) -> tuple[str, str]:
    """(header, source) of one board's ``uint8_t tensor_arena[N]`` in section ``.tensor_arena`` (NOLOAD).

    N: the report's arena_size (sequential: the largest model's tensor_arena; concurrent: the
    slices one after the other); ``TENSOR_ARENA_BASE_<MODEL>`` is where each model's starts.
    """
    B = sanitize(board).upper()
    syms = [sanitize(sym).lower() for sym, _ in bases]
    n = max(1, int(arena_size))
    h = [f"/* Generated by arena_tool.codegen for board {c_comment(board)} (runtime: tflm). Do not edit. */",
         f"#ifndef ARENA_TFLM_BOARD_{B}_H", f"#define ARENA_TFLM_BOARD_{B}_H", "", "#include <stdint.h>", "",
         f"#define TENSOR_ARENA_SIZE {n}u", f"#define TENSOR_ARENA_MODEL_COUNT {len(bases)}u"]
    for sym, (_, base) in zip(syms, bases):
        h.append(f"#define TENSOR_ARENA_BASE_{sym.upper()} {int(base)}u")
    h += ["", "#ifdef __cplusplus", 'extern "C" {', "#endif", f"extern uint8_t tensor_arena[{n}];",
          "#ifdef __cplusplus", "}", "#endif", "", f"#endif /* ARENA_TFLM_BOARD_{B}_H */", ""]
    s = [f"/* Generated by arena_tool.codegen for board {c_comment(board)} (runtime: tflm). Do not edit. */",
         '#include "tflm_arena.h"', "",
         "/* TFLM's tensor_arena (linker section .tensor_arena, NOLOAD): head + persistent tail. */",
         f'__attribute__((section(".tensor_arena"), aligned(16))) uint8_t tensor_arena[{n}];', ""]
    return "\n".join(h), "\n".join(s)


def write(path: str, text: str) -> None:
    """Write a generated file atomically (readers never see half a file)."""
    write_atomic(path, text)
