/* QuantizeLinear to int8/uint8, one scale and zero point: the fast path (arena_i8_quantize). No workspace. */
#include "support_int8.h"

/* y = arena_q_round(x / scale, zp, lo, hi) per element, one scale and zero point; a NaN
 * gives lo there too. */
void arena_i8_quantize(const float *x, void *y, uint32_t n, float scale, int32_t zp, int32_t lo, int32_t hi)
{
    qpar_t q = qpar(zp, lo, hi);
    uint8_t *out = (uint8_t *)y;
    uint32_t i;
    for (i = 0; i < n; ++i) {
        float v = x[i] / scale;
        out[i] = (uint8_t)(v == v ? requant_f(v, &q) : lo);
    }
}
