"""The op table (arena_tool/model/optable.py) and the C op list generated from it (runtime/arena_ops.h)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from arena_tool.model import optable, tflite_lower
from arena_tool.emit import runtime_support

RUNTIME_DIR = optable.HEADER.parent
TESTS = Path(__file__).resolve().parent.parent

# The tests that run arena's C runtime and compare its outputs with onnxruntime's (verify.reference,
# onnxruntime itself, or arena-tool run, which compares), each file with the text that shows it does.
COMPARED = {
    "test_runtime.py": "verify.", "test_runtime_layout.py": "verify.reference", "test_float_kernels.py":
    "verify.reference", "test_runtime_qlinear.py": "verify.", "test_runtime_int8.py": "verify.",
    "test_inplace_depthwise.py": "onnxruntime", "test_patches_run.py": '"run"',
}
# Runtime ops no model states: arena's own rewrites make them, and the file that runs the rewrite
# against onnxruntime's untiled model, with the option that makes it.
REWRITES = {"ARENA_OP_PATCH_WRITE": ("test_patches_run.py", "--patches"),
            "ARENA_OP_QLINEAR_LOOKUP": ("test_runtime_qlinear.py", "QLinearLookup")}

# arena_op_type_t as released: a constant's value is its position, so these never move (a new
# op goes after the last; firmware built against older tables relies on the numbers).
RELEASED = """IDENTITY CONV GEMM MATMUL RELU CLIP LEAKY_RELU SIGMOID ADD SUB MUL DIV MAX_POOL AVERAGE_POOL
GLOBAL_AVERAGE_POOL GLOBAL_MAX_POOL SOFTMAX CONCAT BATCH_NORM QUANTIZE_LINEAR DEQUANTIZE_LINEAR QLINEAR_CONV
QLINEAR_MATMUL QLINEAR_ADD QLINEAR_MUL QGEMM QLINEAR_AVERAGE_POOL QLINEAR_GLOBAL_AVERAGE_POOL QLINEAR_CONCAT
QLINEAR_SOFTMAX QLINEAR_SIGMOID QLINEAR_LEAKY_RELU QLINEAR_HARD_SWISH TRANSPOSE PAD SLICE SPLIT RESIZE REDUCE_MEAN
HARD_SIGMOID HARD_SWISH TANH EXP NEG ABS SQRT ERF ELU MAX MIN PRELU LRN""".split()


def test_the_checked_in_header_is_the_tables() -> None:
    """arena_ops.h is generated: regenerate it (python3 -m arena_tool.model.optable) after editing the table."""
    assert optable.HEADER.read_text() == optable.c_header(), "stale: run python3 -m arena_tool.model.optable"


def test_main_writes_the_header(tmp_path: Path) -> None:
    out = tmp_path / "arena_ops.h"
    assert optable.main([str(out)]) == 0
    assert out.read_text() == optable.HEADER.read_text()


def test_enum_values_never_move() -> None:
    names = [r.enum for r in optable.RUNTIME]
    assert names[:len(RELEASED)] == [f"ARENA_OP_{n}" for n in RELEASED]
    assert len(set(names)) == len(names)


def test_the_c_uses_the_list_for_enum_kernel_table_and_prototypes() -> None:
    """No second hand-written op list in C: the enum, the default kernel table and the prototypes expand
    arena_ops.h (a board's own table is generated from the op table: test_kernel_table.py)."""
    model = (RUNTIME_DIR / "arena_model.h").read_text()
    runtime = (RUNTIME_DIR / "arena_runtime.c").read_text()
    kernels = (RUNTIME_DIR / "arena_kernels.h").read_text()
    assert '#define ARENA_OP(op, kernel) op,\n#include "arena_ops.h"' in model
    assert '#define ARENA_OP(op, kernel) [op] = kernel,\n#include "arena_ops.h"' in runtime
    assert '#define ARENA_KERNEL(kernel) int kernel(const arena_ctx_t *c);\n#include "arena_ops.h"' in kernels
    for r in optable.RUNTIME:
        assert r.enum not in model and r.enum not in runtime, r.enum
        assert f"{r.kernel}(" not in kernels, r.kernel


def test_every_kernel_is_defined_once() -> None:
    """A table entry without its C kernel fails here, not first at a firmware's link."""
    text = "\n".join(p.read_text() for p in sorted(RUNTIME_DIR.glob("*.c")))
    for k in dict.fromkeys(r.kernel for r in optable.RUNTIME):
        assert len(re.findall(rf"^int {k}\(const arena_ctx_t \*c\)$", text, flags=re.M)) == 1, k


def _op_names(path: Path) -> set[str]:
    """The string literals of a test file that are not docstrings: op types in make_node calls,
    helper calls and parametrize lists (a docstring naming an op runs nothing)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef)) and n.body
            and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    return {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
            and id(n) not in docs}


def test_every_runtime_op_is_compared_with_onnxruntime() -> None:
    """An op added to the table with its kernel but no test against onnxruntime fails here (a kernel
    switch once computed Elu for any op without a case, and every table test stayed green): each
    runtime op has an ONNX op type that one of the COMPARED files builds, or a rewrite that makes it."""
    names: set[str] = set()
    for name, proof in COMPARED.items():
        text = (TESTS / name).read_text(encoding="utf-8")
        assert proof in text, f"{name} no longer compares with onnxruntime ({proof!r})"
        names |= _op_names(TESTS / name)
    for enum, (name, option) in REWRITES.items():
        assert name in COMPARED and option in (TESTS / name).read_text(encoding="utf-8"), enum
    op_types: dict[str, list[str]] = {}
    for op_type, s in optable.TABLE.items():
        if s.runtime is not None:
            op_types.setdefault(s.runtime.enum, []).append(op_type)
    # A .tflite's ops (Tfl*) are compared with TFLite Micro's host interpreter instead, bit for bit: the
    # random op models (tflite_ops.py) build each builtin that lowers to them, and the run test runs those.
    assert "random_ops_model" in (TESTS / "run" / "test_tflite_arena.py").read_text(encoding="utf-8")
    names |= {op for builtin, op in [*tflite_lower.LOWERED.items(), *tflite_lower.LOWERED_F32.items()]
              if builtin in _op_names(TESTS / "tflite_ops.py")}
    missing = sorted(f"{e} ({', '.join(ts)})" for e, ts in op_types.items() if e not in REWRITES and not names & set(ts))
    assert not missing, f"no onnxruntime- or TFLM-compared test runs: {missing}"
    assert set(op_types) == {r.enum for r in optable.RUNTIME}


def test_the_onnxruntime_check_sees_an_op_no_test_runs() -> None:
    """The check above can fail: a made-up op type is in no compared file, a real one is."""
    names = set().union(*(_op_names(TESTS / n) for n in COMPARED))
    assert "Softplus" not in names and "Elu" in names and "QLinearConcat" in names


def test_every_runtime_op_is_in_the_table_and_states_its_element_types() -> None:
    used = {s.runtime for s in optable.TABLE.values() if s.runtime is not None}
    assert used == set(optable.RUNTIME)
    for s in optable.TABLE.values():
        if s.runtime is not None:
            assert any(isinstance(c, (optable.Dtypes, optable.Converts)) for c in s.checks), s.op_type
        else:
            assert not s.checks and s.reads is None and s.c_fields is None and not s.spatial, s.op_type


def test_coverage_tests_every_kind_of_check() -> None:
    for check in optable.Check:
        assert runtime_support.rule(check) is not None
    kinds = {type(c) for s in optable.TABLE.values() for c in s.checks}
    assert kinds == {optable.Check, optable.Dtypes, optable.Needs, optable.InputsAtMost, optable.Converts,
                     optable.PerTensor, optable.FirstOutputOnly}


def test_liveness_roles_are_consistent() -> None:
    """A view writes nothing (never also in place); a depthwise op is a convolution; a window op
    normalizes its window."""
    for s in optable.TABLE.values():
        assert not (s.view and s.inplace), s.op_type
        assert not s.depthwise or (s.weight is not None and s.spatial), s.op_type
        assert not s.spatial or s.attrs is not None, s.op_type
    assert optable.WINDOWED == {"Conv", "QLinearConv", "MaxPool", "AveragePool", "QLinearAveragePool", "TflConv2D",
                                "TflDepthwiseConv2D", "TflAveragePool2D", "TflMaxPool2D",
                                "TflConv2DF32", "TflDepthwiseConv2DF32", "TflAveragePool2DF32", "TflMaxPool2DF32"}


def test_every_fused_qdq_op_is_a_quantized_op_of_the_table() -> None:
    """What lowering fuses DQ -> op -> Q into has its own entry: a signature, a kernel, int8 checks."""
    for s in optable.TABLE.values():
        if s.qoperator is not None:
            q = optable.TABLE[s.qoperator.op_type]
            assert q.quant_io is not None and q.runtime is not None, s.op_type
            assert s.runtime is not None and not s.moves_integers, s.op_type
