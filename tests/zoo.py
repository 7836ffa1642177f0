"""The CNN families microcontrollers run, at 96x96 (the DS-TCN at 40 x 30 x 1), generated with onnx.helper (no files shipped).

The block structure of torchvision's exports, at small width so the weights fit an MCU's flash:
MobileNet V1 (depthwise separable, ReLU6 as Clip), V2 (inverted residuals), V3 (HardSwish,
squeeze-excite with HardSigmoid), MnasNet (5x5 depthwise), EfficientNet (Swish = x * Sigmoid(x),
squeeze-excite with Sigmoid, ReduceMean), ShuffleNetV2 (Split, channel shuffle by Reshape ->
Transpose -> Reshape, Concat), SqueezeNet (fire modules, MaxPool, Concat), ResNet (BasicBlocks with
unfolded BatchNormalization), and MLPerf Tiny's streaming wake-word DS-TCN (Kx1 depthwise convs
on 1-wide planes, at its own 40 x 30 x 1 input). Weights are seeded (He-like scale) so activations stay in range and
the int8 twins (tests/quantized.py) calibrate to useful scales.

``build(name) -> ModelProto``; ``NAMES`` lists them.
"""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HW = 96
CLASSES = 10


class _Net:
    """A graph under construction: ``x = net.conv(x, ...)`` appends nodes and returns the output."""

    def __init__(self, name: str, channels: int = 3, hw: tuple[int, int] = (HW, HW)) -> None:
        self.name = name
        self.shape = [1, channels, *hw]
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.n = 0
        self.c = {"input": channels}  # channels of every NCHW tensor
        self.classes = CLASSES

    def _id(self, kind: str) -> str:
        self.n += 1
        return f"{kind}{self.n}"

    def _weight(self, name: str, shape: tuple[int, ...], scale: float) -> str:
        rng = np.random.default_rng(zlib.crc32(f"{self.name}/{name}".encode()))
        self.inits.append(numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name))
        return name

    def const(self, name: str, value: np.ndarray) -> str:
        self.inits.append(numpy_helper.from_array(value, name))
        return name

    def node(self, op: str, inputs: list[str], channels: int | None = None, **attrs: Any) -> str:
        out = self._id(op.lower())
        self.nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        self.c[out] = self.c[inputs[0]] if channels is None else channels
        return out

    def conv(self, x: str, cout: int, k: int = 1, stride: int = 1, group: int = 1, act: str | None = "relu6",
             bn: bool = False, kw: int | None = None, pad: bool = True) -> str:
        """A Conv of a k x kw kernel (kw None: k x k), padded to keep the size (pad) or not."""
        cin = self.c[x]
        name = self._id("conv")
        kw = k if kw is None else kw
        w = self._weight(f"{name}.w", (cout, cin // group, k, kw), (2.0 / (cin // group * k * kw)) ** 0.5)
        ins = [x, w] if bn else [x, w, self._weight(f"{name}.b", (cout,), 0.05)]
        pads = [k // 2, kw // 2] * 2 if pad else [0] * 4
        y = self.node("Conv", ins, cout, kernel_shape=[k, kw], strides=[stride, stride], pads=pads, group=group)
        if bn:
            rng = np.random.default_rng(zlib.crc32(f"{self.name}/{name}.bn".encode()))
            stats = [(1 + 0.1 * rng.standard_normal(cout)), 0.05 * rng.standard_normal(cout),
                     0.05 * rng.standard_normal(cout), 1 + 0.1 * np.abs(rng.standard_normal(cout))]
            names = [self.const(f"{name}.bn{i}", s.astype(np.float32)) for i, s in enumerate(stats)]
            y = self.node("BatchNormalization", [y, *names])
        return self.act(y, act)

    def act(self, x: str, act: str | None) -> str:
        if act == "relu":
            return self.node("Relu", [x])
        if act == "relu6":
            return self.node("Clip", [x, self.const(self._id("lo"), np.array(0, np.float32)),
                                      self.const(self._id("hi"), np.array(6, np.float32))])
        if act == "hswish":
            return self.node("HardSwish", [x])
        if act == "swish":
            return self.node("Mul", [x, self.node("Sigmoid", [x])])
        return x

    def se(self, x: str, squeeze: int, gate: str, pool: str = "gap") -> str:
        """Squeeze-excite: pool -> 1x1 conv -> act -> 1x1 conv -> gate -> scale x."""
        s = self.node("GlobalAveragePool", [x]) if pool == "gap" else \
            self.node("ReduceMean", [x], axes=[2, 3], keepdims=1)
        s = self.conv(s, squeeze, act="relu" if gate == "hsigmoid" else "swish")
        s = self.conv(s, self.c[x], act=None)
        s = self.node("HardSigmoid", [s], alpha=1 / 6, beta=0.5) if gate == "hsigmoid" else self.node("Sigmoid", [s])
        return self.node("Mul", [x, s])

    def head(self, x: str) -> str:
        x = self.node("Flatten", [self.node("GlobalAveragePool", [x])], axis=1)
        cin = self.c[x]
        w = self._weight(self._id("fc.w"), (self.classes, cin), (1.0 / cin) ** 0.5)
        y = self.node("Gemm", [x, w, self._weight(self._id("fc.b"), (self.classes,), 0.05)], self.classes, transB=1)
        return self.node("Softmax", [y], axis=1)

    def model(self, out: str) -> onnx.ModelProto:
        self.nodes[-1].output[0] = "output"
        g = helper.make_graph(self.nodes, self.name,
                              [helper.make_tensor_value_info("input", TensorProto.FLOAT, self.shape)],
                              [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, self.classes])],
                              self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)], producer_name="arena tests/zoo.py")
        m.ir_version = 8
        onnx.checker.check_model(m)
        return m


def mobilenet_v1() -> onnx.ModelProto:
    net = _Net("mobilenet_v1")
    x = net.conv("input", 8, 3, 2)
    for cout, stride in ((16, 1), (24, 2), (24, 1), (32, 2), (32, 1), (64, 2), (64, 1), (128, 2)):
        x = net.conv(x, net.c[x], 3, stride, group=net.c[x])
        x = net.conv(x, cout)
    return net.model(net.head(x))


def _inverted(net: _Net, x: str, cout: int, expand: int, k: int, stride: int, act: str = "relu6",
              se: str | None = None) -> str:
    cin = net.c[x]
    y = net.conv(x, cin * expand, act=act) if expand > 1 else x
    y = net.conv(y, net.c[y], k, stride, group=net.c[y], act=act)
    if se:
        y = net.se(y, max(4, net.c[y] // 4), se, pool="mean" if se == "sigmoid" else "gap")
    y = net.conv(y, cout, act=None)
    return net.node("Add", [x, y]) if stride == 1 and cin == cout else y


def mobilenet_v2() -> onnx.ModelProto:
    net = _Net("mobilenet_v2")
    x = net.conv("input", 16, 3, 2)
    for cout, expand, stride in ((8, 1, 1), (16, 6, 2), (16, 6, 1), (24, 6, 2), (24, 6, 1), (32, 6, 2), (48, 6, 1),
                                 (80, 6, 2)):
        x = _inverted(net, x, cout, expand, 3, stride)
    return net.model(net.head(net.conv(x, 160, act="relu6")))


def mobilenet_v2_imagenet() -> onnx.ModelProto:
    """MobileNetV2 w0.35 as torchvision builds it for ImageNet (not in NAMES): the width-0.35 channels
    rounded to 8 (16, 8, 8, 16, 24, 32, 56, 112), the full 17 blocks, the 1280-channel last conv and
    1000 classes: 1.66 M weights, about 1.7 MB in int8, more than a 1 MB part's flash (the external
    flash tests, tests/test_external_flash.py)."""
    net = _Net("mobilenet_v2_imagenet")
    net.classes = 1000
    x = net.conv("input", 16, 3, 2)
    for expand, cout, n, stride in ((1, 8, 1, 1), (6, 8, 2, 2), (6, 16, 3, 2), (6, 24, 4, 2), (6, 32, 3, 1),
                                    (6, 56, 3, 2), (6, 112, 1, 1)):
        for i in range(n):
            x = _inverted(net, x, cout, expand, 3, stride if i == 0 else 1)
    return net.model(net.head(net.conv(x, 1280, act="relu6")))


def mobilenet_v3() -> onnx.ModelProto:
    net = _Net("mobilenet_v3")
    x = net.conv("input", 16, 3, 2, act="hswish")
    for cout, expand, k, stride, act, se in ((16, 1, 3, 2, "relu", "hsigmoid"), (24, 4, 3, 2, "relu", None),
                                            (24, 3, 3, 1, "relu", None), (40, 4, 5, 2, "hswish", "hsigmoid"),
                                            (40, 4, 5, 1, "hswish", "hsigmoid"), (48, 3, 5, 1, "hswish", "hsigmoid")):
        x = _inverted(net, x, cout, expand, k, stride, act, se)
    return net.model(net.head(net.conv(x, 96, act="hswish")))


def mnasnet() -> onnx.ModelProto:
    net = _Net("mnasnet")
    x = net.conv("input", 16, 3, 2, act="relu")
    x = net.conv(x, 16, 3, 1, group=16, act="relu")
    x = net.conv(x, 8, act=None)
    for cout, expand, k, stride in ((16, 3, 3, 2), (16, 3, 3, 1), (24, 3, 5, 2), (24, 3, 5, 1), (40, 6, 5, 2),
                                    (48, 6, 3, 1)):
        x = _inverted(net, x, cout, expand, k, stride, act="relu")
    return net.model(net.head(net.conv(x, 160, act="relu")))


def efficientnet() -> onnx.ModelProto:
    net = _Net("efficientnet")
    x = net.conv("input", 16, 3, 2, act="swish")
    for cout, expand, k, stride in ((8, 1, 3, 1), (16, 6, 3, 2), (16, 6, 3, 1), (24, 6, 5, 2), (40, 6, 3, 2),
                                    (48, 6, 5, 1)):
        x = _inverted(net, x, cout, expand, k, stride, act="swish", se="sigmoid")
    return net.model(net.head(net.conv(x, 160, act="swish")))


def shufflenet_v2() -> onnx.ModelProto:
    net = _Net("shufflenet_v2")
    x = net.conv("input", 12, 3, 2, act="relu")
    x = net.node("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])

    def shuffle(t: str, h: int) -> str:
        c = net.c[t]
        t = net.node("Reshape", [t, net.const(net._id("shape"), np.array([1, 2, c // 2, h, h], np.int64))])
        t = net.node("Transpose", [t], perm=[0, 2, 1, 3, 4])
        out = net.node("Reshape", [t, net.const(net._id("shape"), np.array([1, c, h, h], np.int64))])
        net.c[out] = c
        return out

    h = HW // 4
    for cout, stride in ((24, 2), (24, 1), (48, 2), (48, 1), (96, 2)):
        if stride == 2:
            a = net.conv(net.conv(x, net.c[x], 3, 2, group=net.c[x], act=None), cout // 2, act="relu")
            b = net.conv(x, cout // 2, act="relu")
            b = net.conv(net.conv(b, cout // 2, 3, 2, group=cout // 2, act=None), cout // 2, act="relu")
            h //= 2
        else:
            half = net.c[x] // 2
            split = net._id("split")
            net.nodes.append(helper.make_node("Split", [x, net.const(net._id("sizes"), np.array([half, half], np.int64))],
                                              [f"{split}a", f"{split}b"], name=split, axis=1))
            a, b = f"{split}a", f"{split}b"
            net.c[a] = net.c[b] = half
            b = net.conv(b, half, act="relu")
            b = net.conv(net.conv(b, half, 3, 1, group=half, act=None), half, act="relu")
        x = shuffle(net.node("Concat", [a, b], net.c[a] + net.c[b], axis=1), h)
    return net.model(net.head(net.conv(x, 128, act="relu")))


def squeezenet() -> onnx.ModelProto:
    net = _Net("squeezenet")
    x = net.conv("input", 32, 3, 2, act="relu")
    x = net.node("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2])
    for squeeze, expand, pool in ((8, 32, False), (8, 32, True), (16, 48, False), (16, 64, True)):
        s = net.conv(x, squeeze, act="relu")
        x = net.node("Concat", [net.conv(s, expand, act="relu"), net.conv(s, expand, 3, act="relu")], 2 * expand, axis=1)
        if pool:
            x = net.node("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=0)
    return net.model(net.head(net.conv(x, CLASSES * 4, act="relu")))


def resnet() -> onnx.ModelProto:
    net = _Net("resnet")
    x = net.conv("input", 16, 3, 2, act="relu", bn=True)
    x = net.node("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    for cout, stride in ((16, 1), (32, 2), (64, 2)):
        y = net.conv(net.conv(x, cout, 3, stride, act="relu", bn=True), cout, 3, act=None, bn=True)
        short = x if stride == 1 else net.conv(x, cout, 1, stride, act=None, bn=True)
        x = net.node("Relu", [net.node("Add", [short, y])])
    return net.model(net.head(x))


def ds_tcn() -> onnx.ModelProto:
    """MLPerf Tiny's streaming wake word DS-TCN (str_ww_ref_model.tflite's layers, NCHW): 30 frames
    of 40 features as a 40 x 30 x 1 input, depthwise 3x1 / 5x1 / 10x1 / 15x1 over the time axis of
    1-wide planes, each followed by a pointwise conv, then a dense layer."""
    net = _Net("ds_tcn", channels=40, hw=(30, 1))
    x = net.conv("input", 40, 3, group=40, kw=1, pad=False, act=None)
    for k, cout in ((5, 128), (10, 128), (15, 128)):
        x = net.conv(x, 128, act="relu")
        x = net.conv(x, 128, k, group=128, kw=1, pad=False, act=None)
    return net.model(net.head(net.conv(x, 32, act="relu")))


BUILDERS = {f.__name__: f for f in (mobilenet_v1, mobilenet_v2, mobilenet_v3, mnasnet, efficientnet, shufflenet_v2,
                                    squeezenet, resnet, ds_tcn)}
NAMES = tuple(BUILDERS)


def build(name: str) -> onnx.ModelProto:
    return BUILDERS[name]()
