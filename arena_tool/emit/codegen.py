"""Plan -> C: the tables the C runtime (arena_tool/runtime, ``arena_tool.runtime_dir()``) executes.

Two generators, both pure functions of their arguments (deterministic text,
no timestamps, no dict/set iteration order reaches the output):

* ``model_sources(plan, lowered, symbol)``: one model's header and
  source: ``<SYM>_ARENA_SIZE`` / ``<SYM>_LOWER_BOUND``, an enum of tensor
  indices, the tensor table (arena tensors at their planned offsets, then the
  constants as ``static const`` arrays in flash), the op list with the
  attributes a kernel needs, the model's inputs and outputs, and one
  ``const arena_model_t <sym>_model``.
* ``arena_sources(board, arena_size, bases)``: one board's arena, a 16-byte
  aligned ``uint8_t arena[N]`` in section ``.arena``, each model's base offset
  as a macro, and the ``arena_entries`` table main.c walks. With the report's
  ``regions``: a split arena's ``arena_<region>`` arrays (sections ``.arena_<region>``),
  and ``arena_init``, the constructor that copies weights placed in RAM. With ``kernels``
  (``runtime_ops`` of the board's plans): ``arena_kernels``, the table arena_run dispatches
  through, holding only those ops' kernels, so the link keeps no kernel the models do not run.

A split plan's tables carry ``<sym>_regions`` (each region's base and size) and a region index
per tensor; ``weights: <region>`` puts the constants, writable, in section ``.weights_<region>``.

Tensor-table order (= the enum): the plan's buffers in plan order, then the
constants in order of first use; a small constant equal to an earlier one (type, shape, bytes:
lowering.stored_constants) has no array or row of its own, its enum constant is the earlier one's,
and a uniform per-channel weight zero point is stored as its one entry. Identifiers come from tensor names with
non-identifier characters replaced by ``_``; a collision (ignoring case, or
with a generated name such as ``<SYM>_T__COUNT``) gets ``_2``, ``_3`` ... in
table order. An op or dtype the runtime lacks still gets a table row
(``ARENA_OP_UNSUPPORTED`` / ``ARENA_DT_OTHER``) so a build can plan and link
any model; only running it fails.

Hostile models: model text reaches the C only through ``c_string`` (literals,
``?`` escaped so no trigraph forms) and ``c_comment`` (``*``, ``?``, ``\\`` and
non-ASCII as ``\\xNN``); every integer written into a table field is asserted
(``ARENA_TABLE_FITS``) to fit that field's type (``FIELD_TYPES``), so a model too
large for the tables fails the compile instead of wrapping.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any, Iterable, Sequence

import numpy as np

from arena_tool.model import optable
from arena_tool.core.errors import ArenaError
from arena_tool.emit import tileloop
from arena_tool.model.lowering import Lowered, Op, Stored, stored_constants
from arena_tool.core.files import write_atomic

if TYPE_CHECKING:
    from arena_tool.plan.planfile import PlanFile, PlanStep
    from arena_tool.emit.linker_fragment import RegionUse

MAX_RANK = 6

DTYPES = {"float32": "ARENA_DT_FLOAT32", "int8": "ARENA_DT_INT8", "uint8": "ARENA_DT_UINT8",
          "int32": "ARENA_DT_INT32", "int64": "ARENA_DT_INT64"}
C_TYPES = {"float32": "float", "int8": "int8_t", "uint8": "uint8_t", "int32": "int32_t", "int64": "int64_t"}

# Each op's runtime op (ARENA_OP_UNSUPPORTED when it has none), the inputs its kernel reads and
# its op-specific table fields come from the op table (optable.TABLE).
COUNT_ID = "_COUNT"  # the enum's last constant is <SYM>_T__COUNT: no tensor may take this id

# The C type of every integer table field codegen fills (arena_model.h; tests/test_codegen_hardening.py
# reads the header and checks they agree). The generated C asserts that each value fits its field.
_INT32 = ("kernel", "strides", "pads", "dilations", "axis", "trans_a", "trans_b", "count_include_pad",
          "legacy_axis", "out_min", "out_max", "ints")
FIELD_TYPES: dict[str, str] = {
    "arena_tensor_t.offset": "uint32_t", "arena_tensor_t.size": "uint32_t", "arena_tensor_t.elements": "uint32_t",
    "arena_tensor_t.rank": "uint8_t", "arena_tensor_t.shape": "int32_t",
    "arena_op_t.n_inputs": "uint16_t", "arena_op_t.n_outputs": "uint16_t", "arena_op_t.group": "uint16_t",
    "arena_op_t.workspace": "int32_t",
    "arena_op_t.inputs": "int32_t", "arena_op_t.outputs": "int32_t",
    **{f"arena_attrs_t.{f}": "int32_t" for f in _INT32},
    "arena_attrs_t.n_ints": "uint16_t", "arena_attrs_t.n_floats": "uint16_t",
    "arena_model_t.arena_size": "uint32_t", "arena_model_t.n_tensors": "uint32_t", "arena_model_t.n_ops": "uint32_t",
    "arena_model_t.n_inputs": "uint16_t", "arena_model_t.n_outputs": "uint16_t",
    "arena_model_t.inputs": "int32_t", "arena_model_t.outputs": "int32_t",
    "arena_entry_t.base": "uint32_t", "arena_size": "uint32_t",
    **{f"arena_tiles_t.{f}": "uint16_t" for f in ("rows", "cols", "n_members", "n_slots", "nhwc")},
    **{f"arena_tiles_t.{f}": "int32_t" for f in ("input", "output", "first_slot")},
    "arena_tiles_t.first": "uint32_t", "arena_tiles_t.tile_rows": "uint8_t",
}
_LIMITS = {"uint8_t": ("0", "UINT8_MAX"), "uint16_t": ("0", "UINT16_MAX"), "uint32_t": ("0", "UINT32_MAX"),
           "int16_t": ("INT16_MIN", "INT16_MAX"), "int32_t": ("INT32_MIN", "INT32_MAX")}
FITS_MACRO = [
    "/* ARENA_TABLE_FITS: a compile-time check that a value fits its table field (C11 _Static_assert,",
    "   GNU C's in C99 mode, else a negative array size). */",
    "#ifndef ARENA_TABLE_FITS",
    "#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L",
    "#define ARENA_TABLE_FITS(name, cond, msg) _Static_assert(cond, msg)",
    "#elif defined(__GNUC__)",
    "#define ARENA_TABLE_FITS(name, cond, msg) __extension__ _Static_assert(cond, msg)",
    "#else",
    "#define ARENA_TABLE_FITS(name, cond, msg) typedef char name[(cond) ? 1 : -1]",
    "#endif",
    "#endif",
]


class Fits:
    """The extreme value written into each table field (FIELD_TYPES), and where, so the
    generated C can assert that it fits: a model too large for a field fails the compile
    instead of wrapping silently (a 300-input Concat in a uint8_t count was 44)."""

    def __init__(self) -> None:
        self.hi: dict[str, tuple[int, str]] = {}
        self.lo: dict[str, tuple[int, str]] = {}

    def add(self, field: str, value: int, where: str) -> int:
        v = int(value)
        if field not in self.hi or v > self.hi[field][0]:
            self.hi[field] = (v, where)
        if field not in self.lo or v < self.lo[field][0]:
            self.lo[field] = (v, where)
        return v

    def all(self, field: str, values: Iterable[int], where: str) -> list[int]:
        return [self.add(field, v, where) for v in values]

    def asserts(self, prefix: str) -> list[str]:
        """One ARENA_TABLE_FITS per field and bound (prefix names the fallback typedefs)."""
        out = ["", "/* Every count, index and size above fits its field. */", *FITS_MACRO]
        for field in sorted(self.hi):
            c_type = FIELD_TYPES[field]
            lo_name, hi_name = _LIMITS[c_type]
            # long long on both sides: no unsigned comparison for -Wtype-limits to flag
            for (v, where), cond in ((self.hi[field], f"{self.hi[field][0]}LL <= (long long){hi_name}"),
                                     (self.lo[field], f"{self.lo[field][0]}LL >= (long long){lo_name}")):
                msg = c_string(f"{where}: {field} = {v} does not fit its type {c_type}")
                out.append(f"ARENA_TABLE_FITS({prefix}_fits{len(out)}, {cond}, {msg});")
        return out + [""]


def sanitize(name: str) -> str:
    """A C identifier fragment from a tensor or model name."""
    s = re.sub(r"[^0-9A-Za-z_]", "_", name)
    if not s or s[0].isdigit():
        s = "t_" + s
    return s


def unique_ids(names: Iterable[str], reserved: Iterable[str] = ()) -> list[str]:
    """Sanitized identifiers, unique ignoring case (the enum upper-cases them) and distinct from
    ``reserved`` (ids the generated names already take); suffixes _2, _3 ... assigned in order."""
    out: list[str] = []
    used: set[str] = {r.upper() for r in reserved}
    for n in names:
        base = sanitize(n)
        cand, k = base, 2
        while cand.upper() in used:
            cand, k = f"{base}_{k}", k + 1
        used.add(cand.upper())
        out.append(cand)
    return out


def table_names(plan: PlanFile, loops: bool = True) -> tuple[list[str], list[str]]:
    """The tables' tensors: the plan's buffers (a tile loop's tile tensors once, as its slots:
    tileloop.table_buffers), then the constants the kernels read in order of first use."""
    planned = {b.name for b in plan.buffers}
    const_names: list[str] = []
    seen: set[str] = set()  # const_names as a set: a 33,000-input Concat is not quadratic
    for step in plan.schedule:
        used = _reads(step.op_type)
        for pos, name in enumerate(step.inputs):
            if not name or name in planned or name in seen:
                continue
            if used is None or pos in used:
                const_names.append(name)
                seen.add(name)
    return tileloop.table_buffers(plan, tileloop.loops(plan) if loops else ()), const_names


def _runtime(op_type: str) -> optable.Runtime | None:
    spec = optable.spec(op_type)
    return spec.runtime if spec is not None else None


def runtime_ops(plans: Iterable[PlanFile], loops: bool = True) -> list[str]:
    """The runtime ops (arena_op_type_t names) the plans' op tables run, in the op table's order:
    the kernels a board's firmware links (the same lookup model_sources writes each op's type with;
    a tile loop runs its stage's ops, and copies its crops and tiles itself). loops: as
    model_sources'."""
    used = {r.enum for plan in plans for _, op_type, _ in tileloop.table_rows(plan, loops)
            if (r := _runtime(op_type)) is not None}
    return [r.enum for r in optable.RUNTIME if r.enum in used]


def _kernel_table(kernels: Sequence[str]) -> list[str]:
    """arena_kernels (arena_kernels.h): the kernels of ``kernels`` (runtime op names), every other
    op NULL, by designated initializer from the op table, so the runtime's enum order cannot drift."""
    known = {r.enum: r.kernel for r in optable.RUNTIME}
    unknown = [k for k in kernels if k not in known]
    if unknown:
        raise ValueError(f"not runtime ops: {unknown}")
    rows = [f"    [{k}] = {known[k]}," for k in kernels]
    return ['#include "arena_kernels.h"', "",
            "/* The kernels this board's models run (arena_run's dispatch); every other op is NULL, and",
            " * arena_run stops at it with ARENA_ERR_UNSUPPORTED. The runtime's other kernels stay unlinked. */",
            "const arena_kernel_t arena_kernels[ARENA_OP_COUNT] = {", *(rows or ["    0"]), "};", ""]


def _reads(op_type: str) -> tuple[int, ...] | None:
    """The input positions the op's kernel reads (None: all)."""
    spec = optable.spec(op_type)
    return spec.reads if spec is not None and spec.runtime is not None else None


def stored(model: Lowered, const_names: Sequence[str]) -> Stored:
    """How the tables store their constants (lowering.stored_constants); a graph output keeps its
    own row and value (its name and values are printed)."""
    outputs = set(model.outputs)
    return stored_constants(model, [n for n in const_names if n not in outputs])


def _tensor_ids(arena_names: list[str], const_names: list[str]) -> list[str]:
    return unique_ids(arena_names + const_names, reserved=(COUNT_ID,))


def header_ids(symbol: str, plan: PlanFile) -> list[str]:
    """Every name model_sources' header defines (macros, enum constants and tag, the model).

    Unique within a model, but a firmware includes every model's header: models ``a`` and
    ``a_t`` would both define ``A_T_T_B`` (tensor ``T_B`` of one, ``B`` of the other), so the
    gate compares these across a board's models (gate.gate)."""
    sym = sanitize(symbol).lower()
    SYM = sym.upper()
    ids = _tensor_ids(*table_names(plan))
    return [f"ARENA_MODEL_{SYM}_H", *(f"{SYM}_{m}" for m in ("ARENA_SIZE", "LOWER_BOUND", "WEIGHTS_BYTES",
                                                             "N_TENSORS", "N_OPS")),
            f"{sym}_tensor", *(f"{SYM}_T_{i.upper()}" for i in ids), f"{SYM}_T_{COUNT_ID}",
            *io_helper_ids(sym, plan), *(f"{sym}_{c}" for c, _, _ in caller_buffers(plan)), f"{sym}_model"]


QRANGE = {"int8": (-128, 127), "uint8": (0, 255)}  # the integer I/O types (io: int8)


def io_quant(plan: PlanFile, outputs: Sequence[str] | None = None) -> list[tuple[str, str, str, float, int]]:
    """(macro stem, tensor, dtype, scale, zero point) of each graph input (INPUT<k>: m->inputs[k]),
    then output (OUTPUT<k>: m->outputs[k], in ``outputs``' order; None: the plan's), whose header
    carries its quantization and helper: every integer one with one scale of an ``io: int8`` plan
    (none otherwise, so the default header keeps its bytes)."""
    if plan.options.io != "int8":
        return []
    out = []
    by_name = plan.by_name
    for kind in ("input", "output"):
        ios = [b for b in plan.buffers if b.kind == kind]
        if kind == "output" and outputs is not None:
            ios = [by_name[n] for n in outputs if n in by_name]
        for k, b in enumerate(ios):
            if b.dtype in QRANGE and b.quant is not None and len(b.quant.scale) == 1:
                out.append((f"{kind.upper()}{k}", b.name, b.dtype, float(b.quant.scale[0]), int(b.quant.zero_point[0])))
    return out


def _io_helpers(sym: str, plan: PlanFile, enum_of: dict[str, str], outputs: Sequence[str]) -> list[str]:
    """The header's scale and zero point of each integer graph input and output (io: int8), an
    inline quantize per input and dequantize per output: the arithmetic of onnxruntime's
    QuantizeLinear (x / scale rounded half to even, plus the zero point, saturated) and
    DequantizeLinear ((q - zero point) * scale), in float, without libm."""
    rows = io_quant(plan, outputs)
    if not rows:
        return []
    SYM = sym.upper()
    h = ["/* int8 I/O (io: int8): the inputs m->inputs[k] and outputs m->outputs[k] are the model's integer",
         " * tensors, real = scale * (q - zero_point): <sym>_quantize_input<k>(x) makes input k from the float",
         " * the model took, <sym>_dequantize_output<k>(q) gives the float the model returned. */"]
    for stem, name, dtype, scale, zp in rows:
        m = f"{SYM}_{stem}"
        ctype = C_TYPES[dtype]
        lo, hi = QRANGE[dtype]
        h += [f"/* {c_comment(name)} ({enum_of[name]}, {dtype}) */",
              f"#define {m}_SCALE {c_float(scale)}", f"#define {m}_ZERO_POINT {zp}"]
        if stem.startswith("INPUT"):
            h += [f"static inline {ctype} {sym}_quantize_{stem.lower()}(float x) {{",
                  f"    float v = x / {m}_SCALE;",
                  "    int32_t i;",
                  "    float f;",
                  "    if (!(v > -1024.0f)) v = -1024.0f; /* and NaN */",
                  "    if (v > 1024.0f) v = 1024.0f;",
                  "    i = (int32_t)v;  /* toward zero; then to the nearest, ties to even */",
                  "    f = v - (float)i;",
                  "    if (f > 0.5f || (f == 0.5f && (i & 1))) i++;",
                  "    else if (f < -0.5f || (f == -0.5f && (i & 1))) i--;",
                  f"    i += {m}_ZERO_POINT;",
                  f"    return ({ctype})(i < {lo} ? {lo} : i > {hi} ? {hi} : i);", "}"]
        else:
            h += [f"static inline float {sym}_dequantize_{stem.lower()}({ctype} q) {{",
                  f"    return (float)((int32_t)q - {m}_ZERO_POINT) * {m}_SCALE;", "}"]
    return h + [""]


def _caller_decls(sym: str, plan: PlanFile) -> list[str]:
    bufs = caller_buffers(plan)
    if not bufs:
        return []
    h = ["/* io_buffers: caller: the inputs and outputs live in these buffers, outside the arena (weak",
         " * defaults: define your own of the same name, or pass others to arena_run_io). */"]
    h += [f"extern uint8_t {sym}_{c}[{max(1, n)}]; /* {c_comment(t)} */" for c, t, n in bufs]
    return h + [""]


def io_helper_ids(sym: str, plan: PlanFile) -> list[str]:
    """The names _io_helpers defines (for header_ids)."""
    out = []
    for stem, *_ in io_quant(plan):
        fn = "quantize" if stem.startswith("INPUT") else "dequantize"
        out += [f"{sym.upper()}_{stem}_SCALE", f"{sym.upper()}_{stem}_ZERO_POINT", f"{sym}_{fn}_{stem.lower()}"]
    return out


def c_string(text: str) -> str:
    """A C string literal (printable ASCII; other bytes as octal escapes, ? as \\?)."""
    out = []
    for ch in text.encode("utf-8"):
        c = chr(ch)
        if c in '"\\?':  # \? : no trigraph (??/ is a backslash under -std=c99 / -trigraphs)
            out.append("\\" + c)
        elif 32 <= ch < 127:
            out.append(c)
        else:
            out.append(f"\\{ch:03o}")
    return '"' + "".join(out) + '"'


def c_float(v: float | np.floating[Any]) -> str:
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


def op_attrs(op: Op, model: Lowered) -> dict[str, Any]:
    """The op row's attributes (arena_attrs_t fields) of ``op``; {} for an op the runtime lacks."""
    return _c_attrs(op, model) if _runtime(op.op_type) is not None else {}


def _c_attrs(op: Op, model: Lowered) -> dict[str, Any]:
    """A lowered op's normalized attributes as arena_attrs_t fields (2-D; a 1-D op gets H = 1;
    the op-specific fields from the op's table entry, ``ints``/``floats`` as arena_ops.h's
    comments lay them out)."""
    a, path = op.attrs, model.path
    out: dict[str, Any] = {}
    spec = optable.TABLE[op.op_type]
    if spec.spatial:
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
    if spec.c_fields is not None:
        x = model.types.get(op.inputs[0]) if op.inputs else None
        out.update(spec.c_fields(a, len(x.shape) if x is not None else 0))
    if op.op_type == "QGemm":
        out.update(_qgemm_mults(op, model))
    return out


def _qgemm_mults(op: Op, model: Lowered) -> dict[str, Any]:
    """An int8-output QGemm's requantization multipliers alpha * a_scale * b_scale[j] / y_scale, one
    per entry of b_scale, in float32 with the kernel's roundings (fully_connected_int8.c), so a core
    without an FPU pays no soft-float product and division per output; {} where a scale is not a
    stored constant or one is not finite (the kernel computes them and checks each product: its fast
    paths take these without)."""
    ins = [*op.inputs, *[""] * 9]
    if not (ins[1] and ins[4] and ins[7]):
        return {}
    vals = [model.small_value(n) for n in (ins[1], ins[4], ins[7])]
    if any(v is None for v in vals):
        return {}
    a_s, b_s, y_s = (np.asarray(v, np.float32).reshape(-1) for v in vals)
    if a_s.size != 1 or y_s.size != 1 or b_s.size > 0xFFFF:  # n_floats is a uint16_t
        return {}
    with np.errstate(all="ignore"):
        ab = np.float32(op.attrs.get("alpha", 1.0)) * a_s[0]
        mults = (ab * b_s) / y_s[0]
    if not np.all(np.isfinite(mults)):
        return {}
    return {"floats": [float(v) for v in mults.astype(np.float32)]}


def attrs_init(attrs: dict[str, Any]) -> str:
    parts = []
    for key in ("kernel", "strides", "pads", "dilations"):
        if key in attrs:
            parts.append(f".{key} = {{{', '.join(str(int(v)) for v in attrs[key])}}}")
    for key in ("axis", "trans_a", "trans_b", "count_include_pad", "legacy_axis", "out_min", "out_max"):
        if key in attrs:
            parts.append(f".{key} = {int(attrs[key])}")
    for key in ("alpha", "beta", "min", "max", "epsilon", "value"):
        if key in attrs:
            parts.append(f".{key} = {c_float(attrs[key])}")
    for key in ("ints", "floats"):
        if key in attrs:  # the name of the op's static array, emitted just before
            parts.append(f".n_{key} = {int(attrs['n_' + key])}, .{key} = {attrs[key]}")
    return "{" + ", ".join(parts) + "}" if parts else "{0}"


# --- the model tables -------------------------------------------------------

def model_sources(plan: PlanFile, model: Lowered, symbol: str, loops: bool = True) -> tuple[str, str]:
    """(header text, source text) of one model's tables; `symbol` names the C objects.

    ``plan`` is the plan file (planfile.load / plancheck.verified); ``model`` is the lowered
    model the plan was made from (plancheck.lowered_model): the ops, their attributes and the
    constant values all come from it. loops: patched stages as tile loops (tileloop.py);
    False writes every tile's ops out, the form the loops are tested against.
    """
    model_path = model.path
    if plan.model_sha256 != model.sha256:
        raise ArenaError("the model changed since it was planned", file=model_path, field="model_sha256",
                         hint="re-plan the model (the build does this when it sees the change)")
    sym = sanitize(symbol).lower()
    SYM = sym.upper()
    by_node = {op.node: op for op in model.ops}
    found = [by_node.get(st.node) for st in plan.schedule]  # the plan's order (scheduling)
    if len(model.ops) != len(found) or len({st.node for st in plan.schedule}) != len(found) or any(
            op is None or op.op_type != st.op_type or tuple(op.outputs) != st.outputs
            for op, st in zip(found, plan.schedule)):
        raise ArenaError("the plan's schedule is not the model's lowered ops", file=model_path, field="schedule",
                         hint="re-plan the model with this version of arena")
    steps = [op for op in found if op is not None]  # every one (checked above)
    by_name = {b.name: b for b in plan.buffers}
    arena_names, const_names = table_names(plan, loops)
    for name in const_names:
        if name not in model.constants:
            raise ArenaError(f"tensor {name!r} is neither planned nor constant", file=model_path, field="buffers",
                             hint="re-plan the model")
    kept = stored(model, const_names)
    values = {n: kept.one[n] if n in kept.one else model.value(n) for n in const_names}
    shared = kept.shared  # a constant equal to an earlier one: that one's row
    rows_of = arena_names + [n for n in const_names if n not in shared]

    tile_loops = tileloop.loops(plan) if loops else ()
    ids = _tensor_ids(arena_names, const_names)
    ident_of = {n: ids[i] for i, n in enumerate(arena_names + const_names)}
    index = {n: i for i, n in enumerate(rows_of)}
    index.update((n, index[first]) for n, first in shared.items())
    enum_of = {n: f"{SYM}_T_{ident_of[n].upper()}" for n in index}

    h: list[str] = []
    guard = f"ARENA_MODEL_{SYM}_H"
    h += [f"/* Generated by arena_tool.emit.codegen from {c_comment(plan.model)}"
          f" (planner {c_comment(plan.planner)}). Do not edit. */",
          f"#ifndef {guard}", f"#define {guard}", "", '#include "arena_model.h"', "",
          f"#define {SYM}_ARENA_SIZE {plan.arena_size}u",
          f"#define {SYM}_LOWER_BOUND {plan.lower_bound}u",
          f"#define {SYM}_WEIGHTS_BYTES {sum(int(values[n].nbytes) for n in const_names if n not in shared)}u",
          f"#define {SYM}_N_TENSORS {len(rows_of)}u", f"#define {SYM}_N_OPS {tileloop.table_ops(plan, tile_loops)}u", "",
          "/* Tensor indices: arena tensors, then constants (a constant equal to an earlier one shares its row). */",
          f"enum {sym}_tensor {{"]
    for n in arena_names + const_names:
        h.append(f"    {enum_of[n]} = {index[n]},")
    h += [f"    {SYM}_T_{COUNT_ID} = {len(rows_of)}", "};", "", *_io_helpers(sym, plan, enum_of, model.outputs),
          *_caller_decls(sym, plan),
          f"extern const arena_model_t {sym}_model;", "", f"#endif /* {guard} */", ""]

    # The source names no generated header, so build tools may name the files freely.
    s: list[str] = ["/* Generated by arena_tool.emit.codegen. Do not edit. */", "#include <math.h>",
                    "", '#include "arena_model.h"', ""]
    fits = Fits()
    storage, where_const, section = _const_storage(plan)
    s.append(f"/* Constants ({where_const}). */")
    const_arrays: dict[str, str] = {}
    for n in const_names:
        if n in shared:
            continue
        v = values[n]
        dt = _np_dtype_name(v)
        ident = f"{sym}_c_{ident_of[n]}"
        const_arrays[n] = ident
        if dt not in C_TYPES:
            dt, v = "uint8", np.frombuffer(np.ascontiguousarray(v).tobytes(), dtype=np.uint8)
        per = 8 if dt == "float32" else 16
        s.append(f"{storage}{C_TYPES[dt]} {ident}[{max(1, v.size)}]{section} = {{ /* {c_comment(n)} */")
        s.append(_wrap(_values(np.asarray(v).astype(dt), dt), per))
        s.append("};")
    s.append("")
    shown = {s.key: s.display for lp in tile_loops for s in lp.slots}  # a slot's row shows the untiled name
    row_names: list[str] = []  # tensor_names (ARENA_NAMES)
    s.append(f"static const arena_tensor_t {sym}_tensors[{max(1, len(rows_of))}] = {{")
    for n in arena_names:
        b = by_name[n]  # an alias carries its root's offset (plancheck.check); a slot: its first tile's
        row_names.append(shown.get(n, n))
        s.append(_tensor_row(shown.get(n, n), "NULL", b.offset, b.size, b.elements,
                             DTYPES.get(b.dtype, "ARENA_DT_OTHER"), list(b.shape), model_path, fits))
    for n in const_names:
        if n in shared:
            continue
        v = values[n]
        dt = _np_dtype_name(v)
        row_names.append(n)
        s.append(_tensor_row(n, const_arrays[n], 0, int(v.nbytes), int(v.size),
                             DTYPES.get(dt, "ARENA_DT_OTHER"), list(v.shape), model_path, fits))
    if not rows_of:
        s.append("    {0}")
    s += ["};", ""]

    rows = _Rows(sym, index, fits, s)
    untiled = {op.name: op for op in (model.untiled or model).ops}
    loop_rows: list[str] = []
    at = 0
    for k, lp in enumerate(tile_loops):
        for i in range(at, lp.first):
            step = plan.schedule[i]
            rows.add(step, step.inputs, step.outputs, step.workspace, steps[i], model)
        originals = [untiled[m.name] for m in lp.members]
        tileloop.check(plan, lp, originals, [optable.TABLE[op.op_type].spatial for op in originals])
        loop_rows.append(_loop_table(sym, k, lp, len(rows.rows), index, plan, fits, s))
        for m, op in zip(lp.members, originals):  # each with its untiled op's attributes (its own pads)
            rows.add(m.step, m.inputs, (m.output,), m.workspace, op, model.untiled or model, m.name)
        at = lp.end
    for i in range(at, len(plan.schedule)):
        step = plan.schedule[i]
        rows.add(step, step.inputs, step.outputs, step.workspace, steps[i], model)
    op_rows = rows.rows
    n_ops = len(op_rows)
    s += ["", f"static const arena_op_t {sym}_ops[{max(1, len(op_rows))}] = {{"]
    s += op_rows or ["    {0}"]
    s += ["};", ""]
    if loop_rows:
        s += [f"static const arena_tiles_t {sym}_loops[{len(loop_rows)}] = {{", *loop_rows, "};", ""]
    s += ["/* The graph inputs' and outputs' names; every tensor's and op's only with ARENA_NAMES (arena_model.h). */",
          _names(f"{sym}_io_names", [*model.inputs, *model.outputs]), "#if defined(ARENA_NAMES)",
          _names(f"{sym}_tensor_names", row_names), _names(f"{sym}_op_names", rows.names),
          _names(f"{sym}_op_types", rows.types), "#endif", ""]

    g_in, g_out = list(model.inputs), list(model.outputs)
    for kind, names in (("inputs", g_in), ("outputs", g_out)):
        for n in names:
            if n not in by_name:
                raise ArenaError(f"graph {kind[:-1]} {n!r} has no buffer in the plan", file=model_path,
                                 field="buffers", hint="re-plan the model")
        s.append(_index_array(f"{sym}_{kind}", [str(index[n]) for n in names], fits, f"arena_model_t.{kind}",
                              f"graph {kind}"))
    for field, count in (("arena_size", plan.arena_size), ("n_tensors", len(rows_of)),
                         ("n_ops", n_ops), ("n_inputs", len(g_in)), ("n_outputs", len(g_out))):
        fits.add(f"arena_model_t.{field}", count, f"model {symbol!r}")
    regions_c, first_size, regions_tail = (_caller_parts if caller_buffers(plan) else _split_parts)(
        plan, sym, len(rows_of))
    s += regions_c + ["", f"const arena_model_t {sym}_model = {{",
          f"    {c_string(symbol)}, {first_size}u, {len(rows_of)}u, {n_ops}u,"
          f" {len(g_in)}, {len(g_out)},",
          f"    {sym}_tensors, {sym}_ops, {sym}_inputs, {sym}_outputs{regions_tail},",
          f"    {len(loop_rows)}u, {f'{sym}_loops' if loop_rows else 'NULL'},",
          f"    {sym}_io_names, ARENA_NAME({sym}_tensor_names), ARENA_NAME({sym}_op_names), ARENA_NAME({sym}_op_types)",
          "};"]
    return "\n".join(h), "\n".join(s + fits.asserts(sym))


class _Rows:
    """The op table's rows, one ``add`` per row, with their index and parameter arrays appended
    to the source ``out`` as they come."""

    def __init__(self, sym: str, index: dict[str, int], fits: Fits, out: list[str]) -> None:
        self.sym, self.index, self.fits, self.out = sym, index, fits, out
        self.rows: list[str] = []
        self.attrs: dict[str, str] = {}  # an attrs initializer -> its object: ops with equal attributes share it
        self.names: list[str] = []  # op_names and op_types (ARENA_NAMES)
        self.types: list[str] = []

    def add(self, step: PlanStep, inputs: Sequence[str], outputs: Sequence[str], workspace: str | None, op: Op,
            model: Lowered, name: str | None = None) -> None:
        """A row for ``step`` (its op type) over the table names ``inputs``/``outputs``, with
        ``op``'s attributes (a tile loop's member: the untiled op's own) and ``name`` shown."""
        sym, index, fits, s = self.sym, self.index, self.fits, self.out
        i = len(self.rows)
        op_type = step.op_type
        runtime = _runtime(op_type)
        used = _reads(op_type)
        ins = [str(index[n]) if n and (used is None or p in used) and n in index else "-1"
               for p, n in enumerate(inputs)]
        outs = [str(index[n]) if n in index else "-1" for n in outputs]
        where = f"op {i} {step.name or step.outputs[0]!r}"
        s.append(_index_array(f"{sym}_op{i}_in", ins, fits, "arena_op_t.inputs", where))
        s.append(_index_array(f"{sym}_op{i}_out", outs, fits, "arena_op_t.outputs", where))
        kind = runtime.enum if runtime is not None else "ARENA_OP_UNSUPPORTED"
        attrs = _c_attrs(op, model) if runtime is not None else {}
        _note_attrs(fits, attrs, where)
        for key, c_type, fmt in (("ints", "int32_t", lambda v: c_int(v, 32)), ("floats", "float", c_float)):
            if attrs.get(key):
                s.append(f"static const {c_type} {sym}_op{i}_{key}[{len(attrs[key])}] = "
                         f"{{{', '.join(fmt(v) for v in attrs[key])}}};")
                attrs[f"n_{key}"] = fits.add(f"arena_attrs_t.n_{key}", len(attrs[key]), where)
                attrs[key] = f"{sym}_op{i}_{key}"
            else:
                attrs.pop(key, None)
        ws = fits.add("arena_op_t.workspace", index[workspace] if workspace else -1, where)
        fits.add("arena_op_t.n_inputs", len(ins), where)
        fits.add("arena_op_t.n_outputs", len(outs), where)
        group = fits.add("arena_op_t.group", attrs.pop("group", 0), where)  # in the row: the rest is shared
        init = attrs_init(attrs)
        if init not in self.attrs:
            self.attrs[init] = f"{sym}_attrs{len(self.attrs)}"
            s.append(f"static const arena_attrs_t {self.attrs[init]} = {init};")
        self.names.append(name or step.name or step.outputs[0])
        self.types.append(op_type)
        self.rows.append(f"    {{{kind}, {len(ins)}, {len(outs)}, {group}, {ws}, {sym}_op{i}_in, {sym}_op{i}_out, "
                         f"&{self.attrs[init]}}},")


def _loop_table(sym: str, k: int, lp: tileloop.Loop, first: int, index: dict[str, int], plan: PlanFile,
                fits: Fits, out: list[str]) -> str:
    """Loop ``k``'s arena_tiles_t row (arena_model.h), its arrays appended to ``out``: per slot
    (kind, member, input), per tile its row of offsets, the distinct rows of each slot's offset."""
    by_name = plan.by_name
    slots = [v for sl in lp.slots for v in (sl.kind, sl.member, sl.pos)]
    per_tile = [tuple(by_name[b].offset if b is not None else 0 for b in (sl.buffers[t] for sl in lp.slots))
                for t in range(lp.tiles)]
    distinct = sorted(set(per_tile))
    wide = max((v for row in distinct for v in row), default=0) > 0xFFFF
    pre = f"{sym}_loop{k}"
    out.append(f"static const int16_t {pre}_slots[{len(slots)}] = {{{', '.join(map(str, slots))}}};")
    out.append(f"static const uint8_t {pre}_tile_rows[{lp.tiles}] = {{")
    out.append(_wrap([str(distinct.index(row)) for row in per_tile], 32))
    out.append("};")
    out.append(f"static const uint{32 if wide else 16}_t {pre}_offsets[{len(distinct) * len(lp.slots)}] = {{")
    out.append(_wrap([f"{v}u" for row in distinct for v in row], 16))
    out.append("};")
    where = f"tile loop {k} ({lp.output!r})"
    for field, v in (("rows", lp.rows), ("cols", lp.cols), ("n_members", len(lp.members)),
                     ("n_slots", len(lp.slots)), ("tile_rows", len(distinct) - 1)):
        fits.add(f"arena_tiles_t.{field}", v, where)
    first_slot = index[lp.rowed[0].key]
    for field, v in (("first", first), ("input", index[lp.input]), ("output", index[lp.output]),
                     ("first_slot", first_slot)):
        fits.add(f"arena_tiles_t.{field}", v, where)
    return (f"    {{arena_run_tiles, {first}u, {lp.rows}u, {lp.cols}u, {len(lp.members)}u, {len(lp.slots)}u, "
            f"{int(lp.nhwc)}u, {index[lp.input]}, {index[lp.output]}, {first_slot},\n     {pre}_slots, {pre}_tile_rows, "
            f"{'NULL' if wide else f'{pre}_offsets'}, {f'{pre}_offsets' if wide else 'NULL'}}},")


def _index_array(ident: str, items: list[str], fits: Fits, field: str, where: str) -> str:
    """A static array of tensor indices (-1: absent) in the field's element type."""
    fits.all(field, (int(v) for v in items), where)
    return f"static const {FIELD_TYPES[field]} {ident}[{max(1, len(items))}] = {{{', '.join(items) or '-1'}}};"


def _note_attrs(fits: Fits, attrs: dict[str, Any], where: str) -> None:
    """Record the integer attributes _attrs_init writes (before ints become an array's name)."""
    for key in _INT32:
        v = attrs.get(key)
        if isinstance(v, (list, tuple)):
            fits.all(f"arena_attrs_t.{key}", (int(x) for x in v), where)
        elif v is not None:
            fits.add(f"arena_attrs_t.{key}", int(v), where)


def c_comment(text: str) -> str:
    """Model text for inside a /* */ comment: printable ASCII but ``*``, ``?`` and ``\\``; those
    and every other byte (UTF-8) as ``\\xNN``. No comment end, nested start, trigraph or line
    splice can form, so a name cannot close the comment and inject C."""
    return "".join(c if " " <= c <= "~" and c not in "*?\\" else "".join(f"\\x{b:02x}" for b in c.encode())
                   for c in text)


def _names(ident: str, names: Sequence[str]) -> str:
    """A ``static const char *const`` array of names."""
    return (f"static const char *const {ident}[{max(1, len(names))}] = {{\n"
            + _wrap([c_string(n) for n in names] or ["0"], 1) + "\n};")


def _tensor_row(name: str, data: str, offset: int, size: int, elements: int, dtype: str,
                shape: list[int], model_path: str, fits: Fits) -> str:
    if len(shape) > MAX_RANK:
        raise ArenaError(f"tensor {name!r} has rank {len(shape)}, the runtime supports up to {MAX_RANK}",
                         file=model_path, field="buffers")
    where = f"tensor {name!r}"
    for field, v in (("offset", offset), ("size", size), ("elements", elements), ("rank", len(shape))):
        fits.add(f"arena_tensor_t.{field}", v, where)
    fits.all("arena_tensor_t.shape", shape, where)
    dims = ", ".join(str(int(d)) for d in shape) or "0"
    return (f"    {{{data}, {offset}u, {size}u, {elements}u, {dtype}, {len(shape)},"
            f" {{{dims}}}}},")


# --- split arenas and weights in RAM (split_arena.py, gate.py) -----------

def region_symbol(region: str) -> str:
    """The C array of a split arena's region: arena_<region> (section .arena_<region>)."""
    return f"arena_{sanitize(region)}"


def _const_storage(plan: PlanFile) -> tuple[str, str, str]:
    """(storage words, comment, section attribute) of the constants: ``static const`` in flash, or
    (``weights: <region>``) writable arrays in section .weights_<region>, whose load image the
    linker script keeps in flash and arena_init copies; for an external flash (``weights: QSPI``) the
    same arrays, which the linker script places in it and nothing copies (the tables are shared by
    every board a model's options are the same on, so they cannot depend on which kind the board has)."""
    region = plan.options.weights or "flash"
    if region == "flash":
        return "static const ", "flash", ""
    return ("static ", f"section .weights_{c_comment(region)}: a RAM region's is copied there from flash at "
            "start-up, an external flash's is read in place",
            f' __attribute__((section(".weights_{sanitize(region)}")))')


def caller_buffers(plan: PlanFile) -> list[tuple[str, str, int]]:
    """(C symbol, tensor, bytes) of each caller-owned graph input, then output (io_buffers:
    caller): ``<sym>_input<k>`` / ``<sym>_output<k>`` in plan order, the default buffers the
    tables point at until arena_run_io is given others; [] otherwise."""
    if plan.options.io_buffers != "caller":
        return []
    out = []
    for kind in ("input", "output"):
        for k, b in enumerate(b for b in plan.buffers if b.kind == kind):
            out.append((f"{kind}{k}", b.name, b.size))
    return out


def _caller_parts(plan: PlanFile, sym: str, n_tensors: int) -> tuple[list[str], int, str]:
    """_split_parts for io_buffers: caller: the arena (or the split plan's regions) first, then one
    region named "caller" per graph input and output, pointing at its weak default buffer (the
    application may define a strong one, or pass its own to arena_run_io); the table is writable,
    since arena_run_io points those regions at the application's buffers."""
    bufs = caller_buffers(plan)
    regions = plan.regions or ()
    arena = [(r.name, region_symbol(r.name), r.arena_size) for r in regions] or [("arena", "arena", plan.arena_size)]
    names = [r.name for r in regions]
    slot = {name: len(arena) + k for k, (_, name, _) in enumerate(bufs)}
    by_name = plan.by_name
    index = [slot[n] if n in slot else (names.index(by_name[n].region or "") if regions else 0)
             for n in table_names(plan)[0]]
    index += [0] * (n_tensors - len(index))
    align = max(16, plan.alignment, *(b.alignment or 1 for b in plan.buffers))
    out = ["", "/* Caller-owned inputs and outputs (io_buffers: caller): outside the arena, one buffer each.",
           "   These weak defaults are used until the application defines its own (same name) or passes",
           "   others to arena_run_io. */"]
    out += [f"extern uint8_t {ident}[];" for _, ident, _ in arena if ident != "arena"]
    out += [f"__attribute__((weak, aligned({align}))) uint8_t {sym}_{c}[{max(1, n)}];"
            for c, _, n in bufs]
    out.append(f"static arena_region_t {sym}_regions[{len(arena) + len(bufs)}] = {{")
    out += [f"    {{{c_string(name)}, {ident}, {n}u}}," for name, ident, n in arena]
    out += [f"    {{{c_string(CALLER)}, {sym}_{c}, {n}u}}, /* {c_comment(t)} */" for c, t, n in bufs]
    out.append("};")
    out.append(f"static const uint8_t {sym}_tensor_regions[{max(1, len(index))}] = {{")
    out.append(_wrap([str(i) for i in index], 32))
    out.append("};")
    return out, arena[0][2], f",\n    {len(arena) + len(bufs)}u, {sym}_regions, {sym}_tensor_regions"


CALLER = "caller"  # the region name of a caller-owned buffer (arena_model.h: arena_run_io)


def _split_parts(plan: PlanFile, sym: str, n_tensors: int) -> tuple[list[str], int, str]:
    """(lines before the model struct, its arena_size, what follows its outputs) for a split
    plan: the regions table (arena_<region> + 0 each: sequential sharing) and each tensor's
    region index (plan order, then the constants at 0), the first region's size, and
    "n_regions, regions, tensor_regions"; for a one-arena plan ([], arena_size, "0u, NULL, NULL")."""
    regions = plan.regions or ()
    if not regions:
        return [], plan.arena_size, ",\n    0u, NULL, NULL"
    names = [r.name for r in regions]
    index = [names.index(b.region or "") for b in plan.buffers]
    index += [0] * (n_tensors - len(index))
    out = ["", "/* A split arena: the model's slice in each region, fastest first (the board's arena source",
           "   defines the arrays), and each tensor's region. */"]
    out += [f"extern uint8_t {region_symbol(r.name)}[];" for r in regions]
    out.append(f"static const arena_region_t {sym}_regions[{len(regions)}] = {{")
    out += [f"    {{{c_string(r.name)}, {region_symbol(r.name)}, {r.arena_size}u}}," for r in regions]
    out.append("};")
    out.append(f"static const uint8_t {sym}_tensor_regions[{max(1, len(index))}] = {{")
    out.append(_wrap([str(i) for i in index], 32))
    out.append("};")
    return out, regions[0].arena_size, f",\n    {len(regions)}u, {sym}_regions, {sym}_tensor_regions"


def _split_arena_lines(regions: Sequence[RegionUse], alignment: int) -> tuple[list[str], list[str], int]:
    """(header lines, source lines, first region's bytes) of a split arena: one array per region
    in its NOLOAD section, and ``arena`` an alias of the first."""
    h, s = [], ["/* A split arena: one array per RAM region, fastest first (linker sections .arena_<region>,",
                "   NOLOAD); arena is the first. */"]
    for r in regions:
        n, ident = r.arena, region_symbol(r.name)
        h.append(f"extern uint8_t {ident}[{max(1, n)}];")
        s.append(f'__attribute__((section("{r.arena_section}"), aligned({max(16, int(alignment))}))) '
                 f"uint8_t {ident}[{n}];" if n > 0 else
                 f"uint8_t {ident}[1]; /* nothing planned here: kept out of {r.arena_section} */")
    first = regions[0].arena
    s.append(f'extern uint8_t arena[{max(1, first)}] __attribute__((alias("{region_symbol(regions[0].name)}")));')
    return h, s, first


def _weights_init(regions: Sequence[RegionUse]) -> list[str]:
    """arena_init: copy each .weights_<region> from its load image in flash (linker.py's symbols)."""
    names = [sanitize(r.name) for r in regions if r.weights_section and not r.in_place]  # in place: no copy
    if not names:
        return []
    s = ["", "/* Weights in RAM (weights: <region>): copied from their load image in flash. A constructor:",
         "   startup code that runs the init array calls it before main (else call it first). */"]
    for n in names:
        s.append(f"extern uint8_t __weights_{n}_start[], __weights_{n}_end[], __weights_{n}_load[];")
    s += ["__attribute__((constructor)) void arena_init(void)", "{"]
    for n in names:
        s += [f"    {{", f"        const uint8_t *src = __weights_{n}_load;",
              f"        uint8_t *dst = __weights_{n}_start;",
              f"        while (dst < __weights_{n}_end) {{", "            *dst++ = *src++;", "        }", "    }"]
    return s + ["}"]


# --- the board's arena ------------------------------------------------------

def arena_sources(board: str, arena_size: int, bases: list[tuple[str, int]], alignment: int = 16,
                  regions: Sequence[RegionUse] = (), kernels: Sequence[str] | None = None) -> tuple[str, str]:
    """(header, source) defining the board's arena and where each model starts in it; the
    array is aligned to the largest buffer alignment of the plans (at least 16).

    regions: the report's ``regions`` (linker_fragment.RegionUse): a split arena gets one array per
    region (``arena`` the first, ``arena_size`` its bytes); copied weights get ``arena_init``.
    kernels: ``runtime_ops`` of the board's plans, the ops whose kernels ``arena_kernels`` holds;
    None (``runtime: none``, no arena runtime linked): no table."""
    split = [r for r in regions if r.arena_section not in (None, ".arena")]
    if split:
        split_h, split_s, arena_size = _split_arena_lines(split, alignment)
    B = sanitize(board).upper()
    syms = [sanitize(sym).lower() for sym, _ in bases]
    h = [f"/* Generated by arena_tool.emit.codegen for board {c_comment(board)}. Do not edit. */",
         f"#ifndef ARENA_BOARD_{B}_H", f"#define ARENA_BOARD_{B}_H", "", "#include <stdint.h>", "",
         f"#define ARENA_SIZE {int(arena_size)}u", f"#define ARENA_MODEL_COUNT {len(bases)}u"]
    for sym, (_, base) in zip(syms, bases):
        h.append(f"#define ARENA_BASE_{sym.upper()} {int(base)}u")
    h += ["", *(split_h if split else []), f"extern uint8_t arena[{max(1, int(arena_size))}];", "",
          f"#endif /* ARENA_BOARD_{B}_H */", ""]
    s = [f"/* Generated by arena_tool.emit.codegen for board {c_comment(board)}. Do not edit. */",
         '#include "arena_model.h"', ""]
    if kernels is not None:
        s += _kernel_table(kernels)
    if split:
        s += split_s
    else:
        s += ["/* The one activation arena (linker section .arena, NOLOAD). */",
              f'__attribute__((section(".arena"), aligned({max(16, int(alignment))}))) uint8_t arena[{int(arena_size)}];'
              if arena_size > 0
              else "uint8_t arena[1]; /* no activations: kept out of .arena, whose planned size is 0 */"]
    s += [f"const uint32_t arena_size = {int(arena_size)}u;", ""]
    for sym in syms:
        s.append(f"extern const arena_model_t {sym}_model;")
    entries = [f"    {{&{sym}_model, {int(base)}u}}," for sym, (_, base) in zip(syms, bases)]
    s += ["", f"const arena_entry_t arena_entries[{max(1, len(bases))}] = {{"]
    s += entries or ["    {0, 0u}"]
    s += ["};", f"const uint32_t arena_entry_count = {len(bases)}u;"]
    s += _weights_init(regions)
    fits = Fits()
    fits.add("arena_size", arena_size, f"board {board!r}")
    fits.all("arena_entry_t.base", [base for _, base in bases] or [0], f"board {board!r}")
    return "\n".join(h), "\n".join(s + fits.asserts("arena_board"))


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
    h = [f"/* Generated by arena_tool.emit.codegen for model {c_comment(symbol)} (runtime: tflm). Do not edit. */",
         f"#ifndef ARENA_TFLM_{SYM}_H", f"#define ARENA_TFLM_{SYM}_H", "",
         f"/* arena's plan: TFLM's non-persistent head (the planned tensors). */",
         f"#define {SYM}_HEAD_SIZE {int(head)}u",
         "/* TFLM's persistent tail: measured on the host with TFLM's reference kernels, plus what the",
         "   firmware's kernels allocate beyond them (arena_tool.model.tflm_persistent). */",
         f"#define {SYM}_TAIL_SIZE {int(tail)}u",
         f"/* The arena to give tflite::MicroInterpreter: head + tail, rounded up to 16. */",
         f"#define {SYM}_TENSOR_ARENA_SIZE {arena}u",
         f"#define {SYM}_TFLITE_LEN {len(planned)}u", "",
         "#ifdef __cplusplus", 'extern "C" {', "#endif",
         f"extern const unsigned char {sym}_tflite[{len(planned)}];",
         f"extern const unsigned int {sym}_tflite_len;",
         "#ifdef __cplusplus", "}", "#endif", "", f"#endif /* ARENA_TFLM_{SYM}_H */", ""]
    rows = [", ".join(f"0x{b:02x}" for b in planned[i:i + 16]) for i in range(0, len(planned), 16)]
    s = [f"/* Generated by arena_tool.emit.codegen for model {c_comment(symbol)} (runtime: tflm). Do not edit. */",
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
    h = [f"/* Generated by arena_tool.emit.codegen for board {c_comment(board)} (runtime: tflm). Do not edit. */",
         f"#ifndef ARENA_TFLM_BOARD_{B}_H", f"#define ARENA_TFLM_BOARD_{B}_H", "", "#include <stdint.h>", "",
         f"#define TENSOR_ARENA_SIZE {n}u", f"#define TENSOR_ARENA_MODEL_COUNT {len(bases)}u"]
    for sym, (_, base) in zip(syms, bases):
        h.append(f"#define TENSOR_ARENA_BASE_{sym.upper()} {int(base)}u")
    h += ["", "#ifdef __cplusplus", 'extern "C" {', "#endif", f"extern uint8_t tensor_arena[{n}];",
          "#ifdef __cplusplus", "}", "#endif", "", f"#endif /* ARENA_TFLM_BOARD_{B}_H */", ""]
    s = [f"/* Generated by arena_tool.emit.codegen for board {c_comment(board)} (runtime: tflm). Do not edit. */",
         '#include "tflm_arena.h"', "",
         "/* TFLM's tensor_arena (linker section .tensor_arena, NOLOAD): head + persistent tail. */",
         f'__attribute__((section(".tensor_arena"), aligned(16))) uint8_t tensor_arena[{n}];', ""]
    return "\n".join(h), "\n".join(s)


def write(path: str, text: str) -> None:
    """Write a generated file atomically (readers never see half a file)."""
    write_atomic(path, text)
