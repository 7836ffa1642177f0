/* PatchWrite (patch-based inference). Not in place. No workspace. */
#include <string.h>

#include "support_layout.h"

/* ints: per dim the first index of the box that input 0 (one tile of a patched stage) fills in
 * output 0, the whole stage output. Input 1, when present, is the stage output so far: the
 * planner puts it at the output's address (in place); elsewhere it is copied first. */
int arena_k_patch_write(const arena_ctx_t *c)
{
    const arena_attrs_t *a = c->op->attrs;
    const arena_tensor_t *xt, *yt, *pt;
    int32_t ys[ARENA_MAX_RANK];
    int32_t start = 0;
    walk_t w;
    int rc, d, r;
    size_t es = check_io(c, &xt, &yt, &rc), out = 0;
    const uint8_t *x;
    uint8_t *y;
    if (es == 0) {
        return rc;
    }
    r = (int)xt->rank;
    if (yt->rank != xt->rank || r < 1 || a->n_ints != r || a->ints == NULL) {
        return ARENA_ERR_SHAPE;
    }
    y = (uint8_t *)arena_out_data(c, 0);
    pt = arena_in(c, 1);
    if (pt != NULL) {
        if (pt->dtype != yt->dtype || pt->elements != yt->elements) {
            return ARENA_ERR_SHAPE;
        }
        if (arena_in_data(c, 1) != (void *)y) {
            memmove(y, arena_in_data(c, 1), (size_t)yt->elements * es);
        }
    }
    strides_of(yt, ys);
    walk_init(&w, r - 1, 0);
    for (d = 0; d < r; ++d) {
        int32_t first = a->ints[d];
        if (first < 0 || first + xt->shape[d] > yt->shape[d]) {
            return ARENA_ERR_SHAPE; /* the tile would fall outside the whole tensor */
        }
        start += first * ys[d];
        w.dims[d] = xt->shape[d];
        w.stride[d] = ys[d];
    }
    w.offset = start;
    if (xt->elements == 0u) {
        return ARENA_OK;
    }
    x = (const uint8_t *)arena_in_data(c, 0);
    do { /* one row of the tile to its place in the row of the whole */
        memcpy(y + (size_t)w.offset * es, x + out, (size_t)xt->shape[r - 1] * es);
        out += (size_t)xt->shape[r - 1] * es;
    } while (walk_next(&w) >= 0);
    return ARENA_OK;
}
