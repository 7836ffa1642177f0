"""The floors of issues 23 and 35: seeded random and structured mutations of every input arena reads
(manifest and board YAML, ONNX float/QDQ/QOperator, .tflite, plan JSON for check/verify/explain,
.npz, ld scripts, PlatformIO JSON, devicetree, depfile paths); every case ends in exit 0, 1 or 2
with one line, never a signal, exit 3 or more than 10 s of CPU; every plan a case accepts is
re-checked by the validator (``check``).

The cases run in process, through the CLI's ``main`` (or a library entry under its contract), in
two forked workers that each run a stream of cases: a worker's CPU timer (SIGPROF, whose default
action ends the process) is the per-case guard, a wall-clock watchdog in the parent the guard
against a hang; a worker that dies (a signal, the guard) is recorded against its case and
replaced. The default run is over 5,000 cases in well under a minute; the ``slow`` test runs
four times as many and adds ``verify`` in TFLM. ARENA_FUZZ_SEED picks another seed (a failure
prints the seed, the case and the file it kept, so it replays).
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
from arena_tool.target import boards, linkscript, manifest
from tflite_models import branch_model, chain_model, pack, relu_model

fb = tflite_model.schema()
ROOT = Path(__file__).resolve().parent.parent
SEED = int(os.environ.get("ARENA_FUZZ_SEED", "0"))


CASE_CPU_S = 10.0  # the floor: no case over 10 s of CPU
WALL_S = 60.0  # a case whose worker reports nothing for this long hangs (wall: the machine may be loaded)
WORKERS = 2
MEMORY = 4 << 30  # each worker's address space: a bomb is a MemoryError (exit 3, reported), not the machine's RAM


@dataclass
class Outcome:
    case: str
    code: int | None  # exit status; None: the worker died in the case (``how``)
    how: str  # "", "signal SIGSEGV", "over 10 s CPU", "hang"
    seconds: float  # CPU seconds of the case
    err: str


def _worker(cases: list[tuple[str, Callable[[], int]]], start: int, fd: int) -> None:
    """Run cases[start:] in this forked process, one JSON line per case to ``fd``; never returns."""
    import io
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))
    signal.signal(signal.SIGPROF, signal.SIG_DFL)
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)  # C libraries' own writes (TFLM, onnxruntime)
    os.dup2(null, 2)
    out = os.fdopen(fd, "w", buffering=1)
    for k in range(start, len(cases)):
        err = io.StringIO()
        sys.stdout, sys.stderr = io.StringIO(), err
        signal.setitimer(signal.ITIMER_PROF, CASE_CPU_S + 0.5)  # the process ends in SIGPROF past it
        t0 = time.process_time()
        try:
            code = cases[k][1]()
        except BaseException as e:  # noqa: BLE001 - whatever escapes is the bug being looked for
            print(f"escaped: {type(e).__name__}: {e}", file=err)
            code = 3
        signal.setitimer(signal.ITIMER_PROF, 0)
        out.write(json.dumps({"k": k, "code": code, "cpu": time.process_time() - t0,
                              "err": err.getvalue()[-2000:]}) + "\n")
    out.flush()
    os._exit(0)


def run_cases(cases: list[tuple[str, Callable[[], int]]]) -> list[Outcome]:
    """Every case's outcome, the cases split between WORKERS forked streams (see the module docstring)."""
    import selectors

    shares = [list(range(w, len(cases), WORKERS)) for w in range(WORKERS)]
    outcomes: dict[int, Outcome] = {}
    sel = selectors.DefaultSelector()

    def spawn(w: int, pos: int) -> None:
        if pos >= len(shares[w]):
            return
        mine = [cases[k] for k in shares[w]]
        r, wfd = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            try:
                _worker(mine, pos, wfd)
            finally:
                os._exit(3)
        os.close(wfd)
        sel.register(r, selectors.EVENT_READ, {"w": w, "pid": pid, "pos": pos, "buf": "", "seen": time.monotonic(),
                                               "killed": False})

    for w in range(WORKERS):
        spawn(w, 0)
    while sel.get_map():
        for key, _ in sel.select(timeout=1.0):
            st = key.data
            chunk = os.read(key.fd, 1 << 16).decode()
            st["seen"] = time.monotonic()
            if chunk:
                st["buf"] += chunk
                *done, st["buf"] = st["buf"].split("\n")
                for line in done:
                    r = json.loads(line)
                    k = shares[st["w"]][r["k"]]
                    outcomes[k] = Outcome(cases[k][0], r["code"], "", r["cpu"], r["err"])
                    st["pos"] = r["k"] + 1
                continue
            sel.unregister(key.fd)
            os.close(key.fd)
            _, status, usage = os.wait4(st["pid"], 0)
            if st["pos"] < len(shares[st["w"]]):  # died inside a case
                k = shares[st["w"]][st["pos"]]
                sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
                how = ("hang" if st["killed"] else "over 10 s CPU" if sig == signal.SIGPROF
                       else f"signal {signal.Signals(sig).name}" if sig else f"worker exit {os.WEXITSTATUS(status)}")
                outcomes[k] = Outcome(cases[k][0], None, how, CASE_CPU_S if sig == signal.SIGPROF else 0.0, "")
                spawn(st["w"], st["pos"] + 1)
        now = time.monotonic()
        for key in list(sel.get_map().values()):
            if now - key.data["seen"] > WALL_S:
                os.kill(key.data["pid"], signal.SIGKILL)  # the read side sees EOF and records the hang
                key.data["seen"], key.data["killed"] = now, True
    return [outcomes[k] for k in range(len(cases))]


def cli(*argv: object) -> Callable[[], int]:
    return lambda: main([str(a) for a in argv])


def library(call: Callable[[], object]) -> Callable[[], int]:
    """A library entry (no CLI of its own here) under the CLI's contract: ArenaError is one line."""
    def run() -> int:
        try:
            code = call()
        except ArenaError as e:
            print(f"arena-tool: {e.render()}", file=sys.stderr)
            return e.exit_code
        return code if isinstance(code, int) else 0
    return run


NOT_VALID = 5  # a case's own code: a plan it accepted (exit 0) that check refuses


def rechecked(model: Path, plan: Path, *argv: object, compare: bool = False) -> Callable[[], int]:
    """``argv`` (which reads or writes the plan file ``plan``); when it succeeds the validator
    (``check MODEL PLAN``) must find the plan valid too: a silently wrong plan is NOT_VALID.
    compare: then the model runs on the plan against its reference (``verify``: onnxruntime's
    values in one bytearray), which must match."""
    def run() -> int:
        code = main([str(a) for a in argv])
        if code == 0 and plan.exists() and main(["check", str(model), str(plan)]) != 0:
            print(f"accepted, but check refuses {plan}", file=sys.stderr)
            return NOT_VALID
        if code == 0 and compare and main(["verify", str(model), str(plan)]) == 1:
            print(f"accepted, but its run differs from the reference: {plan}", file=sys.stderr)
            return NOT_VALID
        return code
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
    if o.seconds > CASE_CPU_S:
        return f"{o.seconds:.1f} CPU-s"
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


_QOPERATOR: list[onnx.ModelProto] = []


def qoperator() -> onnx.ModelProto:
    """qdq_conv as arena lowers it: QLinearConv and friends (onnxruntime's QOperator form)."""
    if not _QOPERATOR:
        from arena_tool.core.problem import ModelOptions
        from arena_tool.model import liveness, lowering

        with __import__("tempfile").TemporaryDirectory() as d:
            path = os.path.join(d, "q.onnx")
            M.save(M.qdq_conv(), path)
            _QOPERATOR.append(lowering.to_onnx(liveness.lower(path, ModelOptions())))
    return copy.deepcopy(_QOPERATOR[0])


def onnx_models() -> list[onnx.ModelProto]:
    return [M.chain(), M.relu_chain(), M.conv(), M.qdq_conv(), qoperator()]


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


BOARD = (ROOT / "boards" / "mps2_an500.yaml").read_text()

LD = """\
/* a vendor's script */
MEMORY
{
  FLASH (rx)  : ORIGIN = 0x08000000, LENGTH = 1024K
  RAM (xrw)   : ORIGIN = 0x20000000, LENGTH = (128 * 1024)
  CCMRAM (rw) : ORIGIN = 0x10000000, LENGTH = 64K
}
SECTIONS { .text : { *(.text*) } > FLASH }
"""

PLATFORMIO = {"build": {"cpu": "cortex-m4", "f_cpu": "168000000L", "mcu": "stm32f407vgt6"}, "name": "Board",
              "upload": {"maximum_ram_size": 131072, "maximum_size": 1048576}}

DTS = """\
/dts-v1/;
/ {
  #address-cells = <1>;
  chosen { zephyr,flash = &flash0; zephyr,sram = &sram0; };
  cpus { cpu@0 { compatible = "arm,cortex-m4f"; reg = <0>; }; };
  soc {
    flash0: flash@8000000 { compatible = "soc-nv-flash"; reg = <0x08000000 (1024 * 1024)>; };
    sram0: memory@20000000 { compatible = "mmio-sram"; reg = <0x20000000 0x20000>; };
    label = "x"; data = [01 02]; ref = <&sram0 1>;
  };
};
"""

TEXT_PIECES = ["{", "}", "};", ";", "<", ">", "<0x20000000>", "(", ")", "*", "/*", "*/", "//", ":", "=", "&",
               '"', "[", "]", "\0", "\t", "1+" * 40, "K", "0x", "-", "LENGTH = ", "ORIGIN = ", "MEMORY {", "a {",
               "\n", "#", "\\", "\u00e9", "9" * 30, "[" * 50, "Infinity", "NaN", "-1", "1e999", "null"]


def text_case(rng: np.random.Generator, text: str) -> str:
    """One to four edits of ``text``: a piece inserted (some repeated many times), a run deleted or doubled."""
    for _ in range(int(rng.integers(1, 5))):
        i = int(rng.integers(len(text) + 1))
        kind = int(rng.integers(4))
        if kind == 0:
            text = text[:i] + str(rng.choice(TEXT_PIECES)) + text[i:]
        elif kind == 1:
            text = text[:i] + str(rng.choice(TEXT_PIECES)) * int(rng.choice([2, 30, 3000])) + text[i:]
        elif kind == 2:
            text = text[:i] + text[i + int(rng.integers(1, 40)):]
        else:
            text = text[:i] + text[i:i + int(rng.integers(1, 40))] + text[i:]
    return text


def yaml_case(rng: np.random.Generator, text: str) -> str:
    """A YAML file with a line dropped, doubled, given a hostile value, cut or damaged as text."""
    lines = text.splitlines()
    for _ in range(int(rng.integers(1, 4))):
        i = int(rng.integers(len(lines)))
        kind = int(rng.integers(5))
        if kind == 0:
            del lines[i]
        elif kind == 1:
            lines[i] = lines[i].replace(":", ": " + str(jsonish(rng)) + " #", 1)
        elif kind == 2:
            lines.insert(i, lines[i])
        elif kind == 3:
            words = ["&a [*a, *a]", "!!python/object:os.system", "1e999", "-3", "{", "]", "'", "\t", "0x10", "~",
                     "\0", '"\\0"', "0x100000000", "99999999999999999999"]
            lines[i] = lines[i][:int(rng.integers(len(lines[i]) + 1))] + str(rng.choice(words))
        else:
            lines[i] = text_case(rng, lines[i])
        if not lines:
            break
    return "\n".join(lines) + "\n"


def json_case(rng: np.random.Generator, doc: Any) -> str:
    """A JSON document structurally mutated (mutate_doc), sometimes its text damaged or replaced."""
    kind = int(rng.integers(6))
    if kind == 0:
        return str(rng.choice(["[1, 2]", '"x"', "5", "null", "[" * 100_000, '{"upload": Infinity}', "{" * 3000]))
    for _ in range(int(rng.integers(1, 4))):
        doc = mutate_doc(rng, doc)
    text = json.dumps(doc)
    return text_case(rng, text) if kind == 1 else text


PATH_PIECES = ["a", " ", ":", "\\", "#", "$", "%", "*", "?", "[", "=", "|", ";", "'", '"', "é", "\t", "..", "~",
               "(", "&", "$(x)", "\\ ", ":/", "C:"]


def depfile_case(rng: np.random.Generator, folder: Path) -> Callable[[], int]:
    """A path of hostile characters as a depfile word: ArenaError (refused, one line), or a word GNU
    make and Ninja both read back as the path."""
    from arena_tool import build_steps

    name = "".join(str(rng.choice(PATH_PIECES)) for _ in range(int(rng.integers(1, 6))))
    path = str(folder / "dep" / name)

    def run() -> int:
        word = build_steps._make_word(path)
        full = os.path.abspath(path)
        if make_unescape(word) != full:
            print(f"make reads {word!r} as {make_unescape(word)!r}, not {full!r}", file=sys.stderr)
            return NOT_VALID
        return 0
    return library(run)


def make_unescape(word: str) -> str | None:
    """A depfile word as GNU make (and Ninja) reads it: '\\ ' a space, '\\#' '#', '$$' '$', '\\:' ':';
    None for what ends the word early or is read otherwise (an unescaped space, '#', ':' or '$')."""
    out, i = [], 0
    while i < len(word):
        c = word[i]
        if c == "\\" and i + 1 < len(word) and word[i + 1] in " #:":
            out.append(word[i + 1])
            i += 2
        elif c == "$" and word[i + 1:i + 2] == "$":
            out.append("$")
            i += 2
        elif c in " #:$\t\n" or (c == "\\" and i + 1 == len(word)):
            return None
        else:
            out.append(c)
            i += 1
    return "".join(out)


# --- the runs ----------------------------------------------------------------------------------

def cases(rng: np.random.Generator, folder: Path, n: int, verify_tflite: bool) -> Iterator[tuple[str, Callable[[], int]]]:
    """About ``n`` cases of each of 13 kinds, files written into ``folder`` (kept for a failure's replay)."""
    onnx_path = folder / "m.onnx"
    onnx_path.write_bytes(M.chain().SerializeToString())
    plan_path = folder / "good.plan.json"
    assert main(["plan", str(onnx_path), "--planner", "greedy_size", "-o", str(plan_path)]) == 0
    good_plan = json.loads(plan_path.read_text())
    seeds = [relu_model, lambda: tflite_model.unpack(chain_model(), "x")]
    (folder / "boards").mkdir()
    for i in range(n):
        p = folder / f"t{i}.tflite"
        if rng.random() < 0.5:
            p.write_bytes(tflite_structured(rng))
        else:
            p.write_bytes(flip_bytes(rng, pack(seeds[int(rng.integers(2))]())))
        out = folder / f"t{i}.plan.json"
        yield f"tflite plan {p.name}", rechecked(p, out, "plan", p, "--planner", "greedy_size", "--time-limit", "2",
                                                 "-o", out)
        if rng.random() < 0.02:  # TFLM's re-packer in its child: 0.15 s each
            yield f"tflite plan -o {p.name}", cli("plan", p, "--time-limit", "2", "-o", folder / f"t{i}.out.tflite")
        if verify_tflite:
            yield f"tflite verify {p.name}", cli("verify", p, p, "--runs", "1")
    for i in range(n):
        p = folder / f"o{i}.onnx"
        data = onnx_structured(rng)
        p.write_bytes(data if rng.random() < 0.7 else flip_bytes(rng, data))
        out = folder / f"o{i}.plan.json"
        planner = "optimal" if rng.random() < 0.1 else "greedy_size"
        yield f"onnx plan {p.name}", rechecked(p, out, "plan", p, "--planner", planner, "--time-limit", "1", "-o", out,
                                               compare=verify_tflite)
    for i in range(n):
        p = folder / f"i{i}.npz"
        npz_case(rng, p)
        specs = [firmware.TensorSpec("x", "float32", (1, 16))]
        yield f"npz {p.name}", library(lambda p=p, specs=specs: firmware.load_inputs(str(p), specs))
    for command in ("check", "verify", "explain"):
        for i in range(n):
            p = folder / f"p{i}.{command}.plan.json"
            doc = mutate_doc(rng, good_plan)
            for _ in range(int(rng.integers(0, 3))):
                doc = mutate_doc(rng, doc)
            text = json.dumps(doc)
            p.write_text(text if rng.random() < 0.8 else flip_bytes(rng, text.encode()).decode("utf-8", "replace"))
            argv = [command, onnx_path, p] if command != "explain" else [command, p]
            yield f"plan {command} {p.name}", rechecked(onnx_path, p, *argv)
    for i in range(n):
        d = folder / f"m{i}"
        d.mkdir()
        (d / "m.onnx").write_bytes(onnx_path.read_bytes())
        (d / "arena.yaml").write_text(yaml_case(rng, MANIFEST))
        yield f"manifest {d.name}", library(lambda d=d: manifest.load(str(d / "arena.yaml")))
    for i in range(n):
        d = folder / "boards" / f"b{i}"
        d.mkdir()
        p = d / "mps2_an500.yaml"
        p.write_text(yaml_case(rng, BOARD))
        yield f"board {d.name}", library(lambda p=p: boards.load_board_file(str(p)))
    for kind, suffix, make in (("ld", "ld", lambda: text_case(rng, LD)),
                               ("platformio", "json", lambda: json_case(rng, PLATFORMIO)),
                               ("dts", "dts", lambda: text_case(rng, DTS))):
        for i in range(n):
            p = folder / f"{kind}{i}.{suffix}"
            p.write_text(make())
            yield f"{kind} {p.name}", cli("board", "import", p, "--name", f"b{kind}{i}", "-o", folder / "boards" /
                                         f"b{kind}{i}.yaml")
    for i in range(n):  # the reader of a project's script (linker: fragment)
        p = folder / f"script{i}.ld"
        p.write_text(text_case(rng, LD))
        yield f"ldscript {p.name}", library(lambda p=p: linkscript.read_script(str(p)))
    for i in range(n):
        yield f"depfile {i}", depfile_case(rng, folder)


def fuzz(tmp_path: Path, n: int, verify_tflite: bool = False) -> list[Outcome]:
    rng = np.random.default_rng(SEED)
    t0 = time.perf_counter()
    made = list(cases(rng, tmp_path, n, verify_tflite))
    t1 = time.perf_counter()
    outcomes = run_cases(made)
    t2 = time.perf_counter()
    counts: dict[str, dict[str, int]] = {}
    for o in outcomes:
        kind = " ".join(o.case.split()[:2]) if o.case.startswith("plan ") else o.case.split()[0]
        key = str(o.code) if o.code is not None else o.how
        counts.setdefault(kind, {}).setdefault(key, 0)
        counts[kind][key] += 1
    print(f"fuzz seed {SEED}: {len(outcomes)} cases made in {t1 - t0:.1f} s, run in {t2 - t1:.1f} s "
          f"({WORKERS} workers), CPU {sum(o.seconds for o in outcomes):.1f} s, slowest case "
          f"{max(o.seconds for o in outcomes):.2f} CPU-s; by kind and exit: {json.dumps(counts, sort_keys=True)}")
    return outcomes


def check(outcomes: list[Outcome], tmp_path: Path) -> None:
    failures = [f"{o.case}: {why} ({o.seconds:.1f} s): {o.err.strip()[-600:]}"
                for o in outcomes if (why := bad(o)) is not None]
    assert not failures, f"seed {SEED}, files in {tmp_path}:\n" + "\n".join(failures)


def test_fuzz_every_input_ends_in_0_1_or_2_with_one_line(tmp_path: Path) -> None:
    outcomes = fuzz(tmp_path, n=390)
    check(outcomes, tmp_path)
    assert len(outcomes) >= 5000 and {o.code for o in outcomes} >= {0, 1, 2}  # every side of the contract met
    for kind in ("tflite", "onnx", "plan check", "plan explain", "manifest", "board", "ld ", "ldscript", "platformio",
                 "dts"):
        assert any(o.code == 0 for o in outcomes if o.case.startswith(kind)), kind  # each reader accepts some


@pytest.mark.slow
def test_fuzz_more_cases_and_tflm(tmp_path: Path) -> None:
    check(fuzz(tmp_path, n=1400, verify_tflite=True), tmp_path)
