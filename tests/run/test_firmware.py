"""`arena-tool run`: a one-model firmware built from the tables, run natively or under QEMU,
compared output by output with onnxruntime (arena_tool/run/firmware.py), through the real CLI."""

from __future__ import annotations

import json
import re
import shutil

import jsonschema
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from conftest import ROOT, require_tool
from onnx import TensorProto, helper

from arena_tool import cli
from arena_tool.run import firmware

MODELS = ROOT / "example_firmware" / "models"
EXAMPLES = ("kws", "resnet8", "autoencoder", "kws_int8")
OUTPUT_LINE = re.compile(r"^output (\S+) (\S+) \[[\d, ]*\]: max abs error (\S+), max rel error (\S+) "
                         r"\(tolerance [^)]*\): (ok|MISMATCH)$", re.MULTILINE)


def model(name: str) -> str:
    return str(MODELS / f"{name}.onnx")


def run(capsys, *argv: str) -> tuple[int, str, str]:
    rc = cli.main(["run", *argv])
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def onnxruntime_outputs(path: str, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(names, feeds)))


def schema() -> dict:
    return json.loads((ROOT / "schemas" / "run.schema.json").read_text())


@pytest.mark.parametrize("name", EXAMPLES)
def test_host_run_of_each_example_matches(capsys, name):
    rc, out, err = run(capsys, model(name), "--board", "host")
    assert rc == 0, out + err
    outputs = onnx.load(model(name)).graph.output
    lines = OUTPUT_LINE.findall(out)
    assert [m[0] for m in lines] == [o.name for o in outputs], out
    for _, _, max_abs, max_rel, verdict in lines:
        assert verdict == "ok" and float(max_abs) >= 0 and float(max_rel) < 1e-4
    assert re.search(r"^arena +[\d,]+ B \(lower bound [\d,]+ B\)$", out, re.MULTILINE)
    assert re.search(r"^instructions +n/a", out, re.MULTILINE)
    assert out.rstrip().endswith("match: every output equals onnxruntime's within its tolerance")


def test_input_npz_round_trip(capsys, tmp_path):
    """The firmware gets exactly the --input arrays: its --output equals onnxruntime's on them."""
    for name in ("kws_int8", "autoencoder"):
        path = model(name)
        rng = np.random.default_rng(1234)
        feeds = {i.name: rng.normal(0, 0.5, [d.dim_value for d in i.type.tensor_type.shape.dim]).astype(np.float32)
                 for i in onnx.load(path).graph.input}
        np.savez(tmp_path / f"{name}_in.npz", **feeds)
        out_npz = tmp_path / f"{name}_out.npz"
        rc, out, err = run(capsys, path, "--board", "host", "--input", str(tmp_path / f"{name}_in.npz"),
                           "--output", str(out_npz))
        assert rc == 0, out + err
        assert f"input {tmp_path / f'{name}_in.npz'}" in out.splitlines()[0]
        want = onnxruntime_outputs(path, feeds)
        with np.load(out_npz) as got:
            assert sorted(got.files) == sorted(want)
            for k, w in want.items():
                g = got[k]
                assert g.shape == w.shape and g.dtype == w.dtype
                step = 0.03125 if name == "kws_int8" else 1e-4 * float(np.max(np.abs(w)))
                assert float(np.max(np.abs(g - w))) <= step * (1 + 1e-6), (name, k)
        # not the firmware's built-in pattern: another input gives other outputs
        rc2, out2, _ = run(capsys, path, "--board", "host", "--input-seed", "5")
        assert rc2 == 0 and OUTPUT_LINE.findall(out2) != [] and out2 != out


@pytest.mark.parametrize("case, field, words", [
    ("missing", "input", "no array for graph input 'input'"),
    ("extra", "inputs", "no graph input named 'inputs'"),
    ("shape", "input", "shape [1, 49, 10], but the model takes [1, 1, 49, 10]"),
    ("dtype", "input", "dtype float64, but the model takes float32"),
    ("npy", "--input", "not an .npz archive"),
    ("text", "--input", "not an .npz archive"),
])
def test_wrong_npz_exits_2_with_one_clear_line(capsys, tmp_path, case, field, words):
    f = tmp_path / "in.npz"
    x = np.zeros((1, 1, 49, 10), np.float32)
    if case == "missing":
        np.savez(f)
    elif case == "extra":
        np.savez(f, inputs=x)
    elif case == "shape":
        np.savez(f, input=x.reshape(1, 49, 10))
    elif case == "dtype":
        np.savez(f, input=x.astype(np.float64))
    elif case == "npy":
        with open(f, "wb") as fh:
            np.save(fh, x)
    else:
        f.write_text("input = 0\n")
    rc, out, err = run(capsys, model("kws"), "--board", "host", "--input", str(f), "--build-dir",
                       str(tmp_path / "build"))
    assert rc == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith(f"arena-tool: {f}: error: {field}: ") and words in lines[0] and "hint:" in lines[0]
    assert not (tmp_path / "build").exists()  # nothing built


def test_op_the_runtime_lacks_exits_1_naming_it(capsys, tmp_path):
    g = helper.make_graph([helper.make_node("Sin", ["x"], ["y"], name="sine")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])])
    path = tmp_path / "sin.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    rc, out, err = run(capsys, str(path), "--board", "host", "--build-dir", str(tmp_path / "build"),
                       "--json", str(tmp_path / "r.json"))
    assert rc == 1
    assert "op 0 'sine' (Sin) cannot run on arena's runtime: the runtime has no kernel for this op" in err
    assert "nothing built" in err and "Traceback" not in err
    assert not (tmp_path / "build").exists()
    doc = json.loads((tmp_path / "r.json").read_text())
    jsonschema.validate(doc, schema())
    assert doc["result"] == "unsupported" and doc["gaps"][0]["op_type"] == "Sin" and doc["outputs"] == []


def test_json_report_validates_against_its_schema(capsys, tmp_path):
    report = tmp_path / "run.json"
    rc, out, err = run(capsys, model("kws_int8"), "--board", "host", "--json", str(report))
    assert rc == 0, out + err
    doc = json.loads(report.read_text())
    jsonschema.Draft202012Validator.check_schema(schema())
    jsonschema.validate(doc, schema())
    assert doc["result"] == "match" and doc["board"] == "host" and doc["machine"] is None
    assert doc["input"] == {"kind": "random", "file": None, "seed": 0}
    assert doc["inputs"] == [{"name": "input", "dtype": "float32", "shape": [1, 1, 49, 10]}]
    assert doc["arena_size"] == 8000 and doc["instructions"] is None and doc["flash"] is None
    (o,) = doc["outputs"]
    assert o["name"] == "logits" and o["tolerance_kind"] == "quantization_step" and o["ok"]
    assert o["quantization_step"] == pytest.approx(0.03125)
    assert str(tmp_path) not in report.read_text().replace(str(report), "")  # no temporary paths


def test_qemu_mps2_an500_counts_instructions_and_matches(capsys, tmp_path):
    require_tool("arm-none-eabi-gcc")
    require_tool("qemu-system-arm")
    report = tmp_path / "run.json"
    rc, out, err = run(capsys, model("kws_int8"), "--board", "mps2_an500", "--json", str(report),
                       "--output", str(tmp_path / "out.npz"))
    assert rc == 0, out + err
    assert "qemu-system-arm -M mps2-an500 -icount shift=0" in out.splitlines()[0]
    insns = int(re.search(r"^instructions +([\d,]+) per inference", out, re.MULTILINE).group(1).replace(",", ""))
    assert insns > 0
    doc = json.loads(report.read_text())
    jsonschema.validate(doc, schema())
    assert doc["instructions"] == insns == doc["ticks"] * 40 and doc["instructions_per_tick"] == 40
    assert doc["flash"] > doc["tables_flash"] > 0 and doc["ram"] >= doc["arena_size"] + firmware.STACK
    assert doc["result"] == "match" and doc["exit_status"] == 0 and doc["machine"] == "mps2-an500"
    with np.load(tmp_path / "out.npz") as z:
        assert z["logits"].shape == (1, 12)


def test_profile_times_every_op_on_qemu(capsys, tmp_path):
    """--profile: one row per op of the tables (instructions from a -DARENA_PROFILE build, MACs from
    the shapes) whose sum is the inference's count less arena_run's own loop, in the table and --json."""
    require_tool("arm-none-eabi-gcc")
    require_tool("qemu-system-arm")
    report = tmp_path / "run.json"
    rc, out, err = run(capsys, model("kws_int8"), "--board", "mps2_an500", "--profile", "--json", str(report),
                       "--build-dir", str(tmp_path / "b"))
    assert rc == 0, out + err
    doc = json.loads(report.read_text())
    jsonschema.validate(doc, schema())
    rows = doc["profile"]
    plan = json.loads(run_plan(tmp_path))
    assert [r["op_type"] for r in rows] == [s["op_type"] for s in plan["schedule"]]
    assert all(r["instructions"] == 40 * r["ticks"] for r in rows)
    ops = sum(r["instructions"] for r in rows)
    assert 0.97 * doc["instructions"] < ops < doc["instructions"]  # the loop and dispatch are outside the ops
    assert sum(r["macs"] for r in rows) == doc["macs"] > 0
    convs = [r for r in rows if r["op_type"] == "QLinearConv"]
    assert convs and all(r["macs"] > 0 and r["instructions_per_mac"] > 0 for r in convs)
    total = re.search(r"^ +total +([\d,]+) +100\.0 % +([\d,]+) ", out, re.MULTILINE)
    assert total and int(total.group(1).replace(",", "")) == ops and int(total.group(2).replace(",", "")) == doc["macs"]
    assert re.search(rf"^MACs +{doc['macs']:,} per inference \([\d.]+ instructions per MAC\)$", out, re.MULTILINE)
    # the hook is only in the profiled build: the normal one (outputs, flash, the count) has none of it
    assert "arena_profile_op" in symbols(tmp_path / "b" / "profile" / "mps2_an500" / "firmware.elf")
    assert "arena_profile_op" not in symbols(tmp_path / "b" / "build" / "mps2_an500" / "firmware.elf")


def symbols(elf) -> set[str]:
    from elftools.elf.elffile import ELFFile

    with open(elf, "rb") as f:
        return {s.name for s in ELFFile(f).get_section_by_name(".symtab").iter_symbols()}


def run_plan(tmp_path) -> str:
    """The plan of kws_int8 as arena-tool plan writes it (the schedule the tables run)."""
    path = tmp_path / "kws_int8.plan.json"
    assert cli.main(["plan", model("kws_int8"), "-o", str(path)]) == 0
    return path.read_text()


def test_profile_needs_a_qemu_board(capsys):
    rc, _, err = run(capsys, model("kws"), "--board", "host", "--profile")
    assert rc == 2 and "--profile" in err and "mps2_an500" in err and len(err.strip().splitlines()) == 1


def test_unknown_board_and_board_without_qemu_exit_2(capsys):
    rc, _, err = run(capsys, model("kws"), "--board", "mps2_an5000")
    assert rc == 2 and "unknown board 'mps2_an5000'" in err and "did you mean 'mps2_an500'" in err
    assert "host" in err and len(err.strip().splitlines()) == 1
    rc, _, err = run(capsys, model("kws"), "--board", "nucleo_f746")
    assert rc == 2 and "nucleo_f746 cannot be emulated" in err
    assert "mps2_an385, mps2_an386, mps2_an500, mps2_an505, mps3_an547" in err and "--board host" in err


def test_missing_cross_tools_exit_2_with_a_hint(capsys, monkeypatch):
    which = shutil.which
    monkeypatch.setattr(firmware.shutil, "which", lambda t: None if t == "qemu-system-arm" else which(t))
    rc, _, err = run(capsys, model("kws"), "--board", "mps2_an500")
    assert rc == 2 and "qemu-system-arm is not on PATH" in err
    assert ".ci/setup" in err and "--board host" in err and "Traceback" not in err


def test_same_input_prints_the_same_numbers(capsys, tmp_path):
    """Same model and input: the same printout, --output bytes and --json document."""
    runs = []
    for k in ("a", "b"):
        runs.append(run(capsys, model("resnet8"), "--board", "host", "--input-seed", "3",
                        "--output", str(tmp_path / f"{k}.npz"), "--json", str(tmp_path / f"{k}.json")))
    (rc_a, out_a, _), (rc_b, out_b, _) = runs
    assert rc_a == rc_b == 0 and out_a.replace("a.", "b.") == out_b
    assert "input seeded random (seed 3)" in out_a and OUTPUT_LINE.search(out_a)
    assert (tmp_path / "a.npz").read_bytes() == (tmp_path / "b.npz").read_bytes()
    assert (tmp_path / "a.json").read_text() == (tmp_path / "b.json").read_text()


def test_mismatch_exits_1(capsys, monkeypatch):
    real = firmware.reference

    def off(path, feeds, names, lowered=None):
        return {n: v + np.float32(0.5) for n, v in real(path, feeds, names, lowered).items()}

    monkeypatch.setattr(firmware, "reference", off)
    rc, out, err = run(capsys, model("kws"), "--board", "host")
    assert rc == 1
    assert re.search(r"^output scores float32 \[1, 12\]: .*: MISMATCH$", out, re.MULTILINE)
    assert "mismatch: output scores differs from onnxruntime's" in err


def test_firmware_that_fails_is_an_arena_bug(capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(firmware, "run_host", lambda exe, timeout=0: (11, "model kws\nerror kws op 2 code 11\n"
                                                                          "status kws 11\n"))
    rc, _, err = run(capsys, model("kws"), "--board", "host", "--json", str(tmp_path / "r.json"))
    assert rc == 3 and "arena_run returned 11" in err and "arena bug" in err
    doc = json.loads((tmp_path / "r.json").read_text())
    jsonschema.validate(doc, schema())
    assert doc["result"] == "firmware_error" and doc["exit_status"] == 11


def _manifest(tmp_path, inputs: str) -> str:
    for name in ("autoencoder", "kws_int8"):
        shutil.copy2(model(name), tmp_path / f"{name}.onnx")
    path = tmp_path / "arena.yaml"
    path.write_text("models:\n  - {name: autoencoder, path: autoencoder.onnx, planner: greedy_size}\n"
                    "  - {name: kws_int8, path: kws_int8.onnx}\n" + inputs + "boards: [mps2_an500]\n")
    return str(path)


def test_run_a_manifest_runs_every_model_on_its_inputs(capsys, tmp_path):
    """arena-tool run MANIFEST: each model with its options, autoencoder on the manifest's
    inputs: sample (its outputs onnxruntime's on them), kws_int8 on the seeded random input."""
    path = model("autoencoder")
    rng = np.random.default_rng(7)
    feeds = {i.name: rng.normal(0, 0.5, [d.dim_value for d in i.type.tensor_type.shape.dim]).astype(np.float32)
             for i in onnx.load(path).graph.input}
    np.savez(tmp_path / "ae_in.npz", **feeds)
    rc, out, err = run(capsys, _manifest(tmp_path, "inputs: {autoencoder: ae_in.npz}\n"), "--board", "host")
    assert rc == 0, out + err
    assert f"run autoencoder: {tmp_path / 'autoencoder.onnx'}, input {tmp_path / 'ae_in.npz'}" in out
    assert "run kws_int8:" in out and "seeded random input (seed 0)" in out
    assert out.rstrip().endswith("run: 2 models on host: autoencoder match, kws_int8 match")
    assert len(OUTPUT_LINE.findall(out)) >= 2 and all(m[4] == "ok" for m in OUTPUT_LINE.findall(out))


def test_run_a_manifest_refuses_what_is_the_manifests(capsys, tmp_path):
    """A model flag with a manifest, or inputs: naming no model, is one line, exit 2 (nothing built)."""
    rc, out, err = run(capsys, _manifest(tmp_path, "inputs: {autoencodr: x.npz}\n"), "--board", "host")
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "did you mean 'autoencoder'" in err, err
    rc, out, err = run(capsys, _manifest(tmp_path, ""), "--board", "host", "--planner", "naive")
    assert rc == 2 and "--planner does not apply to a manifest" in err and out == "", err
