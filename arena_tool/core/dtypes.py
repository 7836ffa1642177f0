"""Element types: ONNX codes -> the lower-case names the plan file uses, and their bits.

Names follow numpy where numpy has one ('float32', 'int8', 'bool'); the narrow
ONNX types keep their ONNX spelling in lower case ('int4', 'float8e4m3fn').
A bitwidth override that matches no ONNX type is spelled 'int<bits>' (or
'uint<bits>' / 'float<bits>' after an unsigned or float type), e.g. 'int3'.
Strings have no static size and cannot live in the arena.
"""

from __future__ import annotations

import re

from arena_tool.core.errors import fail

QUANTIZED = ("int8", "uint8", "int16", "uint16")  # element types a quantized tensor runs in

# ONNX TensorProto.DataType code -> (name, bits per element). bool is one byte.
_BY_CODE: dict[int, tuple[str, int]] = {
    1: ("float32", 32),
    2: ("uint8", 8),
    3: ("int8", 8),
    4: ("uint16", 16),
    5: ("int16", 16),
    6: ("int32", 32),
    7: ("int64", 64),
    9: ("bool", 8),
    10: ("float16", 16),
    11: ("float64", 64),
    12: ("uint32", 32),
    13: ("uint64", 64),
    14: ("complex64", 64),
    15: ("complex128", 128),
    16: ("bfloat16", 16),
    17: ("float8e4m3fn", 8),
    18: ("float8e4m3fnuz", 8),
    19: ("float8e5m2", 8),
    20: ("float8e5m2fnuz", 8),
    21: ("uint4", 4),
    22: ("int4", 4),
    23: ("float4e2m1", 4),
    24: ("float8e8m0", 8),
    25: ("uint2", 2),
    26: ("int2", 2),
    27: ("float6e2m3", 6),
    28: ("float6e3m2", 6),
}

BITS: dict[str, int] = {name: bits for name, bits in _BY_CODE.values()}
NAMES: tuple[str, ...] = tuple(sorted(BITS))
MAX_BITS = 64  # widest element a bitwidth map may ask for

_CUSTOM = re.compile(r"^(u?int|float)([1-9][0-9]*)$")


def from_onnx(code: int, *, what: str = "tensor") -> str:
    """The name of an ONNX element type code; ArenaError for strings and unknown codes."""
    if code in _BY_CODE:
        return _BY_CODE[code][0]
    if code == 8:
        fail(f"{what} is a string tensor, which has no static size",
             hint="strings cannot be planned in the arena; keep string handling outside the model")
    fail(f"{what} has element type code {code}, unknown to arena",
         hint=f"arena knows {', '.join(NAMES)}")


def bits(name: str) -> int:
    """Bits per element of a type name, including 'int<bits>'-style override names."""
    if name in BITS:
        return BITS[name]
    m = _CUSTOM.match(name)
    if m:
        return int(m.group(2))
    fail(f"unknown element type {name!r}", hint=f"use one of {', '.join(NAMES)}")


def check_name(name: str, *, field: str) -> str:
    """Validate a user-given element type name (e.g. --activation-dtype)."""
    if name not in BITS:
        fail(f"unknown element type {name!r}", field=field, hint=f"use one of {', '.join(NAMES)}")
    return name


def with_bits(dtype: str, nbits: int) -> str:
    """The type a bitwidth override gives a tensor of type ``dtype``.

    Same bits: the type is kept. Otherwise a name of the same family:
    float32 at 16 bits is 'float16', uint8 at 4 bits 'uint4', int8 at 3 bits 'int3'.
    """
    if BITS.get(dtype) == nbits:
        return dtype
    family = "float" if dtype.startswith(("float", "bfloat")) else "uint" if dtype.startswith("uint") else "int"
    if family == "float" and nbits not in (16, 32, 64):
        family = "int"
    return f"{family}{nbits}"


def nbytes(elements: int, nbits: int) -> int:
    """ceil(elements * bits / 8): packed sub-byte elements share bytes."""
    return -(-elements * nbits // 8)


MAX_TENSOR_BYTES = 1 << 32  # a Cortex-M's whole address space; past it sizes stop fitting int64 sums


def check_tensor_bytes(name: str, size: int, path: str) -> None:
    """A tensor no 32-bit microcontroller can hold is refused before any planner sums sizes."""
    if size > MAX_TENSOR_BYTES:
        fail(f"tensor {name!r} takes {size:,} B, more than a 32-bit address space ({MAX_TENSOR_BYTES:,} B)",
             file=path, hint="check the model's shapes (or pin a smaller --input-shape)")
