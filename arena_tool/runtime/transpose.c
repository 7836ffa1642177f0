/* Transpose. Not in place. No workspace. */
#include "support_layout.h"

int arena_k_transpose(const arena_ctx_t *c)
{
    const arena_attrs_t *a = c->op->attrs;
    const arena_tensor_t *xt, *yt;
    int32_t xs[ARENA_MAX_RANK];
    uint32_t seen = 0u;
    walk_t w;
    int rc, d, r;
    size_t es = check_io(c, &xt, &yt, &rc);
    if (es == 0) {
        return rc;
    }
    r = (int)xt->rank;
    if (yt->rank != xt->rank || a->n_ints != r || (r > 0 && a->ints == NULL)) {
        return ARENA_ERR_SHAPE;
    }
    strides_of(xt, xs);
    walk_init(&w, r > 0 ? r - 1 : 0, 0);
    for (d = 0; d < r; ++d) {
        int32_t p = a->ints[d];
        if (p < 0 || p >= r || (seen & (1u << p)) || yt->shape[d] != xt->shape[p]) {
            return ARENA_ERR_SHAPE; /* not a permutation, or the output's shape disagrees */
        }
        seen |= 1u << p;
        w.dims[d] = yt->shape[d];
        w.stride[d] = xs[p];
    }
    copy_rows((uint8_t *)arena_out_data(c, 0), (const uint8_t *)arena_in_data(c, 0), yt, &w,
              r > 0 ? xs[a->ints[r - 1]] : 1, es);
    return ARENA_OK;
}
