/* QuantizeLinear to int8/uint8, one scale and zero point: the fast path (arena_i8_quantize). No workspace. */
#include "support_int8.h"

#if defined(__arm__) && defined(__ARM_FP) && (__ARM_FP & 4) && defined(__ARM_FEATURE_DSP)
/* rint(x / scale) by VCVTR, plus zp saturating (QADD), saturated to the byte by SSAT (int8) or
 * USAT (uint8): the same codes as clamping to [lo - zp, hi - zp] first (qpar) when [lo, hi] is
 * the type's whole range; a NaN gives lo. */
#define QUANTIZE_LOOP(sat)                                  \
    for (i = 0; i < n; ++i) {                               \
        float v = x[i] / scale;                             \
        int32_t r;                                          \
        if (v != v) {                                       \
            out[i] = (uint8_t)lo;                           \
            continue;                                       \
        }                                                   \
        __asm__("vcvtr.s32.f32 %0, %0" : "+t"(v));          \
        memcpy(&r, &v, sizeof r);                           \
        out[i] = (uint8_t)sat(__qadd(r, zp), 8);            \
    }
#endif

#if !ARENA_HAVE_FPU
/* One element the float way (soft-float calls): x / scale, rounded and clamped. */
static __attribute__((noinline)) int32_t quantize_x(float x, float scale, const qpar_t *q)
{
    float v = x / scale;
    return v == v ? requant_f(v, q) : q->lo;
}

/* arena_i8_quantize's loop without an FPU, in integers, to the same codes for a normal, finite
 * scale > 0 (else 0: the caller runs the float loop). With x = mx 2^ex and scale = ms 2^es
 * (24-bit significands), v = mx * floor((2^55 - 1) / ms) >> (55 - t), t = ex - es + 16, is
 * |x / scale| with 16 fraction bits, at most 1.1 units low; the division's rounding to 24
 * bits moves it at most 1 unit below 512, so rint is (v + 0x7FFF) >> 16 unless v's fraction
 * is within a few units of one half (then quantize_x decides), and 512 or more is past the
 * clamp. Zero, subnormal, infinite and NaN elements go through quantize_x too. */
static int quantize_i(const float *x, uint8_t *out, uint32_t n, float scale, const qpar_t *q)
{
    uint32_t sb, es, ms, i;
    uint64_t inv;
    memcpy(&sb, &scale, sizeof sb);
    es = sb >> 23;
    if (es == 0u || es >= 255u) { /* zero, subnormal, negative, infinite or NaN */
        return 0;
    }
    ms = (sb & 0x7FFFFFu) | 0x800000u;
    inv = (((uint64_t)1 << 55) - 1u) / ms;
    for (i = 0; i < n; ++i) {
        uint32_t xb, e, v;
        int32_t t, r;
        memcpy(&xb, x + i, sizeof xb);
        e = xb >> 23 & 0xFFu;
        t = (int32_t)e - (int32_t)es + 16;
        if (e == 0u || e == 255u) {
            out[i] = (uint8_t)quantize_x(x[i], scale, q);
            continue;
        }
        if (t > 26) {
            r = 512;
        } else if (t < -8) {
            r = 0;
        } else {
            uint64_t p = (uint64_t)((xb & 0x7FFFFFu) | 0x800000u) * inv >> (uint32_t)(55 - t);
            v = (uint32_t)p;
            if (p >= 0x2000000u) {
                r = 512;
            } else if (((v - 0x7FFCu) & 0xFFFFu) <= 8u) {
                out[i] = (uint8_t)quantize_x(x[i], scale, q);
                continue;
            } else {
                r = (int32_t)((v + 0x7FFFu) >> 16);
            }
        }
        r = xb >> 31 ? -r : r;
        r = r > q->rl ? r : q->rl;
        r = r < q->rh ? r : q->rh;
        out[i] = (uint8_t)(r + q->zp);
    }
    return 1;
}
#endif

/* y = arena_q_round(x / scale, zp, lo, hi) per element, one scale and zero point; a NaN
 * gives lo there too. */
void arena_i8_quantize(const float *x, void *y, uint32_t n, float scale, int32_t zp, int32_t lo, int32_t hi)
{
    qpar_t q = qpar(zp, lo, hi);
    uint8_t *out = (uint8_t *)y;
    uint32_t i;
#if !ARENA_HAVE_FPU
    if (quantize_i(x, out, n, scale, &q)) {
        return;
    }
#endif
#ifdef QUANTIZE_LOOP
    if (lo == -128 && hi == 127) {
        QUANTIZE_LOOP(__ssat)
        return;
    }
    if (lo == 0 && hi == 255) {
        QUANTIZE_LOOP(__usat)
        return;
    }
#endif
    for (i = 0; i < n; ++i) {
        float v = x[i] / scale;
        out[i] = (uint8_t)(v == v ? requant_f(v, &q) : lo);
    }
}
