"""arena's runtime against TFLite Micro, reference kernels and CMSIS-NN, on one emulated Cortex-M.

    python3 bench/speed.py [--networks vww,kws,resnet8,ad01] [--dtypes int8,float] [--optimize size|speed]
                           [--variants kws,ds_tcn,mobilenet_v2,mnasnet,mobilenet_v3,shufflenet_v2,squeezenet]
                           [--zoo ds_tcn,mobilenet_v2,mnasnet,mobilenet_v3,shufflenet_v2,squeezenet,kws]
                           [--board mps2_an500,mps2_an386,mps2_an385,mps3_an547,mps2_an505] [--kernels ref,cmsis_nn] [--build DIR]

For each MLPerf Tiny network (VWW, KWS, ResNet-8, AD01), int8 and float32, this builds and runs

* arena: ``arena-tool run`` on the network's ONNX conversion (``*_tflite2onnx*.onnx``; for int8,
  the ``*_int8.onnx`` twin where one ships, else the float ONNX quantized here by the tests'
  helper, tests/quantized.py: onnxruntime quantize_static, QDQ, per-channel weights, cached
  under the build folder), with arena's build flags at ``--optimize``'s level (default: a
  build's, size: -Os);
* TFLM reference and TFLM + CMSIS-NN on the network's ``.tflite``, built from
  ``<shared>/third_party/tflite-micro`` at TFLM's default flags (-Os core, -O2 kernels) by
  ``<shared>/tools/tflm_speed`` (build.sh, run.py: the tool the issue names, called, not copied),

all on ``qemu-system-arm -M mps2-an500 -icount shift=0`` with the same count: SysTick ticks of
one inference x 40 (25 MHz SysTick, 1 ns per instruction). ``--board`` names other QEMU boards
too (mps2_an386: Cortex-M4, mps2_an385: Cortex-M3 without FPU or DSP extension): each gets arena
and TFLM built for its core (tflm_speed copied under ``--build``/<board>/tool with its -mcpu,
-mfpu, -mfloat-abi and QEMU machine, so CMSIS-NN takes the paths it takes there), its own table,
and with two boards or more a last table of arena / TFLM + CMSIS-NN per network and board. It prints one row per (network,
dtype): MACs (arena_tool.model.macs on the ONNX: conv and gemm MACs plus pooling windows, the same
network), instructions and instructions per MAC of each runtime, flash (the ELF's allocated
sections with contents, the input data included: arena-tool run links its input table, TFLM's
firmware its g_input) and the ratios arena / TFLM measured in this run; then which files were used.

Then, arena alone (``--variants``; ``--networks ''`` measures only these): each network's int8 twin
and its two variants other quantizers write, quantized here by tests/quantized.py (QOperator,
per-channel): uint8 activations (onnxruntime's U8S8) and asymmetric int8 weights (zero points
other than 0), one ``arena-tool run --profile`` each, every output equal to onnxruntime's. The
networks: MLPerf Tiny's KWS and tests/zoo.py's DS-TCN, MobileNetV2 and MnasNet (the default), and on
request the zoo's MobileNetV3, ShuffleNetV2 and SqueezeNet. A table of each
variant's instructions and its ratio to the int8 twin, then one of instructions per MAC per op
kind (depthwise KxK, pointwise, conv KxK, fully connected: the conv ops' kernel and group from
the lowered model) of every variant.

``--zoo`` (none by default) runs the same networks' three QOperator twins on arena and on TFLM +
CMSIS-NN: each twin converted by bench/onnx2tflite.py to the same int8 network as a .tflite
(uint8 activations as int8, asymmetric weights made symmetric: the notes column says so; the
largest difference of the logits' codes between TFLM's host interpreter and onnxruntime is
printed too), built by a copy of tflm_speed whose model_to_c.py resolves the zoo's ops (HARD_SWISH,
TRANSPOSE, SPLIT, PADV2, ...) with those kernels compiled (``OPS``) and with its per-operator
profile firmware (``PROFILE=1``), for each ``--board`` as the MLPerf table's TFLM is (on mps3_an547
CMSIS-NN's Helium kernels, on mps2_an505 its DSP ones). It prints arena / TFLM + CMSIS-NN per network and variant, then
per op kind (arena's ops from its profile, TFLM's from fw_prof.elf, summed under the same names)
instructions, instructions per MAC and their ratio.

``<shared>`` is ``../shared`` beside the project (``ARENA_SHARED`` overrides it). Without it, or
without the cross C++ toolchain (Debian ``libstdc++-arm-none-eabi-newlib``), qemu-system-arm or
the ``tflite_micro`` Python package, the script says why and exits 0 having measured nothing.
TFLM builds and their runs are cached under ``--build`` (default ``build/speed``): a firmware is
rebuilt when its model or the tool changed, a run repeated when its ELF changed, so a rerun
only measures arena again. Exit status 1 when arena's firmware fails or its outputs differ from
onnxruntime's; a TFLM firmware that does not run a model (TFLM refuses the hybrid KWS float32
.tflite) is a row marked failed and a note saying why.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if sys.path[:1] != [str(ROOT)]:  # before bench/ (a script's own folder), whose bench.py hides the bench package
    sys.path.insert(0, str(ROOT))

from arena_tool.target.flags import DEFAULT_OPTIMIZE, LEVELS  # noqa: E402

SHARED_ENV = "ARENA_SHARED"
BOARD = "mps2_an500"  # the speed anchor; tflm_speed as shipped builds for its Cortex-M7
KERNELS = ("ref", "cmsis_nn")
KERNEL_NAMES = {"ref": "TFLM reference", "cmsis_nn": "TFLM + CMSIS-NN"}
OPT = "tflm"  # build.sh: TFLM's default flags, -Os for the core and -O2 for the kernels
OPT_TAG = "tflmdefault"  # build.sh names its folder <kernels>_<tag>
DTYPES = ("int8", "float")
TIMEOUT = 1800.0


@dataclasses.dataclass(frozen=True)
class Network:
    """One MLPerf Tiny network: its .tflite files and ONNX conversions in models/mlperf_tiny/
    (onnx_int8 None: quantized here from onnx_float)."""

    key: str
    title: str
    tflite_int8: str
    tflite_float: str
    onnx_float: str
    onnx_int8: str | None


NETWORKS = (
    Network("vww", "VWW", "visual_wake_words__vww_96_int8.tflite", "visual_wake_words__vww_96_float.tflite",
            "visual_wake_words__vww_96_float_tflite2onnx.onnx", "visual_wake_words__vww_96_float_tflite2onnx_int8.onnx"),
    Network("kws", "KWS", "keyword_spotting__kws_ref_model.tflite", "keyword_spotting__kws_ref_model_float32.tflite",
            "keyword_spotting__kws_ref_model_float32_tflite2onnx.onnx", None),
    Network("resnet8", "ResNet-8", "image_classification__pretrainedResnet_quant.tflite",
            "image_classification__pretrainedResnet.tflite", "image_classification__pretrainedResnet_tflite2onnx.onnx",
            "image_classification__pretrainedResnet_tflite2onnx_int8.onnx"),
    Network("ad01", "AD01", "anomaly_detection__ad01_int8.tflite", "anomaly_detection__ad01_fp32.tflite",
            "anomaly_detection__ad01_fp32_tflite2onnx.onnx", None),
)


def shared_dir(env: Mapping[str, str] | None = None) -> Path:
    """``$ARENA_SHARED``, else ../shared beside the project root."""
    env = os.environ if env is None else env
    return Path(env[SHARED_ENV]) if env.get(SHARED_ENV) else ROOT.parent / "shared"


def tflm_dir(shared: Path) -> Path:
    return shared / "third_party" / "tflite-micro"


def tool_dir(shared: Path) -> Path:
    return shared / "tools" / "tflm_speed"


def models_dir(shared: Path) -> Path:
    return shared / "models" / "mlperf_tiny"


def skip_reason(shared: Path, which: Callable[[str], str | None] = shutil.which,
                have_module: Callable[[str], bool] | None = None) -> str | None:
    """Why nothing can be measured here, or None. ``which``/``have_module`` are for the tests."""
    if have_module is None:
        import importlib.util

        def have_module(name: str) -> bool:
            return importlib.util.find_spec(name) is not None

    if not shared.is_dir():
        return (f"{shared} is not here (the shared folder with TFLM and the MLPerf Tiny models; "
                f"set {SHARED_ENV} to its path)")
    for path, what in ((tflm_dir(shared), "TFLM's sources"), (tool_dir(shared) / "build.sh", "the tflm_speed tool"),
                       (models_dir(shared), "the MLPerf Tiny models")):
        if not path.exists():
            return f"{path} is not here ({what})"
    for tool, why in (("arm-none-eabi-g++", "TFLM is C++ (Debian: gcc-arm-none-eabi, libstdc++-arm-none-eabi-newlib)"),
                      ("arm-none-eabi-gcc", "arena's firmware (Debian: gcc-arm-none-eabi)"),
                      ("qemu-system-arm", "the emulator (Debian: qemu-system-arm)"), ("make", "build.sh runs it"),
                      ("bash", "build.sh is a bash script")):
        if which(tool) is None:
            return f"{tool} is not on PATH: {why}"
    for module in ("tflite_micro", "elftools"):
        if not have_module(module):
            return f"the Python package {module} is missing (pip install tflite-micro pyelftools)"
    return None


# --- TFLM -------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Measured:
    """One firmware's numbers; instructions None (and why) when it did not finish."""

    instructions: int | None
    flash: int | None
    error: str | None = None


# tflm_speed's build.sh and run.py as shipped: the Cortex-M7 of mps2-an500
TOOL_ARCH = "-mcpu=cortex-m7 -mfpu=fpv5-d16 -mfloat-abi=hard"
TOOL_CPU_DEF = "-DCPU_M7=1"
TOOL_MACHINE = '"mps2-an500"'
TOOL_CLOCK = "CLOCK_HZ = 25_000_000"  # run.py: the SysTick clock ticks are turned into instructions with
TOOL_FLASH = "FLASH (rx)  : ORIGIN = 0x00000000, LENGTH = 4M"  # link.ld: the an500's memory map
TOOL_RAM = "RAM   (rwx) : ORIGIN = 0x20000000, LENGTH = 4M"


def tool_for(shared: Path, build: Path, board: str) -> Path:
    """tflm_speed for ``board``'s core: the shipped tool for mps2_an500, else a copy under ``build``
    whose build.sh compiles for the board's -mcpu/-mfpu/-mfloat-abi (CMSIS-NN then takes its DSP
    path on a Cortex-M4 and its plain-C path on a Cortex-M3, as TFLM's TARGET_ARCH would), whose
    run.py starts the board's QEMU machine and counts its SysTick clock (an547: 32 MHz, 31.25
    instructions a tick; an505: 20 MHz, 50), and whose link.ld puts code at the board's flash and
    data in its largest zero-wait RAM (the an505 boots at 0x10000000; the an547's DTCM ends at
    512K: the an500's 4M there locked the firmware up at reset, and TFLM's arena is 1 MiB); each
    substitution must hit exactly once."""
    src = tool_dir(shared)
    if board == BOARD:
        return src
    from arena_tool.target import boards

    target = boards.load_board(board)
    if not target.qemu:
        raise SystemExit(f"speed: error: board {board} has no qemu machine to run on")
    cpu = target.cpu
    arch = " ".join(f for f in cpu.gcc_flags() if f != "-mthumb")
    core = cpu.core.removeprefix("cortex-").upper()  # CPU_M4, CPU_M3 as TFLM's cortex_m_generic defines
    ram = max((r for r in target.ram if r.zero_wait), key=lambda r: r.length)  # TFLM's arena is 1 MiB
    clock = f"CLOCK_HZ = {target.cpu.clock_hz:_}" if target.cpu.clock_hz else TOOL_CLOCK
    flash = f"FLASH (rx)  : ORIGIN = {target.flash.origin:#010x}, LENGTH = {target.flash.length}"
    data = f"RAM   (rwx) : ORIGIN = {ram.origin:#010x}, LENGTH = {ram.length}"
    # the clock and memory map only where the board's differ from the an500's (an M4 or M3 mps2 keeps them)
    subs = {"build.sh": ((TOOL_ARCH, arch), (TOOL_CPU_DEF, f"-DCPU_{core}=1")),
            "run.py": ((TOOL_MACHINE, f'"{target.qemu}"'),
                       *(((TOOL_CLOCK, clock),) if clock.replace("_", "") != TOOL_CLOCK.replace("_", "") else ())),
            "link.ld": tuple((old, new) for old, new, same in
                             ((TOOL_FLASH, flash, (target.flash.origin, target.flash.length) == (0, 4 << 20)),
                              (TOOL_RAM, data, (ram.origin, ram.length) == (0x20000000, 4 << 20))) if not same)}
    return _copy_tool(src, build / "tool", subs)


def _copy_tool(src: Path, out: Path, subs: Mapping[str, Sequence[tuple[str, str]]]) -> Path:
    """The tool folder ``src`` copied to ``out`` with ``subs`` replaced in its files, each exactly once."""
    out.mkdir(parents=True, exist_ok=True)
    for f in sorted(p for p in src.iterdir() if p.is_file()):
        text = f.read_text(encoding="utf-8")
        for old, new in subs.get(f.name, ()):
            if text.count(old) != 1:
                raise SystemExit(f"speed: error: {f} no longer holds {old!r} once; update bench/speed.py's tool_for or zoo_tool")
            text = text.replace(old, new)
        dst = out / f.name
        if not dst.is_file() or dst.read_text(encoding="utf-8") != text:  # unchanged: its mtime keeps the cache
            dst.write_text(text, encoding="utf-8")
            dst.chmod(f.stat().st_mode | 0o200)
    return out


# The zoo's networks use ops MLPerf Tiny's do not: TFLM kernels build.sh compiles for them (its OPS)
# and resolver lines model_to_c.py writes for them (its ADD table, extended in a copy of the tool).
ZOO_OPS = ("conv depthwise_conv fully_connected pooling reshape softmax add quantize dequantize reduce pad mul "
           "concatenation transpose split split_v hard_swish")
TOOL_ADD = '"MUL": "AddMul", "CONCATENATION": "AddConcatenation"}'
ZOO_ADD = ('"MUL": "AddMul", "CONCATENATION": "AddConcatenation", "HARD_SWISH": "AddHardSwish", '
           '"TRANSPOSE": "AddTranspose", "SPLIT": "AddSplit", "SPLIT_V": "AddSplitV", "PADV2": "AddPadV2"}')


def zoo_tool(tool_path: Path, build: Path) -> Path:
    """``tool_path`` (tool_for's) copied under ``build``/zoo_tool with model_to_c.py resolving the zoo's ops."""
    return _copy_tool(tool_path, build / "zoo_tool", {"model_to_c.py": ((TOOL_ADD, ZOO_ADD),)})


def tflm_elf(build: Path, kernels: str, tflite: str) -> Path:
    return build / "tflm" / f"{kernels}_{OPT_TAG}" / Path(tflite).stem / "fw.elf"


def stale(elf: Path, inputs: Iterable[Path]) -> bool:
    """The firmware must be built: missing, or older than a model or tool file it is made from."""
    if not elf.is_file():
        return True
    t = elf.stat().st_mtime
    return any(p.stat().st_mtime > t for p in inputs)


def build_tflm(shared: Path, tool_path: Path, build: Path, kernels: str, tflites: Sequence[Path], jobs: int,
               extra_env: Mapping[str, str] | None = None) -> None:
    """Build the firmwares of ``tflites`` that are missing or out of date (build.sh, TFLM's defaults).
    A CMSIS-NN build reuses the reference build's objects of the core files when they are there."""
    tool = sorted(p for p in tool_path.iterdir() if p.is_file())
    todo = [t for t in tflites if stale(tflm_elf(build, kernels, t.name), [t, *tool])]
    if not todo:
        return
    out = build / "tflm"
    out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHON=sys.executable, JOBS=str(jobs), **(extra_env or {}))
    share = out / f"ref_{OPT_TAG}"
    if kernels != "ref" and (share / "obj").is_dir():
        env["SHARE_OBJ"] = str(share.resolve())
    cmd = ["bash", str(tool_path / "build.sh"), str(tflm_dir(shared)), str(out), kernels, OPT, *map(str, todo)]
    print(f"speed: building {KERNEL_NAMES[kernels]} for {', '.join(t.name for t in todo)} (cached in {out})",
          file=sys.stderr, flush=True)
    log = out / f"build_{kernels}.log"
    with open(log, "w", encoding="utf-8") as f:
        p = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, env=env)
    if p.returncode != 0:
        tail = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-3:]
        raise SystemExit(f"speed: error: the TFLM build failed (exit {p.returncode}; {log}): " + " / ".join(tail))


def parse_tflm_run(line: str) -> tuple[str, Measured]:
    """(ELF path, its numbers) from one JSON line of tflm_speed/run.py."""
    doc = json.loads(line)
    elf = str(doc["elf"])
    insns = doc.get("instructions")
    if doc.get("exit") != 0 or insns is None:
        log = " ".join(str(doc.get("log") or "").split())[-160:]
        return elf, Measured(None, doc.get("flash"), f"exit status {doc.get('exit')}: {log or 'no ticks printed'}")
    return elf, Measured(int(insns), int(doc["flash"]))


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def run_tflm(tool_path: Path, build: Path, elves: Sequence[Path]) -> dict[Path, Measured]:
    """Each ELF's numbers (tflm_speed/run.py under QEMU), from the cache when the ELF is the one measured."""
    cache_path = build / "tflm" / "runs.json"
    try:
        cache: dict[str, Any] = json.loads(cache_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        cache = {}
    out: dict[Path, Measured] = {}
    todo = []
    for elf in elves:
        hit = cache.get(_sha256(elf))
        if hit is not None:
            out[elf] = Measured(hit["instructions"], hit["flash"], hit.get("error"))
        else:
            todo.append(elf)
    if todo:
        print(f"speed: running {len(todo)} TFLM firmware(s) under QEMU", file=sys.stderr, flush=True)
        p = subprocess.run([sys.executable, str(tool_path / "run.py"), *map(str, todo)],
                           capture_output=True, text=True, timeout=TIMEOUT * len(todo))
        by_path = {str(e): e for e in todo}
        for line in p.stdout.splitlines():
            if line.startswith("{"):
                name, m = parse_tflm_run(line)
                elf = by_path[name]
                out[elf] = m
                if m.error is None:  # a failure is measured again next time
                    cache[_sha256(elf)] = dataclasses.asdict(m)
        missing = [e for e in todo if e not in out]
        for e in missing:
            out[e] = Measured(None, None, f"run.py printed nothing for it (exit {p.returncode}: {p.stderr.strip()[-160:]})")
        cache_path.write_text(json.dumps(cache, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return out


# --- arena ------------------------------------------------------------------------------------


def arena_model(shared: Path, build: Path, net: Network, dtype: str) -> tuple[Path, str]:
    """The ONNX file arena runs for (net, dtype), and how it was made."""
    models = models_dir(shared)
    if dtype == "float":
        return models / net.onnx_float, "as shipped"
    if net.onnx_int8 is not None:
        return models / net.onnx_int8, "as shipped"
    sys.path.insert(0, str(ROOT / "tests"))
    try:
        import quantized as Q  # the tests' helper: onnxruntime quantize_static, deterministic
    finally:
        sys.path.remove(str(ROOT / "tests"))
    path = Q.quantized(models / net.onnx_float, "qdq", True, build / "quantized")
    return path, f"quantized from {net.onnx_float} by tests/quantized.py (QDQ, per-channel)"


def run_arena(model: Path, work: Path, optimize: str = DEFAULT_OPTIMIZE,
              profile: bool = False, board: str = BOARD) -> tuple[Measured, int, list[dict[str, Any]]]:
    """arena-tool run on the QEMU board at the ``optimize`` level: (its numbers, the model's MACs, the
    run report's per-op profile when ``profile``, else []); an error when the firmware fails or its
    outputs differ from onnxruntime's."""
    from arena_tool import cli

    work.mkdir(parents=True, exist_ok=True)
    report = work / "run.json"
    report.unlink(missing_ok=True)
    text = io.StringIO()
    with contextlib.redirect_stdout(text), contextlib.redirect_stderr(text):
        rc = cli.main(["run", str(model), "--board", board, "--json", str(report), "--build-dir", str(work / "fw"),
                       "--timeout", str(TIMEOUT), "--optimize", optimize, *(["--profile"] if profile else [])])
    if not report.is_file():
        return Measured(None, None, f"arena-tool run exited {rc}: {text.getvalue().strip()[-200:]}"), 0, []
    doc = json.loads(report.read_text(encoding="utf-8"))
    error = None if doc["result"] == "match" else f"{doc['result']}: {doc.get('error') or 'outputs differ'}"
    return Measured(doc["instructions"], doc["flash"], error), int(doc["macs"]), list(doc.get("profile") or [])


# --- uint8 and asymmetric-weight variants ------------------------------------------------------

VARIANT_NETWORKS = ("kws", "ds_tcn", "mobilenet_v2", "mnasnet", "mobilenet_v3", "shufflenet_v2", "squeezenet")
DEFAULT_VARIANTS = VARIANT_NETWORKS[:4]  # the others on request (MobileNetV3's hard-swish, a channel shuffle, MaxPool)
# (label, quantized()'s keywords): the int8 twin first, the ratios are to it
VARIANTS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("int8", {}), ("uint8", {"activation": "uint8"}), ("asym w", {"weight_symmetric": False}))


def op_kind(op_type: str, attrs: Mapping[str, Any], channels: int | None) -> str:
    """A profile row's kind: a conv by kernel and group (depthwise: one input channel per group),
    the dense ops as one, anything else its op type."""
    if op_type in ("QLinearConv", "Conv"):
        kh, kw = ([*(attrs.get("kernel_shape") or [1])] + [1])[:2]
        group = int(attrs.get("group") or 1)
        if group > 1 and group == channels:
            return f"depthwise {kh}x{kw}"
        return "pointwise" if (kh, kw) == (1, 1) else f"conv {kh}x{kw}"
    if op_type in ("QGemm", "Gemm", "QLinearMatMul", "MatMul"):
        return "fully connected"
    return op_type


def kinds(model: Path, profile: Sequence[Mapping[str, Any]],
          classify: Callable[[str, Mapping[str, Any], int | None, bool], str] | None = None) -> dict[str, tuple[int, int]]:
    """Per op kind of ``model``'s lowered ops (op_kind, or ``classify`` given the op's type, attributes,
    input channels and whether it touches the graph's edge): (instructions, MACs) summed over its profile."""
    from arena_tool.model import lowering

    lw = lowering.load(str(model))
    by_name = {op.name: op for op in lw.ops}
    out: dict[str, tuple[int, int]] = {}
    for row in profile:
        op = by_name.get(row["name"])
        shape = lw.types[op.inputs[0]].shape if op is not None and op.inputs[0] in lw.types else None
        channels = shape[1] if shape is not None and len(shape) > 1 and isinstance(shape[1], int) else None
        attrs = op.attrs if op is not None else {}
        if classify is None:
            kind = op_kind(row["op_type"], attrs, channels)
        else:
            kind = classify(row["op_type"], attrs, channels,
                            op is not None and (op.inputs[0] in lw.inputs or op.outputs[0] in lw.outputs))
        i, m = out.get(kind, (0, 0))
        out[kind] = (i + int(row["instructions"] or 0), m + int(row["macs"]))
    return out


def variant_source(shared: Path, build: Path, key: str) -> Path:
    """The float model of a variant network: KWS's ONNX conversion, or tests/zoo.py's network saved once."""
    if key == "kws":
        return models_dir(shared) / "keyword_spotting__kws_ref_model_float32_tflite2onnx.onnx"
    import onnx
    import zoo  # tests/ is on sys.path (variants)

    path = build / "zoo" / f"{key}.onnx"
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        onnx.save(zoo.build(key), str(path))
    return path


def variants(shared: Path, build: Path, keys: Sequence[str], optimize: str,
             board: str = BOARD) -> tuple[list[str], int]:
    """The variant tables' lines and how many runs failed."""
    sys.path.insert(0, str(ROOT / "tests"))
    try:
        import quantized as Q

        measured: list[tuple[str, str, Measured, dict[str, tuple[int, int]]]] = []
        for key in keys:
            src = variant_source(shared, build, key)
            for label, kw in VARIANTS:
                path = Q.quantized(src, "qoperator", True, build / "quantized", **kw)
                print(f"speed: arena-tool run --profile {path.name} --board {board}", file=sys.stderr, flush=True)
                m, _, prof = run_arena(path, board_build(build, board) / "arena" / f"{path.stem}_{optimize}", optimize,
                                       profile=True, board=board)
                measured.append((key, label, m, kinds(path, prof) if prof else {}))
    finally:
        sys.path.remove(str(ROOT / "tests"))
    lines = ["| network | " + " | ".join(f"{label} instr | x int8" for label, _ in VARIANTS[1:]) + " | int8 instr |",
             "|---|" + "---:|---:|" * (len(VARIANTS) - 1) + "---:|"]
    for key in keys:
        got = {label: m for k, label, m, _ in measured if k == key}
        base = got["int8"].instructions
        cells = [f"{_n(got[label].instructions)} | {ratio(got[label].instructions, base)}" for label, _ in VARIANTS[1:]]
        lines.append(f"| {key} | " + " | ".join(cells) + f" | {_n(base)} |")
    lines += ["", "| network | variant | op kind | MACs | instructions | instr/MAC |", "|---|---|---|---:|---:|---:|"]
    for key, label, m, by_kind in measured:
        for kind, (insns, macs) in sorted(by_kind.items(), key=lambda kv: -kv[1][0]):
            if macs:
                lines.append(f"| {key} | {label} | {kind} | {macs:,} | {insns:,} | {insns / macs:.2f} |")
    errors = [f"speed: error: {key} {label}: arena: {m.error}" for key, label, m, _ in measured if m.error]
    return lines + errors, len(errors)


# --- the zoo against TFLM + CMSIS-NN -----------------------------------------------------------

ZOO_NETWORKS = ("ds_tcn", "mobilenet_v2", "mnasnet", "mobilenet_v3", "shufflenet_v2", "squeezenet", "kws")
# Op kinds without MACs, named alike for both runtimes: arena's ONNX op types and TFLM's builtins
OTHER_KINDS = {
    "MaxPool": "max pool", "MAX_POOL_2D": "max pool",
    "QLinearGlobalAveragePool": "global average pool", "GlobalAveragePool": "global average pool",
    "MEAN": "global average pool", "AVERAGE_POOL_2D": "global average pool",
    "QLinearAdd": "add", "Add": "add", "ADD": "add", "QLinearLookup": "hard-swish / hard-sigmoid / mul",
    "QLinearConcat": "concat", "Concat": "concat", "CONCATENATION": "concat",
    "Reshape": "reshape / transpose / split", "Flatten": "reshape / transpose / split",
    "Transpose": "reshape / transpose / split", "Split": "reshape / transpose / split",
    "RESHAPE": "reshape / transpose / split", "TRANSPOSE": "reshape / transpose / split",
    "SPLIT": "reshape / transpose / split", "SPLIT_V": "reshape / transpose / split",
    "QLinearSoftmax": "softmax", "Softmax": "softmax", "SOFTMAX": "softmax",
    "HardSigmoid": "hard-swish / hard-sigmoid / mul", "HardSwish": "hard-swish / hard-sigmoid / mul",
    "QLinearMul": "hard-swish / hard-sigmoid / mul", "Mul": "hard-swish / hard-sigmoid / mul",
    "HARD_SWISH": "hard-swish / hard-sigmoid / mul", "MUL": "hard-swish / hard-sigmoid / mul",
    "QLinearSigmoid": "sigmoid", "LOGISTIC": "sigmoid",
    "PAD": "pad (TFLM: ONNX's pads)", "PADV2": "pad (TFLM: ONNX's pads)",
}
EDGES = "quantize / dequantize at the edges"


def family(op_type: str, attrs: Mapping[str, Any], channels: int | None, edge: bool) -> str:
    """The kind both runtimes' ops are summed under: op_kind's conv and dense kinds, OTHER_KINDS'
    names, and a Quantize/Dequantize at the graph's edge apart from one inside it (a float island)."""
    if op_type in ("QuantizeLinear", "DequantizeLinear", "QUANTIZE", "DEQUANTIZE"):
        return EDGES if edge else "hard-swish / hard-sigmoid / mul"
    kind = op_kind(op_type, attrs, channels)
    return OTHER_KINDS.get(kind, kind)


def tflite_ops(path: Path) -> list[tuple[str, int]]:
    """(family, MACs) of each operator of a .tflite, in order: convs by kernel (pointwise, conv KxK,
    depthwise KxK), MACs as arena counts them; a QUANTIZE that requantizes a concat input is the concat's."""
    from arena_tool.model import tflite_model

    fb = tflite_model.schema()
    m = fb.ModelT.InitFromObj(fb.Model.GetRootAsModel(path.read_bytes(), 0))
    names = tflite_model.op_names()
    sg = m.subgraphs[0]
    ends = {int(i) for i in sg.inputs} | {int(i) for i in sg.outputs}

    def shape(i: int) -> list[int]:
        return [int(x) for x in sg.tensors[i].shape]

    out = []
    for o in sg.operators:
        c = m.operatorCodes[o.opcodeIndex]
        op = names[max(c.builtinCode, c.deprecatedBuiltinCode)]
        outs = int(np.prod(shape(o.outputs[0])))
        if op == "CONV_2D":
            _, kh, kw, cin = shape(o.inputs[1])
            out.append(("pointwise" if (kh, kw) == (1, 1) else f"conv {kh}x{kw}", outs * kh * kw * cin))
        elif op == "DEPTHWISE_CONV_2D":
            _, kh, kw, _ = shape(o.inputs[1])
            out.append((f"depthwise {kh}x{kw}", outs * kh * kw))
        elif op == "FULLY_CONNECTED":
            out.append(("fully connected", outs * shape(o.inputs[1])[1]))
        elif op == "QUANTIZE" and sg.tensors[o.outputs[0]].name.decode().endswith("_requantized"):
            out.append(("concat", 0))
        elif op == "QUANTIZE" and sg.tensors[o.inputs[0]].name.decode().endswith("_pooled"):
            out.append(("global average pool", 0))
        elif op == "ADD" and sg.tensors[o.outputs[0]].type == fb.TensorType.FLOAT32:
            out.append(("hard-swish / hard-sigmoid / mul", 0))  # a float HardSigmoid's relu6(x + 3)
        else:
            edge = int(o.inputs[0]) in ends or int(o.outputs[0]) in ends
            out.append((family(op, {}, None, edge), 0))
    return out


def run_profile(elf: Path, machine: str, clock_hz: int, build: Path) -> list[int]:
    """Instructions of each operator a tflm_speed fw_prof.elf reports (its third Invoke, with a
    profiler; SysTick at ``clock_hz``), cached by the ELF's sha256 in ``build``/tflm/profiles.json."""
    import re

    cache_path = build / "tflm" / "profiles.json"
    try:
        cache: dict[str, Any] = json.loads(cache_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        cache = {}
    key = _sha256(elf)
    if key not in cache:
        p = subprocess.run(["qemu-system-arm", "-icount", "shift=0", "-M", machine, "-nographic", "-semihosting",
                            "-monitor", "none", "-kernel", str(elf)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           stdin=subprocess.DEVNULL, timeout=TIMEOUT)
        text = p.stdout.decode("utf-8", "replace")
        ticks = [round(int(t) * 1_000_000_000 / clock_hz)  # -icount shift=0: 1 ns an instruction
                 for _, t in re.findall(r"^op (\d+) \S+\n  ticks (\d+)", text, re.M)]
        if p.returncode != 0 or not ticks:
            return []
        cache[key] = ticks
        cache_path.write_text(json.dumps(cache, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return list(cache[key])


@dataclasses.dataclass(frozen=True)
class ZooRow:
    network: str
    variant: str
    macs: int
    arena: Measured
    tflm: Measured
    arena_kinds: Mapping[str, tuple[int, int]]
    tflm_kinds: Mapping[str, tuple[int, int]]
    notes: tuple[str, ...]
    codes: int | None  # max abs difference of the logits' codes, TFLM's host interpreter vs onnxruntime


def zoo(shared: Path, build: Path, keys: Sequence[str], board: str, args: argparse.Namespace) -> tuple[list[str], int]:
    """Each network's int8 twin and its uint8 and asymmetric-weight variants (QOperator, per-channel,
    tests/quantized.py) on arena (``arena-tool run --profile``) and on TFLM + CMSIS-NN (the same
    network converted by bench/onnx2tflite.py: the int8 network TFLM runs); the lines of the
    ratio and the per-op-kind tables, and how many of arena's runs failed."""
    import onnx

    from arena_tool.target import boards as B
    from bench import onnx2tflite

    target = B.load_board(board)
    bb = board_build(build, board)
    tool = zoo_tool(tool_for(shared, bb, board), bb)
    sys.path.insert(0, str(ROOT / "tests"))
    try:
        import quantized as Q

        cases = []
        for key in keys:
            src = variant_source(shared, build, key)
            for label, kw in VARIANTS:
                path = Q.quantized(src, "qoperator", True, build / "quantized", **kw)
                tfl = build / "zoo_tflite" / f"{path.stem}.tflite"
                model = onnx.load(str(path))
                conv = onnx2tflite.convert(model)
                if not tfl.is_file() or tfl.read_bytes() != conv.data:  # unchanged: its mtime keeps the cache
                    tfl.parent.mkdir(parents=True, exist_ok=True)
                    tfl.write_bytes(conv.data)
                diff = onnx2tflite.compare(model)
                logits = max((v for k, v in diff.items() if k != "output"), default=diff.get("output"))
                cases.append((key, label, path, tfl, tuple(conv.notes), logits))
    finally:
        sys.path.remove(str(ROOT / "tests"))
    env = {"OPS": os.environ.get("OPS", ZOO_OPS), "PROFILE": "1"}
    build_tflm(shared, tool, bb, "cmsis_nn", [c[3] for c in cases], args.jobs, env)
    elves = {c[3]: tflm_elf(bb, "cmsis_nn", c[3].name) for c in cases}
    tflm = run_tflm(tool, bb, sorted(set(elves.values())))
    rows = []
    for key, label, path, tfl, notes, codes in cases:
        print(f"speed: arena-tool run --profile {path.name} --board {board}", file=sys.stderr, flush=True)
        m, macs, prof = run_arena(path, bb / "arena" / f"{path.stem}_{args.optimize}", args.optimize,
                                  profile=True, board=board)
        ticks = run_profile(elves[tfl].with_name("fw_prof.elf"), target.qemu or "",
                            target.cpu.clock_hz or 25_000_000, bb)
        ops = tflite_ops(tfl)
        tk: dict[str, tuple[int, int]] = {}
        if len(ticks) == len(ops):
            for (kind, n), t in zip(ops, ticks):
                i, mm = tk.get(kind, (0, 0))
                tk[kind] = (i + t, mm + n)
        rows.append(ZooRow(key, label, macs, m, tflm[elves[tfl]], kinds(path, prof, family) if prof else {}, tk,
                           notes, codes))
    return zoo_tables(rows), sum(1 for r in rows if r.arena.error)


def zoo_tables(rows: Sequence[ZooRow]) -> list[str]:
    """The per-network table (instructions, ratio, the conversion's notes) and the per-op-kind one."""
    lines = ["| network | variant | MACs | arena instr | TFLM + CMSIS-NN instr | arena / CMSIS-NN | "
             "logits' codes (TFLM host vs onnxruntime) | TFLM's network |", "|---|---|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        lines.append(f"| {r.network} | {r.variant} | {r.macs:,} | {_n(r.arena.instructions)} | "
                     f"{_n(r.tflm.instructions)} | {ratio(r.arena.instructions, r.tflm.instructions)} | "
                     f"{'-' if r.codes is None else r.codes} | {'; '.join(r.notes) or 'the same'} |")
    lines += ["", "| network | variant | op kind | MACs | arena instr | arena instr/MAC | CMSIS-NN instr | "
              "CMSIS-NN instr/MAC | arena / CMSIS-NN |", "|---|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        order = sorted(set(r.arena_kinds) | set(r.tflm_kinds),
                       key=lambda k: -max(r.arena_kinds.get(k, (0, 0))[0], r.tflm_kinds.get(k, (0, 0))[0]))
        for k in order:
            ai, am = r.arena_kinds.get(k, (0, 0))
            ti, tm = r.tflm_kinds.get(k, (0, 0))
            macs = am or tm
            lines.append(f"| {r.network} | {r.variant} | {k} | {macs:,} | {ai:,} | "
                         f"{f'{ai / am:.2f}' if am else '-'} | {ti:,} | {f'{ti / tm:.2f}' if tm else '-'} | "
                         f"{ratio(ai, ti) if k in r.arena_kinds and k in r.tflm_kinds else '-'} |")
    for r in rows:
        if r.tflm.error:
            lines.append(f"speed: note: {r.network} {r.variant}: TFLM + CMSIS-NN did not run it: {r.tflm.error}")
        if r.arena.error:
            lines.append(f"speed: error: {r.network} {r.variant}: arena: {r.arena.error}")
    return lines


# --- the table --------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Row:
    network: str
    dtype: str
    macs: int
    arena: Measured
    tflm: Mapping[str, Measured]  # kernels -> numbers


def ratio(a: int | None, b: int | None) -> str:
    return "-" if a is None or b is None or b == 0 else f"{a / b:.2f}"


def per_mac(m: Measured, macs: int) -> str:
    return "-" if m.instructions is None or not macs else f"{m.instructions / macs:.2f}"


def _n(v: int | None) -> str:
    return "failed" if v is None else f"{v:,}"


def table(rows: Sequence[Row], kernels: Sequence[str] = KERNELS) -> list[str]:
    """The printed table: per runtime instructions, instructions/MAC and flash, then arena / TFLM."""
    head = ["network", "dtype", "MACs"]
    for name in ("arena", *(KERNEL_NAMES[k] for k in kernels)):
        head += [f"{name} instr", "instr/MAC", "flash B"]
    head += [*(["arena/ref instr"] if "ref" in kernels else []), "arena/CMSIS-NN instr", "arena/CMSIS-NN flash"]
    body = []
    for r in rows:
        cells = [r.network, r.dtype, f"{r.macs:,}"]
        for m in (r.arena, *(r.tflm[k] for k in kernels)):
            cells += [_n(m.instructions), per_mac(m, r.macs), "-" if m.flash is None else f"{m.flash:,}"]
        nn = r.tflm["cmsis_nn"]
        cells += [*([ratio(r.arena.instructions, r.tflm["ref"].instructions)] if "ref" in kernels else []),
                  ratio(r.arena.instructions, nn.instructions), ratio(r.arena.flash, nn.flash)]
        body.append(cells)
    widths = [max(len(x[i]) for x in [head, *body]) for i in range(len(head))]

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.ljust(w) if i < 2 else c.rjust(w)
                                 for i, (c, w) in enumerate(zip(cells, widths))) + " |"

    return [line(head), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *(line(b) for b in body)]


def ratios(by_board: Mapping[str, Sequence[Row]]) -> list[str]:
    """One line per (network, dtype): arena / TFLM + CMSIS-NN instructions on each board."""
    from arena_tool.target import boards as B

    names = list(by_board)
    cores = [B.load_board(b).cpu.core for b in names]
    lines = ["| network | dtype | " + " | ".join(f"{b} ({c})" for b, c in zip(names, cores)) + " |",
             "|---|---|" + "---:|" * len(names)]
    for i, r in enumerate(by_board[names[0]]):
        cells = [ratio(by_board[b][i].arena.instructions, by_board[b][i].tflm["cmsis_nn"].instructions) for b in names]
        lines.append(f"| {r.network} | {r.dtype} | " + " | ".join(cells) + " |")
    return lines


def board_build(build: Path, board: str) -> Path:
    """The cache folder of one board's firmwares: ``build`` itself for mps2_an500, else build/<board>."""
    return build if board == BOARD else build / board


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--networks", default=",".join(n.key for n in NETWORKS),
                    help=f"comma-separated, of {', '.join(n.key for n in NETWORKS)} (default: all)")
    ap.add_argument("--dtypes", default=",".join(DTYPES), help="int8, float or both (default)")
    ap.add_argument("--optimize", choices=sorted(LEVELS), default=DEFAULT_OPTIMIZE,
                    help=f"arena's level: size (-Os) or speed (-O2) (default {DEFAULT_OPTIMIZE}, a build's)")
    ap.add_argument("--variants", default=",".join(DEFAULT_VARIANTS),
                    help=f"networks whose uint8 and asymmetric-weight variants arena runs against their int8 twin, "
                         f"of {', '.join(VARIANT_NETWORKS)} (default: {','.join(DEFAULT_VARIANTS)}; '' for none)")
    ap.add_argument("--zoo", default="",
                    help=f"networks run on arena and on TFLM + CMSIS-NN as the same int8 network (bench/onnx2tflite.py), "
                         f"each int8, uint8 and with asymmetric weights, with instructions per MAC per op kind, of "
                         f"{', '.join(ZOO_NETWORKS)} (default: none)")
    ap.add_argument("--board", default=BOARD,
                    help=f"comma-separated QEMU boards, each with TFLM built for its core (default {BOARD}; "
                         "e.g. mps2_an500,mps2_an386,mps2_an385,mps3_an547,mps2_an505: Cortex-M7, M4, M3, M55, M33)")
    ap.add_argument("--kernels", default=",".join(KERNELS),
                    help="TFLM builds to compare with: ref, cmsis_nn or both (default); cmsis_nn is always built")
    ap.add_argument("--build", default=str(ROOT / "build" / "speed"), help="cache folder (default build/speed)")
    ap.add_argument("--jobs", type=int, default=2, help="parallel compiles of the TFLM build (default 2)")
    args = ap.parse_args(argv)
    by_key = {n.key: n for n in NETWORKS}
    keys = [k.strip().lower() for k in args.networks.split(",") if k.strip()]
    dtypes = [d.strip().lower() for d in args.dtypes.split(",") if d.strip()]
    vkeys = [k.strip().lower() for k in args.variants.split(",") if k.strip()]
    zkeys = [k.strip().lower() for k in args.zoo.split(",") if k.strip()]
    board_names = [b.strip() for b in args.board.split(",") if b.strip()]
    kernels = [k for k in KERNELS if k in {x.strip() for x in args.kernels.split(",")} | {"cmsis_nn"}]
    bad = [k for k in keys if k not in by_key] + [d for d in dtypes if d not in DTYPES]
    bad += [k for k in vkeys if k not in VARIANT_NETWORKS] + [k for k in zkeys if k not in ZOO_NETWORKS]
    bad += [k for k in args.kernels.split(",") if k.strip() and k.strip() not in KERNELS]
    if bad or not (keys or vkeys or zkeys) or not dtypes:
        ap.error(f"unknown network, dtype or kernels {', '.join(bad) or '(none given)'}: networks "
                 f"{', '.join(by_key)}; dtypes {', '.join(DTYPES)}; kernels {', '.join(KERNELS)}")
    from arena_tool.target import boards as B

    emulated = [b for b in B.list_boards() if B.load_board(b).qemu]
    if not board_names or any(b not in emulated for b in board_names):
        ap.error(f"--board {args.board}: each must be a board QEMU runs, of {', '.join(emulated)}")
    shared = shared_dir()
    why = skip_reason(shared)
    if why is not None:
        print(f"speed: skipped, nothing measured: {why}")
        return 0
    build = Path(args.build)
    cases = [(by_key[k], d) for k in keys for d in dtypes]
    failed = 0
    by_board: dict[str, list[Row]] = {}
    for board in board_names:
        if cases:
            rows, bad_rows = measure(shared, build, board, cases, kernels, args)
            by_board[board] = rows
            failed += bad_rows
        if vkeys:
            lines, n = variants(shared, build, vkeys, args.optimize, board)
            print(f"\n{board}: uint8-activation and asymmetric-weight variants (QOperator, per-channel) "
                  "against their int8 twin:" if cases else "")
            print("\n".join(lines))
            failed += n
        if zkeys:
            lines, n = zoo(shared, build, zkeys, board, args)
            print(f"\n{board}: arena against TFLM + CMSIS-NN on the same int8 network (QOperator, per-channel, "
                  "converted by bench/onnx2tflite.py); instructions of one inference (SysTick ticks at the board's clock), "
                  "per op kind from arena-tool run --profile and tflm_speed's fw_prof.elf:")
            print("\n".join(lines))
            failed += n
    if len(by_board) > 1:
        print("\narena / TFLM + CMSIS-NN instructions, TFLM built for each board's core:")
        print("\n".join(ratios(by_board)))
    return 1 if failed else 0


def measure(shared: Path, build: Path, board: str, cases: Sequence[tuple[Network, str]], kernels: Sequence[str],
            args: argparse.Namespace) -> tuple[list[Row], int]:
    """One board's table (printed): arena and TFLM built for its core, on its QEMU machine; the rows and
    how many of arena's runs failed."""
    from arena_tool.target import boards as B

    target = B.load_board(board)
    bb = board_build(build, board)
    tool = tool_for(shared, bb, board)
    models = models_dir(shared)
    tflites = sorted({models / (n.tflite_int8 if d == "int8" else n.tflite_float) for n, d in cases})
    for k in kernels:
        build_tflm(shared, tool, bb, k, tflites, args.jobs)
    elves = {(k, t.name): tflm_elf(bb, k, t.name) for k in kernels for t in tflites}
    tflm = run_tflm(tool, bb, sorted(set(elves.values())))

    rows, files = [], []
    for net, dtype in cases:
        tfl = net.tflite_int8 if dtype == "int8" else net.tflite_float
        onnx_path, how = arena_model(shared, build, net, dtype)
        print(f"speed: arena-tool run {onnx_path.name} --board {board}", file=sys.stderr, flush=True)
        arena, macs, _ = run_arena(onnx_path, bb / "arena" / f"{net.key}_{dtype}_{args.optimize}", args.optimize,
                                   board=board)
        rows.append(Row(net.title, dtype, macs, arena, {k: tflm[elves[(k, tfl)]] for k in kernels}))
        files.append(f"  {net.title} {dtype}: arena {onnx_path.name} ({how}); TFLM {tfl}")

    print(f"speed: {board}: qemu-system-arm -M {target.qemu} -icount shift=0 ({target.cpu.core}, TFLM built with "
          f"{' '.join(target.cpu.gcc_flags())}), instructions = SysTick ticks x "
          f"{1e9 / (target.cpu.clock_hz or 25_000_000):g} per "
          f"inference; arena at {args.optimize} ({LEVELS[args.optimize]}), TFLM at its defaults (-Os core, -O2 kernels; float runs "
          f"TFLM's reference kernels in both builds); flash = the ELF's sections with contents, input included")
    for line in table(rows, kernels):
        print(line)
    print("files (models/mlperf_tiny in " + str(shared) + "):")
    for line in files:
        print(line)
    for r in rows:  # TFLM's own limits (KWS float32 is a hybrid model TFLM refuses) are facts, not failures
        for k in kernels:
            if r.tflm[k].error:
                print(f"speed: note: {board}: {r.network} {r.dtype}: {KERNEL_NAMES[k]} did not run it: {r.tflm[k].error}")
    failures = [r for r in rows if r.arena.error]
    for r in failures:
        print(f"speed: error: {board}: {r.network} {r.dtype}: arena: {r.arena.error}")
    return rows, len(failures)


if __name__ == "__main__":
    sys.exit(main())
