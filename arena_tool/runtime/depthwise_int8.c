/* QLinearConv's int8 fast path for a depthwise conv (group == C, M a multiple of C: a channel
 * multiplier): one plane at a time, through a band of padded input rows on the stack
 * (DW_BAND_BYTES), any kernel size, stride and dilation. On DSP cores 3x3 undilated windows
 * take dw3_block (two outputs per load at stride 1), 5x5 ones dw5_block (a load, two SMLADs and
 * an SMLABB a row) and every other undilated row of taps dwk_block (four taps a load, two SMLADs); a Kx1 kernel down a 1-wide plane (a DS-TCN's
 * time axis) runs as the 1xK kernel along a 1-high plane it is, so a band row holds the
 * whole plane. Each channel's kernel is first made w - wz (int16 taps) or, for dwk_block,
 * halfword pairs. On Helium (ARENA_MVE_F) 3x3 windows take dw_mve3 / dw_mve3_plane, other windows
 * of at most 32 taps dw_mve_window (gathered byte vectors, VMLADAV), and rows of at most 16 taps
 * over whole unpadded 1-high planes (a DS-TCN's) dw_mve_rows, straight from the planes.
 *
 * Workspace: none of its own; planned in place (y at x's address) each input channel is copied
 * into the op's one-channel workspace before its output is written (arena_dw_in_place, temp). */
#include <string.h>

#include "support_int8.h"

/* A block of depthwise outputs computed from a band (see dw_plane): nh rows of n outputs,
 * output (i, j) from the window at band + i * rstep + j * sw, rows width apart. */
typedef struct {
    const int8_t *band;  /* the band, or the plane itself (rows W apart); int8 bytes */
    const int16_t *w;    /* dw3_block, dw5_block, dw_block: the kernel KH x KW, w - wz */
    const uint32_t *wp;  /* dwk_block: per row, groups of 4 taps (zero past KW) as (w0, w2), (w1, w3) */
    const int8_t *wrow;  /* dwk_row: the model's kernel (1 x KW); its last KW % 4 taps packed in tail */
    uint32_t tail[2];
    int8_t *dst;         /* output (0, 0); rows dstride apart */
    int32_t width, n, nh, sw, rstep, dstride, kh, kw, dh, dwl, groups;
    int32_t fold;        /* dw3_block, dw5_block, dw_block: x_zp * sum(w - wz), every tap inside the band */
    uint32_t nz, nwz;    /* dwk_block, dwk_row: (-x_zp, -x_zp) and (-wz, -wz) as halfwords */
    int32_t u8;          /* DSP kernels: the bytes are uint8 as stored (nz, fold: their zero point's), not flipped */
} dw_block_t;

/* Taps of a channel's kernel the fast path takes (its int16 copy, and dwk_block's packed
 * pairs: at most as many halfwords as taps plus 3 a row). */
#define DW_TAPS 128

/* Which block kernel a depthwise conv's windows take (dw_kind). */
enum { DW_ANY, DW_3X3, DW_PACKED, DW_ROW, DW_5X5 };

/* (-v, -v) as two halfwords: what SXTAB16 adds to subtract a zero point v. */
static inline uint32_t neg2(int32_t v)
{
    return ((uint32_t)(-v) & 0xFFFFu) * 0x10001u;
}

#if defined(__ARM_FEATURE_DSP)
/* F(..., u8) for int8 bytes or uint8 ones as stored (flag): specialized per dtype in a speed build,
 * one copy with the dtype a runtime flag in a size build (-Os), where flash is what a part lacks. */
#if defined(__OPTIMIZE_SIZE__)
#define BY_DTYPE(flag, F, ...) F(__VA_ARGS__, (flag))
#else
#define BY_DTYPE(flag, F, ...) do { if (flag) { F(__VA_ARGS__, 1); } else { F(__VA_ARGS__, 0); } } while (0)
#endif

/* A chan_t with the block's fold taken off its bias (bias_add wraps, so the sums are equal)
 * and the output parameters, copied so the loops keep them in registers. */
static inline __attribute__((always_inline)) chan_t folded(const chan_t *ch, int32_t fold)
{
    chan_t c = *ch;
    c.bias = (int32_t)((uint32_t)c.bias - (uint32_t)fold);
    return c;
}

/* Bytes 0, 2 and 1, 3 of v as halfwords: sign-extended (SXTB16), or zero-extended for a uint8
 * input's bytes (UXTB16, u8 a constant where inlined; the fold then takes the uint8 zero point). */
#define B_LO(v, u8) ((u8) ? (uint32_t)__uxtb16(v) : W_LO(v))
#define B_HI(v, u8) ((u8) ? uxtb16_ror8(v) : W_HI(v))

#if !defined(__OPTIMIZE_SIZE__) /* a size build runs 3x3 kernels as dwk_block does any other */
/* 3x3, no dilation: per kernel row one 32-bit load x0..x3, (x0, x2) . (w0, w2) by SMLAD and
 * x1 * w1 by SMLABB; at stride 1 the same load gives the next output too, (x1, x3) . (w0, w2)
 * and x2 * w1 (SMLATB). The rows unrolled, the kernel in registers. */
static inline __attribute__((always_inline)) void dw3_block_t(const dw_block_t *b, const qpar_t *q, const chan_t *ch,
                                                             const int u8)
{
    const int16_t *wk = b->w;
    const uint32_t w02a = (uint32_t)(uint16_t)wk[0] | (uint32_t)(uint16_t)wk[2] << 16, w1a = (uint16_t)wk[1];
    const uint32_t w02b = (uint32_t)(uint16_t)wk[3] | (uint32_t)(uint16_t)wk[5] << 16, w1b = (uint16_t)wk[4];
    const uint32_t w02c = (uint32_t)(uint16_t)wk[6] | (uint32_t)(uint16_t)wk[8] << 16, w1c = (uint16_t)wk[7];
    const qpar_t qq = *q;
    const chan_t cc = folded(ch, b->fold);
    int32_t i, j, W = b->width, n = b->n, sw = b->sw;
    for (i = 0; i < b->nh; ++i) {
        const int8_t *r = b->band + i * b->rstep;
        int8_t *dst = b->dst + i * b->dstride;
        j = 0;
        if (sw == 1) {
            for (; j + 1 < n; j += 2, r += 2) {
                uint32_t va = ld4(r), vb = ld4(r + W), vc = ld4(r + 2 * W);
                uint32_t la = B_LO(va, u8), ha = B_HI(va, u8), lb = B_LO(vb, u8), hb = B_HI(vb, u8), lc = B_LO(vc, u8), hc = B_HI(vc, u8);
                int32_t a0 = MAC2(la, w02a, 0), a1 = MAC2(ha, w02a, 0);
                a0 = __smlabb((int32_t)ha, (int32_t)w1a, a0);
                a1 = __smlatb((int32_t)la, (int32_t)w1a, a1);
                a0 = MAC2(lb, w02b, a0);
                a1 = MAC2(hb, w02b, a1);
                a0 = __smlabb((int32_t)hb, (int32_t)w1b, a0);
                a1 = __smlatb((int32_t)lb, (int32_t)w1b, a1);
                a0 = MAC2(lc, w02c, a0);
                a1 = MAC2(hc, w02c, a1);
                a0 = __smlabb((int32_t)hc, (int32_t)w1c, a0);
                a1 = __smlatb((int32_t)lc, (int32_t)w1c, a1);
                dst[j] = store(&qq, &cc, a0);
                dst[j + 1] = store(&qq, &cc, a1);
            }
        }
        for (; j < n; ++j, r += sw) {
            uint32_t va = ld4(r), vb = ld4(r + W), vc = ld4(r + 2 * W);
            int32_t acc = MAC2(B_LO(va, u8), w02a, 0);
            acc = __smlabb((int32_t)B_HI(va, u8), (int32_t)w1a, acc);
            acc = MAC2(B_LO(vb, u8), w02b, acc);
            acc = __smlabb((int32_t)B_HI(vb, u8), (int32_t)w1b, acc);
            acc = MAC2(B_LO(vc, u8), w02c, acc);
            acc = __smlabb((int32_t)B_HI(vc, u8), (int32_t)w1c, acc);
            dst[j] = store(&qq, &cc, acc);
        }
    }
}

/* dw3_block_t for int8 bytes, or uint8 ones as stored (b->u8). */
static __attribute__((noinline)) void dw3_block(const dw_block_t *b, const qpar_t *q, const chan_t *ch)
{
    BY_DTYPE(b->u8, dw3_block_t, b, q, ch);
}
#endif /* !__OPTIMIZE_SIZE__ */

#if !defined(__OPTIMIZE_SIZE__) /* a size build runs 5x5 kernels as dwk_block does any other */
/* One row of a 5x5 window at p: (x0, x2) . (w0, w2) and (x1, x3) . (w1, w3) by two SMLADs on one
 * 32-bit load, x4 * w4 by SMLABB. */
static inline __attribute__((always_inline)) int32_t row5(const int8_t *p, const uint32_t *w, int32_t acc,
                                                          const int u8)
{
    uint32_t v = ld4(p);
    acc = MAC2(B_LO(v, u8), w[0], acc);
    acc = MAC2(B_HI(v, u8), w[1], acc);
    return __smlabb(u8 ? (int32_t)(uint8_t)p[4] : (int32_t)p[4], (int32_t)w[2], acc);
}

/* 5x5, no dilation: row5 per kernel row, the rows unrolled, x's zero point folded as in
 * dw3_block (b->fold: every tap inside the band). */
static inline __attribute__((always_inline)) void dw5_block_t(const dw_block_t *b, const qpar_t *q, const chan_t *ch,
                                                             const int u8)
{
    uint32_t wr[15];
    const qpar_t qq = *q;
    const chan_t cc = folded(ch, b->fold);
    int32_t i, j, ky, W = b->width, n = b->n, sw = b->sw;
    for (ky = 0; ky < 5; ++ky) {
        const int16_t *w = b->w + 5 * ky;
        wr[3 * ky] = (uint32_t)(uint16_t)w[0] | (uint32_t)(uint16_t)w[2] << 16;
        wr[3 * ky + 1] = (uint32_t)(uint16_t)w[1] | (uint32_t)(uint16_t)w[3] << 16;
        wr[3 * ky + 2] = (uint32_t)(uint16_t)w[4];
    }
    for (i = 0; i < b->nh; ++i) {
        const int8_t *r = b->band + i * b->rstep;
        int8_t *dst = b->dst + i * b->dstride;
        for (j = 0; j < n; ++j, r += sw) {
            int32_t acc = row5(r, wr, 0, u8);
            acc = row5(r + W, wr + 3, acc, u8);
            acc = row5(r + 2 * W, wr + 6, acc, u8);
            acc = row5(r + 3 * W, wr + 9, acc, u8);
            acc = row5(r + 4 * W, wr + 12, acc, u8);
            dst[j] = store(&qq, &cc, acc);
        }
    }
}

/* dw5_block_t for int8 bytes, or uint8 ones as stored (b->u8). */
static __attribute__((noinline)) void dw5_block(const dw_block_t *b, const qpar_t *q, const chan_t *ch)
{
    BY_DTYPE(b->u8, dw5_block_t, b, q, ch);
}
#endif /* !__OPTIMIZE_SIZE__ */

/* Any kernel undilated along its rows: per row of taps, four at a time, one 32-bit load
 * x0..x3 minus x_zp as (x0, x2), (x1, x3) (SXTAB16) into two SMLADs with the packed pairs;
 * a row's last group has zero weights past KW (its load stays inside the band: 3 spare bytes). */
static inline __attribute__((always_inline)) void dwk_block_t(const dw_block_t *b, const qpar_t *q, const chan_t *ch,
                                                             const int u8)
{
    int32_t i, j, ky, g, kh = b->kh, groups = b->groups, rowstep = b->dh * b->width;
    uint32_t nz = b->nz;
    for (i = 0; i < b->nh; ++i) {
        const int8_t *r0 = b->band + i * b->rstep;
        int8_t *dst = b->dst + i * b->dstride;
        for (j = 0; j < b->n; ++j, r0 += b->sw) {
            const int8_t *r = r0;
            const uint32_t *wp = b->wp;
            int32_t acc = 0;
            for (ky = 0; ky < kh; ++ky, r += rowstep) {
                for (g = 0; g < groups; ++g, wp += 2) {
                    uint32_t v = ld4(r + 4 * g);
                    acc = MAC2(X_LO16(v, nz, u8), wp[0], acc);
                    acc = MAC2(X_HI16(v, nz, u8), wp[1], acc);
                }
            }
            dst[j] = store(q, ch, acc);
        }
    }
}

/* dwk_block_t for int8 bytes, or uint8 ones as stored (b->u8). */
static __attribute__((noinline)) void dwk_block(const dw_block_t *b, const qpar_t *q, const chan_t *ch)
{
    BY_DTYPE(b->u8, dwk_block_t, b, q, ch);
}

/* One output of a row of taps: the window at p against the kernel's groups of 4 taps
 * [w, wend) but the last, read straight from the model, x and w minus their zero points by
 * SXTAB16 (x's uint8 bytes, u8, by UXTAB16), then the last 1 to 4 taps' packed pairs t0, t1. */
static inline __attribute__((always_inline)) int32_t row_dot(const int8_t *p, const int8_t *w, const int8_t *wend,
                                                             uint32_t nz, uint32_t nwz, uint32_t t0, uint32_t t1,
                                                             const int u8)
{
    int32_t acc = 0;
    uint32_t v;
    for (; w != wend; w += 4, p += 4) {
        uint32_t u = ld4(w);
        v = ld4(p);
        acc = MAC2(X_LO16(v, nz, u8), LO16(u, nwz), acc);
        acc = MAC2(X_HI16(v, nz, u8), HI16(u, nwz), acc);
    }
    v = ld4(p);
    acc = MAC2(X_LO16(v, nz, u8), t0, acc);
    return MAC2(X_HI16(v, nz, u8), t1, acc);
}

static inline __attribute__((always_inline)) void dwk_row_t(const dw_block_t *b, const qpar_t *q, const chan_t *ch,
                                                           const int u8)
{
    const int8_t *wend = b->wrow + 4 * b->groups;
    uint32_t nz = b->nz, nwz = b->nwz, t0 = b->tail[0], t1 = b->tail[1];
    int32_t i, j, n = b->n, sw = b->sw;
    for (i = 0; i < b->nh; ++i) { /* a 1xK kernel over a plane of more than one row: nh rows */
        const int8_t *r = b->band + i * b->rstep;
        int8_t *dst = b->dst + i * b->dstride;
        for (j = 0; j < n; ++j, r += sw) {
            dst[j] = store(q, ch, row_dot(r, b->wrow, wend, nz, nwz, t0, t1, u8));
        }
    }
}

/* One row of taps (KH 1, undilated: a 1xK kernel, or a Kx1 one down a 1-wide plane): row_dot
 * per output, the model's weights read directly (no copy per channel). */
static __attribute__((noinline)) void dwk_row(const dw_block_t *b, const qpar_t *q, const chan_t *ch)
{
    BY_DTYPE(b->u8, dwk_row_t, b, q, ch);
}

/* Taps k0 .. k0 + 3 of w (those below kw; the others 0) minus wz, as halfword pairs (w0, w2), (w1, w3). */
static inline void pack4(uint32_t wp[2], const int8_t *w, int32_t k0, int32_t kw, int32_t wz)
{
    uint32_t t0 = 0u, t1 = 0u;
    w += k0;
    switch (kw - k0 < 4 ? kw - k0 : 4) {
    case 4: t1 = (uint32_t)(uint16_t)(w[3] - wz) << 16; /* fall through */
    case 3: t0 = (uint32_t)(uint16_t)(w[2] - wz) << 16; /* fall through */
    case 2: t1 |= (uint16_t)(w[1] - wz); /* fall through */
    case 1: t0 |= (uint16_t)(w[0] - wz); break;
    default: break;
    }
    wp[0] = t0;
    wp[1] = t1;
}

#if !defined(__OPTIMIZE_SIZE__) /* a size build runs those rows through dwk_row, channel by channel */
/* The first count output channels of a conv whose every channel is one row of taps over a
 * whole 1-high plane read in place (arena_i8_depthwise's row case; channel m from plane
 * m / mult): per channel its multiplier, bias and weight zero point, the last group's taps by
 * one load masked to the kernel (the caller keeps it inside the weights), then row_dot per
 * output, in one loop (a DS-TCN's last depthwise conv has one output per channel, so this
 * set-up is most of its work). */
static inline __attribute__((always_inline)) void dw_rows_t(const dw_block_t *k, const cparams_t *cp, const qpar_t *q,
                                                           const int8_t *x, int8_t *y, const int8_t *w,
                                                           int32_t count, int32_t plane, int32_t oplane, int32_t mult,
                                                           const int u8, const int one)
{
    const int32_t kw = k->kw, n = one ? 1 : k->n, sw = k->sw, g4 = 4 * k->groups, r = kw - g4;
    const uint32_t m0 = r >= 3 ? 0xFFFFFFFFu : 0xFFFFu, m1 = r == 4 ? 0xFFFFFFFFu : r >= 2 ? 0xFFFFu : 0u;
    const uint32_t nz = k->nz;
    const qpar_t qq = *q;
#if ARENA_HAVE_FPU /* chan()'s fields without its branches: an absent bias or zero point as a 0 read at index 0 */
    static const int32_t no_bias = 0;
    static const int8_t no_wz = 0;
    const float xs = cp->xs, ys = cp->ys, *ws = cp->ws;
    const int32_t *bias = cp->bias != NULL ? cp->bias : &no_bias;
    const int8_t *wz = cp->wz != NULL ? cp->wz : &no_wz;
    const uint32_t wsm = cp->nws > 1u ? ~0u : 0u, bm = cp->bias != NULL ? ~0u : 0u,
                   wzm = cp->wz != NULL && cp->nwz > 1u ? ~0u : 0u;
#endif
    int32_t m, j;
    for (m = 0; m < count; ++m, y += oplane, w += kw) {
#if ARENA_HAVE_FPU
        chan_t ch;
        ch.mult = xs * ws[(uint32_t)m & wsm] / ys;
        ch.bias = bias[(uint32_t)m & bm];
        ch.wz = wz[(uint32_t)m & wzm];
#else
        const chan_t ch = chan(cp, m);
#endif
        const uint32_t nwz = neg2(ch.wz), u = ld4(w + g4), t0 = LO16(u, nwz) & m0, t1 = HI16(u, nwz) & m1;
        const int8_t *p = x + m / mult * plane;
        for (j = 0; j < n; ++j, p += sw) {
            y[j] = store(&qq, &ch, row_dot(p, w, w + g4, nz, nwz, t0, t1, u8));
        }
    }
}

static __attribute__((noinline)) void dw_rows(const dw_block_t *k, const cparams_t *cp, const qpar_t *q,
                                              const int8_t *x, int8_t *y, const int8_t *w, int32_t count,
                                              int32_t plane, int32_t oplane, int32_t mult)
{
    if (k->n == 1) { /* one output a channel (a DS-TCN's last depthwise conv): no loop over outputs */
        if (k->u8) {
            dw_rows_t(k, cp, q, x, y, w, count, plane, oplane, mult, 1, 1);
        } else {
            dw_rows_t(k, cp, q, x, y, w, count, plane, oplane, mult, 0, 1);
        }
    } else if (k->u8) {
        dw_rows_t(k, cp, q, x, y, w, count, plane, oplane, mult, 1, 0);
    } else {
        dw_rows_t(k, cp, q, x, y, w, count, plane, oplane, mult, 0, 0);
    }
}
#endif /* !__OPTIMIZE_SIZE__ */
#else
/* One kernel row of two outputs sw apart: each tap's two inputs packed in one word, x + x' 2^23,
 * times the weight into one 64-bit sum (SMLAL on Armv7-M: two multiply-accumulates in one). */
#define DW3_ROW2(r, w0, w1, w2, sw, acc)                                                                            \
    do {                                                                                                            \
        acc += (int64_t)(w0) * ((int32_t)(r)[0] + (int32_t)(r)[sw] * 0x800000);                                     \
        acc += (int64_t)(w1) * ((int32_t)(r)[1] + (int32_t)(r)[(sw) + 1] * 0x800000);                               \
        acc += (int64_t)(w2) * ((int32_t)(r)[2] + (int32_t)(r)[(sw) + 2] * 0x800000);                               \
    } while (0)

/* 3x3, no dilation, in C: two outputs a step (DW3_ROW2; |sum| <= 9 * 255 * 128 < 2^22, so the
 * two split exactly: lo23, hi23), the block's fold taken off the bias once. */
static __attribute__((noinline)) void dw3_block(const dw_block_t *b, const qpar_t *q, const chan_t *ch)
{
    const int16_t *w = b->w;
    const int32_t w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3], w4 = w[4], w5 = w[5], w6 = w[6], w7 = w[7], w8 = w[8];
    const qpar_t qq = *q;
    chan_t cc = *ch;
    int32_t i, j, sw = b->sw;
    cc.bias = (int32_t)((uint32_t)cc.bias - (uint32_t)b->fold); /* bias_add wraps: the same sums */
    for (i = 0; i < b->nh; ++i) {
        const int8_t *r0 = b->band + i * b->rstep, *r1 = r0 + b->width, *r2 = r1 + b->width;
        int8_t *dst = b->dst + i * b->dstride;
        for (j = 0; j + 1 < b->n; j += 2, r0 += 2 * sw, r1 += 2 * sw, r2 += 2 * sw) {
            int64_t acc = 0;
            DW3_ROW2(r0, w0, w1, w2, sw, acc);
            DW3_ROW2(r1, w3, w4, w5, sw, acc);
            DW3_ROW2(r2, w6, w7, w8, sw, acc);
            dst[j] = store(&qq, &cc, lo23(acc));
            dst[j + 1] = store(&qq, &cc, hi23(acc));
        }
        if (j < b->n) {
            int32_t acc = r0[0] * w0 + r0[1] * w1 + r0[2] * w2 + r1[0] * w3 + r1[1] * w4 + r1[2] * w5 + r2[0] * w6
                          + r2[1] * w7 + r2[2] * w8;
            dst[j] = store(&qq, &cc, acc);
        }
    }
}
#undef DW3_ROW2
#endif

/* Any kernel size and dilation: the block's fields, the output parameters and the kernel's
 * position in locals, the taps walked by pointers (the fields re-read per tap cost more than the
 * multiply-accumulate on cores without the DSP extension, whose Kx1 and 1xK kernels run here). */
static __attribute__((noinline)) void dw_block(const dw_block_t *b, const qpar_t *q, const chan_t *ch)
{
    const int16_t *const wk = b->w;
    const int32_t kh = b->kh, kw = b->kw, dwl = b->dwl, rs = b->dh * b->width, sw = b->sw, n = b->n;
    const qpar_t qq = *q;
    chan_t cc = *ch;
    int32_t i, j, ky, kx;
    cc.bias = (int32_t)((uint32_t)cc.bias - (uint32_t)b->fold); /* bias_add wraps: the same sums */
    for (i = 0; i < b->nh; ++i) {
        const int8_t *r0 = b->band + i * b->rstep;
        int8_t *dst = b->dst + i * b->dstride;
        for (j = 0; j < n; ++j, r0 += sw) {
            const int8_t *r = r0;
            const int16_t *w = wk;
            int32_t acc = 0;
            for (ky = 0; ky < kh; ++ky, r += rs) {
                const int8_t *p = r;
                for (kx = 0; kx < kw; ++kx, p += dwl) {
                    acc += (int32_t)*p * (int32_t)*w++;
                }
            }
            dst[j] = store(&qq, &cc, acc);
        }
    }
}

#if defined(ARENA_MVE_F)
/* The 4 sums of a step of a 3x3 kernel: tap (ky, kx)'s 4 input bytes from row ra, rb or rc at
 * kx (LOAD(row, kx): a VLDRB.S32 gathering at the offsets 0, sw, 2 sw, 3 sw), times the tap
 * (VMLA in int32 lanes). */
#define DW_MVE_3X3(LOAD)                                                                                            \
    do {                                                                                                            \
        acc = vmulq_n_s32(LOAD(ra, 0), w0);                                                                         \
        acc = vmlaq_n_s32(acc, LOAD(ra, 1), w1);                                                                    \
        acc = vmlaq_n_s32(acc, LOAD(ra, 2), w2);                                                                    \
        acc = vmlaq_n_s32(acc, LOAD(rb, 0), w3);                                                                    \
        acc = vmlaq_n_s32(acc, LOAD(rb, 1), w4);                                                                    \
        acc = vmlaq_n_s32(acc, LOAD(rb, 2), w5);                                                                    \
        acc = vmlaq_n_s32(acc, LOAD(rc, 0), w6);                                                                    \
        acc = vmlaq_n_s32(acc, LOAD(rc, 1), w7);                                                                    \
        acc = vmlaq_n_s32(acc, LOAD(rc, 2), w8);                                                                    \
    } while (0)

/* Rows and columns of the 16 lanes of a 4 x 4 patch (dw_mve3's 2 x 2 blocks at stride 1) and of
 * a 3 x 5 one (its 1 x 2 blocks at a column stride of 2; lane 15 unused, at offset 0). */
static const uint8_t DW_R4[16] = {0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3};
static const uint8_t DW_C4[16] = {0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3};
static const uint8_t DW_R5[16] = {0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 0};
static const uint8_t DW_C5[16] = {0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 0};
/* The 3 x 5 patch's lanes in columns 0-2 (one output's window). */
#define DW_LEFT3 0x1CE7

/* The sums of one gathered patch x against two or four placed kernels, requantized and stored. */
#define DW3_SUM(x, wv) vmladavq_s8((x), (wv))

/* 3x3 undilated on Helium, by whole-vector dot products (VMLADAV.S8): one gathering VLDRB.8 of
 * the input patch a block of outputs reads (stride 1: a 4 x 4 patch for a 2 x 2 block of
 * outputs; a column stride of 2: a 3 x 5 patch for 2 outputs of a row), each output the dot
 * product of the patch with the kernel placed at its window (zero elsewhere: the patch's bytes
 * as stored, x's zero point folded into the bias as dw_block's fold), the 4 sums requantized
 * together (store4; a 2 x 2 block by a scattering VSTRB.32). Needs taps that fit int8 (w - wz)
 * and patch offsets that fit a byte; 0 otherwise (dw_mve_block's lanes then). */
static __attribute__((noinline)) int dw_mve3(const dw_block_t *b, const qpar_t *q, const chan_t *ch)
{
    int8_t wb[48];
    int32_t s[4];
    const int16_t *wk = b->w;
    const qpar_t qq = *q;
    const int32_t bias = (int32_t)((uint32_t)ch->bias - (uint32_t)b->fold);
    const float mult = ch->mult;
    const int32_t W = b->width, n = b->n, nh = b->nh, rstep = b->rstep, ds = b->dstride;
    const int s1 = b->sw == 1 && rstep == W, g = s1 ? 4 : 5;
    const int8_t *band = b->band;
    int32_t t, i, j;
    if (s1 ? W > 84 : b->sw != 2 || W > 125) {
        return 0;
    }
    memset(wb, 0, sizeof wb);
    for (t = 0; t < 9; ++t) {
        if (wk[t] < -128 || wk[t] > 127) {
            return 0;
        }
        wb[16 + t / 3 * g + t % 3] = (int8_t)wk[t];
    }
    if (s1) {
        const uint8x16_t off = vmlaq_n_u8(vldrbq_u8(DW_C4), vldrbq_u8(DW_R4), (uint8_t)W);
        const int8x16_t w00 = vldrbq_s8(wb + 16), w01 = vldrbq_s8(wb + 15), w10 = vldrbq_s8(wb + 12),
                        w11 = vldrbq_s8(wb + 11);
        const uint32_t so_a[4] = {0u, 1u, (uint32_t)ds, (uint32_t)ds + 1u};
        const uint32x4_t so = vldrwq_u32(so_a);
        for (i = 0; i < nh; i += 2) {
            const int8_t *r = band + i * W;
            int8_t *dst = b->dst + i * ds;
            /* a last odd row: its patch row 3 not read, its 2 outputs not stored */
            const mve_pred16_t pl = i + 1 < nh ? 0xFFFF : 0x0FFF, ps = i + 1 < nh ? 0xFFFF : 0x00FF;
            for (j = 0; j < n; j += 2, r += 2) {
                const int8x16_t x = vldrbq_gather_offset_z_s8(r, off, pl);
                s[0] = DW3_SUM(x, w00);
                s[1] = DW3_SUM(x, w01);
                s[2] = DW3_SUM(x, w10);
                s[3] = DW3_SUM(x, w11);
                /* a last odd column: its outputs (lanes 1, 3) not stored (its patch column is inside
                 * the band's 3 spare bytes, or the plane's next row) */
                vstrbq_scatter_offset_p_s32(dst + j, so, requant4(&qq, vldrwq_s32(s), bias, mult),
                                            j + 1 < n ? ps : (mve_pred16_t)(ps & 0x0F0F));
            }
        }
        return 1;
    }
    {
        const uint8x16_t off = vmlaq_n_u8(vldrbq_u8(DW_C5), vldrbq_u8(DW_R5), (uint8_t)W);
        const int8x16_t w0 = vldrbq_s8(wb + 16), w1 = vldrbq_s8(wb + 14);
        for (i = 0; i < nh; ++i) {
            const int8_t *r = band + i * rstep;
            int8_t *dst = b->dst + i * ds;
            for (j = 0; j + 4 <= n; j += 4, r += 8) {
                int8x16_t x = vldrbq_gather_offset_s8(r, off);
                s[0] = DW3_SUM(x, w0);
                s[1] = DW3_SUM(x, w1);
                x = vldrbq_gather_offset_s8(r + 4, off);
                s[2] = DW3_SUM(x, w0);
                s[3] = DW3_SUM(x, w1);
                store4(dst + j, &qq, vldrwq_s32(s), bias, mult);
            }
            if (j < n) { /* 1 to 3 outputs: only the patch columns their windows hold are read */
                const int32_t k = n - j;
                int8x16_t x = vldrbq_gather_offset_z_s8(r, off, k >= 2 ? 0x7FFF : DW_LEFT3);
                s[0] = DW3_SUM(x, w0);
                s[1] = DW3_SUM(x, w1);
                x = vldrbq_gather_offset_z_s8(r + 4, off, k >= 3 ? DW_LEFT3 : 0);
                s[2] = DW3_SUM(x, w0);
                s[3] = 0;
                store4_p(dst + j, &qq, vldrwq_s32(s), bias, mult, vctp32q((uint32_t)k));
            }
        }
    }
    return 1;
}
#undef DW3_SUM

/* Bytes of the copy an in-place plane is read from (dw_mve3_plane). */
#define DW_COPY_BYTES 1024

/* Lanes whose value v (a patch row or column) has lo <= v <= hi, both in the patch's coordinates. */
static inline mve_pred16_t dw_inside(uint8x16_t v, int32_t lo, int32_t hi)
{
    if (hi < lo || hi < 0) {
        return 0;
    }
    return (mve_pred16_t)(vcmpcsq_n_u8(v, (uint8_t)(lo > 0 ? lo : 0)) & ~vcmphiq_n_u8(v, (uint8_t)(hi < 255 ? hi : 255)));
}

/* Block columns dw_mve3_plane's lane masks cover: s1 ceil(OW / 2), else two gathers a block of
 * 4 outputs (dw3_setup refuses wider output rows). */
#define DW3_COLS 42

/* What a 3x3 undilated depthwise conv's planes share on Helium (dw3_setup): the patch's byte
 * offsets and rows, the output offsets of a block's 4 lanes, and per block column the patch
 * lanes inside the plane's columns (gather) and the outputs inside the output row (store). */
typedef struct {
    uint8x16_t off, R;
    uint32_t so[4];
    uint16_t pcol[DW3_COLS], scol[DW3_COLS];
    int s1;
} dw3ctx_t;

/* dw3_setup for a conv's attributes a and (plane) dims d; 0 when dw_mve3_plane does not apply:
 * strides 1 with W <= 84, or a column stride of 2 with W <= 125 (every patch offset a byte). */
static int dw3_setup(dw3ctx_t *c, const arena_conv_dims_t *d, const arena_attrs_t *a)
{
    const int32_t W = d->w, OW = d->ow, pw = a->pads[1], sw = a->strides[1];
    int32_t j, bj, k;
    uint8x16_t C;
    c->s1 = a->strides[0] == 1 && sw == 1;
    if (a->kernel[0] != 3 || a->kernel[1] != 3 || a->dilations[0] != 1 || a->dilations[1] != 1
        || !(c->s1 ? W <= 84 : sw == 2 && W <= 125) || (c->s1 ? (OW + 1) / 2 : (OW + 3) / 4 * 2) > DW3_COLS) {
        return 0;
    }
    c->R = vldrbq_u8(c->s1 ? DW_R4 : DW_R5);
    C = vldrbq_u8(c->s1 ? DW_C4 : DW_C5);
    c->off = vmlaq_n_u8(C, c->R, (uint8_t)W);
    c->so[0] = 0u;
    c->so[1] = 1u;
    c->so[2] = c->s1 ? (uint32_t)OW : 2u;
    c->so[3] = c->s1 ? (uint32_t)OW + 1u : 3u;
    for (j = 0, bj = 0; j < OW; j += c->s1 ? 2 : 4, ++bj) {
        for (k = 0; k < (c->s1 ? 1 : 2); ++k) { /* s2: the gathers at columns iw0 and iw0 + 4 */
            const int32_t iw0 = j * sw - pw + 4 * k;
            c->pcol[(c->s1 ? 1 : 2) * bj + k] = dw_inside(C, -iw0, W - 1 - iw0);
        }
        c->scol[bj] = c->s1 ? (j + 1 < OW ? 0xFFFF : 0x0F0F) : (uint16_t)vctp32q((uint32_t)(OW - j));
    }
    return 1;
}

/* Bytes of the padded copy dw_mve3_pad reads a plane's patches from (stack). */
#define DW_PAD_BYTES 1024

/* v's uint8 bytes b as the int8 bytes b - 128 when u8 (a constant where inlined), else v. */
#define DW_FLIP(v, u8) ((u8) ? veorq_s8((v), vdupq_n_s8(-128)) : (v))

/* The 2 sums of a column stride of 2's 3 x 5 patch x into s[0], s[1] (its two windows), as
 * DW3_SUMS4 does: split, the kernel's two parts placed at the second window (ka, kb) and the patch
 * moved up 2 lanes for the first. */
#define DW3_SUMS2(x, s)                                                                                             \
    do {                                                                                                            \
        if (split) {                                                                                                \
            uint32_t cy_ = 0u;                                                                                      \
            int8x16_t xs_;                                                                                          \
            (s)[1] = vmladavaq_s8(vmladavq_s8((x), ka), (x), kb);                                                  \
            xs_ = vshlcq_s8((x), &cy_, 16);                                                                         \
            (s)[0] = vmladavaq_s8(vmladavq_s8(xs_, ka), xs_, kb);                                                  \
        } else {                                                                                                    \
            (s)[0] = vmladavq_s8((x), wa16);                                                                        \
            (s)[1] = vmladavq_s8((x), wa14);                                                                        \
        }                                                                                                           \
    } while (0)

/* The 4 sums of a 2 x 2 block's 4 x 4 patch x into s[0 .. 4) (windows (0, 0), (0, 1), (1, 0),
 * (1, 1)). split: the two kernel parts placed at window (1, 1) only (ka, kb) and the patch moved
 * up by 1, 4 and 5 lanes (VSHLC: a window's bytes then where (1, 1)'s are; the lanes shifted in
 * meet zero taps), so 2 q registers hold the kernel where 8 placed windows would spill. */
#define DW3_SUMS4(x, s)                                                                                             \
    do {                                                                                                            \
        if (split) {                                                                                                \
            uint32_t cy_ = 0u;                                                                                      \
            int8x16_t xs_;                                                                                          \
            (s)[3] = vmladavaq_s8(vmladavq_s8((x), ka), (x), kb);                                                  \
            xs_ = vshlcq_s8((x), &cy_, 8);                                                                          \
            (s)[2] = vmladavaq_s8(vmladavq_s8(xs_, ka), xs_, kb);                                                  \
            xs_ = vshlcq_s8((x), &cy_, 32);                                                                         \
            (s)[1] = vmladavaq_s8(vmladavq_s8(xs_, ka), xs_, kb);                                                  \
            xs_ = vshlcq_s8(xs_, &cy_, 8);                                                                          \
            (s)[0] = vmladavaq_s8(vmladavq_s8(xs_, ka), xs_, kb);                                                  \
        } else {                                                                                                    \
            (s)[0] = vmladavq_s8((x), wa16);                                                                        \
            (s)[1] = vmladavq_s8((x), wa15);                                                                        \
            (s)[2] = vmladavq_s8((x), wa12);                                                                        \
            (s)[3] = vmladavq_s8((x), wa11);                                                                        \
        }                                                                                                           \
    } while (0)

/* dw_mve3_plane's strides-1 case from a padded copy of the plane: rows of Wp = 2 ceil(OW / 2) + 2
 * bytes, Hp = 2 ceil(OH / 2) + 2 of them (every 2 x 2 block's 4 x 4 patch inside), the input at
 * (ph, pw) and x_zp's byte pad around it, so each patch is one gather without a predicate and no
 * lane needs a VPSEL (a narrow plane, KWS's 25 x 5, has a border in every block). The copy is
 * made before any output is written: in place is safe; a uint8 input (u8) is flipped to int8 in
 * it (VEOR). wa, wb: dw_mve3_plane's placed kernels (the 4 vectors of a 2 x 2 block's windows:
 * the int8 part, and with split the rest, read from memory: no q register is left for them).
 * 0 (nothing written) when the copy does not fit DW_PAD_BYTES. */
static inline __attribute__((always_inline)) int dw_mve3_pad_t(const dw3ctx_t *c, const int8_t *src, int8_t *dst,
                                                               const arena_conv_dims_t *d, const arena_attrs_t *a,
                                                               const int8_t *wa, const int8_t *wb, const qpar_t *q,
                                                               int32_t bias, float mult, int8_t pad, const int u8,
                                                               const int split)
{
    int8_t buf[DW_PAD_BYTES + 16] __attribute__((aligned(4)));
    const int32_t H = d->h, W = d->w, OH = d->oh, OW = d->ow, ph = a->pads[0], pw = a->pads[1];
    const int32_t Wp = ((OW + 1) & ~1) + 2, Hp = ((OH + 1) & ~1) + 2;
    const int32_t nr = H < Hp - ph ? H : Hp - ph, nc = W < Wp - pw ? W : Wp - pw;
    const qpar_t qq = *q;
    int32_t i, j, bj, k, s[4];
    uint8x16_t off;
    uint32x4_t so;
    int8x16_t wa16, wa15, wa12, wa11, ka, kb, x;
    if (Hp * Wp > DW_PAD_BYTES || ph < 0 || pw < 0 || Wp > 255 / 4) {
        return 0;
    }
    x = vdupq_n_s8(pad);
    for (k = 0; k < Hp * Wp; k += 16) {
        vstrbq_s8(buf + k, x);
    }
    for (i = 0; i < nr; ++i) { /* a row's nc bytes in a tail-predicated loop (no lane past nc read) */
        const int8_t *sr = src + i * W;
        int8_t *br = buf + (ph + i) * Wp + pw;
        if (u8) {
            __asm__ volatile("vmov.i8 q1, #0x80\n\t"
                             "wlstp.8 lr, %[n], 2f\n"
                             "1:\n\t"
                             "vldrb.8 q0, [%[s]], #16\n\t"
                             "veor q0, q0, q1\n\t"
                             "vstrb.8 q0, [%[d]], #16\n\t"
                             "letp lr, 1b\n"
                             "2:"
                             : [s] "+r"(sr), [d] "+r"(br)
                             : [n] "r"(nc)
                             : "q0", "q1", "lr", "memory");
        } else {
            __asm__ volatile("wlstp.8 lr, %[n], 2f\n"
                             "1:\n\t"
                             "vldrb.8 q0, [%[s]], #16\n\t"
                             "vstrb.8 q0, [%[d]], #16\n\t"
                             "letp lr, 1b\n"
                             "2:"
                             : [s] "+r"(sr), [d] "+r"(br)
                             : [n] "r"(nc)
                             : "q0", "lr", "memory");
        }
    }
    off = vmlaq_n_u8(vldrbq_u8(DW_C4), c->R, (uint8_t)Wp);
    so = vldrwq_u32(c->so);
    wa16 = vldrbq_s8(wa + 16);
    wa15 = vldrbq_s8(wa + 15);
    wa12 = vldrbq_s8(wa + 12);
    wa11 = ka = vldrbq_s8(wa + 11);
    kb = vldrbq_s8(wb + 11);
    for (i = 0; i < OH; i += 2) {
        const int8_t *r = buf + i * Wp;
        const uint32_t srow = i + 1 < OH ? 0xFFFFu : 0x00FFu; /* a last odd row: 2 outputs */
        int8_t *dr = dst + i * OW;
        for (j = 0, bj = 0; j < OW; j += 2, ++bj) {
            x = vldrbq_gather_offset_s8(r + j, off);
            DW3_SUMS4(x, s);
            vstrbq_scatter_offset_p_s32(dr + j, so, requant4(&qq, vldrwq_s32(s), bias, mult),
                                        (mve_pred16_t)(srow & c->scol[bj]));
        }
    }
    return 1;
}

/* dw_mve3_plane's loops straight from src (u8, split as dw_mve3_pad_t's). */
static inline __attribute__((always_inline)) void dw_mve3_direct_t(const dw3ctx_t *c, const int8_t *src, int8_t *dst,
                                                                   const arena_conv_dims_t *d,
                                                                   const arena_attrs_t *a, const int8_t *wa,
                                                                   const int8_t *wb, const qpar_t *q, int32_t bias,
                                                                   float mult, int8_t pad, const int u8,
                                                                   const int split)
{
    int32_t s[4], i, j, bj;
    const qpar_t qq = *q;
    const int32_t H = d->h, W = d->w, OH = d->oh, OW = d->ow, sh = a->strides[0], ph = a->pads[0], pw = a->pads[1];
    const uint8x16_t off = c->off, R = c->R;
    const uint32x4_t so = vldrwq_u32(c->so);
    const int8x16_t padv = vdupq_n_s8(pad);
    int8x16_t wa16 = vldrbq_s8(wa + 16), wa15, wa12, wa11, wa14, ka, kb, x;
    if (c->s1) {
        wa15 = vldrbq_s8(wa + 15);
        wa12 = vldrbq_s8(wa + 12);
        wa11 = ka = vldrbq_s8(wa + 11);
        kb = vldrbq_s8(wb + 11);
        for (i = 0; i < OH; i += 2) {
            const int32_t ih0 = i - ph;
            const uintptr_t r = (uintptr_t)src + (uintptr_t)(intptr_t)(ih0 * W - pw);
            const uint32_t prow = ih0 >= 0 && ih0 + 4 <= H ? 0xFFFFu : dw_inside(R, -ih0, H - 1 - ih0);
            const uint32_t srow = i + 1 < OH ? 0xFFFFu : 0x00FFu; /* a last odd row: 2 outputs */
            int8_t *dr = dst + i * OW;
            for (j = 0, bj = 0; j < OW; j += 2, ++bj) {
                const mve_pred16_t p = (mve_pred16_t)(prow & c->pcol[bj]);
                if (p == 0xFFFF) {
                    x = DW_FLIP(vldrbq_gather_offset_s8((const int8_t *)(r + (uint32_t)j), off), u8);
                } else {
                    x = vpselq_s8(DW_FLIP(vldrbq_gather_offset_z_s8((const int8_t *)(r + (uint32_t)j), off, p), u8),
                                  padv, p);
                }
                DW3_SUMS4(x, s);
                vstrbq_scatter_offset_p_s32(dr + j, so, requant4(&qq, vldrwq_s32(s), bias, mult),
                                            (mve_pred16_t)(srow & c->scol[bj]));
            }
        }
        return;
    }
    wa14 = ka = vldrbq_s8(wa + 14);
    kb = vldrbq_s8(wb + 14);
    for (i = 0; i < OH; ++i) {
        const int32_t ih0 = i * sh - ph;
        const uintptr_t r = (uintptr_t)src + (uintptr_t)(intptr_t)(ih0 * W - pw);
        const uint32_t prow = ih0 >= 0 && ih0 + 3 <= H ? 0xFFFFu : dw_inside(R, -ih0, H - 1 - ih0);
        int8_t *dr = dst + i * OW;
        for (j = 0, bj = 0; j < OW; j += 4, ++bj) {
            mve_pred16_t p = (mve_pred16_t)(prow & c->pcol[2 * bj]);
            const int8_t *rj = (const int8_t *)(r + 2u * (uint32_t)j);
            if (p == 0xFFFF) {
                x = DW_FLIP(vldrbq_gather_offset_s8(rj, off), u8);
            } else {
                x = vpselq_s8(DW_FLIP(vldrbq_gather_offset_z_s8(rj, off, p), u8), padv, p);
            }
            DW3_SUMS2(x, s);
            p = (mve_pred16_t)(prow & c->pcol[2 * bj + 1]);
            if (p == 0xFFFF) {
                x = DW_FLIP(vldrbq_gather_offset_s8(rj + 4, off), u8);
            } else {
                x = vpselq_s8(DW_FLIP(vldrbq_gather_offset_z_s8(rj + 4, off, p), u8), padv, p);
            }
            DW3_SUMS2(x, s + 2);
            vstrbq_p_s32(dr + j, requant4(&qq, vldrwq_s32(s), bias, mult), c->scol[bj]);
        }
    }
}
#undef DW3_SUMS2
#undef DW3_SUMS4

/* F(..., u8, split) specialized for both flags in a speed build, one copy taking them at run time
 * in a size build (-Os). */
#if defined(__OPTIMIZE_SIZE__)
#define DW3_BY(u8, split, F, ...) F(__VA_ARGS__, (u8), (split))
#else
#define DW3_BY(u8, split, F, ...)                                                                                   \
    ((u8) ? ((split) ? F(__VA_ARGS__, 1, 1) : F(__VA_ARGS__, 1, 0)) : ((split) ? F(__VA_ARGS__, 0, 1) : F(__VA_ARGS__, 0, 0)))
#endif

/* A whole 3x3 undilated depthwise plane on Helium straight from the input (no band): dw_mve3's
 * patches gathered from src (H x W) at each block's window, the lanes outside the plane not
 * read and given x_zp's byte pad (VPSEL; the fold counts them as x_zp, as the band's padding).
 * s1 (strides 1): 2 x 2 blocks from 4 x 4 patches (from a padded copy when it fits:
 * dw_mve3_pad_t); else (a column stride of 2): 4 outputs of a row from two 3 x 5 patches.
 * u8: src's bytes are uint8, flipped to int8 as read (pad: x_zp's int8 byte). wk: the kernel
 * minus wz; a tap past int8 (a weight zero point's: w - wz spans up to [-255, 255]) is split
 * into its int8 clamp and the rest, each placed in its own vectors (two VMLADAVs an output).
 * copy: src is overwritten by dst (in place, planes of at most DW_COPY_BYTES): read from a copy.
 * 0 (nothing written) when a tap's rest does not fit int8 either (w - wz = 255). */
static __attribute__((noinline)) int dw_mve3_plane(const dw3ctx_t *c, const int8_t *src, int8_t *dst,
                                                   const arena_conv_dims_t *d, const arena_attrs_t *a,
                                                   const int16_t *wk, const qpar_t *q, const chan_t *ch,
                                                   int32_t fold, int8_t pad, int copy, int u8)
{
    int8_t wa[48] __attribute__((aligned(4))), wb[48] __attribute__((aligned(4))), own[DW_COPY_BYTES];
    const int32_t bias = (int32_t)((uint32_t)ch->bias - (uint32_t)fold);
    const float mult = ch->mult;
    const int g = c->s1 ? 4 : 5;
    const int16x8_t w8 = vldrhq_s16(wk);
    const int split = vmaxvq_s16(wk[8], w8) > 127 || vminvq_s16(wk[8], w8) < -128;
    int32_t t;
    vstrbq_s8(wa, vdupq_n_s8(0));
    vstrbq_s8(wa + 16, vdupq_n_s8(0));
    vstrbq_s8(wa + 32, vdupq_n_s8(0));
    if (!split) {
        for (t = 0; t < 3; ++t) { /* kernel row t at patch row t */
            wa[16 + t * g] = (int8_t)wk[3 * t];
            wa[17 + t * g] = (int8_t)wk[3 * t + 1];
            wa[18 + t * g] = (int8_t)wk[3 * t + 2];
        }
    } else {
        vstrbq_s8(wb, vdupq_n_s8(0));
        vstrbq_s8(wb + 16, vdupq_n_s8(0));
        vstrbq_s8(wb + 32, vdupq_n_s8(0));
        for (t = 0; t < 9; ++t) { /* tap (t / 3, t % 3) at patch row t / 3 */
            const int32_t v = wk[t], lo = v < -128 ? -128 : v > 127 ? 127 : v;
            if (v - lo > 127) {
                return 0;
            }
            wa[16 + t / 3 * g + t % 3] = (int8_t)lo;
            wb[16 + t / 3 * g + t % 3] = (int8_t)(v - lo);
        }
    }
    if (c->s1 && DW3_BY(u8, split, dw_mve3_pad_t, c, src, dst, d, a, wa, wb, q, bias, mult, pad)) {
        return 1;
    }
    if (copy) { /* in place: the input plane copied before any output overwrites it */
        memcpy(own, src, (size_t)d->h * (size_t)d->w);
        src = own;
    }
    DW3_BY(u8, split, dw_mve3_direct_t, c, src, dst, d, a, wa, wb, q, bias, mult, pad);
    return 1;
}

/* What a depthwise conv's planes share for dw_win_plane (dw_win_setup): the padded copy's row
 * bytes wp and rows hp (every window of every step of 4 outputs inside it), and the window's
 * tap offsets in it in two byte vectors (taps 0-15, 16-31; a lane past the kernel at offset 0). */
typedef struct {
    uint8x16_t o0, o1;
    int32_t taps, wp, hp;
} dwwin_t;

/* dw_win_setup for a conv's attributes a and (plane) dims d; 0 when dw_win_plane does not apply:
 * more than 32 taps, a padded copy past DW_PAD_BYTES or a window offset past a byte. */
static int dw_win_setup(dwwin_t *c, const arena_conv_dims_t *d, const arena_attrs_t *a)
{
    uint8_t ob[32] __attribute__((aligned(4)));
    const int32_t kh = a->kernel[0], kw = a->kernel[1], dh = a->dilations[0], dwl = a->dilations[1];
    int32_t t;
    c->taps = kh * kw;
    c->wp = ((d->ow + 3) / 4 * 4 - 1) * a->strides[1] + (kw - 1) * dwl + 1;
    c->hp = (d->oh - 1) * a->strides[0] + (kh - 1) * dh + 1;
    if (c->taps > 32 || c->hp * c->wp > DW_PAD_BYTES || (kh - 1) * dh * c->wp + (kw - 1) * dwl > 255
        || a->pads[0] < 0 || a->pads[1] < 0) {
        return 0;
    }
    for (t = 0; t < 32; ++t) {
        ob[t] = t < c->taps ? (uint8_t)(t / kw * dh * c->wp + t % kw * dwl) : 0u;
    }
    c->o0 = vldrbq_u8(ob);
    c->o1 = vldrbq_u8(ob + 16);
    return 1;
}

/* The outputs of a plane from its padded copy buf (dw_win_plane): per output its window gathered
 * into one or two byte vectors (two: more than 16 taps), VMLADAV with the taps (split: and with
 * their rest, v0, v1: dw_win_plane), 4 sums
 * requantized together (a last step's outputs past OW computed from windows inside the copy, not
 * stored). */
static inline __attribute__((always_inline)) void dw_win_out_t(const dwwin_t *c, const int8_t *buf, int8_t *dst,
                                                              const arena_conv_dims_t *d, const arena_attrs_t *a,
                                                              int8x16_t w0, int8x16_t w1, int8x16_t v0,
                                                              int8x16_t v1, const qpar_t *q, int32_t bias, float mult,
                                                              const int two, const int split)
{
    int32_t s[4] __attribute__((aligned(8)));
    const qpar_t qq = *q;
    const int32_t OH = d->oh, OW = d->ow, sw = a->strides[1], rstep = a->strides[0] * c->wp;
    const uint8x16_t o0 = c->o0, o1 = c->o1;
    int32_t i, j, u;
    for (i = 0; i < OH; ++i, buf += rstep, dst += OW) {
        const int8_t *r = buf;
        for (j = 0; j < OW; j += 4) {
#pragma GCC unroll 4
            for (u = 0; u < 4; ++u, r += sw) {
                const int8x16_t x0 = vldrbq_gather_offset_s8(r, o0);
                int32_t acc = vmladavq_s8(x0, w0);
                if (split) {
                    acc = vmladavaq_s8(acc, x0, v0);
                }
                if (two) {
                    const int8x16_t x1 = vldrbq_gather_offset_s8(r, o1);
                    acc = vmladavaq_s8(acc, x1, w1);
                    if (split) {
                        acc = vmladavaq_s8(acc, x1, v1);
                    }
                }
                s[u] = acc;
            }
            store4_p(dst + j, &qq, vldrwq_s32(s), bias, mult, vctp32q((uint32_t)(OW - j)));
        }
    }
}

/* A depthwise plane of a window of at most 32 taps (dw_win_setup) on Helium: the plane src
 * (H x W) copied into a stack buffer of c->hp rows of c->wp bytes with x_zp's byte around it
 * (uint8 bytes flipped to int8 as copied), so every window is one or two gathers without a
 * predicate; the taps as the model holds them (w) minus the weight zero point in byte vectors
 * (lanes past the kernel zero), x's zero point folded into the bias (the padding counts as x_zp).
 * The copy is made before any output is written: in place is safe. A w - wz past int8 is
 * split as dw_mve3_plane's taps (its int8 clamp and the rest, two VMLADAVs a gather); 0 (nothing
 * written) when the rest does not fit int8 either (w - wz = 255). */
static inline __attribute__((always_inline)) int dw_win_plane_t(const dwwin_t *c, const int8_t *src, int8_t *dst,
                                                                const arena_conv_dims_t *d, const arena_attrs_t *a,
                                                                const int8_t *w, const chan_t *ch, const qpar_t *q,
                                                                int32_t x_zp, int u8, const int split);

/* dw_win_plane_t of a channel whose w - wz does not fit int8 (apart: the common case keeps its
 * registers and frame). */
static __attribute__((noinline)) int dw_win_split(const dwwin_t *c, const int8_t *src, int8_t *dst,
                                                  const arena_conv_dims_t *d, const arena_attrs_t *a, const int8_t *w,
                                                  const chan_t *ch, const qpar_t *q, int32_t x_zp, int u8)
{
    return dw_win_plane_t(c, src, dst, d, a, w, ch, q, x_zp, u8, 1);
}

static __attribute__((noinline)) int dw_win_plane(const dwwin_t *c, const int8_t *src, int8_t *dst,
                                                  const arena_conv_dims_t *d, const arena_attrs_t *a, const int8_t *w,
                                                  const chan_t *ch, const qpar_t *q, int32_t x_zp, int u8)
{
    return dw_win_plane_t(c, src, dst, d, a, w, ch, q, x_zp, u8, 0);
}

static inline __attribute__((always_inline)) int dw_win_plane_t(const dwwin_t *c, const int8_t *src, int8_t *dst,
                                                                const arena_conv_dims_t *d, const arena_attrs_t *a,
                                                                const int8_t *w, const chan_t *ch, const qpar_t *q,
                                                                int32_t x_zp, int u8, const int split)
{
    int8_t buf[DW_PAD_BYTES + 16] __attribute__((aligned(4)));
    const int32_t taps = c->taps, two = taps > 16, wp = c->wp, ph = a->pads[0], pw = a->pads[1];
    const int32_t nr = d->h < c->hp - ph ? d->h : c->hp - ph, nc = d->w < wp - pw ? d->w : wp - pw;
    const mve_pred16_t p0 = vctp8q((uint32_t)taps), p1 = vctp8q((uint32_t)(two ? taps - 16 : 0));
    const int8x16_t pad = vdupq_n_s8((int8_t)x_zp), flip = vdupq_n_s8(u8 ? -128 : 0);
    int8x16_t w0 = vldrbq_z_s8(w, p0), w1 = vldrbq_z_s8(w + 16, p1), v0 = vdupq_n_s8(0), v1 = v0;
    int32_t bias, i, k;
    if (split) {
        /* w - wz past int8 (up to [-255, 255]): the int8 clamp of w - wz in w0, w1 and the rest
         * (|rest| <= 127, else 0: w - wz = 255) in v0, v1, two VMLADAVs a vector */
        int8_t lo[32] __attribute__((aligned(4))), hi[32] __attribute__((aligned(4)));
        for (k = 0; k < 32; ++k) {
            const int32_t t = k < taps ? w[k] - ch->wz : 0, l = t < -128 ? -128 : t > 127 ? 127 : t;
            if (t - l > 127) {
                return 0;
            }
            lo[k] = (int8_t)l;
            hi[k] = (int8_t)(t - l);
        }
        w0 = vldrbq_s8(lo);
        w1 = vldrbq_s8(lo + 16);
        v0 = vldrbq_s8(hi);
        v1 = vldrbq_s8(hi + 16);
    } else if (ch->wz != 0) {
        const int32_t wz = ch->wz;
        if (vminvq_p_s8(127, w0, p0) - wz < -128 || vmaxvq_p_s8(-128, w0, p0) - wz > 127
            || vminvq_p_s8(127, w1, p1) - wz < -128 || vmaxvq_p_s8(-128, w1, p1) - wz > 127) {
            return dw_win_split(c, src, dst, d, a, w, ch, q, x_zp, u8);
        } else {
            w0 = vsubq_m_n_s8(vdupq_n_s8(0), w0, (int8_t)wz, p0);
            w1 = vsubq_m_n_s8(vdupq_n_s8(0), w1, (int8_t)wz, p1);
        }
    }
    if (split) {
        bias = (int32_t)((uint32_t)ch->bias
                         - (uint32_t)(x_zp * vaddvaq_s8(vaddvaq_s8(vaddvaq_s8(vaddvq_s8(w0), w1), v0), v1)));
    } else {
        bias = (int32_t)((uint32_t)ch->bias - (uint32_t)(x_zp * vaddvaq_s8(vaddvq_s8(w0), w1)));
    }
    for (k = 0; k < c->hp * wp; k += 16) {
        vstrbq_s8(buf + k, pad);
    }
    for (i = 0; i < nr; ++i) { /* a row's nc bytes, 16 a step, the last predicated */
        const int8_t *sr = src + i * d->w;
        int8_t *br = buf + (ph + i) * wp + pw;
        for (k = 0; k < nc; k += 16) {
            const mve_pred16_t p = vctp8q((uint32_t)(nc - k));
            vstrbq_p_s8(br + k, veorq_s8(vldrbq_z_s8(sr + k, p), flip), p);
        }
    }
    if (split) {
        if (two) {
            dw_win_out_t(c, buf, dst, d, a, w0, w1, v0, v1, q, bias, ch->mult, 1, 1);
        } else {
            dw_win_out_t(c, buf, dst, d, a, w0, w1, v0, v1, q, bias, ch->mult, 0, 1);
        }
    } else if (two) {
        dw_win_out_t(c, buf, dst, d, a, w0, w1, v0, v1, q, bias, ch->mult, 1, 0);
    } else {
        dw_win_out_t(c, buf, dst, d, a, w0, w1, v0, v1, q, bias, ch->mult, 0, 0);
    }
    return 1;
}

/* A window of at most 32 taps (a 5x5 kernel, dilated or not, any stride) on Helium: per output
 * its window gathered into two byte vectors (VLDRB.8 at the taps' offsets, one when 16 taps or
 * fewer; a lane past the kernel at offset 0 with a zero tap) and two VMLADAVs with the taps, as
 * stored (x's zero point folded: b->fold), 4 sums requantized together. Needs taps that fit int8
 * (w - wz) and window offsets that fit a byte; 0 otherwise (dw_mve_block's lanes then). */
static __attribute__((noinline)) int dw_mve_window(const dw_block_t *b, const qpar_t *q, const chan_t *ch)
{
    int8_t wb[32] __attribute__((aligned(4)));
    uint8_t ob[32] __attribute__((aligned(4)));
    int32_t s[4] __attribute__((aligned(8)));
    const qpar_t qq = *q;
    const int32_t bias = (int32_t)((uint32_t)ch->bias - (uint32_t)b->fold);
    const float mult = ch->mult;
    const int32_t kh = b->kh, kw = b->kw, taps = kh * kw, rs = b->dh * b->width, sw = b->sw, n = b->n;
    int32_t t, i, j, u;
    uint8x16_t o0, o1;
    int8x16_t w0, w1;
    if (taps > 32 || (kh - 1) * rs + (kw - 1) * b->dwl > 255) {
        return 0;
    }
    for (t = 0; t < 32; ++t) {
        if (t < taps && (b->w[t] < -128 || b->w[t] > 127)) {
            return 0;
        }
        wb[t] = t < taps ? (int8_t)b->w[t] : 0;
        ob[t] = t < taps ? (uint8_t)(t / kw * rs + t % kw * b->dwl) : 0u;
    }
    o0 = vldrbq_u8(ob);
    o1 = vldrbq_u8(ob + 16);
    w0 = vldrbq_s8(wb);
    w1 = vldrbq_s8(wb + 16);
    for (i = 0; i < b->nh; ++i) {
        const int8_t *r = b->band + i * b->rstep, *last = r + (n - 1) * sw;
        int8_t *dst = b->dst + i * b->dstride;
        for (j = 0; j < n; j += 4) {
            /* a last step's outputs past n read the last output's window (inside the band) */
            const int full = j + 4 <= n;
#pragma GCC unroll 4
            for (u = 0; u < 4; ++u, r += sw) {
                const int8_t *p = full || r <= last ? r : last;
                int32_t acc = vmladavq_s8(vldrbq_gather_offset_s8(p, o0), w0);
                if (taps > 16) {
                    acc = vmladavaq_s8(acc, vldrbq_gather_offset_s8(p, o1), w1);
                }
                s[u] = acc;
            }
            if (full) {
                store4(dst + j, &qq, vldrwq_s32(s), bias, mult);
            } else {
                store4_p(dst + j, &qq, vldrwq_s32(s), bias, mult, vctp32q((uint32_t)(n - j)));
            }
        }
    }
    return 1;
}

/* dw_block on Helium: 4 outputs of a row a step, each tap's 4 input bytes (offsets 0, sw,
 * 2 sw, 3 sw) by one gathering VLDRB.S32 times the tap, summed in int32 lanes (VMLA), the 4
 * sums requantized together (store4); the last step of a row predicated (its lanes past n
 * neither loaded nor stored). A 3x3 kernel's taps are unrolled from registers. */
static __attribute__((noinline)) void dw_mve_block(const dw_block_t *b, const qpar_t *q, const chan_t *ch)
{
    const int16_t *wk = b->w;
    const qpar_t qq = *q;
    const int32_t bias = (int32_t)((uint32_t)ch->bias - (uint32_t)b->fold);
    const float mult = ch->mult;
    const int32_t W = b->width, sw4 = 4 * b->sw, rs = b->dh * W, n = b->n, nh = b->nh, kh = b->kh, kw = b->kw;
    const int32_t dwl = b->dwl, rstep = b->rstep, dstride = b->dstride;
    const int8_t *band = b->band;
    int8_t *dst0 = b->dst;
    const uint32x4_t off = vmulq_n_u32(vidupq_n_u32(0u, 1), (uint32_t)b->sw);
    int32x4_t acc;
    int32_t i, j, ky, kx;
    if (kh == 3 && kw == 3 && b->dh == 1 && dwl == 1 && dw_mve3(b, q, ch)) {
        return;
    }
    if (!(kh == 3 && kw == 3) && dw_mve_window(b, q, ch)) {
        return;
    }
    if (kh == 3 && kw == 3 && b->dh == 1 && dwl == 1) {
        const int32_t w0 = wk[0], w1 = wk[1], w2 = wk[2], w3 = wk[3], w4 = wk[4], w5 = wk[5], w6 = wk[6],
                      w7 = wk[7], w8 = wk[8];
        for (i = 0; i < nh; ++i) {
            const int8_t *ra = band + i * rstep, *rb = ra + W, *rc = rb + W;
            int8_t *dst = dst0 + i * dstride;
            for (j = 0; j + 4 <= n; j += 4, ra += sw4, rb += sw4, rc += sw4, dst += 4) {
#define DW_LOAD(row, kx) vldrbq_gather_offset_s32((row) + (kx), off)
                DW_MVE_3X3(DW_LOAD);
#undef DW_LOAD
                store4(dst, &qq, acc, bias, mult);
            }
            if (j < n) {
                const mve_pred16_t p = vctp32q((uint32_t)(n - j));
#define DW_LOAD(row, kx) vldrbq_gather_offset_z_s32((row) + (kx), off, p)
                DW_MVE_3X3(DW_LOAD);
#undef DW_LOAD
                store4_p(dst, &qq, acc, bias, mult, p);
            }
        }
        return;
    }
    for (i = 0; i < nh; ++i) {
        const int8_t *r0 = band + i * rstep;
        int8_t *dst = dst0 + i * dstride;
        for (j = 0; j < n; j += 4, r0 += sw4) {
            const mve_pred16_t p = vctp32q((uint32_t)(n - j));
            const int8_t *r = r0;
            const int16_t *w = wk;
            acc = vdupq_n_s32(0);
            for (ky = 0; ky < kh; ++ky, r += rs) {
                for (kx = 0; kx < kw; ++kx) {
                    acc = vmlaq_n_s32(acc, vldrbq_gather_offset_z_s32(r + kx * dwl, off, p), *w++);
                }
            }
            store4_p(dst + j, &qq, acc, bias, mult, p);
        }
    }
}
#undef DW_MVE_3X3

/* A conv's per-channel parameters walked channel by channel without chan()'s branches (an absent
 * bias or weight zero point read as a 0 with a step of 0), the multiplier as chan() computes it. */
typedef struct {
    const float *ws;
    const int32_t *bias;
    const int8_t *wz;
    uint32_t sws, sb, swz;
    float xs, ys;
} dw_chans_t;

static inline dw_chans_t dw_chans(const cparams_t *cp, int32_t m0)
{
    static const int32_t no_bias = 0;
    static const int8_t no_wz = 0;
    dw_chans_t c;
    c.sws = cp->nws > 1u ? 1u : 0u;
    c.sb = cp->bias != NULL ? 1u : 0u;
    c.swz = cp->wz != NULL && cp->nwz > 1u ? 1u : 0u;
    c.ws = cp->ws + c.sws * (uint32_t)m0;
    c.bias = cp->bias != NULL ? cp->bias + m0 : &no_bias;
    c.wz = cp->wz != NULL ? cp->wz + c.swz * (uint32_t)m0 : &no_wz;
    c.xs = cp->xs;
    c.ys = cp->ys;
    return c;
}

/* The next channel's multiplier, bias and weight zero point (chan()'s, on a core with an FPU). */
static inline __attribute__((always_inline)) void dw_chan_next(dw_chans_t *c, float *mult, int32_t *bias, int32_t *wz)
{
    *mult = c->xs * *c->ws / c->ys;
    *bias = *c->bias;
    *wz = *c->wz;
    c->ws += c->sws;
    c->bias += c->sb;
    c->wz += c->swz;
}

/* The output channels [m0, m1) of a depthwise conv whose every channel is one row of kw <= 16
 * taps over a whole unpadded 1-high plane of n outputs (a DS-TCN's Kx1 kernels down its time
 * axis), channel m from plane m / mult of x (xbytes), read in place or not: an output byte is
 * stored only after every window at or before it is read. */
typedef struct {
    dw_chans_t cs; /* from channel m0 */
    qpar_t q;
    const int8_t *x, *w;
    int8_t *y;
    size_t xbytes;
    int32_t m0, m1, kw, n, sw, plane, oplane, mult, x_zp; /* x_zp: the int8 side's (act_in) */
} dw_mrows_t;

#if !defined(__OPTIMIZE_SIZE__) /* a size build runs every row through dw_bytes (no 16 instances) */
/* Taps a row takes in int32 lanes (dw_lanes): a short row at stride 1, where 4 outputs a step by
 * one widening load and one VMLA a tap cost less than dw_mve_row_t's load, VMLADAV and store an output. */
#define DW_LANE_TAPS 8

/* A row's n outputs at stride 1 from windows at p, 4 a step in int32 lanes: per tap the 4
 * outputs' input bytes by one widening VLDRB (sign- or, for uint8 bytes, zero-extended: the fold
 * then takes the uint8 zero point) times the tap (w - wz: any weight zero point) by VMLA, the
 * kw taps unrolled (kw a constant), 4 sums requantized together. A last step's lanes past n
 * read no bytes. */
static inline __attribute__((always_inline)) void dw_mve_lanes_t(const int8_t *p, int8_t *y, const int32_t *wk,
                                                                const int32_t kw, int32_t n, const qpar_t *q,
                                                                int32_t bias, float mult, const int u8)
{
    int32_t tap[DW_LANE_TAPS], j, k;
    int32x4_t acc;
#pragma GCC unroll 8
    for (k = 0; k < kw; ++k) {
        tap[k] = wk[k];
    }
#define DW_LANES(LOAD)                                                                                              \
    do {                                                                                                            \
        acc = vmulq_n_s32(LOAD(0), tap[0]);                                                                         \
        _Pragma("GCC unroll 8") for (k = 1; k < kw; ++k)                                                            \
        {                                                                                                           \
            acc = vmlaq_n_s32(acc, LOAD(k), tap[k]);                                                                \
        }                                                                                                           \
    } while (0)
#define DW_LOAD(k) (u8 ? vreinterpretq_s32_u32(vldrbq_u32((const uint8_t *)p + (k))) : vldrbq_s32(p + (k)))
    for (j = 0; j + 4 <= n; j += 4, p += 4) {
        DW_LANES(DW_LOAD);
        store4(y + j, q, acc, bias, mult);
    }
#undef DW_LOAD
    if (j < n) {
        const mve_pred16_t pr = vctp32q((uint32_t)(n - j));
#define DW_LOAD(k)                                                                                                  \
    (u8 ? vreinterpretq_s32_u32(vldrbq_z_u32((const uint8_t *)p + (k), pr)) : vldrbq_z_s32(p + (k), pr))
        DW_LANES(DW_LOAD);
#undef DW_LOAD
        store4_p(y + j, q, acc, bias, mult, pr);
    }
#undef DW_LANES
}

/* dw_mve_lanes_t over r's channels at stride 1: per channel its taps minus wz as int32 (a
 * predicated widening load, lanes past kw 0) and x's zero point as the kernel reads it times
 * their sum off the bias. */
static inline __attribute__((always_inline)) void dw_lanes_t(const dw_mrows_t *r, const int32_t kw, const int u8)
{
    dw_chans_t cs = r->cs;
    const qpar_t q = r->q;
    const int32_t zp = u8 ? r->x_zp + 128 : r->x_zp, n = r->n, mult = r->mult;
    const mve_pred16_t p0 = vctp32q((uint32_t)kw), p1 = vctp32q((uint32_t)(kw > 4 ? kw - 4 : 0));
    const int8_t *wm = r->w;
    int8_t *y = r->y + (size_t)r->m0 * (size_t)r->oplane;
    int32_t m;
    for (m = r->m0; m < r->m1; ++m, wm += kw, y += r->oplane) {
        int32_t wk[DW_LANE_TAPS] __attribute__((aligned(8)));
        int32_t bias, wz, sum;
        float f;
        const int32x4_t a0 = vldrbq_z_s32(wm, p0);
        dw_chan_next(&cs, &f, &bias, &wz);
        sum = vaddvq_s32(a0);
        vstrwq_s32(wk, vsubq_n_s32(a0, wz));
        if (kw > 4) {
            const int32x4_t a1 = vldrbq_z_s32(wm + 4, p1);
            sum = vaddvaq_s32(sum, a1);
            vstrwq_s32(wk + 4, vsubq_n_s32(a1, wz));
        }
        bias = (int32_t)((uint32_t)bias - (uint32_t)(zp * (sum - kw * wz)));
        dw_mve_lanes_t(r->x + (size_t)(m / mult) * (size_t)r->plane, y, wk, kw, n, &q, bias, f, u8);
    }
}

/* dw_lanes_t for int8 bytes and each kernel width 2 .. DW_LANE_TAPS (the taps in registers):
 * dw_lanes[kw - 2]; uint8 bytes (a VEOR a load) and single taps take dw_bytes. */
typedef void dw_lanes_fn(const dw_mrows_t *r);
#define DW_LANES_FN(K)                                                                                              \
    static __attribute__((noinline)) void dw_lanes_##K(const dw_mrows_t *r)                                         \
    {                                                                                                               \
        dw_lanes_t(r, K, 0);                                                                                        \
    }
DW_LANES_FN(2)
DW_LANES_FN(3)
DW_LANES_FN(4)
DW_LANES_FN(5)
DW_LANES_FN(6)
DW_LANES_FN(7)
DW_LANES_FN(8)
static dw_lanes_fn *const dw_lanes[DW_LANE_TAPS - 1] = {dw_lanes_2, dw_lanes_3, dw_lanes_4, dw_lanes_5,
                                                        dw_lanes_6, dw_lanes_7, dw_lanes_8};
#undef DW_LANES_FN
#endif /* !__OPTIMIZE_SIZE__ */

/* Channel m's taps (lanes past kw zero) minus its weight zero point into *wv and x_zp times
 * their sum into *fold; 0 when some w - wz does not fit int8 (the byte lanes' dot product). */
static inline __attribute__((always_inline)) int dw_mve_taps(const int8_t *w, int32_t wz, int32_t x_zp,
                                                            mve_pred16_t pk, int8x16_t *wv, int32_t *fold)
{
    int8x16_t v = vldrbq_z_s8(w, pk);
    if (wz != 0) {
        if (vminvq_p_s8(127, v, pk) - wz < -128 || vmaxvq_p_s8(-128, v, pk) - wz > 127) {
            return 0;
        }
        v = vsubq_m_n_s8(vdupq_n_s8(0), v, (int8_t)wz, pk);
    }
    *wv = v;
    *fold = x_zp * vaddvq_s8(v);
    return 1;
}

/* A row's n outputs (sw apart) from windows at p: per output one VLDRB of 16 input bytes at its
 * window and one VMLADAV with the taps (lanes past the kernel zero, so bytes past the window
 * count nothing); uint8 bytes flipped to int8 (VEOR; x_zp is the int8 side's), 4 sums
 * requantized together. safe: every load of 16 bytes, those of the last step's outputs past n
 * too, is inside the input; else each load takes only the window's lanes (pk) from a window at
 * most last (the last output's). */
static inline __attribute__((always_inline)) void dw_mve_row_t(const int8_t *p, int8_t *y, int8x16_t wv, int32_t n,
                                                              int32_t sw, const qpar_t *q, int32_t bias, float mult,
                                                              mve_pred16_t pk, const int u8, const int safe)
{
    int32_t s[4] __attribute__((aligned(8)));
    const int8_t *last = p + (n - 1) * sw;
    int32_t j, t;
    for (j = 0; j < n; j += 4, p += 4 * sw) {
#pragma GCC unroll 4
        for (t = 0; t < 4; ++t) {
            int8x16_t x;
            if (safe) {
                x = vldrbq_s8(p + t * sw);
            } else {
                x = vldrbq_z_s8(p + t * sw <= last ? p + t * sw : last, pk);
            }
            if (u8) {
                x = veorq_s8(x, vdupq_n_s8(-128));
            }
            s[t] = vmladavq_s8(x, wv);
        }
        if (j + 4 <= n) {
            store4(y + j, q, vldrwq_s32(s), bias, mult);
        } else {
            store4_p(y + j, q, vldrwq_s32(s), bias, mult, vctp32q((uint32_t)(n - j)));
        }
    }
}

/* dw_mve_row_t over r's channels (any stride, kw <= 16): per channel its taps in a byte vector
 * (dw_mve_taps). Returns the first channel not done (one whose taps minus wz do not fit int8). */
static inline __attribute__((always_inline)) int32_t dw_bytes_t(const dw_mrows_t *r, const int u8)
{
    dw_chans_t cs = r->cs;
    const qpar_t q = r->q;
    const mve_pred16_t pk = vctp8q((uint32_t)r->kw);
    const int32_t n = r->n, sw = r->sw;
    /* the last input byte a channel's 16-byte loads read, from its plane's start */
    const size_t reach = (size_t)(((n + 3) / 4) * 4 - 1) * (size_t)sw + 16u;
    int32_t m;
    for (m = r->m0; m < r->m1; ++m) {
        const size_t at = (size_t)(m / r->mult) * (size_t)r->plane;
        int8_t *y = r->y + (size_t)m * (size_t)r->oplane;
        int8x16_t wv;
        int32_t fold, bias, wz;
        float f;
        dw_chan_next(&cs, &f, &bias, &wz);
        if (!dw_mve_taps(r->w + (size_t)m * (size_t)r->kw, wz, r->x_zp, pk, &wv, &fold)) {
            return m;
        }
        bias = (int32_t)((uint32_t)bias - (uint32_t)fold);
        if (at + reach <= r->xbytes) {
            dw_mve_row_t(r->x + at, y, wv, n, sw, &q, bias, f, pk, u8, 1);
        } else {
            dw_mve_row_t(r->x + at, y, wv, n, sw, &q, bias, f, pk, u8, 0);
        }
    }
    return m;
}

static __attribute__((noinline)) int32_t dw_bytes(const dw_mrows_t *r, int u8)
{
    return u8 ? dw_bytes_t(r, 1) : dw_bytes_t(r, 0);
}

/* One output a channel (the last depthwise conv of a DS-TCN), 4 channels a step: per channel its
 * window and taps (as the model holds them) by one predicated VLDRB each and one VMLADAV, x's zero
 * point (x's bytes flipped to int8 for uint8) times the taps' sum and the weight zero point times
 * the window's sum taken off (x - xzp).(w - wz) = x.w - xzp sum(w) - wz sum(x) + kw xzp wz, so any
 * int8 weight zero point; the 4 channels' biases, weight scales (chan()'s multipliers: xs * ws /
 * ys, one VDIV a lane) and sums in lanes, requantized together. */
static inline __attribute__((always_inline)) void dw_ones_t(const dw_mrows_t *r, const int u8, const int wz)
{
    const qpar_t q = r->q;
    const dw_chans_t cs = r->cs;
    const int32_t kw = r->kw, mult = r->mult, zp = r->x_zp, plane = r->plane, m1 = r->m1 - r->m0;
    const float ys = cs.ys;
    const mve_pred16_t pk = vctp8q((uint32_t)kw);
    const int8_t *x = r->x, *w = r->w + (size_t)r->m0 * (size_t)kw;
    int8_t *y = r->y + r->m0; /* one output a channel: a plane of one byte */
    int32_t s[4] __attribute__((aligned(8))), z[4] __attribute__((aligned(8)));
    float f[4] __attribute__((aligned(8)));
    int32_t m, t;
    for (m = 0; m < m1; m += 4, y += 4) {
        const int32_t k = m1 - m < 4 ? m1 - m : 4;
        const mve_pred16_t pc = vctp32q((uint32_t)k);
        const int32x4_t bv = cs.sb ? vldrwq_z_s32(cs.bias + m, pc) : vdupq_n_s32(0);
        vstrwq_f32(f, vmulq_n_f32(cs.sws ? vldrwq_z_f32(cs.ws + m, pc) : vdupq_n_f32(*cs.ws), cs.xs));
        if (wz) {
            vstrwq_s32(z, cs.swz ? vldrbq_z_s32(cs.wz + m, pc) : vdupq_n_s32(*cs.wz));
        }
        for (t = 0; t < k; ++t, w += kw) {
            int8x16_t xv = vldrbq_z_s8(x + (size_t)((r->m0 + m + t) / mult) * (size_t)plane, pk);
            const int8x16_t wv = vldrbq_z_s8(w, pk);
            int32_t acc;
            if (u8) {
                xv = vpselq_s8(veorq_s8(xv, vdupq_n_s8(-128)), vdupq_n_s8(0), pk);
            }
            acc = vmladavq_s8(xv, wv) - zp * vaddvq_s8(wv);
            if (wz) {
                acc -= z[t] * (vaddvq_s8(xv) - kw * zp);
            }
            s[t] = acc;
            f[t] = f[t] / ys;
        }
        {
            const int32x4_t acc = vaddq_s32(vldrwq_s32(s), bv); /* bias_add wraps: the same sums */
            const int32x4_t v = vcvtnq_s32_f32(vmulq_f32(vcvtq_f32_s32(acc), vldrwq_f32(f)));
            vstrbq_p_s32(y, vaddq_n_s32(vminq_s32(vmaxq_s32(v, vdupq_n_s32(q.rl)), vdupq_n_s32(q.rh)), q.zp), pc);
        }
    }
}

static __attribute__((noinline)) void dw_ones(const dw_mrows_t *r, int u8)
{
    const int wz = r->cs.swz != 0u || *r->cs.wz != 0;
    if (u8) {
        if (wz) {
            dw_ones_t(r, 1, 1);
        } else {
            dw_ones_t(r, 1, 0);
        }
    } else if (wz) {
        dw_ones_t(r, 0, 1);
    } else {
        dw_ones_t(r, 0, 0);
    }
}

/* The output channels [m0, m1) of a depthwise conv of rows (dw_mrows_t) on Helium: one output a
 * channel dw_ones, int8 bytes at stride 1 and 2 to DW_LANE_TAPS taps dw_lanes (a speed build), else
 * dw_bytes. Returns the first channel not done. */
static int32_t dw_mve_rows(const dw_mrows_t *r, int u8)
{
    if (r->n == 1) {
        dw_ones(r, u8);
        return r->m1;
    }
#if !defined(__OPTIMIZE_SIZE__)
    if (!u8 && r->sw == 1 && r->kw >= 2 && r->kw <= DW_LANE_TAPS) {
        dw_lanes[r->kw - 2](r);
        return r->m1;
    }
#endif
    return dw_bytes(r, u8);
}
#endif

/* Bytes of the stack band a depthwise plane is computed from (padded input rows). */
#define DW_BAND_BYTES 1024

/* Bytes a band row's word stores may write past its width (band_row): the band's slack. */
#define DW_BAND_SLACK 4

/* row[j] = srow[j0 + j] for j < width where that is inside [0, W), else zp. Where unaligned
 * words load and store (Armv7-M and later), the copy goes a word at a time in line: the library's
 * memcpy and memset spend more on a band row's few bytes than the copy itself. There the pads
 * are whole words of zp (the left one then overwritten by the copy, the right one up to 3 bytes
 * past width: the next row's, written after it, or DW_BAND_SLACK) and a copy of 4 bytes or more
 * ends with a word that overlaps the one before it. */
#if defined(__ARM_FEATURE_UNALIGNED)
/* row[k] = s[k] for lo <= k < hi, a word at a time (the last word overlapping the one before). */
static inline __attribute__((always_inline)) void band_copy(int8_t *row, const int8_t *s, int32_t lo, int32_t hi)
{
    uint32_t v;
    int32_t k;
    if (hi - lo >= 4) {
        for (k = lo; k + 4 < hi; k += 4) {
            memcpy(&v, s + k, 4);
            memcpy(row + k, &v, 4);
        }
        memcpy(&v, s + hi - 4, 4);
        memcpy(row + hi - 4, &v, 4);
    } else {
        for (k = lo; k < hi; ++k) {
            row[k] = s[k];
        }
    }
}
#else
static inline void band_copy(int8_t *row, const int8_t *s, int32_t lo, int32_t hi)
{
    memcpy(row + lo, s + lo, (size_t)(hi - lo));
}
#endif

/* The columns [*lo, *hi) of a band row of width columns from j0 on that are inside [0, W). */
static inline void band_cols(int32_t j0, int32_t width, int32_t W, int32_t *lo, int32_t *hi)
{
    *lo = j0 < 0 ? -j0 : 0;
    *hi = W - j0 < width ? W - j0 : width;
    if (*lo > width) {
        *lo = width;
    }
    if (*hi < *lo) {
        *hi = *lo;
    }
}

#if defined(__ARM_FEATURE_UNALIGNED)
__attribute__((optimize("no-tree-loop-distribute-patterns")))
#endif
static void band_row(int8_t *row, const int8_t *srow, int32_t j0, int32_t width, int32_t W, int8_t zp)
{
    int32_t lo, hi;
    band_cols(j0, width, W, &lo, &hi);
#if defined(__ARM_FEATURE_UNALIGNED)
    {
        const int8_t *s = srow + j0;
        const uint32_t pw = (uint32_t)(uint8_t)zp * 0x01010101u;
        int32_t k;
        for (k = 0; k < lo; k += 4) {
            memcpy(row + k, &pw, 4);
        }
        band_copy(row, s, lo, hi);
        for (k = hi; k < width; k += 4) {
            memcpy(row + k, &pw, 4);
        }
    }
#else
    memset(row, zp, (size_t)lo);
    memcpy(row + lo, srow + j0 + lo, (size_t)(hi - lo));
    memset(row + hi, zp, (size_t)(width - hi));
#endif
}

/* How a depthwise conv's output splits into blocks whose band fits DW_BAND_BYTES: per_w
 * outputs a row (the band's width holds their windows plus 3 bytes: a 32-bit load past the
 * last window's start), per_h rows. per_w == 0: not even one window fits. */
typedef struct {
    int32_t per_w, per_h, span_w, span_h;
} dw_split_t;

static dw_split_t dw_split(const arena_conv_dims_t *d, const arena_attrs_t *a)
{
    dw_split_t t;
    int32_t width;
    t.span_w = (a->kernel[1] - 1) * a->dilations[1] + 1;
    t.span_h = (a->kernel[0] - 1) * a->dilations[0] + 1;
    width = DW_BAND_BYTES / t.span_h;
    t.per_w = width < t.span_w + 3 ? 0 : (width - t.span_w - 3) / a->strides[1] + 1;
    t.per_w = t.per_w < d->ow ? t.per_w : d->ow;
    width = (t.per_w - 1) * a->strides[1] + t.span_w + 3;
    t.per_h = t.per_w < 1 ? 0 : (DW_BAND_BYTES / width - t.span_h) / a->strides[0] + 1;
    t.per_h = t.per_h < d->oh ? t.per_h : d->oh;
    return t;
}

/* The block kernel of a depthwise conv with attributes a. */
static int dw_kind(const arena_attrs_t *a)
{
#if defined(ARENA_MVE_F)
    (void)a;
    return DW_ANY; /* dw_mve_block: every kernel from its int16 taps */
#endif
#if !(defined(__ARM_FEATURE_DSP) && defined(__OPTIMIZE_SIZE__)) /* a DSP size build: dwk_block */
    if (a->kernel[0] == 3 && a->kernel[1] == 3 && a->dilations[0] == 1 && a->dilations[1] == 1) {
        return DW_3X3;
    }
#endif
#if defined(__ARM_FEATURE_DSP)
#if !defined(__OPTIMIZE_SIZE__) /* a size build keeps no 5x5 kernel: dwk_block runs them */
    if (a->kernel[0] == 5 && a->kernel[1] == 5 && a->dilations[0] == 1 && a->dilations[1] == 1) {
        return DW_5X5;
    }
#endif
    if (a->dilations[1] == 1) {
        return a->kernel[0] == 1 ? DW_ROW : DW_PACKED;
    }
#endif
    return DW_ANY;
}

/* Channel m's kernel w (KH x KW) with weight zero point wz into b as its kind reads it:
 * int16 taps wk and the fold, packed pairs wp, or the model's row and its packed tail. */
static void dw_kernel(dw_block_t *b, int kind, const int8_t *w, int32_t wz, int32_t x_zp, int16_t *wk, uint32_t *wp)
{
    int32_t i, taps = b->kh * b->kw, wsum = 0;
#if defined(__ARM_FEATURE_DSP)
    int32_t ky, g;
    if (kind == DW_ROW) {
        b->wrow = w;
        b->nwz = neg2(wz);
        pack4(b->tail, w, 4 * b->groups, b->kw, wz);
        return;
    }
    if (kind == DW_PACKED) {
        for (ky = 0; ky < b->kh; ++ky) {
            for (g = 0; g < b->groups; ++g) {
                pack4(wp + 2 * (ky * b->groups + g), w + ky * b->kw, 4 * g, b->kw, wz);
            }
        }
        return;
    }
#endif
    (void)kind;
    (void)wp;
    if (taps == 9) { /* 3x3: a constant count, unrolled (a small plane pays this per channel) */
        for (i = 0; i < 9; ++i) {
            wk[i] = (int16_t)(w[i] - wz);
            wsum += wk[i];
        }
    } else {
        for (i = 0; i < taps; ++i) {
            wk[i] = (int16_t)(w[i] - wz);
            wsum += wk[i];
        }
    }
    b->fold = x_zp * wsum;
}

/* A depthwise plane: src (H x W, one channel) through the kernel in *k (dw_kernel) into dst
 * (OH x OW), block by block. A block's windows read the input rows and columns copied into
 * the band with the padding filled with x_zp's byte (the input's own: uint8 when u8, the band
 * then flipped to int8 unless the kernel reads uint8, k->u8), so every window is inside the
 * band, without bounds checks; or, when direct (an input no output overlaps, the plane's last
 * byte + 3 still in the tensor, its bytes as the kernel reads them) and the block's windows
 * need no padding, the plane itself. */
static void dw_plane(const int8_t *src, int8_t *dst, dw_block_t *k, int kind, const arena_conv_dims_t *d,
                     const arena_attrs_t *a, const dw_split_t *t, int32_t x_zp, int u8, int direct, const qpar_t *q,
                     const chan_t *ch, int8_t *band, int *padded)
{
    dw_block_t *const bp = k; /* its block fields (band, width, n, nh, rstep, dst) set here, in place */
#define b (*bp)
    int32_t oh0, ow0, j;
    int8_t pad = (int8_t)(u8 ? x_zp + 128 : x_zp);
    for (ow0 = 0; ow0 < d->ow; ow0 += t->per_w) {
        int32_t iw0 = ow0 * a->strides[1] - a->pads[1];
        b.n = d->ow - ow0 < t->per_w ? d->ow - ow0 : t->per_w;
        for (oh0 = 0; oh0 < d->oh; oh0 += t->per_h) {
            int32_t ih0 = oh0 * a->strides[0] - a->pads[0], rows, span;
            b.nh = d->oh - oh0 < t->per_h ? d->oh - oh0 : t->per_h;
            rows = (b.nh - 1) * a->strides[0] + t->span_h;
            span = (b.n - 1) * b.sw + t->span_w;
            if (direct && ih0 >= 0 && ih0 + rows <= d->h && iw0 >= 0 && iw0 + span <= d->w) {
                b.band = src + ih0 * d->w + iw0;
                b.width = d->w;
            } else {
                b.band = band;
                b.width = span + 3;
                if (*padded) { /* the padding as the last plane left it: only the plane's bytes */
                    int32_t lo, hi, jl = ih0 < 0 ? -ih0 : 0, jh = d->h - ih0 < rows ? d->h - ih0 : rows;
                    const int8_t *s = src + (ih0 + jl) * d->w + iw0;
                    int8_t *row = band + jl * b.width;
                    band_cols(iw0, b.width, d->w, &lo, &hi);
                    for (j = jl; j < jh; ++j, s += d->w, row += b.width) {
                        band_copy(row, s, lo, hi);
                    }
                } else {
                    for (j = 0; j < rows; ++j) {
                        int32_t ih = ih0 + j;
                        if (ih < 0 || ih >= d->h) { /* all padding: an empty source row */
                            band_row(band + j * b.width, src, iw0, b.width, 0, pad);
                        } else {
                            band_row(band + j * b.width, src + ih * d->w, iw0, b.width, d->w, pad);
                        }
                    }
                    /* one block a plane, not flipped: every plane's padding is these bytes */
                    *padded = t->per_w >= d->ow && t->per_h >= d->oh && !(u8 && !b.u8);
                }
                if (u8 && !b.u8) {
                    flip_u8(band, (size_t)rows * (size_t)b.width);
                }
            }
            b.rstep = a->strides[0] * b.width;
            b.dst = dst + oh0 * d->ow + ow0;
#if defined(ARENA_MVE_F)
            dw_mve_block(&b, q, ch);
            continue;
#endif
            switch (kind) {
#if !(defined(__ARM_FEATURE_DSP) && defined(__OPTIMIZE_SIZE__))
            case DW_3X3: dw3_block(&b, q, ch); break;
#endif
#if defined(__ARM_FEATURE_DSP)
            case DW_PACKED: dwk_block(&b, q, ch); break;
#if !defined(__OPTIMIZE_SIZE__)
            case DW_5X5: dw5_block(&b, q, ch); break;
#endif
            case DW_ROW: dwk_row(&b, q, ch); break;
#endif
            default: dw_block(&b, q, ch); break;
            }
        }
    }
#undef b
}

/* A depthwise conv (group == C, M = C * multiplier), in place through temp (one channel,
 * copied before its output is written: arena_dw_in_place) or from x directly (temp NULL). A
 * plane whose band is one block is all copied before any output is written: in place it
 * needs no temp. u8, x_zp: the input's type and int8-side zero point (act_in); mc: the
 * channels' multipliers or NULL. */
int arena_i8_depthwise(const arena_ctx_t *c, const arena_conv_dims_t *d, const qpar_t *q, int8_t *temp, int u8,
                       int32_t x_zp, const float *mc)
{
    const int8_t *x = (const int8_t *)arena_in_data(c, 0), *w = (const int8_t *)arena_in_data(c, 3);
    int8_t *y = (int8_t *)arena_out_data(c, 0);
    arena_conv_dims_t dd = *d;
    arena_attrs_t a = *c->op->attrs;
    int32_t taps = a.kernel[0] * a.kernel[1], mult = d->m / d->c, o;
    size_t plane = (size_t)d->h * (size_t)d->w, oplane = (size_t)d->oh * (size_t)d->ow;
    size_t xbytes = (size_t)d->n * (size_t)d->c * plane, ybytes = (size_t)d->n * (size_t)d->m * oplane;
    int16_t wk[DW_TAPS];
    uint32_t wp[DW_TAPS / 2];
    int8_t band[DW_BAND_BYTES + DW_BAND_SLACK]; /* dw_plane's */
    int padded = 0;                             /* whether band holds a plane's padding (dw_plane) */
    dw_block_t k;
    dw_split_t t;
    cparams_t cp = cparams(c);
    uintptr_t xa = (uintptr_t)x, ya = (uintptr_t)y;
    int kind, row, native, apart = ya >= xa + xbytes || ya + ybytes <= xa;
#if defined(ARENA_MVE_F)
    dw3ctx_t c3;
    dwwin_t cw;
    int mve3, win;
#endif
    if (d->w == 1 && a.kernel[1] == 1 && a.pads[1] == 0 && a.pads[3] == 0) {
        /* Kx1 down a 1-wide plane: the 1xK kernel along a 1-high plane of the same bytes. */
        a.kernel[1] = a.kernel[0];
        a.strides[1] = a.strides[0];
        a.dilations[1] = a.dilations[0];
        a.pads[1] = a.pads[0];
        a.pads[3] = a.pads[2];
        a.kernel[0] = a.strides[0] = a.dilations[0] = 1;
        a.pads[0] = a.pads[2] = 0;
        dd.w = d->h;
        dd.ow = d->oh;
        dd.h = dd.oh = 1;
    }
    cp.mc = mc;
    t = dw_split(&dd, &a);
    if (t.per_w == 0 || taps > DW_TAPS || a.kernel[0] * (a.kernel[1] + 3) > DW_TAPS || (temp != NULL && mult != 1)) {
        return 0;
    }
    if (t.per_w == dd.ow && t.per_h == dd.oh) {
        temp = NULL;
    }
    kind = dw_kind(&a);
    memset(&k, 0, sizeof k);
    k.w = wk;
    k.wp = wp;
    k.sw = a.strides[1];
    k.dstride = dd.ow;
    k.kh = a.kernel[0];
    k.kw = a.kernel[1];
    k.dh = a.dilations[0];
    k.dwl = a.dilations[1];
    k.groups = kind == DW_ROW ? (k.kw - 1) / 4 : (k.kw + 3) / 4; /* DW_ROW: the groups before the last */
    /* the DSP block kernels read a uint8 input's bytes as they are (UXTB16, UXTAB16; the fold then
     * takes the uint8 zero point), dw_block and the portable ones flipped in the band */
#if defined(__ARM_FEATURE_DSP)
    native = u8 && kind != DW_ANY;
#else
    native = 0;
#endif
    k.u8 = native;
    k.nz = neg2(native ? x_zp + 128 : x_zp);
    /* One unpadded row of taps over a whole 1-high plane (a DS-TCN's): with direct reads, one
     * block straight from the plane, without dw_plane. */
    row = kind == DW_ROW && dd.h == 1 && t.per_w == dd.ow && a.pads[1] == 0 && a.pads[3] == 0 && temp == NULL && apart;
    (void)row; /* no DW_ROW without the DSP extension */
    k.n = dd.ow;
    k.nh = 1;
    k.width = dd.w;
    o = 0;
#if defined(__ARM_FEATURE_DSP) && !defined(__OPTIMIZE_SIZE__)
    if (row && d->n == 1) {
        /* the channels whose reads stay inside x (3 bytes past a plane) and w (the last group's load) */
        size_t wbytes = (size_t)d->m * (size_t)k.kw, wend = 4u * (size_t)k.groups + 4u;
        int32_t ow = wbytes >= wend ? (int32_t)((wbytes - wend) / (size_t)k.kw) + 1 : 0;
        o = (int32_t)(xbytes - 3u < xbytes ? (xbytes - 3u) / plane : 0u) * mult;
        o = o < d->m ? o : d->m;
        o = o < ow ? o : ow;
        dw_rows(&k, &cp, q, x, y, w, o, (int32_t)plane, (int32_t)oplane, mult);
    }
#endif
#if defined(ARENA_MVE_F)
    /* Rows of at most 16 taps over whole unpadded 1-high planes: dw_mve_rows, in place too (one
     * channel per plane, no output longer than its plane) */
    if (d->n == 1 && cp.mc == NULL && dd.h == 1 && a.kernel[0] == 1 && a.kernel[1] <= 16 && a.dilations[1] == 1 && a.pads[1] == 0
        && a.pads[3] == 0 && (apart || (mult == 1 && oplane <= plane))) {
        dw_mrows_t r;
        r.cs = dw_chans(&cp, 0);
        r.q = *q;
        r.x = x;
        r.w = w;
        r.y = y;
        r.xbytes = xbytes;
        r.m0 = 0;
        r.m1 = d->m;
        r.kw = a.kernel[1];
        r.n = dd.ow;
        r.sw = a.strides[1];
        r.plane = (int32_t)plane;
        r.oplane = (int32_t)oplane;
        r.mult = mult;
        r.x_zp = x_zp;
        o = dw_mve_rows(&r, u8);
    }
#endif
#if defined(ARENA_MVE_F)
    mve3 = o < d->n * d->m && dw3_setup(&c3, &dd, &a);
    win = o < d->n * d->m && !mve3 && dw_win_setup(&cw, &dd, &a);
#endif
    for (; o < d->n * d->m; ++o) { /* increasing o: see arena_dw_in_place */
        int32_t m = o % d->m;
        chan_t ch = chan(&cp, m);
        size_t at = (size_t)(o / d->m * d->c + m / mult) * plane;
        const int8_t *src = x + at;
#if defined(ARENA_MVE_F)
        if (win && (apart || mult == 1)) { /* in place: the plane copied before its output is written */
            const int8_t *s = src;
            if (temp != NULL) {
                memcpy(temp, src, plane);
                s = temp;
            }
            if (dw_win_plane(&cw, s, y + (size_t)o * oplane, &dd, &a, w + (size_t)m * (size_t)taps, &ch, q, x_zp,
                             u8)) {
                continue;
            }
        }
#endif
        dw_kernel(&k, kind, w + (size_t)m * (size_t)taps, ch.wz, native ? x_zp + 128 : x_zp, wk, wp);
#if defined(__ARM_FEATURE_DSP)
        if (row && at + plane + 3u <= xbytes) {
            k.n = dd.ow;
            k.nh = 1;
            k.band = src;
            k.dst = y + (size_t)o * oplane;
            dwk_row(&k, q, &ch);
            continue;
        }
#endif
#if defined(ARENA_MVE_F)
        if (mve3 && (apart || (mult == 1 && (temp != NULL || plane <= DW_COPY_BYTES)))) {
            const int8_t *s3 = src;
            if (temp != NULL) {
                memcpy(temp, src, plane);
                s3 = temp;
            }
            if (dw_mve3_plane(&c3, s3, y + (size_t)o * oplane, &dd, &a, wk, q, &ch, k.fold, (int8_t)x_zp,
                              !apart && temp == NULL, u8)) {
                continue;
            }
        }
#endif
        if (temp != NULL) {
            memcpy(temp, src, plane);
            src = temp;
        }
        dw_plane(src, y + (size_t)o * oplane, &k, kind, &dd, &a, &t, x_zp, u8,
                 (!u8 || native) && temp == NULL && apart && at + plane + 3u <= xbytes, q, &ch, band, &padded);
    }
    return 1;
}
