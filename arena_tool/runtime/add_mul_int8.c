/* QLinearAdd, QLinearMul: the int8 fast path of an operand a of the output's shape and an operand b
 * of the same shape or constant over the output's trailing dims (arena_i8_binary; a squeeze-excite's
 * per-channel gate). No workspace. */
#include "support_int8.h"

int arena_i8_binary(const int8_t *a, const int8_t *b, int8_t *y, uint32_t n, uint32_t plane, int32_t a_zp,
                    int32_t b_zp, float ra, float rb, float rm, int is_add, int32_t y_zp, int32_t lo, int32_t hi)
{
    qpar_t q = qpar(y_zp, lo, hi), qm = qpar(0, lo, hi);
    float zf = (float)y_zp;
    uint32_t i, o, k;
    /* Scaled by 2^16 > 255 * 255 and still finite: no product or sum below is inf, so none NaN. */
    if (!mult_ok(ra * 65536.0f) || !mult_ok(rb * 65536.0f) || !mult_ok(rm * 65536.0f) || plane == 0u) {
        return 0;
    }
    if (plane == 1u) {
        if (is_add) {
            for (i = 0; i < n; ++i) {
                int32_t u = (int32_t)a[i] - a_zp, v = (int32_t)b[i] - b_zp;
                y[i] = (int8_t)requant_f(ra * (float)u + rb * (float)v, &q);
            }
        } else {
            for (i = 0; i < n; ++i) {
                int32_t u = (int32_t)a[i] - a_zp, v = (int32_t)b[i] - b_zp;
                y[i] = (int8_t)requant_f(rm * (float)(u * v) + zf, &qm);
            }
        }
        return 1;
    }
    for (o = 0; o < n / plane; ++o, a += plane, y += plane) {
        int32_t v = (int32_t)b[o] - b_zp;
        if (is_add) {
            float bv = rb * (float)v;
            for (k = 0; k < plane; ++k) {
                y[k] = (int8_t)requant_f(ra * (float)((int32_t)a[k] - a_zp) + bv, &q);
            }
        } else {
            for (k = 0; k < plane; ++k) {
                y[k] = (int8_t)requant_f(rm * (float)(((int32_t)a[k] - a_zp) * v) + zf, &qm);
            }
        }
    }
    return 1;
}
