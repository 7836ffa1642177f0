"""Split arena and weights in RAM (issue 12 items 1 and 2; arena_tool/plan/split_arena.py, gate.py).

The board is written here: mps2_an500's memory map cut into a 20 KiB fast region (FAST, in
SSRAM2&3), 20 KiB of PSRAM (SLOW) and a data region (DATA, SSRAM2&3 again) for .data, .bss
and the stack, so QEMU runs it. kws needs 32,000 B at every hand-over between its 16,000 B
activations: more than either region, less than both. The firmware (kws split over FAST and
SLOW, kws_int8 with its weights copied to DATA) is built by scons, checked by the ELF check,
run under QEMU and compared with onnxruntime on main.c's input pattern.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from conftest import require_tool

import models
from builders import ROOT, SPLIT_BOARD, copy_example, scons
from arena_tool.model import liveness, lowering
from arena_tool.plan import plancheck, planfile, planners, planning, split_arena
from arena_tool.builder import board_report
from arena_tool.target import boards, manifest
from arena_tool.run import elfcheck, firmware, verify
from arena_tool.core.errors import ArenaError
from arena_tool.core.problem import Buffer, ModelOptions

KWS = str(ROOT / "example_firmware" / "models" / "kws.onnx")
KWS_SHAPES = (("input", (1, 1, 49, 10)),)
FAST = SLOW = 20 * 1024
MANIFEST = """\
board_dirs: [boards]
defaults: {time_limit: 5}
models:
  - {name: kws, path: models/kws.onnx, input_shapes: {input: [1, 1, 49, 10]}}
  - {name: kws_int8, path: models/kws_int8.onnx, weights: DATA}
boards:
  - {name: split_an500, region: [FAST, SLOW]}
"""


def project(tmp: Path, manifest_text: str = MANIFEST) -> Path:
    proj = copy_example(tmp)
    (proj / "example_firmware" / "boards").mkdir()
    (proj / "example_firmware" / "boards" / "split_an500.yaml").write_text(SPLIT_BOARD)
    (proj / "example_firmware" / "arena.yaml").write_text(manifest_text)
    return proj


# ---------------------------------------------------------------- the assignment


def test_assignment_by_hand() -> None:
    """A and B (10 B, hot) meet at op 1, C (4 B, cold) lives throughout; 20 B of fast RAM.
    Small buffers first puts C in first and then has no room for B; the density order and the
    search keep A and B fast and C slow: 4 accessed bytes outside instead of 90."""
    bufs = [Buffer("A", 10, 0, 1), Buffer("B", 10, 1, 2), Buffer("C", 4, 0, 2)]
    access = [100, 90, 4]
    caps = [split_arena.RegionCap("FAST", 20), split_arena.RegionCap("SLOW", 20)]
    a = split_arena.assign(bufs, access, caps)
    assert (a.regions, a.cost, a.method, a.status) == ((0, 0, 1), 4, "exact", "proven")
    base, ok = split_arena.small_first(bufs, caps, access)
    assert ok and base == [0, 1, 0] and split_arena.cost_of(base, access) == 90
    # Nothing fits: the last region takes what the others cannot, and says so.
    tight = [split_arena.RegionCap("FAST", 10), split_arena.RegionCap("SLOW", 10)]
    assert split_arena.assign(bufs, access, tight).status == "infeasible"


def test_access_model_counts_conv_windows(tmp_path: Path) -> None:
    """x (8x8 float, 256 B) feeds a 3x3 stride-1 Conv: read 9 times; y (2x6x6, 288 B) is written
    by the Conv and read by the Relu that writes z in place: one buffer, 3 x 288 B."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.ones((2, 1, 3, 3), np.float32), "w")
    g = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[3, 3]), helper.make_node("Relu", ["y"], ["z"])],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 8, 8])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 2, 6, 6])], [w])
    path = tmp_path / "conv.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    opts = ModelOptions()
    low = lowering.load(str(path))
    mp = liveness.build(low, opts)
    names = [b.name for b in mp.problem().buffers]
    assert dict(zip(names, split_arena.access_bytes(mp, low))) == {"x": 9 * 256, "y": 3 * 288}


def test_kws_split_plan_fits_two_regions_not_one() -> None:
    opts = ModelOptions(input_shapes=KWS_SHAPES)
    caps = [split_arena.RegionCap("FAST", FAST), split_arena.RegionCap("SLOW", SLOW)]
    pm = planning.plan_split(KWS, opts, "optimal", planners.Params(time_limit=5), caps)
    plan = pm.plan_file
    assert plan.regions is not None and plan.split is not None and plan.split.small_first_accessed is not None
    assert plan.lower_bound == 32_000 > max(FAST, SLOW)  # fits neither region alone
    assert [r.name for r in plan.regions] == ["FAST", "SLOW"]
    assert all(r.arena_size <= r.capacity for r in plan.regions)
    assert plan.arena_size == sum(r.arena_size for r in plan.regions)
    assert plan.split.method == "exact" and plan.split.status == "proven"
    assert plancheck.check_split(plan) == []
    assert plancheck.check(plan, liveness.model_problem(KWS, opts), "kws.plan.json") == []
    # At least the accessed bytes of small-buffers-first in the fast region; the hottest buffer there.
    assert plan.regions[0].accessed_bytes >= plan.split.small_first_accessed[0]
    access = split_arena.access_bytes(pm.mp, lowering.load(KWS, KWS_SHAPES))
    density = {b.name: a / b.size for b, a in zip(pm.problem.buffers, access)}
    region_of = {b.name: b.region for b in plan.buffers}
    assert region_of[max(density, key=lambda n: (density[n], n))] == "FAST"
    # A buffer moved to the other region overlaps there: check names the pair.
    bad = dataclasses.replace(plan, buffers=tuple(dataclasses.replace(b, region="FAST") for b in plan.buffers))
    assert any("overlap" in p for p in plancheck.check(bad, liveness.model_problem(KWS, opts), "p"))
    # verify replays the regions end to end: the split plan holds, the moved one does not.
    assert verify.verify(KWS, plan).ok
    assert not verify.verify(KWS, bad).ok


def test_a_split_takes_caller_io_and_named_patches_on_onnx_and_a_tflite(tmp_path: Path) -> None:
    """Caller-owned inputs and outputs are in no region (the split plan was exit 3: KeyError on the
    graph input), and named stages keep the plan's patches section (the build refused the plan: 'no
    patches section'); a .tflite on arena's runtime (NHWC stages) likewise."""
    from tflite_models import save
    from tflite_ops import patch_stage_model

    tfl = save(tmp_path, "stage.tflite", patch_stage_model(0))
    for path, opts, caps in (
            (KWS, ModelOptions(input_shapes=KWS_SHAPES, io_buffers="caller"), (FAST, SLOW)),
            (tfl, ModelOptions(kernels="arena", io_buffers="caller", patches="add:4x3;stage_end:2"), (1024, 4096))):
        regions = [split_arena.RegionCap("FAST", caps[0]), split_arena.RegionCap("SLOW", caps[1])]
        plan = planning.plan_split(path, opts, "optimal", planners.Params(time_limit=2), regions).plan_file
        assert plan.caller_io > 0 and all(r.arena_size > 0 for r in plan.regions or ())
        assert plancheck.check_split(plan) == [] and plancheck.check(plan, plancheck.derived_problem(path, plan), "p") == []
        assert {b.region for b in plan.buffers if b.kind in ("input", "output")} == {None}
        if opts.patches != "off":
            assert plan.patches is not None and plan.patches.stages == "add:4x3;stage_end:2x2"
            assert plancheck.patch_problems(plan, plancheck.lowered_model(path, plan)) == []


def test_a_planner_above_capacity_falls_back_to_the_packing_that_proved_it() -> None:
    """naive (no reuse) needs more than 20 KiB in FAST; the layout that proved the region
    feasible is kept instead, and says so."""
    opts = ModelOptions(input_shapes=KWS_SHAPES)
    caps = [split_arena.RegionCap("FAST", FAST), split_arena.RegionCap("SLOW", SLOW)]
    plan = planning.plan_split(KWS, opts, "naive", planners.Params(time_limit=5), caps).plan_file
    assert plan.regions is not None
    assert [r.planner for r in plan.regions] == ["packing", "packing"] and plan.optimal is False
    assert all(r.arena_size <= r.capacity for r in plan.regions)
    assert plancheck.check(plan, liveness.model_problem(KWS, opts), "kws.plan.json") == []


# ---------------------------------------------------------------- the manifest and the gate


def test_manifestcheck_split_and_weights(tmp_path: Path) -> None:
    proj = project(tmp_path / "p")
    path = str(proj / "example_firmware" / "arena.yaml")
    m = manifest.load(path)
    [t] = m.targets
    assert (t.region, t.split) == ("FAST", ("FAST", "SLOW"))
    assert [s.regions for s in t.models] == [(("FAST", FAST), ("SLOW", SLOW))] * 2
    assert [s.options.weights for s in t.models] == ["flash", "DATA"]
    text = (proj / "example_firmware" / "arena.yaml").read_text()
    for bad, want in ((text.replace("[FAST, SLOW]", "[FAST, SLOWW]"), "has no region 'SLOWW'"),
                      (text.replace("[FAST, SLOW]", "[]"), "region: is an empty list"),
                      (text.replace("[FAST, SLOW]", "[FAST, SLOW, FAST]"), "region: lists 'FAST' twice"),
                      (text.replace("weights: DATA", "weights: DTCM"), "weights: DTCM is not a region of board split_an500 .its flash: flash; its external flash: none; its RAM: FAST, SLOW, DATA."),
                      (text.replace("region: [FAST, SLOW]}", "region: [FAST, SLOW], sharing: concurrent}"),
                       "needs sharing: sequential")):
        (proj / "example_firmware" / "arena.yaml").write_text(bad)
        with pytest.raises(ArenaError, match=want.replace("[", r"\[")):
            manifest.load(path)
    (proj / "example_firmware" / "arena.yaml").write_text(text.replace("region: [FAST, SLOW]", "split: true"))
    assert manifest.load(path).targets[0].split == ("FAST", "SLOW", "DATA")  # by speed


def test_split_is_planned_against_what_other_models_weights_leave(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """chain (12 KiB at its peak) split over FAST (8 KiB) and SLOW, beside a model whose 4 KiB
    of weights are copied into FAST: chain's split gets what those weights leave of FAST, so
    the board passes (it was over: chain's split filled FAST as if the weights took nothing)."""
    from arena_tool import build_steps
    from arena_tool.builder import build_graph as bg

    monkeypatch.chdir(tmp_path)
    models.save(models.chain(), "chain.onnx")
    models.save(models.model([models.node("MatMul", ["x", "w"], ["y"], "mm")], [models.vi("x", [1, 16])],
                             [models.vi("y", [1, 64])], [models.weight("w", [16, 64])]), "w.onnx")
    Path("boards").mkdir()
    Path("boards/split_an500.yaml").write_text(SPLIT_BOARD.replace("length: 20K", "length: 8K", 1)
                                               .replace("length: 20K", "length: 32K"))
    Path("arena.yaml").write_text("board_dirs: [boards]\ndefaults: {planner: greedy_size}\nmodels:\n"
                                  "  - {name: chain, path: chain.onnx}\n  - {name: w, path: w.onnx, weights: FAST}\n"
                                  "boards:\n  - {name: split_an500, region: [FAST, SLOW]}\n")
    doc = manifest.to_doc(manifest.load("arena.yaml"))
    assert [s["copied"] for s in doc["targets"][0]["models"]] == [
        [["FAST", "w.onnx", ModelOptions(weights="FAST").to_doc()]], []]
    g = bg.graph_of(doc, "build", bg.Toolchain(root=str(tmp_path)), generator="digest")
    assert "w.onnx" in g.of_kind("plan")[0].depends  # chain's plan is redone when w's weights change
    build = build_steps.Build({t["name"]: t for t in doc["targets"]})
    for b in g.boards:
        build.gates[b.gate] = build_steps.Gate(b.name, b.deleted, b.report)
    for n in (*g.of_kind("plan"), *g.of_kind("gate")):
        getattr(build_steps, n.kind)(build, list(n.targets), [s.text if isinstance(s, bg.Value) else s for s in n.sources])
    rep = board_report.read("build/split_an500/arena_gate.json")
    fast = next(r for r in rep.regions if r.name == "FAST")
    assert rep.status == "ok" and build.failed == {}, [p.message for p in rep.problems]
    assert 0 < fast.weights and fast.arena + fast.weights <= fast.limit == 8 * 1024
    chain = planfile.load(next(n.targets[0] for n in g.of_kind("plan") if "chain" in n.targets[0]))
    assert chain.regions is not None and chain.regions[0].capacity == 8 * 1024 - fast.weights


def test_gate_names_the_region_over(tmp_path: Path) -> None:
    """Regions of 12 KiB cannot hold kws's 16,000 B activations: the gate fails before compiling."""
    proj = project(tmp_path / "p", MANIFEST.replace("  - {name: kws_int8, path: models/kws_int8.onnx, weights: DATA}\n", ""))
    board = proj / "example_firmware" / "boards" / "split_an500.yaml"
    board.write_text(SPLIT_BOARD.replace("length: 20K", "length: 12K"))
    p = scons(proj, "board=split_an500", "link=0")
    assert p.returncode == 1, p.stdout + p.stderr
    doc = board_report.read(str(proj / "build" / "split_an500" / "arena_report.json")).to_json()
    assert doc["status"] == "over" and [r["name"] for r in doc["regions"]] == ["FAST", "SLOW"]
    assert any(pr["region"] in ("FAST", "SLOW") and "of arena (kws)" in pr["message"] for pr in doc["problems"])


# ---------------------------------------------------------------- the firmware


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The split firmware built and run once under QEMU (scons board=split_an500 run)."""
    require_tool("arm-none-eabi-gcc")
    require_tool("qemu-system-arm")
    proj = project(tmp_path_factory.mktemp("split"))
    p = scons(proj, "board=split_an500", "run")
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    return proj, p.stdout + p.stderr


def _matches(text: str, name: str, path: str, plan: planfile.PlanFile) -> None:
    run = verify.parse_output(text)
    assert run.status.get(name) == 0, text[-1500:]
    ref = verify.reference(path, plan)
    lw = lowering.load(path, plan.options.input_shapes)
    for out, got in run.outputs[name].items():
        want = ref[out].reshape(-1).astype(np.float32)
        step = firmware.quant_step(lw, plan, out)
        tol = step + 1e-6 if step is not None else 1e-4 * max(float(np.max(np.abs(want))), 1e-30)
        assert float(np.max(np.abs(got.astype(np.float32) - want))) <= tol, (name, out)


def _plan(proj: Path, name: str) -> tuple[str, planfile.PlanFile]:
    doc = board_report.read(str(proj / "build" / "split_an500" / "arena_report.json"))
    m = next(m for m in doc.models if m.name == name)
    return str(proj / "example_firmware" / "models" / f"{name}.onnx"), planfile.load(str(proj / m.plan))


def test_split_firmware_builds_checks_and_matches_onnxruntime(built: tuple[Path, str]) -> None:
    proj, text = built
    bdir = proj / "build" / "split_an500"
    for name in ("arena_gate.json", "arena_report.json"):  # a split arena's reports, typed: the same bytes
        assert board_report.dumps(board_report.read(str(bdir / name)).to_json()) == (bdir / name).read_text(), name
    doc = board_report.read(str(bdir / "arena_report.json")).to_json()
    assert doc["status"] == "ok" and doc["stage"] == "linked"
    by = {r["name"]: r for r in doc["regions"]}
    assert (by["FAST"]["arena_section"], by["SLOW"]["arena_section"]) == (".arena_FAST", ".arena_SLOW")
    assert 0 < by["FAST"]["arena"] <= FAST and 0 < by["SLOW"]["arena"] <= SLOW
    # The ELF check (run after the link) passes; asked again, every section is in its region.
    board = boards.load_board_file(str(proj / "example_firmware" / "boards" / "split_an500.yaml"))
    assert elfcheck.problems(str(bdir / "firmware.elf"), board, board_report.read(str(bdir / "arena_gate.json"))) == []
    from elftools.elf.elffile import ELFFile

    with open(bdir / "firmware.elf", "rb") as f:
        secs = {s.name: (s["sh_addr"], s["sh_size"], s["sh_type"]) for s in ELFFile(f).iter_sections()}
    for region in ("FAST", "SLOW"):
        addr, size, kind = secs[f".arena_{region}"]
        r = board.region(region)
        assert kind == "SHT_NOBITS" and r.origin <= addr and addr + size <= r.end and size == by[region]["arena"]
    assert ".arena" not in secs
    path, plan = _plan(proj, "kws")
    assert plan.lower_bound > max(FAST, SLOW)  # kws fits neither region alone
    assert {b.region for b in plan.buffers} == {"FAST", "SLOW"} and plan.regions is not None
    assert plan.regions[0].accessed_bytes > plan.regions[1].accessed_bytes  # the hot bytes are fast
    _matches(text, "kws", path, plan)


def test_weights_copied_to_ram_at_startup_and_outputs_match(built: tuple[Path, str]) -> None:
    proj, text = built
    bdir = proj / "build" / "split_an500"
    doc = board_report.read(str(bdir / "arena_report.json")).to_json()
    data = next(r for r in doc["regions"] if r["name"] == "DATA")
    assert data["weights_section"] == ".weights_DATA" and data["arena_section"] is None
    m = next(m for m in doc["models"] if m["name"] == "kws_int8")
    assert m["weights_region"] == "DATA" and data["weights"] == m["weights_ram"] >= m["weights_bytes"]
    from elftools.elf.elffile import ELFFile

    board = boards.load_board_file(str(proj / "example_firmware" / "boards" / "split_an500.yaml"))
    with open(bdir / "firmware.elf", "rb") as f:
        elf = ELFFile(f)
        sec = elf.get_section_by_name(".weights_DATA")
        vaddr, size = sec["sh_addr"], sec["sh_size"]
        [load] = [p["p_paddr"] for p in elf.iter_segments() if p["p_type"] == "PT_LOAD" and p["p_vaddr"] == vaddr]
        syms = {s.name for s in elf.get_section_by_name(".symtab").iter_symbols()}
    assert board.region("DATA").origin <= vaddr < board.region("DATA").end and size <= data["weights"]
    assert board.flash.origin <= load < board.flash.end  # linked into flash, run from DATA
    assert "arena_init" in syms
    path, plan = _plan(proj, "kws_int8")
    assert plan.options.weights == "DATA"
    _matches(text, "kws_int8", path, plan)


def test_split_outputs_are_byte_identical(built: tuple[Path, str], tmp_path: Path) -> None:
    """A second build from scratch writes the same plans, tables, arena source and linker script."""
    proj, _ = built
    again = project(tmp_path / "again")
    p = scons(again, "board=split_an500", "link=0", seed="1")
    assert p.returncode == 0, p.stdout + p.stderr
    for rel in ["split_an500/split_an500.ld", "split_an500/gen/arena_board.c", "split_an500/arena_gate.json"] + [
            str(q.relative_to(proj / "build")) for q in (proj / "build").glob("plans/*.plan.json")]:
        assert (proj / "build" / rel).read_bytes() == (again / "build" / rel).read_bytes(), rel


def test_a_split_arena_takes_a_budget_per_region(tmp_path: Path) -> None:
    """budget: {DTCM: 60K, SRAM1: 90%}: each region of the split its own limit (one number could
    not say 60K of a 64K TCM and 90 % of a 240K SRAM); a region outside the split, a region left
    out, or a budget per region without a split is one error naming the field."""
    from arena_tool.builder import board_report, gate
    from arena_tool.core.errors import ArenaError
    from builders import plan_doc, plans, target

    t = target(tmp_path, "{name: nucleo_f746, region: [DTCM, SRAM1], budget: {DTCM: 60K, SRAM1: 50%}}",
               models="a", reserve="{stack: 0}")
    assert (t.region_limit("DTCM"), t.region_limit("SRAM1")) == (61440, 245760 // 2)
    assert manifest.from_doc(manifest.to_doc(manifest.load(str(tmp_path / "arena.yaml")))).targets[0].budget == t.budget
    r = gate.gate(t, plans(t, plan_doc(30000, 28000)))
    assert r.budget_spec == "DTCM: 60K, SRAM1: 50%"
    for board, why in (("{name: nucleo_f746, region: [DTCM, SRAM1], budget: {DTCM: 60K, SRAM2: 50%}}", "SRAM2"),
                       ("{name: nucleo_f746, region: [DTCM, SRAM1], budget: {DTCM: 60K}}", "no budget for region SRAM1"),
                       ("{name: nucleo_f746, region: DTCM, budget: {DTCM: 60K}}", "needs a split arena")):
        with pytest.raises(ArenaError) as e:
            target(tmp_path, board, models="a")
        assert why in e.value.msg and "budget" in (e.value.field or ""), e.value.render()
