/* TFLite's LOGISTIC, TANH and HARD_SWISH on float32, as TFLite Micro's reference kernels compute them:
 *   LOGISTIC (reference_ops::Logistic): 1 above 16.619047164916992188, expf(x) below -9, else
 *            1 / (1 + expf(-x));
 *   TANH:    tanhf;
 *   HARD_SWISH (reference_ops::HardSwish): x * min(6, max(0, x + 3)) / 6.
 * expf and tanhf are arena_tfl_expf and arena_tfl_tanhf (tfl_math_f32.c): what glibc computes for TFLite's
 * std::exp and std::tanh on the host, on every board (see there for how closely).
 *
 * Input 0 x, output 0 y, float32, equal element counts. ints: function (0 logistic, 1 tanh, 2 hard swish).
 * In place allowed. */
#include "support_tfl.h"

int arena_k_tfl_unary_f32(const arena_ctx_t *c)
{
    const arena_tensor_t *xt = arena_in(c, 0), *yt = arena_out(c, 0);
    const float *x;
    float *y;
    uint32_t i;
    int32_t f;
    if (xt == NULL || yt == NULL || c->op->attrs->n_ints < 1 || xt->dtype != ARENA_DT_FLOAT32
        || yt->dtype != ARENA_DT_FLOAT32) {
        return ARENA_ERR_UNSUPPORTED;
    }
    if (xt->elements != yt->elements) {
        return ARENA_ERR_SHAPE;
    }
    f = c->op->attrs->ints[0];
    x = (const float *)arena_in_data(c, 0);
    y = (float *)arena_out_data(c, 0);
    for (i = 0u; i < yt->elements; ++i) {
        float v = x[i], r;
        if (f == 0) {
            r = v > 16.619047164916992188f ? 1.0f : v < -9.0f ? arena_tfl_expf(v) : 1.0f / (1.0f + arena_tfl_expf(-v));
        } else if (f == 1) {
            r = arena_tfl_tanhf(v);
        } else {
            float t = v + 3.0f;
            t = 0.0f < t ? t : 0.0f; /* std::max(0, x + 3): +0 for -0 */
            t = t < 6.0f ? t : 6.0f; /* std::min(6, ...) */
            r = v * t / 6.0f;
        }
        y[i] = r;
    }
    return ARENA_OK;
}
