/* Transpose. Not in place. No workspace.
 *
 * Dims of size 1 are dropped and output dims that stay neighbours in the input merged first, so
 * a channel shuffle's [1, 2, C/2, H, W] -> [1, C/2, 2, H, W] moves C rows of H * W contiguous
 * elements (one memcpy each), not C * H rows of W. */
#include "support_layout.h"

int arena_k_transpose(const arena_ctx_t *c)
{
    const arena_attrs_t *a = c->op->attrs;
    const arena_tensor_t *xt, *yt;
    const uint8_t *x;
    uint8_t *y;
    int32_t xs[ARENA_MAX_RANK], dims[ARENA_MAX_RANK], st[ARENA_MAX_RANK];
    uint32_t seen = 0u;
    walk_t w;
    int rc, d, r, n = 0;
    size_t es = check_io(c, &xt, &yt, &rc), out = 0;
    if (es == 0) {
        return rc;
    }
    r = (int)xt->rank;
    if (yt->rank != xt->rank || a->n_ints != r || (r > 0 && a->ints == NULL)) {
        return ARENA_ERR_SHAPE;
    }
    strides_of(xt, xs);
    for (d = 0; d < r; ++d) {
        int32_t p = a->ints[d], size = yt->shape[d];
        if (p < 0 || p >= r || (seen & (1u << p)) || size != xt->shape[p]) {
            return ARENA_ERR_SHAPE; /* not a permutation, or the output's shape disagrees */
        }
        seen |= 1u << p;
        if (size == 1) {
            continue;
        }
        if (n > 0 && st[n - 1] == size * xs[p]) { /* output dims n - 1 and d neighbours in x too */
            dims[n - 1] *= size;
            st[n - 1] = xs[p];
        } else {
            dims[n] = size;
            st[n++] = xs[p];
        }
    }
    if (yt->elements == 0u) {
        return ARENA_OK;
    }
    if (n == 0) { /* one element */
        dims[n] = 1;
        st[n++] = 1;
    }
    walk_init(&w, n - 1, 0);
    for (d = 0; d < n - 1; ++d) {
        w.dims[d] = dims[d];
        w.stride[d] = st[d];
    }
    x = (const uint8_t *)arena_in_data(c, 0);
    y = (uint8_t *)arena_out_data(c, 0);
    do {
        copy_row(y + out, x + (ptrdiff_t)w.offset * (ptrdiff_t)es, dims[n - 1], st[n - 1], es);
        out += (size_t)dims[n - 1] * es;
    } while (walk_next(&w) >= 0);
    return ARENA_OK;
}
