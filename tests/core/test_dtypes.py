"""dtypes: ONNX element type codes -> the plan file's names and bits, and the override names."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

from arena_tool.core import dtypes
from arena_tool.core.errors import ArenaError

NUMPY_CODES = [1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 13, 14, 15]  # the codes numpy has a dtype for


@pytest.mark.parametrize("code", NUMPY_CODES)
def test_bits_are_onnx_and_numpy_element_sizes(code: int) -> None:
    name = dtypes.from_onnx(code)
    assert dtypes.bits(name) == np.dtype(onnx.helper.tensor_dtype_to_np_dtype(code)).itemsize * 8


def test_strings_and_unknown_codes_are_refused() -> None:
    with pytest.raises(ArenaError, match="string tensor"):
        dtypes.from_onnx(onnx.TensorProto.STRING, what="input 'x'")
    with pytest.raises(ArenaError, match="code 99") as info:
        dtypes.from_onnx(99)
    assert "float32" in (info.value.hint or "")


def test_override_names_carry_their_bits() -> None:
    assert [dtypes.bits(n) for n in ("int3", "uint12", "float24", "int4")] == [3, 12, 24, 4]
    with pytest.raises(ArenaError):
        dtypes.bits("int")
    with pytest.raises(ArenaError) as info:
        dtypes.check_name("int9", field="--activation-dtype")
    assert info.value.field == "--activation-dtype"


@pytest.mark.parametrize("dtype, nbits, want", [
    ("float32", 32, "float32"), ("float32", 16, "float16"), ("float32", 8, "int8"), ("uint8", 4, "uint4"),
    ("int8", 3, "int3"), ("bfloat16", 64, "float64"), ("int32", 8, "int8")])
def test_with_bits_keeps_the_family(dtype: str, nbits: int, want: str) -> None:
    got = dtypes.with_bits(dtype, nbits)
    assert got == want and dtypes.bits(got) == nbits


def test_sub_byte_elements_are_packed() -> None:
    assert [dtypes.nbytes(n, 4) for n in (0, 1, 2, 3)] == [0, 1, 1, 2]
    assert dtypes.nbytes(8, 3) == 3 and dtypes.nbytes(5, 32) == 20


def test_a_tensor_past_a_32_bit_address_space_is_refused() -> None:
    dtypes.check_tensor_bytes("t", dtypes.MAX_TENSOR_BYTES, "m.onnx")
    with pytest.raises(ArenaError, match="32-bit address space") as info:
        dtypes.check_tensor_bytes("t", dtypes.MAX_TENSOR_BYTES + 1, "m.onnx")
    assert info.value.file == "m.onnx"
