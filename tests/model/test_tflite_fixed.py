"""model/tflite_fixed.py: TFLite's int8 LOGISTIC, TANH, HARD_SWISH and int8 -> int8 QUANTIZE as 256-entry
tables, each entry against TFLite Micro's host interpreter on all 256 input bytes (random quantization
parameters per seed): the tables are what arena's runtime runs, so every entry is checked, not a sample."""

from __future__ import annotations

import numpy as np
import pytest

from arena_tool.model import tflite_fixed
from arena_tool.run import tflm_host
from tflite_ops import Model


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_every_table_entry_equals_tflm(seed: int) -> None:
    r = np.random.default_rng(seed)
    sx, zx = float(r.uniform(0.005, 0.3)), int(r.integers(-128, 128))
    sy, zy = float(sx * r.uniform(0.3, 3.0)), int(r.integers(-100, 100))
    sh, zh = float(sx * r.uniform(0.5, 2.0)), int(r.integers(-100, 100))
    m = Model()
    x = m.tensor("x", "INT8", [256], scale=[sx], zp=[zx])
    outs = {"logistic": (m.tensor("lg", "INT8", [256], scale=[1 / 256], zp=[-128]),
                         tflite_fixed.logistic_table(sx, zx)),
            "tanh": (m.tensor("th", "INT8", [256], scale=[1 / 128], zp=[0]), tflite_fixed.tanh_table(sx, zx)),
            "hard_swish": (m.tensor("hs", "INT8", [256], scale=[sh], zp=[zh]),
                           tflite_fixed.hard_swish_table(sx, zx, sh, zh)),
            "requantize": (m.tensor("rq", "INT8", [256], scale=[sy], zp=[zy]),
                           tflite_fixed.requantize_table(sx, zx, sy, zy))}
    for op, (name, (y, _)) in zip(("LOGISTIC", "TANH", "HARD_SWISH", "QUANTIZE"), outs.items()):
        m.op(op, [x], [y])
    data = m.pack([x], [y for y, _ in outs.values()])
    xs = np.arange(256).astype(np.uint8).view(np.int8)  # input byte i at position i: the table's order
    got = tflm_host.run_tflm(data, "tables.tflite", [[xs]]).outputs[0]
    for k, (name, (_, table)) in enumerate(outs.items()):
        assert table is not None
        assert np.asarray(got[k]).astype(int).tolist() == table, name


def test_gemmlowp_steps_round_as_cpp() -> None:
    """C's truncating division and gemmlowp's saturations, the corners the tables rely on."""
    f = tflite_fixed
    assert f.cdiv(-7, 2) == -3 and f.cdiv(7, -2) == -3 and f.cdiv(7, 2) == 3
    assert f.srdhm(f.INT32_MIN, f.INT32_MIN) == f.INT32_MAX and f.srdhm(1 << 30, 1 << 30) == 1 << 29
    assert f.rdbpot(-3, 1) == -2 and f.rdbpot(3, 1) == 2 and f.rdbpot(-5, 2) == -1
    assert f.sat_shl(1 << 29, 2) == f.INT32_MAX and f.sat_shl(-(1 << 29) - 1, 2) == f.INT32_MIN
    assert f.exp_on_negative_values(0, 5) == f.INT32_MAX and f.logistic(0, 4) == 1 << 30 and f.tanh(0, 4) == 0
