"""Multiply-accumulates per op of a lowered model: the work a kernel must do, so that an
instruction count reads as instructions per MAC (``arena-tool run --profile``, ``explain``, the
build report, bench/speed.py).

The rule of each op type is its ``OpSpec.macs`` in the op table (arena_tool/model/optable.py), from the
op's static shapes and normalized attributes:

* Conv, ConvInteger, QLinearConv (depthwise and grouped too): output elements x Cin/group x
  the kernel window;
* Gemm, QGemm, MatMul, QLinearMatMul: output elements x the inner dimension K;
* window pools (MaxPool, AveragePool, QLinearAveragePool, LpPool): output elements x the
  window; global pools: input elements (one accumulate per element read), as ``stedgeai
  analyze`` counts pooling in its MACC;
* every other op (element-wise, layout, softmax, quantize): 0, its cost is per element.

Conv and Gemm counts equal TFLM's conv and fully-connected counts on the same network
(``../shared/tools/tflm_speed/macs.py``); the pools add a few thousand to the MLPerf Tiny models.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Protocol, Sequence

from arena_tool.model import optable

if TYPE_CHECKING:
    from arena_tool.model.lowering import Lowered, Op
    from arena_tool.model.onnx_graph import Shape


class Step(Protocol):
    """An op of a plan's schedule (planfile.PlanStep), as far as MACs need it: the model stage
    does not import the plan stage."""

    @property
    def node(self) -> int: ...


def op_macs(op: Op, shape: Callable[[str], Shape | None]) -> int:
    """MACs of one lowered op (0 for an op without a rule, or whose shapes are not static)."""
    spec = optable.spec(op.op_type)
    if spec is None or spec.macs is None:
        return 0
    n = spec.macs(op.attrs, [shape(x) if x else None for x in op.inputs], [shape(y) if y else None for y in op.outputs])
    return max(0, n) if n is not None else 0


def model_macs(lowered: Lowered) -> dict[int, int]:
    """MACs of each op of ``lowered``, keyed by its graph node (``Op.node``, ``PlanStep.node``)."""
    g = lowered.graph

    def shape(name: str) -> Shape | None:
        if name in lowered.types:
            return lowered.types[name].shape
        return g.constant_shapes.get(name)

    return {op.node: op_macs(op, shape) for op in lowered.ops}


def plan_macs(schedule: Sequence[Step], lowered: Lowered) -> tuple[int, ...]:
    """MACs per op of a plan's ``schedule``, in its order (the order the C tables run the ops in)."""
    per = model_macs(lowered)
    return tuple(per.get(step.node, 0) for step in schedule)
