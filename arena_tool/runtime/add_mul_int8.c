/* QLinearAdd, QLinearMul: the int8 fast path of same-shape operands (arena_i8_binary). No workspace. */
#include "support_int8.h"

int arena_i8_binary(const int8_t *a, const int8_t *b, int8_t *y, uint32_t n, int32_t a_zp, int32_t b_zp, float ra,
                    float rb, float rm, int is_add, int32_t y_zp, int32_t lo, int32_t hi)
{
    qpar_t q = qpar(y_zp, lo, hi);
    uint32_t i;
    /* Scaled by 2^16 > 255 * 255 and still finite: no product or sum below is inf, so none NaN. */
    if (!mult_ok(ra * 65536.0f) || !mult_ok(rb * 65536.0f) || !mult_ok(rm * 65536.0f)) {
        return 0;
    }
    if (is_add) {
        for (i = 0; i < n; ++i) {
            int32_t u = (int32_t)a[i] - a_zp, v = (int32_t)b[i] - b_zp;
            y[i] = (int8_t)requant_f(ra * (float)u + rb * (float)v, &q);
        }
    } else {
        for (i = 0; i < n; ++i) {
            int32_t u = (int32_t)a[i] - a_zp, v = (int32_t)b[i] - b_zp;
            y[i] = (int8_t)requant_f(rm * (float)(u * v), &q);
        }
    }
    return 1;
}
