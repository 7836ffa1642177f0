/* TFLite's ADD and MUL on float32, as TFLite Micro's reference kernels compute them (reference_ops::Add,
 * Mul, and their 6-D broadcasts: dims aligned at the right, a dim of 1 repeated): x1 + x2 or x1 * x2,
 * clamped to the fused activation's range.
 *
 * Inputs 0, 1; output 0 (the broadcast shape), all float32. ints: mode (0 add, 1 mul); floats: act_min,
 * act_max. In place allowed (element-wise). */
#include "support_tfl.h"

/* The element of t (broadcast to the output's rank) at the output's multi-index idx. */
static uint32_t bcast_at(const arena_tensor_t *t, const arena_tensor_t *y, const int32_t *idx)
{
    uint32_t off = 0u;
    int d, lead = y->rank - t->rank;
    for (d = 0; d < t->rank; ++d) {
        int32_t n = t->shape[d];
        off = off * (uint32_t)n + (uint32_t)(n == 1 ? 0 : idx[d + lead]);
    }
    return off;
}

int arena_k_tfl_binary_f32(const arena_ctx_t *c)
{
    const arena_attrs_t *a = c->op->attrs;
    const arena_tensor_t *at = arena_in(c, 0), *bt = arena_in(c, 1), *yt = arena_out(c, 0);
    const float *x1, *x2;
    float *y, lo, hi;
    int32_t idx[ARENA_MAX_RANK] = {0};
    uint32_t i;
    int d, mul;
    if (at == NULL || bt == NULL || yt == NULL || a->n_ints < 1 || a->n_floats < 2 || at->dtype != ARENA_DT_FLOAT32
        || bt->dtype != ARENA_DT_FLOAT32 || yt->dtype != ARENA_DT_FLOAT32 || at->rank > yt->rank
        || bt->rank > yt->rank) {
        return ARENA_ERR_UNSUPPORTED;
    }
    for (d = 0; d < at->rank || d < bt->rank; ++d) { /* every input dim is 1 or the output's */
        if ((d < at->rank && at->shape[at->rank - 1 - d] != 1
             && at->shape[at->rank - 1 - d] != yt->shape[yt->rank - 1 - d])
            || (d < bt->rank && bt->shape[bt->rank - 1 - d] != 1
                && bt->shape[bt->rank - 1 - d] != yt->shape[yt->rank - 1 - d])) {
            return ARENA_ERR_SHAPE;
        }
    }
    mul = a->ints[0] == 1, lo = a->floats[0], hi = a->floats[1];
    x1 = (const float *)arena_in_data(c, 0);
    x2 = (const float *)arena_in_data(c, 1);
    y = (float *)arena_out_data(c, 0);
    for (i = 0; i < yt->elements; ++i) {
        float v1 = x1[at->elements == yt->elements ? i : bcast_at(at, yt, idx)];
        float v2 = x2[bt->elements == yt->elements ? i : bcast_at(bt, yt, idx)];
        float v = mul ? v1 * v2 : v1 + v2;
        v = v < lo ? lo : v;
        y[i] = hi < v ? hi : v;
        for (d = yt->rank - 1; d >= 0; --d) { /* the next multi-index, row-major */
            if (++idx[d] < yt->shape[d]) {
                break;
            }
            idx[d] = 0;
        }
    }
    return ARENA_OK;
}
