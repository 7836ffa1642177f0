/* QLinearConv, the reference loops (int8/uint8, any weight zero point): the int8 fast paths
 * (conv_int8.c, depthwise_int8.c) run it when they can.
 *
 * Workspace: none for the reference loop itself (the fast path's im2col columns are
 * conv_int8.c's); a depthwise conv planned in place copies each input channel into the op's
 * one-channel workspace first (arena_dw_in_place). */
#include <string.h>

#include "support_q8.h"

#if defined(__ARM_FEATURE_MVE)
#include <arm_mve.h>
#endif

/* A conv's sizes (arena_conv_dims_t, arena_kernels.h). */
typedef arena_conv_dims_t conv_dims_t;

/* Output size of one spatial dim, or -1 when the window does not fit. */
static int32_t conv_out(int32_t in, int32_t k, int32_t stride, int32_t dil, int32_t p0, int32_t p1)
{
    int32_t span = (k - 1) * dil + 1;
    if (in + p0 + p1 < span) {
        return -1;
    }
    return (in + p0 + p1 - span) / stride + 1;
}

/* Checks the conv's tensors and attributes against each other and fills *d. */
static int conv_dims(const arena_ctx_t *c, conv_dims_t *d)
{
    const arena_attrs_t *a = c->op->attrs;
    const arena_tensor_t *xt = arena_in(c, 0), *wt = arena_in(c, 3), *yt = arena_out(c, 0), *bt = arena_in(c, 8);
    int r;
    if (xt == NULL || wt == NULL || yt == NULL || (xt->rank != 3 && xt->rank != 4) || wt->rank != xt->rank
        || yt->rank != xt->rank) {
        return ARENA_ERR_SHAPE;
    }
    r = xt->rank;
    d->n = xt->shape[0];
    d->c = xt->shape[1];
    d->h = r == 4 ? xt->shape[2] : 1;
    d->w = xt->shape[r - 1];
    d->m = yt->shape[1];
    d->oh = r == 4 ? yt->shape[2] : 1;
    d->ow = yt->shape[r - 1];
    d->groups = c->op->group > 0 ? (int32_t)c->op->group : 1;
    if (a->kernel[0] < 1 || a->kernel[1] < 1 || a->strides[0] < 1 || a->strides[1] < 1 || a->dilations[0] < 1
        || a->dilations[1] < 1 || a->pads[0] < 0 || a->pads[1] < 0 || a->pads[2] < 0 || a->pads[3] < 0) {
        return ARENA_ERR_SHAPE;
    }
    if (d->c % d->groups != 0 || d->m % d->groups != 0 || yt->shape[0] != d->n || wt->shape[0] != d->m
        || wt->shape[1] != d->c / d->groups || wt->shape[r - 1] != a->kernel[1]
        || (r == 4 ? wt->shape[2] : 1) != a->kernel[0]) {
        return ARENA_ERR_SHAPE;
    }
    if (d->oh != conv_out(d->h, a->kernel[0], a->strides[0], a->dilations[0], a->pads[0], a->pads[2])
        || d->ow != conv_out(d->w, a->kernel[1], a->strides[1], a->dilations[1], a->pads[1], a->pads[3])) {
        return ARENA_ERR_SHAPE;
    }
    if (bt != NULL && (bt->dtype != ARENA_DT_INT32 || bt->elements != (uint32_t)d->m)) {
        return bt->dtype != ARENA_DT_INT32 ? ARENA_ERR_UNSUPPORTED : ARENA_ERR_SHAPE;
    }
    d->cg = d->c / d->groups;
    d->mg = d->m / d->groups;
    d->kk = d->cg * a->kernel[0] * a->kernel[1];
    if (d->kk > INT32_MAX / (255 * 255)) {
        return ARENA_ERR_SHAPE; /* the int32 accumulator could overflow */
    }
    return ARENA_OK;
}

/* What writing output channel m needs. */
typedef struct {
    void *y;
    float mult;   /* x_scale * w_scale[m] / y_scale */
    int32_t w_zp, bias, y_zp, lo, hi;
} conv_chan_t;

static conv_chan_t conv_chan(const arena_ctx_t *c, int32_t m, int32_t lo, int32_t hi)
{
    conv_chan_t ch;
    ch.y = arena_out_data(c, 0);
    ch.mult = arena_q_scale(c, 1, 0) * arena_q_scale(c, 4, (uint32_t)m) / arena_q_scale(c, 6, 0);
    ch.w_zp = arena_q_zp(c, 5, (uint32_t)m);
    ch.bias = arena_q_load(arena_in(c, 8), arena_in_data(c, 8), (uint32_t)m);
    ch.y_zp = arena_q_zp(c, 7, 0);
    ch.lo = lo;
    ch.hi = hi;
    return ch;
}

/* One output pixel's taps over one input plane (x from element x_base, H x W) and
 * one kernel (w from w_base), any int8/uint8 mix: the loop the reference pixel and the
 * in-place depthwise conv share (integer, so every path gives the same codes). The int8
 * fast paths are conv_int8.c's and depthwise_int8.c's. */
static int32_t qconv_taps(const arena_tensor_t *xt, const void *x, uint32_t x_base, const arena_tensor_t *wt,
                          const void *w, uint32_t w_base, const conv_dims_t *d, const arena_attrs_t *a,
                          int32_t oh, int32_t ow, int32_t x_zp, int32_t w_zp)
{
    int32_t acc = 0, ky, kx;
    for (ky = 0; ky < a->kernel[0]; ++ky) {
        int32_t ih = oh * a->strides[0] - a->pads[0] + ky * a->dilations[0];
        if (ih < 0 || ih >= d->h) {
            continue;
        }
        for (kx = 0; kx < a->kernel[1]; ++kx) {
            int32_t iw = ow * a->strides[1] - a->pads[1] + kx * a->dilations[1];
            uint32_t xi, wi;
            if (iw < 0 || iw >= d->w) {
                continue;
            }
            xi = x_base + (uint32_t)(ih * d->w + iw);
            wi = w_base + (uint32_t)(ky * a->kernel[1] + kx);
            acc += (arena_q_load(xt, x, xi) - x_zp) * (arena_q_load(wt, w, wi) - w_zp);
        }
    }
    return acc;
}

/* One output pixel's accumulator, any int8/uint8 mix: the reference loop. */
static int32_t qconv_pixel(const arena_ctx_t *c, const conv_dims_t *d, int32_t n, int32_t m, int32_t oh, int32_t ow,
                           int32_t x_zp, int32_t w_zp)
{
    const arena_attrs_t *a = c->op->attrs;
    uint32_t taps = (uint32_t)(a->kernel[0] * a->kernel[1]), plane = (uint32_t)(d->h * d->w);
    int32_t g = m / d->mg, acc = 0, ci;
    for (ci = 0; ci < d->cg; ++ci) {
        uint32_t x_base = (uint32_t)(n * d->c + g * d->cg + ci) * plane;
        acc += qconv_taps(arena_in(c, 0), arena_in_data(c, 0), x_base, arena_in(c, 3), arena_in_data(c, 3),
                          (uint32_t)(m * d->cg + ci) * taps, d, a, oh, ow, x_zp, w_zp);
    }
    return acc;
}

/* Output pixel p (of OH * OW) of channel m, image n. */
static void qconv_store(const conv_dims_t *d, const conv_chan_t *ch, int32_t n, int32_t m, int32_t p, int32_t acc)
{
    uint32_t yi = (uint32_t)((n * d->m + m) * d->oh * d->ow + p);
    float v = (float)arena_q_bias_add(ch->bias, acc) * ch->mult;
    arena_q_put(ch->y, yi, arena_q_round(v, ch->y_zp, ch->lo, ch->hi));
}

/* Depthwise in place (arena_dw_in_place, TinyEngine's scheme) for a QLinearConv:
 * one byte per element on both sides. */
static int dw_in_place(const arena_ctx_t *c, const conv_dims_t *d, void **temp)
{
    size_t plane = (size_t)d->h * (size_t)d->w;
    return arena_dw_in_place(c, arena_in_data(c, 0), (size_t)d->n * (size_t)d->c * plane, arena_out_data(c, 0),
                             (size_t)d->n * (size_t)d->m * (size_t)d->oh * (size_t)d->ow, plane, 1u, temp);
}

/* The in-place depthwise conv through the one-channel temp (see dw_in_place):
 * the direct loop's integer arithmetic (exact, so the same codes), reading
 * input channel i only from its copy (which keeps x's element type). */
static void qconv_dw_in_place(const arena_ctx_t *c, const conv_dims_t *d, void *temp, int32_t lo, int32_t hi)
{
    const arena_attrs_t *a = c->op->attrs;
    const arena_tensor_t *xt = arena_in(c, 0), *wt = arena_in(c, 3);
    const uint8_t *x = (const uint8_t *)arena_in_data(c, 0);
    int32_t x_zp = arena_q_zp(c, 2, 0), taps = a->kernel[0] * a->kernel[1], oh, ow;
    size_t plane = (size_t)d->h * (size_t)d->w, chans = (size_t)d->n * (size_t)d->c, i;
    for (i = 0; i < chans; ++i) { /* increasing i: see dw_in_place */
        int32_t m = (int32_t)(i % (size_t)d->c);
        conv_chan_t ch = conv_chan(c, m, lo, hi);
        memcpy(temp, x + i * plane, plane);
        for (oh = 0; oh < d->oh; ++oh) {
            for (ow = 0; ow < d->ow; ++ow) {
                int32_t acc = qconv_taps(xt, temp, 0u, wt, arena_in_data(c, 3), (uint32_t)(m * taps), d, a,
                                         oh, ow, x_zp, ch.w_zp);
                qconv_store(d, &ch, (int32_t)(i / (size_t)d->c), m, oh * d->ow + ow, acc);
            }
        }
    }
}

/* y[i] = tab[y[i]] over the conv's output, where its path did not write the table's codes (a
 * conv writing its concat's codes: arena_conv_table). Helium: 16 bytes a gather. */
static void table_pass(const arena_ctx_t *c, int done)
{
    const uint8_t *tab = arena_conv_table(c);
    uint8_t *y = (uint8_t *)arena_out_data(c, 0);
    uint32_t i = 0u, n = arena_out(c, 0)->elements;
    if (tab == NULL || done == 2) {
        return;
    }
#if defined(__ARM_FEATURE_MVE)
    for (; i < n; i += 16u) {
        const mve_pred16_t p = vctp8q(n - i);
        vstrbq_p_u8(y + i, vldrbq_gather_offset_z_u8(tab, vldrbq_z_u8(y + i, p), p), p);
    }
#else
    for (; i < n; ++i) {
        y[i] = tab[y[i]];
    }
#endif
}

int arena_k_qlinear_conv(const arena_ctx_t *c)
{
    conv_dims_t d;
    int32_t lo, hi, x_zp, n, m, oh, ow;
    int dw, fast, rc = conv_dims(c, &d);
    if (rc == ARENA_OK) {
        rc = arena_q_check(c, 0, 1u);
    }
    if (rc == ARENA_OK) {
        rc = arena_q_check(c, 3, (uint32_t)d.m);
    }
    if (rc == ARENA_OK) {
        rc = arena_q_out(c, 6, &lo, &hi);
    }
    if (rc != ARENA_OK) {
        return rc;
    }
    dw = d.groups == d.c && d.m == d.c;
    if (dw) {
        /* Depthwise (one input channel per output channel): in place through its temp. */
        void *temp;
        rc = dw_in_place(c, &d, &temp);
        if (rc != ARENA_OK) {
            return rc;
        }
        if ((fast = arena_i8_conv(c, &d, lo, hi, temp)) != 0) {
            table_pass(c, fast);
            return ARENA_OK;
        }
        if (temp != NULL) {
            qconv_dw_in_place(c, &d, temp, lo, hi);
            table_pass(c, 1);
            return ARENA_OK;
        }
    } else if ((fast = arena_i8_conv(c, &d, lo, hi, NULL)) != 0) {
        table_pass(c, fast);
        return ARENA_OK;
    }
    /* The reference loop: any int8/uint8 mix, weight zero points, and what the fast paths
     * leave (conv_int8.c, depthwise_int8.c: a column longer than its buffer, a band too narrow). */
    x_zp = arena_q_zp(c, 2, 0);
    for (n = 0; n < d.n; ++n) {
        for (m = 0; m < d.m; ++m) {
            conv_chan_t ch = conv_chan(c, m, lo, hi);
            for (oh = 0; oh < d.oh; ++oh) {
                for (ow = 0; ow < d.ow; ++ow) {
                    int32_t acc = qconv_pixel(c, &d, n, m, oh, ow, x_zp, ch.w_zp);
                    qconv_store(&d, &ch, n, m, oh * d.ow + ow, acc);
                }
            }
        }
    }
    table_pass(c, 1);
    return ARENA_OK;
}
