/* Softmax, float32. No workspace. */
#include "support_f32.h"

int arena_k_softmax(const arena_ctx_t *c)
{
    const arena_attrs_t *a = c->op->attrs;
    const arena_tensor_t *xt = arena_in(c, 0), *yt = arena_out(c, 0);
    const float *x = (const float *)arena_in_data(c, 0);
    float *y = (float *)arena_out_data(c, 0);
    uint32_t outer, n, inner, o, in, j;
    if (xt == NULL || yt == NULL || xt->elements != yt->elements || !arena_shape_ok(xt) || a->axis < 0 ||
        (a->axis >= (int32_t)xt->rank && xt->rank > 0)) {
        return ARENA_ERR_SHAPE;
    }
    if (!is_f32(xt) || !is_f32(yt)) {
        return ARENA_ERR_UNSUPPORTED;
    }
    outer = arena_dims_product(xt, 0, a->axis);
    if (a->legacy_axis) {
        n = arena_dims_product(xt, a->axis, xt->rank);
        inner = 1u;
    } else {
        n = arena_dims_product(xt, a->axis, a->axis + 1);
        inner = arena_dims_product(xt, a->axis + 1, xt->rank);
    }
    for (o = 0; o < outer; ++o) {
        for (in = 0; in < inner; ++in) {
            size_t b = (size_t)o * n * inner + in;
            float mx = -FLT_BIG, sum = 0.0f;
            for (j = 0; j < n; ++j) {
                float v = x[b + (size_t)j * inner];
                mx = v > mx ? v : mx;
            }
            for (j = 0; j < n; ++j) {
                float e = arena_expf(x[b + (size_t)j * inner] - mx);
                y[b + (size_t)j * inner] = e;
                sum += e;
            }
            for (j = 0; j < n; ++j) {
                y[b + (size_t)j * inner] /= sum;
            }
        }
    }
    return ARENA_OK;
}
