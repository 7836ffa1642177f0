"""onnx_fold: constant folding and shape inference (run by onnx_graph.load): what folds, what is
only shaped, what never folds."""

from __future__ import annotations

import numpy as np

import models as M
from arena_tool.model import onnx_graph


def test_shape_arithmetic_is_folded(tmp_path):
    g = onnx_graph.load(M.save(M.shape_chain(), tmp_path / "s.onnx"))
    assert [g.nodes[i].op_type for i in g.schedule] == ["Relu", "Reshape"]
    assert [g.nodes[i].op_type for i in g.folded] == ["Shape", "Gather", "Unsqueeze", "Concat"]
    assert g.types["y"].shape == (1, 32)
    assert "target" in [w.name for w in g.weights] and "s" not in g.types


def test_constant_chains_fold_without_evaluating_big_weights(tmp_path):
    # ConstantOfShape -> big weight (shape only), Constant -> Reshape target (evaluated).
    big = 300 * 300
    m = M.model(
        [M.node("ConstantOfShape", ["wshape"], ["w"], "cos"),
         M.node("Constant", [], ["target"], "c", value=M.const("t", np.array([1, big], np.int64))),
         M.node("MatMul", ["x", "w"], ["h"], "mm"),
         M.node("Reshape", ["h", "target"], ["y"], "reshape")],
        [M.vi("x", [1, 300])], [M.vi("y", ["a", "b"])],
        [M.const("wshape", np.array([300, big], np.int64))],
    )
    g = onnx_graph.load(M.save(m, tmp_path / "c.onnx"))
    assert [g.nodes[i].op_type for i in g.schedule] == ["MatMul", "Reshape"]
    assert g.types["y"].shape == (1, big)
    assert {w.name: w.shape for w in g.weights} == {"w": (300, big), "target": (2,)}


def test_random_ops_are_not_folded(tmp_path):
    m = M.model([M.node("RandomNormal", [], ["r"], "rand", shape=[4]),
                 M.node("Add", ["x", "r"], ["y"], "add")], [M.vi("x", [4])], [M.vi("y", [4])])
    g = onnx_graph.load(M.save(m, tmp_path / "r.onnx"))
    assert [g.nodes[i].op_type for i in g.schedule] == ["RandomNormal", "Add"]
