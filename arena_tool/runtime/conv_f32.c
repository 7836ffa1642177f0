/* Conv, float32 (groups, dilations, 1-D as H = 1).
 *
 * Workspace: a conv that is neither 1x1 stride-1 unpadded nor depthwise may have one
 * (lowering.workspace_of: Cin/group * KH * KW floats per output pixel, a whole output row's
 * worth under scratch: row, every pixel's under scratch: full). It holds as many output rows'
 * im2col columns as fit, each band a GEMM (arena_f32_gemm_nn); without one, or when not one
 * row fits, the conv runs direct (conv_direct, four output channels a tile). A depthwise conv
 * planned in place uses its workspace as a one-channel temp (arena_dw_in_place); it runs in
 * depthwise_f32.c. */
#include "support_f32.h"

/* The taps of one output row's windows: their offsets from the window's first input column
 * (in the row's valid kernel rows), and how far the kernels skip past them to the next channel. */
#define MAX_TAPS 64
typedef struct {
    int32_t off[MAX_TAPS];
    int32_t ntaps;
    size_t plane, wskip;
    int32_t cin;
} rowtaps_t;

/* Four output channels (kernels w[i] from their first valid tap; rows past `nco` repeat the last)
 * at four output pixels S columns apart, whose windows start at x (every tap inside the input):
 * y[i][j] = c[i] + the taps, the 16 sums in registers. One function per stride keeps the four
 * input loads at constant offsets from one pointer. */
#define CONV_TILE(NAME, S)                                                                              \
    static NOINLINE void NAME(const rowtaps_t *t, const float *x, const float *const w[4], const float c[4], \
                              float *const y[4], int32_t nco, int32_t sw)                             \
    {                                                                                                   \
        const float *q0 = w[0], *q1 = w[1], *q2 = w[2], *q3 = w[3];                                   \
        const int32_t *oe = t->off + t->ntaps;                                                          \
        int32_t ci;                                                                                     \
        float c00 = c[0], c01 = c[0], c02 = c[0], c03 = c[0], c10 = c[1], c11 = c[1], c12 = c[1];      \
        float c13 = c[1], c20 = c[2], c21 = c[2], c22 = c[2], c23 = c[2], c30 = c[3], c31 = c[3];      \
        float c32 = c[3], c33 = c[3];                                                                   \
        (void)sw;                                                                                       \
        for (ci = t->ntaps > 0 ? t->cin : 0; ci > 0; --ci) {                                            \
            const int32_t *o = t->off;                                                                  \
            do {                                                                                        \
                const float *xp = x + *o++;                                                             \
                float v0 = xp[0], v1 = xp[S], v2 = xp[2 * (S)], v3 = xp[3 * (S)], u;                    \
                u = *q0++;                                                                              \
                MAC4(c00, c01, c02, c03, u, v0, v1, v2, v3);                                            \
                u = *q1++;                                                                              \
                MAC4(c10, c11, c12, c13, u, v0, v1, v2, v3);                                            \
                u = *q2++;                                                                              \
                MAC4(c20, c21, c22, c23, u, v0, v1, v2, v3);                                            \
                u = *q3++;                                                                              \
                MAC4(c30, c31, c32, c33, u, v0, v1, v2, v3);                                            \
            } while (o != oe);                                                                          \
            q0 += t->wskip;                                                                             \
            q1 += t->wskip;                                                                             \
            q2 += t->wskip;                                                                             \
            q3 += t->wskip;                                                                             \
            x += t->plane;                                                                              \
        }                                                                                               \
        put4(y[0], 4, c00, c01, c02, c03);                                                              \
        if (nco > 1) {                                                                                  \
            put4(y[1], 4, c10, c11, c12, c13);                                                          \
        }                                                                                               \
        if (nco > 2) {                                                                                  \
            put4(y[2], 4, c20, c21, c22, c23);                                                          \
        }                                                                                               \
        if (nco > 3) {                                                                                  \
            put4(y[3], 4, c30, c31, c32, c33);                                                          \
        }                                                                                               \
    }
#if ARENA_MVE_F32
/* The same tile in Helium's float lanes: the four pixels one vector (LOAD: one VLDRW at stride 1,
 * else a VLDRW gather S apart), output channel i's four sums one vector fused with its tap's weight
 * (VFMA from a general register). */
#define CONV_TILE_MVE(NAME, LOAD)                                                                         \
    static NOINLINE void NAME(const rowtaps_t *t, const float *x, const float *const w[4], const float c[4], \
                              float *const y[4], int32_t nco, int32_t sw)                             \
    {                                                                                                   \
        const float *q0 = w[0], *q1 = w[1], *q2 = w[2], *q3 = w[3];                                   \
        const int32_t *oe = t->off + t->ntaps;                                                          \
        uint32x4_t lanes = vmulq_n_u32(vidupq_n_u32(0u, 1), (uint32_t)sw);                              \
        float32x4_t c0 = vdupq_n_f32(c[0]), c1 = vdupq_n_f32(c[1]), c2 = vdupq_n_f32(c[2]);            \
        float32x4_t c3 = vdupq_n_f32(c[3]);                                                             \
        int32_t ci;                                                                                     \
        (void)lanes;                                                                                    \
        for (ci = t->ntaps > 0 ? t->cin : 0; ci > 0; --ci) {                                            \
            const int32_t *o = t->off;                                                                  \
            do {                                                                                        \
                const float *xp = x + *o++;                                                             \
                float32x4_t v = LOAD;                                                                   \
                c0 = vfmaq_n_f32(c0, v, *q0++);                                                         \
                c1 = vfmaq_n_f32(c1, v, *q1++);                                                         \
                c2 = vfmaq_n_f32(c2, v, *q2++);                                                         \
                c3 = vfmaq_n_f32(c3, v, *q3++);                                                         \
            } while (o != oe);                                                                          \
            q0 += t->wskip;                                                                             \
            q1 += t->wskip;                                                                             \
            q2 += t->wskip;                                                                             \
            q3 += t->wskip;                                                                             \
            x += t->plane;                                                                              \
        }                                                                                               \
        vstrwq_f32(y[0], c0);                                                                           \
        if (nco > 1) {                                                                                  \
            vstrwq_f32(y[1], c1);                                                                       \
        }                                                                                               \
        if (nco > 2) {                                                                                  \
            vstrwq_f32(y[2], c2);                                                                       \
        }                                                                                               \
        if (nco > 3) {                                                                                  \
            vstrwq_f32(y[3], c3);                                                                       \
        }                                                                                               \
    }
CONV_TILE_MVE(conv_tile_s1, vldrwq_f32(xp))
CONV_TILE_MVE(conv_tile_sn, vldrwq_gather_shifted_offset_f32(xp, lanes))
#undef CONV_TILE_MVE
#else
CONV_TILE(conv_tile_s1, 1)
CONV_TILE(conv_tile_s2, 2)
CONV_TILE(conv_tile_sn, sw)
#endif
#undef CONV_TILE

/* Four output channels at one output pixel (oh, ow), the window clipped to the input: padding
 * is skipped, never read. Any stride and dilation. Helium: the four channels one vector, their
 * weights of a tap one VLDRW gather, their outputs one predicated scatter (the kernels and the
 * output planes come in increasing order, so their distances are offsets from the first). */
#if ARENA_MVE_F32
static NOINLINE void conv_px(const geom_t *g, const float *x, const float *const w[4], const float c[4], float *const y[4],
                             int32_t oh, int32_t ow, int32_t ky0, int32_t ky1, int32_t nco)
{
    int32_t kk = g->kh * g->kw, ci, ky, kx, kx0, kx1, ih0 = oh * g->sh - g->ph, iw0 = ow * g->sw - g->pw;
    size_t plane = (size_t)g->h * (size_t)g->w, rstep = (size_t)g->dh * (size_t)g->w;
    uint32_t wo[4], yo[4];
    uint32x4_t wof, yof;
    float32x4_t acc = vldrwq_f32(c);
    int i;
    for (i = 0; i < 4; ++i) {
        wo[i] = (uint32_t)(w[i] - w[0]);
        yo[i] = (uint32_t)(y[i] - y[0]);
    }
    wof = vldrwq_u32(wo);
    yof = vldrwq_u32(yo);
    window_taps(iw0, g->kw, g->dw, g->w, &kx0, &kx1);
    for (ci = 0; ci < g->cin; ++ci) {
        const float *xr = x + (size_t)ci * plane + (size_t)(ih0 + ky0 * g->dh) * (size_t)g->w
                          + (size_t)(iw0 + kx0 * g->dw);
        const float *q = w[0] + (size_t)ci * (size_t)kk + (size_t)ky0 * (size_t)g->kw + (size_t)kx0;
        for (ky = ky0; ky < ky1; ++ky) {
            const float *xp = xr;
            for (kx = kx0; kx < kx1; ++kx) {
                acc = vfmaq_n_f32(acc, vldrwq_gather_shifted_offset_f32(q++, wof), *xp);
                xp += g->dw;
            }
            q += g->kw - (kx1 - kx0);
            xr += rstep;
        }
    }
    vstrwq_scatter_shifted_offset_p_f32(y[0] + ow, yof, acc, vctp32q((uint32_t)nco));
}
#else
static NOINLINE void conv_px(const geom_t *g, const float *x, const float *const w[4], const float c[4], float *const y[4],
                    int32_t oh, int32_t ow, int32_t ky0, int32_t ky1, int32_t nco)
{
    int32_t kk = g->kh * g->kw, ci, ky, kx, kx0, kx1, ih0 = oh * g->sh - g->ph, iw0 = ow * g->sw - g->pw;
    size_t plane = (size_t)g->h * (size_t)g->w, rstep = (size_t)g->dh * (size_t)g->w;
    float c0 = c[0], c1 = c[1], c2 = c[2], c3 = c[3];
    window_taps(iw0, g->kw, g->dw, g->w, &kx0, &kx1);
    for (ci = 0; ci < g->cin; ++ci) {
        const float *xr = x + (size_t)ci * plane + (size_t)(ih0 + ky0 * g->dh) * (size_t)g->w
                          + (size_t)(iw0 + kx0 * g->dw);
        size_t off = (size_t)ci * (size_t)kk + (size_t)ky0 * (size_t)g->kw + (size_t)kx0;
        const float *q0 = w[0] + off, *q1 = w[1] + off, *q2 = w[2] + off, *q3 = w[3] + off;
        for (ky = ky0; ky < ky1; ++ky) {
            const float *xp = xr;
            for (kx = kx0; kx < kx1; ++kx) {
                float v = *xp;
                xp += g->dw;
                MAC(c0, *q0++, v);
                MAC(c1, *q1++, v);
                MAC(c2, *q2++, v);
                MAC(c3, *q3++, v);
            }
            q0 += g->kw - (kx1 - kx0);
            q1 += g->kw - (kx1 - kx0);
            q2 += g->kw - (kx1 - kx0);
            q3 += g->kw - (kx1 - kx0);
            xr += rstep;
        }
    }
    y[0][ow] = c0;
    if (nco > 1) {
        y[1][ow] = c1;
    }
    if (nco > 2) {
        y[2][ow] = c2;
    }
    if (nco > 3) {
        y[3][ow] = c3;
    }
}
#endif

/* A direct convolution of one group (no workspace): four output channels at a time, interior
 * pixels four at a time (conv_tile_*), the padded border one at a time (conv_px).
 * x: the group's first input channel; w: its first kernel; y: its first output channel. */
static void conv_direct(const geom_t *g, const float *x, const float *w, const float *bias, float *y, int32_t cout)
{
    int32_t kk = g->kh * g->kw, co, oh, ow, i, lo, hi, ky0, ky1, ky, kx;
    size_t oplane = (size_t)g->oh * (size_t)g->ow;
    rowtaps_t t;
    interior_cols(g, &lo, &hi);
    if (kk > MAX_TAPS) {
        lo = hi = 0; /* a kernel too large for the tap table: every pixel through conv_px */
    }
    t.plane = (size_t)g->h * (size_t)g->w;
    t.cin = g->cin;
    for (co = 0; co < cout; co += 4) {
        int32_t nco = min_i32(4, cout - co);
        const float *wp[4], *wt[4];
        float c[4];
        float *yp[4];
        for (i = 0; i < 4; ++i) {
            int32_t m = co + min_i32(i, nco - 1);
            wp[i] = w + (size_t)m * (size_t)g->cin * (size_t)kk;
            c[i] = bias != NULL ? bias[m] : 0.0f;
        }
        for (oh = 0; oh < g->oh; ++oh) {
            int32_t ih0 = oh * g->sh - g->ph;
            for (i = 0; i < 4; ++i) {
                yp[i] = y + (size_t)(co + min_i32(i, nco - 1)) * oplane + (size_t)oh * (size_t)g->ow;
            }
            window_taps(ih0, g->kh, g->dh, g->h, &ky0, &ky1);
            for (ow = 0; ow < lo; ++ow) {
                conv_px(g, x, wp, c, yp, oh, ow, ky0, ky1, nco);
            }
            if (lo + 4 <= hi) {
                t.ntaps = 0;
                for (ky = ky0; ky < ky1; ++ky) {
                    for (kx = 0; kx < g->kw; ++kx) {
                        t.off[t.ntaps++] = (ih0 + ky * g->dh) * g->w + kx * g->dw;
                    }
                }
                t.wskip = (size_t)(kk - t.ntaps);
                for (i = 0; i < 4; ++i) {
                    wt[i] = wp[i] + (size_t)ky0 * (size_t)g->kw;
                }
            }
            for (; ow + 4 <= hi || (ow < hi && lo + 4 <= hi); ow += 4) {
                /* the last tile of a row may overlap the one before: it recomputes those pixels
                 * in the same order (the same bits), cheaper than conv_px */
                int32_t o = ow + 4 <= hi ? ow : hi - 4;
                const float *xw = x + (o * g->sw - g->pw);
                float *yt[4];
                for (i = 0; i < 4; ++i) {
                    yt[i] = yp[i] + o;
                }
                if (g->sw == 1) {
                    conv_tile_s1(&t, xw, wt, c, yt, nco, 1);
#if !ARENA_MVE_F32
                } else if (g->sw == 2) {
                    conv_tile_s2(&t, xw, wt, c, yt, nco, 2);
#endif
                } else {
                    conv_tile_sn(&t, xw, wt, c, yt, nco, g->sw);
                }
            }
            for (ow = ow > hi ? hi : ow; ow < g->ow; ++ow) {
                conv_px(g, x, wp, c, yp, oh, ow, ky0, ky1, nco);
            }
        }
    }
}

/* Output rows [r0, r0 + nr) of one group as an im2col matrix col[k][p] (k = (ci, ky, kx), p = the
 * pixels of those rows): row k of it is the input under tap k, zero where that is padding. (One
 * loop with the bounds test: zero runs as loops of their own would become memset calls.) */
static NOINLINE void im2col_rows(const geom_t *g, const float *x, float *col, int32_t r0, int32_t nr)
{
    int32_t ci, ky, kx, oh, ow;
    size_t plane = (size_t)g->h * (size_t)g->w;
    for (ci = 0; ci < g->cin; ++ci) {
        const float *xc = x + (size_t)ci * plane;
        for (ky = 0; ky < g->kh; ++ky) {
            for (kx = 0; kx < g->kw; ++kx) {
                for (oh = r0; oh < r0 + nr; ++oh) {
                    int32_t ih = oh * g->sh - g->ph + ky * g->dh, iw = kx * g->dw - g->pw;
                    uint32_t w = ih >= 0 && ih < g->h ? (uint32_t)g->w : 0u; /* 0: the whole row is padding */
                    const float *xr = xc + (size_t)(w != 0u ? ih : 0) * (size_t)g->w;
                    for (ow = 0; ow < g->ow; ++ow) {
                        *col++ = (uint32_t)iw < w ? xr[iw] : 0.0f;
                        iw += g->sw;
                    }
                }
            }
        }
    }
}

/* --- Conv ------------------------------------------------------------------------------------ */

int arena_k_conv(const arena_ctx_t *c)
{
    const arena_attrs_t *a = c->op->attrs;
    const arena_tensor_t *xt = arena_in(c, 0), *wt = arena_in(c, 1), *bt = arena_in(c, 2), *yt = arena_out(c, 0);
    const float *x = (const float *)arena_in_data(c, 0);
    const float *w = (const float *)arena_in_data(c, 1);
    const float *bias = bt != NULL ? (const float *)arena_in_data(c, 2) : NULL;
    float *y = (float *)arena_out_data(c, 0);
    int32_t xd[4], yd[4];
    int32_t g, groups = c->op->group > 0 ? (int32_t)c->op->group : 1;
    int32_t mg, kk, n, m;
    size_t ws_elems = 0, xplane, yplane;
    float *ws = NULL;
    geom_t ge;
    if (xt == NULL || wt == NULL || yt == NULL || nchw(xt, xd) || nchw(yt, yd) || wt->rank != xt->rank ||
        yt->rank != xt->rank || !arena_shape_ok(xt) || !arena_shape_ok(wt) || !arena_shape_ok(yt)) {
        return ARENA_ERR_SHAPE;
    }
    if (!is_f32(xt) || !is_f32(wt) || !is_f32(yt) || (bt != NULL && !is_f32(bt))) {
        return ARENA_ERR_UNSUPPORTED;
    }
    if (!spatial_ok(a) || xd[1] % groups != 0 || yd[1] % groups != 0 || yd[0] != xd[0]) {
        return ARENA_ERR_SHAPE;
    }
    ge.cin = xd[1] / groups;
    ge.h = xd[2];
    ge.w = xd[3];
    ge.kh = a->kernel[0];
    ge.kw = a->kernel[1];
    ge.sh = a->strides[0];
    ge.sw = a->strides[1];
    ge.ph = a->pads[0];
    ge.pw = a->pads[1];
    ge.dh = a->dilations[0];
    ge.dw = a->dilations[1];
    ge.oh = yd[2];
    ge.ow = yd[3];
    mg = yd[1] / groups;
    kk = ge.cin * ge.kh * ge.kw;
    if (wt->shape[0] != yd[1] || wt->shape[1] != ge.cin || wt->shape[wt->rank - 1] != a->kernel[1] ||
        (wt->rank == 4 && wt->shape[2] != a->kernel[0]) || (wt->rank == 3 && a->kernel[0] != 1) ||
        (bt != NULL && bt->elements != (uint32_t)yd[1]) ||
        yd[2] != window_out(xd[2], a->pads[0], a->pads[2], a->kernel[0], a->strides[0], a->dilations[0]) ||
        yd[3] != window_out(xd[3], a->pads[1], a->pads[3], a->kernel[1], a->strides[1], a->dilations[1])) {
        return ARENA_ERR_SHAPE;
    }
    xplane = (size_t)xd[2] * (size_t)xd[3];
    yplane = (size_t)yd[2] * (size_t)yd[3];
    if (groups == xd[1] && yd[1] == xd[1]) {
        /* Depthwise (one input channel per output channel): in place through its temp. */
        size_t chans = (size_t)xd[0] * (size_t)xd[1], i, j;
        void *temp;
        int rc = arena_dw_in_place(c, x, chans * xplane * sizeof(float), y, chans * yplane * sizeof(float),
                                   xplane * sizeof(float), sizeof(float), &temp);
        if (rc != ARENA_OK) {
            return rc;
        }
        for (i = 0; i < chans; ++i) { /* increasing i: see arena_dw_in_place */
            const float *xc = x + i * xplane;
            m = (int32_t)(i % (size_t)xd[1]);
            if (temp != NULL) {
                float *t = (float *)temp;
                for (j = 0; j < xplane; ++j) {
                    t[j] = xc[j];
                }
                xc = t;
            }
            arena_f32_dw_channel(xc, w + (size_t)m * (size_t)kk, bias != NULL ? bias[m] : 0.0f, y + i * yplane, &ge);
        }
        return ARENA_OK;
    }
    if (c->op->workspace >= 0) {
        const arena_tensor_t *wst = &c->m->tensors[c->op->workspace];
        if (wst->dtype == ARENA_DT_FLOAT32 && wst->data == NULL) {
            ws_elems = (size_t)wst->elements;
            ws = (float *)arena_tensor_data(c->m, c->base, c->op->workspace);
        }
    }
    for (n = 0; n < xd[0]; ++n) {
        const float *xn = x + (size_t)n * (size_t)xd[1] * xplane;
        float *yn = y + (size_t)n * (size_t)yd[1] * yplane;
        for (g = 0; g < groups; ++g) {
            const float *xg = xn + (size_t)g * (size_t)ge.cin * xplane;
            const float *wg = w + (size_t)g * (size_t)mg * (size_t)kk;
            const float *bg = bias != NULL ? bias + g * mg : NULL;
            float *yg = yn + (size_t)g * (size_t)mg * yplane;
            /* rows of im2col columns the workspace holds */
            size_t row_elems = (size_t)yd[3] * (size_t)kk;
            int32_t rows = ws != NULL && row_elems > 0 ? (int32_t)(ws_elems / row_elems) : 0, r0;
            rows = min_i32(rows, yd[2]);
            if (ge.kh == 1 && ge.kw == 1 && ge.sh == 1 && ge.sw == 1 && ge.ph == 0 && ge.pw == 0 &&
                a->pads[2] == 0 && a->pads[3] == 0) {
                /* 1 x 1: the input channels are the GEMM's columns as they lie */
                arena_f32_gemm_nn(wg, kk, xg, (int32_t)xplane, bg, yg, (int32_t)yplane, mg, (int32_t)yplane, kk);
            } else if (rows > 0) {
                for (r0 = 0; r0 < yd[2]; r0 += rows) {
                    int32_t nr = min_i32(rows, yd[2] - r0), np = nr * yd[3];
                    im2col_rows(&ge, xg, ws, r0, nr);
                    arena_f32_gemm_nn(wg, kk, ws, np, bg, yg + (size_t)r0 * (size_t)yd[3], (int32_t)yplane, mg, np, kk);
                }
            } else {
                conv_direct(&ge, xg, wg, bg, yg, mg);
            }
        }
    }
    return ARENA_OK;
}
