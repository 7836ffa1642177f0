/* TFLite's CONV_2D and DEPTHWISE_CONV_2D on int8, NHWC, as TFLite Micro's reference kernels
 * compute them (reference_integer_ops::ConvPerChannel, DepthwiseConvPerChannel): per output
 * the sum of w * (x - x_zp) over the taps inside the input (the padding adds nothing), plus the
 * bias, requantized per output channel by TFLite's fixed-point multiplier (support_tfl.h), plus
 * the output zero point, clamped to the fused activation's range.
 *
 * Inputs: 0 x [N, H, W, C] int8, 1 w (conv [M, KH, KW, C / groups]; depthwise [1, KH, KW, M],
 * M = C * depth multiplier) int8 with zero point 0, 2 bias [M] int32 or absent, 3 the requantization
 * [M, 2] int32 (multiplier, shift) per output channel. Output 0 y [N, OH, OW, M] int8.
 * Attributes: strides, dilations, pads (top, left, ...); ints: x_offset (-x_zp), y_zp, act_min,
 * act_max, depth multiplier (0: a conv). */
#include "support_tfl.h"

int arena_k_tfl_conv(const arena_ctx_t *c)
{
    const arena_attrs_t *a = c->op->attrs;
    const arena_tensor_t *xt = arena_in(c, 0), *wt = arena_in(c, 1), *bt = arena_in(c, 2), *rt = arena_in(c, 3);
    const arena_tensor_t *yt = arena_out(c, 0);
    const int8_t *x, *w;
    const int32_t *bias, *rq;
    int8_t *y;
    int32_t N, H, W, C, OH, OW, M, KH, KW, WC, dm, groups, per_group, x_off, y_zp, lo, hi;
    int32_t b, oy, ox, m, ky, kx, ci;
    if (xt == NULL || wt == NULL || rt == NULL || yt == NULL || a->n_ints < 5 || xt->rank != 4 || wt->rank != 4
        || yt->rank != 4 || xt->dtype != ARENA_DT_INT8 || wt->dtype != ARENA_DT_INT8 || yt->dtype != ARENA_DT_INT8
        || rt->dtype != ARENA_DT_INT32) {
        return ARENA_ERR_UNSUPPORTED;
    }
    N = xt->shape[0], H = xt->shape[1], W = xt->shape[2], C = xt->shape[3];
    OH = yt->shape[1], OW = yt->shape[2], M = yt->shape[3];
    KH = wt->shape[1], KW = wt->shape[2];
    x_off = a->ints[0], y_zp = a->ints[1], lo = a->ints[2], hi = a->ints[3], dm = a->ints[4];
    WC = wt->shape[3];
    if (dm > 0) { /* depthwise: one filter plane per output channel */
        groups = C, per_group = dm;
        if (wt->shape[0] != 1 || WC != M || M != C * dm) {
            return ARENA_ERR_SHAPE;
        }
        WC = 1;
    } else {
        if (WC <= 0 || C % WC != 0 || wt->shape[0] != M) {
            return ARENA_ERR_SHAPE;
        }
        groups = C / WC, per_group = M / groups;
        if (per_group * groups != M) {
            return ARENA_ERR_SHAPE;
        }
    }
    if (yt->shape[0] != N || rt->elements != 2u * (uint32_t)M || (bt != NULL && bt->elements != (uint32_t)M)) {
        return ARENA_ERR_SHAPE;
    }
    x = (const int8_t *)arena_in_data(c, 0);
    w = (const int8_t *)arena_in_data(c, 1);
    bias = bt != NULL ? (const int32_t *)arena_in_data(c, 2) : NULL;
    rq = (const int32_t *)arena_in_data(c, 3);
    y = (int8_t *)arena_out_data(c, 0);
    for (b = 0; b < N; ++b) {
        for (oy = 0; oy < OH; ++oy) {
            int32_t iy0 = oy * a->strides[0] - a->pads[0];
            for (ox = 0; ox < OW; ++ox) {
                int32_t ix0 = ox * a->strides[1] - a->pads[1];
                for (m = 0; m < M; ++m) {
                    int32_t g = m / per_group, acc = 0;
                    for (ky = 0; ky < KH; ++ky) {
                        int32_t iy = iy0 + a->dilations[0] * ky;
                        if (iy < 0 || iy >= H) {
                            continue;
                        }
                        for (kx = 0; kx < KW; ++kx) {
                            int32_t ix = ix0 + a->dilations[1] * kx;
                            const int8_t *xp;
                            if (ix < 0 || ix >= W) {
                                continue;
                            }
                            xp = x + (((size_t)b * H + iy) * W + ix) * C + (size_t)g * WC;
                            if (dm > 0) {
                                acc += (int32_t)w[((size_t)ky * KW + kx) * M + m] * ((int32_t)xp[0] + x_off);
                            } else {
                                const int8_t *wp = w + (((size_t)m * KH + ky) * KW + kx) * WC;
                                for (ci = 0; ci < WC; ++ci) {
                                    acc += (int32_t)wp[ci] * ((int32_t)xp[ci] + x_off);
                                }
                            }
                        }
                    }
                    if (bias != NULL) {
                        acc = tfl_add(acc, bias[m]);
                    }
                    acc = tfl_add(tfl_mbqm(acc, rq[2 * m], rq[2 * m + 1]), y_zp);
                    y[(((size_t)b * OH + oy) * OW + ox) * M + m] = (int8_t)tfl_clamp(acc, lo, hi);
                }
            }
        }
    }
    return ARENA_OK;
}
