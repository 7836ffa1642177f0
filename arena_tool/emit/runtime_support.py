"""What the C runtime (arena_tool/runtime) can execute, checked before anything is compiled.

A model whose tables would link but fail on the target is refused at build time instead,
with the op index, node name, op type and the reason. ``arena-tool plan`` plans any model;
only a firmware build that compiles the runtime asks this module (``runtime: none`` skips it).

What each kernel requires is its op's ``checks`` in the op table (optable.TABLE); this module tests
a model against them. Each mirrors a kernel's own checks in arena_tool/runtime; a check that is
looser than its kernel shows up as a run-time failure in the runtime tests, which run every
checked op.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Callable

import numpy as np

from arena_tool.model import optable, tflite_lower
from arena_tool.emit import codegen
from arena_tool.model.lowering import Lowered, Op
from arena_tool.model.optable import FLOAT, Check, CheckKind


@dataclasses.dataclass(frozen=True)
class Gap:
    """One op the runtime cannot execute: its schedule index, node name, op type and why."""

    index: int
    name: str
    op_type: str
    why: str

    def message(self, model: str) -> str:
        return f"model {model}: op {self.index} {self.name!r} ({self.op_type}) cannot run on arena's runtime: {self.why}"


Rule = Callable[[Op, Lowered], "str | None"]  # None: runs; else why not


def _dtypes(allowed: frozenset[str]) -> Rule:
    def rule(op: Op, m: Lowered) -> str | None:
        for x in (*op.inputs[:1], *op.outputs):
            t = m.types.get(x)
            if t is not None and t.dtype not in allowed:
                return f"{x!r} is {t.dtype}; the kernel takes {', '.join(sorted(allowed))}"
        return None
    return rule


def _needs(*keys: str) -> Rule:
    def rule(op: Op, m: Lowered) -> str | None:
        missing = [k for k in keys if k not in op.attrs]
        return f"its {', '.join(missing)} are not constants of the model" if missing else None
    return rule


def _spatial(op: Op, m: Lowered) -> str | None:
    k = op.attrs.get("kernel_shape")
    if k is not None and len(k) not in (1, 2):
        return f"a {len(k)}-D kernel; the runtime has 1-D and 2-D kernels"
    return None


def _resize(op: Op, m: Lowered) -> str | None:
    a = op.attrs
    if a.get("mode") not in ("nearest", "linear"):
        return f"mode {a.get('mode')!r}; the runtime resizes by nearest and linear"
    if a.get("coordinate_transformation_mode") not in optable.COORDINATE_MODES:
        return f"coordinate_transformation_mode {a.get('coordinate_transformation_mode')!r} is not implemented"
    if a.get("mode") == "linear":
        return _dtypes(FLOAT)(op, m)
    return None


def _pad_mode(op: Op, m: Lowered) -> str | None:
    mode = op.attrs.get("mode", "constant")
    return None if mode in optable.PAD_MODES else f"mode {mode!r}; the runtime pads constant, reflect and edge"


def _inputs_at_most(n: int) -> Rule:
    def rule(op: Op, m: Lowered) -> str | None:
        k = sum(1 for x in op.inputs if x)
        return f"{k} inputs; the kernel takes up to {n}" if k > n else None
    return rule


def _avg_dilations(op: Op, m: Lowered) -> str | None:
    d = op.attrs.get("dilations", [])
    return f"dilations {d}; the average pool has none" if any(v != 1 for v in d) else None


def _quantize(src: frozenset[str], dst: frozenset[str]) -> Rule:
    def rule(op: Op, m: Lowered) -> str | None:
        x, y = m.types.get(op.inputs[0]), m.types.get(op.outputs[0])
        if x is not None and x.dtype not in src or y is not None and y.dtype not in dst:
            return (f"{x.dtype if x else '?'} -> {y.dtype if y else '?'}; the kernel converts "
                    f"{'/'.join(sorted(src))} -> {'/'.join(sorted(dst))}")
        return None
    return rule


def _floor_mode(op: Op, m: Lowered) -> str | None:
    """The quantized average pool computes floor-mode windows only."""
    a = op.attrs
    x, y = m.types.get(op.inputs[0]), m.types.get(op.outputs[0])
    if not a.get("ceil_mode") or x is None or y is None or "kernel_shape" not in a:
        return None
    k, st, p = a["kernel_shape"], a["strides"], a["pads"]
    n = len(k)
    floor = [(x.shape[2 + i] + p[i] + p[n + i] - k[i]) // st[i] + 1 for i in range(n)]
    return "ceil_mode=1 windows; the quantized average pool has floor-mode windows" if list(y.shape[2:]) != floor else None


def _channels_first(op: Op, m: Lowered) -> str | None:
    return "channels_last=1; the quantized pools are NCHW" if op.attrs.get("channels_last", 0) else None


def _per_tensor(*scales: int) -> Rule:
    def rule(op: Op, m: Lowered) -> str | None:
        for pos in scales:
            name = op.inputs[pos] if pos < len(op.inputs) else ""
            c = m.constants.get(name)
            if c is not None and c.shape is not None and int(np.prod(c.shape)) > 1:
                return f"a per-channel scale {name!r}; the kernel takes one scale per tensor"
        return None
    return rule


def _every_output_named(op: Op, m: Lowered) -> str | None:
    """Split writes every output: an unnamed one has no table row to write to."""
    k = next((k for k, y in enumerate(op.outputs) if not y), None)
    return None if k is None else f"output {k} is unnamed; the kernel writes every output (name it, or drop it)"


def _read(m: Lowered) -> set[str]:
    """Tensors some op reads, and the graph outputs."""
    return {x for op in m.ops for x in op.inputs if x} | set(m.outputs)


def _first_output_only(what: str) -> Rule:
    """Kernels computing output 0 only: a later output that is read would be garbage."""
    def rule(op: Op, m: Lowered) -> str | None:
        named = [y for y in op.outputs[1:] if y]
        used = [y for y in named if y in _read(m)] if named else []
        return f"its output {used[0]!r} ({what}) is read, the kernel computes output 0 only" if used else None
    return rule


def _inference_mode(op: Op, m: Lowered) -> str | None:
    """The kernels compute inference: BatchNormalization from the running statistics, Dropout
    as the identity."""
    if op.op_type == "BatchNormalization" and op.attrs.get("training_mode", 0):
        return "training_mode=1 (batch statistics); the kernel normalizes with the running mean and variance"
    flag = op.inputs[2] if op.op_type == "Dropout" and len(op.inputs) > 2 else ""
    if flag:
        value = m.graph.consts.get(flag)
        arr = value.array() if value is not None else None
        if arr is None or bool(np.asarray(arr).reshape(-1)[0]):
            return f"training_mode {flag!r} is not a constant false; the kernel is the inference identity"
    return None


def _resize_exact(op: Op, m: Lowered) -> str | None:
    """Resize-18 attributes that change the result and that lowering does not carry."""
    a = m.graph.nodes[op.node].attrs
    if a.get("antialias", 0):
        return "antialias=1; the runtime resizes without an antialiasing filter"
    policy = a.get("keep_aspect_ratio_policy", b"stretch")
    policy = policy.decode() if isinstance(policy, bytes) else str(policy)
    return None if policy == "stretch" else f"keep_aspect_ratio_policy {policy!r}; the runtime stretches"


def _per_axis_only(op: Op, m: Lowered) -> str | None:
    """Blocked quantization (opset 21's block_size) has several scales per axis index."""
    b = op.attrs.get("block_size", 0)
    return f"block_size {b} (blocked quantization); the kernel takes per-tensor or per-axis scales" if b else None


def _shape(m: Lowered, name: str) -> tuple[int, ...] | None:
    """An activation's or a constant's shape (None: unknown)."""
    t = m.types.get(name)
    if t is not None:
        return tuple(t.shape)
    c = m.constants.get(name)
    return tuple(c.shape) if c is not None and c.shape is not None else None


def _matrices(op: Op, m: Lowered) -> str | None:
    """QLinearMatMul multiplies matrices (or stacks of them), never a 1-D operand."""
    for x in (op.inputs[0], op.inputs[3] if len(op.inputs) > 3 else ""):
        shape = _shape(m, x) if x else None
        if shape is not None and len(shape) < 2:
            return f"{x!r} has rank {len(shape)}; the kernel takes rank 2 or more"
    return None


ACC_LIMIT = (2 ** 31 - 1) // (255 * 255)  # products one int32 accumulator holds (the kernels' check)


def _accumulates(op: Op, m: Lowered) -> str | None:
    """Products per output: QLinearConv's C/group x kH x kW (from W), QLinearMatMul's K."""
    w = _shape(m, op.inputs[3]) if len(op.inputs) > 3 and op.inputs[3] else None
    if w is None or len(w) < 2:
        return None
    k = int(np.prod(w[1:])) if op.op_type == "QLinearConv" else int(w[-2])
    return f"{k} products per output; the int32 accumulator takes up to {ACC_LIMIT}" if k > ACC_LIMIT else None


_NAMED: dict[Check, Rule] = {
    Check.SPATIAL: _spatial, Check.RESIZE: _resize, Check.PAD_MODE: _pad_mode, Check.AVG_DILATIONS: _avg_dilations,
    Check.FLOOR_MODE: _floor_mode, Check.CHANNELS_FIRST: _channels_first,
    Check.EVERY_OUTPUT_NAMED: _every_output_named, Check.INFERENCE_MODE: _inference_mode,
    Check.RESIZE_EXACT: _resize_exact, Check.PER_AXIS_ONLY: _per_axis_only, Check.MATRICES: _matrices,
    Check.ACCUMULATES: _accumulates,
}


@functools.cache
def rule(check: CheckKind) -> Rule:
    """The test of one requirement of the op table."""
    if isinstance(check, Check):
        return _NAMED[check]
    if isinstance(check, optable.Dtypes):
        return _dtypes(check.allowed)
    if isinstance(check, optable.Needs):
        return _needs(*check.keys)
    if isinstance(check, optable.InputsAtMost):
        return _inputs_at_most(check.n)
    if isinstance(check, optable.Converts):
        return _quantize(check.src, check.dst)
    if isinstance(check, optable.PerTensor):
        return _per_tensor(*check.scales)
    return _first_output_only(check.what)


def gaps(model: Lowered) -> list[Gap]:
    """Every op of ``model`` the runtime cannot execute, in schedule order ([] = it all runs)."""
    out: list[Gap] = []
    for i, op in enumerate(model.ops):
        why = _why(op, model)
        if why is not None:
            out.append(Gap(i, op.name, op.op_type, why))
    return out


def _why(op: Op, m: Lowered) -> str | None:
    spec = optable.spec(op.op_type)
    if spec is None or spec.runtime is None:
        if op.domain == tflite_lower.DOMAIN and op.attrs.get("why"):  # a .tflite's op, parameters not lowered
            return f"arena runs TFLite's {op.op_type}, not this one: {op.attrs['why']}"
        if op.domain == tflite_lower.DOMAIN and op.op_type in tflite_lower.LOWERED:  # a .tflite's op, not int8
            kinds = sorted({m.types[x].dtype for x in (*op.inputs[:1], *op.outputs[:1]) if x in m.types})
            on = "int8 and float32" if op.op_type in tflite_lower.LOWERED_F32 else "int8"
            return f"the runtime runs TFLite's {op.op_type} on {on} tensors, this one is {'/'.join(kinds) or 'other'}"
        return "the runtime has no kernel for this op"
    for x in (*op.inputs, *op.outputs):
        t = m.types.get(x)
        if t is not None and t.dtype not in codegen.DTYPES:
            return f"tensor {x!r} is {t.dtype}, a type the runtime does not store"
        if t is not None and len(t.shape) > codegen.MAX_RANK:
            return f"tensor {x!r} has rank {len(t.shape)}; the runtime goes up to {codegen.MAX_RANK}"
    for check in spec.checks:
        why = rule(check)(op, m)
        if why is not None:
            return why
    return None
