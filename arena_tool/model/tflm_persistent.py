"""The persistent bytes (TFLM's tail) a kernel set allocates beyond TFLM's reference kernels.

TFLM's tail is measured on the host, whose interpreter (the tflite-micro wheel) links the
reference kernels. A firmware linking CMSIS-NN runs other Init/Prepare code, whose
AllocatePersistentBuffer calls differ: the tail it needs is the host's plus ``extra``. Each
persistent allocation takes its size rounded up to 16 (MicroArenaBufferAlignment: the tail
grows down from a 16-aligned end, each buffer aligned down to 16).

What CMSIS-NN allocates that the reference kernels do not (TFLM 90b983c2, its CMSIS-NN),
built as arena builds it (neither KERNELS_OPTIMIZED_FOR_SPEED nor _SIZE, so fully connected
and SVDF keep their kernel sums out of the tail):

- UNIDIRECTIONAL_SEQUENCE_LSTM: its OpData is the reference OpDataLSTM plus
  cmsis_nn_lstm_params (688 + 220 B on a 32-bit Cortex-M, arm-none-eabi-g++), and for int8
  or int16 activations with an int16 cell state 8 effective-bias vectors of state_dimension
  BiasType (int32 for int8, int64 for int16): the input and recurrent kernel sums per gate.
- conv, depthwise conv, fully connected, transpose conv: per-channel multipliers and shifts
  of the same sizes as the reference kernels' (no difference).

Not modelled (the host's 64-bit pointers make its structs larger than the target's, which
hides these few bytes per op): the other kernels' OpData size differences.
"""

from __future__ import annotations

from typing import Any

from arena_tool.model.tflm_scratch import CMSIS_NN, Op

__all__ = ["ALIGNMENT", "extra", "lstm_extra"]

ALIGNMENT = 16  # tflite::MicroArenaBufferAlignment(), the alignment of every persistent allocation
LSTM_OPDATA_REFERENCE = 688  # sizeof(tflite::OpDataLSTM), arm-none-eabi-g++ for Cortex-M
LSTM_PARAMS_CMSIS_NN = 220  # sizeof(cmsis_nn_lstm_params), the part CMSIS-NN's OpData adds


def _persistent(size: int) -> int:
    return (size + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT


def lstm_extra(activation: str, cell: str, state: int) -> int:
    """CMSIS-NN's LSTM tail minus the reference kernel's, bytes, for an op of ``state`` units."""
    struct = _persistent(LSTM_OPDATA_REFERENCE + LSTM_PARAMS_CMSIS_NN) - _persistent(LSTM_OPDATA_REFERENCE)
    bias = {"INT8": 4, "INT16": 8}.get(activation) if cell == "INT16" else None
    return struct + (8 * _persistent(state * bias) if bias else 0)


def _op_extra(op: Op, op_type: str, kernels: str) -> int:
    if kernels not in CMSIS_NN or op_type != "UNIDIRECTIONAL_SEQUENCE_LSTM":
        return 0
    return lstm_extra(op.type(0), op.type(19), op.shape(18)[1])


def extra(model: Any, kernels: str, types: dict[int, str], op_types: list[str]) -> tuple[int, list[str]]:
    """(the bytes ``kernels`` adds to the reference tail for the first subgraph's operators,
    the operators whose extra cannot be computed: ``op_types[i]`` #i, shapes its kernel refuses)."""
    total, unknown = 0, []
    for i, (op, op_type) in enumerate(zip(model.subgraphs[0].operators or (), op_types)):
        try:
            total += _op_extra(Op(model, op, types), op_type, kernels)
        except (IndexError, ValueError, TypeError):
            unknown.append(f"{op_type} #{i}")
    return total, unknown
