/* Split. Not in place. No workspace. */
#include <string.h>

#include "support_layout.h"

/* axis; each output's extent along it is its own shape's. */
int arena_k_split(const arena_ctx_t *c)
{
    const arena_tensor_t *xt = arena_in(c, 0);
    const uint8_t *x = (const uint8_t *)arena_in_data(c, 0);
    int axis = c->op->attrs->axis;
    uint32_t outer, inner, o;
    int32_t total = 0;
    size_t es, pos = 0;
    int k, d;
    if (xt == NULL || !arena_shape_ok(xt) || axis < 0 || axis >= (int)xt->rank || c->op->n_outputs == 0) {
        return ARENA_ERR_SHAPE;
    }
    es = arena_dtype_size(xt->dtype);
    if (es == 0) {
        return ARENA_ERR_UNSUPPORTED;
    }
    for (k = 0; k < (int)c->op->n_outputs; ++k) {
        const arena_tensor_t *yt = arena_out(c, k);
        if (yt == NULL || !arena_shape_ok(yt) || yt->rank != xt->rank) {
            return ARENA_ERR_SHAPE;
        }
        if (yt->dtype != xt->dtype) {
            return ARENA_ERR_UNSUPPORTED;
        }
        for (d = 0; d < (int)xt->rank; ++d) {
            if (d != axis && yt->shape[d] != xt->shape[d]) {
                return ARENA_ERR_SHAPE;
            }
        }
        if (overlap(x, xt, arena_out_data(c, k), yt)) {
            return ARENA_ERR_SHAPE;
        }
        total += yt->shape[axis];
    }
    if (total != xt->shape[axis]) {
        return ARENA_ERR_SHAPE; /* the outputs do not tile the input */
    }
    outer = arena_dims_product(xt, 0, axis);
    inner = arena_dims_product(xt, axis + 1, xt->rank);
    for (o = 0; o < outer; ++o) {
        for (k = 0; k < (int)c->op->n_outputs; ++k) {
            const arena_tensor_t *yt = arena_out(c, k);
            size_t chunk = (size_t)yt->shape[axis] * inner * es;
            memcpy((uint8_t *)arena_out_data(c, k) + (size_t)o * chunk, x + pos, chunk);
            pos += chunk;
        }
    }
    return ARENA_OK;
}
