"""Tiny ONNX graphs for tests, built with onnx.helper (no files shipped).

Every builder returns a ModelProto; ``save(model, tmp_path / "m.onnx")`` writes it
and returns the path as a str. Shapes are small so tests stay fast.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

FLOAT = TensorProto.FLOAT
INT8 = TensorProto.INT8
INT64 = TensorProto.INT64

LIGHT_DIR = Path(os.path.dirname(onnx.__file__)) / "backend" / "test" / "data" / "light"


def light_models() -> list[Path]:
    """The real models that ship inside the onnx package, by name."""
    return sorted(LIGHT_DIR.glob("*.onnx"))


def vi(name: str, shape: Sequence[int | str] | None, elem: int = FLOAT) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem, list(shape) if shape is not None else None)


def const(name: str, array: np.ndarray | Sequence[float]) -> TensorProto:
    return numpy_helper.from_array(np.asarray(array), name)


def weight(name: str, shape: Sequence[int], seed: int = 0) -> TensorProto:
    return const(name, np.random.default_rng(seed).standard_normal(shape).astype(np.float32))


def model(nodes: Sequence[onnx.NodeProto], inputs: Sequence[onnx.ValueInfoProto],
          outputs: Sequence[onnx.ValueInfoProto], initializers: Sequence[TensorProto] = (),
          opset: int = 17, value_info: Sequence[onnx.ValueInfoProto] = ()) -> onnx.ModelProto:
    g = helper.make_graph(list(nodes), "test", list(inputs), list(outputs), list(initializers),
                          value_info=list(value_info))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def save(m: onnx.ModelProto, path: str | Path, **kw: object) -> str:
    onnx.save(m, str(path), **kw)  # type: ignore[arg-type]
    return str(path)


def node(op: str, inputs: Sequence[str], outputs: Sequence[str], name: str = "", **attrs: object) -> onnx.NodeProto:
    return helper.make_node(op, list(inputs), list(outputs), name=name or outputs[0], **attrs)


def chain() -> onnx.ModelProto:
    """The design notes' chain T0 -> T1 -> T2 -> T3 of 4, 6, 6 and 2 KB (float32 MatMuls).

    T0 [64,16] x W0 [16,24] -> T1 [64,24] x W1 [24,24] -> T2 [64,24] x W2 [24,8] -> T3 [64,8].
    """
    return model(
        [node("MatMul", ["T0", "W0"], ["T1"], "mm0"),
         node("MatMul", ["T1", "W1"], ["T2"], "mm1"),
         node("MatMul", ["T2", "W2"], ["T3"], "mm2")],
        [vi("T0", [64, 16])], [vi("T3", [64, 8])],
        [weight("W0", [16, 24]), weight("W1", [24, 24], 1), weight("W2", [24, 8], 2)],
    )


def relu_chain() -> onnx.ModelProto:
    """T0 4K -> mm0 -> T1 6K -> Relu (in place: T2 aliases T1) -> T2 6K -> mm1 -> T3 2K."""
    return model(
        [node("MatMul", ["T0", "W0"], ["T1"], "mm0"),
         node("Relu", ["T1"], ["T2"], "relu"),
         node("MatMul", ["T2", "W1"], ["T3"], "mm1")],
        [vi("T0", [64, 16])], [vi("T3", [64, 8])],
        [weight("W0", [16, 24]), weight("W1", [24, 8], 1)],
    )


def conv(cin: int = 4, cout: int = 8, hw: int = 8, k: int = 3, stride: int = 1, pad: int = 1,
         group: int = 1) -> onnx.ModelProto:
    """x [1,cin,hw,hw] -> Conv(k x k, stride, pad, group) -> y."""
    out = (hw + 2 * pad - k) // stride + 1
    return model(
        [node("Conv", ["x", "w"], ["y"], "conv", kernel_shape=[k, k], strides=[stride, stride],
              pads=[pad] * 4, group=group)],
        [vi("x", [1, cin, hw, hw])], [vi("y", [1, cout, out, out])],
        [weight("w", [cout, cin // group, k, k])],
    )


def shape_chain() -> onnx.ModelProto:
    """x -> Relu -> r; Shape(r) -> Gather(0) -> Unsqueeze -> Concat([-1]) -> Reshape(r) -> y [1, 32]."""
    return model(
        [node("Relu", ["x"], ["r"], "relu"),
         node("Shape", ["r"], ["s"], "shape"),
         node("Gather", ["s", "zero"], ["n"], "gather", axis=0),
         node("Unsqueeze", ["n", "axes"], ["n1"], "unsqueeze"),
         node("Concat", ["n1", "minus_one"], ["target"], "concat", axis=0),
         node("Reshape", ["r", "target"], ["y"], "reshape")],
        [vi("x", [1, 4, 8])], [vi("y", ["a", "b"])],
        [const("zero", np.array(0, np.int64)), const("axes", np.array([0], np.int64)),
         const("minus_one", np.array([-1], np.int64))],
    )


def loop() -> onnx.ModelProto:
    """x -> Loop(3 times: v = v + 1) -> y; a control-flow op arena must reject."""
    body = helper.make_graph(
        [node("Identity", ["cond_in"], ["cond_out"], "c"), node("Add", ["v_in", "one"], ["v_out"], "a")],
        "body", [vi("i", [], INT64), vi("cond_in", [], TensorProto.BOOL), vi("v_in", [2])],
        [vi("cond_out", [], TensorProto.BOOL), vi("v_out", [2])],
        [const("one", np.ones(2, np.float32))],
    )
    return model(
        [node("Loop", ["trip", "cond", "x"], ["y"], "loop", body=body)],
        [vi("x", [2])], [vi("y", [2])],
        [const("trip", np.array(3, np.int64)), const("cond", np.array(True))],
    )


def qparams(name: str, scale: float, zp: int = 0) -> list:
    """Per-tensor scale and int8 zero point initializers NAME_s, NAME_z."""
    return [const(f"{name}_s", np.array(scale, np.float32)), const(f"{name}_z", np.array(zp, np.int8))]


def qdq_conv(relu: bool = True, bias_scale: float | None = None) -> onnx.ModelProto:
    """x -Q-> xq -DQ-> xf -Conv(DQ(w), DQ(b))-> y [-Relu-> r] -Q-> yq -DQ-> out (per-channel weights)."""
    w = np.arange(8 * 4 * 3 * 3, dtype=np.int8).reshape(8, 4, 3, 3) % 7
    ws = np.linspace(0.01, 0.02, 8).astype(np.float32)
    xs = 0.05
    bs = xs * ws if bias_scale is None else np.full(8, bias_scale, np.float32)
    nodes = [node("QuantizeLinear", ["x", "x_s", "x_z"], ["xq"], "qx"),
             node("DequantizeLinear", ["xq", "x_s", "x_z"], ["xf"], "dqx"),
             node("DequantizeLinear", ["w", "w_s", "w_z"], ["wf"], "dqw", axis=0),
             node("DequantizeLinear", ["b", "b_s", "b_z"], ["bf"], "dqb", axis=0),
             node("Conv", ["xf", "wf", "bf"], ["y"], "conv", kernel_shape=[3, 3], auto_pad="SAME_UPPER")]
    last = "y"
    if relu:
        nodes.append(node("Relu", ["y"], ["r"], "relu"))
        last = "r"
    nodes += [node("QuantizeLinear", [last, "y_s", "y_z"], ["yq"], "qy"),
              node("DequantizeLinear", ["yq", "y_s", "y_z"], ["out"], "dqy")]
    inits = [*qparams("x", xs, 3), *qparams("y", 0.1, -5),
             const("w", w), const("w_s", ws), const("w_z", np.zeros(8, np.int8)),
             const("b", np.arange(8, dtype=np.int32)), const("b_s", bs.astype(np.float32)),
             const("b_z", np.zeros(8, np.int32))]
    return model(nodes, [vi("x", [1, 4, 8, 8])], [vi("out", [1, 8, 8, 8])], inits, opset=13)


def qdq_pool(tail: str | None = None) -> onnx.ModelProto:
    """x (float, 4,096 B) -> QuantizeLinear -> int8 MaxPool -> DequantizeLinear [-> tail] -> y: the
    float input is 80 % of the peak (x beside its int8 copy at op 0): io: int8 shrinks it, unless
    a float ``tail`` op makes the output (then io: int8 is refused)."""
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"]),
             helper.make_node("MaxPool", ["xq"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("DequantizeLinear", ["p", "s", "z"], ["pd" if tail else "y"])]
    nodes += [helper.make_node(tail, ["pd"], ["y"])] if tail else []
    g = helper.make_graph(nodes, "pool", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 16, 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])],
                          [numpy_helper.from_array(np.array(0.1, np.float32), "s"),
                           numpy_helper.from_array(np.array(0, np.int8), "z")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def mobile() -> onnx.ModelProto:
    """A small depthwise network whose peak is its first, wide tensor: conv 3->16 at 32x32 ->
    depthwise s2 -> conv 16->8 -> pool -> Gemm (patches tile its first stage)."""
    rng = np.random.default_rng(3)
    inits = []
    for name, shape in (("w0", (16, 3, 3, 3)), ("w1", (16, 1, 3, 3)), ("w2", (8, 16, 1, 1)), ("fc", (10, 8)),
                        ("fb", (10,))):
        inits.append(const(name, (rng.standard_normal(shape) * 0.3).astype(np.float32)))
    nodes = [node("Conv", ["x", "w0"], ["a"], "c0", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             node("Relu", ["a"], ["ar"], "r0"),
             node("Conv", ["ar", "w1"], ["b"], "dw", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], group=16),
             node("Conv", ["b", "w2"], ["c"], "pw", kernel_shape=[1, 1]),
             node("GlobalAveragePool", ["c"], ["g"], "gap"),
             node("Flatten", ["g"], ["fl"], "flat"),
             node("Gemm", ["fl", "fc", "fb"], ["y"], "fc", transB=1)]
    return model(nodes, [vi("x", [1, 3, 32, 32])], [vi("y", [1, 10])], inits, opset=13)
