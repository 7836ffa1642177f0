"""Int8 twins of real float ONNX models, made inside the tests.

No int8 twin of the onnx package's light models ships anywhere, and the MLPerf
Tiny int8 ONNX files are QOperator only, so the tests make their own with
``onnxruntime.quantization.quantize_static``: QDQ and QOperator, per-tensor and
per-channel, deterministically (byte-identical from run to run, whatever
PYTHONHASHSEED, for a given onnx/onnxruntime/numpy), once per cache directory.

The light models carry no weights (ConstantOfShape nodes make them at run time),
so they are first "materialized": every constant subgraph becomes initializers
holding seeded random values, which gives the quantizer real weights to scale.

Importable without pytest: ``import quantized`` (tests/ is on sys.path through
conftest.py, as for ``import models``) or ``from tests.quantized import ...``.
"""

from __future__ import annotations

import os
import tempfile
import zlib
from pathlib import Path
from typing import Callable

import numpy as np
from shared_paths import MLPERF, SHARED_REQUIRED
import onnx
from onnx import helper, numpy_helper

LIGHT_DIR = Path(os.path.dirname(onnx.__file__)) / "backend" / "test" / "data" / "light"
MLPERF_DIR = MLPERF  # ARENA_SHARED or ../shared
# The float MLPerf Tiny ONNX files; the *_int8.onnx ones there are already quantized.
MLPERF_FLOAT_GLOBS = ("*_fp32_tflite2onnx.onnx", "*_float_tflite2onnx.onnx", "*_float32_tflite2onnx.onnx",
                      "image_classification__pretrainedResnet_tflite2onnx.onnx")
FORMATS = ("qdq", "qoperator")
# Per-channel QDQ needs DequantizeLinear's axis attribute (opset 13); the light models are opset 9.
MIN_OPSET = 13
WEIGHT_STD = 0.05
CALIBRATION_SAMPLES = 2
# quantize_static's defaults that shape the graph, spelled out so the twins do not drift with them:
# int8 activations asymmetric (so Relu/Clip vanish into the range of the QuantizeLinear before
# them), weights symmetric (zero point 0), one Q/DQ pair per tensor shared by its consumers,
# weights stored as int8 initializers behind a DequantizeLinear (no float weight + Q pair).
EXTRA_OPTIONS: dict[str, object] = {
    "ActivationSymmetric": False,
    "WeightSymmetric": True,
    "DedicatedQDQPair": False,
    "QDQKeepRemovableActivations": False,
    "AddQDQPairToWeight": False,
    "ForceQuantizeNoInputCheck": False,
}
# Too big to quantize four ways in the default run (vgg19: ~9 s to materialize, ~9 s per twin on
# 2 cores): one (format, per_channel) each.
BIG = {"light_bvlc_alexnet": ("qoperator", False), "light_zfnet512": ("qdq", True), "light_vgg19": ("qdq", False)}
# Ops whose output is not a function of their inputs: never folded into constants.
_RANDOM_OPS = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial", "Bernoulli"}


def mlperf_float_models() -> list[Path]:
    """The MLPerf Tiny float ONNX files, sorted; [] where ../shared/models/mlperf_tiny is absent
    (a test parametrized over it then has nothing to run, or skips)."""
    if not MLPERF_DIR.is_dir():
        if SHARED_REQUIRED:  # at collection: the run errors rather than parametrize over nothing
            raise FileNotFoundError(f"{MLPERF_DIR} is absent but ARENA_SHARED is set and ARENA_REQUIRE_TOOLS=1")
        return []
    return sorted({p for pattern in MLPERF_FLOAT_GLOBS for p in MLPERF_DIR.glob(pattern) if "int8" not in p.name},
                  key=lambda p: p.name)


def float_models() -> list[Path]:
    """Every float model to make twins of: the onnx package's light models (always there) plus
    mlperf_float_models(), sorted by file name."""
    return sorted([*LIGHT_DIR.glob("*.onnx"), *mlperf_float_models()], key=lambda p: p.name)


def cases(full: bool = False) -> list[tuple[Path, str, bool]]:
    """(float model, fmt, per_channel) for a test to parametrize over: every float model in all
    four forms, except the BIG ones in one form each unless ``full`` (measured on 2 cores: ~63 s
    to make all of them, ~109 s with ``full``); every model is quantized in some form."""
    forms = [(fmt, pc) for fmt in FORMATS for pc in (False, True)]
    return [(p, fmt, pc) for p in float_models()
            for fmt, pc in (forms if full or p.stem not in BIG else [BIG[p.stem]])]


def _seeded_weight(name: str, shape: tuple[int, ...], dtype: np.dtype, positive: bool) -> np.ndarray:
    """Standard normal * WEIGHT_STD seeded by crc32 of the tensor name (stable across runs and
    interpreters, unlike hash()); ``positive`` gives 1 + |.|, for BatchNormalization variances."""
    z = np.random.default_rng(zlib.crc32(name.encode())).standard_normal(shape, dtype=np.float32)
    z *= WEIGHT_STD
    if positive:
        np.abs(z, out=z)
        z += 1.0
    return z.astype(dtype, copy=False)


def materialize(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model at opset >= 13 with every constant subgraph (nodes fed only by initializers or
    other such nodes, e.g. ConstantOfShape) folded into initializers: float results become seeded
    random weights of the same shape and dtype, integer results (shapes, axes) keep their values.

    A 2-input Sum becomes Add. Initializers leave graph.input (IR >= 4), unused ones are dropped.

    Why: the light models' weights are ConstantOfShape fills, which quantize_static would treat as
    activations; ORT would otherwise upgrade opset 9 to 11 only, too old for per-channel QDQ; and
    ORT quantizes Add but not Sum (resnet50 and shufflenet would keep float islands).
    """
    from onnx.reference import ReferenceEvaluator

    m = onnx.ModelProto()
    m.CopyFrom(model)
    opset = next((o.version for o in m.opset_import if o.domain in ("", "ai.onnx")), MIN_OPSET)
    if opset < MIN_OPSET:  # convert while the weights are still tiny ConstantOfShape nodes
        m = onnx.version_converter.convert_version(m, MIN_OPSET)
    m.ir_version = max(m.ir_version, 7)
    g = m.graph

    constant = {i.name for i in g.initializer}
    folded: list[onnx.NodeProto] = []
    kept: list[onnx.NodeProto] = []
    for n in g.node:
        is_const = (n.op_type not in _RANDOM_OPS and n.domain in ("", "ai.onnx")
                    and not any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for a in n.attribute)
                    and all(x == "" or x in constant for x in n.input))
        (folded if is_const else kept).append(n)
        if is_const:
            constant.update(o for o in n.output if o)
    used = {x for n in kept for x in n.input} | {o.name for o in g.output}
    frontier = [o for n in folded for o in n.output if o in used]
    variances = {n.input[4] for n in kept if n.op_type == "BatchNormalization" and len(n.input) > 4}

    new_inits: list[onnx.TensorProto] = []
    if frontier:
        sub = helper.make_graph(folded, "constants", [], [helper.make_tensor_value_info(f, 0, None) for f in frontier],
                                list(g.initializer))
        subm = helper.make_model(sub, opset_imports=list(m.opset_import), ir_version=m.ir_version)
        values = ReferenceEvaluator(subm).run(None, {})
        for name, value in zip(frontier, values):
            value = np.asarray(value)
            if np.issubdtype(value.dtype, np.floating):
                value = _seeded_weight(name, value.shape, value.dtype, name in variances)
            new_inits.append(numpy_helper.from_array(value, name))

    for n in kept:  # a 2-input Sum is an Add, which ORT quantizes (QLinearAdd); Sum it leaves float
        if n.op_type == "Sum" and len(n.input) == 2:
            n.op_type = "Add"
    del g.node[:]
    g.node.extend(kept)
    keep_inits = [i for i in g.initializer if i.name in used]
    del g.initializer[:]
    g.initializer.extend(keep_inits + new_inits)
    # IR >= 4 lets initializers stay out of graph.input; there they would read as model inputs.
    real_inputs = [i for i in g.input if i.name not in constant]
    del g.input[:]
    g.input.extend(real_inputs)
    live = used | {o for n in kept for o in n.output}
    vis = [v for v in g.value_info if v.name in live]
    del g.value_info[:]
    g.value_info.extend(vis)
    return m


def calibration_inputs(model: onnx.ModelProto, samples: int = CALIBRATION_SAMPLES) -> list[dict[str, np.ndarray]]:
    """``samples`` deterministic feeds (sample k from default_rng(k)): standard normal for float
    inputs, zeros for integer ones; symbolic or zero dims pinned to 1."""
    inits = {i.name for i in model.graph.initializer}
    feeds = []
    for k in range(samples):
        rng = np.random.default_rng(k)
        feed = {}
        for inp in model.graph.input:
            if inp.name in inits:
                continue
            tt = inp.type.tensor_type
            shape = tuple(d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else 1 for d in tt.shape.dim)
            dtype = helper.tensor_dtype_to_np_dtype(tt.elem_type)
            feed[inp.name] = (rng.standard_normal(shape).astype(dtype) if np.issubdtype(dtype, np.floating)
                              else np.zeros(shape, dtype))
        feeds.append(feed)
    return feeds


class _Feeds:
    """A CalibrationDataReader over a fixed list of feeds (duck-typed: ORT checks for get_next)."""

    def __init__(self, feeds: list[dict[str, np.ndarray]]):
        self._it = iter(feeds)
        self._n = len(feeds)

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self._it, None)

    def __iter__(self) -> "_Feeds":
        return self

    def __next__(self) -> dict[str, np.ndarray]:
        item = self.get_next()
        if item is None:
            raise StopIteration
        return item

    def __len__(self) -> int:
        return self._n


def _publish(build: Callable[[Path], Path], final: Path) -> Path:
    """Run ``build(workdir) -> Path`` in a private temp dir beside ``final`` and os.replace its
    result onto ``final``: a concurrent worker sees either no file or a whole one, and ORT's own
    side files (``*-inferred.onnx`` beside its input) never collide between workers."""
    if final.exists():
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=final.parent, prefix=f".{final.stem}.") as work:
        os.replace(build(Path(work)), final)
    return final


def materialized(path: Path, cache_dir: Path) -> Path:
    """The float twin, the model that gets quantized, cached as ``<stem>_float.onnx``:
    materialize(), then ORT's basic graph optimizations (BatchNormalization and Mul/Add folded into
    the Conv before them, Dropout removed). That is what ORT's quant_pre_process does to a model
    with static shapes (quantize_static redoes its shape inference), at under half its cost (it
    saves and reloads a 575 MB vgg19 three times), so the file is tagged as pre-processed.
    Passes onnx.checker and runs in onnxruntime."""
    import onnxruntime as ort
    from onnxruntime.quantization.quant_utils import add_pre_process_metadata

    def build(work: Path) -> Path:
        optimized = work / "optimized.onnx"
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        options.optimized_model_filepath = str(optimized)
        ort.InferenceSession(materialize(onnx.load(path)).SerializeToString(), options,
                             providers=["CPUExecutionProvider"])
        m = onnx.load(optimized)
        # ORT writes an import for every domain it knows (com.microsoft, ai.onnx.ml, ...): keep the used ones.
        used = {n.domain for n in m.graph.node} | {""}
        kept = [o for o in m.opset_import if o.domain in used]
        del m.opset_import[:]
        m.opset_import.extend(kept)
        add_pre_process_metadata(m)  # else quantize_static logs "Please consider to run pre-processing"
        out = work / "float.onnx"
        onnx.save(m, out)
        return out

    return _publish(build, Path(cache_dir) / f"{Path(path).stem}_float.onnx")


def quantized(path: Path, fmt: str, per_channel: bool, cache_dir: Path, *, activation: str = "int8",
              weight_symmetric: bool = True) -> Path:
    """The int8 twin of float model ``path`` (QInt8 activations and weights, MinMax calibration on
    calibration_inputs), made once as ``<stem>_<fmt>_<pc|pt>.onnx`` in ``cache_dir``; ``fmt`` is
    "qdq" (QuantizeLinear/DequantizeLinear around float ops) or "qoperator" (QLinearConv, ...).
    ``activation="uint8"`` (QUInt8 activations: onnxruntime's U8S8) and ``weight_symmetric=False``
    (int8 weights with zero points other than 0) make the variants other quantizers write, named
    ``..._u8`` and ``..._wa``.
    quantize_static reads a copy of the float twin in a private directory, since it writes
    ``<input>-inferred.onnx`` beside its input."""
    from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType, quantize_static

    ACTIVATIONS = {"int8": QuantType.QInt8, "uint8": QuantType.QUInt8}
    if fmt not in FORMATS:
        raise ValueError(f"fmt must be one of {FORMATS}, not {fmt!r}")
    cache_dir = Path(cache_dir)
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {tuple(ACTIVATIONS)}, not {activation!r}")
    variant = ("_u8" if activation == "uint8" else "") + ("" if weight_symmetric else "_wa")
    final = cache_dir / f"{Path(path).stem}_{fmt}_{'pc' if per_channel else 'pt'}{variant}.onnx"
    if final.exists():
        return final
    source = materialized(path, cache_dir)
    # The source's graph inputs are the twin's, and it loads in ms where the twin may be 575 MB.
    feeds = calibration_inputs(onnx.load(path))

    def build(work: Path) -> Path:
        src = work / "float.onnx"
        try:
            os.link(source, src)
        except OSError:
            src.write_bytes(source.read_bytes())
        out = work / "quantized.onnx"
        quantize_static(
            str(src), str(out), _Feeds(feeds),
            quant_format=QuantFormat.QDQ if fmt == "qdq" else QuantFormat.QOperator,
            per_channel=per_channel, reduce_range=False,
            activation_type=ACTIVATIONS[activation], weight_type=QuantType.QInt8,
            calibrate_method=CalibrationMethod.MinMax,
            extra_options={**EXTRA_OPTIONS, "WeightSymmetric": weight_symmetric},
        )
        return out

    return _publish(build, final)

