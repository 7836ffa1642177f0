"""codegen: the generated C tables say exactly what the plan and the model say.

A small C program linked with the generated tables dumps every row (tensor
names, offsets, sizes, shapes, constant bytes, op wiring); the dump must equal
the plan document and the ONNX initializers. The text is deterministic and
compiles warning-free (-std=c99 -Wall -Wextra -Werror -pedantic) with host gcc
and arm-none-eabi-gcc.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import subprocess
import sys

import numpy as np
import onnx
import pytest
from conftest import require_tool
from onnx import TensorProto, helper, numpy_helper

import fwbuild
from arena_tool.plan import plancheck, planners
from arena_tool.emit import codegen

EXAMPLES = ("kws", "resnet8", "autoencoder", "kws_int8")
PLANNER = "greedy_size" if "greedy_size" in planners.PLANNERS else "naive"

DUMP_C = r"""
#include <stdio.h>
#include <string.h>
#include "arena_model.h"
int main(void)
{
    uint32_t e, i, j;
    printf("arena %u entries %u\n", (unsigned)arena_size, (unsigned)arena_entry_count);
    for (e = 0; e < arena_entry_count; ++e) {
        const arena_model_t *m = arena_entries[e].model;
        printf("model %s %u %u\n", m->name, (unsigned)m->arena_size, (unsigned)arena_entries[e].base);
        for (i = 0; i < m->n_tensors; ++i) {
            const arena_tensor_t *t = &m->tensors[i];
            printf("tensor %u %s %s %u %u %u %u %u", (unsigned)i, m->tensor_names[i], t->data ? "const" : "arena",
                   (unsigned)t->offset, (unsigned)t->size, (unsigned)t->elements, (unsigned)t->dtype, (unsigned)t->rank);
            for (j = 0; j < t->rank; ++j) printf(" %d", (int)t->shape[j]);
            if (t->data) {
                const unsigned char *b = (const unsigned char *)t->data;
                printf(" bytes ");
                for (j = 0; j < t->elements * arena_dtype_size(t->dtype); ++j) printf("%02x", b[j]);
            }
            printf("\n");
        }
        for (i = 0; i < m->n_ops; ++i) {
            const arena_op_t *o = &m->ops[i];
            printf("op %u %s %s %d in", (unsigned)i, m->op_types[i], m->op_names[i], (int)o->workspace);
            for (j = 0; j < o->n_inputs; ++j) printf(" %d", (int)o->inputs[j]);
            printf(" out");
            for (j = 0; j < o->n_outputs; ++j) printf(" %d", (int)o->outputs[j]);
            printf("\n");
        }
        printf("io in");
        for (i = 0; i < m->n_inputs; ++i) printf(" %d", (int)m->inputs[i]);
        printf(" out");
        for (i = 0; i < m->n_outputs; ++i) printf(" %d", (int)m->outputs[i]);
        printf("\n");
    }
    return 0;
}
"""
DTYPE_CODE = {"float32": 0, "int8": 1, "uint8": 2, "int32": 3, "int64": 4}


def dump(tmp_path, models) -> list[str]:
    gen = fwbuild.generate(tmp_path, models)
    (tmp_path / "dump.c").write_text(DUMP_C)
    exe = tmp_path / "dump"
    subprocess.run(["gcc", *fwbuild.CFLAGS, "-DARENA_NAMES", f"-I{fwbuild.RUNTIME}", str(tmp_path / "dump.c"),
                    *map(str, sorted(fwbuild.RUNTIME.glob("*.c"))), *map(str, gen), "-o", str(exe)],
                   check=True, capture_output=True, text=True)
    return subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.splitlines()


@pytest.fixture(scope="module")
def example_docs():
    return [(m, str(fwbuild.MODELS / f"{m}.onnx"), fwbuild.plan(str(fwbuild.MODELS / f"{m}.onnx"), PLANNER))
            for m in EXAMPLES]


def test_tables_equal_the_plan_and_the_initializers(tmp_path, example_docs):
    lines = dump(tmp_path, example_docs)
    assert lines[0] == f"arena {max(p.arena_size for _, _, p in example_docs)} entries {len(example_docs)}"
    for sym, path, plan in example_docs:
        doc = plan.to_json()  # compared as the file states it
        model = onnx.load(path)
        inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
        start = lines.index(f"model {sym} {doc['arena_size']} 0")
        end = next((k for k in range(start + 1, len(lines)) if lines[k].startswith("model ")), len(lines))
        mine = lines[start + 1:end]
        rows = [ln.split() for ln in mine if ln.startswith("tensor ")]
        by_name = {r[2]: r for r in rows}
        index = {r[2]: int(r[1]) for r in rows}
        low = plancheck.lowered_model(path, plan)
        stored = codegen.stored(low, codegen.table_names(plan)[1])
        index.update((n, index[first]) for n, first in stored.shared.items())  # an equal constant's row
        for b in doc["buffers"]:  # every planned tensor at its planned offset, with its shape
            r = by_name[b["name"]]
            assert r[3] == "arena"
            assert [int(v) for v in r[4:9]] == [b["offset"], b["size"], b["elements"], DTYPE_CODE[b["dtype"]],
                                                len(b["shape"])]
            assert [int(v) for v in r[9:9 + len(b["shape"])]] == b["shape"]
        consts = [r for r in rows if r[3] == "const"]
        assert consts, "weights are tables in flash"
        for r in consts:  # the constant bytes are the initializer's bytes, exactly (a uniform zero point: one)
            want = np.ascontiguousarray(stored.one.get(r[2], inits[r[2]]))
            assert bytes.fromhex(r[r.index("bytes") + 1]) == want.tobytes(), r[2]
        ops = [ln.split() for ln in mine if ln.startswith("op ")]
        assert len(ops) == len(doc["schedule"])
        for step, op in zip(doc["schedule"], ops):
            assert op[2:4] == [step["op_type"], step["name"]]
            outs = [int(v) for v in op[op.index("out") + 1:]]
            assert outs == [index.get(n, -1) for n in step["outputs"]]
            ins = [int(v) for v in op[op.index("in") + 1:op.index("out")]]
            for n, i in zip(step["inputs"], ins):
                assert i == -1 or index[n] == i
            ws = int(op[4])
            assert ws == (index[step["workspace"]] if step["workspace"] else -1)


def test_header_macros_and_enum(example_docs):
    sym, path, plan = example_docs[0]
    h, c = codegen.model_sources(plan, plancheck.lowered_model(path, plan), sym)
    assert f"#define KWS_ARENA_SIZE {plan.arena_size}u" in h
    assert f"#define KWS_LOWER_BOUND {plan.lower_bound}u" in h
    assert "KWS_T_INPUT = 0," in h
    assert "extern const arena_model_t kws_model;" in h
    assert "const arena_model_t kws_model = {" in c
    assert "static const float kws_c_conv1_w[" in c


def _names_block(c: str, sym: str) -> tuple[str, str]:
    """(the source without its ARENA_NAMES block, the block)."""
    start = c.index("#if defined(ARENA_NAMES)")
    end = c.index("#endif", start) + len("#endif")
    assert f"{sym}_tensor_names" in c[start:end] and f"{sym}_op_names" in c[start:end]
    return c[:start] + c[end:], c[start:end]


def test_release_tables_name_only_the_graph_inputs_and_outputs(example_docs):
    """No tensor's or op's name is in a release build's tables (ARENA_NAMES: a debug build's),
    but the graph inputs' and outputs' names (io_names), which an application prints."""
    sym, path, plan = example_docs[0]
    low = plancheck.lowered_model(path, plan)
    _, c = codegen.model_sources(plan, low, sym)
    release, names = _names_block(c, sym)
    io = [*low.inputs, *low.outputs]
    inner = [st.name for st in plan.schedule] + [b.name for b in plan.buffers if b.name not in io]
    assert inner and all(codegen.c_string(n) in names for n in inner)
    assert not [n for n in inner if codegen.c_string(n) in release]
    assert all(codegen.c_string(n) in release for n in io) and f"{sym}_io_names, ARENA_NAME(" in release


def test_equal_small_constants_are_stored_once_and_a_uniform_zero_point_as_one_entry(example_docs):
    sym, path, plan = next(d for d in example_docs if d[0] == "kws_int8")
    low = plancheck.lowered_model(path, plan)
    arena, consts = codegen.table_names(plan)
    stored = codegen.stored(low, consts)
    assert len(stored.shared) > 10 and stored.one  # its zero points: all zero, per channel, many alike
    h, c = codegen.model_sources(plan, low, sym)
    SYM = sym.upper()
    assert f"#define {SYM}_N_TENSORS {len(arena) + len(consts) - len(stored.shared)}u" in h
    enum = dict(line.strip().rstrip(",").split(" = ") for line in h.splitlines() if line.startswith(f"    {SYM}_T_"))
    ids = dict(zip(arena + consts, codegen.unique_ids(arena + consts, reserved=(codegen.COUNT_ID,))))
    for n, first in stored.shared.items():  # its enum constant is the earlier one's row, and no array of its own
        assert enum[f"{SYM}_T_{ids[n].upper()}"] == enum[f"{SYM}_T_{ids[first].upper()}"]
        assert f"{sym}_c_{ids[n]}[" not in c
    for n in stored.one:
        if n not in stored.shared:
            assert f"{sym}_c_{ids[n]}[1]" in c
    # the plan counts the weights as the tables store them
    kept = [n for n in consts if n not in stored.shared]
    stored_bytes = sum(int(stored.one[n].nbytes if n in stored.one else low.value(n).nbytes) for n in kept)
    assert f"#define {SYM}_WEIGHTS_BYTES {stored_bytes}u" in h and plan.weights_bytes == stored_bytes


def _gen_script(seed: str) -> str:
    code = ("import sys; sys.path.insert(0, 'tests'); import fwbuild, hashlib; from arena_tool.plan import plancheck; from arena_tool.emit import codegen;"
            "p = str(fwbuild.MODELS / 'resnet8.onnx'); d = fwbuild.plan(p, 'naive');"
            "h, c = codegen.model_sources(d, plancheck.lowered_model(p, d), 'resnet8'); ah, ac = codegen.arena_sources('b', 9, [('resnet8', 0)]);"
            "print(hashlib.sha256((h + c + ah + ac).encode()).hexdigest())")
    env = dict(os.environ, PYTHONHASHSEED=seed)
    return subprocess.run([sys.executable, "-c", code], cwd=fwbuild.REPO, env=env, check=True,
                          capture_output=True, text=True).stdout


def test_deterministic_under_different_hash_seeds():
    assert _gen_script("1") == _gen_script("2")


@pytest.mark.parametrize("compiler", ["gcc", "arm-none-eabi-gcc"])
def test_generated_c_compiles_warning_free(tmp_path, example_docs, compiler):
    require_tool(compiler)
    gen = fwbuild.generate(tmp_path, example_docs)
    arch = ["-mcpu=cortex-m4", "-mthumb", "-mfpu=fpv4-sp-d16", "-mfloat-abi=hard"] if compiler != "gcc" else []
    for src in gen:
        p = subprocess.run([compiler, *arch, *fwbuild.CFLAGS, "-c", f"-I{fwbuild.RUNTIME}", str(src),
                            "-o", str(tmp_path / "x.o")], capture_output=True, text=True)
        assert p.returncode == 0 and p.stderr == "", p.stderr


def test_identifiers_are_sanitized_and_collisions_resolved_in_order():
    assert codegen.unique_ids(["a.b", "a_b", "A:B", "1x", "", "a_b_2"]) == \
        ["a_b", "a_b_2", "A_B_3", "t_1x", "t_", "a_b_2_2"]
    assert codegen.c_string('a"b\\c\n?') == '"a\\"b\\\\c\\012\\?"'


def test_float_literals_are_exact():
    for v in (0.1, -1.0, 3.4028235e38, 1.4e-45, 1e-7, 123456789.0):
        lit = codegen.c_float(v)
        assert lit.endswith("f") and np.float32(float(lit[:-1])) == np.float32(v)
    assert codegen.c_float(float("inf")) == "INFINITY"
    assert codegen.c_int(-2**63, 64) == "(-9223372036854775807LL - 1)"


def test_arena_sources():
    h, c = codegen.arena_sources("nucleo-f746", 4096, [("kws", 0), ("ae.v2", 2048)])
    assert "#define ARENA_SIZE 4096u" in h and "#define ARENA_BASE_AE_V2 2048u" in h
    assert '__attribute__((section(".arena"), aligned(16))) uint8_t arena[4096];' in c
    assert "{&ae_v2_model, 2048u}," in c and "const uint32_t arena_entry_count = 2u;" in c
    h0, c0 = codegen.arena_sources("b", 0, [])
    assert 'section(".arena")' not in c0 and "arena_entry_count = 0u" in c0


def test_folded_and_constant_node_values_become_tables(tmp_path):
    """A weight computed by a constant subgraph (Transpose of an initializer) and a Constant node."""
    w0 = np.arange(12, dtype=np.float32).reshape(3, 4) / 7
    nodes = [helper.make_node("Transpose", ["w0"], ["wt"], perm=[1, 0]),
             helper.make_node("Constant", [], ["k"], value=numpy_helper.from_array(np.full(3, 0.5, np.float32))),
             helper.make_node("MatMul", ["x", "wt"], ["mm"]),
             helper.make_node("Add", ["mm", "k"], ["y"])]
    graph = helper.make_graph(nodes, "fold", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
                              [numpy_helper.from_array(w0, "w0")])
    path = tmp_path / "fold.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    plan = fwbuild.plan(str(path), "naive")
    assert [s.op_type for s in plan.schedule] == ["MatMul", "Add"]
    lines = dump(tmp_path, [("fold", str(path), plan)])
    consts = {ln.split()[2]: ln.split() for ln in lines if ln.startswith("tensor ") and " const " in ln}
    assert bytes.fromhex(consts["wt"][-1]) == np.ascontiguousarray(w0.T).tobytes()
    assert bytes.fromhex(consts["k"][-1]) == np.full(3, 0.5, np.float32).tobytes()


def test_write_is_atomic_and_leaves_no_temp_files(tmp_path):
    target = tmp_path / "out" / "x.h"
    codegen.write(str(target), "one\n")
    codegen.write(str(target), "two\n")
    assert target.read_text() == "two\n"
    assert os.listdir(target.parent) == ["x.h"]


def test_unsupported_op_gets_a_row_not_an_error(tmp_path):
    graph = helper.make_graph([helper.make_node("Sin", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
    path = tmp_path / "t.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    plan = fwbuild.plan(str(path), "naive")
    _, c = codegen.model_sources(plan, plancheck.lowered_model(str(path), plan), "t")
    assert "ARENA_OP_UNSUPPORTED" in c and '"Sin"' in c
    assert hashlib  # imported for the subprocess script's parity


def test_qgemm_multipliers_are_the_kernels_float32_products(tmp_path):
    """An int8-output QGemm's row carries alpha * a_scale * b_scale[j] / y_scale per column as
    floats, rounded as the kernel's float32 arithmetic rounds them (so a core without an FPU
    computes none at run time); a float32-output QGemm's carries none."""
    from arena_tool.model import lowering

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
    from test_runtime_int8 import qgemm

    m = qgemm(5, 2, 30, 7, alpha=0.7)
    path = tmp_path / "g.onnx"
    onnx.save(m, str(path))
    model = lowering.load(str(path))
    (op,) = [o for o in model.ops if o.op_type == "QGemm"]
    consts = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    b_s = consts["b_s"].astype(np.float32)
    ab = np.float32(0.7) * np.float32(consts["a_s"])
    want = [float(np.float32(np.float32(ab * s) / np.float32(consts["y_s"]))) for s in b_s]
    assert codegen.op_attrs(op, model)["floats"] == want
    float_out = dataclasses.replace(op, inputs=op.inputs[:7])
    assert "floats" not in codegen.op_attrs(float_out, model)
