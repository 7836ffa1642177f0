"""The inputs of a firmware run and onnxruntime's reference for them: what ``arena-tool run``
(``firmware``) and ``arena-tool validate`` (``validate``) both compare the board's outputs with.

Inputs: seeded random (``random_inputs``) or an .npz by graph input name (``load_inputs``);
``IntegerIO``: an ``io: int8`` model's float inputs quantized and integer outputs dequantized.
Reference: onnxruntime with its optimizations off (``reference_session``; a QDQ model as arena
lowered it). Tolerances (``compare``): float32 within ``RTOL`` of the output's largest magnitude;
integers within one step; a dequantized float within one step of its scale.
"""

from __future__ import annotations

import dataclasses
import math
import zipfile
import zlib
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from arena_tool.core.errors import ArenaError, did_you_mean, require_regular
from arena_tool.model import liveness, lowering
from arena_tool.run.verify import NUMPY_TYPES

if TYPE_CHECKING:
    from arena_tool.model.lowering import Boundary, Lowered
    from arena_tool.plan.planfile import PlanFile

RTOL = 1e-4

# --- inputs and the reference ---------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class TensorSpec:
    name: str
    dtype: str
    shape: tuple[int, ...]

    def describe(self) -> str:
        return f"{self.name} {self.dtype} {list(self.shape)}"


def graph_specs(plan: PlanFile, names: Sequence[str]) -> list[TensorSpec]:
    by_name = plan.by_name
    return [TensorSpec(n, by_name[n].dtype, by_name[n].shape) for n in names]


def random_inputs(specs: Sequence[TensorSpec], seed: int = 0) -> list[np.ndarray]:
    """Seeded inputs: float32 uniform in [-1, 1), int8/uint8 over their whole range, int32/int64
    in [-128, 127]."""
    rng = np.random.default_rng(seed)
    out: list[np.ndarray] = []
    for s in specs:
        if s.dtype == "float32":
            out.append(rng.uniform(-1.0, 1.0, s.shape).astype(np.float32))
        elif s.dtype == "uint8":
            out.append(rng.integers(0, 256, s.shape, dtype=np.uint8))
        elif s.dtype in NUMPY_TYPES:
            out.append(rng.integers(-128, 128, s.shape).astype(NUMPY_TYPES[s.dtype]))
        else:
            raise ArenaError(f"graph input {s.name!r} is {s.dtype}; the firmware takes {', '.join(NUMPY_TYPES)}",
                             field=s.name)
    return out


def _save_hint(specs: Sequence[TensorSpec]) -> str:
    args = ", ".join(f"{s.name}=..." if s.name.isidentifier() else f"**{{{s.name!r}: ...}}" for s in specs)
    return (f"the model's inputs are {'; '.join(s.describe() for s in specs)}: save them with "
            f"numpy.savez(FILE, {args})")


def load_inputs(path: str, specs: Sequence[TensorSpec]) -> list[np.ndarray]:
    """The arrays of an .npz file, one per graph input by name, checked against ``specs``
    (names, dtypes, shapes); every problem is one ArenaError (exit 2) naming the array."""
    hint = _save_hint(specs)
    require_regular(path, "the input file", "--input")
    try:
        with open(path, "rb") as f:
            magic = f.read(6)
    except FileNotFoundError as e:
        raise ArenaError("input file not found", file=path, field="--input", hint=hint) from e
    except OSError as e:
        raise ArenaError(f"cannot read the input file: {e.strerror}", file=path, field="--input", hint=hint) from e
    if magic == b"\x93NUMPY":
        raise ArenaError("a single .npy array, not an .npz archive of named arrays", file=path,
                         field="--input", hint=hint)
    if not magic.startswith(b"PK"):
        raise ArenaError("not an .npz archive (no zip header)", file=path, field="--input", hint=hint)
    try:
        z = zipfile.ZipFile(path)
    except FileNotFoundError as e:
        raise ArenaError("input file not found", file=path, field="--input", hint=hint) from e
    except (OSError, ValueError, EOFError, RuntimeError, NotImplementedError, zipfile.BadZipFile) as e:
        raise ArenaError(f"cannot read it as an .npz archive: {e}", file=path, field="--input", hint=hint) from e
    with z:
        members = {n[:-4] if n.endswith(".npy") else n: n for n in z.namelist()}
        wanted = {s.name for s in specs}
        for n in members:
            if n not in wanted:
                raise ArenaError(f"the model has no graph input named {n!r}", file=path, field=n,
                                 hint=did_you_mean(n, sorted(wanted)) + hint)
        out = []
        for s in specs:
            if s.name not in members:
                raise ArenaError(f"no array for graph input {s.name!r}", file=path, field=s.name, hint=hint)
            out.append(_member(z, members[s.name], s, path, hint))
    return out


def _member(z: zipfile.ZipFile, member: str, s: TensorSpec, path: str, hint: str) -> np.ndarray:
    """One .npy member, its header's dtype and shape checked before a byte of its data is inflated
    (a small zip can declare gigabytes), then exactly the bytes the shape needs read."""
    try:
        with z.open(member) as f:
            version = np.lib.format.read_magic(f)
            if version not in ((1, 0), (2, 0)):
                raise ValueError(f".npy format version {version[0]}.{version[1]}; arena reads 1.0 and 2.0")
            read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
            shape, fortran, dtype = read(f)
            if dtype.hasobject:
                raise ValueError("an array of Python objects (pickle), which arena never loads")
            if str(dtype) != s.dtype:
                raise ArenaError(f"dtype {dtype}, but the model takes {s.dtype}", file=path, field=s.name,
                                 hint=f"save numpy.asarray(x, dtype=numpy.{s.dtype}) as {s.name!r}")
            if tuple(shape) != s.shape:
                raise ArenaError(f"shape {list(shape)}, but the model takes {list(s.shape)}", file=path,
                                 field=s.name, hint=f"save x.reshape({', '.join(map(str, s.shape))}) as "
                                                    f"{s.name!r}; a symbolic dimension is pinned with "
                                                    f"--input-shape")
            need = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
            data = f.read(need)
            if len(data) != need:
                raise ValueError(f"the array has {len(data):,} of its {need:,} bytes")
    except ArenaError:
        raise
    except (OSError, ValueError, EOFError, SyntaxError, RuntimeError, NotImplementedError, zipfile.BadZipFile,
            zlib.error) as e:  # a damaged, encrypted or newer zip
        raise ArenaError(f"cannot read the array: {e}", file=path, field=s.name, hint=hint) from e
    arr = np.frombuffer(data, dtype=dtype).reshape(shape, order="F" if fortran else "C")
    return np.ascontiguousarray(arr)


def reference(model_path: str, feeds: dict[str, np.ndarray], names: Sequence[str],
              lowered: Lowered | None = None) -> dict[str, np.ndarray]:
    """onnxruntime's values of the graph outputs ``names`` for ``feeds``, optimizations off.

    A QDQ model arena lowered to integer ops (``lowered`` with qdq_fused > 0) is run as
    lowered (lowering.to_onnx: onnxruntime's QOperator kernels), so the reference computes
    what the firmware computes; the float simulation of its Q/DQ pairs differs from any
    integer kernel by a step or two at the output."""
    return reference_session(model_path, names, lowered)(feeds)


def reference_session(model_path: str, names: Sequence[str],
                      lowered: Lowered | None = None) -> Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]]:
    """``reference`` with its onnxruntime session made once: the function of the feeds (arena-tool
    validate runs a data set through one session)."""
    try:
        import onnxruntime as ort
    except ImportError as e:
        raise ArenaError("onnxruntime is not installed: arena-tool run compares the firmware with it",
                         field="run", hint="pip install 'arena-tool[run]' (or .ci/setup in a clone)") from e
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    opts.log_severity_level = 3
    if lowered is not None and lowered.qdq_fused:
        source: Any = lowering.to_onnx(lowered.untiled or lowered)  # tiled stages proven against untiled
    else:
        source = model_path
    if lowered is not None and not set(names) <= set(lowered.graph.outputs):  # tensors inside (io: int8)
        import onnx

        if isinstance(source, str):
            source = onnx.load(source)
        outs = {o.name for o in source.graph.output}
        source.graph.output.extend(onnx.ValueInfoProto(name=n) for n in names if n not in outs)
    if not isinstance(source, str):
        source = source.SerializeToString()

    def failed(e: Exception) -> ArenaError:
        return ArenaError(f"onnxruntime cannot run the model: {str(e).splitlines()[0] if str(e) else e}",
                          file=model_path, hint="check the model with onnx.checker and onnxruntime")

    try:
        sess = ort.InferenceSession(source, opts, providers=["CPUExecutionProvider"])
    except Exception as e:  # noqa: BLE001 - onnxruntime raises its own exception types
        raise failed(e) from e

    def run(feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        try:
            values = sess.run(list(names), feeds)
        except Exception as e:  # noqa: BLE001 - onnxruntime raises its own exception types
            raise failed(e) from e
        return {n: np.asarray(v) for n, v in zip(names, values)}

    return run


def ort_refuses(model_path: str) -> str | None:
    """Why onnxruntime cannot load the model file as it is (the first line of its error), or None.

    ``reference`` runs a QDQ model as arena lowered it; a file onnxruntime refuses (a wrong
    value_info on a folded weight) still has a reference then, and ``run`` must not let its
    "match" read as a match with onnxruntime's run of the file."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    opts.log_severity_level = 3
    try:
        ort.InferenceSession(model_path, opts, providers=["CPUExecutionProvider"])
    except Exception as e:  # noqa: BLE001 - onnxruntime raises its own exception types
        return (str(e).strip().splitlines() or [type(e).__name__])[0][:300]
    return None


# --- comparing ----------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Comparison:
    """One graph output against onnxruntime. max_rel: max_abs relative to the reference's largest
    magnitude. tolerance: on max_abs; kind 'relative' (float32) or 'quantization_step'."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    max_abs: float
    max_rel: float
    tolerance: float
    kind: str
    step: float | None
    ok: bool

    def line(self) -> str:
        tol = (f"tolerance {RTOL:g} relative" if self.kind == "relative" else "bit for bit" if self.kind == "exact"
               else f"tolerance one quantization step, {self.step:.6g}")
        return (f"output {self.name} {self.dtype} {list(self.shape)}: max abs error {_e(self.max_abs)}, "
                f"max rel error {_e(self.max_rel)} ({tol}): {'ok' if self.ok else 'MISMATCH'}")


def _e(v: float) -> str:
    return "inf" if math.isinf(v) else f"{v:.3e}"


def quant_step(lowered: Lowered, plan: PlanFile, name: str) -> float | None:
    """The quantization step of a float graph output a DequantizeLinear makes (None otherwise)."""
    buffers = plan.by_name
    for op in lowered.ops:
        if op.op_type == "DequantizeLinear" and name in op.outputs:
            b = buffers.get(op.inputs[0])
            if b is not None and b.quant is not None and b.quant.scale:
                return float(max(b.quant.scale))
            if len(op.inputs) > 1 and op.inputs[1]:
                v = lowered.small_value(op.inputs[1])
                if v is None and op.inputs[1] in lowered.constants:
                    v = lowered.value(op.inputs[1])
                if v is not None and np.size(v):
                    return float(np.max(np.abs(v)))
    return None


def compare(name: str, got: np.ndarray, want: np.ndarray, step: float | None = None, exact: bool = False) -> Comparison:
    """got (the firmware's) against want (onnxruntime's); see the module docstring for tolerances.
    exact: every element equal (a .tflite against TFLM's host interpreter, bit for bit)."""
    want = np.asarray(want)
    dtype = str(want.dtype)
    shape = tuple(int(d) for d in want.shape)
    g = np.asarray(got).reshape(-1)
    w = want.reshape(-1)
    integer = want.dtype.kind in "iub"
    if g.size != w.size:
        diff = np.array([np.inf])
    elif integer:
        diff = np.abs(g.astype(np.float64) - w.astype(np.float64))
    else:
        g64, w64 = g.astype(np.float64), w.astype(np.float64)
        with np.errstate(invalid="ignore"):
            diff = np.abs(g64 - w64)
        same = (g64 == w64) | (np.isnan(g64) & np.isnan(w64))
        diff = np.where(same, 0.0, np.where(np.isnan(diff), np.inf, diff))
    max_abs = float(diff.max()) if diff.size else 0.0
    finite = w[np.isfinite(w.astype(np.float64))] if w.size else w
    scale = float(np.max(np.abs(finite.astype(np.float64)))) if finite.size else 0.0
    max_rel = max_abs / scale if scale > 0 else (0.0 if max_abs == 0 else math.inf)
    if exact:
        kind, tol, step = "exact", 0.0, None
    elif integer:
        kind, tol, step = "quantization_step", 1.0, 1.0
    elif step is not None:
        kind, tol = "quantization_step", step * (1 + 1e-6)
    else:
        kind, tol = "relative", RTOL * scale
    return Comparison(name, dtype, shape, max_abs, max_rel, tol, kind, step, bool(max_abs <= tol))


def quantize(x: np.ndarray, dtype: str, scale: float, zero_point: int) -> np.ndarray:
    """onnxruntime's QuantizeLinear (and the header's <tensor>_quantize): x / scale in float32,
    rounded half to even, plus the zero point, saturated to ``dtype``."""
    lo, hi = (0, 255) if dtype == "uint8" else (-128, 127)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        v = np.rint(np.asarray(x, np.float32) / np.float32(scale))
    v = np.clip(np.nan_to_num(v, nan=-1024.0), -1024.0, 1024.0)  # as the header's helper: NaN to the low end
    out: np.ndarray = np.clip(v.astype(np.float64) + zero_point, lo, hi).astype(NUMPY_TYPES[dtype])
    return out


def dequantize(q: np.ndarray, scale: float, zero_point: int) -> np.ndarray:
    """onnxruntime's DequantizeLinear (and the header's <tensor>_dequantize): (q - zero point) * scale in float32."""
    return (np.asarray(q).astype(np.int32) - np.int32(zero_point)).astype(np.float32) * np.float32(scale)


@dataclasses.dataclass(frozen=True)
class IntegerIO:
    """An ``io: int8`` run: the model's float inputs (``specs``, what --input holds), the boundary
    QuantizeLinear/DequantizeLinear the plan removed (``inputs``, ``outputs``), and the model
    lowered with its own I/O (``lowered``), which onnxruntime runs for the reference."""

    specs: list[TensorSpec]
    inputs: tuple[Boundary, ...]
    outputs: tuple[Boundary, ...]
    lowered: Lowered

    @classmethod
    def of(cls, model: str, plan: PlanFile) -> "IntegerIO":
        low = liveness.lower(model, dataclasses.replace(plan.options, io="model"))
        ins, outs = lowering.boundary(low)
        changed = {b.model: b.integer for b in ins}
        by_name = plan.by_name
        specs = [TensorSpec(n, low.types[n].dtype, tuple(low.types[n].shape)) if n in changed
                 else TensorSpec(n, by_name[n].dtype, by_name[n].shape) for n in low.inputs]
        return cls(specs, ins, outs, low)

    def quantize(self, inputs: Sequence[np.ndarray]) -> list[tuple[str, np.ndarray]]:
        """The firmware's inputs (integer name, array) from the model's (in ``specs`` order)."""
        by_model = {b.model: b for b in self.inputs}
        out = []
        for s, a in zip(self.specs, inputs):
            b = by_model.get(s.name)
            out.append((s.name, a) if b is None else
                       (b.integer, quantize(a, b.dtype, b.quant.scale[0], b.quant.zero_point[0])))
        return out

    def dequantize(self, outputs: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        """The model's float outputs (``outputs`` order) from the firmware's integers."""
        return [dequantize(outputs[b.integer], b.quant.scale[0], b.quant.zero_point[0]) for b in self.outputs]
