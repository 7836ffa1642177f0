"""The floor of issue 23: seeded random and structured mutations of every input arena reads
(.tflite, ONNX with QDQ, .npz, plan files, manifests), each run in a forked child of this
process; every case ends in exit 0, 1 or 2 with one line, never a signal, exit 3 or more than
10 s.

Bounded in count and time: the default run is a few hundred cases in well under a minute; the
``slow`` test runs more of them and adds ``verify`` in TFLM. ARENA_FUZZ_SEED picks another
seed (a failure prints the seed, the case and the file it kept, so it replays).
"""

from __future__ import annotations

import copy
import json
import os
import signal
import sys
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np
import onnx
import pytest

import models as M
from arena_tool.cli import main
from arena_tool.core.errors import ArenaError
from arena_tool.model import tflite_model
from arena_tool.run import firmware
from arena_tool.target import manifest
from tflite_models import branch_model, chain_model, pack, relu_model

fb = tflite_model.schema()
SEED = int(os.environ.get("ARENA_FUZZ_SEED", "0"))
LIMIT_S = 10.0


@dataclass
class Outcome:
    case: str
    code: int | None  # exit status; None: killed by a signal or the time limit
    how: str  # "", "signal SIGSEGV", "timeout"
    seconds: float
    err: str


def in_child(fn: Callable[[], int], case: str) -> Outcome:
    """``fn()`` in a forked child, its stdout/stderr to files; a signal or > LIMIT_S is recorded, not fatal."""
    out_fd, err_path = os.open(os.devnull, os.O_WRONLY), f"/tmp/arena-fuzz-{os.getpid()}.err"
    t0 = time.perf_counter()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 3
        try:
            err = os.open(err_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(out_fd, 1)
            os.dup2(err, 2)
            sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115 - the child's own streams
            sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115
            code = fn()
            sys.stdout.flush()
            sys.stderr.flush()
        except BaseException as e:  # noqa: BLE001 - whatever escapes is the bug being looked for
            print(f"escaped: {type(e).__name__}: {e}", file=sys.stderr)
            sys.stderr.flush()
        os._exit(code)
    os.close(out_fd)
    how, code = "", None
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            if os.WIFSIGNALED(status):
                how = f"signal {signal.Signals(os.WTERMSIG(status)).name}"
            else:
                code = os.WEXITSTATUS(status)
            break
        if time.perf_counter() - t0 > LIMIT_S:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            how = "timeout"
            break
        time.sleep(0.002)
    seconds = time.perf_counter() - t0
    try:
        err = Path(err_path).read_text(errors="replace")
        os.unlink(err_path)
    except OSError:
        err = ""
    return Outcome(case, code, how, seconds, err)


def cli(*argv: object) -> Callable[[], int]:
    return lambda: main([str(a) for a in argv])


def library(call: Callable[[], object]) -> Callable[[], int]:
    """A library entry (no CLI of its own here) under the CLI's contract: ArenaError is one line."""
    def run() -> int:
        try:
            call()
        except ArenaError as e:
            print(f"arena-tool: {e.render()}", file=sys.stderr)
            return e.exit_code
        return 0
    return run


def bad(o: Outcome) -> str | None:
    """Why an outcome breaks the contract, or None."""
    if o.how:
        return o.how
    if o.code not in (0, 1, 2):
        return f"exit {o.code}"
    lines = [ln for ln in o.err.splitlines() if ln.strip()]
    if o.code == 2 and len(lines) != 1:
        return f"{len(lines)} error lines"
    if "Traceback" in o.err:
        return "a traceback"
    if o.seconds > LIMIT_S:
        return f"{o.seconds:.1f} s"
    return None


# --- mutations ---------------------------------------------------------------------------------

def flip_bytes(rng: np.random.Generator, data: bytes) -> bytes:
    """Random byte-level damage: flipped bytes, a cut, a duplicated or deleted run."""
    b = bytearray(data)
    kind = rng.integers(4)
    if kind == 0 or not b:
        for _ in range(int(rng.integers(1, 9))):
            if b:
                b[int(rng.integers(len(b)))] = int(rng.integers(256))
    elif kind == 1:
        b = b[:int(rng.integers(len(b)))]
    elif kind == 2:
        i, n = int(rng.integers(len(b))), int(rng.integers(1, 64))
        b[i:i] = b[i:i + n]
    else:
        i, n = int(rng.integers(len(b))), int(rng.integers(1, 64))
        del b[i:i + n]
    return bytes(b)


NASTY_INTS = [-(2 ** 31), -7, -3, -1, 0, 1, 2, 3, 7, 99, 255, 9999, 2 ** 15, 2 ** 31 - 1]
NASTY_FLOATS = [0.0, -0.05, float("nan"), float("inf"), -float("inf"), 1e-45, 1e38]


def nasty_int(rng: np.random.Generator) -> int:
    return int(NASTY_INTS[int(rng.integers(len(NASTY_INTS)))])


def tflite_structured(rng: np.random.Generator) -> bytes:
    """A small model (relu, chain, branch) with one to three fields set to hostile values."""
    base = [lambda: relu_model(), lambda: tflite_model.unpack(chain_model(), "x"),
            lambda: tflite_model.unpack(branch_model(), "x")][int(rng.integers(3))]
    m = base()
    sg = m.subgraphs[0]
    for _ in range(int(rng.integers(1, 4))):
        t = sg.tensors[int(rng.integers(len(sg.tensors)))]
        op = sg.operators[int(rng.integers(len(sg.operators)))]
        kind = int(rng.integers(12))
        if kind == 0:
            op.inputs = np.array([nasty_int(rng) for _ in range(int(rng.integers(0, 3)))], np.int32)
        elif kind == 1:
            op.outputs = np.array([nasty_int(rng) for _ in range(int(rng.integers(0, 3)))], np.int32)
        elif kind == 2:
            op.opcodeIndex = abs(nasty_int(rng)) % 300
        elif kind == 3:
            t.buffer = abs(nasty_int(rng)) % 100000
        elif kind == 4:
            rank = int(rng.integers(0, 10))
            t.shape = np.array([nasty_int(rng) if rng.random() < 0.3 else int(rng.integers(1, 5))
                                for _ in range(rank)], np.int32)
        elif kind == 5:
            t.type = int(rng.integers(0, 20))
        elif kind == 6:
            q = fb.QuantizationParametersT()
            n = int(rng.integers(1, 4))
            q.scale = np.array([NASTY_FLOATS[int(rng.integers(len(NASTY_FLOATS)))] if rng.random() < 0.5 else 0.1
                                for _ in range(n)], np.float32)
            q.zeroPoint = np.array([nasty_int(rng) % 256 - 128 for _ in range(int(rng.integers(0, 4)))], np.int64)
            q.quantizedDimension = int(rng.integers(0, 4))
            t.quantization = q
            t.type = fb.TensorType.INT8
        elif kind == 7:
            sg.outputs = np.array([nasty_int(rng) for _ in range(int(rng.integers(0, 3)))], np.int32)
        elif kind == 8:
            sg.inputs = np.array([nasty_int(rng) for _ in range(int(rng.integers(0, 3)))], np.int32)
        elif kind == 9:
            md = fb.MetadataT()
            md.name = "OfflineMemoryAllocation"
            b = fb.BufferT()
            words = [1, 1, len(sg.tensors)] + [nasty_int(rng) for _ in sg.tensors]
            words = words[:int(rng.integers(0, len(words) + 1))]
            b.data = np.frombuffer(np.array(words, "<i4").tobytes(), np.uint8).copy()
            m.buffers.append(b)
            md.buffer = len(m.buffers) - 1 if rng.random() < 0.8 else nasty_int(rng) % 1000
            m.metadata = (m.metadata or []) + [md]
        elif kind == 10:
            t.isVariable = True
        else:
            t.shapeSignature = np.array([nasty_int(rng) for _ in range(len(t.shape))], np.int32)
    return pack(m)


def onnx_models() -> list[onnx.ModelProto]:
    return [M.chain(), M.relu_chain(), M.conv(), M.qdq_conv()]


def onnx_structured(rng: np.random.Generator) -> bytes:
    """A small float or QDQ model with one to three fields set to hostile values."""
    models = onnx_models()
    m = copy.deepcopy(models[int(rng.integers(len(models)))])
    g = m.graph
    for _ in range(int(rng.integers(1, 4))):
        kind = int(rng.integers(9))
        if kind == 0 and g.initializer:  # a weight or a scale to a hostile value
            init = g.initializer[int(rng.integers(len(g.initializer)))]
            a = onnx.numpy_helper.to_array(init).copy()
            if a.size:
                flat = a.reshape(-1)
                v = NASTY_FLOATS[int(rng.integers(len(NASTY_FLOATS)))] if a.dtype.kind == "f" else nasty_int(rng)
                try:
                    flat[int(rng.integers(flat.size))] = v
                except (OverflowError, ValueError):
                    pass
                if rng.random() < 0.3:
                    a = flat[:int(rng.integers(flat.size + 1))]
            init.CopyFrom(onnx.numpy_helper.from_array(a, init.name))
        elif kind == 1:  # a dim of an input or output
            vs = list(g.input) + list(g.output)
            dims = vs[int(rng.integers(len(vs)))].type.tensor_type.shape.dim
            if len(dims):
                dims[int(rng.integers(len(dims)))].dim_value = nasty_int(rng)
        elif kind == 2:
            m.opset_import[0].version = int(rng.choice([0, 1, 7, 10, 13, 21, 99, 10000]))
        elif kind == 3 and g.node:  # rewire a node's input
            n = g.node[int(rng.integers(len(g.node)))]
            names = [v.name for v in g.input] + [i.name for i in g.initializer] + [o for x in g.node for o in x.output]
            if n.input:
                n.input[int(rng.integers(len(n.input)))] = names[int(rng.integers(len(names)))] if rng.random() < .8 \
                    else "missing"
        elif kind == 4 and g.node:
            g.node[int(rng.integers(len(g.node)))].op_type = str(rng.choice(
                ["Relu", "Conv", "Add", "Loop", "QuantizeLinear", "DequantizeLinear", "Nope", "Reshape", "MatMul"]))
        elif kind == 5 and g.node:  # an attribute to a hostile value
            n = g.node[int(rng.integers(len(g.node)))]
            name = str(rng.choice(["axis", "kernel_shape", "strides", "pads", "group", "dilations", "alpha"]))
            value: Any = nasty_int(rng) if name in ("axis", "group") else [nasty_int(rng)] * int(rng.integers(0, 5))
            kept = [a for a in n.attribute if a.name != name]
            del n.attribute[:]
            n.attribute.extend(kept + [onnx.helper.make_attribute(name, value, attr_type=None if value != []
                                                                  else onnx.AttributeProto.INTS)])
        elif kind == 6 and g.initializer:  # an initializer as a graph output
            g.output.append(onnx.helper.make_tensor_value_info(g.initializer[0].name, onnx.TensorProto.FLOAT, None))
        elif kind == 7 and g.node:
            del g.node[int(rng.integers(len(g.node)))]
        elif kind == 8:
            vs = list(g.input) + list(g.output)
            vs[int(rng.integers(len(vs)))].type.tensor_type.elem_type = int(rng.integers(0, 25))
    return m.SerializeToString()


def npz_case(rng: np.random.Generator, path: Path) -> None:
    """An .npz for a float32 [1, 16] input 'x': valid, or damaged in its zip, header or members."""
    kind = int(rng.integers(7))
    x = rng.standard_normal((1, 16)).astype(np.float32)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED if rng.random() < .5 else zipfile.ZIP_STORED) as z:
        if kind == 0:
            z.writestr("x.npy", b"not an array")
        elif kind == 1:  # a header declaring a huge or odd shape
            with z.open("x.npy", "w") as f:
                shape = tuple(int(abs(nasty_int(rng))) for _ in range(int(rng.integers(1, 4))))
                np.lib.format.write_array_header_1_0(f, {"descr": "<f4", "fortran_order": False, "shape": shape})
                f.write(bytes(64))
        elif kind == 2:
            with z.open("x.npy", "w") as f:
                np.lib.format.write_array(f, x.astype(rng.choice(["<f8", "<i4", "|i1", "|O"]) if rng.random() < .9
                                                      else np.float32), allow_pickle=True)
        elif kind == 3:
            with z.open("x.npy", "w") as f:
                np.lib.format.write_array(f, x.reshape(16, 1 if rng.random() < .5 else 1))
            z.writestr("extra.npy", b"")
        else:
            with z.open("x.npy", "w") as f:
                np.lib.format.write_array(f, x)
    if kind >= 5:
        path.write_bytes(flip_bytes(rng, path.read_bytes()))


def jsonish(rng: np.random.Generator) -> Any:
    return [nasty_int(rng), -1, 2 ** 40, 0.5, "x", None, [], {}, True, float(rng.random())][int(rng.integers(10))]


def mutate_doc(rng: np.random.Generator, doc: Any) -> Any:
    """One structured change to a JSON document: a value replaced, a key dropped, a list entry doubled."""
    doc = copy.deepcopy(doc)
    paths: list[tuple[Any, Any]] = []

    def walk(x: Any) -> None:
        if isinstance(x, dict):
            for k, v in x.items():
                paths.append((x, k))
                walk(v)
        elif isinstance(x, list):
            for i, v in enumerate(x):
                paths.append((x, i))
                walk(v)
    walk(doc)
    if not paths:
        return doc
    parent, key = paths[int(rng.integers(len(paths)))]
    kind = int(rng.integers(3))
    if kind == 0:
        parent[key] = jsonish(rng)
    elif kind == 1:
        del parent[key]
    elif isinstance(parent, list):
        parent.append(copy.deepcopy(parent[key]))
    else:
        parent[key] = copy.deepcopy(parent[key]) if not isinstance(parent[key], int) else parent[key] * 4096
    return doc


MANIFEST = """\
sharing: sequential
region: auto
budget: 90%
reserve: {stack: 4K, heap: 0}
defaults: {planner: optimal, alignment: 16, time_limit: 5}
models:
  - name: kws
    path: m.onnx
    input_shapes: {T0: [64, 16]}
  - {name: other, path: m.onnx, planner: greedy_size}
boards:
  - {name: mps2_an500, budget: 60K}
  - mps2_an386
"""


def manifest_case(rng: np.random.Generator) -> str:
    lines = MANIFEST.splitlines()
    for _ in range(int(rng.integers(1, 4))):
        i = int(rng.integers(len(lines)))
        kind = int(rng.integers(4))
        if kind == 0:
            del lines[i]
        elif kind == 1:
            lines[i] = lines[i].replace(":", ": " + str(jsonish(rng)) + " #", 1)
        elif kind == 2:
            lines.insert(i, lines[i])
        else:
            words = ["&a [*a, *a]", "!!python/object:os.system", "1e999", "-3", "{", "]", "'", "\t", "0x10", "~"]
            lines[i] = lines[i][:int(rng.integers(len(lines[i]) + 1))] + str(rng.choice(words))
    return "\n".join(lines) + "\n"


# --- the runs ----------------------------------------------------------------------------------

def cases(rng: np.random.Generator, folder: Path, n: int, verify_tflite: bool) -> Iterator[tuple[str, Callable[[], int]]]:
    """``n`` cases of each kind, files written into ``folder`` (kept for a failure's replay)."""
    onnx_path = folder / "m.onnx"
    onnx_path.write_bytes(M.chain().SerializeToString())
    plan_path = folder / "good.plan.json"
    assert main(["plan", str(onnx_path), "--planner", "greedy_size", "-o", str(plan_path)]) == 0
    good_plan = json.loads(plan_path.read_text())
    seeds = [relu_model, lambda: tflite_model.unpack(chain_model(), "x")]
    for i in range(n):
        p = folder / f"t{i}.tflite"
        if rng.random() < 0.5:
            p.write_bytes(tflite_structured(rng))
        else:
            p.write_bytes(flip_bytes(rng, pack(seeds[int(rng.integers(2))]())))
        yield f"tflite plan {p.name}", cli("plan", p, "--planner", "greedy_size", "--time-limit", "2")
        if rng.random() < 0.3:
            yield f"tflite plan -o {p.name}", cli("plan", p, "--time-limit", "2", "-o", folder / f"t{i}.out.tflite")
        if verify_tflite:
            yield f"tflite verify {p.name}", cli("verify", p, p, "--runs", "1")
    for i in range(n):
        p = folder / f"o{i}.onnx"
        data = onnx_structured(rng)
        p.write_bytes(data if rng.random() < 0.7 else flip_bytes(rng, data))
        yield f"onnx plan {p.name}", cli("plan", p, "--time-limit", "2")
    for i in range(n):
        p = folder / f"i{i}.npz"
        npz_case(rng, p)
        specs = [firmware.TensorSpec("x", "float32", (1, 16))]
        yield f"npz {p.name}", library(lambda p=p, specs=specs: firmware.load_inputs(str(p), specs))
    for i in range(n):
        p = folder / f"p{i}.plan.json"
        doc = mutate_doc(rng, good_plan)
        for _ in range(int(rng.integers(0, 3))):
            doc = mutate_doc(rng, doc)
        text = json.dumps(doc)
        p.write_text(text if rng.random() < 0.8 else flip_bytes(rng, text.encode()).decode("utf-8", "replace"))
        command = ["check", "verify", "explain"][int(rng.integers(3))]
        argv = [command, onnx_path, p] if command != "explain" else [command, p]
        yield f"plan {command} {p.name}", cli(*argv)
    for i in range(n):
        d = folder / f"m{i}"
        d.mkdir()
        (d / "m.onnx").write_bytes(onnx_path.read_bytes())
        (d / "arena.yaml").write_text(manifest_case(rng))
        yield f"manifest {d.name}", library(lambda d=d: manifest.load(str(d / "arena.yaml")))


def fuzz(tmp_path: Path, n: int, verify_tflite: bool = False) -> list[Outcome]:
    rng = np.random.default_rng(SEED)
    outcomes = [in_child(fn, case) for case, fn in cases(rng, tmp_path, n, verify_tflite)]
    counts: dict[str, dict[int | str, int]] = {}
    for o in outcomes:
        kind = o.case.split()[0]
        key: int | str = o.code if o.code is not None else o.how
        counts.setdefault(kind, {}).setdefault(key, 0)
        counts[kind][key] += 1
    print(f"fuzz seed {SEED}: {len(outcomes)} cases, {sum(o.seconds for o in outcomes):.1f} s, slowest "
          f"{max(o.seconds for o in outcomes):.2f} s; by kind and exit: {json.dumps(counts, sort_keys=True)}")
    return outcomes


def check(outcomes: list[Outcome], tmp_path: Path) -> None:
    failures = [f"{o.case}: {why} ({o.seconds:.1f} s): {o.err.strip()[-600:]}"
                for o in outcomes if (why := bad(o)) is not None]
    assert not failures, f"seed {SEED}, files in {tmp_path}:\n" + "\n".join(failures)


def test_fuzz_every_input_ends_in_0_1_or_2_with_one_line(tmp_path: Path) -> None:
    outcomes = fuzz(tmp_path, n=80)
    check(outcomes, tmp_path)
    assert len(outcomes) >= 400 and {o.code for o in outcomes} >= {0, 2}  # both sides of the contract met


@pytest.mark.slow
def test_fuzz_more_cases_and_tflm(tmp_path: Path) -> None:
    check(fuzz(tmp_path, n=150, verify_tflite=True), tmp_path)
