/* TFLite's FULLY_CONNECTED on float32, as TFLite Micro's reference kernel computes it
 * (reference_ops::FullyConnected): per batch row b and output n, a float sum from 0 of x[b, k] * w[n, k]
 * in k's order, plus the bias (0 when absent), clamped to the fused activation's range.
 *
 * Inputs: 0 x read as [B, K], 1 w [M, K], 2 bias [M] or absent. Output 0 y, B * M elements.
 * floats: act_min, act_max. */
#include "support_tfl.h"

int arena_k_tfl_fully_connected_f32(const arena_ctx_t *c)
{
    const arena_attrs_t *a = c->op->attrs;
    const arena_tensor_t *xt = arena_in(c, 0), *wt = arena_in(c, 1), *bt = arena_in(c, 2), *yt = arena_out(c, 0);
    const float *x, *w, *bias;
    float *y, lo, hi;
    int32_t M, K, B, b, n, k;
    if (xt == NULL || wt == NULL || yt == NULL || a->n_floats < 2 || wt->rank != 2 || xt->dtype != ARENA_DT_FLOAT32
        || wt->dtype != ARENA_DT_FLOAT32 || yt->dtype != ARENA_DT_FLOAT32
        || (bt != NULL && bt->dtype != ARENA_DT_FLOAT32)) {
        return ARENA_ERR_UNSUPPORTED;
    }
    M = wt->shape[0], K = wt->shape[1];
    if (M <= 0 || K <= 0 || yt->elements % (uint32_t)M != 0u) {
        return ARENA_ERR_SHAPE;
    }
    B = (int32_t)(yt->elements / (uint32_t)M);
    if (xt->elements != (uint32_t)B * (uint32_t)K || (bt != NULL && bt->elements != (uint32_t)M)) {
        return ARENA_ERR_SHAPE;
    }
    lo = a->floats[0], hi = a->floats[1];
    x = (const float *)arena_in_data(c, 0);
    w = (const float *)arena_in_data(c, 1);
    bias = bt != NULL ? (const float *)arena_in_data(c, 2) : NULL;
    y = (float *)arena_out_data(c, 0);
    for (b = 0; b < B; ++b) {
        for (n = 0; n < M; ++n) {
            const float *xp = x + (size_t)b * K, *wp = w + (size_t)n * K;
            float acc = 0.0f, v;
            for (k = 0; k < K; ++k) {
                acc += xp[k] * wp[k];
            }
            v = acc + (bias != NULL ? bias[n] : 0.0f);
            v = v < lo ? lo : v;
            y[(size_t)b * M + n] = hi < v ? hi : v;
        }
    }
    return ARENA_OK;
}
