"""Run a plan in one bytearray and prove no tensor is overwritten while live.

``verify(model_path, plan)`` replays the plan's schedule over a single
arena-sized ``bytearray``. Values come from ONNX Runtime (every intermediate
tensor is added as a graph output), so the replay needs no kernels: each op
first has its inputs checked, then its workspace is scribbled on and its
outputs are written at their planned offsets, then the inputs are checked
again (an op's outputs may only cover an input of its own alias group, i.e.
a planned in-place op or view). Finally the graph outputs are checked.

A read is intact when every byte still belongs to the tensor's alias group
(an ownership map records the last tensor and op that wrote each byte) and,
when ONNX Runtime's type matches the planned one, equals the reference
bytes. The first failure names the clobbered tensor, the op that needed it,
and the tensor and op that wrote over it.

Also here, shared with the tests and the firmware (main.c is the C twin):
``input_pattern`` (the deterministic inputs), ``reference`` (ONNX Runtime
values of every tensor) and ``parse_output`` (the firmware's printout).
"""

from __future__ import annotations

import dataclasses
import os
import re
import sys
from typing import TYPE_CHECKING, Any

import numpy as np

from arena_tool.core.errors import EXIT_CHECK_FAILED, EXIT_OK, ArenaError
from arena_tool.model import onnx_graph
from arena_tool.plan import planfile

if TYPE_CHECKING:
    from arena_tool.plan.planfile import PlanFile

# The element types the C runtime stores (codegen.DTYPES), as numpy types.
NUMPY_TYPES = {"float32": np.float32, "int8": np.int8, "uint8": np.uint8, "int32": np.int32, "int64": np.int64}


def input_pattern(shape: tuple[int, ...] | list[int], dtype: str, which: int = 0) -> np.ndarray:
    """Input number `which` as main.c's fill_input makes it (uint32 arithmetic, then per dtype)."""
    n = int(np.prod(shape, dtype=np.int64)) if len(shape) else 1
    i = np.arange(n, dtype=np.uint64)
    v = (((i * 7919 + 13 + which * 101) & 0xFFFFFFFF) % 251).astype(np.int64)
    if dtype == "float32":
        out = v.astype(np.float32) / np.float32(125.0) - np.float32(1.0)
    elif dtype == "uint8":
        out = v.astype(np.uint8)
    elif dtype in NUMPY_TYPES:
        out = (v - 125).astype(NUMPY_TYPES[dtype])
    else:
        raise ArenaError(f"no input pattern for dtype {dtype}", field="buffers.dtype")
    return out.reshape(shape)


def graph_inputs(model: Any) -> list[str]:
    inits = {i.name for i in model.graph.initializer}
    return [i.name for i in model.graph.input if i.name not in inits]


def _load(model_path: str, plan: PlanFile) -> Any:
    """The model with its external data, after the same location check planning made."""
    import onnx

    try:
        model = onnx.load(model_path, load_external_data=False)
        onnx_graph.check_external_data(model, model_path, allow_outside=plan.options.allow_external_data_outside)
        onnx.load_external_data_for_model(model, os.path.dirname(os.path.abspath(model_path)) or ".")
    except ArenaError:
        raise
    except Exception as e:  # onnx raises DecodeError, OSError ...
        raise ArenaError(f"cannot load the model: {e}", file=model_path) from e
    return model


def reference(model_path: str, plan: PlanFile, names: list[str] | None = None) -> dict[str, np.ndarray]:
    """ONNX Runtime's value of every named tensor (default: every planned non-scratch tensor),
    with the graph inputs filled by input_pattern; graph inputs are included."""
    import onnx

    try:
        import onnxruntime as ort
    except ImportError as e:
        raise ArenaError("onnxruntime is not installed: verify compares the plan's run with it",
                         hint="pip install 'arena-tool[verify]' (or .ci/setup in a clone)") from e
    model = _load(model_path, plan)
    buffers = plan.by_name
    ins = graph_inputs(model)
    feeds = {}
    quantized = {n.input[0]: n.output[0] for n in model.graph.node if n.op_type == "QuantizeLinear" and n.input}
    for k, name in enumerate(ins):
        b = buffers.get(name)
        if b is None and plan.options.io == "int8" and quantized.get(name) in buffers:  # the float side
            q = buffers[quantized[name]]
            b = dataclasses.replace(q, name=name, dtype="float32", quant=None)
        if b is None:
            raise ArenaError(f"graph input {name!r} is not in the plan", field="buffers", file=model_path)
        feeds[name] = input_pattern(b.shape, b.dtype, k)
    if names is None:
        names = [b.name for b in plan.buffers if b.kind != "scratch" and b.name not in feeds]
    made = {y for n in model.graph.node for y in n.output}
    wanted = [n for n in names if n not in feeds and n in made]  # a tile's tensors (patches) are the plan's own
    m = onnx.ModelProto()
    m.CopyFrom(model)
    del m.graph.output[:]
    for n in wanted:
        m.graph.output.append(onnx.ValueInfoProto(name=n))
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    opts.log_severity_level = 3
    try:  # a model arena plans may still be one onnxruntime refuses (found by tests/test_fuzz.py's sweep)
        sess = ort.InferenceSession(m.SerializeToString(), opts, providers=["CPUExecutionProvider"])
        values = dict(zip(wanted, sess.run(wanted, feeds))) if wanted else {}
    except Exception as e:  # noqa: BLE001 - onnxruntime raises its own exception types
        first = (str(e).strip().splitlines() or [type(e).__name__])[0][:300]
        raise ArenaError(f"onnxruntime cannot run the model, so it has no reference values: {first}",
                         file=model_path, hint="check the model with onnx.checker and onnxruntime") from None
    values.update(feeds)
    return values


@dataclasses.dataclass(frozen=True)
class VerifyResult:
    """ok: no clobber found. reads: tensor reads checked.
    clobbered: the tensor found overwritten; reader_op: the op (name) that needed it;
    writer/writer_op: the tensor and op that last wrote over its first bad byte."""

    ok: bool
    reads: int
    clobbered: str | None = None
    reader_op: str | None = None
    writer: str | None = None
    writer_op: str | None = None
    message: str = ""


def verify(model_path: str, plan: PlanFile) -> VerifyResult:
    """Replay the plan in one bytearray; see the module docstring."""
    buffers = plan.buffers
    names = [b.name for b in buffers]
    tid = {n: i for i, n in enumerate(names)}
    group = [tid[b.alias_of] if b.alias_of in tid else i for i, b in enumerate(buffers)]
    # A split plan's offsets are per region: its regions are laid end to end in one replay.
    base, top = {}, 0
    for r in plan.regions or ():
        base[r.name], top = top, top + r.arena_size
    offset = [b.offset + base.get(b.region or "", 0) for b in buffers]
    # Caller-owned inputs and outputs (io_buffers: caller) each in a buffer of their own, past the arena.
    size = max(top, plan.arena_size)
    for i, b in enumerate(buffers):
        if plan.options.io_buffers == "caller" and b.kind in ("input", "output"):
            offset[i], size = size + b.offset, size + b.size
    group_arr = np.array(group, dtype=np.int64)
    ref = reference(model_path, plan)
    arena = np.zeros(size, dtype=np.uint8)
    owner = np.full(size, -1, dtype=np.int64)  # tensor index of the last writer
    wop = np.full(size, -1, dtype=np.int64)  # op index of the last write (-1: graph input)
    schedule = plan.schedule

    def span(i: int) -> tuple[int, int]:
        b = buffers[i]
        item = np.dtype(NUMPY_TYPES[b.dtype]).itemsize if b.dtype in NUMPY_TYPES else 1
        nbytes = b.elements * item if b.kind != "scratch" else b.size
        return offset[i], offset[i] + nbytes

    def ref_bytes(i: int) -> np.ndarray | None:
        v = ref.get(names[i])
        b = buffers[i]
        want = NUMPY_TYPES.get(b.dtype)
        if v is None or want is None or v.dtype != np.dtype(want) or v.size != b.elements:
            return None
        return np.frombuffer(np.ascontiguousarray(v).tobytes(), dtype=np.uint8)

    refb = [ref_bytes(i) for i in range(len(buffers))]

    def write(i: int, op: int, scribble: bool = False) -> None:
        lo, hi = span(i)
        if hi > size or lo < 0:
            raise ArenaError(f"tensor {names[i]} [{lo}, {hi}) lies outside the arena of {size} B",
                             field="buffers", exit_code=EXIT_CHECK_FAILED)
        if scribble:
            arena[lo:hi] = 0xCD
        elif (ref_b := refb[i]) is not None:
            arena[lo:hi] = ref_b
        else:
            arena[lo:hi] = (i * 37 + 11) & 0xFF
        owner[lo:hi] = i
        wop[lo:hi] = op

    def first_bad(i: int) -> int | None:
        lo, hi = span(i)
        own = owner[lo:hi]
        bad = np.where(own >= 0, group_arr[np.maximum(own, 0)], -1) != group[i]
        if (ref_b := refb[i]) is not None:
            bad |= arena[lo:hi] != ref_b
        idx = np.flatnonzero(bad)
        return lo + int(idx[0]) if idx.size else None

    reads = 0

    def clobber(i: int, reader: str) -> VerifyResult:
        at = first_bad(i)
        assert at is not None
        w = int(owner[at])
        wname = names[w] if w >= 0 else "(nothing)"
        op = int(wop[at])
        wop_name = (schedule[op].name or schedule[op].outputs[0]) if op >= 0 else "(graph input)"
        if w < 0:
            msg = (f"{names[i]} was never written at byte {at} before {reader} reads it")
        else:
            msg = (f"tensor {names[i]} (offset {offset[i]}, needed by {reader}) was clobbered by op "
                   f"{wop_name} writing {wname} (offset {offset[w]}) at arena byte {at}")
        return VerifyResult(False, reads, names[i], reader, wname, wop_name if w >= 0 else None, msg)

    for b in buffers:  # the plan's inputs: the model's, or their integers (io: int8)
        if b.kind == "input":
            write(tid[b.name], -1)
    for k, step in enumerate(schedule):
        label = step.name or step.outputs[0]
        ins = [tid[n] for n in step.inputs if n in tid]
        for i in ins:
            reads += 1
            if first_bad(i) is not None:
                return clobber(i, f"op {label}")
        if step.workspace is not None and step.workspace in tid:
            write(tid[step.workspace], k, scribble=True)
        outs = [tid[n] for n in step.outputs if n in tid]
        for o in outs:
            write(o, k)
        out_groups = {group[o] for o in outs}
        for i in ins:
            if group[i] not in out_groups and first_bad(i) is not None:
                return clobber(i, f"op {label} (its own output or workspace overlaps it)")
    for b in buffers:
        if b.kind == "output":
            reads += 1
            if first_bad(tid[b.name]) is not None:
                return clobber(tid[b.name], "the graph output")
    return VerifyResult(True, reads, message=f"ok: {reads} tensor reads intact in {len(schedule)} ops, "
                                              f"arena {plan.arena_size} B")


def main_verify(model: str, plan_path: str) -> int:
    """`arena-tool verify MODEL PLAN`: print the verdict; 0 ok, 1 clobber found, 2 bad input."""
    try:
        result = verify(model, planfile.load(plan_path))
    except ArenaError as e:
        print(e.render(), file=sys.stderr)
        return e.exit_code
    if result.ok:
        print(f"{plan_path}: {result.message}")
        return EXIT_OK
    print(f"{plan_path}: error: {result.message}", file=sys.stderr)
    return EXIT_CHECK_FAILED


# --- the firmware's printout (main.c) ---------------------------------------

_LINE_MODEL = re.compile(r"^model (\S+)$")
_LINE_OUTPUT = re.compile(r"^output (\S+) (\S+) (\d+)$")
_LINE_VALUE = re.compile(r"^(\d+) (\S+)")
_LINE_STATUS = re.compile(r"^status (\S+) (-?\d+)$")
_LINE_TICKS = re.compile(r"^ticks (\S+) (\d+)$")
_LINE_CALIBRATE = re.compile(r"^calibrate (\d+) ticks (\d+)$")
_LINE_OP = re.compile(r"^op (\S+) (\d+) (\d+)$")


@dataclasses.dataclass(frozen=True)
class FirmwareRun:
    """outputs[model][tensor] = values; status[model] = arena_run's code;
    ticks[model] = SysTick ticks of the inference (target builds only);
    calibration = (instructions of main.c's timing loop, its ticks), target builds only;
    op_ticks[model][op index] = SysTick ticks of that op (a -DARENA_PROFILE build);
    truncated[model][tensor] = what of its printout is missing ("3,071 of 4,096 values"): lines lost
    on the way (QEMU's output under load), which no comparison should read as a mismatch."""

    outputs: dict[str, dict[str, np.ndarray]]
    status: dict[str, int]
    ticks: dict[str, int]
    calibration: tuple[int, int] | None = None
    op_ticks: dict[str, dict[int, int]] = dataclasses.field(default_factory=dict)
    truncated: dict[str, dict[str, str]] = dataclasses.field(default_factory=dict)


def parse_output(text: str) -> FirmwareRun:
    """Read main.c's printout (other lines, e.g. QEMU's, are ignored)."""
    outputs: dict[str, dict[str, np.ndarray]] = {}
    status: dict[str, int] = {}
    ticks: dict[str, int] = {}
    calibration: tuple[int, int] | None = None
    op_ticks: dict[str, dict[int, int]] = {}
    model = tensor = None
    dtype = ""
    vals: list[Any] = []
    declared = 0
    gaps = 0  # values whose index is not the one after the last: lines lost in between
    truncated: dict[str, dict[str, str]] = {}

    def close() -> None:
        if model is not None and tensor is not None:
            if len(vals) != declared or gaps:
                truncated.setdefault(model, {})[tensor] = f"{len(vals):,} of {declared:,} values" + (
                    f", {gaps:,} out of order" if gaps else "")
            if dtype == "float32":
                arr = np.array(vals, dtype=np.uint32).view(np.float32)
            else:
                arr = np.array(vals, dtype=NUMPY_TYPES.get(dtype, np.int64))
            outputs[model][tensor] = arr

    for line in text.splitlines():
        line = line.strip()
        if m := _LINE_MODEL.match(line):
            close()
            model, tensor = m.group(1), None
            outputs.setdefault(model, {})
        elif m := _LINE_OUTPUT.match(line):
            close()
            tensor, dtype, vals, declared, gaps = m.group(1), m.group(2), [], int(m.group(3)), 0
        elif m := _LINE_STATUS.match(line):
            close()
            status[m.group(1)] = int(m.group(2))
            tensor = None
        elif m := _LINE_TICKS.match(line):
            ticks[m.group(1)] = int(m.group(2))
        elif m := _LINE_CALIBRATE.match(line):
            calibration = (int(m.group(1)), int(m.group(2)))
        elif m := _LINE_OP.match(line):
            op_ticks.setdefault(m.group(1), {})[int(m.group(2))] = int(m.group(3))
        elif tensor is not None and (m := _LINE_VALUE.match(line)):
            gaps += int(m.group(1)) != len(vals)
            tok = m.group(2)
            vals.append(int(tok, 16) if tok.startswith("0x") else int(tok))
    close()
    return FirmwareRun(outputs, status, ticks, calibration, op_ticks, truncated)
