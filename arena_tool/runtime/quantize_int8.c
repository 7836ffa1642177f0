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

/* y = arena_q_round(x / scale, zp, lo, hi) per element, one scale and zero point; a NaN
 * gives lo there too. */
void arena_i8_quantize(const float *x, void *y, uint32_t n, float scale, int32_t zp, int32_t lo, int32_t hi)
{
    qpar_t q = qpar(zp, lo, hi);
    uint8_t *out = (uint8_t *)y;
    uint32_t i;
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
