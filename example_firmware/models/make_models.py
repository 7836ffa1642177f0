"""Make the example firmware's four ONNX models, reproducibly, without downloads.

Run ``python3 example_firmware/models/make_models.py [OUT_DIR]``. Each model is
built with ``onnx.helper`` from numpy weights drawn from a fixed seed, so two
runs write byte-identical files. The models are sized so the example manifest
fits every shipped board's default region at float32:

- ``kws.onnx``: a DS-CNN keyword spotter, input 1x1x49x10 (MFCC frames),
  a strided 10x4 conv, three depthwise+pointwise blocks (ReLU6 via Clip),
  average pooling, a 12-way classifier. Peak activations ~32 KB.
- ``resnet8.onnx``: a ResNet-8-style CIFAR net, input 1x3x32x32, a strided stem,
  three residual stages (Add skips, 1x1 projection where the shape changes),
  MaxPool, global average pooling, a 10-way classifier. Peak ~28 KB.
- ``autoencoder.onnx``: a fully-connected autoencoder 640->24->16->8->16->24->640
  (Gemm, and MatMul+Add for the last layer), as in the MLPerf Tiny anomaly
  detection task. Weights ~125 KB, activations ~5 KB.

- ``kws_int8.onnx``: the DS-CNN of ``kws`` quantized (QLinear form, int8
  activations, per-channel int8 weights, int32 biases): QuantizeLinear at the
  input, QLinearConv for every conv, ReLU6/ReLU folded into the output
  quantization (zero point -128, so saturation clamps), the average pool as a
  depthwise QLinearConv with an all-ones 25x5 kernel (standard ONNX has no
  int8 pooling), QLinearMatMul for the classifier and DequantizeLinear at the
  output (float logits). Scales are fixed by hand, weights seeded. Peak
  activations ~8 KB, a quarter of the float model's.

Only these ops are used: Conv (incl. depthwise), Gemm, MatMul, Relu, Clip, Add,
MaxPool, AveragePool, GlobalAveragePool, Flatten, Reshape, Softmax, Concat,
QuantizeLinear, QLinearConv, QLinearMatMul, DequantizeLinear.
"""

from __future__ import annotations

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 13
IR_VERSION = 8  # readable by every onnxruntime of the last years


class Graph:
    """Accumulates nodes and initializers with deterministic names."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.count = 0

    def _name(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}{self.count}"

    def weight(self, name: str, shape: tuple[int, ...], fan_in: int) -> str:
        scale = np.sqrt(2.0 / fan_in)
        data = (self.rng.standard_normal(shape) * scale).astype(np.float32)
        self.inits.append(numpy_helper.from_array(data, name))
        return name

    def bias(self, name: str, n: int) -> str:
        data = (self.rng.standard_normal((n,)) * 0.05).astype(np.float32)
        self.inits.append(numpy_helper.from_array(data, name))
        return name

    def const(self, name: str, data: np.ndarray) -> str:
        self.inits.append(numpy_helper.from_array(data, name))
        return name

    def op(self, op_type: str, inputs: list[str], prefix: str, **attrs: object) -> str:
        out = self._name(prefix)
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=f"{op_type.lower()}_{out}", **attrs))
        return out

    def conv(self, x: str, cin: int, cout: int, k: tuple[int, int], stride: int = 1,
             pads: tuple[int, int, int, int] | None = None, group: int = 1) -> str:
        n = self.count + 1
        w = self.weight(f"conv{n}_w", (cout, cin // group, k[0], k[1]), fan_in=(cin // group) * k[0] * k[1])
        b = self.bias(f"conv{n}_b", cout)
        if pads is None:
            pads = (k[0] // 2, k[1] // 2, k[0] // 2, k[1] // 2)
        return self.op("Conv", [x, w, b], "t", kernel_shape=list(k), strides=[stride, stride],
                       pads=list(pads), group=group)

    def gemm(self, x: str, n_in: int, n_out: int) -> str:
        n = self.count + 1
        w = self.weight(f"fc{n}_w", (n_out, n_in), fan_in=n_in)
        b = self.bias(f"fc{n}_b", n_out)
        return self.op("Gemm", [x, w, b], "t", transB=1)

    def relu(self, x: str) -> str:
        return self.op("Relu", [x], "t")

    def relu6(self, x: str) -> str:
        lo = self.const(f"clip_min{self.count + 1}", np.array(0.0, dtype=np.float32))
        hi = self.const(f"clip_max{self.count + 1}", np.array(6.0, dtype=np.float32))
        return self.op("Clip", [x, lo, hi], "t")

    def model(self, name: str, x: str, x_shape: list[int], y: str, y_shape: list[int]) -> onnx.ModelProto:
        # The last node's output takes the graph output's name.
        self.nodes[-1].output[0] = y
        graph = helper.make_graph(
            self.nodes, name,
            [helper.make_tensor_value_info(x, TensorProto.FLOAT, x_shape)],
            [helper.make_tensor_value_info(y, TensorProto.FLOAT, y_shape)],
            initializer=self.inits,
        )
        model = helper.make_model(graph, producer_name="arena make_models.py",
                                  opset_imports=[helper.make_opsetid("", OPSET)])
        model.ir_version = IR_VERSION
        onnx.checker.check_model(model, full_check=True)
        return model


def kws() -> onnx.ModelProto:
    g = Graph(seed=1)
    x = "input"
    t = g.relu6(g.conv(x, 1, 32, (10, 4), stride=2, pads=(4, 1, 5, 1)))  # 32x25x5
    for _ in range(3):
        t = g.relu6(g.conv(t, 32, 32, (3, 3), group=32))  # depthwise
        t = g.relu(g.conv(t, 32, 32, (1, 1)))  # pointwise
    t = g.op("AveragePool", [t], "t", kernel_shape=[25, 5])
    t = g.op("Flatten", [t], "t", axis=1)
    t = g.gemm(t, 32, 12)
    g.op("Softmax", [t], "t", axis=1)
    return g.model("kws", x, [1, 1, 49, 10], "scores", [1, 12])


def resnet8() -> onnx.ModelProto:
    g = Graph(seed=2)
    x = "input"
    t = g.relu(g.conv(x, 3, 16, (3, 3), stride=2))  # 16x16x16
    t = g.op("MaxPool", [t], "t", kernel_shape=[2, 2], strides=[2, 2])  # 16x8x8
    for cin, cout, stride in ((16, 16, 1), (16, 24, 2), (24, 32, 2)):
        a = g.relu(g.conv(t, cin, cout, (3, 3), stride=stride))
        b = g.conv(a, cout, cout, (3, 3))
        skip = t if (cin == cout and stride == 1) else g.conv(t, cin, cout, (1, 1), stride=stride, pads=(0, 0, 0, 0))
        t = g.relu(g.op("Add", [b, skip], "t"))
    t = g.op("GlobalAveragePool", [t], "t")
    t = g.op("Flatten", [t], "t", axis=1)
    t = g.gemm(t, 32, 10)
    g.op("Softmax", [t], "t", axis=1)
    return g.model("resnet8", x, [1, 3, 32, 32], "probs", [1, 10])


def autoencoder() -> onnx.ModelProto:
    g = Graph(seed=3)
    x = "input"
    dims = [640, 24, 16, 8, 16, 24]
    t = x
    for n_in, n_out in zip(dims, dims[1:]):
        t = g.relu(g.gemm(t, n_in, n_out))
    # Last layer as MatMul + Add, so the runtime's MatMul path is exercised too.
    w = g.weight("dec_out_w", (24, 640), fan_in=24)
    b = g.bias("dec_out_b", 640)
    t = g.op("MatMul", [t, w], "t")
    t = g.op("Add", [t, b], "t")
    shape = g.const("out_shape", np.array([1, 640], dtype=np.int64))
    g.op("Reshape", [t, shape], "t")
    return g.model("autoencoder", x, [1, 640], "reconstruction", [1, 640])


class QGraph(Graph):
    """Graph for QLinear models: int8 activations carried as (tensor, scale name, zero-point name)."""

    def qparam(self, prefix: str, scale: float, zero: int) -> tuple[str, str]:
        n = self.count + 1
        s = self.const(f"{prefix}{n}_scale", np.array(scale, dtype=np.float32))
        z = self.const(f"{prefix}{n}_zero", np.array(zero, dtype=np.int8))
        self.count += 1
        return s, z

    def qconv(self, x: tuple[str, str, str], x_scale: float, cin: int, cout: int, k: tuple[int, int],
              y_scale: float, stride: int = 1, pads: tuple[int, int, int, int] | None = None,
              group: int = 1, ones: bool = False) -> tuple[str, str, str]:
        """QLinearConv with per-channel int8 weights (from seeded float weights) and an int32 bias;
        the output zero point -128 folds a ReLU (values below 0 saturate). ones: an all-ones kernel
        with scale 1/(kh*kw) and no bias (average pooling)."""
        n = self.count + 1
        shape = (cout, cin // group, k[0], k[1])
        if ones:
            wq = np.ones(shape, dtype=np.int8)
            w_scale = np.array(1.0 / (k[0] * k[1]), dtype=np.float32)
        else:
            fan_in = (cin // group) * k[0] * k[1]
            w = self.rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)
            w_scale = (np.abs(w).reshape(cout, -1).max(axis=1) / 127.0).astype(np.float32)
            wq = np.clip(np.rint(w / w_scale.reshape(-1, 1, 1, 1)), -127, 127).astype(np.int8)
        ws = self.const(f"qconv{n}_w_scale", w_scale)
        wz = self.const(f"qconv{n}_w_zero", np.zeros(w_scale.shape, dtype=np.int8))
        wq_name = self.const(f"qconv{n}_w", wq)
        ys, yz = self.qparam("act", y_scale, -128)
        inputs = [x[0], x[1], x[2], wq_name, ws, wz, ys, yz]
        if not ones:
            b = self.rng.standard_normal(cout) * 0.05
            bq = np.rint(b / (np.float32(x_scale) * w_scale.astype(np.float64))).astype(np.int32)
            inputs.append(self.const(f"qconv{n}_b", bq))
        if pads is None:
            pads = (k[0] // 2, k[1] // 2, k[0] // 2, k[1] // 2)
        out = self.op("QLinearConv", inputs, "q", kernel_shape=list(k), strides=[stride, stride],
                      pads=list(pads), group=group)
        return out, ys, yz


def kws_int8() -> onnx.ModelProto:
    g = QGraph(seed=4)
    relu6, relu = 6.0 / 255.0, 8.0 / 255.0  # [0, 6] and [0, 8] at zero point -128
    in_scale, in_zero = g.qparam("in", 1.0 / 128.0, 0)
    t = (g.op("QuantizeLinear", ["input", in_scale, in_zero], "q"), in_scale, in_zero)
    t = g.qconv(t, 1.0 / 128.0, 1, 32, (10, 4), relu6, stride=2, pads=(4, 1, 5, 1))  # 32x25x5
    scale = relu6
    for _ in range(3):
        t = g.qconv(t, scale, 32, 32, (3, 3), relu6, group=32)  # depthwise, ReLU6
        t = g.qconv(t, relu6, 32, 32, (1, 1), relu)  # pointwise, ReLU
        scale = relu
    t = g.qconv(t, relu, 32, 32, (25, 5), relu, pads=(0, 0, 0, 0), group=32, ones=True)  # average pool
    flat = g.op("Flatten", [t[0]], "q", axis=1)
    w = g.rng.standard_normal((32, 12)) * np.sqrt(2.0 / 32)
    w_scale = np.float32(np.abs(w).max() / 127.0)
    wq = g.const("fc_w", np.clip(np.rint(w / w_scale), -127, 127).astype(np.int8))
    ws = g.const("fc_w_scale", np.array(w_scale, dtype=np.float32))
    wz = g.const("fc_w_zero", np.array(0, dtype=np.int8))
    out_scale, out_zero = g.qparam("out", 1.0 / 32.0, 0)
    y = g.op("QLinearMatMul", [flat, t[1], t[2], wq, ws, wz, out_scale, out_zero], "q")
    g.op("DequantizeLinear", [y, out_scale, out_zero], "t")
    return g.model("kws_int8", "input", [1, 1, 49, 10], "logits", [1, 12])


MODELS = {"kws": kws, "resnet8": resnet8, "autoencoder": autoencoder, "kws_int8": kws_int8}


def main(argv: list[str]) -> int:
    out_dir = argv[1] if len(argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    os.makedirs(out_dir, exist_ok=True)
    for name in sorted(MODELS):
        data = MODELS[name]().SerializeToString(deterministic=True)
        path = os.path.join(out_dir, f"{name}.onnx")
        tmp = path + ".tmp"
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
        print(f"{path}: {len(data):,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
