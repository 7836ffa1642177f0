/* TFLite's AVERAGE_POOL_2D and MAX_POOL_2D on int8, NHWC, as TFLite Micro's reference kernels compute
 * them (reference_integer_ops::AveragePool, MaxPool): per output the sum of the taps inside the input
 * (the padding is not counted), divided by their count rounding half away from zero, or their
 * maximum; clamped to the fused activation's range; input and output share their quantization, so
 * nothing is requantized.
 *
 * Fast path, the same integers: per output pixel its window clipped to the input once, then 4
 * channels a step, one 32-bit load per tap: a maximum by SSUB8/SEL (every byte at once), a sum as two
 * pairs of halfwords by SXTAB16 (exact while a window has at most 256 taps: |sum| <= 128 x 256; a
 * larger one sums in 32 bits); the channels past the last multiple of 4 one at a time.
 *
 * Input 0 x [N, H, W, C] int8; output 0 y [N, OH, OW, C] int8. Attributes: kernel, strides, pads
 * (top, left, ...); ints: act_min, act_max. */
#include "support_int8.h"
#include "support_tfl.h"

/* One output's code from its channel's sum (average) or maximum. */
static inline int8_t pool_code(int32_t acc, int32_t count, int max, int32_t lo, int32_t hi)
{
    if (!max) {
        acc = acc > 0 ? (acc + count / 2) / count : (acc - count / 2) / count;
    }
    return (int8_t)tfl_clamp(acc, lo, hi);
}

/* Channels [c0, C) of one output pixel one at a time: the window's rows r (rows row bytes apart, kw taps
 * of C bytes each). */
static inline void pool_rest(int8_t *y, const int8_t *r, int32_t c0, int32_t C, int32_t kh, int32_t kw, int32_t row,
                             int max, int32_t lo, int32_t hi)
{
    int32_t ch, ky, kx, count = kh * kw;
    for (ch = c0; ch < C; ++ch) {
        const int8_t *p = r + ch;
        int32_t acc = max ? -128 : 0;
        for (ky = 0; ky < kh; ++ky, p += row) {
            const int8_t *q = p;
            for (kx = 0; kx < kw; ++kx, q += C) {
                int32_t v = *q;
                acc = max ? (v > acc ? v : acc) : acc + v;
            }
        }
        y[ch] = pool_code(acc, count, max, lo, hi);
    }
}

#if defined(__ARM_FEATURE_DSP)
/* 4 channels a step while a window's halfword sums cannot overflow (count <= 256), then pool_rest. */
static __attribute__((noinline)) void pool_pixel(int8_t *y, const int8_t *r, int32_t C, int32_t kh, int32_t kw,
                                                 int32_t row, int max, int32_t lo, int32_t hi)
{
    int32_t c = 0, ky, kx, count = kh * kw;
    if (max) {
        for (; c + 4 <= C; c += 4) {
            const int8_t *p = r + c;
            uint32_t m = 0x80808080u, v, t;
            for (ky = 0; ky < kh; ++ky, p += row) {
                const int8_t *q = p;
                for (kx = 0; kx < kw; ++kx, q += C) {
                    v = ld4(q);
                    __asm__("ssub8 %0, %1, %2\n\tsel %0, %1, %2" : "=&r"(t) : "r"(v), "r"(m) : "cc"); /* GE: v >= m */
                    m = t;
                }
            }
            y[c] = (int8_t)tfl_clamp((int8_t)m, lo, hi);
            y[c + 1] = (int8_t)tfl_clamp((int8_t)(m >> 8), lo, hi);
            y[c + 2] = (int8_t)tfl_clamp((int8_t)(m >> 16), lo, hi);
            y[c + 3] = (int8_t)tfl_clamp((int8_t)(m >> 24), lo, hi);
        }
    } else if (count <= 256) {
        for (; c + 4 <= C; c += 4) {
            const int8_t *p = r + c;
            uint32_t s02 = 0u, s13 = 0u, v;
            for (ky = 0; ky < kh; ++ky, p += row) {
                const int8_t *q = p;
                for (kx = 0; kx < kw; ++kx, q += C) {
                    v = ld4(q);
                    s02 = LO16(v, s02);
                    s13 = HI16(v, s13);
                }
            }
            y[c] = pool_code((int16_t)s02, count, 0, lo, hi);
            y[c + 1] = pool_code((int16_t)s13, count, 0, lo, hi);
            y[c + 2] = pool_code((int16_t)(s02 >> 16), count, 0, lo, hi);
            y[c + 3] = pool_code((int16_t)(s13 >> 16), count, 0, lo, hi);
        }
    }
    pool_rest(y, r, c, C, kh, kw, row, max, lo, hi);
}
#else
static __attribute__((noinline)) void pool_pixel(int8_t *y, const int8_t *r, int32_t C, int32_t kh, int32_t kw,
                                                 int32_t row, int max, int32_t lo, int32_t hi)
{
    pool_rest(y, r, 0, C, kh, kw, row, max, lo, hi);
}
#endif

static int tfl_pool(const arena_ctx_t *c, int max)
{
    const arena_attrs_t *a = c->op->attrs;
    const arena_tensor_t *xt = arena_in(c, 0), *yt = arena_out(c, 0);
    const int8_t *x;
    int8_t *y;
    int32_t N, H, W, C, OH, OW, b, oy, ox, lo, hi;
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
        const int8_t *xb = x + (size_t)b * (size_t)H * (size_t)W * (size_t)C;
        for (oy = 0; oy < OH; ++oy) {
            int32_t iy0 = oy * a->strides[0] - a->pads[0];
            int32_t ky0 = iy0 < 0 ? -iy0 : 0, ky1 = H - iy0 < a->kernel[0] ? H - iy0 : a->kernel[0];
            for (ox = 0; ox < OW; ++ox, y += C) {
                int32_t ix0 = ox * a->strides[1] - a->pads[1];
                int32_t kx0 = ix0 < 0 ? -ix0 : 0, kx1 = W - ix0 < a->kernel[1] ? W - ix0 : a->kernel[1];
                if (ky1 <= ky0 || kx1 <= kx0) {
                    if (!max) {
                        return ARENA_ERR_SHAPE; /* an empty window: TFLite fails it too */
                    }
                    memset(y, (int8_t)tfl_clamp(-128, lo, hi), (size_t)C);
                    continue;
                }
                pool_pixel(y, xb + ((size_t)(iy0 + ky0) * (size_t)W + (size_t)(ix0 + kx0)) * (size_t)C, C,
                           ky1 - ky0, kx1 - kx0, W * C, max, lo, hi);
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
