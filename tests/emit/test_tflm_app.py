"""tflm_app: the TFLM firmware's model table (each model's resolver, arena slice and outputs)."""

from __future__ import annotations

from arena_tool.emit import tflm_app


def test_model_table_registers_exactly_the_models_ops() -> None:
    e = tflm_app.TflmEntry("kws", ("AddConv2D", "AddSoftmax"), 1504, ("out 0", "Identity"), (b"\x01\x02",))
    text = tflm_app.sources("mps2_an500", [e])
    assert "MicroMutableOpResolver<2> kws_resolver;" in text
    assert text.count("kws_resolver.AddConv2D()") == 1 and text.count(".Add") == 2
    assert "tensor_arena + TENSOR_ARENA_BASE_KWS, 1504u" in text and '"out_0", "Identity"' in text
    assert "kws_input0[2] = {" in text and text == tflm_app.sources("mps2_an500", [e])  # same bytes
