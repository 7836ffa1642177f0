/* Internal to the TFLite kernels (tfl_*_int8.c): TensorFlow Lite's integer arithmetic, static inline,
 * so that a .tflite model runs bit for bit as TFLite Micro runs it.
 *
 * TFLite requantizes an int32 accumulator with a fixed-point multiplier (a Q31 significand and a
 * power-of-two shift, computed at build time as TFLite's QuantizeMultiplier does: the tables hold
 * them) and gemmlowp's double rounding: SaturatingRoundingDoublingHighMul, then a rounding right
 * shift with ties away from zero (RoundingDivideByPOT). ONNX's QLinear ops multiply by a float and
 * round half to even, so the two differ on ties and by the significand's rounding: a lowered
 * .tflite runs these kernels, never the QLinear ones. Every function is TFLite's
 * (tensorflow/lite/kernels/internal/common.{h,cc}, gemmlowp/fixedpoint/fixedpoint.h), written in C
 * with the same integer steps; signed overflow is avoided by unsigned wraparound where TFLite's C++
 * relies on the two's complement result. */
#ifndef ARENA_SUPPORT_TFL_H
#define ARENA_SUPPORT_TFL_H

#include "arena_kernels.h"

/* gemmlowp::SaturatingRoundingDoublingHighMul (int32): (a * b * 2 + 2^31 rounding) >> 32, ties away from zero. */
static inline int32_t tfl_srdhm(int32_t a, int32_t b)
{
    int64_t ab = (int64_t)a * (int64_t)b;
    int32_t nudge = ab >= 0 ? (1 << 30) : (1 - (1 << 30));
    if (a == b && a == INT32_MIN) {
        return INT32_MAX;
    }
    return (int32_t)((ab + nudge) / ((int64_t)1 << 31));
}

/* gemmlowp::RoundingDivideByPOT: x / 2^e rounded to nearest, ties away from zero, 0 <= e <= 31. */
static inline int32_t tfl_rdbpot(int32_t x, int32_t e)
{
    int32_t mask = (int32_t)(((int64_t)1 << e) - 1);
    int32_t remainder = x & mask;
    int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
    return (x >> e) + (remainder > threshold ? 1 : 0);
}

/* x * 2^s (s >= 0) as TFLite's int32 multiply does it (two's complement wraparound). */
static inline int32_t tfl_shl(int32_t x, int32_t s)
{
    return (int32_t)((uint32_t)x << s);
}

/* tflite::MultiplyByQuantizedMultiplier(int32 x, multiplier, shift), double rounding (TFLM's build). */
static inline int32_t tfl_mbqm(int32_t x, int32_t mult, int32_t shift)
{
    int32_t left = shift > 0 ? shift : 0, right = shift > 0 ? 0 : -shift;
    return tfl_rdbpot(tfl_srdhm(tfl_shl(x, left), mult), right);
}

/* int32 addition with wraparound (bias + accumulator, as TFLite's C++ computes it). */
static inline int32_t tfl_add(int32_t a, int32_t b)
{
    return (int32_t)((uint32_t)a + (uint32_t)b);
}

/* expf and tanhf as glibc computes them (tfl_math_f32.c), for the float32 SOFTMAX, LOGISTIC and TANH. */
float arena_tfl_expf(float x);
float arena_tfl_tanhf(float x);

static inline int32_t tfl_clamp(int32_t v, int32_t lo, int32_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

#endif
