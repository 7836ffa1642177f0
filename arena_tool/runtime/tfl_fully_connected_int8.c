/* TFLite's FULLY_CONNECTED on int8, as TFLite Micro's reference kernel computes it
 * (reference_integer_ops::FullyConnected, per tensor or per channel): per batch row b and output
 * n, sum over k of (w[n, k] + w_offset) * (x[b, k] + x_offset), plus the bias, requantized by
 * TFLite's fixed-point multiplier of channel n (support_tfl.h), plus the output zero point, clamped.
 *
 * Inputs: 0 x int8, read as [B, K] (B * K elements), 1 w [M, K] int8, 2 bias [M] int32 or absent,
 * 3 the requantization [M, 2] int32 (multiplier, shift; one row per output, equal rows for a
 * per-tensor model). Output 0 y int8, B * M elements. ints: x_offset, w_offset, y_zp, act_min, act_max.
 *
 * Fast path, the same integers: four outputs a step through support_int8.h's dot4x1
 * (fully_connected_int8.c's arena_i8_dot4 on DSP cores: the input row unpacked once for four weight
 * rows), the last one to three by arena_i8_dot2x1 and dot1x1, each requantized by tfl_rq. A weight
 * zero point (TFLM runs one though TFLite's int8 weights have none) adds w_offset times the row's
 * sum of x + x_offset to every output's bias, the sum taken once per row (int32 wraparound, as the
 * reference's sum of products wraps alike: tfl_rq adds the bias wrapping too). */
#include "support_int8.h"
#include "support_tfl.h"

/* Row x (K bytes, zero point x_zp) against the M weight rows into y[0 .. M). */
static __attribute__((noinline)) void tfl_fc_row(int8_t *y, const int8_t *x, const int8_t *w, const int32_t *bias,
                                                 const int32_t *rq, int32_t M, int32_t K, int32_t x_zp, int32_t y_zp,
                                                 int32_t lo, int32_t hi, int32_t w_off)
{
    int32_t n, i, j, s[4], extra = 0;
    if (w_off != 0) {
        uint32_t sx = 0u;
        for (i = 0; i < K; ++i) {
            sx += (uint32_t)((int32_t)x[i] - x_zp);
        }
        extra = (int32_t)(sx * (uint32_t)w_off);
    }
    for (n = 0; n + 4 <= M; n += 4) {
        dot4x1(s, w + (size_t)n * (size_t)K, x, K, x_zp);
        for (i = 0; i < 4; ++i) {
            const tfl_chan_t ch = tfl_chan(rq[2 * (n + i)], rq[2 * (n + i) + 1],
                                           tfl_add(bias != NULL ? bias[n + i] : 0, extra));
            y[n + i] = (int8_t)tfl_clamp(tfl_add(tfl_rq(s[i], &ch, 1), y_zp), lo, hi);
        }
    }
    for (; n < M; n += i) {
        const int8_t *wn = w + (size_t)n * (size_t)K;
        if (M - n >= 2) {
            arena_i8_dot2x1(s, wn, x, K, x_zp);
            i = 2;
        } else {
            s[0] = dot1x1(wn, x, K, x_zp);
            i = 1;
        }
        for (j = 0; j < i; ++j) {
            const tfl_chan_t ch = tfl_chan(rq[2 * (n + j)], rq[2 * (n + j) + 1],
                                           tfl_add(bias != NULL ? bias[n + j] : 0, extra));
            y[n + j] = (int8_t)tfl_clamp(tfl_add(tfl_rq(s[j], &ch, 1), y_zp), lo, hi);
        }
    }
}

int arena_k_tfl_fully_connected(const arena_ctx_t *c)
{
    const arena_attrs_t *a = c->op->attrs;
    const arena_tensor_t *xt = arena_in(c, 0), *wt = arena_in(c, 1), *bt = arena_in(c, 2), *rt = arena_in(c, 3);
    const arena_tensor_t *yt = arena_out(c, 0);
    const int8_t *x, *w;
    const int32_t *bias, *rq;
    int8_t *y;
    int32_t M, K, B, b, x_off, w_off, y_zp, lo, hi;
    if (xt == NULL || wt == NULL || rt == NULL || yt == NULL || a->n_ints < 5 || wt->rank != 2
        || xt->dtype != ARENA_DT_INT8 || wt->dtype != ARENA_DT_INT8 || yt->dtype != ARENA_DT_INT8
        || rt->dtype != ARENA_DT_INT32) {
        return ARENA_ERR_UNSUPPORTED;
    }
    M = wt->shape[0], K = wt->shape[1];
    if (M <= 0 || K <= 0 || yt->elements % (uint32_t)M != 0u) {
        return ARENA_ERR_SHAPE;
    }
    B = (int32_t)(yt->elements / (uint32_t)M);
    if (xt->elements != (uint32_t)B * (uint32_t)K || rt->elements != 2u * (uint32_t)M
        || (bt != NULL && bt->elements != (uint32_t)M)) {
        return ARENA_ERR_SHAPE;
    }
    x_off = a->ints[0], w_off = a->ints[1], y_zp = a->ints[2], lo = a->ints[3], hi = a->ints[4];
    x = (const int8_t *)arena_in_data(c, 0);
    w = (const int8_t *)arena_in_data(c, 1);
    bias = bt != NULL ? (const int32_t *)arena_in_data(c, 2) : NULL;
    rq = (const int32_t *)arena_in_data(c, 3);
    y = (int8_t *)arena_out_data(c, 0);
    for (b = 0; b < B; ++b) {
        tfl_fc_row(y + (size_t)b * (size_t)M, x + (size_t)b * (size_t)K, w, bias, rq, M, K, -x_off, y_zp, lo, hi,
                   w_off);
    }
    return ARENA_OK;
}
