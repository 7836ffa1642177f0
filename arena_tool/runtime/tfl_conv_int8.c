/* TFLite's CONV_2D and DEPTHWISE_CONV_2D on int8, NHWC, as TFLite Micro's reference kernels
 * compute them (reference_integer_ops::ConvPerChannel, DepthwiseConvPerChannel): per output
 * the sum of w * (x - x_zp) over the taps inside the input (the padding adds nothing), plus the
 * bias, requantized per output channel by TFLite's fixed-point multiplier (support_tfl.h), plus
 * the output zero point, clamped to the fused activation's range.
 *
 * Fast paths, the same integers: a conv is per group a GEMM of weight rows (OHWI: a row is a
 * pixel's im2col column of the group's channels in NHWC order) by columns, 2 channels x 2 pixels a
 * step through conv_int8.c's arena_i8_dot2x2 (SXTAB16/SMLAD on DSP cores); a 1x1 stride-1
 * unpadded conv of one group reads the input's pixels as its columns, any other conv copies as
 * many columns as its planned workspace holds (lowering.TFL_COL_BYTES, at least one) at a time. A
 * depthwise conv runs 4 input channels a step (one 32-bit load of 4 channels' inputs, SXTAB16
 * into two halfword pairs, SMLABB/SMLATT against the channels' taps, which the lowering stored
 * unpacked so in flash: input 4; a whole 3x3 window unrolled, the taps outside the input skipped
 * at the border), once per output of a channel (depth multiplier dm: output channels c dm + j),
 * the channels past the last multiple of 4 one at a time. Every output is requantized by tfl_rq: one
 * SMLAL when every channel's shift is a right shift of 2 or more (tfl_short: the *_short kernels),
 * TFLite's step-by-step way for the channels that are not (the *_long ones). A depthwise conv of
 * multiplier 1 planned over its input (liveness's in-place depthwise) copies 4 channels' planes into
 * its workspace before their outputs land on them (tfl_dw_in_place). An op without its workspace or
 * unpacked taps (tables from before them) runs the reference loop below.
 *
 * Inputs: 0 x [N, H, W, C] int8, 1 w (conv [M, KH, KW, C / groups]; depthwise [1, KH, KW, M],
 * M = C * depth multiplier) int8 with zero point 0, 2 bias [M] int32 or absent, 3 the requantization
 * [M, 2] int32 (multiplier, shift) per output channel, 4 (depthwise, C >= 4) the taps of tfl_dw4
 * [dm, C / 4, KH KW, 2] int32 (tflite_lower.depthwise_taps). Output 0 y [N, OH, OW, M] int8.
 * Attributes: strides, dilations, pads (top, left, ...); ints: x_offset (-x_zp), y_zp, act_min,
 * act_max, depth multiplier (0: a conv). */
#include <string.h>

#include "support_tfl.h"
#include "support_int8.h"

/* What every output of an op shares: the output zero point and the activation's clamp. */
typedef struct {
    int32_t zp, lo, hi;
} tfl_out_t;

static inline __attribute__((always_inline)) int8_t tfl_code(int32_t acc, const tfl_chan_t *ch, const tfl_out_t *o,
                                                             int general)
{
    return (int8_t)tfl_clamp(tfl_add(tfl_rq(acc, ch, general), o->zp), o->lo, o->hi);
}

/* A GEMM's operands: M weight rows of K bytes (w), their biases and requantization, the input's
 * zero point, the output's pixel stride (ldy: every group's channels). */
typedef struct {
    const int8_t *w;
    const int32_t *bias, *rq;
    int32_t M, K, x_zp, ldy;
    tfl_out_t o;
} tfl_gemm_t;

/* Output channels [0, M) of np pixels whose columns (K bytes each) start at col, into y (the
 * first pixel's M outputs; pixels ldy apart). */
static inline __attribute__((always_inline)) void tfl_gemm(int8_t *y, const int8_t *col, int32_t np,
                                                           const tfl_gemm_t *g, int general)
{
    const tfl_out_t o = g->o;
    const int32_t M = g->M, K = g->K, x_zp = g->x_zp, L = g->ldy;
    const int32_t *rq = g->rq, *bias = g->bias;
    int32_t m, p, s[4];
    for (m = 0; m + 1 < M; m += 2) {
        const tfl_chan_t c0 = tfl_chan(rq[2 * m], rq[2 * m + 1], bias != NULL ? bias[m] : 0);
        const tfl_chan_t c1 = tfl_chan(rq[2 * m + 2], rq[2 * m + 3], bias != NULL ? bias[m + 1] : 0);
        const int8_t *w0 = g->w + (size_t)m * (size_t)K, *x = col;
        int8_t *yp = y + m;
        for (p = 0; p + 1 < np; p += 2, x += 2 * K, yp += 2 * L) {
            arena_i8_dot2x2(s, w0, x, K, x_zp);
            yp[0] = tfl_code(s[0], &c0, &o, general);
            yp[L] = tfl_code(s[1], &c0, &o, general);
            yp[1] = tfl_code(s[2], &c1, &o, general);
            yp[L + 1] = tfl_code(s[3], &c1, &o, general);
        }
        if (p < np) {
            arena_i8_dot2x1(s, w0, x, K, x_zp);
            yp[0] = tfl_code(s[0], &c0, &o, general);
            yp[1] = tfl_code(s[1], &c1, &o, general);
        }
    }
    if (m < M) {
        const tfl_chan_t c0 = tfl_chan(rq[2 * m], rq[2 * m + 1], bias != NULL ? bias[m] : 0);
        const int8_t *w0 = g->w + (size_t)m * (size_t)K;
        for (p = 0; p < np; ++p) {
            y[(size_t)p * (size_t)L + (size_t)m] = tfl_code(dot1x1(w0, col + (size_t)p * (size_t)K, K, x_zp), &c0, &o,
                                                            general);
        }
    }
}

/* tfl_gemm where every channel takes tfl_rq's short way (tfl_short), and where some may not. */
static __attribute__((noinline)) void tfl_gemm_short(int8_t *y, const int8_t *col, int32_t np, const tfl_gemm_t *g)
{
    tfl_gemm(y, col, np, g, 0);
}

static __attribute__((noinline)) void tfl_gemm_long(int8_t *y, const int8_t *col, int32_t np, const tfl_gemm_t *g)
{
    tfl_gemm(y, col, np, g, 1);
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

/* The im2col columns of output pixels [p0, p0 + np) of one image (x: its first byte, or its group's
 * first channel) into col: per pixel KH rows of KW taps of G bytes (G of the pixel's C channels), taps
 * outside the input x_zp's byte. d: H, W, C, OW, KH, KW, G. */
static __attribute__((noinline)) void tfl_im2col(int8_t *col, const int8_t *x, const arena_attrs_t *a,
                                                 const int32_t d[7], int32_t p0, int32_t np, int8_t pad)
{
    int32_t H = d[0], W = d[1], C = d[2], OW = d[3], KH = d[4], KW = d[5], G = d[6];
    int32_t oy = p0 / OW, ox = p0 - oy * OW, p, ky, kx;
    for (p = 0; p < np; ++p) {
        int32_t iy0 = oy * a->strides[0] - a->pads[0], ix0 = ox * a->strides[1] - a->pads[1];
        for (ky = 0; ky < KH; ++ky) {
            int32_t iy = iy0 + ky * a->dilations[0];
            if (iy < 0 || iy >= H) {
                memset(col, pad, (size_t)KW * (size_t)G);
                col += KW * G;
                continue;
            }
            if (G == C && a->dilations[1] == 1 && ix0 >= 0 && ix0 + KW <= W) {
                tfl_copy(col, x + ((size_t)iy * (size_t)W + (size_t)ix0) * (size_t)C, KW * C);
                col += KW * C;
                continue;
            }
            for (kx = 0; kx < KW; ++kx, col += G) {
                int32_t ix = ix0 + kx * a->dilations[1];
                if (ix < 0 || ix >= W) {
                    memset(col, pad, (size_t)G);
                } else {
                    tfl_copy(col, x + ((size_t)iy * (size_t)W + (size_t)ix) * (size_t)C, G);
                }
            }
        }
        if (++ox == OW) {
            ox = 0;
            ++oy;
        }
    }
}

/* The op's planned workspace (lowering._tfl_workspace) and its bytes (*n), or NULL. */
static int8_t *tfl_workspace(const arena_ctx_t *c, uint32_t *n)
{
    const arena_tensor_t *t;
    if (c->op->workspace < 0) {
        return NULL;
    }
    t = arena_tensor_row(c, c->op->workspace);
    *n = t->elements;
    return (int8_t *)arena_ctx_data(c, c->op->workspace);
}

/* A conv as GEMMs, group by group (WC input channels, M / groups output channels each): 1 when it
 * ran, 0 when its workspace does not hold one column (the reference loop runs). */
static int tfl_conv_gemm(const arena_ctx_t *c, int32_t N, int32_t H, int32_t W, int32_t C, int32_t OH, int32_t OW,
                         int32_t M, int32_t KH, int32_t KW, int32_t WC, int32_t x_zp, const tfl_out_t *o)
{
    const arena_attrs_t *a = c->op->attrs;
    const int8_t *x = (const int8_t *)arena_in_data(c, 0);
    int8_t *y = (int8_t *)arena_out_data(c, 0), *col;
    const int32_t groups = C / WC, per = M / groups;
    int32_t K = KH * KW * WC, ohw = OH * OW, b, g, p0, chunk, d[7];
    const int32_t *rq = (const int32_t *)arena_in_data(c, 3);
    const int32_t *bias = arena_in(c, 2) != NULL ? (const int32_t *)arena_in_data(c, 2) : NULL;
    uint32_t cap = 0u;
    tfl_gemm_t gm;
    void (*gemm)(int8_t *, const int8_t *, int32_t, const tfl_gemm_t *);
    gm.M = per, gm.K = K, gm.x_zp = x_zp, gm.ldy = M, gm.o = *o;
    gemm = tfl_short(rq, M) ? tfl_gemm_short : tfl_gemm_long;
    if (groups == 1 && KH == 1 && KW == 1 && a->strides[0] == 1 && a->strides[1] == 1 && OH == H && OW == W) {
        gm.w = (const int8_t *)arena_in_data(c, 1), gm.bias = bias, gm.rq = rq;
        for (b = 0; b < N; ++b) { /* the input's pixels are the columns */
            gemm(y + (size_t)b * (size_t)ohw * (size_t)M, x + (size_t)b * (size_t)ohw * (size_t)C, ohw, &gm);
        }
        return 1;
    }
    col = tfl_workspace(c, &cap);
    if (col == NULL || (uint32_t)K > cap) {
        return 0;
    }
    chunk = (int32_t)(cap / (uint32_t)K);
    d[0] = H, d[1] = W, d[2] = C, d[3] = OW, d[4] = KH, d[5] = KW, d[6] = WC;
    for (b = 0; b < N; ++b) {
        const int8_t *xb = x + (size_t)b * (size_t)H * (size_t)W * (size_t)C;
        int8_t *yb = y + (size_t)b * (size_t)ohw * (size_t)M;
        for (p0 = 0; p0 < ohw; p0 += chunk) {
            int32_t np = ohw - p0 < chunk ? ohw - p0 : chunk;
            for (g = 0; g < groups; ++g) {
                gm.w = (const int8_t *)arena_in_data(c, 1) + (size_t)g * (size_t)per * (size_t)K;
                gm.bias = bias != NULL ? bias + g * per : NULL;
                gm.rq = rq + 2 * g * per;
                tfl_im2col(col, xb + g * WC, a, d, p0, np, (int8_t)x_zp);
                gemm(yb + (size_t)p0 * (size_t)M + (size_t)(g * per), col, np, &gm);
            }
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

/* A depthwise conv's geometry for tfl_dw4: the input H x W x C, the output OH x OW x M (M = C dm;
 * input channel c's outputs c dm + j), the kernel KH x KW (taps tap bytes apart along a row, row
 * bytes apart down it), strides, top and left padding, output columns [lo, hi) whose windows are
 * inside the input's width. */
typedef struct {
    const uint32_t *wp; /* per tap of the kernel, (w0, w2) and (w1, w3) of the 4 channels as halfwords */
    int32_t H, W, C, M, dm, OH, OW, KH, KW, sh, sw, dh, dw, pt, pl, lo, hi, tap, row, x_zp;
    int fast3;          /* a 3x3 kernel, undilated */
    tfl_out_t o;
} tfl_dw_t;

/* One tap of 4 channels into a0 .. a3: the inputs' word v (channels c .. c + 3), the taps' pairs t. */
#if defined(__ARM_FEATURE_DSP)
#define DW4_TAP(v, t)                                                                                               \
    do {                                                                                                            \
        uint32_t x02 = LO16((v), nz), x13 = HI16((v), nz);                                                          \
        a0 = __smlabb((int32_t)x02, (int32_t)(t)[0], a0);                                                           \
        a2 = __smlatt((int32_t)x02, (int32_t)(t)[0], a2);                                                           \
        a1 = __smlabb((int32_t)x13, (int32_t)(t)[1], a1);                                                           \
        a3 = __smlatt((int32_t)x13, (int32_t)(t)[1], a3);                                                           \
    } while (0)
#else
#define DW4_TAP(v, t)                                                                                               \
    do {                                                                                                            \
        a0 += ((int32_t)(int8_t)(v) - zp) * (int16_t)(t)[0];                                                        \
        a2 += ((int32_t)(int8_t)((v) >> 16) - zp) * (int16_t)((t)[0] >> 16);                                        \
        a1 += ((int32_t)(int8_t)((v) >> 8) - zp) * (int16_t)(t)[1];                                                 \
        a3 += ((int32_t)(int8_t)((v) >> 24) - zp) * (int16_t)((t)[1] >> 16);                                        \
    } while (0)
#endif

/* The taps [*k0, *k1) of a kernel axis of k taps d apart inside [0, size) for a window starting at i0. */
static inline void tfl_clip(int32_t i0, int32_t k, int32_t d, int32_t size, int32_t *k0, int32_t *k1)
{
    int32_t a = 0, b = k;
    while (a < k && i0 + a * d < 0) {
        ++a;
    }
    while (b > a && i0 + (b - 1) * d >= size) {
        --b;
    }
    *k0 = a;
    *k1 = b;
}

/* Input channels [c, c + 4) of a depthwise conv into one output of each (c dm + j) over every output
 * pixel of one image (x: the image's channel c, y: its output channel c dm + j): per pixel the taps
 * inside the input, a whole 3x3 window unrolled. */
static inline __attribute__((always_inline)) void tfl_dw4(int8_t *y, const int8_t *x, const tfl_dw_t *d,
                                                          const tfl_chan_t ch[4], int general, int one)
{
    const tfl_out_t o = d->o;
    const int32_t C = d->C, M = d->M, od = one ? 1 : d->dm, tap = d->tap, row = d->row, KW = d->KW, step = d->sw * C;
#if defined(__ARM_FEATURE_DSP)
    const uint32_t nz = ((uint32_t)(-d->x_zp) & 0xFFFFu) * 0x10001u;
#else
    const int32_t zp = d->x_zp;
#endif
    int32_t oy, ox, ky, kx;
    for (oy = 0; oy < d->OH; ++oy) {
        int32_t iy0 = oy * d->sh - d->pt, ky0, ky1;
        const int8_t *xr, *r;
        int full;
        tfl_clip(iy0, d->KH, d->dh, d->H, &ky0, &ky1);
        xr = x + (ptrdiff_t)(iy0 + ky0 * d->dh) * d->W * C;
        full = d->fast3 && ky1 - ky0 == 3;
        r = xr - (ptrdiff_t)d->pl * C;
        for (ox = 0; ox < d->OW; ++ox, r += step, y += M) {
            int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
            if (full && ox >= d->lo && ox < d->hi) {
                const int8_t *p = r;
                const uint32_t *t = d->wp;
                for (ky = 0; ky < 3; ++ky, p += row, t += 6) {
                    uint32_t v0 = tfl_ld4(p), v1 = tfl_ld4(p + C), v2 = tfl_ld4(p + 2 * C);
                    DW4_TAP(v0, t);
                    DW4_TAP(v1, t + 2);
                    DW4_TAP(v2, t + 4);
                }
            } else {
                int32_t ix0 = ox * d->sw - d->pl, kx0, kx1;
                const int8_t *p;
                const uint32_t *t;
                tfl_clip(ix0, KW, d->dw, d->W, &kx0, &kx1);
                p = r + (ptrdiff_t)kx0 * tap;
                t = d->wp + 2 * (ky0 * KW + kx0);
                for (ky = ky0; ky < ky1; ++ky, p += row, t += 2 * KW) {
                    const int8_t *q = p;
                    for (kx = 0; kx < kx1 - kx0; ++kx, q += tap) {
                        uint32_t v = tfl_ld4(q);
                        DW4_TAP(v, t + 2 * kx);
                    }
                }
            }
            y[0] = tfl_code(a0, &ch[0], &o, general);
            y[od] = tfl_code(a1, &ch[1], &o, general);
            y[2 * od] = tfl_code(a2, &ch[2], &o, general);
            y[3 * od] = tfl_code(a3, &ch[3], &o, general);
        }
    }
}
#undef DW4_TAP

/* tfl_dw4 where every channel takes tfl_rq's short way, and where some may not; depth multiplier 1
 * (the 4 outputs adjacent: immediate store offsets), and any (*_dm). */
static __attribute__((noinline)) void tfl_dw4_short(int8_t *y, const int8_t *x, const tfl_dw_t *d,
                                                    const tfl_chan_t ch[4])
{
    tfl_dw4(y, x, d, ch, 0, 1);
}

static __attribute__((noinline)) void tfl_dw4_long(int8_t *y, const int8_t *x, const tfl_dw_t *d,
                                                   const tfl_chan_t ch[4])
{
    tfl_dw4(y, x, d, ch, 1, 1);
}

static __attribute__((noinline)) void tfl_dw4_short_dm(int8_t *y, const int8_t *x, const tfl_dw_t *d,
                                                       const tfl_chan_t ch[4])
{
    tfl_dw4(y, x, d, ch, 0, 0);
}

static __attribute__((noinline)) void tfl_dw4_long_dm(int8_t *y, const int8_t *x, const tfl_dw_t *d,
                                                      const tfl_chan_t ch[4])
{
    tfl_dw4(y, x, d, ch, 1, 0);
}

/* One output channel of a depthwise conv over every output pixel of one image (x: its input channel,
 * w: its taps M apart, y: its first output): the channels past the last multiple of 4, one at a time.
 * d: H, W, C, OH, OW, KH, KW, M. */
static __attribute__((noinline)) void tfl_dw1(int8_t *y, const int8_t *x, const int8_t *w, const tfl_chan_t *ch,
                                              const arena_attrs_t *a, const int32_t d[8], int32_t x_zp,
                                              const tfl_out_t *o)
{
    const int32_t H = d[0], W = d[1], C = d[2], OH = d[3], OW = d[4], KH = d[5], KW = d[6], M = d[7];
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
                        acc += (int32_t)w[(ky * KW + kx) * M]
                               * ((int32_t)x[((size_t)iy * (size_t)W + (size_t)ix) * (size_t)C] - x_zp);
                    }
                }
            }
            y[((size_t)oy * (size_t)OW + (size_t)ox) * (size_t)M] = tfl_code(acc, ch, o, 1);
        }
    }
}

/* A depthwise conv planned in place (y at x's address; liveness: multiplier 1, no more output pixels
 * than input ones): per image, 4 channels' planes at a time copied into temp (a [H, W, 4] image) and
 * their outputs computed from it, which land on those channels' input bytes only (output pixel p,
 * channel c at input pixel p, channel c), then the rest one channel at a time. k: the geometry with
 * the copy's 4 channels a pixel. */
static void tfl_dw_in_place(int8_t *y, int8_t *temp, const tfl_dw_t *k, const uint32_t *wp, const arena_ctx_t *c,
                            int32_t N, const int32_t d[8], int32_t x_zp, const tfl_out_t *o)
{
    void (*run)(int8_t *, const int8_t *, const tfl_dw_t *, const tfl_chan_t *);
    const int8_t *w = (const int8_t *)arena_in_data(c, 1);
    const int32_t *bias = arena_in(c, 2) != NULL ? (const int32_t *)arena_in_data(c, 2) : NULL;
    const int32_t *rq = (const int32_t *)arena_in_data(c, 3);
    const int32_t C = d[2], hw = d[0] * d[1], taps = d[5] * d[6];
    size_t xs = (size_t)hw * (size_t)C, ys = (size_t)d[3] * (size_t)d[4] * (size_t)C;
    tfl_dw_t k4 = *k;
    tfl_chan_t ch[4];
    int32_t d1[8], b, m, i, p;
    run = tfl_short(rq, C) ? tfl_dw4_short : tfl_dw4_long;
    for (i = 0; i < 8; ++i) {
        d1[i] = d[i];
    }
    d1[2] = 1; /* tfl_dw1 reads one channel's plane */
    for (b = 0; b < N; ++b) {
        int8_t *xb = y + (size_t)b * xs; /* the image's input bytes, before its outputs land on them */
        const uint32_t *t = wp;
        for (m = 0; m + 4 <= C; m += 4, t += 2 * taps) {
            for (p = 0; p < hw; ++p) {
                memcpy(temp + 4 * p, xb + (size_t)p * (size_t)C + (size_t)m, 4);
            }
            k4.wp = t;
            for (i = 0; i < 4; ++i) {
                ch[i] = tfl_chan(rq[2 * (m + i)], rq[2 * (m + i) + 1], bias != NULL ? bias[m + i] : 0);
            }
            run(y + b * ys + (size_t)m, temp, &k4, ch);
        }
        for (; m < C; ++m) {
            for (p = 0; p < hw; ++p) {
                temp[p] = xb[(size_t)p * (size_t)C + (size_t)m];
            }
            ch[0] = tfl_chan(rq[2 * m], rq[2 * m + 1], bias != NULL ? bias[m] : 0);
            tfl_dw1(y + b * ys + (size_t)m, temp, w + m, ch, c->op->attrs, d1, x_zp, o);
        }
    }
}

/* A depthwise conv (M = C dm): per output j of an input channel, 4 input channels a step (tfl_dw4,
 * their taps from input 4), then the rest (tfl_dw1); in place through tfl_dw_in_place. ARENA_OK,
 * TFL_NO_FAST without input 4 where C >= 4 (the reference loop runs), or arena_dw_in_place's error.
 * d: H, W, C, OH, OW, KH, KW, M. */
#define TFL_NO_FAST (-1)
static int tfl_depthwise(const arena_ctx_t *c, int32_t N, const int32_t d[8], int32_t x_zp, const tfl_out_t *o)
{
    const arena_attrs_t *a = c->op->attrs;
    const int8_t *x = (const int8_t *)arena_in_data(c, 0), *w = (const int8_t *)arena_in_data(c, 1);
    const int32_t *bias = arena_in(c, 2) != NULL ? (const int32_t *)arena_in_data(c, 2) : NULL;
    const int32_t *rq = (const int32_t *)arena_in_data(c, 3);
    const arena_tensor_t *pt = arena_in(c, 4);
    int8_t *y = (int8_t *)arena_out_data(c, 0);
    const int32_t C = d[2], M = d[7], dm = M / C, taps = d[5] * d[6];
    size_t xs = (size_t)d[0] * (size_t)d[1] * (size_t)C, ys = (size_t)d[3] * (size_t)d[4] * (size_t)M;
    const uint32_t *wp = pt != NULL ? (const uint32_t *)arena_in_data(c, 4) : NULL;
    tfl_chan_t ch[4];
    tfl_dw_t k;
    int32_t b, m, i, j, rc;
    void *temp = NULL;
    void (*run)(int8_t *, const int8_t *, const tfl_dw_t *, const tfl_chan_t *);
    rc = arena_dw_in_place(c, x, (size_t)N * xs, y, (size_t)N * ys,
                           (size_t)(C < 4 ? 1 : 4) * (size_t)d[0] * (size_t)d[1], 1u, &temp);
    if (rc != ARENA_OK || (temp != NULL && dm != 1)) {
        return rc != ARENA_OK ? rc : ARENA_ERR_SHAPE;
    }
    if (C >= 4 && (wp == NULL || pt->dtype != ARENA_DT_INT32
                   || pt->elements != 2u * (uint32_t)dm * (uint32_t)(C / 4) * (uint32_t)taps)) {
        return temp != NULL ? ARENA_ERR_UNSUPPORTED : TFL_NO_FAST;
    }
    run = dm == 1 ? tfl_dw4_long : tfl_dw4_long_dm;
    if (tfl_short(rq, M)) {
        run = dm == 1 ? tfl_dw4_short : tfl_dw4_short_dm;
    }
    k.H = d[0], k.W = d[1], k.C = C, k.M = M, k.dm = dm, k.OH = d[3], k.OW = d[4], k.KH = d[5], k.KW = d[6];
    k.sh = a->strides[0], k.sw = a->strides[1], k.dh = a->dilations[0], k.dw = a->dilations[1];
    k.pt = a->pads[0], k.pl = a->pads[1], k.tap = k.dw * C, k.row = k.dh * k.W * C, k.x_zp = x_zp, k.o = *o;
    k.fast3 = k.KH == 3 && k.KW == 3 && k.dh == 1 && k.dw == 1;
    for (k.lo = 0; k.lo < k.OW && k.lo * k.sw - k.pl < 0; ++k.lo) {
    }
    for (k.hi = k.OW; k.hi > k.lo && (k.hi - 1) * k.sw - k.pl + (k.KW - 1) * k.dw >= k.W; --k.hi) {
    }
    if (temp != NULL) {
        k.C = 4, k.tap = k.dw * 4, k.row = k.dh * k.W * 4;
        tfl_dw_in_place(y, (int8_t *)temp, &k, wp, c, N, d, x_zp, o);
        return ARENA_OK;
    }
    for (j = 0; j < dm; ++j) {
        for (m = 0; m + 4 <= C; m += 4, wp += 2 * taps) { /* input channels m .. m + 3, outputs (m + i) dm + j */
            k.wp = wp;
            for (i = 0; i < 4; ++i) {
                int32_t n = (m + i) * dm + j;
                ch[i] = tfl_chan(rq[2 * n], rq[2 * n + 1], bias != NULL ? bias[n] : 0);
            }
            for (b = 0; b < N; ++b) {
                run(y + b * ys + (size_t)(m * dm + j), x + b * xs + (size_t)m, &k, ch);
            }
        }
        for (; m < C; ++m) {
            int32_t n = m * dm + j;
            ch[0] = tfl_chan(rq[2 * n], rq[2 * n + 1], bias != NULL ? bias[n] : 0);
            for (b = 0; b < N; ++b) {
                tfl_dw1(y + b * ys + (size_t)n, x + b * xs + (size_t)m, w + n, ch, a, d, x_zp, o);
            }
        }
    }
    return ARENA_OK;
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
        if (dm == 0 && tfl_conv_gemm(c, N, H, W, C, OH, OW, M, KH, KW, WC, -x_off, &o)) {
            return ARENA_OK;
        }
        if (dm > 0) {
            int32_t d[8];
            d[0] = H, d[1] = W, d[2] = C, d[3] = OH, d[4] = OW, d[5] = KH, d[6] = KW, d[7] = M;
            int rc = tfl_depthwise(c, N, d, -x_off, &o);
            if (rc != TFL_NO_FAST) {
                return rc;
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
