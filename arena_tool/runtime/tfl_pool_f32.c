/* TFLite's AVERAGE_POOL_2D and MAX_POOL_2D on float32, NHWC, as TFLite Micro's reference kernels compute
 * them (reference_ops::AveragePool, MaxPool): per output the float sum of the taps inside the input (the
 * padding is not counted) in row then column order, divided by their count, or their maximum (from the
 * lowest float); clamped to the fused activation's range.
 *
 * Input 0 x [N, H, W, C]; output 0 y [N, OH, OW, C], float32. Attributes: kernel, strides, pads (top,
 * left, ...); floats: act_min, act_max. */
#include "support_tfl.h"

static int tfl_pool_f32(const arena_ctx_t *c, int max)
{
    const arena_attrs_t *a = c->op->attrs;
    const arena_tensor_t *xt = arena_in(c, 0), *yt = arena_out(c, 0);
    const float *x;
    float *y, lo, hi;
    int32_t N, H, W, C, OH, OW, b, oy, ox, ch;
    if (xt == NULL || yt == NULL || a->n_floats < 2 || xt->rank != 4 || yt->rank != 4
        || xt->dtype != ARENA_DT_FLOAT32 || yt->dtype != ARENA_DT_FLOAT32) {
        return ARENA_ERR_UNSUPPORTED;
    }
    N = xt->shape[0], H = xt->shape[1], W = xt->shape[2], C = xt->shape[3];
    OH = yt->shape[1], OW = yt->shape[2];
    if (yt->shape[0] != N || yt->shape[3] != C) {
        return ARENA_ERR_SHAPE;
    }
    lo = a->floats[0], hi = a->floats[1];
    x = (const float *)arena_in_data(c, 0);
    y = (float *)arena_out_data(c, 0);
    for (b = 0; b < N; ++b) {
        for (oy = 0; oy < OH; ++oy) {
            int32_t iy0 = oy * a->strides[0] - a->pads[0];
            int32_t ky0 = iy0 < 0 ? -iy0 : 0, ky1 = H - iy0 < a->kernel[0] ? H - iy0 : a->kernel[0];
            for (ox = 0; ox < OW; ++ox) {
                int32_t ix0 = ox * a->strides[1] - a->pads[1];
                int32_t kx0 = ix0 < 0 ? -ix0 : 0, kx1 = W - ix0 < a->kernel[1] ? W - ix0 : a->kernel[1];
                for (ch = 0; ch < C; ++ch) {
                    float acc = max ? -3.40282347e+38f : 0.0f, v;
                    int32_t count = 0, ky, kx;
                    for (ky = ky0; ky < ky1; ++ky) {
                        for (kx = kx0; kx < kx1; ++kx) {
                            v = x[(((size_t)b * H + iy0 + ky) * W + ix0 + kx) * C + ch];
                            acc = !max ? acc + v : acc < v ? v : acc; /* std::max(max, v) */
                            ++count;
                        }
                    }
                    if (!max) {
                        acc = acc / (float)count;
                    }
                    acc = acc < lo ? lo : acc;
                    y[(((size_t)b * OH + oy) * OW + ox) * C + ch] = hi < acc ? hi : acc;
                }
            }
        }
    }
    return ARENA_OK;
}

int arena_k_tfl_average_pool_f32(const arena_ctx_t *c)
{
    return tfl_pool_f32(c, 0);
}

int arena_k_tfl_max_pool_f32(const arena_ctx_t *c)
{
    return tfl_pool_f32(c, 1);
}
