"""verify replays a plan in one bytearray and names the first clobbered tensor.

A deliberately corrupted plan (the first op's output moved onto its live
input) is named by verify and makes the firmware compute a wrong answer,
while the untouched plan verifies and computes the right one.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from conftest import require_tool

import fwbuild
from arena_tool.plan import planfile, planners
from arena_tool.run import qemu, verify

EXAMPLES = ("kws", "resnet8", "autoencoder", "kws_int8")
PLANNERS = [p for p in ("naive", "first_fit", "greedy_size", "optimal") if p in planners.PLANNERS]


def model(name: str) -> str:
    return str(fwbuild.MODELS / f"{name}.onnx")


@pytest.mark.parametrize("planner", PLANNERS)
@pytest.mark.parametrize("name", EXAMPLES)
def test_valid_plans_verify(name, planner):
    r = verify.verify(model(name), fwbuild.plan(model(name), planner))
    assert r.ok, r.message
    assert r.clobbered is None and r.reads > 0


@pytest.mark.parametrize("name", EXAMPLES)
def test_corrupted_plan_names_the_clobbered_tensor_and_op(name):
    bad, victim, culprit, op = fwbuild.corrupt(fwbuild.plan(model(name), PLANNERS[-1]))
    r = verify.verify(model(name), bad)
    assert not r.ok
    assert (r.clobbered, r.writer, r.writer_op) == (victim, culprit, op), r.message
    assert victim in r.message and op in r.message


def test_clobber_by_an_earlier_op_is_found_when_read():
    """A tensor overwritten by a later op while still live (not by its own reader)."""
    doc = fwbuild.plan(model("resnet8"), "naive").to_json()  # edited below as a file would be
    # resnet8 has a residual Add: its skip input is live across several ops.
    add = next(s for s in doc["schedule"] if s["op_type"] == "Add")
    bufs = {b["name"]: b for b in doc["buffers"]}
    skip = min((n for n in add["inputs"] if n in bufs), key=lambda n: bufs[n]["first_op"])
    first = bufs[skip]["first_op"]
    # the first op after the skip's producer (and not its reader) that starts a new buffer
    step = next(s for s in doc["schedule"][first + 1:]
                if bufs[s["outputs"][0]]["alias_of"] is None and skip not in s["inputs"])
    out = step["outputs"][0]
    root = out
    for b in doc["buffers"]:
        if (b["alias_of"] or b["name"]) == root:
            b["offset"] = bufs[skip]["offset"]
    doc["arena_size"] = max(b["offset"] + b["size"] for b in doc["buffers"])
    r = verify.verify(model("resnet8"), planfile.PlanFile.from_json(doc))
    assert not r.ok
    assert r.clobbered == skip
    assert r.writer_op == (step["name"] or out)
    assert r.reader_op is not None


def test_in_place_and_view_aliases_are_not_clobbers():
    plan = fwbuild.plan(model("kws"), "naive")
    assert any(b.alias_of for b in plan.buffers)  # kws has in-place Clip/Relu
    assert verify.verify(model("kws"), plan).ok


def test_tensor_outside_the_arena_is_an_error():
    bad = fwbuild.edited(fwbuild.plan(model("autoencoder"), "naive"),
                         lambda d: d["buffers"][-1].update(offset=d["arena_size"]))
    with pytest.raises(verify.ArenaError, match="outside the arena"):
        verify.verify(model("autoencoder"), bad)


def test_main_verify_exit_codes(tmp_path, capsys):
    doc = fwbuild.plan(model("kws"), PLANNERS[-1])
    good, bad_path = tmp_path / "good.json", tmp_path / "bad.json"
    planfile.write(str(good), doc)
    bad, victim, _, op = fwbuild.corrupt(doc)
    planfile.write(str(bad_path), bad)
    assert verify.main_verify(model("kws"), str(good)) == 0
    assert "ok:" in capsys.readouterr().out
    assert verify.main_verify(model("kws"), str(bad_path)) == 1
    err = capsys.readouterr().err
    assert victim in err and op in err
    assert verify.main_verify(model("kws"), str(tmp_path / "missing.json")) == 2


def test_input_pattern_is_main_c_fill_input():
    """The Python twin of main.c's pattern: spot values computed by hand."""
    x = verify.input_pattern((3,), "float32")
    # i=0: 13 % 251 = 13 -> 13/125 - 1; i=1: 7932 % 251 = 151; i=2: 15851 % 251 = 38
    assert x.tolist() == [np.float32(13) / np.float32(125) - np.float32(1),
                          np.float32(151) / np.float32(125) - np.float32(1),
                          np.float32(38) / np.float32(125) - np.float32(1)]
    assert verify.input_pattern((2,), "int8", which=1).tolist() == [(13 + 101) % 251 - 125, (7932 + 101) % 251 - 125]


@pytest.mark.parametrize("target", ["host", "qemu"])
def test_corrupted_plan_is_named_by_verify_and_gives_wrong_firmware_output(tmp_path, target):
    """End to end, on the host (ASan/UBSan build) and in QEMU (mps2-an500): a plan with two live
    tensors overlapped is named by verify and the firmware built from it computes a wrong answer;
    the untouched plan verifies and computes ONNX Runtime's answer."""
    if target == "qemu":
        require_tool("arm-none-eabi-gcc")
        require_tool("qemu-system-arm")
    path = model("kws")
    doc = fwbuild.plan(path, PLANNERS[-1])
    bad, victim, culprit, op = fwbuild.corrupt(doc)
    assert verify.verify(path, doc).ok
    r = verify.verify(path, bad)
    assert not r.ok and (r.clobbered, r.writer, r.writer_op) == (victim, culprit, op), r.message
    want = verify.reference(path, doc)["scores"].reshape(-1)
    results = {}
    for label, d in (("good", doc), ("bad", bad)):
        out = tmp_path / label
        gen = fwbuild.generate(out, [("kws", path, d)], "mps2_an500")
        if target == "host":
            rc, text = fwbuild.run_host(fwbuild.build_host(out, gen))
        else:
            elf = fwbuild.build_elf(out, gen, "mps2_an500", d.arena_size)
            rc, text = qemu.run(str(elf), "mps2-an500", timeout=60)
        run = verify.parse_output(text)
        if label == "bad" and run.status.get("kws"):
            continue  # a kernel that sees the overlap refuses it (in-place depthwise without its workspace)
        assert rc == 0, text[-2000:]  # the overlap breaks the answer, not the program
        results[label] = run.outputs["kws"]["scores"]
    assert np.allclose(results["good"], want, rtol=1e-4, atol=1e-5)
    if "bad" in results:
        assert not np.allclose(results["bad"], want, rtol=1e-2, atol=1e-3), (results["bad"], want)


def test_parse_output_reads_main_c_lines():
    text = ("model m\nticks m 42\noutput y float32 2\n0 0x3f800000 1.000000\n1 0xbf800000 -1.000000\n"
            "output q int8 1\n0 -5\nstatus m 0\nqemu noise\nop m 0 17\nop m 1 3\n")
    run = verify.parse_output(text)
    assert run.outputs["m"]["y"].tolist() == [1.0, -1.0]
    assert run.outputs["m"]["q"].tolist() == [-5]
    assert run.status == {"m": 0} and run.ticks == {"m": 42}
    assert run.op_ticks == {"m": {0: 17, 1: 3}}  # a -DARENA_PROFILE build's per-op lines
    assert onnx  # the module is used by the fixtures' models


def test_the_extras_name_what_run_and_verify_need(monkeypatch: pytest.MonkeyPatch) -> None:
    """pip install 'arena-tool[run]' / '[verify]' bring the reference executors and no test tool;
    without onnxruntime each command names its extra (one line, exit 2)."""
    import sys
    import tomllib
    from pathlib import Path

    from arena_tool.core.errors import ArenaError
    from arena_tool.run import firmware

    extras = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    names = {k: {d.split(">")[0].split("=")[0].strip() for d in v} for k, v in extras.items()}
    assert names["run"] == {"onnxruntime"} and names["verify"] == {"onnxruntime", "ai-edge-litert"}
    assert names["validate"] == {"onnxruntime", "pyserial"}
    assert names["run"] | names["verify"] | names["validate"] <= names["test"]  # the tests run every command
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import onnxruntime fails as if absent
    path = model("kws")
    with pytest.raises(ArenaError) as e:
        verify.reference(path, fwbuild.plan(path, "greedy_size"))
    assert "arena-tool[verify]" in (e.value.hint or "") and e.value.exit_code == 2
    with pytest.raises(ArenaError) as e:
        firmware.reference(path, {}, [])
    assert "arena-tool[run]" in (e.value.hint or "") and e.value.exit_code == 2
