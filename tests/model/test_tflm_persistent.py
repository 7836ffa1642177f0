"""CMSIS-NN's persistent allocations beyond the reference kernels' are TFLM's tail on the target.

The host measures the tail with the reference kernels; on dtln (two int8 LSTMs of 128 units)
CMSIS-NN's LSTM adds 8 int32 kernel-sum vectors and a larger OpData each, without which the
firmware's arena was 6,880 B for the 14,356 B TFLM used (a HardFault under QEMU). The struct
sizes the rule takes are checked with arm-none-eabi-g++ in test_tflm_firmware.py.
"""

from __future__ import annotations

import pytest

from arena_tool.core.problem import ModelOptions
from arena_tool.model import tflite_model, tflm_persistent
from arena_tool.plan import planfile, planners, planning
from arena_tool.run import tflm
from conftest import absent
from shared_paths import TFLM_EXAMPLES

DTLN = TFLM_EXAMPLES / "dtln_noise_suppression.tflite"


def test_lstm_rule_is_the_kernels_allocations():
    """8 bias vectors of state x BiasType (int32 for int8 activations, int64 for int16), each
    rounded up to 16, plus OpData's cmsis_nn_lstm_params (908 -> 912 B against 688 B)."""
    assert tflm_persistent.lstm_extra("INT8", "INT16", 128) == 224 + 8 * 128 * 4
    assert tflm_persistent.lstm_extra("INT16", "INT16", 128) == 224 + 8 * 128 * 8
    assert tflm_persistent.lstm_extra("INT8", "INT16", 3) == 224 + 8 * 16  # 12 B, aligned to 16
    assert tflm_persistent.lstm_extra("FLOAT32", "FLOAT32", 128) == 224  # the reference path: the struct only


@pytest.mark.skipif(absent(DTLN), reason="dtln_noise_suppression.tflite is absent")
def test_dtln_tail_with_cmsis_nn_is_the_reference_tail_plus_the_lstm_buffers(tmp_path):
    data = tflite_model.read_bytes(str(DTLN))
    model = tflite_model.parse(data, str(DTLN))
    ops = [tflite_model.builtin_name(model, op) for op in model.subgraphs[0].operators]
    sg = model.subgraphs[0]
    lstms = [op for op, name in zip(sg.operators, ops) if name == "UNIDIRECTIONAL_SEQUENCE_LSTM"]
    assert [int(sg.tensors[op.inputs[18]].shape[1]) for op in lstms] == [128, 128]  # state_dimension
    want = 2 * (8 * tflm_persistent._persistent(128 * 4) + 912 - 688)
    types = tflite_model.type_names()
    assert tflm_persistent.extra(model, "reference", types, ops) == (0, [])
    for kernels in ("cmsis_nn_dsp", "cmsis_nn_nodsp", "cmsis_nn_mve"):
        assert tflm_persistent.extra(model, kernels, types, ops) == (want, [])
    tails = {}
    for kernels in ("reference", "cmsis_nn_dsp"):
        opts = ModelOptions(kernels=kernels)
        result = planning.plan_model(str(DTLN), opts, "greedy_size", planners.Params())
        out = tmp_path / f"{kernels}.plan.json"
        planfile.write(str(out), result.plan_file)
        _, alloc = tflm.tflm_measure(str(DTLN), planfile.load(str(out)), str(out))
        tails[kernels] = alloc["tail"]
        assert "unknown_tail" not in alloc
    assert tails["cmsis_nn_dsp"] == tails["reference"] + want == tails["reference"] + 8_640

