/* TFLite's ADD and MUL on int8, as TFLite Micro's reference kernels compute them
 * (reference_integer_ops::AddFunc and MulElementwise, broadcasting as BroadcastBinaryFunction6DSlow:
 * dims aligned at the right, a dim of 1 repeated).
 * ADD: each input plus its offset, shifted left by left_shift, scaled by its fixed-point multiplier
 * (below one), summed, scaled by the output multiplier, plus the output zero point, clamped.
 * MUL: (x1 + offset1) * (x2 + offset2) scaled by the output multiplier, plus the zero point, clamped.
 *
 * Fast path, the same integers: an input's scaled term depends on its byte alone, so ADD reads both
 * from a table the lowering computed as TFLite does (input 2: 256 terms of input 1, then 256 of input
 * 2, indexed by the byte); the output's scaling is tfl_rq (one SMLAL where TFLite's shift is a right
 * shift of 2 or more). The output runs row by row along its last dim, each input's element stepping
 * by 1 along it or staying (a broadcast last dim); only a row's start is a broadcast index.
 *
 * Inputs 0, 1 int8, 2 (ADD) the terms int32 [512]; output 0 int8 (the broadcast shape). ints: mode
 * (0 add, 1 mul), offset1, offset2, output zero point, left_shift, multiplier1, shift1, multiplier2,
 * shift2, output multiplier, output shift, act_min, act_max (model/tflite_lower.py computes them as
 * TFLite's Prepare does). */
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

/* One row's operands: n outputs, each input's first element and step (1, or 0 broadcast). */
typedef struct {
    const int32_t *t1, *t2; /* ADD's terms of input 1 and 2 by byte (NULL: MUL) */
    int32_t o1, o2, zp, lo, hi;
    tfl_chan_t ch;
} tfl_bin_t;

static inline __attribute__((always_inline)) void tfl_bin_row(int8_t *y, const int8_t *x1, int32_t s1,
                                                              const int8_t *x2, int32_t s2, uint32_t n,
                                                              const tfl_bin_t *b, int general)
{
    const tfl_chan_t ch = b->ch;
    const int32_t zp = b->zp, lo = b->lo, hi = b->hi;
    uint32_t i;
    if (b->t1 != NULL) {
        const int32_t *t1 = b->t1, *t2 = b->t2;
        for (i = 0; i < n; ++i, x1 += s1, x2 += s2) {
            int32_t sum = tfl_add(t1[(uint8_t)*x1], t2[(uint8_t)*x2]);
            y[i] = (int8_t)tfl_clamp(tfl_add(tfl_rq(sum, &ch, general), zp), lo, hi);
        }
        return;
    }
    for (i = 0; i < n; ++i, x1 += s1, x2 += s2) {
        int32_t prod = (b->o1 + *x1) * (b->o2 + *x2);
        y[i] = (int8_t)tfl_clamp(tfl_add(tfl_rq(prod, &ch, general), zp), lo, hi);
    }
}

static __attribute__((noinline)) void tfl_bin_short(int8_t *y, const int8_t *x1, int32_t s1, const int8_t *x2,
                                                    int32_t s2, uint32_t n, const tfl_bin_t *b)
{
    tfl_bin_row(y, x1, s1, x2, s2, n, b, 0);
}

static __attribute__((noinline)) void tfl_bin_long(int8_t *y, const int8_t *x1, int32_t s1, const int8_t *x2,
                                                   int32_t s2, uint32_t n, const tfl_bin_t *b)
{
    tfl_bin_row(y, x1, s1, x2, s2, n, b, 1);
}

int arena_k_tfl_binary(const arena_ctx_t *c)
{
    const arena_attrs_t *a = c->op->attrs;
    const arena_tensor_t *at = arena_in(c, 0), *bt = arena_in(c, 1), *yt = arena_out(c, 0), *tt = arena_in(c, 2);
    const int8_t *x1, *x2;
    int8_t *y;
    const int32_t *p = a->ints;
    int32_t idx[ARENA_MAX_RANK] = {0};
    uint32_t r, n, rows;
    int32_t s1, s2;
    int d;
    tfl_bin_t b;
    void (*row)(int8_t *, const int8_t *, int32_t, const int8_t *, int32_t, uint32_t, const tfl_bin_t *);
    if (at == NULL || bt == NULL || yt == NULL || a->n_ints < 13 || at->dtype != ARENA_DT_INT8
        || bt->dtype != ARENA_DT_INT8 || yt->dtype != ARENA_DT_INT8 || at->rank > yt->rank || bt->rank > yt->rank
        || (p[0] == 0 && (tt == NULL || tt->dtype != ARENA_DT_INT32 || tt->elements != 512u))) {
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
    b.t1 = p[0] == 0 ? (const int32_t *)arena_in_data(c, 2) : NULL;
    b.t2 = b.t1 != NULL ? b.t1 + 256 : NULL;
    b.o1 = p[1], b.o2 = p[2], b.zp = p[3], b.lo = p[11], b.hi = p[12];
    b.ch = tfl_chan(p[9], p[10], 0);
    row = b.ch.rs >= 0 ? tfl_bin_short : tfl_bin_long;
    if (at->elements == yt->elements && bt->elements == yt->elements) { /* no broadcast: one row */
        row(y, x1, 1, x2, 1, yt->elements, &b);
        return ARENA_OK;
    }
    n = yt->rank > 0 ? (uint32_t)yt->shape[yt->rank - 1] : 1u;
    s1 = at->rank > 0 && at->shape[at->rank - 1] != 1 ? 1 : 0;
    s2 = bt->rank > 0 && bt->shape[bt->rank - 1] != 1 ? 1 : 0;
    rows = n > 0u ? yt->elements / n : 0u;
    for (r = 0; r < rows; ++r, y += n) {
        row(y, x1 + bcast_index(at, yt, idx), s1, x2 + bcast_index(bt, yt, idx), s2, n, &b);
        for (d = yt->rank - 2; d >= 0; --d) { /* the next row's multi-index, row-major */
            if (++idx[d] < yt->shape[d]) {
                break;
            }
            idx[d] = 0;
        }
    }
    return ARENA_OK;
}
