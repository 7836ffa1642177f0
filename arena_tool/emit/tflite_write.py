"""A planned .tflite: arena's plan as TFLM's ``OfflineMemoryAllocation`` metadata.

The metadata names a buffer of little-endian int32 words (TFLM's
docs/memory_management.md): the format version (1), the number of subgraphs, N =
the tensor count over all subgraphs, then one offset per tensor in bytes from the
start of TFLM's head, -1 for the tensors TFLM must place itself (weights, which
stay in flash, variables, which it keeps in its tail, zero-byte tensors). TFLM uses
the offsets as they are: it checks neither that they do not overlap nor that the
operators are in a topological order, so ``write_planned`` checks both first
(plancheck.check, the independent O(n^2) check, on the model re-derived in the plan's
own operator order) and refuses a plan that fails.

The operators are written in the plan's schedule order (a topological permutation
of the model's; unchanged for a plan in model order). An existing offline plan is
replaced: its buffer is reused, never a second metadata entry added.

The model is packed with the flatbuffer object API and then re-packed with TFLM's
own ``tflite_flatbuffer_align`` (shipped in the tflite-micro wheel), which restores
the schema's 16-byte alignment of buffer data (``force_align: 16``; the Python packer
ignores it, and TFLM's kernels and this int32 table need it).
"""

from __future__ import annotations

import glob
import importlib.util
import os
import signal
import subprocess
import sys
import tempfile
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from arena_tool.model import tflite_model
from arena_tool.core.errors import ArenaError, CheckFailed
from arena_tool.core.files import write_atomic
from arena_tool.core.problem import ARENA_KERNELS
from arena_tool.plan import plancheck

if TYPE_CHECKING:
    from arena_tool.plan.planfile import PlanFile

METADATA_NAME = tflite_model.METADATA_NAME
FORMAT_VERSION = 1


def _name(md: Any) -> str:
    n = md.name
    return n.decode("utf-8", "replace") if isinstance(n, (bytes, bytearray)) else (n or "")


def offline_plan(model: Any) -> list[int] | None:
    """The offsets of an existing OfflineMemoryAllocation metadata entry, or None."""
    return tflite_model.offline_offsets(model)


def offsets_for(mp: tflite_model.TfliteProblem, plan: PlanFile) -> list[int]:
    """Flatbuffer tensor index -> offset (or -1) for the plan ``plan`` of ``mp``."""
    index = mp.index_of()
    offsets = [-1] * mp.subgraph_tensors
    for b in plan.buffers:
        if b.kind != "scratch":  # TFLM places the kernels' scratch buffers itself (planning.tflm_settled)
            offsets[index[b.name]] = b.offset
    for name in mp.unreferenced:  # TFLM allocates them with an empty lifetime: they overlap nothing
        offsets[index[name]] = 0
    return offsets


def planned_bytes(data: bytes, path: str, offsets: Sequence[int], order: Sequence[int] | None = None) -> bytes:
    """The model ``data`` with ``offsets`` as its offline plan and its operators in ``order``.

    No check at all: the caller (write_planned) checks the plan; tests use this to build a
    deliberately broken plan and watch TFLM use it.
    """
    import flatbuffers

    model = tflite_model.unpack(data, path)  # changed below: a copy of its own
    n = sum(len(sg.tensors or []) for sg in model.subgraphs)
    if len(offsets) != n:
        raise ArenaError(f"{len(offsets)} offsets for {n} tensors", file=path)
    if order is not None:
        ops = model.subgraphs[0].operators
        model.subgraphs[0].operators = [ops[k] for k in order]
    words = np.array([FORMAT_VERSION, len(model.subgraphs), n, *offsets], dtype="<i4")
    payload = np.frombuffer(words.tobytes(), dtype=np.uint8).copy()
    _set_metadata(model, payload)
    builder = flatbuffers.Builder(len(data) + len(payload) + 4096)
    builder.Finish(model.Pack(builder), file_identifier=tflite_model.IDENTIFIER)
    return realign(bytes(builder.Output()), path)


def _set_metadata(model: Any, payload: np.ndarray) -> None:
    """Put ``payload`` in the one OfflineMemoryAllocation entry (replacing any, never adding a second)."""
    fb = tflite_model.schema()
    entries = [md for md in (model.metadata or []) if _name(md) == METADATA_NAME]
    used = {t.buffer for sg in model.subgraphs for t in (sg.tensors or [])}
    used |= {md.buffer for md in (model.metadata or []) if _name(md) != METADATA_NAME}
    index = None
    for md in entries:
        if md.buffer not in used and 0 < md.buffer < len(model.buffers):
            if index is None:
                index = md.buffer
            else:
                model.buffers[md.buffer].data = None  # a duplicate's buffer: emptied, indices stay
    if index is None:
        model.buffers.append(fb.BufferT())
        index = len(model.buffers) - 1
    buf = model.buffers[index]
    buf.data, buf.offset, buf.size = payload, 0, 0
    md = fb.MetadataT()
    md.name, md.buffer = METADATA_NAME, index
    model.metadata = [m for m in (model.metadata or []) if _name(m) != METADATA_NAME] + [md]


# The child's whole program: the extension module loaded from its file, not through the tflite_micro
# package (whose __init__ loads the interpreter: 0.5 s more per call).
_ALIGN_CHILD = """\
import importlib.machinery, importlib.util, sys
loader = importlib.machinery.ExtensionFileLoader("tflite_flatbuffer_align_wrapper", sys.argv[1])
module = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
loader.exec_module(module)
module.align_tflite_model(sys.argv[2], sys.argv[3])
"""


def _align_library() -> str:
    """The path of tflite-micro's tflite_flatbuffer_align_wrapper extension (found, not imported)."""
    spec = importlib.util.find_spec("tflite_micro")
    roots = list(spec.submodule_search_locations or []) if spec is not None else []
    for root in roots:
        found = sorted(glob.glob(os.path.join(root, "tensorflow", "lite", "micro", "tools",
                                              "tflite_flatbuffer_align_wrapper*.so")))
        if found:
            return found[0]
    raise ArenaError("tflite-micro's tflite_flatbuffer_align is missing", hint="pip install tflite-micro")


def realign(data: bytes, path: str = "(model)") -> bytes:
    """Re-pack with TFLM's tflite_flatbuffer_align (C++ flatbuffers: buffer data 16-byte aligned).

    In a child process: the C++ re-packer trusts the flatbuffer (an operator declaring an options
    table it lacks is a SIGSEGV), and a crash must end the child, not the command or SCons build.
    """
    with tempfile.TemporaryDirectory(prefix="arena-tflite-") as d:
        src, dst = os.path.join(d, "in.tflite"), os.path.join(d, "out.tflite")
        with open(src, "wb") as f:
            f.write(data)
        try:
            child = subprocess.run([sys.executable, "-I", "-c", _ALIGN_CHILD, _align_library(), src, dst],
                                   capture_output=True, text=True, timeout=120)
        except subprocess.TimeoutExpired:
            raise ArenaError("TFLM's flatbuffer re-packer did not finish in 120 s", file=path,
                             hint="check the model with arena-tool plan MODEL.tflite") from None
        if child.returncode != 0 or not os.path.exists(dst):
            why = (f"signal {signal.Signals(-child.returncode).name}" if child.returncode < 0
                   else f"exit status {child.returncode}")
            last = (child.stderr.strip().splitlines() or [""])[-1][:200]
            raise ArenaError(f"TFLM's flatbuffer re-packer failed on this model ({why}{': ' + last if last else ''})",
                             file=path, hint="the flatbuffer is malformed (e.g. an operator's options table is "
                                             "missing); re-export it with the TFLite converter")
        with open(dst, "rb") as f:
            out = f.read()
    if out[4:8] != tflite_model.IDENTIFIER:
        raise ArenaError("TFLM's tflite_flatbuffer_align wrote no TFL3 file identifier", exit_code=3,
                         hint="this tflite-micro version re-packs differently; please report it")
    return out


def check_plan(model_path: str, plan: PlanFile, plan_path: str) -> tflite_model.TfliteProblem:
    """The model re-derived in the plan's operator order, after every check TFLM does not do."""
    if plan.options.kernels == ARENA_KERNELS:
        raise ArenaError("the plan is for arena's runtime (kernels arena), which TFLite Micro does not run",
                         file=plan_path, field="options.kernels",
                         hint="compare arena's runtime with TFLM's host interpreter: arena-tool run MODEL.tflite "
                              "--board host --runtime arena ('arena-tool check MODEL.tflite PLAN' checks the plan)")
    if plan.kind != tflite_model.KIND:
        raise ArenaError("the plan is not a plan of a .tflite model", file=plan_path, field="model_kind",
                         hint="plan the .tflite model itself: arena-tool plan MODEL.tflite -o PLANNED.tflite")
    opts = plan.options
    if opts.activation_dtype or opts.bitwidths:
        raise ArenaError("the plan re-sizes tensors (activation_dtype / bitwidths), a what-if TFLM does not run",
                         file=plan_path, field="options",
                         hint="plan without --activation-dtype and --bitwidths to write a model TFLM runs")
    if plan.alignment != tflite_model.TFLM_ALIGNMENT:
        raise ArenaError(f"alignment {plan.alignment}: TFLM aligns every arena buffer to "
                         f"{tflite_model.TFLM_ALIGNMENT} bytes", file=plan_path, field="alignment",
                         hint=f"plan with --alignment {tflite_model.TFLM_ALIGNMENT}")
    mp = tflite_model.model_problem(model_path, opts, order=plan.order)  # refuses a non-topological order
    problems = plancheck.check(plan, mp, plan_path)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise CheckFailed(f"refusing to write a planned model: {problems[0]}{more}", file=plan_path,
                          hint="TFLM would use these offsets unchecked; re-plan with arena-tool plan")
    return mp


def write_planned(model_path: str, plan: PlanFile, out_path: str, plan_path: str = "(plan)") -> bytes:
    """Check ``plan`` against the model, then write the planned model to ``out_path`` atomically."""
    mp = check_plan(model_path, plan, plan_path)
    data = tflite_model.read_bytes(model_path)
    out = planned_bytes(data, model_path, offsets_for(mp, plan), mp.order)
    write_atomic(out_path, out)
    return out
