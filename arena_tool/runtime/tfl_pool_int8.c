/* TFLite's AVERAGE_POOL_2D and MAX_POOL_2D on int8, NHWC, as TFLite Micro's reference kernels compute
 * them (reference_integer_ops::AveragePool, MaxPool): per output the sum of the taps inside the input
 * (the padding is not counted), divided by their count rounding half away from zero, or their
 * maximum; clamped to the fused activation's range; input and output share their quantization, so
 * nothing is requantized.
 *
 * Input 0 x [N, H, W, C] int8; output 0 y [N, OH, OW, C] int8. Attributes: kernel, strides, pads
 * (top, left, ...); ints: act_min, act_max. */
#include "support_tfl.h"

static int tfl_pool(const arena_ctx_t *c, int max)
{
    const arena_attrs_t *a = c->op->attrs;
    const arena_tensor_t *xt = arena_in(c, 0), *yt = arena_out(c, 0);
    const int8_t *x;
    int8_t *y;
    int32_t N, H, W, C, OH, OW, b, oy, ox, ch, lo, hi;
    if (xt == NULL || yt == NULL || a->n_ints < 2 || xt->rank != 4 || yt->rank != 4 || xt->dtype != ARENA_DT_INT8
        || yt->dtype != ARENA_DT_INT8) {
        return ARENA_ERR_UNSUPPORTED;
    }
    N = xt->shape[0], H = xt->shape[1], W = xt->shape[2], C = xt->shape[3];
    OH = yt->shape[1], OW = yt->shape[2];
    if (yt->shape[0] != N || yt->shape[3] != C) {
        return ARENA_ERR_SHAPE;
    }
    lo = a->ints[0], hi = a->ints[1];
    x = (const int8_t *)arena_in_data(c, 0);
    y = (int8_t *)arena_out_data(c, 0);
    for (b = 0; b < N; ++b) {
        for (oy = 0; oy < OH; ++oy) {
            int32_t iy0 = oy * a->strides[0] - a->pads[0];
            int32_t ky0 = iy0 < 0 ? -iy0 : 0, ky1 = H - iy0 < a->kernel[0] ? H - iy0 : a->kernel[0];
            for (ox = 0; ox < OW; ++ox) {
                int32_t ix0 = ox * a->strides[1] - a->pads[1];
                int32_t kx0 = ix0 < 0 ? -ix0 : 0, kx1 = W - ix0 < a->kernel[1] ? W - ix0 : a->kernel[1];
                for (ch = 0; ch < C; ++ch) {
                    int32_t acc = max ? -128 : 0, count = 0, ky, kx;
                    for (ky = ky0; ky < ky1; ++ky) {
                        for (kx = kx0; kx < kx1; ++kx) {
                            int32_t v = x[(((size_t)b * H + iy0 + ky) * W + ix0 + kx) * C + ch];
                            acc = !max ? acc + v : v > acc ? v : acc;
                            ++count;
                        }
                    }
                    if (count == 0 && !max) {
                        return ARENA_ERR_SHAPE; /* TFLite fails such a window too */
                    }
                    if (!max) {
                        acc = acc > 0 ? (acc + count / 2) / count : (acc - count / 2) / count;
                    }
                    y[(((size_t)b * OH + oy) * OW + ox) * C + ch] = (int8_t)tfl_clamp(acc, lo, hi);
                }
            }
        }
    }
    return ARENA_OK;
}

int arena_k_tfl_average_pool(const arena_ctx_t *c)
{
    return tfl_pool(c, 0);
}

int arena_k_tfl_max_pool(const arena_ctx_t *c)
{
    return tfl_pool(c, 1);
}
