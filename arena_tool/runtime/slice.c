/* Slice. Not in place. No workspace. */
#include "support_layout.h"

/* ints: per input dim the first index read and the step; the output's shape gives the counts. */
int arena_k_slice(const arena_ctx_t *c)
{
    const arena_attrs_t *a = c->op->attrs;
    const arena_tensor_t *xt, *yt;
    int32_t xs[ARENA_MAX_RANK];
    int32_t start = 0;
    walk_t w;
    int rc, d, r;
    size_t es = check_io(c, &xt, &yt, &rc);
    if (es == 0) {
        return rc;
    }
    r = (int)xt->rank;
    if (yt->rank != xt->rank || a->n_ints != 2 * r || (r > 0 && a->ints == NULL)) {
        return ARENA_ERR_SHAPE;
    }
    if (yt->elements == 0u) {
        return ARENA_OK;
    }
    strides_of(xt, xs);
    walk_init(&w, r > 0 ? r - 1 : 0, 0);
    for (d = 0; d < r; ++d) {
        int32_t first = a->ints[2 * d], step = a->ints[2 * d + 1];
        int64_t last = (int64_t)first + (int64_t)(yt->shape[d] - 1) * step;
        if (step == 0 || first < 0 || first >= xt->shape[d] || last < 0 || last >= xt->shape[d]) {
            return ARENA_ERR_SHAPE; /* the slice would read outside the input */
        }
        start += first * xs[d];
        w.dims[d] = yt->shape[d];
        w.stride[d] = step * xs[d];
    }
    w.offset = start;
    copy_rows((uint8_t *)arena_out_data(c, 0), (const uint8_t *)arena_in_data(c, 0), yt, &w,
              r > 0 ? a->ints[2 * r - 1] : 1, es);
    return ARENA_OK;
}
