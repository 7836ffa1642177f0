/* QLinearConv's int8 fast path for a depthwise conv (group == C == M): one plane at a time,
 * through a band of padded input rows on the stack (DW_BAND_BYTES), 3x3 undilated windows by
 * SMLAD on DSP cores.
 *
 * Workspace: none of its own; planned in place (y at x's address) each input channel is copied
 * into the op's one-channel workspace before its output is written (arena_dw_in_place, temp). */
#include <string.h>

#include "support_int8.h"

/* A block of depthwise outputs computed from a band (see dw_plane): nh rows of n outputs,
 * output (i, j) from the window at band + i * rstep + j * sw, rows width apart. */
typedef struct {
    const int8_t *band, *w; /* band; kernel KH x KW */
    int8_t *dst;            /* output (0, 0); rows dstride apart */
    int32_t width, n, nh, sw, rstep, dstride, kh, kw, dh, dwl;
    int32_t fold;           /* x_zp * sum(w): every tap is inside the band, padding = x_zp */
} dw_block_t;

#if defined(__ARM_FEATURE_DSP)
/* 3x3, no dilation: per kernel row one 32-bit load x0..x3, (x0, x2) . (w0, w2) by SMLAD and
 * x1 * w1 by SMLABB; at stride 1 the same load gives the next output too, (x1, x3) . (w0, w2)
 * and x2 * w1 (SMLATB). */
static __attribute__((noinline)) void dw3_block(const dw_block_t *b, const qpar_t *q, const chan_t *ch)
{
    uint32_t w02[3], w1[3];
    int32_t i, j, ky, W = b->width, n = b->n, sw = b->sw;
    for (ky = 0; ky < 3; ++ky) {
        w02[ky] = ((uint32_t)(uint16_t)b->w[3 * ky]) | ((uint32_t)(uint16_t)b->w[3 * ky + 2] << 16);
        w1[ky] = (uint32_t)(uint16_t)b->w[3 * ky + 1];
    }
    for (i = 0; i < b->nh; ++i) {
        const int8_t *r = b->band + i * b->rstep;
        int8_t *dst = b->dst + i * b->dstride;
        j = 0;
        if (sw == 1) {
            for (; j + 1 < n; j += 2, r += 2) {
                int32_t a0 = 0, a1 = 0;
                for (ky = 0; ky < 3; ++ky) {
                    uint32_t v = ld4(r + ky * W), lo = W_LO(v), hi = W_HI(v);
                    a0 = MAC2(lo, w02[ky], a0);
                    a0 = __smlabb((int32_t)hi, (int32_t)w1[ky], a0);
                    a1 = MAC2(hi, w02[ky], a1);
                    a1 = __smlatb((int32_t)lo, (int32_t)w1[ky], a1);
                }
                dst[j] = store(q, ch, a0 - b->fold);
                dst[j + 1] = store(q, ch, a1 - b->fold);
            }
        }
        for (; j < n; ++j, r += sw) {
            int32_t acc = 0;
            for (ky = 0; ky < 3; ++ky) {
                uint32_t v = ld4(r + ky * W);
                acc = MAC2(W_LO(v), w02[ky], acc);
                acc = __smlabb((int32_t)W_HI(v), (int32_t)w1[ky], acc);
            }
            dst[j] = store(q, ch, acc - b->fold);
        }
    }
}
#else
/* 3x3, no dilation, in C. */
static __attribute__((noinline)) void dw3_block(const dw_block_t *b, const qpar_t *q, const chan_t *ch)
{
    const int8_t *w = b->w;
    int32_t i, j;
    for (i = 0; i < b->nh; ++i) {
        const int8_t *r0 = b->band + i * b->rstep, *r1 = r0 + b->width, *r2 = r1 + b->width;
        int8_t *dst = b->dst + i * b->dstride;
        for (j = 0; j < b->n; ++j, r0 += b->sw, r1 += b->sw, r2 += b->sw) {
            int32_t acc = r0[0] * w[0] + r0[1] * w[1] + r0[2] * w[2] + r1[0] * w[3] + r1[1] * w[4] + r1[2] * w[5]
                          + r2[0] * w[6] + r2[1] * w[7] + r2[2] * w[8];
            dst[j] = store(q, ch, acc - b->fold);
        }
    }
}
#endif

/* Any kernel size and dilation. */
static __attribute__((noinline)) void dw_block(const dw_block_t *b, const qpar_t *q, const chan_t *ch)
{
    int32_t i, j, ky, kx;
    for (i = 0; i < b->nh; ++i) {
        for (j = 0; j < b->n; ++j) {
            const int8_t *r = b->band + i * b->rstep + j * b->sw;
            int32_t acc = 0;
            for (ky = 0; ky < b->kh; ++ky, r += b->dh * b->width) {
                for (kx = 0; kx < b->kw; ++kx) {
                    acc += (int32_t)r[kx * b->dwl] * (int32_t)b->w[ky * b->kw + kx];
                }
            }
            b->dst[i * b->dstride + j] = store(q, ch, acc - b->fold);
        }
    }
}

/* Bytes of the stack band a depthwise plane is computed from (padded input rows). */
#define DW_BAND_BYTES 1024

/* row[j] = srow[j0 + j] for j < width where that is inside [0, W), else zp. */
static void band_row(int8_t *row, const int8_t *srow, int32_t j0, int32_t width, int32_t W, int8_t zp)
{
    int32_t lo = j0 < 0 ? -j0 : 0, hi = W - j0 < width ? W - j0 : width;
    if (lo > width) {
        lo = width;
    }
    if (hi < lo) {
        hi = lo;
    }
    memset(row, zp, (size_t)lo);
    memcpy(row + lo, srow + j0 + lo, (size_t)(hi - lo));
    memset(row + hi, zp, (size_t)(width - hi));
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

/* A depthwise plane: src (H x W, one channel) through kernel w (KH x KW) into dst
 * (OH x OW), block by block: the input rows and columns a block's windows read are copied
 * into the band with the padding filled with x_zp, so every window is inside the band and
 * its sum is sum(x * w) - x_zp * sum(w), without bounds checks. */
static void dw_plane(const int8_t *src, int8_t *dst, const int8_t *w, const arena_conv_dims_t *d,
                     const arena_attrs_t *a, const dw_split_t *t, int32_t x_zp, const qpar_t *q, const chan_t *ch)
{
    int8_t band[DW_BAND_BYTES];
    dw_block_t b;
    int32_t oh0, ow0, j, i, wsum = 0;
    int fast3 = a->kernel[0] == 3 && a->kernel[1] == 3 && a->dilations[0] == 1 && a->dilations[1] == 1;
    for (i = 0; i < a->kernel[0] * a->kernel[1]; ++i) {
        wsum += w[i];
    }
    b.band = band;
    b.w = w;
    b.sw = a->strides[1];
    b.dstride = d->ow;
    b.kh = a->kernel[0];
    b.kw = a->kernel[1];
    b.dh = a->dilations[0];
    b.dwl = a->dilations[1];
    b.fold = x_zp * wsum;
    for (ow0 = 0; ow0 < d->ow; ow0 += t->per_w) {
        b.n = d->ow - ow0 < t->per_w ? d->ow - ow0 : t->per_w;
        b.width = (b.n - 1) * b.sw + t->span_w + 3;
        b.rstep = a->strides[0] * b.width;
        for (oh0 = 0; oh0 < d->oh; oh0 += t->per_h) {
            int32_t ih0 = oh0 * a->strides[0] - a->pads[0];
            b.nh = d->oh - oh0 < t->per_h ? d->oh - oh0 : t->per_h;
            for (j = 0; j < (b.nh - 1) * a->strides[0] + t->span_h; ++j) {
                int32_t ih = ih0 + j;
                if (ih < 0 || ih >= d->h) {
                    memset(band + j * b.width, x_zp, (size_t)b.width);
                } else {
                    band_row(band + j * b.width, src + ih * d->w, ow0 * b.sw - a->pads[1], b.width, d->w,
                             (int8_t)x_zp);
                }
            }
            b.dst = dst + oh0 * d->ow + ow0;
            if (fast3) {
                dw3_block(&b, q, ch);
            } else {
                dw_block(&b, q, ch);
            }
        }
    }
}

/* A depthwise conv (group == C == M), in place through temp (one channel, copied
 * before its output is written: arena_dw_in_place) or from x directly (temp NULL). A
 * plane whose band is one block is all copied before any output is written: in place it
 * needs no temp. */
int arena_i8_depthwise(const arena_ctx_t *c, const arena_conv_dims_t *d, const qpar_t *q, int8_t *temp)
{
    const int8_t *x = (const int8_t *)arena_in_data(c, 0), *w = (const int8_t *)arena_in_data(c, 3);
    int8_t *y = (int8_t *)arena_out_data(c, 0);
    int32_t x_zp = arena_q_zp(c, 2, 0), taps = c->op->attrs.kernel[0] * c->op->attrs.kernel[1];
    size_t plane = (size_t)d->h * (size_t)d->w, oplane = (size_t)d->oh * (size_t)d->ow;
    size_t chans = (size_t)d->n * (size_t)d->c, i;
    dw_split_t t = dw_split(d, &c->op->attrs);
    cparams_t cp = cparams(c);
    if (t.per_w == 0) {
        return 0;
    }
    if (t.per_w == d->ow && t.per_h == d->oh) {
        temp = NULL;
    }
    for (i = 0; i < chans; ++i) { /* increasing i: see arena_dw_in_place */
        int32_t m = (int32_t)(i % (size_t)d->c);
        chan_t ch = chan(&cp, m);
        const int8_t *src = x + i * plane;
        if (temp != NULL) {
            memcpy(temp, src, plane);
            src = temp;
        }
        dw_plane(src, y + i * oplane, w + (size_t)m * (size_t)taps, d, &c->op->attrs, &t, x_zp, q, &ch);
    }
    return 1;
}
