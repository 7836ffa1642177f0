/* TFLite's MEAN, int8 and float32, as TFLite Micro's reference kernels compute it
 * (reference_ops::QuantizedMeanOrSum, Mean): per output element the sum of the input elements that
 * reduce into it, in the input's row-major order;
 *   int8:    (sum - x_zp * count) requantized by the multiplier and shift TFLite derives from
 *            x_scale / y_scale and the count (model/tflite_lower.py), plus y_zp, clamped;
 *   float32: the float sum divided by the count (as a float).
 *
 * Input 0 x of rank r; output 0 y with the reduced dims of x dropped or kept as 1 (the same row-major
 * order). ints: multiplier, shift, x_zp, y_zp (int8; zeros for float32), then r flags (1: dim
 * reduced). No workspace: each output sums its own elements. */
#include "support_tfl.h"

int arena_k_tfl_mean(const arena_ctx_t *c)
{
    const arena_attrs_t *a = c->op->attrs;
    const arena_tensor_t *xt = arena_in(c, 0), *yt = arena_out(c, 0);
    int32_t kept[ARENA_MAX_RANK], red[ARENA_MAX_RANK];     /* dims of x kept / reduced */
    uint32_t kstr[ARENA_MAX_RANK], rstr[ARENA_MAX_RANK]; /* their strides in x */
    int32_t ki[ARENA_MAX_RANK], ri[ARENA_MAX_RANK];
    uint32_t stride = 1u, count = 1u, o;
    int nk = 0, nr = 0, d, r;
    if (xt == NULL || yt == NULL || a->ints == NULL || xt->dtype != yt->dtype
        || (xt->dtype != ARENA_DT_INT8 && xt->dtype != ARENA_DT_FLOAT32)) {
        return ARENA_ERR_UNSUPPORTED;
    }
    r = (int)xt->rank;
    if (a->n_ints != (uint16_t)(4 + r)) {
        return ARENA_ERR_SHAPE;
    }
    for (d = r - 1; d >= 0; --d) { /* innermost first; reversed below */
        if (a->ints[4 + d]) {
            red[nr] = xt->shape[d], rstr[nr++] = stride, count *= (uint32_t)xt->shape[d];
        } else {
            kept[nk] = xt->shape[d], kstr[nk++] = stride;
        }
        stride *= (uint32_t)xt->shape[d];
    }
    if (yt->elements * count != xt->elements) {
        return ARENA_ERR_SHAPE;
    }
    for (d = 0; d < nk; ++d) {
        ki[d] = 0;
    }
    for (o = 0u; o < yt->elements; ++o) {
        uint32_t base = 0u, off;
        int32_t isum = 0;
        float fsum = 0.0f;
        for (d = 0; d < nk; ++d) {
            base += (uint32_t)ki[d] * kstr[d];
        }
        for (d = 0; d < nr; ++d) {
            ri[d] = 0;
        }
        for (;;) { /* the reduced elements in row-major order (index 0 of red is the innermost) */
            off = base;
            for (d = 0; d < nr; ++d) {
                off += (uint32_t)ri[d] * rstr[d];
            }
            if (xt->dtype == ARENA_DT_INT8) {
                isum += ((const int8_t *)arena_in_data(c, 0))[off];
            } else {
                fsum += ((const float *)arena_in_data(c, 0))[off];
            }
            for (d = 0; d < nr && ++ri[d] == red[d]; ++d) {
                ri[d] = 0;
            }
            if (d == nr) {
                break;
            }
        }
        if (xt->dtype == ARENA_DT_INT8) {
            int32_t v = tfl_mbqm(isum - a->ints[2] * (int32_t)count, a->ints[0], a->ints[1]) + a->ints[3];
            ((int8_t *)arena_out_data(c, 0))[o] = (int8_t)tfl_clamp(v, -128, 127);
        } else {
            ((float *)arena_out_data(c, 0))[o] = count ? fsum / (float)count : 0.0f;
        }
        for (d = 0; d < nk && ++ki[d] == kept[d]; ++d) { /* the next output, row-major */
            ki[d] = 0;
        }
    }
    return ARENA_OK;
}
