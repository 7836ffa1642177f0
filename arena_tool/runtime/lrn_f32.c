/* LRN, float32. No workspace. */
#include "support_f32.h"

/* LRN across channels (NC...): y = x / (bias + alpha / size * sum of x^2 over the channels
 * [c - (size-1)/2, c + ceil((size-1)/2)])^beta, the power as exp(beta * ln(.)). Not in place:
 * every output reads its neighbours' inputs. */
int arena_k_lrn(const arena_ctx_t *c)
{
    const arena_tensor_t *xt = arena_in(c, 0), *yt = arena_out(c, 0);
    const arena_attrs_t *a = c->op->attrs;
    const float *x = (const float *)arena_in_data(c, 0);
    float *y = (float *)arena_out_data(c, 0);
    int32_t size, lo, hi, n, ch, k;
    uint32_t inner, i, channels;
    if (xt == NULL || yt == NULL || x == NULL || y == NULL || xt->dtype != ARENA_DT_FLOAT32
        || yt->dtype != ARENA_DT_FLOAT32 || xt->rank < 2 || xt->elements != yt->elements
        || !arena_shape_ok(xt) || a->n_ints != 1u || a->n_floats != 1u) {
        return ARENA_ERR_SHAPE;
    }
    if ((const void *)x == (const void *)y) {
        return ARENA_ERR_SHAPE;
    }
    size = a->ints[0];
    if (size < 1) {
        return ARENA_ERR_SHAPE;
    }
    lo = (size - 1) / 2;
    hi = size - 1 - lo;
    channels = (uint32_t)xt->shape[1];
    inner = arena_dims_product(xt, 2, (int)xt->rank);
    for (n = 0; n < xt->shape[0]; ++n) {
        const float *xn = x + (uint32_t)n * channels * inner;
        float *yn = y + (uint32_t)n * channels * inner;
        for (ch = 0; ch < (int32_t)channels; ++ch) {
            for (i = 0; i < inner; ++i) {
                float sum = 0.0f, v;
                for (k = ch - lo; k <= ch + hi; ++k) {
                    if (k >= 0 && k < (int32_t)channels) {
                        float t = xn[(uint32_t)k * inner + i];
                        sum += t * t;
                    }
                }
                v = a->floats[0] + a->alpha / (float)size * sum;
                yn[(uint32_t)ch * inner + i] = xn[(uint32_t)ch * inner + i] * arena_expf(-a->beta * arena_logf(v));
            }
        }
    }
    return ARENA_OK;
}
