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

/* One output channel's requantization as the fast paths take it (tfl_chan): the bias, TFLite's
 * multiplier and shift, and for a right shift e = -shift >= 1 (every conv whose s_x s_w / s_y is
 * below 0.5) the rounding of both of gemmlowp's steps in one 64-bit nudge: with mult in
 * [2^30, 2^31) (QuantizeMultiplier's), SaturatingRoundingDoublingHighMul(acc, mult) is
 * floor((acc mult + 2^30) / 2^31) for either sign (its nudge 1 - 2^30 for a negative product
 * truncates to the same integer; mult > 0 never saturates), and RoundingDivideByPOT(s, e) is
 * floor((s + 2^(e-1) - [s < 0]) / 2^e); nested floors of integer sums fold, so the output is
 * floor((acc mult + 2^30 + 2^(30+e) - 2^31 [acc < 0]) / 2^(31+e)): one SMLAL into the nudge and
 * the high word shifted right by e - 1 (acc < 0 stands for s < 0: they differ only at acc = -1,
 * mult = 2^30, where s = 0 and the nudge's extra -2^31 leaves the floor at 0). rs = e - 1, or -1
 * where this does not apply (shift >= 0, or a multiplier outside [2^30, 2^31)): tfl_mbqm then. */
typedef struct {
    int64_t nudge;
    int32_t mult, shift, rs, bias;
} tfl_chan_t;

static inline tfl_chan_t tfl_chan(int32_t mult, int32_t shift, int32_t bias)
{
    tfl_chan_t c;
    c.mult = mult;
    c.shift = shift;
    c.bias = bias;
    c.rs = shift <= -1 && shift >= -31 && mult >= (1 << 30) ? -shift - 1 : -1;
    c.nudge = ((int64_t)1 << 30) + (c.rs >= 0 ? (int64_t)1 << (30 - shift) : 0);
    return c;
}

/* tfl_rq's long way, out of line (rare: a left shift, or a multiplier QuantizeMultiplier does not give). */
static __attribute__((noinline, unused)) int32_t tfl_rq_long(int32_t a, const tfl_chan_t *ch)
{
    return tfl_mbqm(a, ch->mult, ch->shift);
}

/* tfl_mbqm(acc + bias, mult, shift) (the bias added with wraparound), the short way where ch->rs >= 0. */
static inline __attribute__((always_inline)) int32_t tfl_rq(int32_t acc, const tfl_chan_t *ch)
{
    int32_t a = (int32_t)((uint32_t)acc + (uint32_t)ch->bias);
    if (ch->rs >= 0) {
        int64_t v = (int64_t)a * ch->mult + (ch->nudge - (a < 0 ? ((int64_t)1 << 31) : 0));
        return (int32_t)(v >> 32) >> ch->rs;
    }
    return tfl_rq_long(a, ch);
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
