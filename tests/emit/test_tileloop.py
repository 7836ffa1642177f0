"""Patched stages as tile loops (emit/tileloop.py, runtime/tile_loop.c): read back out of the
plan, replayed against it, run bit for bit like the unrolled tables on the host and under QEMU,
and the table bytes they cost (emit/table_bytes.py against the compiled object)."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import require_shared, require_tool

import fwbuild
from arena_tool import cli
from arena_tool.core.errors import ArenaError
from arena_tool.emit import codegen, table_bytes, tileloop
from arena_tool.plan import planfile, plancheck
from arena_tool.run import firmware, runreport
from shared_paths import MLPERF

sys.path.insert(0, str(Path(__file__).parent.parent / "model"))
from test_patches import _mobile  # noqa: E402  (the small depthwise network of the unit tests)

VWW_INT8 = MLPERF / "visual_wake_words__vww_96_float_tflite2onnx_int8.onnx"


def _plan(model: str, tmp_path: Path, *flags: str) -> tuple[planfile.PlanFile, object]:
    out = tmp_path / f"{Path(model).stem}{len(list(tmp_path.glob('*.plan.json')))}.plan.json"
    assert cli.main(["plan", model, "--planner", "greedy_size", *flags, "-o", str(out)]) == 0
    plan = planfile.load(str(out))
    return plan, plancheck.lowered_model(model, plan)


def test_a_patched_stage_is_one_loop_and_its_tiles_are_the_plans(tmp_path):
    plan, low = _plan(_mobile(tmp_path), tmp_path, "--patches", "pw:3x2")
    (loop,) = tileloop.loops(plan)
    assert (loop.rows, loop.cols, [m.name for m in loop.members]) == (3, 2, ["c0", "r0", "dw", "pw"])
    # the first conv reads a crop of the image in every tile: the runtime copies it, no Slice row
    assert [(s.kind, s.member, s.pos) for s in loop.slots if s.kind == tileloop.CROP] == [(tileloop.CROP, 0, 0)]
    assert loop.members[0].inputs[0] == loop.input
    # every tile buffer is a slot's (or a partial output); the slots with rows sit together
    assert {b.name for b in plan.buffers if "@" in b.name} == set(loop.folded)
    arena, _ = codegen.table_names(plan)
    first = arena.index(loop.rowed[0].key)
    assert arena[first:first + len(loop.rowed)] == [s.key for s in loop.rowed]
    assert tileloop.table_ops(plan, (loop,)) == len(plan.schedule) - (loop.end - loop.first) + 4
    h, c = codegen.model_sources(plan, low, "mobile")  # type: ignore[arg-type]
    assert "arena_run_tiles" in c and "@5" not in c and '"Slice"' not in c  # no tile's rows written out
    _, unrolled = codegen.model_sources(plan, low, "mobile", loops=False)  # type: ignore[arg-type]
    assert "arena_run_tiles" not in unrolled and len(unrolled) > len(c)
    rows = tileloop.table_rows(plan)
    assert len(rows) == tileloop.table_ops(plan, (loop,))
    assert sorted(k for _, _, steps in rows for k in steps) == list(range(len(plan.schedule)))


def test_a_tflite_stage_is_one_loop_over_its_nhwc_images(tmp_path):
    """A lowered .tflite's stage (kernels arena) runs as a tile loop too, its images NHWC: the loop's row
    says so (the runtime takes rows and columns from dims 1 and 2, a pixel's channels as one run), and
    the replay of every tile against the plan holds (before, such stages were written out unrolled)."""
    from tflite_models import save
    from tflite_ops import patch_stage_model

    model = save(tmp_path, "stage.tflite", patch_stage_model(0))
    plan, low = _plan(model, tmp_path, "--kernels", "arena", "--patches", "add:4x3;stage_end:2")
    first, second = tileloop.loops(plan)
    assert first.nhwc and second.nhwc and (first.rows, first.cols, second.rows, second.cols) == (4, 3, 2, 2)
    assert [m.name for m in first.members] == ["conv1", "dw", "sig", "avg", "add"]
    h, c = codegen.model_sources(plan, low, "stage")  # type: ignore[arg-type]
    assert c.count("{arena_run_tiles, ") == 2 and "@5" not in c
    assert all(row.split(", ")[5] == "1u" for row in c.split("{arena_run_tiles, ")[1:])  # nhwc
    _, unrolled = codegen.model_sources(plan, low, "stage", loops=False)  # type: ignore[arg-type]
    assert len(unrolled) > len(c)


def test_a_plan_the_runtime_would_run_differently_is_an_arena_bug(tmp_path):
    plan, low = _plan(_mobile(tmp_path), tmp_path, "--patches", "pw:3x2")
    (loop,) = tileloop.loops(plan)
    originals = {op.name: op for op in low.untiled.ops}  # type: ignore[attr-defined]
    ops = [originals[m.name] for m in loop.members]
    windows = [op.op_type == "Conv" for op in ops]
    tileloop.check(plan, loop, ops, windows)
    # say the depthwise conv had no pads: its windows, and the boxes before it, move
    dw = ops[2]
    wrong = [dataclasses.replace(dw, attrs=dict(dw.attrs, pads=[0, 0, 0, 0])) if op is dw else op for op in ops]
    with pytest.raises(ArenaError, match="tile loop of stage"):
        tileloop.check(plan, loop, wrong, windows)


def test_a_stage_the_loop_cannot_hold_stays_unrolled(tmp_path):
    plan, _ = _plan(_mobile(tmp_path), tmp_path, "--patches", "pw:3x2")
    # the partial outputs are no longer one in-place chain over the stage output
    part = next(b for b in plan.buffers if b.name.endswith("@upto1"))
    moved = fwbuild.edited(plan, lambda d: next(b for b in d["buffers"] if b["name"] == part.name).update(
        offset=part.offset + 16, alias_of=None))
    assert tileloop.loops(moved) == ()


def _outputs(text: str) -> list[str]:
    """main.c's output lines (index and exact bits), without the timing lines."""
    return [ln for ln in text.splitlines() if not ln.startswith(("ticks", "calibrate"))]


def _host_run(tmp: Path, model: str, plan: planfile.PlanFile, low: object, loops: bool) -> list[str]:
    tmp.mkdir()
    gen = firmware.generate(tmp, [("m", model, plan)], name="{sym}_model", lowered={"m": low}, loops=loops)  # type: ignore[dict-item]
    rc, text = fwbuild.run_host(fwbuild.build_host(tmp, gen))
    assert rc == 0, text
    return _outputs(text)


@pytest.mark.slow
def test_loops_run_bit_for_bit_like_the_unrolled_tables_on_the_host(tmp_path):
    """-Werror -pedantic, AddressSanitizer and UBSan: a float stage in a 3x2 and a 4x4 grid."""
    require_tool("gcc")
    model = _mobile(tmp_path)
    for grid in ("3x2", "4x4"):
        plan, low = _plan(model, tmp_path, "--patches", f"pw:{grid}")
        assert tileloop.loops(plan)
        loop = _host_run(tmp_path / f"loop{grid}", model, plan, low, True)
        unrolled = _host_run(tmp_path / f"unrolled{grid}", model, plan, low, False)
        assert loop == unrolled and any(ln.startswith("output") for ln in loop)


def _elf_run(tmp: Path, model: str, plan: planfile.PlanFile, low: object, loops: bool) -> tuple[list[str], Path]:
    tmp.mkdir()
    gen = firmware.generate(tmp, [("m", model, plan)], "mps2_an386", name="{sym}_model", lowered={"m": low},  # type: ignore[dict-item]
                            loops=loops)
    elf = fwbuild.build_elf(tmp, gen, "mps2_an386", plan.arena_size)
    rc, text = firmware.run_qemu(elf, firmware.resolve_board("mps2_an386"))  # type: ignore[arg-type]
    assert rc == 0, text
    return _outputs(text), tmp / "m_model.o"


@pytest.mark.slow
def test_vww_int8_loop_equals_the_unrolled_tables_on_qemu_for_5_percent_of_table_bytes(tmp_path):
    """The floor: patches: auto adds at most 5 % to the model's table bytes (unrolled: +425 %);
    the outputs equal the unrolled tables' bit for bit (and onnxruntime's: test_patches_run)."""
    require_tool("qemu-system-arm")
    require_tool("arm-none-eabi-gcc")
    model = str(require_shared(VWW_INT8))
    off, off_low = _plan(model, tmp_path, "--io", "int8")
    auto, low = _plan(model, tmp_path, "--io", "int8", "--patches", "auto")
    assert auto.patches is not None and auto.patches.detail and tileloop.loops(auto)
    loop, loop_obj = _elf_run(tmp_path / "loop", model, auto, low, True)
    unrolled, unrolled_obj = _elf_run(tmp_path / "unrolled", model, auto, low, False)
    assert loop == unrolled and any(ln.startswith("output") for ln in loop)
    _, off_obj = _elf_run(tmp_path / "off", model, off, off_low, True)
    measured = {k: runreport.table_bytes(str(o), "m") for k, o in
                (("off", off_obj), ("loop", loop_obj), ("unrolled", unrolled_obj))}
    assert measured["loop"] <= 1.05 * measured["off"] < measured["unrolled"] / 4, measured
    # the gate's count before anything is compiled is the compiled object's, to a few bytes
    for plan, lowered, key in ((off, off_low, "off"), (auto, low, "loop")):
        assert abs(table_bytes.table_bytes(plan, lowered, "m") - measured[key]) <= 64, (key, measured)  # type: ignore[arg-type]


@pytest.mark.slow
def test_table_bytes_counts_the_compiled_tables_of_a_small_model(tmp_path):
    require_tool("arm-none-eabi-gcc")
    model = _mobile(tmp_path)
    for flags in ((), ("--patches", "pw:3x2")):
        plan, low = _plan(model, tmp_path, *flags)
        out = tmp_path / f"obj{len(flags)}"
        out.mkdir()
        h, c = codegen.model_sources(plan, low, "m")  # type: ignore[arg-type]
        (out / "m.h").write_text(h)
        (out / "m.c").write_text(c)
        subprocess.run(["arm-none-eabi-gcc", "-mcpu=cortex-m4", "-mthumb", "-O2", "-ffunction-sections",
                        "-fdata-sections", f"-I{fwbuild.RUNTIME}", "-c", str(out / "m.c"), "-o", str(out / "m.o")],
                       check=True)
        got = runreport.table_bytes(str(out / "m.o"), "m")
        assert abs(table_bytes.table_bytes(plan, low, "m") - got) <= 32, (flags, got)  # type: ignore[arg-type]
