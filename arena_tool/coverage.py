"""What the C runtime (arena_tool/runtime) can execute, checked before anything is compiled.

A model whose tables would link but fail on the target is refused at build time instead,
with the op index, node name, op type and the reason. ``arena-tool plan`` plans any model;
only a firmware build that compiles the runtime asks this module (``runtime: none`` skips it).

Each rule mirrors a kernel's own checks in arena_tool/runtime; a rule that is looser than its
kernel shows up as a run-time failure in the runtime tests, which run every rule's ops.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

from arena_tool import codegen
from arena_tool.lowering import Lowered, Op

FLOAT = frozenset({"float32"})
INT8 = frozenset({"int8", "uint8"})
ANY = frozenset({"float32", "int8", "uint8", "int32", "int64"})


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


RULES: dict[str, tuple[Rule, ...]] = {
    "Conv": (_dtypes(FLOAT), _spatial),
    "MaxPool": (_dtypes(FLOAT | INT8), _spatial),
    "AveragePool": (_dtypes(FLOAT), _spatial),
    "QLinearConv": (_dtypes(INT8), _spatial),
    "QLinearAveragePool": (_dtypes(INT8), _spatial),
    "Pad": (_needs("pads"),),
    "Slice": (_needs("starts"),),
    "Resize": (_needs("scales"),),
    "Upsample": (_needs("scales"),),
    "ReduceMean": (_dtypes(FLOAT), _needs("axes")),
}


def gaps(model: Lowered) -> list[Gap]:
    """Every op of ``model`` the runtime cannot execute, in schedule order ([] = it all runs)."""
    out: list[Gap] = []
    for i, op in enumerate(model.ops):
        why = _why(op, model)
        if why is not None:
            out.append(Gap(i, op.name, op.op_type, why))
    return out


def _why(op: Op, m: Lowered) -> str | None:
    if op.op_type not in codegen.OPS:
        return "the runtime has no kernel for this op"
    for x in (*op.inputs, *op.outputs):
        t = m.types.get(x)
        if t is not None and t.dtype not in codegen.DTYPES:
            return f"tensor {x!r} is {t.dtype}, a type the runtime does not store"
        if t is not None and len(t.shape) > codegen.MAX_RANK:
            return f"tensor {x!r} has rank {len(t.shape)}; the runtime goes up to {codegen.MAX_RANK}"
    for rule in RULES.get(op.op_type, ()):
        why = rule(op, m)
        if why is not None:
            return why
    return None
