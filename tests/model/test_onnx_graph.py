"""onnx_graph: loading, checking, pinning, ordering, and one clear error per failure (folding: test_onnx_fold)."""

from __future__ import annotations

import os

import numpy as np
import pytest
import models as M
from arena_tool.model import onnx_graph
from arena_tool.core.errors import EXIT_USAGE, ArenaError


def _error(path: str, shapes: tuple = ()) -> ArenaError:
    with pytest.raises(ArenaError) as info:
        onnx_graph.load(path, shapes)
    assert info.value.exit_code == EXIT_USAGE
    return info.value


# --- parse_input_shape ---

def test_parse_input_shape():
    assert onnx_graph.parse_input_shape("data=1,3,96,96") == ("data", (1, 3, 96, 96))
    assert onnx_graph.parse_input_shape("serving:0=1,10") == ("serving:0", (1, 10))
    assert onnx_graph.parse_input_shape("a=b=7") == ("a=b", (7,))


@pytest.mark.parametrize("text", ["data", "=1,2", "data=1,x", "data=1,0", "data="])
def test_parse_input_shape_errors(text):
    with pytest.raises(ArenaError) as info:
        onnx_graph.parse_input_shape(text)
    assert info.value.field == "--input-shape"
    assert "data=1,3,224,224" in info.value.hint


# --- file errors ---

def test_missing_file(tmp_path):
    path = str(tmp_path / "absent.onnx")
    e = _error(path)
    assert str(e) == f"{path}: error: model file not found (hint: check the path (relative paths start at the current directory))"


def test_directory(tmp_path):
    assert "is a directory" in _error(str(tmp_path)).msg


@pytest.mark.parametrize("data", [b"", b"hello, this is not an onnx file\n", b"\xff\xff\xff\xff\x07garbage"])
def test_not_onnx(tmp_path, data):
    path = tmp_path / "bad.onnx"
    path.write_bytes(data)
    e = _error(str(path))
    assert e.msg.startswith("not an ONNX model")
    assert e.file == str(path)
    assert "binary ONNX model" in e.hint


def test_loop_rejected(tmp_path):
    e = _error(M.save(M.loop(), tmp_path / "loop.onnx"))
    assert e.msg == ("node 'loop' (Loop) holds a subgraph in attribute 'body'; "
                     "control flow (If/Loop/Scan) cannot be planned statically")
    assert e.field == "graph.node[0]"


def test_if_rejected(tmp_path):
    branch = M.helper.make_graph([M.node("Identity", ["x"], ["z"], "i")], "b", [], [M.vi("z", [2])])
    m = M.model([M.node("If", ["c"], ["y"], "if", then_branch=branch, else_branch=branch)],
                [M.vi("x", [2]), M.vi("c", [], M.TensorProto.BOOL)], [M.vi("y", [2])])
    e = _error(M.save(m, tmp_path / "if.onnx"))
    assert e.msg.startswith("node 'if' (If) holds a subgraph in attribute 'else_branch'")  # attrs sorted by name


def test_checker_failure(tmp_path):
    m = M.model([M.node("Relu", ["x", "extra"], ["y"], "r")], [M.vi("x", [4])], [M.vi("y", [4])])
    e = _error(M.save(m, tmp_path / "bad.onnx"))
    assert e.msg.startswith("the ONNX checker rejects the model")


# --- shapes ---

def _dynamic():
    return M.model([M.node("Relu", ["x"], ["y"], "r")], [M.vi("x", ["N", 16])], [M.vi("y", ["N", 16])])


def test_dynamic_input_needs_pinning(tmp_path):
    path = M.save(_dynamic(), tmp_path / "dyn.onnx")
    e = _error(path)
    assert e.msg == "graph input 'x' has a dynamic shape [N, 16]"
    assert e.field == "graph.input.x"
    assert e.hint.startswith("pin it with --input-shape x=1,16")


def test_pinning_makes_it_static(tmp_path):
    g = onnx_graph.load(M.save(_dynamic(), tmp_path / "dyn.onnx"), [("x", (3, 16))])
    assert g.types["x"].shape == (3, 16)
    assert g.types["y"].shape == (3, 16)


def test_unknown_input_name(tmp_path):
    e = _error(M.save(_dynamic(), tmp_path / "dyn.onnx"), (("data", (1, 16)),))
    assert e.msg == "the model has no graph input 'data'"
    assert e.hint == "valid inputs: x"


@pytest.mark.parametrize("shape, words", [((1, 16, 1), "rank 2"), ((2, 15), "dim 1 is 16")])
def test_pin_must_agree(tmp_path, shape, words):
    e = _error(M.save(_dynamic(), tmp_path / "dyn.onnx"), (("x", shape),))
    assert words in e.msg


def test_dynamic_intermediate(tmp_path):
    # Reshape to a runtime-valued target: no static shape even with static inputs.
    m = M.model([M.node("Reshape", ["x", "s"], ["y"], "reshape")],
                [M.vi("x", [2, 6]), M.vi("s", [2], M.INT64)], [M.vi("y", ["a", "b"])])
    e = _error(M.save(m, tmp_path / "r.onnx"))
    assert e.msg == "output 'y' of node 'reshape' (Reshape) has a dynamic shape [a, b] after shape inference"
    assert e.field == "graph.node[0]"
    assert "static shapes" in e.hint


# --- order and names ---

def test_non_topological_order_is_sorted_stably(tmp_path):
    m = M.model([M.node("Relu", ["a"], ["b"], "second"),
                 M.node("Neg", ["x"], ["a"], "first"),
                 M.node("Abs", ["x"], ["c"], "third")],
                [M.vi("x", [4])], [M.vi("b", [4]), M.vi("c", [4])])
    g = onnx_graph.load(M.save(m, tmp_path / "o.onnx"))
    assert g.schedule == (1, 0, 2)


def test_empty_and_duplicate_names_become_stable(tmp_path):
    nodes = [M.node("Relu", ["x"], ["a"], "dup"), M.node("Neg", ["a"], ["b"], "dup"),
             M.node("Abs", ["b"], ["c"], "ok")]
    nodes.append(M.node("Relu", ["c"], ["d"], "x"))
    nodes[3].name = ""
    m = M.model(nodes, [M.vi("x", [4])], [M.vi("d", [4])])
    g = onnx_graph.load(M.save(m, tmp_path / "n.onnx"))
    assert [n.name for n in g.nodes] == ["dup_0", "dup_1", "ok", "Relu_3"]


def test_dropout_mask_is_typed(tmp_path):
    m = M.model([M.node("Dropout", ["x"], ["y", "mask"], "drop")], [M.vi("x", [2, 4])], [M.vi("y", [2, 4])],
                opset=9)
    g = onnx_graph.load(M.save(m, tmp_path / "d.onnx"))
    assert g.types["mask"].shape == (2, 4) and g.types["mask"].dtype == "float32"


# --- external data ---

def test_absent_external_data_still_loads(tmp_path):
    path = M.save(M.chain(), tmp_path / "ext.onnx", save_as_external_data=True, all_tensors_to_one_file=True,
                  location="ext.data", size_threshold=0)
    os.remove(tmp_path / "ext.data")
    g = onnx_graph.load(path)
    assert [g.nodes[i].op_type for i in g.schedule] == ["MatMul"] * 3
    assert {w.name: w.shape for w in g.weights} == {"W0": (16, 24), "W1": (24, 24), "W2": (24, 8)}
    assert g.types["T3"].shape == (64, 8)


def test_initializer_inputs_are_weights(tmp_path):
    # IR 3 style: the initializer is also listed as a graph input.
    m = M.chain()
    m.graph.input.extend([M.vi("W0", [16, 24]), M.vi("W1", [24, 24]), M.vi("W2", [24, 8])])
    m.ir_version = 3
    g = onnx_graph.load(M.save(m, tmp_path / "ir3.onnx"))
    assert g.inputs == ("T0",)
    assert "W0" not in g.types and [w.name for w in g.weights] == ["W0", "W1", "W2"]
