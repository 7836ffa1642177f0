"""bench/tflm_head.py's verdict, without building: one tail per model means every head TFLM used is
arena's prediction; the target run itself is the bench (QEMU, minutes)."""

from __future__ import annotations

from bench import tflm_head


def test_one_tail_per_model_is_the_verdict():
    ok = tflm_head.Case("VWW", {"own": 73_728, "planned": 55_296, "probe": 36_864},
                        {"own": 100_708, "planned": 82_276, "probe": 63_844})  # measured on mps2-an500
    assert ok.problems() == [] and set(ok.tails().values()) == {26_980}
    short = tflm_head.Case("KWS", {"own": 16_000, "planned": 16_000, "probe": 8_256},
                           {"own": 22_820, "planned": 22_820, "probe": 15_236})  # a scratch 160 B larger than planned
    assert short.problems() == ["KWS: TFLM's head is not arena's prediction: used - predicted = own 6,820, "
                                "planned 6,820, probe 6,980 B (one tail expected)"]
    failed = tflm_head.Case("AD01", {"own": 768, "planned": 768, "probe": 640}, {"own": 2_580, "planned": None,
                                                                               "probe": 2_452})
    assert failed.problems() == ["AD01: planned did not run"]
