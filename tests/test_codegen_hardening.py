"""Hostile and oversized models never give silently wrong firmware (issue 14, codegen side).

* Every count, index and size in the generated tables fits its C field: a 300-input Concat
  and a 33,000-tensor model run on the host runtime and match onnxruntime, and a value that
  does not fit its field fails the compile with the table's static assertion.
* Model text never becomes C: names carrying ``*/``, trigraphs (``??/``), non-ASCII or control
  characters compile under ``-std=c99 -trigraphs -Werror`` and inject nothing.
* C identifiers are unique ignoring case and never take a generated name (``_COUNT``).
* Ops the runtime cannot execute are named by coverage before anything is compiled.
* value_info and graph-output shapes that contradict the op's output are an error.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import fwbuild
import models as M
from arena_tool.model import lowering, onnx_graph
from arena_tool.emit import codegen, runtime_support
from arena_tool.builder import build_graph
from arena_tool.run import firmware, verify
from arena_tool.core.errors import EXIT_USAGE, ArenaError
from arena_tool.plan.planfile import PlanFile

HOSTILE = ["x */ int evil; /*", "a??/", "\u00e9", "new\nline #define evil 1", "ctl\x01\x1f\t\x7f",
           "??=??(??)??'??<??>??!??-", "*/", "/*", "back\\",
           "z *??/\n/ int evil; /* "]  # ??/ + newline splices '*' and '/' into a comment end


def save(tmp: Path, nodes: Sequence[onnx.NodeProto], inputs: Sequence[onnx.ValueInfoProto],
         outputs: Sequence[onnx.ValueInfoProto], inits: Sequence[TensorProto] = (), opset: int = 13,
         value_info: Sequence[onnx.ValueInfoProto] = (), name: str = "m") -> str:
    return M.save(M.model(nodes, inputs, outputs, inits, opset=opset, value_info=value_info), tmp / f"{name}.onnx")


def host_run(tmp: Path, sym: str, path: str, cflags: Sequence[str] = ()) -> tuple[PlanFile, str, list[Path]]:
    """(plan, firmware output, generated sources) of one model built natively with the sanitizers."""
    doc = fwbuild.plan(path, "naive")
    gen = fwbuild.generate(tmp, [(sym, path, doc)])
    exe = firmware.build_host(tmp, gen, [*fwbuild.CFLAGS, *cflags, "-O1", "-g", "-fsanitize=address,undefined",
                                         "-fno-sanitize-recover=all"], "fw_host")
    rc, text = fwbuild.run_host(exe)
    assert rc == 0, text[-2000:]
    return doc, text, gen


def assert_matches_onnxruntime(text: str, sym: str, path: str, doc: PlanFile, outputs: Sequence[str]) -> None:
    run = verify.parse_output(text)
    assert run.status[sym] == 0, text[-2000:]
    ref = verify.reference(path, doc, list(outputs))
    for name in outputs:
        got, want = run.outputs[sym][name], ref[name].reshape(-1).astype(np.float32)
        assert got.shape == want.shape and np.allclose(got, want, rtol=1e-5, atol=1e-5), (name, got[:8], want[:8])


def compile_only(c_file: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["gcc", "-std=c99", *flags, f"-I{fwbuild.RUNTIME}", f"-I{c_file.parent}", "-c",
                           str(c_file), "-o", str(c_file.with_suffix(".o"))], capture_output=True, text=True)


# --- 1. every count, index and size fits its field ---------------------------------------------

def concat_model(tmp: Path, n: int) -> str:
    """x [1, 2] + c_i for i < n (distinct values, so a wrong input order shows), concatenated."""
    nodes = [M.node("Add", ["x", f"c{i}"], [f"r{i}"]) for i in range(n)]
    nodes.append(M.node("Concat", [f"r{i}" for i in range(n)], ["y"], "cat", axis=1))
    inits = [M.const(f"c{i}", np.array([float(i)], np.float32)) for i in range(n)]
    return save(tmp, nodes, [M.vi("x", [1, 2])], [M.vi("y", [1, 2 * n])], inits, name="cat")


def test_a_300_input_concat_runs_and_matches_onnxruntime(tmp_path: Path) -> None:
    path = concat_model(tmp_path, 300)
    doc, text, gen = host_run(tmp_path, "cat", path)
    assert_matches_onnxruntime(text, "cat", path, doc, ["y"])
    c = gen[0].read_text()
    assert "ARENA_TABLE_FITS(" in c and "arena_op_t.n_inputs = 300" in c


@pytest.mark.slow
def test_33000_tensors_run_and_match_onnxruntime(tmp_path: Path) -> None:
    """33,001 tensors (x and 33,000 constants into one Concat): indices past int16."""
    n = 33000
    inits = [numpy_helper.from_array(np.full((1, 1), i % 97, np.float32), f"c{i}") for i in range(n)]
    path = save(tmp_path, [M.node("Concat", ["x"] + [f"c{i}" for i in range(n)], ["y"], "cat", axis=1)],
                [M.vi("x", [1, 2])], [M.vi("y", [1, 2 + n])], inits, name="big")
    doc, text, _ = host_run(tmp_path, "big", path)
    assert_matches_onnxruntime(text, "big", path, doc, ["y"])


def test_a_count_too_large_for_its_field_fails_the_compile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The static assertion, not a warning: it fails even with every warning off (-w)."""
    path = concat_model(tmp_path, 300)
    monkeypatch.setitem(codegen.FIELD_TYPES, "arena_op_t.n_inputs", "uint8_t")
    gen = fwbuild.generate(tmp_path, [("cat", path, fwbuild.plan(path, "naive"))])
    p = compile_only(gen[0], "-w")
    assert p.returncode != 0
    assert "op 300 'cat': arena_op_t.n_inputs = 300 does not fit its type uint8_t" in p.stderr, p.stderr


def test_more_than_32767_tensors_in_an_int16_index_fails_the_compile(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A synthetic table of 33,001 tensors against int16 indices: the assertion names the field."""
    monkeypatch.setitem(codegen.FIELD_TYPES, "arena_op_t.inputs", "int16_t")
    fits = codegen.Fits()
    fits.all("arena_op_t.inputs", range(-1, 33001), "op 0 'cat'")
    fits.add("arena_model_t.n_tensors", 33001, "model 'big'")
    c = tmp_path / "fits.c"
    c.write_text("#include <stdint.h>\n" + "\n".join(fits.asserts("big")) + "\n")
    p = compile_only(c, "-w")
    assert p.returncode != 0
    assert "arena_op_t.inputs = 33000 does not fit its type int16_t" in p.stderr, p.stderr
    assert "n_tensors" not in p.stderr  # uint32_t holds it


def _header_fields() -> dict[str, str]:
    """struct.field -> declared C type (pointer fields: the element type) from arena_model.h."""
    text = (fwbuild.RUNTIME / "arena_model.h").read_text()
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    out: dict[str, str] = {}
    for body, name in re.findall(r"typedef struct (?:\w+ )?\{(.*?)\}\s*(\w+);", text, flags=re.S):
        for decl in body.split(";"):
            m = re.match(r"\s*(?:const\s+)?(\w+)\s*\*?\s*(.+)", decl.strip())
            if m:
                for field in m.group(2).split(","):
                    out[f"{name}.{field.strip().lstrip('*').split('[')[0].strip()}"] = m.group(1)
    return out


def test_field_types_are_the_headers() -> None:
    fields = _header_fields()
    for key, c_type in codegen.FIELD_TYPES.items():
        if "." in key:
            assert fields.get(key) == c_type, key
    assert fields["arena_op_t.n_inputs"] == "uint16_t" and fields["arena_model_t.n_tensors"] == "uint32_t"


def test_runtime_compile_flags_refuse_overflow_and_trigraphs() -> None:
    for flags in (firmware.HOST_CFLAGS, firmware.TARGET_CFLAGS):
        assert "-Werror=overflow" in flags and "-Werror=trigraphs" in flags
    # the SCons build's compile flags (arena_tool.builder.build_graph owns them; the tool only wires them)
    scons_flags = build_graph.compile_flags(["-mcpu=cortex-m4"], ".")
    assert "-Werror=overflow" in scons_flags and "-Werror=trigraphs" in scons_flags


# --- 2. model text never becomes C ---------------------------------------------------------------

@pytest.mark.parametrize("text", HOSTILE)
def test_comment_and_string_escapes_leave_nothing_to_interpret(text: str) -> None:
    for out in (codegen.c_comment(text), codegen.c_string(text)[1:-1]):
        assert "??" not in out and all(" " <= ch <= "~" for ch in out), out
    comment = codegen.c_comment(text)
    assert "*/" not in comment and "/*" not in comment
    assert "\\" not in comment.replace("\\x", "")  # only \xNN escapes: no line splice


def hostile_model(tmp: Path) -> str:
    """Every intermediate tensor, constant and node named by a hostile string; the graph's own
    inputs and outputs plain (main.c prints output names on one line)."""
    names = HOSTILE
    nodes, inits, prev = [], [], "x"
    for k, name in enumerate(names):
        const = f"{name}:c{k}"
        nodes.append(M.node("Add", [prev, const], [f"{name}:t{k}"], f"{name}:n{k}"))
        inits.append(M.const(const, np.array([0.25 * (k + 1)], np.float32)))
        prev = f"{name}:t{k}"
    nodes.append(M.node("Sigmoid", [prev], ["y"], "out"))
    return save(tmp, nodes, [M.vi("x", [1, 4])], [M.vi("y", [1, 4])], inits, name="hostile")


def _tokens_outside_strings(c_file: Path) -> str:
    """The preprocessed translation unit (trigraphs on) with string and char literals removed."""
    p = subprocess.run(["gcc", "-std=c99", "-trigraphs", "-E", "-P", f"-I{fwbuild.RUNTIME}", f"-I{c_file.parent}",
                        str(c_file)], capture_output=True, text=True, check=True)
    return re.sub(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', '""', p.stdout)


def test_hostile_names_compile_inject_nothing_and_run(tmp_path: Path) -> None:
    path = hostile_model(tmp_path)
    doc, text, gen = host_run(tmp_path, "hostile", path, ["-trigraphs", "-Wtrigraphs"])
    assert_matches_onnxruntime(text, "hostile", path, doc, ["y"])
    for c in [*gen, *(p.with_suffix(".h") for p in gen)]:
        raw = c.read_text()
        assert "??" not in raw and raw.isascii()
    for c in gen:
        assert not re.search(r"\bevil\b", _tokens_outside_strings(c))
        assert compile_only(c, "-trigraphs", "-Wall", "-Wextra", "-Werror", "-pedantic").returncode == 0
        syms = subprocess.run(["nm", str(c.with_suffix(".o"))], capture_output=True, text=True, check=True).stdout
        assert not re.search(r"\bevil\b", syms), syms  # a sanitized id may hold it (x____int_evil_), never alone


# --- 3. identifiers unique ignoring case, and never a generated name --------------------------

def test_unique_ids_ignore_case_and_avoid_reserved_names() -> None:
    ids = codegen.unique_ids(["x", "X", "_COUNT", "_count", "x_2", "X_2"], reserved=[codegen.COUNT_ID])
    assert len({i.upper() for i in ids}) == len(ids)
    assert codegen.COUNT_ID.upper() not in {i.upper() for i in ids}
    assert ids[:2] == ["x", "X_2"]


def test_tensors_x_X_and__COUNT_give_distinct_c_names(tmp_path: Path) -> None:
    nodes = [M.node("Relu", ["x"], ["X"], "n1"), M.node("Add", ["X", "_COUNT"], ["_count"], "n2"),
             M.node("Sigmoid", ["_count"], ["y"], "n3")]
    path = save(tmp_path, nodes, [M.vi("x", [1, 4])], [M.vi("y", [1, 4])],
                [M.const("_COUNT", np.array([0.5], np.float32))], name="ids")
    doc, text, gen = host_run(tmp_path, "ids", path)
    assert_matches_onnxruntime(text, "ids", path, doc, ["y"])
    header = gen[0].with_suffix(".h").read_text()
    enum = re.findall(r"^\s+(IDS_T_\w+) =", header, flags=re.M)
    assert len(enum) == len(set(enum)) == 6 and enum.count("IDS_T__COUNT") == 1
    main = tmp_path / "use.c"
    main.write_text(f'#include "{gen[0].with_suffix(".h").name}"\nint last(void) {{ return IDS_T__COUNT; }}\n')
    p = compile_only(main, "-Wall", "-Wextra", "-Werror", "-pedantic")
    assert p.returncode == 0, p.stderr


# --- 4. coverage names what the runtime cannot run ----------------------------------------------

def _gaps(path: str) -> list[runtime_support.Gap]:
    return runtime_support.gaps(lowering.load(path))


def _unsupported(tmp: Path, case: str) -> str:
    f = TensorProto.FLOAT
    if case == "conv3d":
        return save(tmp, [M.node("Conv", ["x", "w"], ["y"], "c3")], [M.vi("x", [1, 2, 4, 4, 4])],
                    [M.vi("y", [1, 3, 2, 2, 2])], [M.weight("w", [3, 2, 3, 3, 3])])
    if case == "split_unnamed":
        return save(tmp, [M.node("Split", ["x", "s"], ["a", ""], "sp", axis=1), M.node("Relu", ["a"], ["y"])],
                    [M.vi("x", [1, 4])], [M.vi("y", [1, 1])], [M.const("s", np.array([1, 3], np.int64))])
    if case == "bn_training":
        inits = [M.const(n, np.ones(2, np.float32)) for n in ("s", "b", "mu", "var")]
        return save(tmp, [M.node("BatchNormalization", ["x", "s", "b", "mu", "var"], ["y"], "bn", training_mode=1)],
                    [M.vi("x", [2, 2, 3])], [M.vi("y", [2, 2, 3])], inits, opset=15)
    if case == "dropout_training":
        return save(tmp, [M.node("Dropout", ["x", "r", "t"], ["y"], "dr")], [M.vi("x", [1, 4])], [M.vi("y", [1, 4])],
                    [M.const("r", np.array(0.5, np.float32)), M.const("t", np.array(True))])
    if case == "resize_antialias":
        return save(tmp, [M.node("Resize", ["x", "", "sc"], ["y"], "rs", mode="linear", antialias=1)],
                    [M.vi("x", [1, 1, 8, 8], f)], [M.vi("y", [1, 1, 4, 4], f)],
                    [M.const("sc", np.array([1, 1, 0.5, 0.5], np.float32))], opset=18)
    if case == "quantize_blocked":
        return save(tmp, [M.node("QuantizeLinear", ["x", "s", "z"], ["y"], "q", axis=1, block_size=2)],
                    [M.vi("x", [1, 4])], [M.vi("y", [1, 4], TensorProto.INT8)],
                    [M.const("s", np.full((1, 2), 0.1, np.float32)), M.const("z", np.zeros((1, 2), np.int8))], opset=21)
    if case == "qconv_accumulator":  # 4,000 channels x 3 x 3 products per output overflow int32
        q = [M.const("xs", np.array(0.1, np.float32)), M.const("xz", np.array(0, np.int8)),
             M.const("w", np.ones((1, 4000, 3, 3), np.int8)), M.const("ws", np.array(0.1, np.float32)),
             M.const("wz", np.array(0, np.int8)), M.const("ys", np.array(0.1, np.float32)),
             M.const("yz", np.array(0, np.int8))]
        return save(tmp, [M.node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["y"], "qc")],
                    [M.vi("x", [1, 4000, 3, 3], TensorProto.INT8)], [M.vi("y", [1, 1, 1, 1], TensorProto.INT8)], q)
    raise AssertionError(case)


@pytest.mark.parametrize("case, why", [
    ("conv3d", "3-D kernel"),
    ("split_unnamed", "output 1 is unnamed"),
    ("bn_training", "training_mode=1"),
    ("dropout_training", "training_mode 't' is not a constant false"),
    ("resize_antialias", "antialias=1"),
    ("quantize_blocked", "block_size 2"),
    ("qconv_accumulator", "36000 products per output"),
])
def test_coverage_names_ops_the_runtime_cannot_execute(tmp_path: Path, case: str, why: str) -> None:
    gaps = _gaps(_unsupported(tmp_path, case))
    assert len(gaps) == 1 and why in gaps[0].why, gaps
    assert gaps[0].message("net").startswith(f"model net: op {gaps[0].index} ")


@pytest.mark.parametrize("case, said", [("split_unnamed", "'sp' (Split) cannot run on arena's runtime: output 1"),
                                         ("conv3d", "'c3' (Conv) cannot run on arena's runtime: a 3-D kernel")])
def test_arena_tool_run_refuses_before_compiling(tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str,
                                                 said: str) -> None:
    from arena_tool import cli

    path = _unsupported(tmp_path, case)
    assert cli.main(["run", path, "--board", "host", "--build-dir", str(tmp_path / "b")]) == 1
    assert said in capsys.readouterr().err
    assert not list(tmp_path.glob("b/**/*.c"))  # nothing generated, nothing compiled


def test_split_with_a_named_unread_output_still_runs(tmp_path: Path) -> None:
    """Not over-refused: a named output nobody reads is planned and written."""
    path = save(tmp_path, [M.node("Split", ["x"], ["a", "b"], "sp", axis=1), M.node("Relu", ["a"], ["y"])],
                [M.vi("x", [1, 4])], [M.vi("y", [1, 2])], name="split")
    assert _gaps(path) == []
    doc, text, _ = host_run(tmp_path, "split", path)
    assert_matches_onnxruntime(text, "split", path, doc, ["y"])


# --- 5. stated shapes must be the computed ones -------------------------------------------------

def _relu_sigmoid(tmp: Path, r_shape: list[Any] | None, y_shape: list[int]) -> str:
    vi = [M.vi("r", r_shape)] if r_shape is not None else []
    return save(tmp, [M.node("Relu", ["x"], ["r"], "relu"), M.node("Sigmoid", ["r"], ["y"], "sig")],
                [M.vi("x", [1, 4])], [M.vi("y", y_shape)], value_info=vi, name="vi")


def test_a_value_info_contradicting_the_op_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ArenaError) as e:
        onnx_graph.load(_relu_sigmoid(tmp_path, [1, 5], [1, 4]))
    err = e.value
    assert err.exit_code == EXIT_USAGE and err.field == "graph.value_info.r"
    assert "value_info 'r' states float [1, 5] but node 'relu' (Relu) computes float [1, 4]" in str(err)
    assert "remove or correct the value_info of 'r'" in (err.hint or "")


def test_a_graph_output_contradicting_the_op_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ArenaError) as e:
        onnx_graph.load(_relu_sigmoid(tmp_path, None, [1, 4, 1]))
    assert "graph output 'y' states float [1, 4, 1] but node 'sig' (Sigmoid) computes float [1, 4]" in str(e.value)
    assert e.value.field == "graph.output.y"


@pytest.mark.parametrize("r_shape", [[1, 4], ["N", 4], None])
def test_agreeing_or_symbolic_value_info_loads(tmp_path: Path, r_shape: list[Any] | None) -> None:
    g = onnx_graph.load(_relu_sigmoid(tmp_path, r_shape, [1, 4]))
    assert g.types["r"].shape == (1, 4)
