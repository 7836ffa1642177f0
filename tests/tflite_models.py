"""Tiny .tflite models for tests, built with the tflite-micro wheel's flatbuffer object API
(no files shipped), and where the MLPerf Tiny models are on this machine."""

from __future__ import annotations

from pathlib import Path

import flatbuffers
import numpy as np

from arena_tool.cli import main
from arena_tool.model import tflite_model

fb = tflite_model.schema()

from shared_paths import MLPERF  # noqa: E402  (ARENA_SHARED or ../shared)

KWS_HYBRID = "keyword_spotting__kws_ref_model_float32.tflite"  # the MLPerf model TFLM refuses: hybrid


def build(tensors, ops, inputs, outputs, subgraphs=1):
    """tensors: (name, TensorType name, shape, data or None[, shape_signature]); ops: (OP, ins, outs[, options])."""
    m = fb.ModelT()
    m.version = 3
    m.buffers = [fb.BufferT()]
    sg = fb.SubGraphT()
    sg.tensors, sg.operators = [], []
    for name, tname, shape, data, *sig in tensors:
        t = fb.TensorT()
        t.name, t.type, t.shape = name, getattr(fb.TensorType, tname), np.array(shape, np.int32)
        if sig:
            t.shapeSignature = np.array(sig[0], np.int32)
        t.buffer = 0
        if data is not None:
            b = fb.BufferT()
            b.data = np.frombuffer(np.ascontiguousarray(data).tobytes(), np.uint8).copy()
            m.buffers.append(b)
            t.buffer = len(m.buffers) - 1
        sg.tensors.append(t)
    codes: list[int] = []
    for opname, ins, outs, *options in ops:
        c = getattr(fb.BuiltinOperator, opname)
        codes += [c] if c not in codes else []
        op = fb.OperatorT()
        op.opcodeIndex, op.inputs, op.outputs = codes.index(c), np.array(ins, np.int32), np.array(outs, np.int32)
        if options:
            op.builtinOptionsType, op.builtinOptions = options[0]
        sg.operators.append(op)
    m.operatorCodes = []
    for c in codes:
        oc = fb.OperatorCodeT()
        oc.builtinCode, oc.deprecatedBuiltinCode, oc.version = c, min(c, 127), 1
        m.operatorCodes.append(oc)
    sg.inputs, sg.outputs = np.array(inputs, np.int32), np.array(outputs, np.int32)
    m.subgraphs = [sg]
    for _ in range(subgraphs - 1):
        s = fb.SubGraphT()
        s.tensors, s.operators, s.inputs, s.outputs = [], [], np.array([], np.int32), np.array([], np.int32)
        m.subgraphs.append(s)
    b = flatbuffers.Builder(1024)
    b.Finish(m.Pack(b), file_identifier=b"TFL3")
    return bytes(b.Output())


def opts(kind):
    return getattr(fb.BuiltinOptions, kind), getattr(fb, kind + "T")()


C1 = np.linspace(-1, 1, 16, dtype=np.float32).reshape(1, 16)
C2 = np.linspace(2, 3, 16, dtype=np.float32).reshape(1, 16)


def branch_model():
    """x -> a = x + c1 (op 0); x -> b = x * c2 (op 1); y = a + b (op 2): ops 0 and 1 are independent."""
    return build([("x", "FLOAT32", [1, 16], None), ("c1", "FLOAT32", [1, 16], C1), ("c2", "FLOAT32", [1, 16], C2),
                  ("a", "FLOAT32", [1, 16], None), ("b", "FLOAT32", [1, 16], None), ("y", "FLOAT32", [1, 16], None)],
                 [("ADD", [0, 1], [3], opts("AddOptions")), ("MUL", [0, 2], [4], opts("MulOptions")),
                  ("ADD", [3, 4], [5], opts("AddOptions"))], [0], [5])


def chain_model():
    """a = x + c1; b = a * c2; y = b + x: x must survive a and b."""
    return build([("x", "FLOAT32", [1, 16], None), ("c1", "FLOAT32", [1, 16], C1), ("c2", "FLOAT32", [1, 16], C2),
                  ("a", "FLOAT32", [1, 16], None), ("b", "FLOAT32", [1, 16], None), ("y", "FLOAT32", [1, 16], None)],
                 [("ADD", [0, 1], [3], opts("AddOptions")), ("MUL", [3, 2], [4], opts("MulOptions")),
                  ("ADD", [4, 0], [5], opts("AddOptions"))], [0], [5])


def relu_model(rank=2, outputs=None):
    """x -> RELU -> y (float32 [1, 16]) as a ModelT to edit."""
    m = fb.ModelT()
    m.version = 3
    m.buffers = [fb.BufferT()]
    sg = fb.SubGraphT()
    shape = [1] * (rank - 1) + [16]
    sg.tensors = []
    for name in ("x", "y"):
        t = fb.TensorT()
        t.name, t.type, t.shape, t.buffer = name, fb.TensorType.FLOAT32, np.array(shape, np.int32), 0
        sg.tensors.append(t)
    op = fb.OperatorT()
    op.opcodeIndex, op.inputs, op.outputs = 0, np.array([0], np.int32), np.array([1], np.int32)
    sg.operators = [op]
    sg.inputs = np.array([0], np.int32)
    sg.outputs = np.array([1] if outputs is None else outputs, np.int32)
    oc = fb.OperatorCodeT()
    oc.builtinCode = oc.deprecatedBuiltinCode = fb.BuiltinOperator.RELU
    oc.version = 1
    m.operatorCodes = [oc]
    m.subgraphs = [sg]
    return m


def pack(m) -> bytes:
    import flatbuffers

    b = flatbuffers.Builder(1024)
    b.Finish(m.Pack(b), file_identifier=b"TFL3")
    return bytes(b.Output())


def save(tmp_path: Path, name: str, data: bytes) -> str:
    """Write model bytes to tmp_path/name; the path as a string."""
    p = tmp_path / name
    p.write_bytes(data)
    return str(p)


def run(capsys, *argv):
    """arena-tool with ``argv``: (exit code, stdout, stderr)."""
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err
