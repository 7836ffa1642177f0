/* QLinearConv's int8 fast path for a conv that is not depthwise (arena_i8_conv; the depthwise
 * form is depthwise_int8.c's): a GEMM of weight rows by im2col columns, 2 channels x 2 pixels.
 *
 * Workspace: the op's planned workspace (lowering.workspace_of: Cin/group * KH * KW bytes per
 * output pixel, one output row's worth under scratch: row, all of them under scratch: full)
 * holds as many pixels' columns as fit; without one, COL_STACK_BYTES on the stack. A 1x1
 * stride-1 unpadded conv needs none (its columns are the input's channels, copied a slab at a
 * time). When not one pixel's column fits, the reference loop runs. */
#include "support_int8.h"

/* Bytes of the stack buffer for im2col columns when the op has no workspace: at least
 * one pixel's column (kk bytes) must fit, else the reference loop runs. */
#if defined(__ARM_FEATURE_MVE)
#define COL_STACK_BYTES 2304 /* Helium: 4 columns of a 3x3 conv over 64 channels, arena_mve_gemm_row's step */
#else
#define COL_STACK_BYTES 1024
#endif

#if !defined(__ARM_FEATURE_DSP)
/* Taps summed in one 64-bit sum before it is split (dot2x2). */
#define DOT_RUN 127
#endif

/* GCC's first scheduling pass, tuned for a core with the DSP extension but no double-precision
 * FPU (Cortex-M4), hoists dot2x2's loads and spills its sums: 78 instructions for the 8-tap
 * loop, 69 without the pass (a Cortex-M7's tuning: 64 with it, 68 without). */
#if defined(__ARM_FEATURE_DSP) && defined(__ARM_FP) && !(__ARM_FP & 8)
#define DOT_SCHED __attribute__((optimize("no-schedule-insns")))
#else
#define DOT_SCHED
#endif

/* The dot products of weight rows w and w + K with columns x and x + K, each column
 * element minus zp: s[0] = w.x, s[1] = w.(x + K), s[2] = (w + K).x, s[3] = (w + K).(x + K).
 * Not inlined: its loop gets every register (4 sums, zp, 2 pointers, K, the end). Shared with
 * tfl_conv_int8.c's GEMM. */
DOT_SCHED __attribute__((noinline)) void arena_i8_dot2x2(int32_t s[4], const int8_t *w, const int8_t *x, int32_t K, int32_t zp)
{
    int32_t s00 = 0, s01 = 0, s10 = 0, s11 = 0, k, n = K;
#if defined(__ARM_FEATURE_MVE)
    arena_mve_dot2x2(s, w, x, K, zp);
    return;
#endif
#if defined(__ARM_FEATURE_DSP)
    uint32_t nz = ((uint32_t)(-zp) & 0xFFFFu) * 0x10001u;
    const int8_t *end = x + (K & ~3);
/* One step of 4 taps at offset o: both columns against both rows. */
#define STEP2X2(o)                                                                                                  \
    do {                                                                                                            \
        uint32_t a = ld4(x + (o)), u = ld4(w + (o)), b, v, b0, b1, v0, v1;                                          \
        uint32_t a0 = LO16(a, nz), a1 = HI16(a, nz), u0 = W_LO(u), u1 = W_HI(u);                                    \
        s00 = MAC2(u0, a0, s00);                                                                                    \
        s00 = MAC2(u1, a1, s00);                                                                                    \
        b = ld4(x + K + (o));                                                                                       \
        b0 = LO16(b, nz);                                                                                           \
        b1 = HI16(b, nz);                                                                                           \
        s01 = MAC2(u0, b0, s01);                                                                                    \
        s01 = MAC2(u1, b1, s01);                                                                                    \
        v = ld4(w + K + (o));                                                                                       \
        v0 = W_LO(v);                                                                                               \
        v1 = W_HI(v);                                                                                               \
        s10 = MAC2(v0, a0, s10);                                                                                    \
        s10 = MAC2(v1, a1, s10);                                                                                    \
        s11 = MAC2(v0, b0, s11);                                                                                    \
        s11 = MAC2(v1, b1, s11);                                                                                    \
    } while (0)
    if (K & 4) {
        STEP2X2(0);
        x += 4;
        w += 4;
    }
    for (; x != end; x += 8, w += 8) {
        STEP2X2(0);
        STEP2X2(4);
    }
#undef STEP2X2
    n = K & 3;
    for (k = 0; k < n; ++k) {
        int32_t a = (int32_t)x[k] - zp, b = (int32_t)x[k + K] - zp, u = w[k], v = w[k + K];
        s00 += u * a;
        s01 += u * b;
        s10 += v * a;
        s11 += v * b;
    }
#else
    /* Without the DSP extension, two multiply-accumulates in one: a tap of both columns packed
     * in one word, (x - zp) + (x' - zp) 2^23, times each row's weight into a 64-bit sum (SMLAL
     * on Armv7-M), split every DOT_RUN taps, before the low sum could reach the high one's
     * bits (|sum| <= 127 * 255 * 128 < 2^22). */
    const int32_t z = zp * 0x800001; /* zp (1 + 2^23) */
    const int8_t *xb = x + K, *v = w + K;
    k = 0;
    while (n > 0) {
        int32_t run = n < DOT_RUN ? n : DOT_RUN;
        int64_t a0 = 0, a1 = 0;
        n -= run;
        for (; run > 0; --run, ++k) {
            int32_t p = ((int32_t)x[k] + (int32_t)xb[k] * 0x800000) - z;
            a0 += (int64_t)w[k] * p;
            a1 += (int64_t)v[k] * p;
        }
        s00 += lo23(a0);
        s01 += hi23(a0);
        s10 += lo23(a1);
        s11 += hi23(a1);
    }
#endif
    s[0] = s00;
    s[1] = s01;
    s[2] = s10;
    s[3] = s11;
}

/* Column bytes of a window inside the plane: per channel, KH rows of KW taps. Leaf
 * functions (not inlined), so their loops keep their variables in registers. */
static __attribute__((noinline)) int8_t *window(int8_t *col, const int8_t *xr, int32_t cg, int32_t plane,
                                                int32_t KH, int32_t KW, int32_t row, int32_t dw)
{
    int32_t ci, ky, kx;
    if (KW == 3 && dw == 1) {
        for (ci = 0; ci < cg; ++ci, xr += plane) {
            const int8_t *r = xr;
            for (ky = 0; ky < KH; ++ky, r += row, col += 3) {
                col[0] = r[0];
                col[1] = r[1];
                col[2] = r[2];
            }
        }
        return col;
    }
    for (ci = 0; ci < cg; ++ci, xr += plane) {
        const int8_t *r = xr;
        for (ky = 0; ky < KH; ++ky, r += row) {
            for (kx = 0; kx < KW; ++kx) {
                *col++ = r[kx * dw];
            }
        }
    }
    return col;
}

/* col[p][ci] = src[ci * plane + p] for np pixels, K = cg bytes a column: a 1x1 conv's
 * columns (stride 1, no padding), four channels a step. */
static __attribute__((noinline)) void slab(int8_t *col, const int8_t *src, int32_t cg, int32_t plane, int32_t np,
                                           int32_t K)
{
    int32_t ci = 0, p;
    for (; ci + 4 <= cg; ci += 4, src += 4 * plane) {
        const int8_t *s0 = src, *s1 = s0 + plane, *s2 = s1 + plane, *s3 = s2 + plane;
        int8_t *dst = col + ci;
        for (p = 0; p < np; ++p, dst += K) {
            dst[0] = s0[p];
            dst[1] = s1[p];
            dst[2] = s2[p];
            dst[3] = s3[p];
        }
    }
    for (; ci < cg; ++ci, src += plane) {
        int8_t *dst = col + ci;
        for (p = 0; p < np; ++p, dst += K) {
            *dst = src[p];
        }
    }
}

#if defined(__ARM_FEATURE_MVE)
/* v's bytes, or (u8) v's uint8 bytes b as the int8 bytes b - 128 (flip_u8's XOR 0x80); 16: the low
 * bytes of halfword lanes. */
#define FLIP8(v, u8) ((u8) ? veorq_s8((v), vdupq_n_s8(-128)) : (v))
#define FLIP16(v, u8) ((u8) ? veorq_s16((v), vdupq_n_s16(0x80)) : (v))

/* Gathers a window's taps of one channel takes on Helium, 16 a VLDRB.8 (at most 64 taps). */
#define COL_GATHERS 4

/* A window's taps as lanes: per gather, each lane's byte offset from the window's first tap
 * (ky dh W + kx dw, all below 256) and its row and column offsets (ky dh, kx dw: which lanes a
 * padded window has inside the plane). Lanes past the taps: 0. */
typedef struct {
    uint8x16_t off[COL_GATHERS], ry[COL_GATHERS], rx[COL_GATHERS];
    int32_t groups, taps, span_h, span_w;
} gather_t;

/* gt for a conv whose window's taps (KH KW of them, at most 16 COL_GATHERS) lie within 256
 * bytes of its first one; 0 when not (the scalar im2col then). */
static int gather_of(gather_t *gt, const arena_conv_dims_t *d, const arena_attrs_t *a)
{
    uint8_t off[16], ry[16], rx[16];
    int32_t KH = a->kernel[0], KW = a->kernel[1], dh = a->dilations[0], dw = a->dilations[1], g, t;
    gt->taps = KH * KW;
    gt->groups = (gt->taps + 15) / 16;
    gt->span_h = (KH - 1) * dh + 1;
    gt->span_w = (KW - 1) * dw + 1;
    if (gt->taps < 2 || gt->groups > COL_GATHERS || (gt->span_h - 1) * d->w + gt->span_w - 1 > 255) {
        return 0;
    }
    for (g = 0; g < gt->groups; ++g) {
        for (t = 0; t < 16; ++t) {
            int32_t k = 16 * g + t, ky = k / KW, kx = k % KW;
            int inside = k < gt->taps;
            ry[t] = (uint8_t)(inside ? ky * dh : 0);
            rx[t] = (uint8_t)(inside ? kx * dw : 0);
            off[t] = (uint8_t)(inside ? ky * dh * d->w + kx * dw : 0);
        }
        gt->off[g] = vldrbq_u8(off);
        gt->ry[g] = vldrbq_u8(ry);
        gt->rx[g] = vldrbq_u8(rx);
    }
    return 1;
}

/* im2col on Helium: per pixel and channel the window's taps by gathering VLDRB.8s (lanes
 * outside the plane not read: x_zp's byte, by VPSEL), stored 16 bytes at a time (the bytes past
 * a channel's taps are the next channel's, written after; the column's last store predicated).
 * u8 (a constant where inlined): the bytes are uint8 ones, flipped to int8 (VEOR 0x80) before
 * the store, pad too. */
static inline __attribute__((always_inline)) void im2col_mve_t(const gather_t *gt, const int8_t *xg,
                                                               const arena_conv_dims_t *d, const arena_attrs_t *a,
                                                               int32_t p0, int32_t np, int8_t pad, int8_t *col,
                                                               const int u8)
{
    const int32_t plane = d->h * d->w, cg = d->cg, taps = gt->taps, G = gt->groups, H = d->h, W = d->w;
    const int32_t sh = a->strides[0], sw = a->strides[1], ph = a->pads[0], pw = a->pads[1];
    const mve_pred16_t tail = vctp8q((uint32_t)(taps - 16 * (G - 1)));
    const int8x16_t padv = vdupq_n_s8(pad);
    const uint8x16_t off0 = gt->off[0];
    int32_t oh = p0 / d->ow, ow = p0 - oh * d->ow, p, ci, g;
    for (p = 0; p < np; ++p) {
        const int32_t ih0 = oh * sh - ph, iw0 = ow * sw - pw;
        const int8_t *xr = (const int8_t *)((uintptr_t)xg + (uintptr_t)(intptr_t)(ih0 * W + iw0));
        if (G == 1 && ih0 >= 0 && ih0 + gt->span_h <= H && iw0 >= 0 && iw0 + gt->span_w <= W) {
            for (ci = 1; ci < cg; ++ci, xr += plane, col += taps) {
                vstrbq_s8(col, FLIP8(vldrbq_gather_offset_s8(xr, off0), u8));
            }
            vstrbq_p_s8(col, FLIP8(vldrbq_gather_offset_s8(xr, off0), u8), tail);
            col += taps;
        } else {
            mve_pred16_t pr[COL_GATHERS];
            /* lane (ry, rx) inside: -ih0 <= ry <= H - 1 - ih0 and -iw0 <= rx <= W - 1 - iw0 */
            int32_t ylo = ih0 < 0 ? -ih0 : 0, yhi = H - 1 - ih0, xlo = iw0 < 0 ? -iw0 : 0, xhi = W - 1 - iw0;
            for (g = 0; g < G; ++g) {
                pr[g] = yhi < 0 || xhi < 0 || ylo > 255 || xlo > 255
                            ? 0
                            : (mve_pred16_t)(vcmpcsq_n_u8(gt->ry[g], (uint8_t)ylo)
                                             & vcmpcsq_n_u8(gt->rx[g], (uint8_t)xlo)
                                             & ~vcmphiq_n_u8(gt->ry[g], (uint8_t)(yhi < 255 ? yhi : 255))
                                             & ~vcmphiq_n_u8(gt->rx[g], (uint8_t)(xhi < 255 ? xhi : 255)));
            }
            for (ci = 0; ci < cg; ++ci, xr += plane, col += taps) {
                for (g = 0; g < G; ++g) {
                    int8x16_t v = FLIP8(vpselq_s8(vldrbq_gather_offset_z_s8(xr, gt->off[g], pr[g]), padv, pr[g]), u8);
                    if (ci + 1 < cg || g + 1 < G) {
                        vstrbq_s8(col + 16 * g, v);
                    } else {
                        vstrbq_p_s8(col + 16 * g, v, tail);
                    }
                }
            }
        }
        if (++ow == d->ow) {
            ow = 0;
            ++oh;
        }
    }
}

static __attribute__((noinline)) void im2col_mve(const gather_t *gt, const int8_t *xg, const arena_conv_dims_t *d,
                                                 const arena_attrs_t *a, int32_t p0, int32_t np, int8_t pad,
                                                 int8_t *col, int u8)
{
    if (u8) {
        im2col_mve_t(gt, xg, d, a, p0, np, pad, col, 1);
    } else {
        im2col_mve_t(gt, xg, d, a, p0, np, pad, col, 0);
    }
}

/* slab on Helium: per pixel 8 channels a gathering VLDRB.S16 (halfword offsets 0, plane, ...,
 * 7 plane: plane <= 9362), stored by a VSTRB.16; the last channels predicated; u8 as im2col_mve_t
 * (VEOR 0x80 of each halfword's low byte). */
static inline __attribute__((always_inline)) void slab_mve_t(int8_t *col, const int8_t *src, int32_t cg,
                                                             int32_t plane, int32_t np, int32_t K, const int u8)
{
    const uint16x8_t off = vmulq_n_u16(vidupq_n_u16(0u, 1), (uint16_t)plane);
    const int32_t step = 8 * plane, full = cg & ~7;
    const mve_pred16_t tail = vctp16q((uint32_t)(cg - full));
    int32_t p, ci;
    for (p = 0; p < np; ++p, col += K) {
        const int8_t *sp = src + p;
        int8_t *dp = col;
        for (ci = 0; ci < full; ci += 8, sp += step, dp += 8) {
            vstrbq_s16(dp, FLIP16(vldrbq_gather_offset_s16(sp, off), u8));
        }
        if (full < cg) {
            vstrbq_p_s16(dp, FLIP16(vldrbq_gather_offset_z_s16(sp, off, tail), u8), tail);
        }
    }
}

static __attribute__((noinline)) void slab_mve(int8_t *col, const int8_t *src, int32_t cg, int32_t plane, int32_t np,
                                               int32_t K, int u8)
{
    if (u8) {
        slab_mve_t(col, src, cg, plane, np, K, 1);
    } else {
        slab_mve_t(col, src, cg, plane, np, K, 0);
    }
}
#endif

/* im2col of output pixels [p0, p0 + np) (flat over OH * OW) of image n, group g into
 * col[p][k]; taps in the padding hold the pad byte (x_zp's in the input's own type). u8: the
 * input's bytes are uint8 ones, which Helium's loops flip to int8 as they copy them: 1 when
 * they did (else the caller flips the columns). */
static int im2col(const int8_t *x, const arena_conv_dims_t *d, const arena_attrs_t *a, int32_t n, int32_t g,
                  int32_t p0, int32_t np, int8_t pad, int8_t *col, const void *gt, int u8)
{
    const int8_t *xg = x + (size_t)(n * d->c + g * d->cg) * (size_t)d->h * (size_t)d->w;
    int32_t plane = d->h * d->w, p, ci, ky, kx, oh, ow;
    int32_t KH = a->kernel[0], KW = a->kernel[1], dh = a->dilations[0], dw = a->dilations[1];
    if (KH == 1 && KW == 1 && a->strides[0] == 1 && a->strides[1] == 1 && a->pads[0] == 0 && a->pads[1] == 0
        && d->oh == d->h && d->ow == d->w) {
#if defined(__ARM_FEATURE_MVE)
        if (plane <= 9362) {
            slab_mve(col, xg + p0, d->cg, plane, np, d->kk, u8);
            return 1;
        }
#endif
        slab(col, xg + p0, d->cg, plane, np, d->kk);
        return 0;
    }
#if defined(__ARM_FEATURE_MVE)
    if (gt != NULL) {
        im2col_mve((const gather_t *)gt, xg, d, a, p0, np, pad, col, u8);
        return 1;
    }
#else
    (void)gt;
    (void)u8;
#endif
    oh = p0 / d->ow;
    ow = p0 - oh * d->ow;
    for (p = 0; p < np; ++p) {
        int32_t ih0 = oh * a->strides[0] - a->pads[0], iw0 = ow * a->strides[1] - a->pads[1];
        if (ih0 >= 0 && ih0 + (KH - 1) * dh < d->h && iw0 >= 0 && iw0 + (KW - 1) * dw < d->w) {
            col = window(col, xg + ih0 * d->w + iw0, d->cg, plane, KH, KW, dh * d->w, dw);
        } else {
            for (ci = 0; ci < d->cg; ++ci) {
                const int8_t *xc = xg + (size_t)ci * (size_t)plane;
                for (ky = 0; ky < KH; ++ky) {
                    int32_t ih = ih0 + ky * dh;
                    for (kx = 0; kx < KW; ++kx) {
                        int32_t iw = iw0 + kx * dw;
                        *col++ = ih >= 0 && ih < d->h && iw >= 0 && iw < d->w ? xc[ih * d->w + iw] : pad;
                    }
                }
            }
        }
        if (++ow == d->ow) {
            ow = 0;
            ++oh;
        }
    }
    return 0;
}

/* sums[p] = sum(col[p][k] - x_zp) over the kk taps of each of np columns: what a weight
 * zero point wz takes from a pixel's accumulator (wz * sums[p]). */
static __attribute__((noinline)) void col_sums(int32_t *sums, const int8_t *col, int32_t np, int32_t kk, int32_t x_zp)
{
    int32_t p, k;
    for (p = 0; p < np; ++p, col += kk) {
        int32_t s = -kk * x_zp;
#if defined(__ARM_FEATURE_MVE)
        for (k = 0; k < kk; k += 16) { /* 16 bytes a VADDVA, the last step predicated */
            const mve_pred16_t t = vctp8q((uint32_t)(kk - k));
            s = vaddvaq_p_s8(s, vldrbq_z_s8(col + k, t), t);
        }
#else
        for (k = 0; k < kk; ++k) {
            s += col[k];
        }
#endif
        sums[p] = s;
    }
}

#if defined(ARENA_MVE_F)
/* conv_gemm on Helium: one channel's np pixels a call, 4 columns a step (arena_mve_gemm_row, the
 * input as stored, x_zp times the row's weight sum taken off its bias; with weight zero points
 * arena_mve_gemm_row_wz, which also takes wz times each column's input sum off). */
static __attribute__((noinline)) void mve_gemm(const arena_ctx_t *c, const arena_conv_dims_t *d, const cparams_t *cp,
                                               const qpar_t *q, int32_t n, int32_t m0, int32_t m1, int32_t p0,
                                               int32_t np, const int8_t *col, int32_t x_zp, const int32_t *sums)
{
    const int8_t *w = (const int8_t *)arena_in_data(c, 3);
    int8_t *y = (int8_t *)arena_out_data(c, 0);
    const size_t ohw = (size_t)d->oh * (size_t)d->ow;
    const int32_t K = d->kk;
    int32_t m;
    mve_row_t r;
    r.zp = q->zp;
    r.K = K;
    r.last = col + (size_t)(np - 1) * (size_t)K;
    r.rl = q->rl;
    r.rh = q->rh;
    r.xzp = x_zp;
    for (m = m0; m < m1; ++m) {
        const chan_t c0 = chan(cp, m);
        const int8_t *w0 = w + (size_t)m * (size_t)K;
        int8_t *y0 = y + (size_t)(n * d->m + m) * ohw + (size_t)p0;
        r.bias = c0.bias; /* less x_zp sum(w) after the row's first step */
        r.mult = c0.mult;
        r.np = np;
        if (sums == NULL) {
            arena_mve_gemm_row(y0, w0, col, &r);
        } else {
            r.sums = sums;
            r.nwz = -c0.wz;
            arena_mve_gemm_row_wz(y0, w0, col, &r);
        }
    }
}
#endif

#if !defined(ARENA_MVE_F)
/* Output channels [m0, m1) of group g over the np columns in col (pixels p0 ...); sums: the
 * columns' input sums when a weight zero point is not 0 (col_sums), else NULL. Inlined into
 * one function per case (gemm_sym, gemm_asym), so the common one keeps its registers. */
/* An output code through tab (a conv writing its concat's codes: CONV_TABLE), or as it is. */
#define TAB(tab, v) ((tab) != NULL ? (int8_t)(tab)[(uint8_t)(v)] : (v))

static inline __attribute__((always_inline)) void conv_gemm(const arena_ctx_t *c, const arena_conv_dims_t *d,
                                                            const qpar_t *q, const cparams_t *cp, int32_t n, int32_t m0,
                                                            int32_t m1, int32_t p0, int32_t np, const int8_t *col,
                                                            int32_t x_zp, const int32_t *sums, const uint8_t *tab)
{
    const int8_t *w = (const int8_t *)arena_in_data(c, 3);
    int8_t *y = (int8_t *)arena_out_data(c, 0);
    size_t ohw = (size_t)d->oh * (size_t)d->ow, K = (size_t)d->kk;
    int32_t m, p, s[4];
    for (m = m0; m + 1 < m1; m += 2) {
        chan_t c0 = chan(cp, m), c1 = chan(cp, m + 1);
        const int8_t *w0 = w + (size_t)m * K;
        int8_t *y0 = y + (size_t)(n * d->m + m) * ohw + (size_t)p0, *y1 = y0 + ohw;
        for (p = 0; p + 1 < np; p += 2) {
            arena_i8_dot2x2(s, w0, col + (size_t)p * K, d->kk, x_zp);
            if (sums != NULL) {
                s[0] -= c0.wz * sums[p];
                s[1] -= c0.wz * sums[p + 1];
                s[2] -= c1.wz * sums[p];
                s[3] -= c1.wz * sums[p + 1];
            }
            y0[p] = TAB(tab, store(q, &c0, s[0]));
            y0[p + 1] = TAB(tab, store(q, &c0, s[1]));
            y1[p] = TAB(tab, store(q, &c1, s[2]));
            y1[p + 1] = TAB(tab, store(q, &c1, s[3]));
        }
        if (p < np) {
            arena_i8_dot2x1(s, w0, col + (size_t)p * K, d->kk, x_zp);
            if (sums != NULL) {
                s[0] -= c0.wz * sums[p];
                s[1] -= c1.wz * sums[p];
            }
            y0[p] = TAB(tab, store(q, &c0, s[0]));
            y1[p] = TAB(tab, store(q, &c1, s[1]));
        }
    }
    if (m < m1) {
        chan_t c0 = chan(cp, m);
        const int8_t *w0 = w + (size_t)m * K;
        int8_t *y0 = y + (size_t)(n * d->m + m) * ohw + (size_t)p0;
        for (p = 0; p < np; ++p) {
            y0[p] = TAB(tab, store(q, &c0, dot1x1(w0, col + (size_t)p * K, d->kk, x_zp)
                                        - (sums != NULL ? c0.wz * sums[p] : 0)));
        }
    }
}

static __attribute__((noinline)) void gemm_sym(const arena_ctx_t *c, const arena_conv_dims_t *d, const qpar_t *q,
                                               const cparams_t *cp, int32_t n, int32_t m0, int32_t m1, int32_t p0,
                                               int32_t np, const int8_t *col, int32_t x_zp)
{
    conv_gemm(c, d, q, cp, n, m0, m1, p0, np, col, x_zp, NULL, NULL);
}

static __attribute__((noinline)) void gemm_asym(const arena_ctx_t *c, const arena_conv_dims_t *d, const qpar_t *q,
                                                const cparams_t *cp, int32_t n, int32_t m0, int32_t m1, int32_t p0,
                                                int32_t np, const int8_t *col, int32_t x_zp, const int32_t *sums)
{
    conv_gemm(c, d, q, cp, n, m0, m1, p0, np, col, x_zp, sums, NULL);
}
#endif

#if !defined(__OPTIMIZE_SIZE__) && !defined(__ARM_FEATURE_MVE)
/* gemm_sym writing each code through the conv's table as it stores it (one byte load an output;
 * a table pass after the conv reads and writes each byte again). Helium keeps its row kernel and
 * a size build its two copies: the caller's table pass then (arena_k_qlinear_conv). */
#define CONV_TABLE 1
static __attribute__((noinline)) void gemm_tab(const arena_ctx_t *c, const arena_conv_dims_t *d, const qpar_t *q,
                                               const cparams_t *cp, int32_t n, int32_t m0, int32_t m1, int32_t p0,
                                               int32_t np, const int8_t *col, int32_t x_zp, const uint8_t *tab)
{
    if (tab != NULL) { /* (so no output tests it again) */
        conv_gemm(c, d, q, cp, n, m0, m1, p0, np, col, x_zp, NULL, tab);
    }
}
#endif

/* Pixels a chunk holds at most when weight zero points need their column sums (Helium: more, as
 * each chunk costs every channel arena_mve_gemm_row_wz's set-up). */
#if defined(__ARM_FEATURE_MVE)
#define SUM_PIXELS 128
#else
#define SUM_PIXELS 64
#endif

/* A conv that is not depthwise: im2col columns of as many pixels as the buffer (the
 * planned workspace when it holds a column, else COL_STACK_BYTES on the stack) holds, then the GEMM. 0 when not
 * even one column fits (the caller runs the reference loop); 2 when the conv's table
 * (arena_conv_table) is in the codes written, else 1. u8: the input is uint8 (the
 * columns are flipped to int8, x_zp is minus 128). */
static int conv_im2col(const arena_ctx_t *c, const arena_conv_dims_t *d, const qpar_t *q, int u8, int32_t x_zp,
                       const float *mc)
{
    int8_t stack_col[COL_STACK_BYTES];
    int32_t sums[SUM_PIXELS];
    const int8_t *x = (const int8_t *)arena_in_data(c, 0);
    int8_t *col = stack_col;
    uint32_t cap = COL_STACK_BYTES;
    int32_t ohw = d->oh * d->ow, n, g, p0, chunk;
    int8_t pad = (int8_t)(u8 ? x_zp + 128 : x_zp); /* the zero point's byte in the input's own type */
    cparams_t cp = cparams(c);
#if defined(CONV_TABLE)
    const uint8_t *tab = arena_conv_table(c);
#endif
    const void *gtp = NULL;
#if defined(__ARM_FEATURE_MVE)
    gather_t gt;
    if (gather_of(&gt, d, c->op->attrs)) {
        gtp = &gt;
    }
#endif
    cp.mc = mc;
    if (c->op->workspace >= 0) {
        const arena_tensor_t *wst = &c->m->tensors[c->op->workspace];
        if ((wst->dtype == ARENA_DT_INT8 || wst->dtype == ARENA_DT_UINT8) && wst->elements >= (uint32_t)d->kk) {
            col = (int8_t *)arena_tensor_data(c->m, c->base, c->op->workspace);
            cap = wst->elements;
        }
    }
    if (d->kk < 1 || (uint32_t)d->kk > cap) {
        return 0;
    }
    chunk = (int32_t)(cap / (uint32_t)d->kk);
#if defined(__ARM_FEATURE_MVE)
    if (chunk > 4 && chunk < ohw) {
        chunk &= ~3; /* whole steps of arena_mve_gemm_row's 4 columns */
    }
#endif
    if (cp.wz != NULL && chunk > SUM_PIXELS) {
        chunk = SUM_PIXELS;
    }
    for (n = 0; n < d->n; ++n) {
        for (g = 0; g < d->groups; ++g) {
            for (p0 = 0; p0 < ohw; p0 += chunk) {
                int32_t np = ohw - p0 < chunk ? ohw - p0 : chunk;
                if (!im2col(x, d, c->op->attrs, n, g, p0, np, pad, col, gtp, u8) && u8) {
                    flip_u8(col, (size_t)np * (size_t)d->kk);
                }
                if (cp.wz != NULL) {
                    col_sums(sums, col, np, d->kk, x_zp);
                }
#if defined(ARENA_MVE_F)
                mve_gemm(c, d, &cp, q, n, g * d->mg, (g + 1) * d->mg, p0, np, col, x_zp, cp.wz != NULL ? sums : NULL);
#else
                if (cp.wz != NULL) {
                    gemm_asym(c, d, q, &cp, n, g * d->mg, (g + 1) * d->mg, p0, np, col, x_zp, sums);
#if defined(CONV_TABLE)
                } else if (tab != NULL) {
                    gemm_tab(c, d, q, &cp, n, g * d->mg, (g + 1) * d->mg, p0, np, col, x_zp, tab);
#endif
                } else {
                    gemm_sym(c, d, q, &cp, n, g * d->mg, (g + 1) * d->mg, p0, np, col, x_zp);
                }
#endif
            }
        }
    }
#if defined(CONV_TABLE)
    return tab != NULL && cp.wz == NULL ? 2 : 1;
#else
    return 1;
#endif
}

/* Channels whose multipliers conv_im2col and the depthwise kernel take precomputed without an
 * FPU: each chunk of pixels (each depthwise plane) would otherwise pay two soft-float calls a
 * channel (a K = 256 pointwise layer's chunk is 4 pixels). */
#define MULT_CACHE 256

int arena_i8_conv(const arena_ctx_t *c, const arena_conv_dims_t *d, int32_t lo, int32_t hi, void *dw_temp)
{
    qpar_t q = qpar(arena_q_zp(c, 7, 0), lo, hi);
    cparams_t cp;
    int32_t m, x_zp;
    const float *mcp = NULL, *ws;
    uint32_t step;
#if !ARENA_HAVE_FPU
    float mc[MULT_CACHE];
#endif
    int u8 = act_in(c, 0, &x_zp);
    if (u8 < 0 || arena_in(c, 3)->dtype != ARENA_DT_INT8 || !q8_out(c)) {
        return 0;
    }
    cp = cparams(c);
    step = cp.nws > 1u ? 1u : 0u;
    for (m = 0, ws = cp.ws; m < d->m; ++m, ws += step) {
        float mult = cp.xs * *ws / cp.ys; /* chan()'s */
        if (!mult_nonneg(mult)) { /* requant_i takes mult >= 0 (the lowering's scales are > 0) */
            return 0;
        }
#if !ARENA_HAVE_FPU
        if (m < MULT_CACHE) {
            mc[m] = mult;
        }
#endif
    }
#if !ARENA_HAVE_FPU
    mcp = d->m <= MULT_CACHE ? mc : NULL;
#endif
    if (d->groups == d->c && d->cg == 1 && (d->m == d->c || d->groups > 1)) { /* depthwise, or a multiplier */
        return arena_i8_depthwise(c, d, &q, (int8_t *)dw_temp, u8, x_zp, mcp);
    }
    return conv_im2col(c, d, &q, u8, x_zp, mcp);
}
