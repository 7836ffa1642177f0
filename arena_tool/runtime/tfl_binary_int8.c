/* TFLite's ADD and MUL on int8, as TFLite Micro's reference kernels compute them
 * (reference_integer_ops::AddFunc and MulElementwise, broadcasting as BroadcastBinaryFunction6DSlow:
 * dims aligned at the right, a dim of 1 repeated).
 * ADD: each input plus its offset, shifted left by left_shift, scaled by its fixed-point multiplier
 * (below one), summed, scaled by the output multiplier, plus the output zero point, clamped.
 * MUL: (x1 + offset1) * (x2 + offset2) scaled by the output multiplier, plus the zero point, clamped.
 *
 * Inputs 0, 1 int8; output 0 int8 (the broadcast shape). ints: mode (0 add, 1 mul), offset1, offset2,
 * output zero point, left_shift, multiplier1, shift1, multiplier2, shift2, output multiplier, output
 * shift, act_min, act_max (model/tflite_lower.py computes them as TFLite's Prepare does). */
#include "support_tfl.h"

/* The element of t (broadcast to the output's rank) at the output's multi-index idx. */
static uint32_t bcast_index(const arena_tensor_t *t, const arena_tensor_t *y, const int32_t *idx)
{
    uint32_t off = 0u;
    int d, lead = y->rank - t->rank;
    for (d = 0; d < t->rank; ++d) {
        int32_t n = t->shape[d];
        off = off * (uint32_t)n + (uint32_t)(n == 1 ? 0 : idx[d + lead]);
    }
    return off;
}

int arena_k_tfl_binary(const arena_ctx_t *c)
{
    const arena_attrs_t *a = c->op->attrs;
    const arena_tensor_t *at = arena_in(c, 0), *bt = arena_in(c, 1), *yt = arena_out(c, 0);
    const int8_t *x1, *x2;
    int8_t *y;
    const int32_t *p = a->ints;
    int32_t idx[ARENA_MAX_RANK] = {0};
    uint32_t i;
    int d;
    if (at == NULL || bt == NULL || yt == NULL || a->n_ints < 13 || at->dtype != ARENA_DT_INT8
        || bt->dtype != ARENA_DT_INT8 || yt->dtype != ARENA_DT_INT8 || at->rank > yt->rank || bt->rank > yt->rank) {
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
    x1 = (const int8_t *)arena_in_data(c, 0);
    x2 = (const int8_t *)arena_in_data(c, 1);
    y = (int8_t *)arena_out_data(c, 0);
    for (i = 0; i < yt->elements; ++i) {
        uint32_t i1 = at->elements == yt->elements ? i : bcast_index(at, yt, idx);
        uint32_t i2 = bt->elements == yt->elements ? i : bcast_index(bt, yt, idx);
        int32_t v1 = p[1] + x1[i1], v2 = p[2] + x2[i2], r;
        if (p[0] == 0) {
            int32_t s1 = tfl_mbqm(tfl_shl(v1, p[4]), p[5], p[6]), s2 = tfl_mbqm(tfl_shl(v2, p[4]), p[7], p[8]);
            r = tfl_add(tfl_mbqm(tfl_add(s1, s2), p[9], p[10]), p[3]);
        } else {
            r = tfl_add(tfl_mbqm(v1 * v2, p[9], p[10]), p[3]);
        }
        y[i] = (int8_t)tfl_clamp(r, p[11], p[12]);
        for (d = yt->rank - 1; d >= 0; --d) { /* the next multi-index, row-major */
            if (++idx[d] < yt->shape[d]) {
                break;
            }
            idx[d] = 0;
        }
    }
    return ARENA_OK;
}
