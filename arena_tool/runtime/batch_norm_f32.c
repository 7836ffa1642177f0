/* BatchNormalization (inference), float32. In place allowed. No workspace. */
#include "support_f32.h"

int arena_k_batch_norm(const arena_ctx_t *c)
{
    const arena_tensor_t *xt = arena_in(c, 0), *yt = arena_out(c, 0);
    const float *x = (const float *)arena_in_data(c, 0);
    const float *scale = (const float *)arena_in_data(c, 1);
    const float *bias = (const float *)arena_in_data(c, 2);
    const float *mean = (const float *)arena_in_data(c, 3);
    const float *var = (const float *)arena_in_data(c, 4);
    float *y = (float *)arena_out_data(c, 0);
    uint32_t n, ch, i, C, spatial;
    int k;
    if (xt == NULL || yt == NULL || xt->rank < 2 || !arena_shape_ok(xt) || xt->elements != yt->elements ||
        scale == NULL || bias == NULL || mean == NULL || var == NULL) {
        return ARENA_ERR_SHAPE;
    }
    if (!is_f32(xt) || !is_f32(yt)) {
        return ARENA_ERR_UNSUPPORTED;
    }
    C = (uint32_t)xt->shape[1];
    for (k = 1; k <= 4; ++k) {
        if (!is_f32(arena_in(c, k)) || arena_in(c, k)->elements != C) {
            return ARENA_ERR_SHAPE;
        }
    }
    spatial = arena_dims_product(xt, 2, xt->rank);
    for (n = 0; n < (uint32_t)xt->shape[0]; ++n) {
        for (ch = 0; ch < C; ++ch) {
            float k2 = scale[ch] / arena_sqrtf(var[ch] + c->op->attrs->epsilon);
            size_t b = ((size_t)n * C + ch) * spatial;
            for (i = 0; i < spatial; ++i) {
                y[b + i] = (x[b + i] - mean[ch]) * k2 + bias[ch];
            }
        }
    }
    return ARENA_OK;
}
