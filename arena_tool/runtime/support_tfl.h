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
 * multiplier and shift, and for a right shift e = -shift >= 2 (every channel of MLPerf Tiny's
 * models: s_x s_w / s_y below 0.25) the rounding of both of gemmlowp's steps in one 64-bit nudge.
 * With mult in [2^30, 2^31) (QuantizeMultiplier's), SaturatingRoundingDoublingHighMul(a, mult) is
 * floor((a mult + 2^30) / 2^31) for either sign (its nudge 1 - 2^30 for a negative product
 * truncates to the same integer; mult > 0 never saturates) and RoundingDivideByPOT(s, e) is
 * floor((s + 2^(e-1) - [s < 0]) / 2^e); nested floors of integer sums fold, so the output is
 * floor((a mult + 2^30 + 2^(30+e) - 2^31 [a < 0]) / 2^(31+e)) (a < 0 stands for s < 0: they
 * differ only at a = -1, mult = 2^30, where s = 0 and the extra -2^31 leaves the floor at 0).
 * The nudge's high word is hi = 2^(e-2) less [a < 0], its low word 2^30 plus 2^31 [a < 0]: one
 * SMLAL into them and the high word shifted right by rs = e - 1. A multiplier of 0 (a dead
 * channel) gives 0 whatever the shift (-31 or more), as rs = 1, hi = 1 does. rs = -1 where none of this
 * applies (a shift of -1 or more, a multiplier QuantizeMultiplier does not give): tfl_mbqm. */
typedef struct {
    int32_t bias, mult, hi, rs, shift;
} tfl_chan_t;

static inline tfl_chan_t tfl_chan(int32_t mult, int32_t shift, int32_t bias)
{
    tfl_chan_t c;
    c.bias = bias;
    c.mult = mult;
    c.shift = shift;
    c.rs = shift < -31 ? -1 : mult == 0 ? 1 : mult >= (1 << 30) && shift <= -2 ? -shift - 1 : -1;
    c.hi = c.rs >= 1 ? 1 << (c.rs - 1) : 0;
    return c;
}

/* tfl_rq's long way, out of line (a shift of -1 or more, or a multiplier QuantizeMultiplier does not give). */
static __attribute__((noinline, unused)) int32_t tfl_rq_long(int32_t a, const tfl_chan_t *ch)
{
    return tfl_mbqm(a, ch->mult, ch->shift);
}

/* tfl_mbqm(acc + bias, mult, shift) (the bias added with wraparound): the short way, or where
 * general and ch->rs < 0 the long one (a kernel whose every channel has rs >= 1 passes general 0). */
static inline __attribute__((always_inline)) int32_t tfl_rq(int32_t acc, const tfl_chan_t *ch, int general)
{
    int32_t a = (int32_t)((uint32_t)acc + (uint32_t)ch->bias);
    uint32_t lo = 0x40000000u | ((uint32_t)a & 0x80000000u);
    int32_t hi = ch->hi + (a >> 31);
    if (general && ch->rs < 0) {
        return tfl_rq_long(a, ch);
    }
    hi = (int32_t)((((int64_t)hi << 32 | lo) + (int64_t)a * ch->mult) >> 32);
    return hi >> ch->rs;
}

/* Whether every one of the M channels of rq ((multiplier, shift) pairs) takes tfl_rq's short way. */
static inline int tfl_short(const int32_t *rq, int32_t M)
{
    int32_t m;
    for (m = 0; m < M; ++m) {
        if (tfl_chan(rq[2 * m], rq[2 * m + 1], 0).rs < 0) {
            return 0;
        }
    }
    return 1;
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
