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
