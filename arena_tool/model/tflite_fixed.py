"""TFLite's int8 element-wise functions as 256-entry tables, computed at build time with TFLite Micro's
integer arithmetic (gemmlowp's fixed point), so that arena's runtime runs them as one table lookup and
still bit for bit TFLM's reference kernels.

LOGISTIC, TANH, HARD_SWISH and an int8 -> int8 QUANTIZE are each a function of one input byte: the
table holds what TFLM's reference kernel (reference_integer_ops::Logistic, Tanh; reference_ops::HardSwish,
Requantize) outputs for each of the 256 inputs, every step as TFLM's C++ takes it (int32 and int16
wraparound, C's truncating division, gemmlowp's rounding). Written from TFLite's and gemmlowp's
definitions; nothing is run through TFLM here (the tests compare with it).
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1


def w32(x: int) -> int:
    """x as a C int32 after two's complement wraparound."""
    return ((x + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def w16(x: int) -> int:
    return ((x + (1 << 15)) & 0xFFFF) - (1 << 15)


def cdiv(a: int, b: int) -> int:
    """C's integer division: truncated toward zero."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def round_away(v: float) -> int:
    """TfLiteRound (std::round): to the nearest integer, ties away from zero, exactly."""
    a = abs(v)
    f = math.floor(a)
    r = f + 1 if a - f >= 0.5 else f
    return int(math.copysign(r, v))


def quantize_multiplier(m: float) -> tuple[int, int]:
    """tflite::QuantizeMultiplier: (Q31 significand, shift) with m = significand * 2^(shift - 31)."""
    if m == 0.0:
        return 0, 0
    q, shift = math.frexp(m)
    fixed = round_away(q * float(1 << 31))
    if fixed == 1 << 31:
        fixed //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    return fixed, shift


# --- gemmlowp, int32 -----------------------------------------------------------------------------

def srdhm(a: int, b: int, bits: int = 32) -> int:
    """SaturatingRoundingDoublingHighMul (int32, or int16 with bits=16)."""
    lo = -(1 << (bits - 1))
    if a == b == lo:
        return -lo - 1
    ab = a * b
    nudge = (1 << (bits - 2)) if ab >= 0 else 1 - (1 << (bits - 2))
    return cdiv(ab + nudge, 1 << (bits - 1))


def rdbpot(x: int, e: int, bits: int = 32) -> int:
    """RoundingDivideByPOT: x / 2^e to nearest, ties away from zero (the mask as the int type holds it)."""
    mask = ((1 << e) - 1) & ((1 << bits) - 1)
    mask = mask - (1 << bits) if mask >= 1 << (bits - 1) else mask
    remainder = x & mask
    threshold = (mask >> 1) + (1 if x < 0 else 0)
    return (x >> e) + (1 if remainder > threshold else 0)


def sat_shl(x: int, e: int) -> int:
    """SaturatingRoundingMultiplyByPOT<e> for e > 0 (int32)."""
    threshold = (1 << (31 - e)) - 1
    if x > threshold:
        return INT32_MAX
    if x < -threshold:
        return INT32_MIN
    return w32(x << e)


def mbqm(x: int, mult: int, shift: int) -> int:
    """tflite::MultiplyByQuantizedMultiplier (int32), double rounding as TFLM builds it."""
    left, right = max(shift, 0), max(-shift, 0)
    return rdbpot(srdhm(w32(x * (1 << left)), mult), right)


def _exp_quarter(a: int) -> int:
    """exp_on_interval_between_negative_one_quarter_and_0_excl, Q0.31 in and out."""
    constant_term, one_third = 1895147668, 715827883
    x = w32(a + (1 << 28))
    x2 = srdhm(x, x)
    x3 = srdhm(x2, x)
    x4 = srdhm(x2, x2)
    x4_over_4 = rdbpot(x4, 2)
    poly = rdbpot(w32(srdhm(w32(x4_over_4 + x3), one_third) + x2), 1)
    return w32(constant_term + srdhm(constant_term, w32(x + poly)))


_BARREL = ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308), (2, 39332535), (3, 720401),
           (4, 242))


def exp_on_negative_values(a: int, integer_bits: int) -> int:
    """gemmlowp::exp_on_negative_values of a Q(integer_bits) raw value: Q0.31."""
    frac = 31 - integer_bits
    quarter = 1 << (frac - 2)
    a_mod = w32((a & (quarter - 1)) - quarter)
    result = _exp_quarter(sat_shl(a_mod, integer_bits) if integer_bits else a_mod)
    remainder = w32(a_mod - a)
    for exponent, mult in _BARREL:
        if integer_bits > exponent and remainder & (1 << (frac + exponent)):
            result = srdhm(result, mult)
    if integer_bits > 5 and a < -(1 << (36 - integer_bits)):  # below -32
        result = 0
    return INT32_MAX if a == 0 else result


def _newton(half_denominator: int) -> int:
    """The three Newton-Raphson steps of 1 / (1 + x) shared by logistic and tanh: Q2.29."""
    x = w32(1515870810 + srdhm(half_denominator, -1010580540))
    for _ in range(3):
        one_minus = w32((1 << 29) - srdhm(half_denominator, x))
        x = w32(x + sat_shl(srdhm(x, one_minus), 2))
    return x


def _half_sum_one(a: int) -> int:
    """RoundingHalfSum(a, One()) for Q0.31 (One is INT32_MAX)."""
    s = a + INT32_MAX
    return w32(cdiv(s + (1 if s >= 0 else -1), 2))


def logistic(a: int, integer_bits: int) -> int:
    """gemmlowp::logistic: Q(integer_bits) -> Q0.31."""
    if a == 0:
        return 1 << 30
    abs_a = a if a > 0 else w32(-a)
    e = exp_on_negative_values(w32(-abs_a), integer_bits)
    positive = sat_shl(_newton(_half_sum_one(e)), 1)  # Rescale<0>(ExactMulByPot<-1>(x))
    return positive if a > 0 else w32(INT32_MAX - positive)


def tanh(a: int, integer_bits: int) -> int:
    """gemmlowp::tanh: Q(integer_bits) -> Q0.31."""
    if a == 0:
        return 0
    n = a if a < 0 else w32(-a)
    e = exp_on_negative_values(n, integer_bits + 1)  # ExactMulByPot<1>: the raw value, one integer bit more
    t = sat_shl(w32(_newton(_half_sum_one(e)) - (1 << 29)), 2)
    return w32(-t) if a < 0 else t


# --- the tables ------------------------------------------------------------------------------------

def _table(f: Callable[[int], int]) -> list[int]:
    """Output byte (as int8) by input byte: index i is the input int8(i)."""
    return [max(-128, min(127, f(i - 256 if i > 127 else i))) for i in range(256)]


def _sigmoid_params(scale: float) -> tuple[int, int, int]:
    """(input multiplier, left shift, range radius) of TFLM's LOGISTIC/TANH Prepare (4 integer bits)."""
    q, shift = math.frexp(float(scale) * float(1 << 27))
    mult = round_away(q * float(1 << 31))
    radius = math.floor(1.0 * 15 * float(1 << 27) / float(1 << shift)) if shift >= 0 else INT32_MAX
    return mult, shift, radius


def logistic_table(x_scale: float, x_zp: int) -> list[int]:
    """reference_integer_ops::Logistic (int8; the output is 1/256 scale, zero point -128)."""
    mult, shift, radius = _sigmoid_params(x_scale)

    def f(x: int) -> int:
        v = x - x_zp
        if v <= -radius:
            return -128
        if v >= radius:
            return 127
        return rdbpot(logistic(mbqm(v, mult, shift), 4), 23) - 128

    return _table(f)


def tanh_table(x_scale: float, x_zp: int) -> list[int]:
    """reference_integer_ops::Tanh (int8; the output is 1/128 scale, zero point 0)."""
    mult, shift, radius = _sigmoid_params(x_scale)

    def f(x: int) -> int:
        v = x - x_zp
        if v <= -radius:
            return -128
        if v >= radius:
            return 127
        return rdbpot(tanh(mbqm(v, mult, shift), 4), 24)

    return _table(f)


def requantize_table(x_scale: float, x_zp: int, y_scale: float, y_zp: int) -> list[int]:
    """reference_ops::Requantize int8 -> int8 (QUANTIZE between two int8 quantizations)."""
    mult, shift = quantize_multiplier(float(x_scale) / float(y_scale))
    return _table(lambda x: mbqm(x - x_zp, mult, shift) + y_zp)


def _downscale16(m: int) -> int:
    """DownScaleInt32ToInt16Multiplier."""
    return 32767 if m >= INT32_MAX - (1 << 15) else (m + (1 << 15)) >> 16


def hard_swish_table(x_scale: float, x_zp: int, y_scale: float, y_zp: int) -> list[int] | None:
    """reference_ops::HardSwish on int8 with the parameters of TFLM's HardSwishPrepare (its float32
    divisions); None where TFLM's Prepare fails (an output multiplier of exponent > 0)."""
    f32 = np.float32
    hires = f32(1.0 / 128.0) * f32(x_scale)
    out_m, out_e = quantize_multiplier(float(f32(hires / f32(y_scale))))
    relu_m, relu_e = quantize_multiplier(float(f32(hires / f32(f32(3.0) / f32(32768.0)))))
    if out_e > 0:
        return None
    out_m16, relu_m16 = _downscale16(out_m), _downscale16(relu_m)

    def sat_shl16(v: int, e: int) -> int:
        return max(-32768, min(32767, v * (1 << e)))

    def f(x: int) -> int:
        v = w16(x - x_zp)
        hi = w16(v * (1 << 7))
        pre = srdhm(hi, out_m16, 16)
        r = hi
        if relu_e > 0:
            r = sat_shl16(r, relu_e - 1)
        r = srdhm(r, relu_m16, 16)
        if relu_e > 0:
            r = sat_shl16(r, 1)
        if relu_e < 0:
            r = rdbpot(r, -relu_e, 16)
        r = w16((r + (1 << 15)) >> 1)
        prod = 32767 if r == pre == -32768 else w16(cdiv(r * pre, 1 << 15))  # SaturatingDoublingHighMul
        out = rdbpot(prod, -out_e, 16)
        return w16(out + y_zp)

    return _table(f)
