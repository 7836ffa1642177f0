/* The depthwise form of Conv, float32 (group == C == M), one channel at a time: interior
 * pixels without bounds checks, the border through clipped windows. Workspace: none of its
 * own; in place (y at x's address) conv_f32.c copies each input channel into the op's
 * one-channel workspace first (arena_dw_in_place). */
#include "support_f32.h"

/* One output pixel of one channel (kernel wm), the window clipped to the input. */
static NOINLINE float dw_px(const geom_t *g, const float *xc, const float *wm, float b, int32_t oh, int32_t ow, int32_t ky0,
                   int32_t ky1)
{
    int32_t ky, kx, kx0, kx1, ih0 = oh * g->sh - g->ph, iw0 = ow * g->sw - g->pw;
    float acc = b;
    window_taps(iw0, g->kw, g->dw, g->w, &kx0, &kx1);
    for (ky = ky0; ky < ky1; ++ky) {
        const float *xr = xc + (size_t)(ih0 + ky * g->dh) * (size_t)g->w + (size_t)(iw0 + kx0 * g->dw);
        const float *q = wm + (size_t)ky * (size_t)g->kw + (size_t)kx0;
        for (kx = kx0; kx < kx1; ++kx) {
            MAC(acc, *q++, *xr);
            xr += g->dw;
        }
    }
    return acc;
}

#if ARENA_MVE_F32
/* Interior pixels [lo, hi) of one output row (hi - lo >= 4), four a vector in Helium's float lanes:
 * the input under a tap one VLDRW (stride 1) or VLDRW gather (lanes sw apart), fused with the tap's
 * weight (VFMA from a general register) in the scalar path's tap order. The last four end at hi and
 * may overlap the ones before: those pixels are computed again to the same bits, and no lane is
 * predicated off. x0: the input under the first valid tap of pixel lo; q: that tap's weight. */
static NOINLINE void dw_row_mve(const geom_t *g, const float *x0, const float *q, int32_t nky, float b, float *y,
                                int32_t n)
{
    uint32x4_t lanes = vmulq_n_u32(vidupq_n_u32(0u, 1), (uint32_t)g->sw);
    size_t rstep = (size_t)g->dh * (size_t)g->w;
    int32_t ow = 0, ky, kx;
    for (;;) {
        const float *xr = x0 + (size_t)ow * (size_t)g->sw, *qk = q;
        float32x4_t acc = vdupq_n_f32(b);
        if (g->kh == 3 && g->kw == 3 && nky == 3 && g->dw == 1) {
            const float *r1 = xr + rstep, *r2 = r1 + rstep;
            if (g->sw == 1) {
                acc = vfmaq_n_f32(acc, vldrwq_f32(xr), qk[0]);
                acc = vfmaq_n_f32(acc, vldrwq_f32(xr + 1), qk[1]);
                acc = vfmaq_n_f32(acc, vldrwq_f32(xr + 2), qk[2]);
                acc = vfmaq_n_f32(acc, vldrwq_f32(r1), qk[3]);
                acc = vfmaq_n_f32(acc, vldrwq_f32(r1 + 1), qk[4]);
                acc = vfmaq_n_f32(acc, vldrwq_f32(r1 + 2), qk[5]);
                acc = vfmaq_n_f32(acc, vldrwq_f32(r2), qk[6]);
                acc = vfmaq_n_f32(acc, vldrwq_f32(r2 + 1), qk[7]);
                acc = vfmaq_n_f32(acc, vldrwq_f32(r2 + 2), qk[8]);
            } else {
                acc = vfmaq_n_f32(acc, vldrwq_gather_shifted_offset_f32(xr, lanes), qk[0]);
                acc = vfmaq_n_f32(acc, vldrwq_gather_shifted_offset_f32(xr + 1, lanes), qk[1]);
                acc = vfmaq_n_f32(acc, vldrwq_gather_shifted_offset_f32(xr + 2, lanes), qk[2]);
                acc = vfmaq_n_f32(acc, vldrwq_gather_shifted_offset_f32(r1, lanes), qk[3]);
                acc = vfmaq_n_f32(acc, vldrwq_gather_shifted_offset_f32(r1 + 1, lanes), qk[4]);
                acc = vfmaq_n_f32(acc, vldrwq_gather_shifted_offset_f32(r1 + 2, lanes), qk[5]);
                acc = vfmaq_n_f32(acc, vldrwq_gather_shifted_offset_f32(r2, lanes), qk[6]);
                acc = vfmaq_n_f32(acc, vldrwq_gather_shifted_offset_f32(r2 + 1, lanes), qk[7]);
                acc = vfmaq_n_f32(acc, vldrwq_gather_shifted_offset_f32(r2 + 2, lanes), qk[8]);
            }
        } else {
            for (ky = 0; ky < nky; ++ky) {
                const float *xp = xr;
                for (kx = 0; kx < g->kw; ++kx) {
                    float32x4_t v = g->sw == 1 ? vldrwq_f32(xp) : vldrwq_gather_shifted_offset_f32(xp, lanes);
                    acc = vfmaq_n_f32(acc, v, *qk++);
                    xp += g->dw;
                }
                xr += rstep;
            }
        }
        vstrwq_f32(y + ow, acc);
        if (ow + 4 >= n) {
            return;
        }
        ow = ow + 8 <= n ? ow + 4 : n - 4;
    }
}
#endif

/* One depthwise output channel from its input channel xc: y = b + the taps of kernel wm. Interior
 * pixels read their window without bounds checks (3 x 3: the nine weights in registers), border
 * pixels clip it. The one routine both the in-place and the ordinary depthwise run, so both give
 * the same bits. */
NOINLINE void arena_f32_dw_channel(const float *xc, const float *wm, float b, float *yc, const geom_t *g)
{
    int32_t oh, ow, lo, hi, ky0, ky1, ky, kx;
    interior_cols(g, &lo, &hi);
    for (oh = 0; oh < g->oh; ++oh) {
        float *yr = yc + (size_t)oh * (size_t)g->ow;
        int32_t ih0 = oh * g->sh - g->ph;
        window_taps(ih0, g->kh, g->dh, g->h, &ky0, &ky1);
        for (ow = 0; ow < lo; ++ow) {
            yr[ow] = dw_px(g, xc, wm, b, oh, ow, ky0, ky1);
        }
#if ARENA_MVE_F32
        if (hi - lo >= 4) {
            dw_row_mve(g, xc + (size_t)(ih0 + ky0 * g->dh) * (size_t)g->w + (size_t)(lo * g->sw - g->pw),
                       wm + (size_t)ky0 * (size_t)g->kw, ky1 - ky0, b, yr + lo, hi - lo);
        } else
#endif
        if (ky0 == 0 && ky1 == g->kh && g->kh == 3 && g->kw == 3 && g->dw == 1) {
            const float *r0 = xc + (size_t)ih0 * (size_t)g->w + (size_t)(lo * g->sw - g->pw);
            const float *r1 = r0 + (size_t)g->dh * (size_t)g->w, *r2 = r1 + (size_t)g->dh * (size_t)g->w;
            float w0 = wm[0], w1 = wm[1], w2 = wm[2], w3 = wm[3], w4_ = wm[4], w5 = wm[5], w6 = wm[6], w7 = wm[7];
            float w8 = wm[8];
            float *yp = yr + lo;
            for (ow = lo; ow < hi; ++ow) {
                float acc = b;
                MAC(acc, w0, r0[0]);
                MAC(acc, w1, r0[1]);
                MAC(acc, w2, r0[2]);
                MAC(acc, w3, r1[0]);
                MAC(acc, w4_, r1[1]);
                MAC(acc, w5, r1[2]);
                MAC(acc, w6, r2[0]);
                MAC(acc, w7, r2[1]);
                MAC(acc, w8, r2[2]);
                *yp++ = acc;
                r0 += g->sw;
                r1 += g->sw;
                r2 += g->sw;
            }
        } else {
            for (ow = lo; ow < hi; ++ow) {
                const float *xr = xc + (size_t)(ih0 + ky0 * g->dh) * (size_t)g->w + (size_t)(ow * g->sw - g->pw);
                const float *q = wm + (size_t)ky0 * (size_t)g->kw;
                float acc = b;
                for (ky = ky0; ky < ky1; ++ky) {
                    const float *xp = xr;
                    for (kx = 0; kx < g->kw; ++kx) {
                        MAC(acc, *q++, *xp);
                        xp += g->dw;
                    }
                    xr += (size_t)g->dh * (size_t)g->w;
                }
                yr[ow] = acc;
            }
        }
        for (ow = hi; ow < g->ow; ++ow) {
            yr[ow] = dw_px(g, xc, wm, b, oh, ow, ky0, ky1);
        }
    }
}
