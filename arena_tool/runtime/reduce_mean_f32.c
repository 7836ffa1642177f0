/* ReduceMean, float32. Not in place. No workspace. */
#include "support_layout.h"

static float abs_f(float v)
{
    return v < 0.0f ? -v : v;
}

/* ints: 1 where input dim d is reduced. The output keeps those dims as 1 or drops them. */
int arena_k_reduce_mean(const arena_ctx_t *c)
{
    const arena_attrs_t *a = c->op->attrs;
    const arena_tensor_t *xt, *yt;
    const float *x = (const float *)arena_in_data(c, 0);
    float *y = (float *)arena_out_data(c, 0);
    int32_t xs[ARENA_MAX_RANK];
    walk_t outer, inner;
    uint32_t count = 1u, kept = 1u;
    int rc, d, r, ko = 0;
    size_t es = check_io(c, &xt, &yt, &rc), pos = 0;
    if (es == 0) {
        return rc;
    }
    if (xt->dtype != ARENA_DT_FLOAT32) {
        return ARENA_ERR_UNSUPPORTED;
    }
    r = (int)xt->rank;
    if (a->n_ints != r || (r > 0 && a->ints == NULL)) {
        return ARENA_ERR_SHAPE;
    }
    strides_of(xt, xs);
    walk_init(&outer, 0, 0);
    walk_init(&inner, 0, 0);
    for (d = 0; d < r; ++d) {
        int red = a->ints[d];
        walk_t *wk = red ? &inner : &outer;
        if (red != 0 && red != 1) {
            return ARENA_ERR_SHAPE;
        }
        if (red) {
            count *= (uint32_t)xt->shape[d];
        } else {
            kept *= (uint32_t)xt->shape[d];
        }
        wk->dims[wk->rank] = xt->shape[d];
        wk->stride[wk->rank] = xs[d];
        ++wk->rank;
    }
    /* keepdims: the same rank with 1 for each reduced dim; else the kept dims alone. */
    if (yt->rank == xt->rank) {
        for (d = 0; d < r; ++d) {
            if (yt->shape[d] != (a->ints[d] ? 1 : xt->shape[d])) {
                return ARENA_ERR_SHAPE;
            }
        }
    } else if ((int)yt->rank == outer.rank) {
        for (d = 0; d < r; ++d) {
            if (!a->ints[d] && yt->shape[ko++] != xt->shape[d]) {
                return ARENA_ERR_SHAPE;
            }
        }
    } else {
        return ARENA_ERR_SHAPE;
    }
    if (yt->elements != kept) {
        return ARENA_ERR_SHAPE;
    }
    if (kept == 0u) {
        return ARENA_OK;
    }
    if (count == 0u) {
        return ARENA_ERR_SHAPE; /* the mean of nothing */
    }
    do {
        /* Neumaier-compensated sum: long reductions (a whole feature map) stay
         * as accurate as onnxruntime's vectorized one. */
        float sum = 0.0f, comp = 0.0f;
        inner.offset = outer.offset;
        do {
            float v = x[inner.offset], t = sum + v;
            comp += abs_f(sum) >= abs_f(v) ? (sum - t) + v : (v - t) + sum;
            sum = t;
        } while (walk_next(&inner) >= 0);
        y[pos++] = (sum + comp) / (float)count;
    } while (walk_next(&outer) >= 0);
    return ARENA_OK;
}
