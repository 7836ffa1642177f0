"""int8 model I/O (``io: int8``): a quantized model's boundary QuantizeLinear/DequantizeLinear
removed, so the firmware takes and gives the integer tensors, the header states their scale and
zero point, and ``arena-tool run`` quantizes the float input as the model does and compares the
integers exactly and the dequantized outputs with the model's."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import onnx
import pytest
from conftest import ROOT, absent, require_shared, require_tool
from onnx import TensorProto, helper, numpy_helper

import quantized as Q
import zoo
from arena_tool import cli
from arena_tool.core.errors import ArenaError
from arena_tool.core.problem import ModelOptions
from arena_tool.emit import codegen
from arena_tool.model import lowering
from arena_tool.plan import plancheck, planners, planning
from arena_tool.run import firmware

MLPERF = Path(Q.MLPERF_DIR)
VWW_INT8 = MLPERF / "visual_wake_words__vww_96_float_tflite2onnx_int8.onnx"
RESNET_INT8 = MLPERF / "image_classification__pretrainedResnet_tflite2onnx_int8.onnx"
KWS_INT8 = ROOT / "example_firmware" / "models" / "kws_int8.onnx"
INT8 = ModelOptions(io="int8")
PARAMS = planners.Params(time_limit=2.0)
needs_mlperf = pytest.mark.skipif(absent(VWW_INT8), reason=f"{MLPERF} is absent (set ARENA_SHARED)")


def _arena(path: Path | str, options: ModelOptions = ModelOptions()) -> int:
    return planning.plan_model(str(path), options, "optimal", PARAMS).plan.arena_size


def _zoo_twin(name: str, fmt: str, cache: Path) -> Path:
    src = cache / f"{name}.onnx"
    if not src.exists():
        onnx.save(zoo.build(name), str(src))
    return Q.quantized(src, fmt, True, cache)


def _int8_models(qcache: Path) -> list[tuple[str, Path]]:
    """Every int8 model of the zoo and MLPerf Tiny, QDQ and QOperator (per channel), and the
    shipped MLPerf int8 ONNX files."""
    out = [(f"{n}-{fmt}", _zoo_twin(n, fmt, qcache)) for n in zoo.NAMES for fmt in Q.FORMATS]
    out += [(f"{p.stem.split('__')[-1][:20]}-{fmt}", Q.quantized(p, fmt, True, qcache))
            for p in Q.mlperf_float_models() for fmt in Q.FORMATS]
    out += [(p.stem, p) for p in (VWW_INT8, RESNET_INT8) if p.exists()]
    return out


# --- the floors ------------------------------------------------------------------------------

@needs_mlperf
def test_vww_int8_qdq_drops_its_float_input():
    assert _arena(VWW_INT8) == 138_240
    assert _arena(VWW_INT8, INT8) <= 55_296


def test_mobilenet_v2_int8_floor(qcache):
    path = _zoo_twin("mobilenet_v2", "qdq", qcache)
    assert _arena(path, INT8) <= 129_024 < _arena(path)


def test_no_int8_model_is_above_its_model_io_plan(qcache):
    for name, path in _int8_models(qcache):
        model, int8 = _arena(path), _arena(path, INT8)
        assert int8 <= model, (name, model, int8)


# --- what the plan and the tables hold ---------------------------------------------------------

def test_the_integers_are_the_graph_inputs_and_outputs():
    lw = lowering.load(str(KWS_INT8))
    ins, outs = lowering.boundary(lw)
    low = lowering.integer_io(lw)
    assert low.inputs == tuple(b.integer for b in ins) and low.outputs == tuple(b.integer for b in outs)
    assert all(low.types[n].dtype == "int8" for n in (*low.inputs, *low.outputs))
    assert len(low.ops) == len(lw.ops) - len(ins) - len(outs)
    assert not {"QuantizeLinear", "DequantizeLinear"} & {op.op_type for op in low.ops}
    for b in (*ins, *outs):
        assert b.model not in low.types and len(b.quant.scale) == 1


def test_the_plan_states_io_int8_and_check_and_verify_accept_it(tmp_path):
    out = tmp_path / "p.json"
    assert cli.main(["plan", str(KWS_INT8), "--io", "int8", "-o", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["options"]["io"] == "int8"
    kinds = {b["name"]: (b["kind"], b["dtype"]) for b in doc["buffers"] if b["kind"] in ("input", "output")}
    assert set(kinds.values()) == {("input", "int8"), ("output", "int8")}
    assert cli.main(["check", str(KWS_INT8), str(out)]) == 0
    assert cli.main(["verify", str(KWS_INT8), str(out)]) == 0
    # the same plan checked as io: model does not match the model
    doc["options"]["io"] = "model"
    out.write_text(json.dumps(doc))
    assert cli.main(["check", str(KWS_INT8), str(out)]) == 1


def test_default_options_write_no_io_keys():
    assert "io" not in ModelOptions().to_doc()
    assert ModelOptions.from_doc(INT8.to_doc()) == INT8


def test_the_header_carries_scale_zero_point_and_helpers():
    pm = planning.plan_model(str(KWS_INT8), INT8, "optimal", PARAMS)
    low = plancheck.lowered_model(str(KWS_INT8), pm.plan_file)
    header, _ = codegen.model_sources(pm.plan_file, low, "kws_int8")
    by_name = pm.plan_file.by_name
    q_in, q_out = by_name[low.inputs[0]].quant, by_name[low.outputs[0]].quant
    assert f"#define KWS_INT8_INPUT0_SCALE {codegen.c_float(q_in.scale[0])}" in header
    assert f"#define KWS_INT8_INPUT0_ZERO_POINT {q_in.zero_point[0]}" in header
    assert f"#define KWS_INT8_OUTPUT0_ZERO_POINT {q_out.zero_point[0]}" in header
    assert "static inline int8_t kws_int8_quantize_input0(float x)" in header
    assert "static inline float kws_int8_dequantize_output0(int8_t q)" in header
    ids = codegen.header_ids("kws_int8", pm.plan_file)
    assert {"KWS_INT8_INPUT0_SCALE", "kws_int8_quantize_input0", "kws_int8_dequantize_output0"} <= set(ids)
    default = planning.plan_model(str(KWS_INT8), ModelOptions(), "optimal", PARAMS)
    plain, _ = codegen.model_sources(default.plan_file, plancheck.lowered_model(str(KWS_INT8), default.plan_file),
                                     "kws_int8")
    assert "INPUT0_SCALE" not in plain and "_quantize_input0" not in plain


def test_quantize_is_onnxruntimes_quantize_linear():
    import onnxruntime as ort

    scale, zp = np.float32(0.0392157), -3
    x = np.concatenate([np.arange(-400, 400, dtype=np.float32) * scale / 2,  # every tie
                        np.array([np.inf, -np.inf, 1e30, -1e30, 0.0, -0.0], np.float32),
                        np.random.default_rng(0).normal(0, 3, 2000).astype(np.float32)])
    node = helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"])
    g = helper.make_graph([node], "q", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [x.size])],
                          [helper.make_tensor_value_info("y", TensorProto.INT8, [x.size])],
                          [numpy_helper.from_array(np.array(scale), "s"), numpy_helper.from_array(np.array(zp, np.int8), "z")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    assert np.array_equal(firmware.quantize(x, "int8", float(scale), zp), want)
    q = np.arange(-128, 128, dtype=np.int8)
    assert np.array_equal(firmware.dequantize(q, float(scale), zp), (q.astype(np.float32) - zp) * scale)


# --- refusals ----------------------------------------------------------------------------------

def test_a_float_model_with_io_int8_names_the_input_and_the_fix(capsys):
    rc = cli.main(["plan", str(ROOT / "example_firmware" / "models" / "kws.onnx"), "--io", "int8"])
    err = capsys.readouterr().err
    assert rc == 2
    assert "input 'input' (float32) is not quantized at the boundary" in err and "quantize_static" in err
    assert "Traceback" not in err


def _half_quantized(tmp_path: Path) -> Path:
    """x feeds a QuantizeLinear and, beside it, a float Relu: x's quantization is not at the boundary."""
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["xd"]),
             helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("Add", ["xd", "r"], ["y"])]
    g = helper.make_graph(nodes, "half", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])],
                          [numpy_helper.from_array(np.array(0.1, np.float32), "s"),
                           numpy_helper.from_array(np.array(0, np.int8), "z")])
    path = tmp_path / "half.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    return path


def test_an_input_quantized_inside_the_graph_is_refused(tmp_path, capsys):
    path = _half_quantized(tmp_path)
    with pytest.raises(ArenaError) as e:
        planning.plan_model(str(path), INT8, "optimal", PARAMS)
    assert e.value.field == "io" and "'x'" in e.value.msg and "Relu" in e.value.msg
    assert cli.main(["plan", str(path), "--io", "int8"]) == 2
    assert "not quantized at the boundary" in capsys.readouterr().err


def test_a_tflite_model_with_io_int8_is_refused(capsys):
    tfl = MLPERF / "visual_wake_words__vww_96_int8.tflite"
    require_shared(tfl)
    assert cli.main(["plan", str(tfl), "--io", "int8"]) == 2
    assert "applies to ONNX models" in capsys.readouterr().err


def test_the_manifest_takes_io(tmp_path):
    from arena_tool.target import manifest

    (tmp_path / "m.onnx").write_bytes(KWS_INT8.read_bytes())
    (tmp_path / "arena.yaml").write_text("defaults: {io: int8}\nmodels:\n  - {name: a, path: m.onnx}\n"
                                         "  - {name: b, path: m.onnx, io: model}\nboards: [mps2_an500]\n")
    m = manifest.load(str(tmp_path / "arena.yaml"))
    assert [s.options.io for s in m.models] == ["int8", "model"]
    (tmp_path / "arena.yaml").write_text("models:\n  - {name: a, path: m.onnx, io: int16}\nboards: [mps2_an500]\n")
    with pytest.raises(ArenaError) as e:
        manifest.load(str(tmp_path / "arena.yaml"))
    assert "io" in str(e.value)


# --- the firmware: host and QEMU equal onnxruntime ----------------------------------------------

def _run(path: Path, board: str, tmp_path: Path, extra: tuple[str, ...] = ()) -> dict:
    report = tmp_path / f"{path.stem}-{board}.json"
    rc = cli.main(["run", str(path), "--board", board, "--io", "int8", *extra, "--json", str(report)])
    doc = json.loads(report.read_text())
    assert rc == 0, doc
    return doc


def _exact(doc: dict) -> None:
    """Integer outputs equal onnxruntime's; each dequantized output is the model's float output."""
    outs = doc["outputs"]
    ints = [o for o in outs if o["dtype"] in ("int8", "uint8")]
    floats = [o for o in outs if o["dtype"] == "float32"]
    assert ints and len(floats) == len(ints), outs
    assert all(o["max_abs_error"] == 0 and o["ok"] for o in outs), outs


def test_every_int8_model_runs_on_the_host_like_onnxruntime(qcache, tmp_path):
    require_tool("gcc")
    for name, path in _int8_models(qcache):
        _exact(_run(path, "host", tmp_path))


def test_int8_models_run_on_qemu_like_onnxruntime(qcache, tmp_path):
    require_tool("arm-none-eabi-gcc")
    require_tool("qemu-system-arm")
    models = [_zoo_twin("mobilenet_v2", "qdq", qcache), _zoo_twin("shufflenet_v2", "qoperator", qcache), KWS_INT8]
    models += [VWW_INT8] if VWW_INT8.exists() else []
    for path in models:
        doc = _run(path, "mps2_an500", tmp_path)
        _exact(doc)
        assert doc["arena_size"] == _arena(path, INT8)


def test_the_header_helpers_compile_and_quantize_like_onnxruntime(tmp_path):
    """The header's inline quantize/dequantize, compiled by gcc, against firmware.quantize."""
    gcc = require_tool("gcc")
    pm = planning.plan_model(str(KWS_INT8), INT8, "optimal", PARAMS)
    low = plancheck.lowered_model(str(KWS_INT8), pm.plan_file)
    header, _ = codegen.model_sources(pm.plan_file, low, "kws_int8")
    (tmp_path / "model_kws_int8.h").write_text(header)
    q = pm.plan_file.by_name[low.inputs[0]].quant
    o = pm.plan_file.by_name[low.outputs[0]].quant
    x = np.concatenate([np.arange(-300, 300, dtype=np.float32) * np.float32(q.scale[0]) / 2,
                        np.random.default_rng(1).normal(0, 4, 500).astype(np.float32)])
    (tmp_path / "x.bin").write_bytes(x.tobytes())
    (tmp_path / "t.c").write_text(
        '#include <stdio.h>\n#include "model_kws_int8.h"\n'
        "int main(void) { float x; int q;\n"
        '  FILE *f = fopen("x.bin", "rb");\n'
        '  while (fread(&x, 4, 1, f) == 1) printf("%d\\n", kws_int8_quantize_input0(x));\n'
        '  for (q = -128; q < 128; q++) printf("%a\\n", kws_int8_dequantize_output0((int8_t)q));\n'
        '  return 0; }\n')
    exe = tmp_path / "t"
    subprocess.run([gcc, "-std=c99", "-Wall", "-Werror", "-O2", "-I", str(tmp_path), "-I",
                    str(firmware.RUNTIME), str(tmp_path / "t.c"), "-o", str(exe)], check=True)
    lines = subprocess.run([str(exe)], cwd=tmp_path, capture_output=True, text=True, check=True).stdout.split()
    got_q = np.array([int(v) for v in lines[:x.size]], np.int8)
    assert np.array_equal(got_q, firmware.quantize(x, "int8", q.scale[0], q.zero_point[0]))
    got_f = np.array([float.fromhex(v) for v in lines[x.size:]], np.float32)
    assert np.array_equal(got_f, firmware.dequantize(np.arange(-128, 128, dtype=np.int8), o.scale[0], o.zero_point[0]))
