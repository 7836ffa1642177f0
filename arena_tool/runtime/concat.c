/* Concat, any element type. No workspace. */
#include <string.h>

#include "support_f32.h"

/* Any element type; inputs of the output's rank and type, equal but along axis. */
int arena_k_concat(const arena_ctx_t *c)
{
    const arena_attrs_t *a = c->op->attrs;
    const arena_tensor_t *yt = arena_out(c, 0);
    uint8_t *y = (uint8_t *)arena_out_data(c, 0);
    size_t es, outer, o, pos = 0;
    int32_t total = 0;
    int i, d;
    if (yt == NULL || !arena_shape_ok(yt) || a->axis < 0 || a->axis >= (int32_t)yt->rank) {
        return ARENA_ERR_SHAPE;
    }
    es = arena_dtype_size(yt->dtype);
    if (es == 0) {
        return ARENA_ERR_UNSUPPORTED;
    }
    for (i = 0; i < (int)c->op->n_inputs; ++i) {
        const arena_tensor_t *xt = arena_in(c, i);
        if (xt == NULL) {
            continue;
        }
        if (xt->dtype != yt->dtype) {
            return ARENA_ERR_UNSUPPORTED;
        }
        if (!arena_shape_ok(xt) || xt->rank != yt->rank) {
            return ARENA_ERR_SHAPE;
        }
        for (d = 0; d < (int)yt->rank; ++d) {
            if (d != a->axis && xt->shape[d] != yt->shape[d]) {
                return ARENA_ERR_SHAPE;
            }
        }
        total += xt->shape[a->axis];
    }
    if (total != yt->shape[a->axis]) {
        return ARENA_ERR_SHAPE;
    }
    outer = arena_dims_product(yt, 0, a->axis);
    for (o = 0; o < outer; ++o) {
        for (i = 0; i < (int)c->op->n_inputs; ++i) {
            const arena_tensor_t *xt = arena_in(c, i);
            size_t chunk;
            if (xt == NULL) {
                continue;
            }
            chunk = (size_t)arena_dims_product(xt, a->axis, xt->rank) * es;
            memmove(y + pos, (const uint8_t *)arena_in_data(c, i) + o * chunk, chunk);
            pos += chunk;
        }
    }
    return ARENA_OK;
}
