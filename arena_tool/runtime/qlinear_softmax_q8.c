/* QLinearSoftmax, int8/uint8. No workspace. */
#include "support_q8.h"

/* --- QLinearSoftmax ------------------------------------------------------------------ */

/* floor(v) for finite |v| < 2^23 (others are integral already, or inf/NaN). */
static float floor_f(float v)
{
    float t;
    if (!(v > -8388608.0f && v < 8388608.0f)) {
        return v;
    }
    t = (float)(int32_t)v;
    return t > v ? t - 1.0f : t;
}

/* onnxruntime's QlinearSoftmaxCPU: e_j = exp((x_j - max) * x_scale) (its table of 256
 * entries holds exactly these, times a constant that cancels), then
 * y_j = rint(e_j * floor(1 / y_scale) / sum e) + y_zp, saturated (some older onnxruntime
 * releases wrapped int8 codes above 127 instead). */
int arena_k_qlinear_softmax(const arena_ctx_t *c)
{
    const arena_attrs_t *a = c->op->attrs;
    qin_t x;
    qout_t y;
    uint32_t outer, n, inner, o, in, j;
    float y_mult;
    int rc = qin(c, 0, &x);
    if (rc == ARENA_OK) {
        rc = qout(c, 3, &y);
    }
    if (rc != ARENA_OK) {
        return rc;
    }
    if (!same_shape(x.t, y.t) || a->axis < 0 || a->axis >= (int32_t)x.t->rank) {
        return ARENA_ERR_SHAPE;
    }
    outer = arena_dims_product(x.t, 0, a->axis);
    /* Before opset 13 the input is coerced to 2-D at the axis. */
    n = arena_dims_product(x.t, a->axis, a->legacy_axis ? x.t->rank : a->axis + 1);
    inner = a->legacy_axis ? 1u : arena_dims_product(x.t, a->axis + 1, x.t->rank);
    y_mult = floor_f(1.0f / y.scale);
    for (o = 0; o < outer; ++o) {
        for (in = 0; in < inner; ++in) {
            uint32_t base = o * n * inner + in;
            int32_t mx = -128;
            float sum = 0.0f;
            for (j = 0; j < n; ++j) {
                int32_t v = code(&x, base + j * inner);
                mx = v > mx ? v : mx;
            }
            for (j = 0; j < n; ++j) {
                sum += arena_expf((float)(code(&x, base + j * inner) - mx) * x.scale);
            }
            for (j = 0; j < n; ++j) {
                float e = arena_expf((float)(code(&x, base + j * inner) - mx) * x.scale);
                put(&y, base + j * inner, e * y_mult / sum);
            }
        }
    }
    return ARENA_OK;
}
