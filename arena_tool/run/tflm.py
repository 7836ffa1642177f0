"""Proof in the real TFLite Micro: ``arena-tool verify MODEL.tflite PLANNED.tflite``.

Both models run in the tflite-micro wheel's host interpreter (``tflite_micro.runtime``,
TFLM's C++ MicroInterpreter with its reference kernels and RecordingMicroAllocator) on
N seeded random inputs. The outputs must be bit-identical, and TFLM's head (the
non-persistent section, where it puts every planned tensor) for PLANNED must equal the
head of arena's plan as written in PLANNED's OfflineMemoryAllocation metadata (the
highest offset + 16-byte aligned size; that is the plan's arena_size). Head, tail
(persistent: TFLM's structs, kernel data, variables) and total are the interpreter's own
numbers (``print_allocations``, read from its stderr).

Before running, the planned model's offsets are checked against its own live ranges (the
independent validator), so an overlapping plan is named tensor by tensor even where TFLM's
output happens to survive it.

LiteRT (``ai-edge-litert``, the TFLite interpreter with its reference kernels,
``OpResolverType.BUILTIN_REF``) runs the original and the planned model too when it is
installed: its outputs of the two must be bit-identical (the planned model computes the
same function, whatever order its operators are in); whether LiteRT agrees bit for bit
with TFLM is reported, not required (float kernels may round differently). Without
ai-edge-litert that part is skipped, and said so.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
from typing import Any, Iterator, Sequence

import numpy as np

from arena_tool.model import tflite_model, tflm_persistent, tflm_scratch
from arena_tool.run.tflm_host import CHILD_SECONDS as CHILD_SECONDS, TAIL_PER_TENSOR as TAIL_PER_TENSOR, \
    Allocation as Allocation, Run as Run, host_arena_size as host_arena_size, run_child as run_child, \
    run_tflm as run_tflm  # re-exported: TFLM's host interpreter in a child process (tflm_host)
from arena_tool.plan import planfile, validate
from arena_tool.builder import board_report
from arena_tool.emit import tflite_write
from arena_tool.core.errors import EXIT_CHECK_FAILED, EXIT_OK, ArenaError, CheckFailed
from arena_tool.plan.planfile import PlanFile
from arena_tool.core.problem import Buffer, ModelOptions, Problem, fmt_bytes

_NP = {"float32": np.float32, "float16": np.float16, "float64": np.float64, "int8": np.int8, "uint8": np.uint8,
       "int16": np.int16, "uint16": np.uint16, "int32": np.int32, "uint32": np.uint32, "int64": np.int64,
       "uint64": np.uint64, "bool": np.bool_}


@dataclasses.dataclass(frozen=True)
class Spec:
    name: str
    shape: tuple[int, ...]
    dtype: str


@contextlib.contextmanager
def captured_stderr() -> Iterator[list[str]]:
    """Whatever C++ code writes to file descriptor 2 inside the block, as one string in out[0]."""
    out: list[str] = [""]
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield out
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            out[0] = tmp.read().decode("utf-8", "replace")


def io_specs(model: Any) -> tuple[list[Spec], list[Spec]]:
    sg = model.subgraphs[0]
    names = tflite_model.unique_names(sg.tensors)
    types = tflite_model.type_names()

    def spec(i: int) -> Spec:
        t = sg.tensors[i]
        dtype = tflite_model._TYPES.get(types.get(t.type, ""), ("?", None))[0]
        return Spec(names[i], tuple(int(d) for d in (t.shape if t.shape is not None else ())), dtype)

    return [spec(int(i)) for i in sg.inputs], [spec(int(i)) for i in sg.outputs]


def random_inputs(specs: Sequence[Spec], runs: int, seed: int) -> list[list[np.ndarray]]:
    """``runs`` input sets, seeded: integers over their whole range, floats uniform in [-1, 1)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(runs):
        arrays = []
        for s in specs:
            if s.dtype not in _NP:
                raise ArenaError(f"no random input for graph input {s.name} of type {s.dtype}", field="inputs")
            t = _NP[s.dtype]
            if s.dtype == "bool":
                a = rng.integers(0, 2, s.shape).astype(np.bool_)
            elif np.issubdtype(t, np.integer):  # int32/int64 inputs are often indices: keep them small
                info = np.iinfo(t)
                lo, hi = (int(info.min), int(info.max)) if info.bits <= 16 else (max(int(info.min), -128), 127)
                a = rng.integers(lo, hi + 1, s.shape, dtype=np.int64).astype(t)
            else:
                a = rng.uniform(-1.0, 1.0, s.shape).astype(t)
            arrays.append(a)
        out.append(arrays)
    return out


def tflm_measure(model_path: str, plan: PlanFile, plan_path: str) -> tuple[bytes, dict[str, Any]]:
    """(the planned .tflite, its allocation) for one plan of a .tflite model, for ``runtime: tflm``.

    The planned bytes are tflite_write's (the plan checked first, then written as TFLM's
    OfflineMemoryAllocation metadata). TFLM's host interpreter (tflite-micro wheel, reference
    kernels) loads them and runs one seeded input: its head must be the plan's arena_size
    (else the plan and TFLM disagree: CheckFailed), its tail is the persistent part
    (interpreter structs, kernel data, variables), to which tflm_persistent adds what the plan's
    kernels (CMSIS-NN) allocate beyond the reference kernels ("unknown_tail": the ops it cannot
    size). A plan for other kernels (CMSIS-NN) holds
    their scratch buffers, which the host's reference kernels do not request: there the host's
    head must be the plan's tensors with the reference kernels' scratch placed as TFLM places
    it (host_head), which proves TFLM took the offsets, and the head is the plan's. A plan that
    omits scratch arena cannot size (unknown_scratch) takes the head the host measured, which is
    never below the plan's. The allocation document:
    {"model", "model_sha256", "planned_sha256", "planned_bytes", "head", "tail", "tensor_arena_size", "note",
    "ops" (the builtin ops, for the firmware's resolver), "outputs" (the output tensors' names)}.
    """
    mp = tflite_write.check_plan(model_path, plan, plan_path)
    data = tflite_write.planned_bytes(tflite_model.read_bytes(model_path), model_path,
                                      tflite_write.offsets_for(mp, plan), mp.order)
    parsed = tflite_model.parse(data, model_path)
    ins, outs = io_specs(parsed)
    run = run_tflm(data, model_path, random_inputs(ins, 1, 0))
    head = want = host_head(mp, plan, data, model_path)
    measured = bool(mp.unknown_scratch) and run.allocation.head > want
    if run.allocation.head != want and not measured:
        raise CheckFailed(f"TFLM's head is {fmt_bytes(run.allocation.head)} for the planned model, arena's plan "
                          f"says {fmt_bytes(want)}", file=model_path,
                          hint="TFLM did not take the offline plan as written; check with arena-tool verify")
    if plan.options.kernels != "reference":
        head = plan.arena_size
    elif measured:
        head = run.allocation.head
    ops = [tflite_model.builtin_name(parsed, op) for op in parsed.subgraphs[0].operators or ()]
    more, unknown = tflm_persistent.extra(parsed, plan.options.kernels, tflite_model.type_names(), ops)
    tail = run.allocation.tail + more  # the host measured the reference kernels' tail
    return data, {**({"unknown_tail": unknown} if unknown else {}),"model": plan.model.replace("\\", "/"), "model_sha256": plan.model_sha256,
                  "planned_sha256": hashlib.sha256(data).hexdigest(), "planned_bytes": len(data), "head": head,
                  "tail": tail, "tensor_arena_size": board_report.tflm_arena_size(head, tail),
                  "note": board_report.TFLM_NOTE, "ops": model_ops(parsed), "outputs": [o.name for o in outs]}


def model_ops(model: Any) -> list[str]:
    """The builtin ops of every subgraph, sorted: what the firmware's op resolver registers."""
    return sorted({tflite_model.builtin_name(model, op) for sg in model.subgraphs for op in sg.operators or ()})


def host_head(mp: tflite_model.TfliteProblem, plan: PlanFile, data: bytes, path: str) -> int:
    """The head the host interpreter (reference kernels) must use with the planned model ``data``:
    the plan's arena_size for a reference-kernel plan, else its tensors' offsets with the reference
    kernels' scratch placed where TFLM places it."""
    if plan.options.kernels == "reference":
        return plan.arena_size
    ref = tflite_model.problem_from_bytes(data, path, dataclasses.replace(plan.options, kernels="reference"))
    offsets = tflite_model.offline_offsets(tflite_model.parse(data, path))
    assert offsets is not None  # planned_bytes wrote them
    return planned_head(ref, offsets)[0]


def litert_available() -> str | None:
    """None when LiteRT runs here, else why not."""
    try:
        from ai_edge_litert.interpreter import Interpreter, OpResolverType  # noqa: F401
    except Exception as e:  # noqa: BLE001 - ImportError, or a broken native library
        return (f"ai-edge-litert is not installed or does not load here ({type(e).__name__}: {e}; "
                "pip install 'arena-tool[verify]')")
    return None


def run_litert(data: bytes, path: str, inputs: Sequence[Sequence[np.ndarray]]) -> list[list[np.ndarray]]:
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    try:
        with captured_stderr():
            interp = Interpreter(model_content=data, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
            interp.allocate_tensors()
    except (RuntimeError, ValueError) as e:
        raise ArenaError(f"LiteRT cannot load the model: {e}", file=path) from e
    ins, outs = interp.get_input_details(), interp.get_output_details()
    results = []
    for xs in inputs:
        for d, x in zip(ins, xs):
            interp.set_tensor(d["index"], x)
        interp.invoke()
        results.append([np.array(interp.get_tensor(d["index"]), copy=True) for d in outs])
    return results


def _differences(a: list[list[np.ndarray]], b: list[list[np.ndarray]], names: Sequence[str]) -> list[str]:
    """One line per output that is not bit-identical in some run."""
    bad = []
    for k, name in enumerate(names):
        runs = [r for r in range(len(a)) if a[r][k].tobytes() != b[r][k].tobytes() or a[r][k].shape != b[r][k].shape]
        if runs:
            r = runs[0]
            x, y = a[r][k].reshape(-1), b[r][k].reshape(-1)
            n = int(np.count_nonzero(x != y)) if x.shape == y.shape else max(x.size, y.size)
            diff = ""
            if x.shape == y.shape and x.size:
                d = np.abs(x.astype(np.float64) - y.astype(np.float64))
                diff = f", max abs difference {float(d.max()):.6g}"
            bad.append(f"output {name}: {n} of {x.size} elements differ in run {r}{diff} "
                       f"({len(runs)} of {len(a)} runs differ)")
    return bad


@dataclasses.dataclass
class TflmCheck:
    """lines: what was measured; failures: every difference (empty = proven).
    tflm_model / tflm_planned: TFLM's allocation of each; arena_head: the head of arena's plan."""

    lines: list[str]
    failures: list[str]
    tflm_model: Allocation | None = None
    tflm_planned: Allocation | None = None
    arena_head: int = 0
    litert: str = ""


def planned_head(mp: tflite_model.TfliteProblem, offsets: Sequence[int]) -> tuple[int, list[str], list[str]]:
    """(the head TFLM uses with the offline plan ``offsets``, tensors TFLM plans itself although they
    are arena tensors, overlaps). The kernels' scratch buffers (mp's, for its kernels) are placed
    as TFLM places them, around the planned tensors (tflm_scratch.tflm_placement)."""
    index = mp.index_of()
    online = []
    bufs: list[Buffer] = []
    fixed: list[int | None] = []
    for t in mp.tensors:
        o = -1 if t.kind == "scratch" else offsets[index[t.name]]
        if o < 0 and t.kind != "scratch":
            online.append(t.name)
        bufs.append(Buffer(t.name, t.size, t.first_op, t.last_op, tflite_model.TFLM_ALIGNMENT))
        fixed.append(None if o < 0 else o)
    offs = tflm_scratch.tflm_placement([b.size for b in bufs], [b.start for b in bufs], [b.end for b in bufs],
                                       fixed)
    head = max((o + b.size for b, o in zip(bufs, offs) if b.name not in online), default=0)  # the rest is TFLM's
    overlaps = [v.message for v in validate.violations(Problem(tuple(bufs)), offs, head)
                if v.reason == validate.Reason.OVERLAP]
    return head, online, overlaps


def probe_scratch(data: bytes, path: str, mp: tflite_model.TfliteProblem, offsets: Sequence[int],
                  inputs: Sequence[Sequence[np.ndarray]]) -> list[str]:
    """What each operator of ``mp.unknown_scratch`` requests, measured in the host interpreter.

    A probe of the planned model with every tensor at offset 0: TFLM then stacks each operator's
    scratch buffers on the largest tensor live at its scope (first fit finds no gap below), so its
    head is the largest of the tensors and of (largest live tensor + scratch) over the operators.
    Every unknown operator's scratch is at most head - its largest live tensor; exactly that when
    it is the one unknown operator and the head is above everything arena sized itself. The
    outputs of the probe mean nothing (tensors overlap); only its head is read.
    """
    index = mp.index_of()
    probe = list(offsets)
    tensors = [t for t in mp.tensors if t.kind != "scratch"]
    for t in tensors:
        probe[index[t.name]] = 0
    head = run_tflm(tflite_write.planned_bytes(data, path, probe), path, inputs).allocation.head
    scopes = len(mp.schedule) + 1
    live = [max((t.size for t in tensors if t.first_op <= s <= t.last_op), default=0) for s in range(scopes)]
    known = [0] * scopes
    for t in mp.tensors:
        if t.kind == "scratch":
            known[t.first_op] += t.size
    sized = max([t.size for t in tensors] + [live[s] + known[s] for s in range(scopes) if known[s]], default=0)
    exact = len(mp.unknown_ops) == 1 and head > sized
    out = []
    for label, step in zip(mp.unknown_scratch, mp.unknown_ops):
        n = max(head - live[step + 1], 0)
        out.append(f"measured in TFLM (every tensor at offset 0): {label} requests "
                   f"{'' if exact else 'at most '}{fmt_bytes(n)} of scratch")
    return out


def verify(model_path: str, planned_path: str, runs: int = 5, seed: int = 0) -> TflmCheck:
    """Run MODEL and PLANNED (a planned .tflite, or a plan JSON to write one from) in TFLM."""
    if runs < 1:
        raise ArenaError(f"--runs {runs}: at least one run", field="--runs")
    data = tflite_model.read_bytes(model_path)
    model = tflite_model.parse(data, model_path)
    tflite_model.problem_from_bytes(data, model_path, ModelOptions())  # every refusal, named, before TFLM
    kernels_note = ""
    host = ModelOptions()  # the host's reference kernels; a plan JSON adds the scratch it states (op_scratch)
    if tflite_model.is_tflite(planned_path):
        planned = tflite_model.read_bytes(planned_path)
        pmodel = tflite_model.parse(planned, planned_path)
        label = planned_path
    else:  # a plan JSON: write its planned model in memory, with every check of the writer
        plan = planfile.load(planned_path)
        mp_plan = tflite_write.check_plan(model_path, plan, planned_path)
        planned = tflite_write.planned_bytes(data, model_path, tflite_write.offsets_for(mp_plan, plan), mp_plan.order)
        pmodel = tflite_model.parse(planned, planned_path)
        label = f"{planned_path} (written in memory)"
        host = ModelOptions(op_scratch=plan.options.op_scratch)
        if plan.options.kernels != "reference":
            kernels_note = (f"the plan is for {tflm_scratch.describe(plan.options.kernels)}: its head "
                            f"{fmt_bytes(plan.arena_size)} holds their scratch buffers; the host runs TFLM's "
                            f"reference kernels, whose scratch TFLM places around the same tensors")
    offsets = tflite_write.offline_plan(pmodel)
    if offsets is None:
        raise ArenaError("the planned model has no OfflineMemoryAllocation metadata", file=planned_path,
                         hint="make one with: arena-tool plan MODEL.tflite -o PLANNED.tflite")
    pmp = tflite_model.problem_from_bytes(planned, planned_path, host)
    if len(offsets) != pmp.subgraph_tensors:
        raise ArenaError(f"the offline plan has {len(offsets)} offsets for {pmp.subgraph_tensors} tensors",
                         file=planned_path, hint="re-plan with arena-tool plan MODEL.tflite -o PLANNED.tflite")
    ins, outs = io_specs(model)
    pins, pouts = io_specs(pmodel)
    if [(s.shape, s.dtype) for s in ins + outs] != [(s.shape, s.dtype) for s in pins + pouts]:
        raise ArenaError("the planned model's inputs and outputs are not the model's", file=planned_path,
                         hint="verify a model against the planned model made from it")

    head, online, overlaps = planned_head(pmp, offsets)
    failures = [f"arena's plan overlaps: {m}" for m in overlaps]
    inputs = random_inputs(ins, runs, seed)
    ref = run_tflm(data, model_path, inputs)
    got = run_tflm(planned, planned_path, inputs)
    lines = [f"TFLM {model_path}: head {fmt_bytes(ref.allocation.head)}, tail {fmt_bytes(ref.allocation.tail)}, "
             f"total {fmt_bytes(ref.allocation.total)} (TFLM's own plan)",
             f"TFLM {label}: head {fmt_bytes(got.allocation.head)}, tail {fmt_bytes(got.allocation.tail)}, "
             f"total {fmt_bytes(got.allocation.total)} (arena's plan: {fmt_bytes(head)}, "
             f"saves {fmt_bytes(ref.allocation.head - got.allocation.head)})"]
    if kernels_note:
        lines.append(kernels_note)
    if pmp.unknown_scratch and not online:  # what the plan said it omits: measured here
        if got.allocation.head > head:
            lines.append(f"measured: TFLM's head is {fmt_bytes(got.allocation.head)}, "
                         f"{fmt_bytes(got.allocation.head - head)} above the plan, for the scratch buffers of "
                         f"{', '.join(pmp.unknown_scratch)}, which arena cannot size before running them")
        lines += probe_scratch(planned, planned_path, pmp, offsets, inputs[:1])
    if got.allocation.head != head and not (pmp.unknown_scratch and not online and got.allocation.head > head):
        who = (f"TFLM planned {', '.join(online)} itself (offset -1)" if online else
               "TFLM placed buffers arena did not plan (kernel scratch buffers)")
        failures.append(f"TFLM's head {fmt_bytes(got.allocation.head)} differs from arena's plan "
                        f"{fmt_bytes(head)}: {who}")
    names = [s.name for s in outs]
    diffs = _differences(ref.outputs, got.outputs, names)
    failures += [f"TFLM: {d}" for d in diffs]
    if not diffs:
        lines.append(f"outputs: bit-identical in TFLM on {runs} seeded random input{'s' if runs > 1 else ''} "
                     f"(seed {seed}): {', '.join(names)}")
    why = litert_available()
    if why is None:
        custom = [op.split(":", 1)[1] for op in model_ops(model) if op.startswith("CUSTOM:")]
        try:
            lr = run_litert(data, model_path, inputs)
            lp = run_litert(planned, planned_path, inputs)
        except ArenaError:
            if not custom:
                raise
            lr = lp = []
            why = (f"LiteRT: skipped: it has no kernel for the model's custom op{'s' if len(custom) > 1 else ''} "
                   f"{', '.join(custom)} (TFLM's own, e.g. its signal ops)")
    if why is not None:
        litert = why if why.startswith("LiteRT: ") else f"LiteRT: skipped: {why}"
    else:
        ld = _differences(lr, lp, names)
        failures += [f"LiteRT: planned model vs model: {d}" for d in ld]
        vs = _differences(ref.outputs, lr, names)
        agree = "bit-identical to TFLM" if not vs else f"differs from TFLM ({'; '.join(vs)})"
        litert = f"LiteRT (reference kernels): planned model {'= model' if not ld else 'DIFFERS'}, {agree}"
    lines.append(litert)
    return TflmCheck(lines, failures, ref.allocation, got.allocation, head, litert)


def main_verify(model: str, planned: str, runs: int = 5, seed: int = 0) -> int:
    """`arena-tool verify MODEL.tflite PLANNED.tflite`: 0 proven, 1 a difference (named), 2 bad input."""
    report = verify(model, planned, runs, seed)
    for line in report.lines:
        print(line)
    for f in report.failures:
        print(f"{planned}: error: {f}", file=sys.stderr)
    if report.failures:
        return EXIT_CHECK_FAILED
    used = report.tflm_planned.head if report.tflm_planned else report.arena_head
    if used != report.arena_head:  # only where the plan names scratch it cannot size (verify)
        print(f"{planned}: ok: every output is bit-identical; TFLM's head {fmt_bytes(used)} is measured (arena's "
              f"plan, {fmt_bytes(report.arena_head)}, omits the scratch it cannot size)")
    else:
        print(f"{planned}: ok: TFLM's head is arena's plan ({fmt_bytes(report.arena_head)}) and every output is "
              f"bit-identical")
    return EXIT_OK
