"""The kernel table (arena_kernels.h): a firmware links the kernels its models run and no others.

arena_run dispatches through ``arena_kernels``, which the generated board source defines with only
its models' ops (codegen.runtime_ops), so --gc-sections drops the rest of the runtime; an op left
out of the table stops arena_run with ARENA_ERR_UNSUPPORTED at that op; without a table (a
firmware built without arena's board source) the runtime's weak default holds every kernel."""

from __future__ import annotations

from pathlib import Path

import fwbuild
from conftest import require_tool

from arena_tool import cli
from arena_tool.emit import codegen
from arena_tool.model import optable


def plan(name: str):  # type: ignore[no-untyped-def]
    return fwbuild.plan(str(fwbuild.MODELS / f"{name}.onnx"), "naive")


def test_board_source_names_only_its_models_kernels() -> None:
    """The table is the union of the plans' ops, in the op table's order; runtime: none gets none."""
    i8, f32 = plan("kws_int8"), plan("kws")
    ops = codegen.runtime_ops([i8])
    assert "ARENA_OP_QLINEAR_CONV" in ops and "ARENA_OP_CONV" not in ops
    both = codegen.runtime_ops([i8, f32])
    assert set(both) == set(ops) | set(codegen.runtime_ops([f32]))
    order = [r.enum for r in optable.RUNTIME]
    assert both == sorted(both, key=order.index)
    _, c = codegen.arena_sources("b", 64, [("kws", 0)], kernels=ops)
    assert "[ARENA_OP_QLINEAR_CONV] = arena_k_qlinear_conv," in c
    assert "arena_k_conv" not in c and "arena_k_gemm" not in c
    _, none = codegen.arena_sources("b", 64, [("kws", 0)])
    assert "arena_kernels" not in none


def _symbols(elf: Path) -> set[str]:
    from elftools.elf.elffile import ELFFile

    with open(elf, "rb") as f:
        return {s.name for s in ELFFile(f).get_section_by_name(".symtab").iter_symbols()}


def test_int8_firmware_links_no_float_kernel_and_runs_its_ops(capsys, tmp_path: Path) -> None:
    """An int8-only firmware has no float conv (or Gemm) kernel; a float one has them and no int8
    conv; both match onnxruntime, so every op the table holds ran."""
    require_tool("arm-none-eabi-gcc")
    require_tool("qemu-system-arm")
    syms = {}
    for name in ("kws_int8", "kws"):
        rc = cli.main(["run", str(fwbuild.MODELS / f"{name}.onnx"), "--board", "mps2_an500",
                       "--build-dir", str(tmp_path / name)])
        out = capsys.readouterr().out
        assert rc == 0 and "match: every output" in out, out
        syms[name] = _symbols(tmp_path / name / "build" / "mps2_an500" / "firmware.elf")
    assert {"arena_k_qlinear_conv", "arena_k_qlinear_matmul", "arena_kernels"} <= syms["kws_int8"]
    assert not {"arena_k_conv", "arena_k_gemm", "arena_k_softmax"} & syms["kws_int8"]
    assert {"arena_k_conv", "arena_k_gemm", "arena_k_softmax"} <= syms["kws"]
    assert "arena_k_qlinear_conv" not in syms["kws"]


def test_op_left_out_of_the_table_fails_at_that_op_and_no_table_runs_all(tmp_path: Path) -> None:
    """A board table without the model's Gemm: arena_run stops there with code 10 naming the op;
    a board source with no table (the runtime's weak default) runs the model."""
    path = str(fwbuild.MODELS / "autoencoder.onnx")
    p = plan("autoencoder")
    gemm = next(i for i, s in enumerate(p.schedule) if s.op_type == "Gemm")
    for case, kernels in (("missing", [k for k in codegen.runtime_ops([p]) if k != "ARENA_OP_GEMM"]),
                          ("default", None)):
        out = tmp_path / case
        generated = fwbuild.generate(out, [("ae", path, p)])
        _, c = codegen.arena_sources("host", p.arena_size, [("ae", 0)], max(16, p.alignment), kernels=kernels)
        (out / "arena_board.c").write_text(c)
        rc, text = fwbuild.run_host(fwbuild.build_host(out, generated))
        if kernels is None:
            assert rc == 0 and "status ae 0" in text, text
        else:
            step = p.schedule[gemm]
            assert rc == 10 and f"error ae op {gemm} Gemm {step.name or step.outputs[0]} code 10" in text, text
