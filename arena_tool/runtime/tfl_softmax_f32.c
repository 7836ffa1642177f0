/* TFLite's SOFTMAX on float32 over the last dim, as TFLite Micro's reference kernel computes it
 * (reference_ops::Softmax): per row the maximum, exp((x - max) * beta) in order (arena_tfl_expf: glibc's
 * expf, tfl_math_f32.c), their float sum, then each exp divided by the sum.
 *
 * Input 0 x, output 0 y of one shape, float32. floats: beta. In place allowed (a row is read before it
 * is written, then only its own outputs). */
#include "support_tfl.h"

int arena_k_tfl_softmax_f32(const arena_ctx_t *c)
{
    const arena_attrs_t *a = c->op->attrs;
    const arena_tensor_t *xt = arena_in(c, 0), *yt = arena_out(c, 0);
    const float *x;
    float *y, beta;
    uint32_t depth, rows, r, i;
    if (xt == NULL || yt == NULL || a->n_floats < 1 || xt->rank < 1 || xt->dtype != ARENA_DT_FLOAT32
        || yt->dtype != ARENA_DT_FLOAT32) {
        return ARENA_ERR_UNSUPPORTED;
    }
    depth = (uint32_t)xt->shape[xt->rank - 1];
    if (depth == 0u || xt->elements != yt->elements || xt->elements % depth != 0u) {
        return ARENA_ERR_SHAPE;
    }
    rows = xt->elements / depth, beta = a->floats[0];
    x = (const float *)arena_in_data(c, 0);
    y = (float *)arena_out_data(c, 0);
    for (r = 0u; r < rows; ++r) {
        const float *xr = x + (size_t)r * depth;
        float *yr = y + (size_t)r * depth;
        float mx = -3.40282347e+38f, sum = 0.0f;
        for (i = 0u; i < depth; ++i) {
            mx = mx < xr[i] ? xr[i] : mx; /* std::max(max, x) */
        }
        for (i = 0u; i < depth; ++i) {
            float e = arena_tfl_expf((xr[i] - mx) * beta);
            yr[i] = e;
            sum += e;
        }
        for (i = 0u; i < depth; ++i) {
            yr[i] = yr[i] / sum;
        }
    }
    return ARENA_OK;
}
