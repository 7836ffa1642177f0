"""The flash a model's generated tables take besides its weights, before anything is compiled.

The gate needs the tables' bytes before the link (a patched model's unrolled tables once cost
more flash than its weights); codegen.model_sources writes them, and this module adds up the
same rows from the same inputs with the tables' layout on a 32-bit target (arena_model.h on
arm-none-eabi: a tensor row 44 B, an op row 24 B, its attributes 104 B once per distinct set (ops
with equal attributes share them), the model 72 B, a tile loop 44 B, a region 12 B). Each array
and string is counted rounded up to 4 bytes, as GCC places them (strings in .rodata.str1.4,
merged when equal). The names are a release build's: the model's, its graph inputs' and
outputs' (io_names) and the regions'; every tensor's and op's name take flash only in a build
that defines ARENA_NAMES (arena_model.h), which this count does not include.
tests/emit/test_tileloop.py compares the sum with the compiled object (run.runreport.table_bytes:
its allocated sections less its weight arrays).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from arena_tool.emit import codegen, tileloop

if TYPE_CHECKING:
    from arena_tool.model.lowering import Lowered
    from arena_tool.plan.planfile import PlanFile

TENSOR_ROW, OP_ROW, ATTRS_ROW, MODEL_ROW, TILES_ROW, REGION_ROW = 44, 24, 104, 72, 48, 12


def _up4(n: int) -> int:
    return -(-n // 4) * 4


def table_bytes(plan: PlanFile, model: Lowered, symbol: str) -> int:
    """Bytes of ``symbol``'s tables in flash, its constants' arrays not counted (they are the
    plan's ``weights_bytes``)."""
    arena_names, const_names = codegen.table_names(plan)
    loops = tileloop.loops(plan)
    io_names = [*model.inputs, *model.outputs]  # the names a release build keeps, and the model's
    strings = {symbol, *io_names}
    n_tensors = len(arena_names) + len(const_names) - len(codegen.stored(model, const_names).shared)
    total = TENSOR_ROW * max(1, n_tensors)
    by_node = {op.node: op for op in model.ops}
    untiled = {op.name: op for op in (model.untiled or model).ops}

    distinct: set[str] = set()  # the attrs objects (codegen._Rows: one per initializer; group is in the row)

    def op_row(op_type: str, name: str, n_in: int, n_out: int, attrs: dict[str, object]) -> int:
        ints, floats = attrs.get("ints") or (), attrs.get("floats") or ()
        key = None if ints or floats else codegen.attrs_init({k: v for k, v in attrs.items() if k not in ("ints", "floats", "group")})
        new = key is None or key not in distinct  # an op with arrays of its own: attributes of its own
        if key is not None:
            distinct.add(key)
        return OP_ROW + ATTRS_ROW * new + 4 * (max(1, n_in) + max(1, n_out) + len(ints) + len(floats))  # type: ignore[arg-type]

    n_ops = 0
    at = 0
    spans = [(lp.first, lp.end, lp) for lp in loops] + [(len(plan.schedule), len(plan.schedule), None)]
    for first, end, lp in spans:
        for step in plan.schedule[at:first]:
            total += op_row(step.op_type, step.name or step.outputs[0], len(step.inputs), len(step.outputs),
                            codegen.op_attrs(by_node[step.node], model))
            n_ops += 1
        if lp is not None:
            total += TILES_ROW + _up4(2 * 3 * len(lp.slots)) + _up4(lp.tiles)
            rows = {tuple(plan.by_name[b].offset if b is not None else 0 for b in (sl.buffers[t] for sl in lp.slots))
                    for t in range(lp.tiles)}
            wide = max((v for row in rows for v in row), default=0) > 0xFFFF
            total += _up4((4 if wide else 2) * len(rows) * len(lp.slots))
            for m in lp.members:
                total += op_row(m.step.op_type, m.name, len(m.inputs), 1, codegen.op_attrs(untiled[m.name],
                                                                                       model.untiled or model))
            n_ops += len(lp.members)
        at = end
    total += MODEL_ROW + 4 * (max(1, len(model.inputs)) + max(1, len(model.outputs)) + max(1, len(io_names)))
    regions = [r.name for r in plan.regions or ()]
    callers = codegen.caller_buffers(plan)
    if regions or callers:
        strings.update(regions or ["arena"])
        if callers:
            strings.add(codegen.CALLER)
        total += REGION_ROW * (max(1, len(regions)) + len(callers)) + _up4(max(1, n_tensors))
    return total + sum(_up4(len(s.encode()) + 1) for s in strings)
