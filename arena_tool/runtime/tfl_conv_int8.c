/* TFLite's CONV_2D and DEPTHWISE_CONV_2D on int8, NHWC, as TFLite Micro's reference kernels
 * compute them (reference_integer_ops::ConvPerChannel, DepthwiseConvPerChannel): per output
 * the sum of w * (x - x_zp) over the taps inside the input (the padding adds nothing), plus the
 * bias, requantized per output channel by TFLite's fixed-point multiplier (support_tfl.h), plus
 * the output zero point, clamped to the fused activation's range.
 *
 * Fast paths, the same integers: a conv (one group) is a GEMM of weight rows (OHWI: a row is a
 * pixel's im2col column in NHWC order) by columns, 2 channels x 2 pixels a step through
 * conv_int8.c's arena_i8_dot2x2 (SXTAB16/SMLAD on DSP cores); a 1x1 stride-1 unpadded conv's
 * columns are the input's pixels themselves, any other conv's are copied TFL_COL_BYTES at a time
 * to the stack. A depthwise conv with depth multiplier 1 runs 4 channels a step (one 32-bit load
 * of 4 channels' inputs, SXTAB16 into two halfword pairs, SMLABB/SMLATT against the channels'
 * taps unpacked once per 4 channels), the taps outside the input skipped per output pixel. Every
 * output is requantized by tfl_rq (one SMLAL where the shift is a right shift).
 *
 * Inputs: 0 x [N, H, W, C] int8, 1 w (conv [M, KH, KW, C / groups]; depthwise [1, KH, KW, M],
 * M = C * depth multiplier) int8 with zero point 0, 2 bias [M] int32 or absent, 3 the requantization
 * [M, 2] int32 (multiplier, shift) per output channel. Output 0 y [N, OH, OW, M] int8.
 * Attributes: strides, dilations, pads (top, left, ...); ints: x_offset (-x_zp), y_zp, act_min,
 * act_max, depth multiplier (0: a conv). */
#include <string.h>

#include "support_tfl.h"
#include "support_int8.h"

/* Bytes of the stack buffer for a conv's im2col columns: at least one column (KH KW C bytes)
 * must fit, else the reference loop runs. */
#define TFL_COL_BYTES 2048
/* Taps (KH KW) of a depthwise kernel the fast path unpacks per 4 channels. */
#define TFL_DW_TAPS 64

/* What every output of an op shares: the output zero point and the activation's clamp. */
typedef struct {
    int32_t zp, lo, hi;
} tfl_out_t;

static inline __attribute__((always_inline)) int8_t tfl_code(int32_t acc, const tfl_chan_t *ch, const tfl_out_t *o)
{
    return (int8_t)tfl_clamp(tfl_add(tfl_rq(acc, ch), o->zp), o->lo, o->hi);
}

/* Output channels [0, M) of np pixels whose columns (K bytes each) start at col, into y (the
 * first pixel's M outputs; pixels M apart). x_zp: the input's zero point. */
static __attribute__((noinline)) void tfl_gemm(int8_t *y, const int8_t *w, const int32_t *bias, const int32_t *rq,
                                               const int8_t *col, int32_t M, int32_t np, int32_t K, int32_t x_zp,
                                               const tfl_out_t *out)
{
    const tfl_out_t o = *out;
    size_t step = 2u * (size_t)M;
    int32_t m, p, s[4];
    for (m = 0; m + 1 < M; m += 2) {
        const tfl_chan_t c0 = tfl_chan(rq[2 * m], rq[2 * m + 1], bias != NULL ? bias[m] : 0);
        const tfl_chan_t c1 = tfl_chan(rq[2 * m + 2], rq[2 * m + 3], bias != NULL ? bias[m + 1] : 0);
        const int8_t *w0 = w + (size_t)m * (size_t)K, *x = col;
        int8_t *yp = y + m;
        for (p = 0; p + 1 < np; p += 2, x += 2 * K, yp += step) {
            arena_i8_dot2x2(s, w0, x, K, x_zp);
            yp[0] = tfl_code(s[0], &c0, &o);
            yp[M] = tfl_code(s[1], &c0, &o);
            yp[1] = tfl_code(s[2], &c1, &o);
            yp[M + 1] = tfl_code(s[3], &c1, &o);
        }
        if (p < np) {
            arena_i8_dot2x1(s, w0, x, K, x_zp);
            yp[0] = tfl_code(s[0], &c0, &o);
            yp[1] = tfl_code(s[1], &c1, &o);
        }
    }
    if (m < M) {
        const tfl_chan_t c0 = tfl_chan(rq[2 * m], rq[2 * m + 1], bias != NULL ? bias[m] : 0);
        const int8_t *w0 = w + (size_t)m * (size_t)K;
        for (p = 0; p < np; ++p) {
            y[(size_t)p * (size_t)M + (size_t)m] = tfl_code(dot1x1(w0, col + (size_t)p * (size_t)K, K, x_zp), &c0, &o);
        }
    }
}

/* n bytes from src, a word at a time where unaligned words load (a tap's C channels: memcpy's
 * call costs more than a few bytes). */
static inline void tfl_copy(int8_t *dst, const int8_t *src, int32_t n)
{
    int32_t k = 0;
#if defined(__ARM_FEATURE_UNALIGNED) || !defined(__arm__)
    for (; k + 4 <= n; k += 4) {
        uint32_t v;
        memcpy(&v, src + k, 4);
        memcpy(dst + k, &v, 4);
    }
#endif
    for (; k < n; ++k) {
        dst[k] = src[k];
    }
}

/* The im2col columns of output pixels [p0, p0 + np) of one image (x: its first byte) into col:
 * per pixel KH rows of KW taps of C bytes, taps outside the input x_zp's byte. */
static __attribute__((noinline)) void tfl_im2col(int8_t *col, const int8_t *x, const arena_attrs_t *a,
                                                 const int32_t d[7], int32_t p0, int32_t np, int8_t pad)
{
    int32_t H = d[0], W = d[1], C = d[2], OW = d[3], KH = d[4], KW = d[5], K = d[6];
    int32_t oy = p0 / OW, ox = p0 - oy * OW, p, ky, kx;
    for (p = 0; p < np; ++p) {
        int32_t iy0 = oy * a->strides[0] - a->pads[0], ix0 = ox * a->strides[1] - a->pads[1];
        for (ky = 0; ky < KH; ++ky) {
            int32_t iy = iy0 + ky * a->dilations[0];
            if (iy < 0 || iy >= H) {
                memset(col, pad, (size_t)KW * (size_t)C);
                col += KW * C;
                continue;
            }
            if (a->dilations[1] == 1 && ix0 >= 0 && ix0 + KW <= W) {
                tfl_copy(col, x + ((size_t)iy * (size_t)W + (size_t)ix0) * (size_t)C, KW * C);
                col += KW * C;
                continue;
            }
            for (kx = 0; kx < KW; ++kx, col += C) {
                int32_t ix = ix0 + kx * a->dilations[1];
                if (ix < 0 || ix >= W) {
                    memset(col, pad, (size_t)C);
                } else {
                    tfl_copy(col, x + ((size_t)iy * (size_t)W + (size_t)ix) * (size_t)C, C);
                }
            }
        }
        if (++ox == OW) {
            ox = 0;
            ++oy;
        }
    }
    (void)K;
}

/* A conv of one group as GEMMs: 1 when it ran, 0 when one column does not fit TFL_COL_BYTES. */
static int tfl_conv_gemm(const arena_ctx_t *c, int32_t N, int32_t H, int32_t W, int32_t C, int32_t OH, int32_t OW,
                         int32_t M, int32_t KH, int32_t KW, int32_t x_zp, const tfl_out_t *o)
{
    const arena_attrs_t *a = c->op->attrs;
    const int8_t *x = (const int8_t *)arena_in_data(c, 0), *w = (const int8_t *)arena_in_data(c, 1);
    const int32_t *bias = arena_in(c, 2) != NULL ? (const int32_t *)arena_in_data(c, 2) : NULL;
    const int32_t *rq = (const int32_t *)arena_in_data(c, 3);
    int8_t *y = (int8_t *)arena_out_data(c, 0);
    int8_t col[TFL_COL_BYTES];
    int32_t K = KH * KW * C, ohw = OH * OW, b, p0, chunk, d[7];
    if (KH == 1 && KW == 1 && a->strides[0] == 1 && a->strides[1] == 1 && OH == H && OW == W) {
        for (b = 0; b < N; ++b) { /* the input's pixels are the columns */
            tfl_gemm(y + (size_t)b * (size_t)ohw * (size_t)M, w, bias, rq, x + (size_t)b * (size_t)ohw * (size_t)C, M,
                     ohw, C, x_zp, o);
        }
        return 1;
    }
    if (K > TFL_COL_BYTES) {
        return 0;
    }
    chunk = TFL_COL_BYTES / K;
    d[0] = H, d[1] = W, d[2] = C, d[3] = OW, d[4] = KH, d[5] = KW, d[6] = K;
    for (b = 0; b < N; ++b) {
        const int8_t *xb = x + (size_t)b * (size_t)H * (size_t)W * (size_t)C;
        for (p0 = 0; p0 < ohw; p0 += chunk) {
            int32_t np = ohw - p0 < chunk ? ohw - p0 : chunk;
            tfl_im2col(col, xb, a, d, p0, np, (int8_t)x_zp);
            tfl_gemm(y + ((size_t)b * (size_t)ohw + (size_t)p0) * (size_t)M, w, bias, rq, col, M, np, K, x_zp, o);
        }
    }
    return 1;
}

/* 4 bytes from p (one LDR where unaligned words load). */
static inline uint32_t tfl_ld4(const int8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* Four channels' taps as SMLABB/SMLATT take them: per tap (w0, w2) and (w1, w3) as halfwords. */
static void tfl_dw_taps(uint32_t *wp, const int8_t *w, int32_t taps, int32_t M)
{
    int32_t t;
    for (t = 0; t < taps; ++t, w += M, wp += 2) {
        wp[0] = (uint32_t)(uint16_t)w[0] | (uint32_t)(uint16_t)w[2] << 16;
        wp[1] = (uint32_t)(uint16_t)w[1] | (uint32_t)(uint16_t)w[3] << 16;
    }
}

/* Accumulate one tap of 4 channels: the inputs' word v (channels c .. c + 3), the taps' pairs wp. */
#if defined(__ARM_FEATURE_DSP)
#define DW4_TAP(v, wp, nz)                                                                                          \
    do {                                                                                                            \
        uint32_t x02 = LO16((v), (nz)), x13 = HI16((v), (nz));                                                      \
        a0 = __smlabb((int32_t)x02, (int32_t)(wp)[0], a0);                                                          \
        a2 = __smlatt((int32_t)x02, (int32_t)(wp)[0], a2);                                                          \
        a1 = __smlabb((int32_t)x13, (int32_t)(wp)[1], a1);                                                          \
        a3 = __smlatt((int32_t)x13, (int32_t)(wp)[1], a3);                                                          \
    } while (0)
#else
#define DW4_TAP(v, wp, nz)                                                                                          \
    do {                                                                                                            \
        a0 += ((int32_t)(int8_t)(v) - zp) * (int16_t)(wp)[0];                                                       \
        a2 += ((int32_t)(int8_t)((v) >> 16) - zp) * (int16_t)((wp)[0] >> 16);                                       \
        a1 += ((int32_t)(int8_t)((v) >> 8) - zp) * (int16_t)(wp)[1];                                                \
        a3 += ((int32_t)(int8_t)((v) >> 24) - zp) * (int16_t)((wp)[1] >> 16);                                       \
    } while (0)
#endif

/* Channels [c, c + 4) of a depthwise conv (multiplier 1) over every output pixel of one image:
 * per pixel the taps inside the input (rows [ky0, ky1), columns [kx0, kx1)), a 3-tap row unrolled. */
static __attribute__((noinline)) void tfl_dw4(int8_t *y, const int8_t *x, const uint32_t *wp,
                                              const tfl_chan_t ch[4], const arena_attrs_t *a, const int32_t d[8],
                                              int32_t x_zp, const tfl_out_t *out)
{
    const int32_t H = d[0], W = d[1], C = d[2], OH = d[3], OW = d[4], KH = d[5], KW = d[6];
    const int32_t sh = a->strides[0], sw = a->strides[1], dh = a->dilations[0], dwl = a->dilations[1];
    const int32_t tap_step = dwl * C;
    const tfl_out_t o = *out;
    int32_t oy, ox;
#if defined(__ARM_FEATURE_DSP)
    const uint32_t nz = ((uint32_t)(-x_zp) & 0xFFFFu) * 0x10001u;
#else
    const int32_t zp = x_zp;
#endif
    for (oy = 0; oy < OH; ++oy) {
        int32_t iy0 = oy * sh - a->pads[0], ky0 = 0, ky1 = KH;
        while (ky0 < KH && iy0 + ky0 * dh < 0) {
            ++ky0;
        }
        while (ky1 > ky0 && iy0 + (ky1 - 1) * dh >= H) {
            --ky1;
        }
        for (ox = 0; ox < OW; ++ox) {
            int32_t ix0 = ox * sw - a->pads[1], kx0 = 0, kx1 = KW, ky, kx;
            int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
            int8_t *yp = y + ((size_t)oy * (size_t)OW + (size_t)ox) * (size_t)C;
            while (kx0 < KW && ix0 + kx0 * dwl < 0) {
                ++kx0;
            }
            while (kx1 > kx0 && ix0 + (kx1 - 1) * dwl >= W) {
                --kx1;
            }
            if (kx1 - kx0 == 3) {
                for (ky = ky0; ky < ky1; ++ky) {
                    const int8_t *r = x + ((size_t)(iy0 + ky * dh) * (size_t)W + (size_t)(ix0 + kx0 * dwl)) * (size_t)C;
                    const uint32_t *t = wp + 2 * (ky * KW + kx0);
                    uint32_t v0 = tfl_ld4(r), v1 = tfl_ld4(r + tap_step), v2 = tfl_ld4(r + 2 * tap_step);
                    DW4_TAP(v0, t, nz);
                    DW4_TAP(v1, t + 2, nz);
                    DW4_TAP(v2, t + 4, nz);
                }
            } else {
                for (ky = ky0; ky < ky1; ++ky) {
                    const int8_t *r = x + ((size_t)(iy0 + ky * dh) * (size_t)W + (size_t)(ix0 + kx0 * dwl)) * (size_t)C;
                    const uint32_t *t = wp + 2 * (ky * KW + kx0);
                    for (kx = kx0; kx < kx1; ++kx, r += tap_step, t += 2) {
                        uint32_t v = tfl_ld4(r);
                        DW4_TAP(v, t, nz);
                    }
                }
            }
            yp[0] = tfl_code(a0, &ch[0], &o);
            yp[1] = tfl_code(a1, &ch[1], &o);
            yp[2] = tfl_code(a2, &ch[2], &o);
            yp[3] = tfl_code(a3, &ch[3], &o);
        }
    }
}
#undef DW4_TAP

/* One channel of a depthwise conv (multiplier 1) over every output pixel of one image: the
 * channels past the last multiple of 4, one at a time. */
static __attribute__((noinline)) void tfl_dw1(int8_t *y, const int8_t *x, const int8_t *w, const tfl_chan_t *ch,
                                              const arena_attrs_t *a, const int32_t d[8], int32_t x_zp,
                                              const tfl_out_t *o)
{
    const int32_t H = d[0], W = d[1], C = d[2], OH = d[3], OW = d[4], KH = d[5], KW = d[6];
    int32_t oy, ox, ky, kx;
    for (oy = 0; oy < OH; ++oy) {
        int32_t iy0 = oy * a->strides[0] - a->pads[0];
        for (ox = 0; ox < OW; ++ox) {
            int32_t ix0 = ox * a->strides[1] - a->pads[1], acc = 0;
            for (ky = 0; ky < KH; ++ky) {
                int32_t iy = iy0 + ky * a->dilations[0];
                if (iy < 0 || iy >= H) {
                    continue;
                }
                for (kx = 0; kx < KW; ++kx) {
                    int32_t ix = ix0 + kx * a->dilations[1];
                    if (ix >= 0 && ix < W) {
                        acc += (int32_t)w[(ky * KW + kx) * C] * ((int32_t)x[((size_t)iy * (size_t)W + (size_t)ix) * (size_t)C] - x_zp);
                    }
                }
            }
            y[((size_t)oy * (size_t)OW + (size_t)ox) * (size_t)C] = tfl_code(acc, ch, o);
        }
    }
}

/* A depthwise conv with depth multiplier 1 (M = C): 4 channels a step (tfl_dw4), then the rest
 * (tfl_dw1). 0 when its kernel has more than TFL_DW_TAPS taps. */
static int tfl_depthwise(const arena_ctx_t *c, int32_t N, const int32_t d[8], int32_t x_zp, const tfl_out_t *o)
{
    const arena_attrs_t *a = c->op->attrs;
    const int8_t *x = (const int8_t *)arena_in_data(c, 0), *w = (const int8_t *)arena_in_data(c, 1);
    const int32_t *bias = arena_in(c, 2) != NULL ? (const int32_t *)arena_in_data(c, 2) : NULL;
    const int32_t *rq = (const int32_t *)arena_in_data(c, 3);
    int8_t *y = (int8_t *)arena_out_data(c, 0);
    const int32_t C = d[2], taps = d[5] * d[6];
    size_t xs = (size_t)d[0] * (size_t)d[1] * (size_t)C, ys = (size_t)d[3] * (size_t)d[4] * (size_t)C;
    uint32_t wp[2 * TFL_DW_TAPS];
    tfl_chan_t ch[4];
    int32_t b, m, i;
    if (taps > TFL_DW_TAPS) {
        return 0;
    }
    for (m = 0; m + 4 <= C; m += 4) {
        tfl_dw_taps(wp, w + m, taps, C);
        for (i = 0; i < 4; ++i) {
            ch[i] = tfl_chan(rq[2 * (m + i)], rq[2 * (m + i) + 1], bias != NULL ? bias[m + i] : 0);
        }
        for (b = 0; b < N; ++b) {
            tfl_dw4(y + b * ys + (size_t)m, x + b * xs + (size_t)m, wp, ch, a, d, x_zp, o);
        }
    }
    for (; m < C; ++m) {
        ch[0] = tfl_chan(rq[2 * m], rq[2 * m + 1], bias != NULL ? bias[m] : 0);
        for (b = 0; b < N; ++b) {
            tfl_dw1(y + b * ys + (size_t)m, x + b * xs + (size_t)m, w + m, ch, a, d, x_zp, o);
        }
    }
    return 1;
}


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
    {
        tfl_out_t o;
        o.zp = y_zp, o.lo = lo, o.hi = hi;
        if (dm == 0 && groups == 1 && tfl_conv_gemm(c, N, H, W, C, OH, OW, M, KH, KW, -x_off, &o)) {
            return ARENA_OK;
        }
        if (dm == 1) {
            int32_t d[8];
            d[0] = H, d[1] = W, d[2] = C, d[3] = OH, d[4] = OW, d[5] = KH, d[6] = KW, d[7] = 0;
            if (tfl_depthwise(c, N, d, -x_off, &o)) {
                return ARENA_OK;
            }
        }
    }
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
