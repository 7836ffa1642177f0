"""In-place depthwise convolution (TinyEngine's scheme, issue 13 item 2) in the C runtime.

A depthwise Conv / QLinearConv (group == C == M, 2-D) whose input dies there may be planned
with its output at the input's very offset and a one-channel workspace (H*W elements of the
input's type). The kernels (depthwise_f32.c via conv_f32.c, qlinear_conv_q8.c) then copy input channel
i = n*C + ch to the workspace and compute output channel i from the copy, in increasing i:
output channel i's bytes never reach an input channel above i.

Kernel level (any planner): plans made without the alias are edited by hand (make_in_place:
the dw input's and output's alias groups moved to one fresh slot at the arena's end, a
scratch buffer for the step), for float and int8 (QOperator int8 and uint8, quantize_static
QDQ) with stride 1 and 2, symmetric and asymmetric padding, dilation, no bias, batch 1 and 2.
Each in-place run must give the bits of the same tables run without the alias, and
onnxruntime's values (float32 within 1e-4 of the output's largest magnitude, int8 within one
step). Broken in-place plans (no workspace, one too small, x and y partly overlapping, the
workspace over the input, an output larger than its input) stop with a status, not garbage.

Planner level: every zoo model with a depthwise layer, float and int8 (QDQ, per-channel),
planned with the defaults (in-place depthwise on: the planner's own aliases, at least one
depthwise conv in place per model) and planned without them, every depthwise conv then made in
place by hand, runs on the host like onnxruntime. MobileNetV2 (zoo.mobilenet_v2, a ~0.35-width
net) float and int8 also run on QEMU (mps2_an386) with the planner's plan.
"""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from conftest import require_tool
from onnx import TensorProto, helper, numpy_helper

import fwbuild
import quantized as Q
from arena_tool.model import lowering
from arena_tool.plan import plancheck, planfile, planners
from arena_tool.run import firmware, verify
from arena_tool.plan.planfile import PlanFile
from arena_tool.core.problem import ModelOptions

PLANNER = "greedy_size" if "greedy_size" in planners.PLANNERS else "naive"
ARENA_ERR_SHAPE, ARENA_ERR_BOUNDS = 11, 12
DW_ZOO = ("mobilenet_v1", "mobilenet_v2", "mobilenet_v3", "mnasnet", "efficientnet")
RTOL = 1e-4


def _options(inplace_depthwise: bool) -> ModelOptions:
    try:
        return ModelOptions(inplace_depthwise=inplace_depthwise)
    except TypeError:  # a tree without the option: no planner alias to turn off
        return ModelOptions()


# --- plans ------------------------------------------------------------------------------

def depthwise_steps(path: str, plan: PlanFile) -> list[int]:
    """Schedule positions of the depthwise convs that may work in place: Conv or QLinearConv,
    2-D, group == C == M > 1, output elements <= input elements, input and output of one width."""
    low = plancheck.lowered_model(path, plan)
    bufs = plan.by_name
    out = []
    for k, (step, op) in enumerate(zip(plan.schedule, low.ops)):
        if step.op_type not in ("Conv", "QLinearConv") or not step.inputs:
            continue
        x, y = bufs.get(step.inputs[0]), bufs.get(step.outputs[0])
        if x is None or y is None or len(x.shape) != 4 or len(y.shape) != 4:
            continue
        c, m = x.shape[1], y.shape[1]
        if int(op.attrs.get("group", 1)) == c == m > 1 and y.elements <= x.elements and y.dtype == x.dtype:
            out.append(k)
    return out


def _root(bufs: dict[str, dict[str, Any]], name: str) -> str:
    return bufs[name]["alias_of"] or name


def in_place_steps(path: str, plan: PlanFile) -> list[int]:
    """The depthwise steps the plan runs in place: output at the input's offset, a workspace."""
    off = plan.offsets()
    return [k for k in depthwise_steps(path, plan)
            if off[plan.schedule[k].inputs[0]] == off[plan.schedule[k].outputs[0]] and plan.schedule[k].workspace]


def make_in_place(plan: PlanFile, steps: list[int], *, ws_elements: int | None = None, y_shift: int = 0,
                  ws_over_input: bool = False, no_workspace: bool = False) -> PlanFile:
    """``plan`` edited by hand (its document) so that each of ``steps`` (depthwise convs) writes its output over its
    input: both alias groups move to one fresh slot at the end of the arena (nothing else is
    ever there, so no other tensor is disturbed) and the step gets a scratch buffer of
    ``ws_elements`` (default H*W) of the input's type at the arena's end. The keywords break
    the plan on purpose: the output ``y_shift`` bytes past the input, the workspace at the
    input's offset, or no workspace."""
    d = copy.deepcopy(plan.to_json())
    bufs = {b["name"]: b for b in d["buffers"]}
    align = int(d.get("alignment") or 16)
    moved: dict[str, int] = {}  # alias root -> its new offset

    def grow(nbytes: int) -> int:
        start = math.ceil(d["arena_size"] / align) * align
        d["arena_size"] = start + nbytes
        return start

    def group(root: str) -> list[dict[str, Any]]:
        return [b for b in d["buffers"] if _root(bufs, b["name"]) == root]

    for k in steps:
        step = d["schedule"][k]
        rx, ry = _root(bufs, step["inputs"][0]), _root(bufs, step["outputs"][0])
        size = max(b["size"] for b in group(rx) + group(ry))
        off = moved.get(rx)
        if off is None:
            off = grow(size + y_shift)
            for b in group(rx):
                b["offset"] = off
            moved[rx] = off
        for b in group(ry):
            b["offset"] = off + y_shift
        moved[ry] = off
        if no_workspace:
            step["workspace"] = None
            continue
        x = bufs[step["inputs"][0]]
        elements = ws_elements if ws_elements is not None else x["shape"][2] * x["shape"][3]
        nbytes = elements * (4 if x["dtype"] == "float32" else 1)
        name = f"{step['name'] or step['outputs'][0]}:dw_temp"
        ws = {"name": name, "kind": "scratch", "dtype": x["dtype"], "shape": [elements], "elements": elements,
              "size": max(align, math.ceil(nbytes / align) * align), "offset": None, "first_op": k, "last_op": k,
              "alias_of": None, "quant": None}
        ws["offset"] = off if ws_over_input else grow(ws["size"])
        d["buffers"].append(ws)
        bufs[name] = ws
        step["workspace"] = name
    return PlanFile.from_json(d)


def plan(path: str, inplace_depthwise: bool = True) -> PlanFile:
    return fwbuild.plan(path, PLANNER, _options(inplace_depthwise))


# --- references ---------------------------------------------------------------------------

def reference(path: str, doc: PlanFile) -> dict[str, np.ndarray]:
    """onnxruntime on main.c's inputs; a lowered QDQ model run as lowered (what the firmware
    computes, as test_models_run does)."""
    lw = lowering.load(path)
    if not lw.qdq_fused:
        return verify.reference(path, doc, list(lw.outputs))
    feeds = {n: verify.input_pattern(lw.types[n].shape, lw.types[n].dtype, k) for k, n in enumerate(lw.inputs)}
    return firmware.reference(path, feeds, list(lw.outputs), lw)


def assert_like_onnxruntime(run: Any, sym: str, path: str, doc: PlanFile) -> None:
    assert run.status.get(sym) == 0, (sym, run.status.get(sym))
    lw = lowering.load(path)
    ref = reference(path, doc)
    assert sorted(run.outputs[sym]) == sorted(lw.outputs), sym
    for name, got in run.outputs[sym].items():
        want = ref[name].reshape(-1)
        step = firmware.quant_step(lw, doc, name)
        if want.dtype in (np.int8, np.uint8):
            err, tol = int(np.max(np.abs(got.astype(np.int32) - want.astype(np.int32)))), 1
        else:
            err = float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64))))
            tol = step * (1 + 1e-6) if step is not None else RTOL * max(float(np.max(np.abs(want))), 1e-30)
        assert err <= tol, (sym, name, err, tol)


def run_host(out: Path, models: list[tuple[str, str, PlanFile]]) -> tuple[int, str, Any]:
    rc, text = fwbuild.run_host(fwbuild.build_host(out, fwbuild.generate(out, models)))
    assert "runtime error" not in text and "AddressSanitizer" not in text, text[-3000:]
    return rc, text, verify.parse_output(text)


# --- small models -----------------------------------------------------------------------------

# (kernel, stride, pads top/left/bottom/right, dilation, bias): each layer's input is the last's output.
LAYERS = [(3, 1, [1, 1, 1, 1], 1, True), (3, 2, [1, 1, 1, 1], 1, True), (3, 2, [0, 0, 1, 1], 1, False),
          (5, 1, [2, 2, 2, 2], 1, True), (3, 1, [2, 2, 2, 2], 2, True), (5, 2, [1, 2, 2, 1], 1, True)]
C, H, W = 6, 23, 19


def _out(n: int, k: int, s: int, p0: int, p1: int, d: int) -> int:
    return (n + p0 + p1 - d * (k - 1) - 1) // s + 1


def _shapes(hw: tuple[int, int]) -> list[tuple[int, int]]:
    out, (h, w) = [], hw
    for k, s, p, d, _ in LAYERS:
        h, w = _out(h, k, s, p[0], p[2], d), _out(w, k, s, p[1], p[3], d)
        out.append((h, w))
    return out


def float_model(batch: int = 1) -> onnx.ModelProto:
    """x -> Relu -> six depthwise convs (LAYERS) -> 1x1 conv -> y; the Relu makes the first dw's
    input an activation (a graph input is never overwritten)."""
    rng = np.random.default_rng(13 + batch)
    inits, nodes, x = [], [helper.make_node("Relu", ["x"], ["r"], name="relu")], "r"
    for i, (k, s, p, d, bias) in enumerate(LAYERS):
        inits.append(numpy_helper.from_array((rng.standard_normal((C, 1, k, k)) / k).astype(np.float32), f"w{i}"))
        ins = [x, f"w{i}"]
        if bias:
            inits.append(numpy_helper.from_array((0.1 * rng.standard_normal(C)).astype(np.float32), f"b{i}"))
            ins.append(f"b{i}")
        nodes.append(helper.make_node("Conv", ins, [f"d{i}"], name=f"dw{i}", group=C, kernel_shape=[k, k],
                                      strides=[s, s], pads=p, dilations=[d, d]))
        x = f"d{i}"
    inits.append(numpy_helper.from_array((rng.standard_normal((4, C, 1, 1)) * 0.4).astype(np.float32), "pw"))
    nodes.append(helper.make_node("Conv", [x, "pw"], ["y"], name="pw", kernel_shape=[1, 1]))
    oh, ow = _shapes((H, W))[-1]
    g = helper.make_graph(nodes, "dw", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, C, H, W])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 4, oh, ow])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def qoperator_model(dt: Any) -> onnx.ModelProto:
    """x (int8 or uint8) -> 1x1 QLinearConv (so the first depthwise input is an activation) ->
    the LAYERS as depthwise QLinearConvs (int8 weights, per-channel scales, int32 bias) -> y."""
    rng = np.random.default_rng(7)
    el = helper.np_dtype_to_tensor_dtype(np.dtype(dt))
    z = 128 if dt == np.uint8 else 0
    inits: list[TensorProto] = []

    def const(name: str, v: Any, t: Any) -> str:
        inits.append(numpy_helper.from_array(np.asarray(v, dtype=t), name))
        return name

    def qp(name: str, scale: float, zp: int) -> list[str]:
        return [const(f"{name}_s", scale, np.float32), const(f"{name}_z", zp + z, dt)]

    nodes = [helper.make_node("QLinearConv", ["x", *qp("x", 0.05, 3), const("w_in", rng.integers(-90, 90, (C, C, 1, 1)),
                                                                            np.int8),
                                              const("w_in_s", 0.004, np.float32), const("w_in_z", 0, np.int8),
                                              *qp("a", 0.04, -5)], ["a"], name="pw_in", kernel_shape=[1, 1])]
    x = "a"
    for i, (k, s, p, d, bias) in enumerate(LAYERS):
        ins = [x, f"{x}_s", f"{x}_z", const(f"w{i}", rng.integers(-100, 100, (C, 1, k, k)), np.int8),
               const(f"w{i}_s", np.linspace(0.004, 0.009, C) / k, np.float32), const(f"w{i}_z", np.zeros(C), np.int8),
               *qp(f"d{i}", 0.03 + 0.005 * i, -3 + i)]
        if bias:
            ins.append(const(f"b{i}", rng.integers(-400, 400, C), np.int32))
        nodes.append(helper.make_node("QLinearConv", ins, [f"d{i}"], name=f"dw{i}", group=C, kernel_shape=[k, k],
                                      strides=[s, s], pads=p, dilations=[d, d]))
        x = f"d{i}"
    nodes[-1].output[0] = "y"
    oh, ow = _shapes((H, W))[-1]
    g = helper.make_graph(nodes, "qdw", [helper.make_tensor_value_info("x", el, [1, C, H, W])],
                          [helper.make_tensor_value_info("y", el, [1, C, oh, ow])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def small_models(d: Path, qcache: Path) -> dict[str, str]:
    paths = {}
    for sym, make in (("f32", float_model), ("f32_b2", lambda: float_model(2)),
                      ("qop_i8", lambda: qoperator_model(np.int8)), ("qop_u8", lambda: qoperator_model(np.uint8))):
        paths[sym] = str(d / f"{sym}.onnx")
        onnx.save(make(), paths[sym])
    paths["qdq_i8"] = str(Q.quantized(Path(paths["f32"]), "qdq", True, qcache))
    return paths


@pytest.fixture(scope="module")
def small(tmp_path_factory, qcache) -> dict[str, Any]:
    """The small models, each planned without the alias (sym_base), made in place by hand
    (sym_ip), plus the broken in-place plans; all in one host firmware."""
    d = tmp_path_factory.mktemp("dw")
    paths = small_models(d, qcache)
    entries, dws, bases = [], {}, {}
    for sym, path in paths.items():
        bases[sym] = base = plan(path, inplace_depthwise=False)
        dws[sym] = depthwise_steps(path, base)
        assert len(dws[sym]) == len(LAYERS), (sym, dws[sym])
        entries += [(f"{sym}_base", path, base), (f"{sym}_ip", path, make_in_place(base, dws[sym]))]
    broken = {}
    for sym in ("f32", "qop_i8"):
        path, base = paths[sym], bases[sym]
        first = dws[sym][:1]
        x = base.by_name[base.schedule[first[0]].inputs[0]]
        plane = x.shape[2] * x.shape[3]
        for case, kw, code in (("no_ws", {"no_workspace": True}, ARENA_ERR_SHAPE),
                               ("small_ws", {"ws_elements": plane - 1}, ARENA_ERR_SHAPE),
                               ("shifted", {"y_shift": 16}, ARENA_ERR_BOUNDS),
                               ("ws_over_x", {"ws_over_input": True}, ARENA_ERR_BOUNDS)):
            broken[f"{sym}_{case}"] = code
            entries.append((f"{sym}_{case}", path, make_in_place(base, first, **kw)))
    # An output larger than its input (a 1x1 depthwise conv with padding) cannot work in place.
    grow = d / "grow.onnx"
    w = numpy_helper.from_array(np.ones((C, 1, 1, 1), np.float32), "w")
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["r"]),
                           helper.make_node("Conv", ["r", "w"], ["g"], name="grow", group=C, kernel_shape=[1, 1],
                                            pads=[1, 1, 1, 1]),
                           helper.make_node("Relu", ["g"], ["y"])], "grow",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, C, 4, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, C, 6, 6])], [w])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), str(grow))
    base = plan(str(grow), inplace_depthwise=False)
    k = next(i for i, s in enumerate(base.schedule) if s.op_type == "Conv")
    bad = make_in_place(base, [k])
    offsets = bad.offsets()
    assert offsets["g"] == offsets["r"], offsets
    entries.append(("grows", str(grow), bad))
    broken["grows"] = ARENA_ERR_SHAPE
    rc, text, run = run_host(d / "fw", entries)
    return {"run": run, "text": text, "rc": rc, "models": {s: (p, doc) for s, p, doc in entries},
            "paths": paths, "broken": broken, "dws": dws}


@pytest.mark.parametrize("sym", ["f32", "f32_b2", "qop_i8", "qop_u8", "qdq_i8"])
def test_hand_made_in_place_depthwise_matches_onnxruntime(small, sym):
    """Every depthwise layer writes over its input, and the outputs are the bits of the same
    model run without the alias and onnxruntime's values."""
    run = small["run"]
    path, doc = small["models"][f"{sym}_ip"]
    assert in_place_steps(path, doc) == small["dws"][sym]
    assert run.status.get(f"{sym}_base") == 0 and run.status.get(f"{sym}_ip") == 0, small["text"][-2000:]
    for name, got in run.outputs[f"{sym}_ip"].items():
        assert np.array_equal(got, run.outputs[f"{sym}_base"][name]), (sym, name)
    assert_like_onnxruntime(run, f"{sym}_ip", path, doc)
    assert_like_onnxruntime(run, f"{sym}_base", *small["models"][f"{sym}_base"])


def test_broken_in_place_plans_stop_with_a_status(small):
    """No workspace, one a byte short of a channel, an output 16 bytes past its input, the
    workspace over the input, an output larger than its input: the kernel refuses before
    writing (ARENA_ERR_SHAPE 11 / ARENA_ERR_BOUNDS 12) and names the depthwise op."""
    run = small["run"]
    for sym, code in small["broken"].items():
        assert run.status.get(sym) == code, (sym, run.status.get(sym), code)
        assert f"error {sym} op " in small["text"], sym
        assert not run.outputs.get(sym), sym
    assert small["rc"] in (ARENA_ERR_SHAPE, ARENA_ERR_BOUNDS)


# --- zoo networks, planned with in-place depthwise on -------------------------------------

def _zoo_entries(zoo_dir: Path, qcache: Path, names: tuple[str, ...],
                 all_by_hand: bool = False) -> list[tuple[str, str, PlanFile]]:
    """(symbol, path, doc) per model and form (float, QDQ int8 per-channel): the default plan,
    whose depthwise convs work in place (by the planner's aliases once its plan files carry
    inplace_depthwise; by hand before). all_by_hand adds, per form, the plan without the
    planner's aliases with EVERY depthwise conv made in place by hand (also the stride-2 ones
    the planner leaves out when their smaller output would hold the input's slot too long)."""
    out = []
    for name in names:
        src = zoo_dir / f"{name}.onnx"
        for form, path in (("float", str(src)), ("int8", str(Q.quantized(src, "qdq", True, qcache)))):
            doc = plan(path)
            dws = depthwise_steps(path, doc)
            assert dws, (name, form)
            if "inplace_depthwise" not in planfile.options_doc(doc.options):  # a planner without the option
                doc = make_in_place(plan(path, inplace_depthwise=False), dws)
            assert in_place_steps(path, doc), (name, form, "no depthwise conv planned in place")
            out.append((f"{name}_{form}", path, doc))
            if all_by_hand:
                doc = make_in_place(plan(path, inplace_depthwise=False), dws)
                assert in_place_steps(path, doc) == dws
                out.append((f"{name}_{form}_all", path, doc))
    return out


def test_zoo_depthwise_networks_run_in_place_on_the_host(zoo_dir, qcache, tmp_path):
    models = _zoo_entries(zoo_dir, qcache, DW_ZOO, all_by_hand=True)
    rc, text, run = run_host(tmp_path, models)
    assert rc == 0, text[-2000:]
    for sym, path, doc in models:
        assert_like_onnxruntime(run, sym, path, doc)


def test_mobilenet_v2_runs_in_place_on_qemu(zoo_dir, qcache, tmp_path):
    require_tool("arm-none-eabi-gcc")
    require_tool("qemu-system-arm")
    from arena_tool.run import qemu

    models = _zoo_entries(zoo_dir, qcache, ("mobilenet_v2",))
    gen = fwbuild.generate(tmp_path, models, board="mps2_an386")
    elf = fwbuild.build_elf(tmp_path, gen, "mps2_an386", max(d.arena_size for _, _, d in models))
    rc, text = qemu.run(str(elf), "mps2-an386", timeout=300)
    assert rc == 0, text[-2000:]
    run = verify.parse_output(text)
    for sym, path, doc in models:
        assert_like_onnxruntime(run, sym, path, doc)


def test_mobilenet_v2_float_arena_is_at_least_five_percent_smaller(zoo_dir: Path) -> None:
    """The floor: against the graph order with element-wise in-place and views on, in-place
    depthwise saves >= 5 % on MobileNetV2 (96x96, float); measured 552,960 -> 516,096 B."""
    path = str(zoo_dir / "mobilenet_v2.onnx")
    on, off = plan(path), plan(path, inplace_depthwise=False)
    assert on.arena_size <= 0.95 * off.arena_size, (on.arena_size, off.arena_size)
    assert verify.verify(path, on).ok
