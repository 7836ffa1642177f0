"""The C runtime's layout kernels (Transpose, Pad, Slice, Split, Resize, ReduceMean), its newer
element-wise kernels (HardSigmoid, HardSwish, Tanh, Exp, Neg, Abs, Sqrt, Erf, Elu, Softsign, Max, Min,
PRelu) and its integer MaxPool / GlobalMaxPool / Clip compute what onnxruntime computes.

Small models built here with onnx.helper cover every mode and attribute form (opset 13, and the
older opsets where the attributes differ). They are planned, generated and run in ONE host
firmware (ASan + UBSan) per module; each test then checks its models' outputs against
onnxruntime on the same inputs (verify.input_pattern): data movement exactly, float32 within
1e-5 relative (1e-4 for transcendental ops), integers exactly. Whole float models (the MLPerf
Tiny ones when ../shared has them, tests/zoo.py's CNN families, the onnx package's squeezenet
and shufflenet with real weights) run in a second firmware and match within 1e-4 of the
output's scale. Ops the kernels refuse fail at run time with ARENA_ERR_UNSUPPORTED (10).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import fwbuild
import quantized
import zoo
from arena_tool.emit import codegen
from arena_tool.run import verify
from arena_tool.core.problem import ModelOptions

F, I8, U8, I32, I64 = TensorProto.FLOAT, TensorProto.INT8, TensorProto.UINT8, TensorProto.INT32, TensorProto.INT64
UNSUPPORTED = 10

# name -> (build, how outputs compare): "exact", "float" (1e-5), "trans" (1e-4 elementwise), or an
# expected run-time status code (the kernel refuses the op).
MODELS: dict[str, tuple[Callable[[], onnx.ModelProto], object]] = {}


def model(name: str, check: object = "exact"):  # type: ignore[no-untyped-def]
    def register(build: Callable[[], onnx.ModelProto]) -> Callable[[], onnx.ModelProto]:
        MODELS[name] = (build, check)
        return build
    return register


def graph(nodes: list, inputs: list, outputs: list, inits: tuple = (), opset: int = 13) -> onnx.ModelProto:
    """inputs: (name, elem type, shape); outputs: names (types inferred) or (name, elem type, shape)."""
    ins = [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs]
    outs = [helper.make_tensor_value_info(*o) if isinstance(o, tuple) else onnx.ValueInfoProto(name=o) for o in outputs]
    g = helper.make_graph(nodes, "g", ins, outs, [numpy_helper.from_array(np.asarray(v), k) for k, v in inits])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return onnx.shape_inference.infer_shapes(m, strict_mode=True)


def node(op: str, ins: list[str], outs: list[str], **attrs: object) -> onnx.NodeProto:
    return helper.make_node(op, ins, outs, name=outs[0], **attrs)


def ints(*v: int) -> np.ndarray:
    return np.array(v, np.int64)


def floats(*v: float) -> np.ndarray:
    return np.array(v, np.float32)


# --- Pad ----------------------------------------------------------------------------------

X4 = [("x", F, [1, 3, 4, 5])]


@model("pad_modes")
def _pad_modes() -> onnx.ModelProto:
    """constant (a value), reflect, edge; negative pads crop (also before reflect/edge)."""
    cases = {"constant": ([0, 1, 2, 1, 0, 0, 1, 3], "constant"), "reflect": ([0, 0, 2, 3, 0, 0, 3, 4], "reflect"),
             "edge": ([0, 1, 3, 2, 0, 2, 1, 6], "edge"), "neg_constant": ([0, -1, 1, -2, 0, 1, -1, 2], "constant"),
             "neg_reflect": ([0, 0, -1, 2, 0, 0, 1, -2], "reflect"), "neg_edge": ([0, 0, -2, 3, 0, 0, 2, -4], "edge")}
    nodes, inits = [], [("value", floats(0.5))]
    for name, (pads, mode) in cases.items():
        inits.append((f"p_{name}", ints(*pads)))
        extra = ["value"] if mode == "constant" else []
        nodes.append(node("Pad", ["x", f"p_{name}", *extra], [name], mode=mode))
    return graph(nodes, X4, list(cases), tuple(inits))


@model("pad_int8")
def _pad_int8() -> onnx.ModelProto:
    """int8 and uint8 tensors: constant (an integer value), reflect, edge, negative pads."""
    nodes = [node("Pad", ["q", "p1", "v8"], ["c8"]), node("Pad", ["q", "p2"], ["r8"], mode="reflect"),
             node("Pad", ["u", "p1", "vu"], ["cu"]), node("Pad", ["u", "p2"], ["eu"], mode="edge")]
    inits = (("p1", ints(0, 1, -1, 2, 1, 0, 2, -1)), ("p2", ints(0, 0, 2, 1, 0, 0, -1, 2)),
             ("v8", np.array(-7, np.int8)), ("vu", np.array(200, np.uint8)))
    return graph(nodes, [("q", I8, [2, 3, 4, 5]), ("u", U8, [2, 3, 4, 5])],
                 ["c8", "r8", "cu", "eu"], inits)


@model("pad_opset2")
def _pad_opset2() -> onnx.ModelProto:
    """Pad-2: pads, mode and value are attributes."""
    nodes = [node("Pad", ["x"], ["c"], pads=[0, 0, 1, 2, 0, 1, 0, 1], value=-2.5),
             node("Pad", ["x"], ["r"], pads=[0, 0, 1, 2, 0, 0, 2, 1], mode="reflect")]
    return graph(nodes, X4, ["c", "r"], opset=10)


@model("pad_opset18_axes")
def _pad_opset18() -> onnx.ModelProto:
    """Pad-18: pads over the listed axes only (negative axes)."""
    nodes = [node("Pad", ["x", "p", "v", "ax"], ["y"]), node("Pad", ["x", "p", "", "ax"], ["e"], mode="edge")]
    inits = (("p", ints(2, -1, 1, 3)), ("v", floats(1.25)), ("ax", ints(-1, 1)))
    return graph(nodes, X4, ["y", "e"], inits, opset=18)


# --- Slice --------------------------------------------------------------------------------

@model("slice_float")
def _slice_float() -> onnx.ModelProto:
    """Negative starts/ends (clamped), negative steps and axes, axes subsets, an empty slice."""
    cases = {"s_sub": ([1, -5], [100, -1], [2, 3], [1, 1]), "s_rev": ([-1], [-1000], [3], [-2]),
             "s_negax": ([5, 2], [0, -10], [-2, -1], [-3, -1]), "s_step": ([0, 1], [2, 3], [0, 1], [1, 2]),
             "s_all": ([-100, 2, 10, -1], [100, -100, -10, 0], [0, 1, 2, 3], [1, -1, -2, -3])}
    nodes, inits = [], []
    for name, (st, en, ax, sp) in cases.items():
        inits += [(f"{name}_s", ints(*st)), (f"{name}_e", ints(*en)), (f"{name}_a", ints(*ax)),
                  (f"{name}_p", ints(*sp))]
        nodes.append(node("Slice", ["x", f"{name}_s", f"{name}_e", f"{name}_a", f"{name}_p"], [name]))
    nodes.append(node("Slice", ["x", "s_s", "s_e"], ["s_noaxes"]))  # axes and steps absent
    inits += [("s_s", ints(1, 0, 1)), ("s_e", ints(2, -1, 3))]
    return graph(nodes, [("x", F, [2, 3, 6, 7])], [*cases, "s_noaxes"], tuple(inits))


@model("slice_opset9")
def _slice_opset9() -> onnx.ModelProto:
    """Slice-1: starts/ends/axes as attributes, no steps."""
    nodes = [node("Slice", ["x"], ["y"], starts=[-3, 1], ends=[1000, -1], axes=[3, 1]),
             node("Slice", ["x"], ["z"], starts=[1, 2, 0], ends=[2, 5, 2])]
    return graph(nodes, [("x", F, [2, 3, 6, 7])], [("y", F, [2, 1, 6, 3]), "z"], opset=9)  # y: not inferred


@model("slice_ints")
def _slice_ints() -> onnx.ModelProto:
    """int8 and int64 tensors (the kernel moves bytes by element size)."""
    nodes = [node("Slice", ["q", "st", "en", "ax", "sp"], ["q2"]), node("Slice", ["l", "st", "en", "ax", "sp"], ["l2"])]
    inits = (("st", ints(-1, 1)), ("en", ints(-100, 100)), ("ax", ints(0, 1)), ("sp", ints(-2, 2)))
    return graph(nodes, [("q", I8, [5, 7]), ("l", I64, [5, 7])], ["q2", "l2"], inits)


# --- Split --------------------------------------------------------------------------------

@model("split")
def _split() -> onnx.ModelProto:
    """Uneven sizes from the split input, equal halves without it, along inner and outer axes."""
    nodes = [node("Split", ["x", "sizes"], ["a", "b", "c"], axis=1), node("Split", ["x"], ["h0", "h1"], axis=0),
             node("Split", ["x", "sz2"], ["w0", "w1", "w2", "w3"], axis=-1),
             node("Split", ["q", "sz3"], ["q0", "q1"], axis=2)]
    inits = (("sizes", ints(2, 4, 1)), ("sz2", ints(1, 1, 0, 3)), ("sz3", ints(3, 1)))
    return graph(nodes, [("x", F, [2, 7, 3, 5]), ("q", I8, [2, 3, 4])],
                 ["a", "b", "c", "h0", "h1", "w0", "w1", "w3", "q0", "q1"], inits)


@model("split_opset11")
def _split_opset11() -> onnx.ModelProto:
    """Split-11: sizes as an attribute."""
    return graph([node("Split", ["x"], ["a", "b"], axis=-1, split=[1, 4])], [("x", F, [2, 3, 5])], ["a", "b"], opset=11)


@model("split_opset18")
def _split_opset18() -> onnx.ModelProto:
    """Split-18: num_outputs, the last part smaller."""
    return graph([node("Split", ["x"], ["a", "b", "c"], axis=1, num_outputs=3)], [("x", F, [1, 7, 2])],
                 ["a", "b", "c"], opset=18)


# --- Resize -------------------------------------------------------------------------------

XR = [("x", F, [1, 2, 4, 5])]


def resize_model(cases: dict[str, tuple[dict, str, tuple]], x: list = XR, opset: int = 13) -> onnx.ModelProto:
    """cases: output -> (attributes, "scales" | "sizes", values)."""
    nodes, inits = [], [("roi", np.zeros(0, np.float32))]
    roi = "" if opset >= 13 else "roi"  # before opset 13, an empty roi (and empty scales beside sizes)
    for name, (attrs, kind, vals) in cases.items():
        inits.append((f"{name}_{kind}", floats(*vals) if kind == "scales" else ints(*vals)))
        ins = ["x", roi, f"{name}_scales"] if kind == "scales" else ["x", roi, roi, f"{name}_sizes"]
        nodes.append(node("Resize", ins, [name], **attrs))
    return graph(nodes, x, list(cases), tuple(inits), opset=opset)


def nn(ct: str, mode: str) -> dict:
    return {"mode": "nearest", "coordinate_transformation_mode": ct, "nearest_mode": mode}


def lin(ct: str) -> dict:
    return {"mode": "linear", "coordinate_transformation_mode": ct}


NEAREST = {
    "asym_floor": (nn("asymmetric", "floor"), "scales", (1, 1, 2, 3)),
    "asym_floor_down": (nn("asymmetric", "floor"), "scales", (1, 1, 0.5, 0.6)),
    "half_prefer_floor": (nn("half_pixel", "round_prefer_floor"), "scales", (1, 1, 2.5, 1.5)),
    "half_prefer_floor_down": (nn("half_pixel", "round_prefer_floor"), "sizes", (1, 2, 2, 3)),
    "align_prefer_ceil": (nn("align_corners", "round_prefer_ceil"), "sizes", (1, 2, 7, 3)),
    "tf_half_nn": (nn("tf_half_pixel_for_nn", "round_prefer_ceil"), "scales", (1, 1, 1.5, 2.5)),
    "tf_half_nn_floor": (nn("tf_half_pixel_for_nn", "floor"), "sizes", (1, 2, 3, 8)),
    "pytorch_ceil": (nn("pytorch_half_pixel", "ceil"), "sizes", (1, 2, 1, 8)),
    "channels": (nn("half_pixel", "round_prefer_floor"), "scales", (1, 2, 1, 1)),
}
LINEAR = {
    "l_half": (lin("half_pixel"), "scales", (1, 1, 2, 2.5)),
    "l_half_down": (lin("half_pixel"), "scales", (1, 1, 0.5, 0.6)),
    "l_align": (lin("align_corners"), "sizes", (1, 2, 7, 9)),
    "l_asym": (lin("asymmetric"), "scales", (1, 1, 0.75, 1.5)),
    "l_pytorch": (lin("pytorch_half_pixel"), "sizes", (1, 2, 1, 3)),
    "l_pytorch_up": (lin("pytorch_half_pixel"), "scales", (1, 1, 3, 2)),
    "l_one_dim": (lin("half_pixel"), "sizes", (1, 2, 4, 9)),
}


@model("resize_nearest")
def _resize_nearest() -> onnx.ModelProto:
    return resize_model(NEAREST)


@model("resize_linear", "float")
def _resize_linear() -> onnx.ModelProto:
    return resize_model(LINEAR)


@model("resize_linear_nd", "float")
def _resize_linear_nd() -> onnx.ModelProto:
    """Linear over 2-D, 3-D, NHWC (outer and inner scale 1) and 5-D inputs."""
    nodes, inits = [], []
    for name, x, scales in (("r2", "x2", (1.5, 0.8)), ("r3", "x3", (2, 1.5, 0.5)), ("nhwc", "x4", (1, 2, 1.5, 1)),
                            ("r5", "x5", (1, 1, 2, 1.5, 2))):
        inits.append((f"{name}_s", floats(*scales)))
        nodes.append(node("Resize", [x, "", f"{name}_s"], [name], mode="linear"))
    ins = [("x2", F, [6, 5]), ("x3", F, [2, 3, 4]), ("x4", F, [1, 4, 5, 2]), ("x5", F, [1, 2, 2, 3, 4])]
    return graph(nodes, ins, ["r2", "r3", "nhwc", "r5"], tuple(inits))


@model("resize_symmetric", "float")
def _resize_symmetric() -> onnx.ModelProto:
    """Resize-19's half_pixel_symmetric, nearest and linear."""
    return resize_model({"n_sym": (nn("half_pixel_symmetric", "round_prefer_floor"), "scales", (1, 1, 1.7, 2.2)),
                         "l_sym": (lin("half_pixel_symmetric"), "sizes", (1, 2, 7, 3))}, opset=19)


@model("resize_ints")
def _resize_ints() -> onnx.ModelProto:
    """Nearest over int8 / uint8 / int32 tensors."""
    nodes = [node("Resize", ["q", "", "s4"], ["n8"], **nn("half_pixel", "round_prefer_ceil")),
             node("Resize", ["u", "", "s3"], ["nu"], mode="nearest"),
             node("Resize", ["l", "", "s3"], ["nl"], mode="nearest")]
    return graph(nodes, [("q", I8, [1, 2, 3, 4]), ("u", U8, [2, 3, 4]), ("l", I32, [2, 3, 4])], ["n8", "nu", "nl"],
                 (("s4", floats(1, 1, 2, 1.5)), ("s3", floats(1, 2, 0.5))))


@model("resize_opset11")
def _resize_opset11() -> onnx.ModelProto:
    """Resize-11: roi input present (empty), scales or sizes."""
    return resize_model({"a": (nn("asymmetric", "floor"), "scales", (1, 1, 2, 2)),
                         "b": (nn("align_corners", "round_prefer_floor"), "sizes", (1, 2, 5, 7))}, opset=11)


@model("resize_opset10", "float")
def _resize_opset10() -> onnx.ModelProto:
    """Resize-10: scales at input 1, asymmetric; its nearest rounds up when downsampling (lowering
    passes nearest mode 'simple')."""
    return graph([node("Resize", ["x", "s"], ["n"], mode="nearest"), node("Resize", ["x", "s"], ["l"], mode="linear"),
                  node("Resize", ["x", "d"], ["nd"], mode="nearest")],
                 XR, ["n", "l", "nd"], (("s", floats(1, 1, 2, 3)), ("d", floats(1, 1, 0.5, 0.6))), opset=10)


@model("upsample", "float")
def _upsample() -> onnx.ModelProto:
    """Upsample-9 (scales input) and Upsample-7 (below: scales attribute)."""
    return graph([node("Upsample", ["x", "s"], ["n"], mode="nearest"),
                  node("Upsample", ["x", "s2"], ["l"], mode="linear")], XR, ["n", "l"],
                 (("s", floats(1, 1, 3, 2)), ("s2", floats(1, 1, 2, 2.5))), opset=9)


@model("upsample_opset7")
def _upsample7() -> onnx.ModelProto:
    return graph([node("Upsample", ["x"], ["n"], mode="nearest", scales=[1.0, 1.0, 2.0, 2.0])], XR, ["n"], opset=7)


# --- ReduceMean ---------------------------------------------------------------------------

@model("reduce_mean", "float")
def _reduce_mean() -> onnx.ModelProto:
    nodes = [node("ReduceMean", ["x"], ["hw"], axes=[2, 3]),
             node("ReduceMean", ["x"], ["c_last"], axes=[1, -1], keepdims=0),
             node("ReduceMean", ["x"], ["every"], keepdims=0), node("ReduceMean", ["x"], ["n_h"], axes=[0, 2]),
             node("Add", ["big", "quarter"], ["big_q"]),
             node("ReduceMean", ["big_q"], ["big_hw"], axes=[-2, -1], keepdims=0)]
    # big_hw: a whole feature map (offset, so that the mean is not the rounding noise of a cancellation)
    return graph(nodes, [("x", F, [2, 3, 5, 6]), ("big", F, [1, 4, 48, 48])],
                 ["hw", "c_last", "every", "n_h", "big_hw"], (("quarter", floats(0.25)),))


@model("reduce_mean_opset18", "float")
def _reduce_mean18() -> onnx.ModelProto:
    nodes = [node("ReduceMean", ["x", "ax"], ["y"], keepdims=0), node("ReduceMean", ["x", "ax2"], ["z"])]
    return graph(nodes, [("x", F, [2, 3, 5, 6])], ["y", "z"], (("ax", ints(-2, -1)), ("ax2", ints(1))), opset=18)


# --- Transpose ----------------------------------------------------------------------------

@model("transpose")
def _transpose() -> onnx.ModelProto:
    """Ranks 2 to 6, the default (reversing) perm, int8 and int64 tensors."""
    cases = [("t2", "x2", [1, 0]), ("t3", "x3", [2, 0, 1]), ("t4", "x4", [0, 2, 3, 1]), ("t5", "x5", [0, 2, 1, 4, 3]),
             ("t6", "x6", [5, 3, 1, 0, 2, 4]), ("t4r", "x4", None), ("t8", "q", [3, 1, 0, 2]), ("t64", "l", [1, 2, 0])]
    nodes = [node("Transpose", [x], [n]) if p is None else node("Transpose", [x], [n], perm=p) for n, x, p in cases]
    ins = [("x2", F, [3, 5]), ("x3", F, [2, 3, 4]), ("x4", F, [2, 3, 4, 5]), ("x5", F, [2, 3, 2, 4, 3]),
           ("x6", F, [2, 1, 3, 2, 2, 3]), ("q", I8, [2, 3, 4, 5]), ("l", I64, [3, 4, 5])]
    outs = [n for n, _, _ in cases[:6]] + ["t8", "t64"]
    return graph(nodes, ins, outs)


# --- element-wise -------------------------------------------------------------------------

# Per op: scales for the rows of a [5, 251] input (every input_pattern value, from tiny to large).
UNARY = {
    "HardSigmoid": (1e-3, 0.5, 3, 10, 1e3), "HardSwish": (1e-3, 0.5, 3, 10, 1e3), "Tanh": (1e-4, 0.3, 1, 10, 1e3),
    "Exp": (1e-4, 1, 10, 40, 85), "Neg": (1e-3, 1, 1e3, 1e20, 1e30), "Abs": (1e-3, 1, 1e3, 1e20, 1e30),
    "Sqrt": (1e-6, 1e-2, 1, 1e6, 1e30), "Erf": (1e-4, 0.5, 1, 3, 1e3), "Elu": (1e-3, 1, 3, 10, 100),
    "Sigmoid": (1e-3, 1, 10, 50, 100), "LeakyRelu": (1e-3, 1, 10, 1e3, 1e30), "Relu": (1e-3, 1, 10, 1e3, 1e30),
    "Clip": (1e-3, 0.5, 1, 10, 1e30), "Softsign": (1e-3, 1, 10, 1e3, 1e30),
}
ATTRS = {"HardSigmoid": {"alpha": 0.3, "beta": 0.4}, "Elu": {"alpha": 0.7}, "LeakyRelu": {"alpha": 0.15}}


@model("unary", "trans")
def _unary() -> onnx.ModelProto:
    """Each op over its own scaled copy of the input (so it runs in place over it)."""
    nodes, inits, outs = [], [], []
    for op, scales in UNARY.items():
        k = op.lower()
        inits.append((f"{k}_scale", floats(*scales).reshape(5, 1)))
        nodes.append(node("Mul", ["x", f"{k}_scale"], [f"{k}_in"]))
        src = f"{k}_in"
        if op == "Sqrt":
            nodes.append(node("Abs", [src], [f"{k}_abs"]))
            src = f"{k}_abs"
        extra = ["lo", "hi"] if op == "Clip" else []
        nodes.append(node(op, [src, *extra], [k], **ATTRS.get(op, {})))
        outs.append(k)
    nodes.append(node("HardSigmoid", ["x"], ["hard_sigmoid_default"]))
    nodes.append(node("Clip", ["x", "", "hi"], ["clip_max_only"]))
    inits += [("lo", floats(-0.25)), ("hi", floats(0.6))]
    return graph(nodes, [("x", F, [5, 251])], outs + ["hard_sigmoid_default", "clip_max_only"], tuple(inits), opset=14)


@model("max_min_prelu", "float")
def _max_min_prelu() -> onnx.ModelProto:
    """Max/Min with 1 to 3 inputs broadcasting both ways; PRelu slopes broadcast to X."""
    nodes = [node("Max", ["a", "b", "c"], ["max3"]), node("Min", ["a", "b"], ["min2"]), node("Max", ["b"], ["max1"]),
             node("Min", ["p", "q"], ["min_outer"]), node("Max", ["a", "a2"], ["max_same"]),
             node("PRelu", ["a", "slope_c"], ["prelu_c"]), node("PRelu", ["a", "slope_w"], ["prelu_w"]),
             node("PRelu", ["a", "slope_1"], ["prelu_1"]), node("PRelu", ["a2", "a"], ["prelu_full"]),
             # in place: the output takes the bytes of an input that dies here
             node("Mul", ["a", "c"], ["a_c"]), node("Max", ["a_c", "a2"], ["max_inplace"]),
             node("Mul", ["a2", "c"], ["a2_c"]), node("PRelu", ["a2_c", "slope_c"], ["prelu_inplace"])]
    rng = np.random.default_rng(5)
    inits = (("c", floats(0.1)), ("slope_c", rng.standard_normal((3, 1, 1)).astype(np.float32)),
             ("slope_w", rng.standard_normal(5).astype(np.float32)), ("slope_1", floats(0.25)))
    ins = [("a", F, [2, 3, 4, 5]), ("b", F, [3, 1, 5]), ("p", F, [2, 1, 4, 1]), ("q", F, [1, 3, 1, 5]),
           ("a2", F, [2, 3, 4, 5])]
    outs = ["max3", "min2", "max1", "min_outer", "max_same", "prelu_c", "prelu_w", "prelu_1", "prelu_full",
            "max_inplace", "prelu_inplace"]
    return graph(nodes, ins, outs, inits)


# --- integers: MaxPool, GlobalMaxPool, Clip -----------------------------------------------

@model("int_maxpool")
def _int_maxpool() -> onnx.ModelProto:
    """MaxPool on int8/uint8 tensors (padded, dilated, ceil_mode; 1-D)."""
    nodes = [node("MaxPool", ["q"], ["mp8"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
             node("MaxPool", ["q"], ["mpd"], kernel_shape=[2, 2], dilations=[2, 2], pads=[1, 0, 1, 1]),
             node("MaxPool", ["u"], ["mpu"], kernel_shape=[2, 3], strides=[2, 1], ceil_mode=1),
             node("MaxPool", ["q1"], ["mp1d"], kernel_shape=[3], strides=[2], pads=[1, 1])]
    return graph(nodes, [("q", I8, [1, 3, 7, 6]), ("u", U8, [1, 2, 5, 7]), ("q1", I8, [1, 2, 9])],
                 ["mp8", "mpd", "mpu", "mp1d"], opset=13)


def qdq_chain(dtype: int, zp: int) -> onnx.ModelProto:
    """DQ -> op -> Q with equal parameters: lowering runs MaxPool, GlobalMaxPool, Relu, Clip on the
    integers (Relu/Clip as an integer Clip at the quantized bounds)."""
    npt = np.int8 if dtype == I8 else np.uint8
    ops = [("MaxPool", {"kernel_shape": [2, 2], "strides": [2, 2]}, []), ("GlobalMaxPool", {}, []),
           ("Relu", {}, []), ("Clip", {}, ["lo", "hi"]), ("Clip", {}, ["", "hi"])]
    nodes = [node("DequantizeLinear", ["x", "s", "z"], ["xf"])]
    outs = []
    for k, (op, attrs, extra) in enumerate(ops):
        nodes += [node(op, ["xf", *extra], [f"f{k}"], **attrs), node("QuantizeLinear", [f"f{k}", "s", "z"], [f"y{k}"])]
        outs.append(f"y{k}")
    # in place: an integer Clip over a MaxPool output nobody else reads
    nodes += [node("MaxPool", ["xf"], ["mf"], kernel_shape=[1, 2], strides=[1, 2]),
              node("QuantizeLinear", ["mf", "s", "z"], ["mq"]),
              node("DequantizeLinear", ["mq", "s", "z"], ["mdq"]), node("Clip", ["mdq", "lo", "hi"], ["mc"]),
              node("QuantizeLinear", ["mc", "s", "z"], ["y_inplace"])]
    outs.append("y_inplace")
    inits = (("s", floats(0.05)), ("z", np.array(zp, npt)), ("lo", floats(-1.0)), ("hi", floats(2.0)))
    return graph(nodes, [("x", dtype, [1, 3, 6, 8])], outs, inits)


@model("qdq_int8")
def _qdq_int8() -> onnx.ModelProto:
    return qdq_chain(I8, 3)


@model("qdq_uint8")
def _qdq_uint8() -> onnx.ModelProto:
    return qdq_chain(U8, 128)


# --- what the kernels refuse --------------------------------------------------------------

@model("refuse_cubic", UNSUPPORTED)
def _refuse_cubic() -> onnx.ModelProto:
    return resize_model({"c": ({"mode": "cubic"}, "scales", (1, 1, 2, 2))})


@model("refuse_crop_and_resize", UNSUPPORTED)
def _refuse_crop() -> onnx.ModelProto:
    m = resize_model({"c": (lin("tf_crop_and_resize"), "scales", (1, 1, 2, 2))})
    m.graph.initializer.append(numpy_helper.from_array(floats(0, 0, 0.1, 0.2, 1, 1, 0.9, 0.8), "roi8"))
    m.graph.node[0].input[1] = "roi8"
    return m


@model("refuse_linear_int8", UNSUPPORTED)
def _refuse_linear_int8() -> onnx.ModelProto:
    return resize_model({"l8": (lin("half_pixel"), "scales", (1, 1, 2, 2))}, x=[("x", I8, [1, 2, 4, 5])])


@model("refuse_pad_wrap", UNSUPPORTED)
def _refuse_wrap() -> onnx.ModelProto:
    return graph([node("Pad", ["x", "p"], ["y"], mode="wrap")], X4, ["y"], (("p", ints(0, 0, 1, 1, 0, 0, 1, 1)),),
                 opset=19)


@model("refuse_avgpool_dilations", UNSUPPORTED)
def _refuse_avg_dil() -> onnx.ModelProto:
    return graph([node("AveragePool", ["x"], ["y"], kernel_shape=[2, 2], dilations=[2, 2])], X4, ["y"], opset=19)


# --- the op models' firmware --------------------------------------------------------------

@pytest.fixture(scope="module")
def op_run(tmp_path_factory):
    """Every op model planned (in place on, row scratch), run in one host firmware; returns
    {name: (path, plan doc, status, outputs)}."""
    d = tmp_path_factory.mktemp("layout_ops")
    planned = []
    for name, (build, _) in MODELS.items():
        path = d / f"{name}.onnx"
        onnx.save(build(), str(path))
        planned.append((name, str(path), fwbuild.plan(str(path), "greedy_size", ModelOptions(scratch="row"))))
    rc, text = fwbuild.run_host(fwbuild.build_host(d, fwbuild.generate(d, planned)))
    assert "ERROR: AddressSanitizer" not in text and "runtime error" not in text, text[-3000:]
    run = verify.parse_output(text)
    return {name: (path, doc, run.status.get(name), run.outputs.get(name, {})) for name, path, doc in planned}


def check(op_run, name: str) -> None:
    path, doc, status, outputs = op_run[name]
    how = MODELS[name][1]
    if isinstance(how, int):
        assert status == how, (name, status)
        return
    assert status == 0, (name, status)
    names = [o.name for o in onnx.load(path).graph.output]
    ref = verify.reference(path, doc, names)
    assert sorted(outputs) == sorted(names), name
    for out in names:
        got, want = outputs[out], ref[out].reshape(-1)
        assert got.shape == want.shape, (name, out, got.shape, want.shape)
        if how == "exact" or want.dtype != np.float32:
            assert np.array_equal(got, want.astype(got.dtype)), (name, out, got[:12], want[:12])
        else:
            rtol = 1e-4 if how == "trans" else 1e-5
            scale = float(np.max(np.abs(want))) if want.size else 0.0
            # transcendental ops: element-wise, over values from tiny to huge; others: to the output's scale
            atol = 1e-7 if how == "trans" else rtol * scale
            bad = ~np.isclose(got, want, rtol=rtol, atol=atol)
            assert not bad.any(), (name, out, got[bad][:8], want[bad][:8])


def names(prefix: str) -> list[str]:
    return [n for n in MODELS if n.startswith(prefix)]


@pytest.mark.parametrize("name", names("pad"))
def test_pad_matches_onnxruntime(op_run, name):
    check(op_run, name)


@pytest.mark.parametrize("name", names("slice"))
def test_slice_matches_onnxruntime(op_run, name):
    check(op_run, name)


@pytest.mark.parametrize("name", names("split"))
def test_split_matches_onnxruntime(op_run, name):
    check(op_run, name)


@pytest.mark.parametrize("name", names("resize") + names("upsample"))
def test_resize_matches_onnxruntime(op_run, name):
    check(op_run, name)


@pytest.mark.parametrize("name", names("reduce_mean"))
def test_reduce_mean_matches_onnxruntime(op_run, name):
    check(op_run, name)


@pytest.mark.parametrize("name", names("transpose"))
def test_transpose_matches_onnxruntime(op_run, name):
    check(op_run, name)


@pytest.mark.parametrize("name", ["unary", "max_min_prelu"])
def test_elementwise_matches_onnxruntime(op_run, name):
    check(op_run, name)


@pytest.mark.parametrize("name", ["int_maxpool", "qdq_int8", "qdq_uint8"])
def test_integer_pool_and_clip_match_onnxruntime(op_run, name):
    check(op_run, name)


@pytest.mark.parametrize("name", names("refuse"))
def test_kernel_refuses_what_it_does_not_implement(op_run, name):
    check(op_run, name)


# --- whole models -------------------------------------------------------------------------

MLPERF = {f"mlperf_{p.stem.split('__')[-1].split('_tflite2onnx')[0]}": p for p in quantized.mlperf_float_models()}
LIGHT = ("squeezenet", "shufflenet")
WHOLE = [*MLPERF, *zoo.NAMES, *(f"light_{n}" for n in LIGHT)]


@pytest.fixture(scope="module")
def whole_run(tmp_path_factory, qcache):
    """The whole float models in one host firmware: {name: (path, doc, status, outputs)}."""
    d = tmp_path_factory.mktemp("layout_whole")
    paths: dict[str, Path] = dict(MLPERF)
    for name in zoo.NAMES:
        paths[name] = d / f"{name}.onnx"
        onnx.save(zoo.build(name), str(paths[name]))
    for name in LIGHT:
        paths[f"light_{name}"] = quantized.materialized(quantized.LIGHT_DIR / f"light_{name}.onnx", qcache)
    planned = [(codegen.sanitize(n), str(p), fwbuild.plan(str(p), "greedy_size", ModelOptions(scratch="row")))
               for n, p in paths.items()]
    rc, text = fwbuild.run_host(fwbuild.build_host(d, fwbuild.generate(d, planned)))
    run = verify.parse_output(text)
    return {n: (p, doc, run.status.get(n), run.outputs.get(n, {})) for n, p, doc in planned}


@pytest.mark.parametrize("name", WHOLE)
def test_whole_float_model_matches_onnxruntime(whole_run, name):
    path, doc, status, outputs = whole_run[codegen.sanitize(name)]
    assert status == 0, (name, status)
    names_ = [o.name for o in onnx.load(path).graph.output]
    ref = verify.reference(path, doc, names_)
    for out in names_:
        want = ref[out].reshape(-1).astype(np.float32)
        got = outputs[out]
        scale = float(np.max(np.abs(want)))
        assert got.shape == want.shape and np.allclose(got, want, rtol=1e-4, atol=1e-4 * scale), (name, out)


# --- tables that disagree with the tensors ------------------------------------------------

# model -> (build, generated text to replace, its replacement): each kernel must refuse the
# corrupted table (ARENA_ERR_SHAPE) before touching memory, with no sanitizer report.
BAD_TABLES = {
    "bad_perm": (lambda: graph([node("Transpose", ["x"], ["y"], perm=[1, 0])], [("x", F, [2, 3])], ["y"]),
                 "_op0_ints[2] = {1, 0}", "_op0_ints[2] = {1, 1}"),
    "bad_slice": (lambda: graph([node("Slice", ["x", "s", "e"], ["y"])], [("x", F, [4, 6])], ["y"],
                                (("s", ints(1, 2)), ("e", ints(3, 6)))),
                  "_op0_ints[4] = {1, 1, 2, 1}", "_op0_ints[4] = {1, 1, 3, 1}"),
    "bad_pad": (lambda: graph([node("Pad", ["x", "p"], ["y"], mode="reflect")], [("x", F, [1, 4])], ["y"],
                              (("p", ints(0, 1, 0, 2)),)),
                "_op0_ints[4] = {0, 1, 0, 2}", "_op0_ints[4] = {0, 4, 0, -1}"),
    "bad_resize": (lambda: resize_model({"r": (nn("asymmetric", "floor"), "scales", (1, 1, 2, 2))}),
                   "_op0_floats[4] = {1.0f, 1.0f, 2.0f, 2.0f}", "_op0_floats[4] = {1.0f, 1.0f, 0.0f, 2.0f}"),
    "bad_reduce": (lambda: graph([node("ReduceMean", ["x"], ["y"], axes=[1])], [("x", F, [2, 3])], ["y"]),
                   "_op0_ints[2] = {0, 1}", "_op0_ints[2] = {1, 0}"),
    "bad_conv": (lambda: graph([node("Conv", ["x", "w"], ["y"])], [("x", F, [1, 2, 5, 5])], ["y"],
                               (("w", np.ones((3, 2, 3, 3), np.float32)),)),
                 ".kernel = {3, 3}", ".kernel = {5, 3}"),
}


def _statuses_after_edits(tmp_path, cases, file_of) -> dict:
    """Each case's model planned and generated into one host firmware, then in the generated file
    ``file_of(name)`` its text ``old`` replaced by ``new``; the firmware run under the sanitizers
    (none may fire): each model's arena_run status."""
    planned = []
    for name, (build, _, _) in cases.items():
        path = tmp_path / f"{name}.onnx"
        onnx.save(build(), str(path))
        planned.append((name, str(path), fwbuild.plan(str(path), "naive")))
    sources = fwbuild.generate(tmp_path, planned)
    for name, (_, old, new) in cases.items():
        src = tmp_path / file_of(name)
        text = src.read_text()
        assert old in text, (name, old)
        src.write_text(text.replace(old, new))
    rc, text = fwbuild.run_host(fwbuild.build_host(tmp_path, sources))
    assert "Sanitizer" not in text and "runtime error" not in text, text[-3000:]
    run = verify.parse_output(text)
    return {name: run.status.get(name) for name in cases}


def test_kernels_refuse_tables_that_disagree_with_the_tensors(tmp_path):
    statuses = _statuses_after_edits(tmp_path, BAD_TABLES, lambda name: f"{name}_model.c")
    assert statuses == {name: 11 for name in BAD_TABLES}


# An op type whose kernel-table row names a kernel without a case for it (as a new op added to the
# table, dispatched to the element-wise kernels, would be before its case is written): the kernel
# refuses it (ARENA_ERR_UNSUPPORTED, 10) instead of computing some other op's function.
NO_CASE = {
    "softmax_as_unary": (lambda: graph([node("Softmax", ["x"], ["y"], axis=1)], [("x", F, [2, 5])], ["y"]),
                         "[ARENA_OP_SOFTMAX] = arena_k_softmax,", "[ARENA_OP_SOFTMAX] = arena_k_unary,"),
    "matmul_as_binary": (lambda: graph([node("MatMul", ["x", "w"], ["y"])], [("x", F, [1, 1])], ["y"],
                                       (("w", np.ones((1, 4), np.float32)),)),
                         "[ARENA_OP_MATMUL] = arena_k_matmul,", "[ARENA_OP_MATMUL] = arena_k_binary,"),
}


def test_element_wise_kernels_refuse_an_op_they_have_no_case_for(tmp_path):
    statuses = _statuses_after_edits(tmp_path, NO_CASE, lambda name: "arena_board.c")
    assert statuses == {name: 10 for name in NO_CASE}
