/* TFLite's QUANTIZE (float32 -> int8) and DEQUANTIZE (int8 -> float32), per tensor, as TFLite Micro's
 * reference kernels compute them (reference_ops::AffineQuantize, Dequantize):
 *   QUANTIZE:   y = clamp(round(x / scale) + zero_point), the division in float32, round half away
 *               from zero (TfLiteRound);
 *   DEQUANTIZE: y = scale * (x - zero_point), the product rounded once to float32 (TFLite forms it in
 *               double and converts: both are the correctly rounded product, since it is exact in double).
 * (int8 -> int8 QUANTIZE is a requantization, one byte in, one byte out: model/tflite_lower.py makes it a
 * 256-entry table, the QLinearLookup kernel.)
 *
 * Input 0 and output 0 of equal element counts, one float32 and the other int8. floats: scale;
 * ints: zero point. In place allowed only between equal element sizes, so never. No workspace. */
#include "support_tfl.h"

/* TfLiteRound on a float: to the nearest integer, ties away from zero (exact: |v| < 2^23 splits
 * into an integer and a fraction without rounding), saturated to the int32 range. */
static int32_t tfl_round_sat(float v)
{
    float t, f;
    if (v != v) {
        return 0;
    }
    if (v >= 2147483520.0f) {
        return INT32_MAX;
    }
    if (v <= -2147483648.0f) {
        return INT32_MIN;
    }
    if (v >= 8388608.0f || v <= -8388608.0f) {
        return (int32_t)v; /* already an integer */
    }
    t = (float)(int32_t)v; /* toward zero */
    f = v - t;
    return (int32_t)t + (f >= 0.5f ? 1 : f <= -0.5f ? -1 : 0);
}

int arena_k_tfl_quantize(const arena_ctx_t *c)
{
    const arena_attrs_t *a = c->op->attrs;
    const arena_tensor_t *xt = arena_in(c, 0), *yt = arena_out(c, 0);
    float scale;
    int32_t zp;
    uint32_t i, n;
    if (xt == NULL || yt == NULL || a->n_ints < 1 || a->n_floats < 1 || a->floats == NULL) {
        return ARENA_ERR_UNSUPPORTED;
    }
    n = yt->elements;
    if (xt->elements != n) {
        return ARENA_ERR_SHAPE;
    }
    scale = a->floats[0], zp = a->ints[0];
    if (xt->dtype == ARENA_DT_FLOAT32 && yt->dtype == ARENA_DT_INT8) {
        const float *x = (const float *)arena_in_data(c, 0);
        int8_t *y = (int8_t *)arena_out_data(c, 0);
        for (i = 0u; i < n; ++i) {
            int32_t q = tfl_round_sat(x[i] / scale);
            q = q > INT32_MAX - 128 ? INT32_MAX - 128 : q < INT32_MIN + 128 ? INT32_MIN + 128 : q;
            y[i] = (int8_t)tfl_clamp(q + zp, -128, 127);
        }
        return ARENA_OK;
    }
    if (xt->dtype == ARENA_DT_INT8 && yt->dtype == ARENA_DT_FLOAT32) {
        const int8_t *x = (const int8_t *)arena_in_data(c, 0);
        float *y = (float *)arena_out_data(c, 0);
        for (i = 0u; i < n; ++i) {
            y[i] = scale * (float)((int32_t)x[i] - zp);
        }
        return ARENA_OK;
    }
    return ARENA_ERR_UNSUPPORTED;
}
