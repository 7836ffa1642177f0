"""The scratch buffers TFLM's kernels request (RequestScratchBufferInArena), per op and kernel set.

A kernel's Prepare may ask TFLM for scratch bytes in the arena's head, live while that one
operator runs (TFLM: created and last used at the op's allocation scope). TFLM plans them
with the tensors, so a plan that leaves them out is short by their bytes; arena makes each
request a buffer of the planning problem (``tflite_model``: kind ``scratch``, live at the
op's scope). The sizes depend on the kernels the firmware links:

- ``reference``: TFLM's reference kernels (the host interpreter of the tflite-micro wheel).
- ``cmsis_nn_dsp``, ``cmsis_nn_nodsp``, ``cmsis_nn_mve``: TFLM's CMSIS-NN kernels, built with
  gcc for a core with the DSP extension (Cortex-M4/M7/M33), without it (M0/M0+/M3/M23), or
  with Helium (M55/M85); CMSIS-NN's buffer sizes depend on which (ARM_MATH_DSP,
  ARM_MATH_MVEI), and on neither KERNELS_OPTIMIZED_FOR_SPEED nor _SIZE being defined, as
  arena's TFLM firmware builds them (TFLM's flags of its SOURCE.md): so Helium's fully
  connected kernel sums are a scratch buffer, not persistent.

Each rule restates, from the op's shapes, types and options, what that kernel's Prepare
requests, in its order (TFLM 90b983c2 with its CMSIS-NN). ``requests`` returns None for an
op whose requests arena cannot compute (a custom op it has no rule for; Helium's int8 SVDF,
which its kernel refuses without KERNELS_OPTIMIZED_FOR_*; an op of shapes its kernel refuses):
the plan says so and is not claimed optimal, and the TFLM check measures what TFLM placed.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

from arena_tool.core.problem import KERNELS

__all__ = ["KERNELS", "requests", "tflm_placement", "kernels_for", "describe"]
CMSIS_NN = ("cmsis_nn_dsp", "cmsis_nn_nodsp", "cmsis_nn_mve")

_SIZES = {"FLOAT32": 4, "FLOAT16": 2, "BFLOAT16": 2, "FLOAT64": 8, "INT8": 1, "UINT8": 1, "INT16": 2,
          "UINT16": 2, "INT32": 4, "UINT32": 4, "INT64": 8, "UINT64": 8, "BOOL": 1, "INT4": 1, "INT2": 1}


class Op:
    """One operator of the parsed model, as a rule reads it."""

    def __init__(self, model: Any, op: Any, types: dict[int, str]) -> None:
        self.tensors = model.subgraphs[0].tensors
        self.ins = [int(x) for x in (op.inputs if op.inputs is not None else [])]
        self.outs = [int(x) for x in (op.outputs if op.outputs is not None else [])]
        self.options = op.builtinOptions
        self.types = types

    def present(self, k: int) -> bool:
        return k < len(self.ins) and self.ins[k] >= 0

    def tensor(self, k: int, output: bool = False) -> Any:
        """Input (or output) k; an absent one (index -1) is an IndexError, as a missing dimension is."""
        index = (self.outs if output else self.ins)[k]
        if index < 0:
            raise IndexError(f"{'output' if output else 'input'} {k} is absent")
        return self.tensors[index]

    def shape(self, k: int, output: bool = False) -> tuple[int, ...]:
        t = self.tensor(k, output)
        return tuple(int(d) for d in (t.shape if t.shape is not None else ()))

    def type(self, k: int, output: bool = False) -> str:
        return self.types.get(self.tensor(k, output).type, "?")

    def scales(self, k: int) -> int:
        q = self.tensor(k).quantization
        return len(q.scale) if q is not None and q.scale is not None else 0

    def opt(self, name: str, default: int) -> int:
        return int(getattr(self.options, name, default)) if self.options is not None else default


def _same_padding(padding: int, stride: int, dilation: int, size: int, kernel: int) -> int:
    """TFLM's padding (ComputePaddingHeightWidth): SAME pads half of what the output needs."""
    if padding != 0:  # Padding.VALID
        return 0
    out = (size + stride - 1) // stride
    total = (out - 1) * stride + (kernel - 1) * dilation + 1 - size
    return max(total, 0) // 2


def _reduce(op: Op, kernels: str, mean_or_sum: bool) -> list[int]:
    """reduce_common: input rank and axis count ints; MEAN/SUM of int8/int16 an int32 per output too."""
    axis = math.prod(op.shape(1))
    out = []
    if mean_or_sum and op.type(0) in ("INT8", "INT16"):
        out.append(4 * math.prod(op.shape(0, output=True)))
    return out + [4 * len(op.shape(0)), 4 * axis]


def _lstm(op: Op, kernels: str) -> list[int]:
    """unidirectional_sequence_lstm: batch x state x cell-state element, 4 of them (CMSIS-NN's
    integer paths 3)."""
    batch = op.shape(0)[1 if op.opt("timeMajor", 0) else 0]
    state = op.shape(18)[1]
    cell = op.type(19)
    size = batch * state * _SIZES.get(cell, 4)
    n = 3 if kernels in CMSIS_NN and op.type(0) in ("INT8", "INT16") and cell == "INT16" else 4
    return [size] * n


def _svdf(op: Op, kernels: str) -> list[int] | None:
    """svdf: int32 (float) batch x filters, and for int8 int32 batch x units (CMSIS-NN's too,
    whose DSP and no-DSP kernels need no more)."""
    batch = op.shape(0)[0]
    filters = op.shape(1)[0]
    units = filters // max(op.opt("rank", 1), 1)
    if op.type(0) == "INT8" and kernels == "cmsis_nn_mve":
        return None  # Helium's kernel sums need KERNELS_OPTIMIZED_FOR_SPEED or _SIZE, which the build leaves out
    if op.type(0) == "INT8":
        return [4 * batch * filters, 4 * batch * units]
    return [4 * batch * filters]


def _int4_filter(op: Op) -> list[int]:
    """conv / depthwise / fully_connected (reference): an int4 filter is unpacked into a scratch copy."""
    return [math.prod(op.shape(1))] if op.type(1) == "INT4" else []


def _conv(op: Op, kernels: str) -> list[int] | None:
    if kernels not in CMSIS_NN:
        return _int4_filter(op)
    if op.type(0) == "FLOAT32":
        return []
    n, h, w, c = op.shape(0)
    _, fh, fw, fc = op.shape(1)
    if op.type(0) == "INT16":  # CMSIS-NN's s16 path: only with int64 bias or none (else the reference kernel)
        if op.present(2) and op.type(2) != "INT64":
            return []
        cols = c * fw * fh
        return _nonzero(4 * ((cols + 7) // 8) * 8 * 2 if kernels == "cmsis_nn_mve" else 2 * cols * 2)
    if op.type(0) != "INT8":
        return None
    # int8 input: CMSIS-NN's s8 wrapper sizes the buffer for int8 and int4 filters alike
    sh, sw = op.opt("strideH", 1), op.opt("strideW", 1)
    dh, dw = op.opt("dilationHFactor", 1), op.opt("dilationWFactor", 1)
    pad = op.opt("padding", 0)
    ph, pw = _same_padding(pad, sh, dh, h, fh), _same_padding(pad, sw, dw, w, fw)
    ow = op.shape(0, output=True)[2]
    one_by_one = pw == 0 and ph == 0 and fw == 1 and fh == 1 and dw == 1 and dh == 1 and c == fc
    one_by_n = h == 1 and dw == 1 and fh == 1 and (sw * c) % 4 == 0 and c == fc
    if one_by_one:
        return []  # the fast 1x1 path's buffer is 0 under gcc; the strided one needs none
    if kernels == "cmsis_nn_mve":
        if one_by_n:
            return _nonzero(_conv_1xn_mve(c, w, pw, fw, ow, sw))
        return _nonzero(_conv_mve(c, fh, fw))
    cols = fw * fh * c
    return _nonzero(2 * 2 * (cols + (-cols) % 4))


def _conv_mve(c: int, fh: int, fw: int) -> int:
    return 4 * ((c * fw * fh + 15) // 16) * 16


def _conv_1xn_mve(c: int, w: int, pw: int, fw: int, ow: int, sw: int) -> int:
    total_pad = (ow - 1) * sw + fw - w
    asym = total_pad % 2
    right = max(1, (pw + asym + sw - 1) // sw) if pw + asym else 0
    left = max(1, (pw + sw - 1) // sw) if pw else 0
    if right + max(ow - (right + left), 0) + left != ow:
        return _conv_mve(c, 1, fw)
    left_elems = fw * c
    return max(left_elems + pw * c, left_elems - c + (right * c if asym else pw * c))


def _nonzero(size: int) -> list[int]:
    """CMSIS-NN's wrappers request a buffer only when its size is > 0."""
    return [size] if size > 0 else []


def _depthwise(op: Op, kernels: str) -> list[int] | None:
    if kernels not in CMSIS_NN:
        return _int4_filter(op)
    if op.type(0) != "INT8":
        return []  # float and int16 take the reference path, which requests nothing
    n, h, w, c = op.shape(0)
    _, fh, fw, _ = op.shape(1)
    oc = op.shape(0, output=True)[3]
    sh, sw = op.opt("strideH", 1), op.opt("strideW", 1)
    dh, dw = op.opt("dilationHFactor", 1), op.opt("dilationWFactor", 1)
    if op.type(1) == "INT4":  # the s4 wrapper: its optimized kernel's buffer, no 3x3 exception, DSP or not
        if c == oc and n == 1 and dw == 1 and dh == 1:
            return _nonzero(4 * 124 * fw * fh if kernels == "cmsis_nn_mve" else c * fw * fh * 2)
        return []
    if op.type(1) != "INT8":
        return None
    pad = op.opt("padding", 0)
    ph, pw = _same_padding(pad, sh, dh, h, fh), _same_padding(pad, sw, dw, w, fw)
    if kernels == "cmsis_nn_mve":
        if c == 1 and oc > 1:  # converted to a convolution (gcc's threshold is 1)
            ow = op.shape(0, output=True)[2]
            one_by_one = pw == 0 and ph == 0 and fw == 1 and fh == 1 and dw == 1 and dh == 1 and c == oc
            one_by_n = h == 1 and dw == 1 and fh == 1 and (sw * c) % 4 == 0 and c == oc
            conv = 0 if one_by_one else _conv_1xn_mve(c, w, pw, fw, ow, sw) if one_by_n else _conv_mve(c, fh, fw)
            return _nonzero(conv + oc * fh * fw)
        if c == oc and n == 1 and dw == 1 and dh == 1:
            return _nonzero(4 * 124 * fw * fh)
        return []
    if c == oc and n == 1 and dw == 1 and dh == 1:
        if fw == 3 and fh == 3 and ph <= 1 and pw <= 1:
            return []
        return _nonzero(c * fw * fh * 2) if kernels == "cmsis_nn_dsp" else []
    return []


def _fully_connected(op: Op, kernels: str) -> list[int] | None:
    if kernels not in CMSIS_NN:
        return _int4_filter(op)
    if op.type(0) != "INT8" or op.type(1) == "INT4":  # int16: CMSIS-NN's s16 kernel needs no buffer
        return []
    out_shape = op.shape(0, output=True)
    accum = op.shape(1)[-1]
    if len(out_shape) > 2 and accum % 4 == 0:  # run as a 1x1 convolution (whose buffer is 0 under gcc)
        return [] if op.scales(1) > 1 else [out_shape[-1] * 4 * 2]
    return [4 * out_shape[-1]] if kernels == "cmsis_nn_mve" else []  # Helium's kernel sums; DSP/no DSP: none


def _average_pool(op: Op, kernels: str) -> list[int]:
    if kernels == "cmsis_nn_dsp" and op.type(0) in ("INT8", "INT16"):
        return _nonzero(4 * op.shape(0, output=True)[3])
    return []


def _transpose_conv(op: Op, kernels: str) -> list[int] | None:
    """transpose_conv (inputs: output shape, filter OHWI, input, bias): int8 an int32 per output
    element (CMSIS-NN: its column and reversed-filter buffers), int16 an int64 per output element,
    then an int64 copy of an int16 bias."""
    x = op.type(2)
    out = math.prod(op.shape(0, output=True))
    bias_16 = [8 * math.prod(op.shape(3))] if op.present(3) and op.type(3) == "INT16" else []
    if x == "INT16":
        return [8 * out] + bias_16
    if x != "INT8":
        return []
    if kernels not in CMSIS_NN:
        return [4 * out]
    oc, fh, fw, c = op.shape(1)
    _, h, w, _ = op.shape(2)
    sw, sh = op.opt("strideW", 1), op.opt("strideH", 1)
    if sw <= 2 and sh <= 2 and c > 16:  # CMSIS-NN runs it as a convolution of the reversed filter
        cols = fw * fh * c
        conv = 4 * ((cols + 15) // 16) * 16 if kernels == "cmsis_nn_mve" else 2 * 2 * (cols + (-cols) % 4)
        return [conv, c * fw * fh * oc]
    return [((w - 1) * sw + max(fw, sh)) * op.shape(0, output=True)[3] * max(fh, sh) * 4]


def _batch_matmul(op: Op, kernels: str) -> list[int]:
    """CMSIS-NN's int8 batch matmul: Helium's fully connected buffer, an int32 per output column
    (the transposed operands are persistent, TFLM's tail)."""
    if kernels != "cmsis_nn_mve" or op.type(0) != "INT8" or op.type(1) != "INT8":
        return []
    out = op.shape(0, output=True)
    return [4 * (out[-1] if 2 <= len(out) <= 4 else 1)]


def _add_n(op: Op, kernels: str) -> list[int]:
    """add_n: a pointer per input, 4 bytes on a Cortex-M (the 64-bit host interpreter asks twice
    that, which the 16-byte rounding hides up to 2 inputs)."""
    return [4 * len(op.ins)] if op.type(0, output=True) in ("FLOAT32", "INT8") else []


def _mirror_pad(op: Op, kernels: str) -> list[int]:
    return [4 * len(op.shape(0))] * 2


Rule = Callable[[Op, str], "list[int] | None"]
_RULES: dict[str, Rule] = {
    "UNIDIRECTIONAL_SEQUENCE_LSTM": _lstm,
    "SVDF": _svdf,
    "CONV_2D": _conv,
    "DEPTHWISE_CONV_2D": _depthwise,
    "FULLY_CONNECTED": _fully_connected,
    "AVERAGE_POOL_2D": _average_pool,
    "TRANSPOSE_CONV": _transpose_conv,
    "BATCH_MATMUL": _batch_matmul,
    "ADD_N": _add_n,
    "MIRROR_PAD": _mirror_pad,
    "MEAN": lambda op, k: _reduce(op, k, True),
    "SUM": lambda op, k: _reduce(op, k, True),
    "REDUCE_MAX": lambda op, k: _reduce(op, k, False),
    "REDUCE_MIN": lambda op, k: _reduce(op, k, False),
    "REDUCE_ALL": lambda op, k: _reduce(op, k, False),
}


def requests(model: Any, op: Any, op_type: str, kernels: str, types: dict[int, str]) -> list[int] | None:
    """The bytes of each scratch buffer ``op`` requests under ``kernels``, in request order
    (zero-byte requests left out: TFLM places them at offset 0, where they take nothing);
    None when arena cannot know them before running the op."""
    if op_type.startswith("CUSTOM:"):
        return None  # its kernel is the model author's: only running it (verify) shows what it asks
    rule = _RULES.get(op_type)
    if rule is None:
        return []  # every other builtin kernel of TFLM (reference and CMSIS-NN) requests none
    try:
        sizes = rule(Op(model, op, types), kernels)
    except (IndexError, ValueError, TypeError, ZeroDivisionError):
        return None  # an operator of another shape than its kernel takes (TFLM would refuse it): not sized
    return None if sizes is None else [s for s in sizes if s > 0]


def describe(kernels: str) -> str:
    return {"reference": "TFLM's reference kernels", "cmsis_nn_dsp": "CMSIS-NN (DSP extension)",
            "cmsis_nn_nodsp": "CMSIS-NN (no DSP extension)", "cmsis_nn_mve": "CMSIS-NN (Helium)",
            "arena": "arena's own runtime"}[kernels]


def kernels_for(kernels: str, cpu: str) -> str:
    """The kernel set of a firmware: 'reference', or 'cmsis_nn' refined by the board's core."""
    if kernels != "cmsis_nn":
        return kernels
    core = cpu.lower()
    if core in ("cortex-m55", "cortex-m85"):
        return "cmsis_nn_mve"
    if core in ("cortex-m0", "cortex-m0plus", "cortex-m0+", "cortex-m1", "cortex-m3", "cortex-m23"):
        return "cmsis_nn_nodsp"
    return "cmsis_nn_dsp"


def tflm_placement(sizes: Sequence[int], starts: Sequence[int], ends: Sequence[int],
                   fixed: Sequence[int | None]) -> list[int]:
    """Where TFLM's GreedyMemoryPlanner puts each buffer: a fixed (offline) offset as it is; the
    others largest first, each at the lowest offset where it fits between the buffers already
    placed that are live at the same time (first fit).

    The buffers come in TfliteProblem.tensors order, the descending order of TFLM's own buffer
    index (tensors by flatbuffer index, then scratch buffers in request order): the order TFLM
    fills its array of online buffers from the tail in, so its stable sort by size keeps it
    for equal sizes.
    """
    n = len(sizes)
    offsets: list[int | None] = list(fixed)
    placed = [i for i in range(n) if fixed[i] is not None]
    online = sorted((i for i in range(n) if fixed[i] is None), key=lambda i: -sizes[i])  # stable
    rank = {i: r for r, i in enumerate(placed)}
    for i in online:
        live = sorted((j for j in placed if not (ends[j] < starts[i] or ends[i] < starts[j])),
                      key=lambda j: (offsets[j], rank[j]))
        candidate = 0
        for j in live:
            o = offsets[j]
            assert o is not None
            if o - candidate >= sizes[i]:
                break
            candidate = max(candidate, o + sizes[j])
        offsets[i] = candidate
        rank[i] = len(placed)
        placed.append(i)
    return [o if o is not None else 0 for o in offsets]
