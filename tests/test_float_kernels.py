"""The blocked float32 kernels (gemm_f32.c, conv_f32.c, depthwise_f32.c: the 4 x 4 GEMM tiles, the
direct conv tiles and their clipped border pixels, im2col through the planned workspace, the depthwise interior path,
Gemm/MatMul, the element-wise runs) compute what onnxruntime computes.

Random single-op models, drawn from a fixed seed: Conv over shapes, strides, asymmetric pads,
dilations and groups (1, grouped, depthwise; 1-D and 2-D; batch 1 and 2; channel and pixel counts
off the tile sizes), each planned with no workspace (the direct path) and with the `row` and
`full` im2col workspaces; Gemm with every transA/transB, alpha, beta and C broadcast; MatMul with
1-D operands and broadcast batches; binary ops with broadcast operands; the unary ops with loops
of their own. They run in one firmware per target: the host (ASan + UBSan) and QEMU mps2_an386
(Cortex-M4F), mps2_an500 (Cortex-M7) and mps3_an547 (Cortex-M55: the tiles, the depthwise interior
and the element-wise runs in Helium's float lanes, whose instructions its ELF must hold), where the
multiply-adds are fused. Outputs must be within 1e-5 of the output's largest magnitude.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from conftest import require_tool
from onnx import TensorProto, helper, numpy_helper

import fwbuild
from arena_tool.run import verify
from arena_tool.plan.planfile import PlanFile
from arena_tool.core.problem import ModelOptions

RTOL = 1e-5
F = TensorProto.FLOAT


def _model(path: Path, nodes: list[onnx.NodeProto], inputs: list[tuple[str, list[int]]],
           inits: dict[str, np.ndarray]) -> None:
    g = helper.make_graph(nodes, path.stem, [helper.make_tensor_value_info(n, F, s) for n, s in inputs],
                          [onnx.ValueInfoProto(name=nodes[-1].output[0])],
                          [numpy_helper.from_array(v.astype(np.float32), k) for k, v in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(onnx.shape_inference.infer_shapes(m, strict_mode=True), str(path))


def _conv_case(rng: np.random.Generator, k: int) -> dict[str, Any]:
    """A Conv whose output is at least one pixel; every fourth a 1 x 1 stride-1 GEMM, every fourth
    depthwise."""
    one_d = k % 7 == 3
    kind = ("gemm", "dw", "group", "general")[k % 4]
    n = int(rng.integers(1, 3)) if k % 5 == 0 else 1
    for _ in range(100):
        cin = int(rng.integers(1, 12))
        groups = 1
        if kind == "dw":
            groups = cin = int(rng.integers(2, 10))
            cout = cin
        elif kind == "group":
            groups = int(rng.integers(2, 4))
            cin = groups * int(rng.integers(1, 4))
            cout = groups * int(rng.integers(1, 6))
        else:
            cout = int(rng.integers(1, 11))
        h = 1 if one_d else int(rng.integers(1, 9))
        w = int(rng.integers(1, 11))
        if kind == "gemm":
            kh = kw = 1
            strides, pads, dil = [1, 1], [0, 0, 0, 0], [1, 1]
        else:
            kh = 1 if one_d else int(rng.integers(1, 6))
            kw = int(rng.integers(1, 6))
            strides = [1 if one_d else int(rng.integers(1, 4)), int(rng.integers(1, 4))]
            pads = [0 if one_d else int(rng.integers(0, 3)), int(rng.integers(0, 3)),
                    0 if one_d else int(rng.integers(0, 3)), int(rng.integers(0, 3))]
            dil = [1 if one_d else int(rng.integers(1, 3)), int(rng.integers(1, 3))]
        oh = (h + pads[0] + pads[2] - dil[0] * (kh - 1) - 1) // strides[0] + 1
        ow = (w + pads[1] + pads[3] - dil[1] * (kw - 1) - 1) // strides[1] + 1
        if oh >= 1 and ow >= 1:
            break
    else:
        raise AssertionError("no conv shape")
    xs = [n, cin, w] if one_d else [n, cin, h, w]
    ws = [cout, cin // groups, kw] if one_d else [cout, cin // groups, kh, kw]
    attrs: dict[str, Any] = {"group": groups}
    if one_d:
        attrs.update(kernel_shape=[kw], strides=[strides[1]], pads=[pads[1], pads[3]], dilations=[dil[1]])
    else:
        attrs.update(kernel_shape=[kh, kw], strides=strides, pads=pads, dilations=dil)
    return {"x": xs, "w": rng.standard_normal(ws), "b": rng.standard_normal(cout) if k % 3 else None,
            "attrs": attrs}


def _conv_model(path: Path, case: dict[str, Any]) -> None:
    inits = {"w": case["w"]}
    ins = ["x", "w"]
    if case["b"] is not None:
        inits["b"] = case["b"]
        ins.append("b")
    _model(path, [helper.make_node("Conv", ins, ["y"], name="conv", **case["attrs"])], [("x", case["x"])], inits)


def _gemm_models(rng: np.random.Generator, out: Path) -> list[Path]:
    paths = []
    for k, (ta, tb) in enumerate([(0, 0), (0, 1), (1, 0), (1, 1)] * 3):
        m, n, kk = int(rng.integers(1, 7)), int(rng.integers(1, 11)), int(rng.integers(1, 40))
        c_shape = ([n], [m, n], [1, n], [m, 1], [1], None)[k % 6]
        inits = {"b": rng.standard_normal([n, kk] if tb else [kk, n])}
        ins = ["a", "b"]
        if c_shape is not None:
            inits["c"] = rng.standard_normal(c_shape)
            ins.append("c")
        attrs = {"transA": ta, "transB": tb, "alpha": (1.0, 0.5, -2.0)[k % 3], "beta": (1.0, 0.25)[k % 2]}
        p = out / f"gemm{k}.onnx"
        _model(p, [helper.make_node("Gemm", ins, ["y"], name="gemm", **attrs)], [("a", [kk, m] if ta else [m, kk])],
               inits)
        paths.append(p)
    for k, (sa, sb) in enumerate([([5], [5, 7]), ([3, 9], [9]), ([2, 1, 4, 6], [3, 6, 5]), ([1, 13], [13, 4]),
                                  ([6, 8], [2, 8, 3])]):
        p = out / f"matmul{k}.onnx"
        _model(p, [helper.make_node("MatMul", ["a", "b"], ["y"], name="mm")], [("a", sa)], {"b": rng.standard_normal(sb)})
        paths.append(p)
    return paths


def _elementwise_models(rng: np.random.Generator, out: Path) -> list[Path]:
    paths = []
    shapes = [([2, 3, 4, 5], [2, 3, 4, 5]), ([2, 3, 4, 5], [3, 1, 1]), ([2, 3, 4, 5], [5]), ([1, 6, 1, 7], [2, 1, 3, 1]),
              ([4, 1], [1, 9]), ([3, 5, 7], [1])]
    for k, (sa, sb) in enumerate(shapes):
        for op in ("Add", "Sub", "Mul", "Div", "Max", "Min"):
            b = rng.standard_normal(sb) + (3.0 if op == "Div" else 0.0)
            p = out / f"{op.lower()}{k}.onnx"
            _model(p, [helper.make_node(op, ["a", "b"], ["y"], name="op")], [("a", sa)], {"b": b})
            paths.append(p)
    p = out / "sum3.onnx"
    _model(p, [helper.make_node("Sum", ["a", "b", "c"], ["y"], name="op")], [("a", [2, 3, 4])],
           {"b": rng.standard_normal([3, 1]), "c": rng.standard_normal([4])})
    paths.append(p)
    p = out / "prelu.onnx"
    _model(p, [helper.make_node("PRelu", ["a", "s"], ["y"], name="op")], [("a", [1, 4, 3, 3])],
           {"s": rng.standard_normal([4, 1, 1])})
    paths.append(p)
    for op, attrs in (("Relu", {}), ("LeakyRelu", {"alpha": 0.1}), ("Neg", {})):
        p = out / f"{op.lower()}.onnx"
        _model(p, [helper.make_node(op, ["a"], ["y"], name="op", **attrs)], [("a", [1, 3, 5, 7])], {})
        paths.append(p)
    p = out / "clip.onnx"
    _model(p, [helper.make_node("Clip", ["a", "lo", "hi"], ["y"], name="op")], [("a", [2, 17])],
           {"lo": np.array(-0.5), "hi": np.array(0.75)})
    paths.append(p)
    return paths


Case = tuple[str, str, PlanFile]


@pytest.fixture(scope="module")
def cases(tmp_path_factory: pytest.TempPathFactory) -> list[Case]:
    rng = np.random.default_rng(20)
    out = tmp_path_factory.mktemp("float_kernels")
    models: list[Case] = []
    for k in range(40):
        case = _conv_case(rng, k)
        path = out / f"conv{k}.onnx"
        _conv_model(path, case)
        models.append((f"conv{k}", str(path), fwbuild.plan(str(path), "greedy_size")))
        if case["attrs"]["group"] != case["x"][1]:  # im2col: not for depthwise
            for scratch in ("row", "full"):
                doc = fwbuild.plan(str(path), "greedy_size", ModelOptions(scratch=scratch))
                models.append((f"conv{k}_{scratch}", str(path), doc))
    for path in _gemm_models(rng, out) + _elementwise_models(rng, out):
        models.append((path.stem, str(path), fwbuild.plan(str(path), "greedy_size")))
    assert any(s.workspace for _, _, doc in models for s in doc.schedule)
    return models


def _check(text: str, models: list[Case]) -> None:
    run = verify.parse_output(text)
    for sym, path, doc in models:
        assert run.status.get(sym) == 0, (sym, text[-1500:])
        want = verify.reference(path, doc)["y"].reshape(-1)
        got = run.outputs[sym]["y"]
        tol = RTOL * max(float(np.max(np.abs(want))), 1e-30)
        err = float(np.max(np.abs(got - want)))
        assert got.shape == want.shape and err <= tol, (sym, err, tol)


def _vector_ops(elf: Path) -> set[str]:
    """The mnemonics of the ELF's instructions on Helium's q registers (objdump decodes them only when
    told the architecture, Armv8.1-M): VFMA.F32 on s registers is the scalar FPU's."""
    text = subprocess.run([require_tool("arm-none-eabi-objdump"), "-d", "-m", "armv8.1-m.main", str(elf)],
                          check=True, capture_output=True, text=True).stdout
    return {f[2].split(".")[0] for f in (line.split("\t") for line in text.splitlines())
            if len(f) >= 4 and f[3].lstrip().startswith("q")}


@pytest.mark.slow
def test_float_kernels_on_the_host_match_onnxruntime(cases: list[Case], tmp_path: Path) -> None:
    rc, text = fwbuild.run_host(fwbuild.build_host(tmp_path, fwbuild.generate(tmp_path, cases)))
    assert rc == 0, text[-3000:]
    _check(text, cases)


@pytest.mark.slow
@pytest.mark.parametrize("board", ["mps2_an386", "mps2_an500", "mps3_an547"])
def test_float_kernels_on_qemu_match_onnxruntime(cases: list[Case], tmp_path: Path, board: str) -> None:
    require_tool("arm-none-eabi-gcc")
    require_tool("qemu-system-arm")
    from arena_tool.target import boards
    from arena_tool.run import qemu

    gen = fwbuild.generate(tmp_path, cases, board)
    elf = fwbuild.build_elf(tmp_path, gen, board, max(d.arena_size for _, _, d in cases))
    assert _vector_ops(elf) >= ({"vfma", "vldrw", "vstrw", "vpsel"} if board == "mps3_an547" else set()), board
    rc, text = qemu.run(str(elf), boards.load_board(board).qemu, timeout=300)
    assert rc == 0, text[-3000:]
    _check(text, cases)
