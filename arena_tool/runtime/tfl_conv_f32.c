/* TFLite's CONV_2D and DEPTHWISE_CONV_2D on float32, NHWC, as TFLite Micro's reference kernels compute
 * them (reference_ops::Conv, DepthwiseConv): per output a float sum from 0 of x * w over the taps inside
 * the input, in TFLite's order (filter row, column, then input channel), plus the bias (0 when absent),
 * clamped to the fused activation's range. The same order and the same float operations, so the same
 * bits (C99 builds do not contract a * b + c into one fused multiply-add).
 *
 * Inputs: 0 x [N, H, W, C], 1 w (conv [M, KH, KW, C / groups]; depthwise [1, KH, KW, M], M = C * depth
 * multiplier), 2 bias [M] or absent. Output 0 y [N, OH, OW, M]. Attributes: strides, dilations, pads
 * (top, left, ...); ints: 0, 0, 0, 0, depth multiplier (0: a conv); floats: act_min, act_max. */
#include "support_tfl.h"

int arena_k_tfl_conv_f32(const arena_ctx_t *c)
{
    const arena_attrs_t *a = c->op->attrs;
    const arena_tensor_t *xt = arena_in(c, 0), *wt = arena_in(c, 1), *bt = arena_in(c, 2), *yt = arena_out(c, 0);
    const float *x, *w, *bias;
    float *y, lo, hi;
    int32_t N, H, W, C, OH, OW, M, KH, KW, WC, dm, per_group;
    int32_t b, oy, ox, m, ky, kx, ci;
    if (xt == NULL || wt == NULL || yt == NULL || a->n_ints < 5 || a->n_floats < 2 || xt->rank != 4
        || wt->rank != 4 || yt->rank != 4 || xt->dtype != ARENA_DT_FLOAT32 || wt->dtype != ARENA_DT_FLOAT32
        || yt->dtype != ARENA_DT_FLOAT32 || (bt != NULL && bt->dtype != ARENA_DT_FLOAT32)) {
        return ARENA_ERR_UNSUPPORTED;
    }
    N = xt->shape[0], H = xt->shape[1], W = xt->shape[2], C = xt->shape[3];
    OH = yt->shape[1], OW = yt->shape[2], M = yt->shape[3];
    KH = wt->shape[1], KW = wt->shape[2], WC = wt->shape[3];
    dm = a->ints[4], lo = a->floats[0], hi = a->floats[1];
    if (dm > 0) {
        if (wt->shape[0] != 1 || WC != M || M != C * dm) {
            return ARENA_ERR_SHAPE;
        }
        per_group = dm, WC = 1;
    } else {
        if (WC <= 0 || C % WC != 0 || wt->shape[0] != M || M % (C / WC) != 0) {
            return ARENA_ERR_SHAPE;
        }
        per_group = M / (C / WC);
    }
    if (yt->shape[0] != N || (bt != NULL && bt->elements != (uint32_t)M)) {
        return ARENA_ERR_SHAPE;
    }
    x = (const float *)arena_in_data(c, 0);
    w = (const float *)arena_in_data(c, 1);
    bias = bt != NULL ? (const float *)arena_in_data(c, 2) : NULL;
    y = (float *)arena_out_data(c, 0);
    for (b = 0; b < N; ++b) {
        for (oy = 0; oy < OH; ++oy) {
            int32_t iy0 = oy * a->strides[0] - a->pads[0];
            for (ox = 0; ox < OW; ++ox) {
                int32_t ix0 = ox * a->strides[1] - a->pads[1];
                for (m = 0; m < M; ++m) {
                    int32_t g = m / per_group;
                    float acc = 0.0f, v;
                    for (ky = 0; ky < KH; ++ky) {
                        int32_t iy = iy0 + a->dilations[0] * ky;
                        if (iy < 0 || iy >= H) {
                            continue;
                        }
                        for (kx = 0; kx < KW; ++kx) {
                            int32_t ix = ix0 + a->dilations[1] * kx;
                            const float *xp;
                            if (ix < 0 || ix >= W) {
                                continue;
                            }
                            xp = x + (((size_t)b * H + iy) * W + ix) * C + (size_t)g * WC;
                            if (dm > 0) {
                                acc += xp[0] * w[((size_t)ky * KW + kx) * M + m];
                            } else {
                                const float *wp = w + (((size_t)m * KH + ky) * KW + kx) * WC;
                                for (ci = 0; ci < WC; ++ci) {
                                    acc += xp[ci] * wp[ci];
                                }
                            }
                        }
                    }
                    v = acc + (bias != NULL ? bias[m] : 0.0f);
                    v = v < lo ? lo : v; /* std::min(std::max(v, lo), hi), NaN passed through as TFLite does */
                    y[(((size_t)b * OH + oy) * OW + ox) * M + m] = hi < v ? hi : v;
                }
            }
        }
    }
    return ARENA_OK;
}
