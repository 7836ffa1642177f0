"""What the gate suggests when a board does not fit: only what could help (another region, io: int8,
planner optimal, a longer time limit, quantizing a float model: the command for it)."""

from __future__ import annotations

from typing import TYPE_CHECKING, AbstractSet, Callable, Mapping, Sequence

from arena_tool.core.dtypes import QUANTIZED
from arena_tool.builder.board_report import ModelUse

if TYPE_CHECKING:
    from arena_tool.plan.planfile import PlanBuffer, PlanFile, PlanStep
    from arena_tool.target.manifest_data import BoardTarget


def better_region(target: BoardTarget, need: int, current: str, room: Callable[[str], int]) -> str | None:
    """The smallest other region with room for ``need`` (ties: board order)."""
    fits = [(room(r.name), i, r.name) for i, r in enumerate(target.board.ram)
            if r.name != current and room(r.name) >= need]
    return min(fits)[2] if fits else None


def float_input_share(plan: PlanFile) -> tuple[str, float] | None:
    """(input, its share of the peak) when a float graph input that goes straight into a
    QuantizeLinear is at least half of the live bytes at the arena's peak: ``io: int8`` would take
    it out. None for a plan that already has integer I/O or caller-owned buffers, a float model, or
    one that ``io: int8`` would refuse (``int8_io_applies``)."""
    if (plan.options.io != "model" or plan.options.io_buffers != "arena" or not plan.integer_ops
            or not int8_io_applies(plan)):
        return None
    bufs = plan.in_arena
    group: dict[str, list[PlanBuffer]] = {}
    for b in bufs:
        group.setdefault(b.root, []).append(b)
    spans = {r: (max(m.size for m in g), min(m.first_op for m in g), max(m.last_op for m in g))
             for r, g in group.items()}
    horizon = max([len(plan.schedule)] + [e + 1 for _, _, e in spans.values()])
    live = [0] * horizon
    for size, a, e in spans.values():
        for i in range(a, e + 1):
            live[i] += size
    peak = max(live, default=0)
    at = live.index(peak) if peak else 0
    for b in bufs:
        if b.kind == "input" and b.dtype == "float32" and b.root in spans:
            size, a, e = spans[b.root]
            if a <= at <= e and 2 * size >= peak:
                return b.name, size / peak
    return None


def int8_io_applies(plan: PlanFile) -> bool:
    """What lowering.boundary asks of ``io: int8``, read from the plan: each float input is read by
    one QuantizeLinear alone and each float output made by a DequantizeLinear read by no op, at one
    scale and zero point; a hint must not propose a choice the model would refuse, or one that
    changes nothing (no float input or output)."""
    by_name = plan.by_name
    readers: dict[str, list[PlanStep]] = {}
    producer: dict[str, tuple[str, str]] = {}
    for step in plan.schedule:
        for x in dict.fromkeys(step.inputs):
            readers.setdefault(x, []).append(step)
        for y in step.outputs:
            producer[y] = (step.op_type, step.inputs[0] if step.inputs else "")

    def per_tensor(name: str) -> bool:
        b = by_name.get(name)
        return b is not None and b.quant is not None and len(b.quant.scale) == 1

    outputs = {b.name for b in plan.buffers if b.kind == "output"}
    if all(b.dtype in QUANTIZED for b in plan.buffers if b.kind in ("input", "output")):
        return False  # nothing to change (an int8 .tflite's own inputs and outputs)
    for b in plan.buffers:
        if b.dtype in QUANTIZED or b.kind not in ("input", "output"):
            continue
        if b.kind == "input":
            rs = readers.get(b.name, [])
            if [s.op_type for s in rs] != ["QuantizeLinear"] or b.name in outputs or not per_tensor(rs[0].outputs[0]):
                return False
        else:
            op_type, source = producer.get(b.name, ("", ""))
            if op_type != "DequantizeLinear" or readers.get(b.name) or not per_tensor(source):
                return False
    return True


def tries(target: BoardTarget, uses: Sequence[ModelUse], floats: AbstractSet[str], need: int, lb: int, *,
           region: str | None, limit: int | None = None,
           float_inputs: Mapping[str, tuple[str, float]] | None = None) -> str:
    """'region X, planner optimal for a, io: int8 for c, or quantizing b to int8: <command>': only
    what could help, never what the plan already does. floats: the names of the float models
    (``float_model``); float_inputs: model -> its float input that dominates the peak
    (``float_input_share``)."""
    out: list[str] = []
    if region:
        out.append(f"region {region}")
    dominated = [(u.name, *float_inputs[u.name]) for u in uses if float_inputs and u.name in float_inputs]
    if dominated:
        out.append("io: int8 for " + ", ".join(
            f"{n} (its float input {x!r} is {100 * share:.0f} % of the peak; the firmware then takes the "
            f"int8 tensor the model quantizes it to)" for n, x, share in dominated))
    specs = {m.name: m for m in target.models}
    reachable = limit is None or lb <= limit  # a better plan can only help down to the lower bound
    open_ = [u for u in uses if not u.proven]
    heuristic = [u.name for u in open_ if u.planner != "optimal"]
    if reachable and heuristic:
        out.append(f"planner optimal for {'+'.join(heuristic)}")
    stopped = [u for u in open_ if u.planner == "optimal" and u.status == "time_limit" and u.name in specs]
    if reachable and stopped:
        out.append("a time_limit above " + ", ".join(f"{specs[u.name].time_limit:g} s for {u.name}" for u in stopped))
    by_arena = [u for u in sorted(uses, key=lambda u: (-u.arena_size, u.name))
                if u.name in floats and u.name in specs]
    if by_arena:
        out.append(quantize_hint(target, by_arena, "int8 activations take a quarter of float32's"))
    if len(out) > 1:
        return ", ".join(out[:-1]) + ", or " + out[-1]
    return out[0] if out else ""


def quantize_hint(target: BoardTarget, floats: Sequence[ModelUse], why: str) -> str:
    """How to quantize the float models (the command for the first): activation_dtype int8 is a
    what-if that re-sizes the plan, so it is not the advice."""
    specs = {m.name: m for m in target.models}
    first = floats[0]
    shapes = dict(specs[first.name].options.input_shapes) if first.name in specs else {}
    names = first.name + (f" (and likewise {'+'.join(u.name for u in floats[1:])})" if len(floats) > 1 else "")
    return (f"quantizing {names} to int8 ({why}): {quantize_command(first.model, shapes)}; "
            "activation_dtype int8 alone only re-sizes the plan, the model still runs float32")


def quantize_command(model: str, input_shapes: Mapping[str, Sequence[int]] | None = None) -> str:
    """A shell command that writes ``<model>.int8.onnx`` with onnxruntime's quantize_static (QDQ).

    Calibration reads 8 seeded random inputs: replace them with real samples for accuracy.
    """
    base = model[:-5] if model.endswith(".onnx") else model
    shapes = {str(k): [int(d) for d in v] for k, v in sorted((input_shapes or {}).items())}
    return ("python3 -c \"import numpy as np, onnx; from onnxruntime.quantization import CalibrationDataReader as C, "
            f"QuantFormat, quantize_static; m, s = '{model}', {shapes!r}; g = onnx.load(m).graph; "
            "w = {i.name for i in g.initializer}; r = iter([{x.name: np.random.default_rng(k).random(s.get(x.name) "
            "or [d.dim_value or 1 for d in x.type.tensor_type.shape.dim], 'float32') for x in g.input "
            "if x.name not in w} for k in range(8)]); "
            f"quantize_static(m, '{base}.int8.onnx', type('R', (C,), {{'get_next': lambda self: next(r, None)}})(), "
            "quant_format=QuantFormat.QDQ)\" (calibrates on random inputs: use real samples)")
