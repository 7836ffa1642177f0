/* int8/uint8 kernels: ONNX linear quantization, q = saturate(rint(x / s) + zp),
 * x = (q - zp) * s, with per-tensor or per-axis scales. QLinear ops requantize
 * an int32 accumulator with the float multiplier s_x * s_w / s_y, rounding
 * half to even (ONNX Runtime may differ by one step on exact ties). */
#include "arena_kernels.h"

static int32_t load_int(const arena_tensor_t *t, const void *data, uint32_t i)
{
    if (t == NULL || data == NULL) {
        return 0;
    }
    switch (t->dtype) {
    case ARENA_DT_INT8: return ((const int8_t *)data)[i];
    case ARENA_DT_UINT8: return ((const uint8_t *)data)[i];
    case ARENA_DT_INT32: return ((const int32_t *)data)[i];
    default: return 0;
    }
}

/* The op's quantized output range (a Relu/Clip lowering absorbed), applied before saturation. */
static float clamp_range(const arena_attrs_t *a, float v)
{
    if (a->out_min < a->out_max) {
        v = v < (float)a->out_min ? (float)a->out_min : (v > (float)a->out_max ? (float)a->out_max : v);
    }
    return v;
}

static int store_q(const arena_tensor_t *t, void *data, uint32_t i, float v)
{
    int32_t q;
    float lo = t->dtype == ARENA_DT_INT8 ? -128.0f : 0.0f;
    float hi = t->dtype == ARENA_DT_INT8 ? 127.0f : 255.0f;
    v = v < lo ? lo : (v > hi ? hi : v);
    q = (int32_t)v;
    if (t->dtype == ARENA_DT_INT8) {
        ((int8_t *)data)[i] = (int8_t)q;
    } else if (t->dtype == ARENA_DT_UINT8) {
        ((uint8_t *)data)[i] = (uint8_t)q;
    } else {
        return ARENA_ERR_UNSUPPORTED;
    }
    return ARENA_OK;
}

/* Which scale/zero-point entry element i of `x` uses (per-axis when the scale has more than one). */
static uint32_t axis_index(const arena_tensor_t *x, const arena_tensor_t *scale, int32_t axis, uint32_t i)
{
    uint32_t inner;
    if (scale == NULL || scale->elements <= 1u) {
        return 0u;
    }
    inner = arena_dims_product(x, axis + 1, x->rank);
    return (i / inner) % (uint32_t)x->shape[axis];
}

int arena_k_quantize(const arena_ctx_t *c)
{
    const arena_tensor_t *xt = arena_in(c, 0), *st = arena_in(c, 1), *zt = arena_in(c, 2), *yt = arena_out(c, 0);
    const float *x = (const float *)arena_in_data(c, 0);
    const float *s = (const float *)arena_in_data(c, 1);
    const void *z = zt != NULL ? arena_in_data(c, 2) : NULL;
    void *y = arena_out_data(c, 0);
    uint32_t i;
    if (xt == NULL || st == NULL || yt == NULL || xt->dtype != ARENA_DT_FLOAT32) {
        return ARENA_ERR_UNSUPPORTED;
    }
    for (i = 0; i < yt->elements; ++i) {
        uint32_t k = axis_index(xt, st, c->op->attrs.axis, i);
        int rc = store_q(yt, y, i, arena_rintf(x[i] / s[k]) + (float)load_int(zt, z, k));
        if (rc != ARENA_OK) {
            return rc;
        }
    }
    return ARENA_OK;
}

int arena_k_dequantize(const arena_ctx_t *c)
{
    const arena_tensor_t *xt = arena_in(c, 0), *st = arena_in(c, 1), *zt = arena_in(c, 2), *yt = arena_out(c, 0);
    const void *x = arena_in_data(c, 0);
    const float *s = (const float *)arena_in_data(c, 1);
    const void *z = zt != NULL ? arena_in_data(c, 2) : NULL;
    float *y = (float *)arena_out_data(c, 0);
    uint32_t n = yt != NULL ? yt->elements : 0u, i;
    if (xt == NULL || st == NULL || yt == NULL || yt->dtype != ARENA_DT_FLOAT32 || xt->dtype == ARENA_DT_FLOAT32) {
        return ARENA_ERR_UNSUPPORTED;
    }
    /* In place is possible only for int32 -> float32 (same width): forward order is safe then. */
    for (i = 0; i < n; ++i) {
        uint32_t k = axis_index(xt, st, c->op->attrs.axis, i);
        y[i] = (float)(load_int(xt, x, i) - load_int(zt, z, k)) * s[k];
    }
    return ARENA_OK;
}

/* One output pixel's accumulator for int8 x and int8 w (every int8 model's
 * convs): the generic loop's arithmetic with direct int8 loads, the kernel
 * window's bounds checked once per tap and the channels innermost (a 1x1
 * conv is then one strided dot product). */
static int32_t qconv_i8_pixel(const int8_t *x, const int8_t *w, const int32_t *xd, const arena_attrs_t *a,
                              int32_t n, int32_t m, int32_t g, int32_t cg, int32_t oh, int32_t ow,
                              int32_t x_zp, int32_t w_zp)
{
    int32_t ih0 = oh * a->strides[0] - a->pads[0], iw0 = ow * a->strides[1] - a->pads[1];
    int32_t taps = a->kernel[0] * a->kernel[1], plane = xd[2] * xd[3];
    int32_t acc = 0, ci, ky, kx;
    const int8_t *xg = x + (size_t)(n * xd[1] + g * cg) * (size_t)plane;
    const int8_t *wm = w + (size_t)(m * cg) * (size_t)taps;
    for (ky = 0; ky < a->kernel[0]; ++ky) {
        int32_t ih = ih0 + ky * a->dilations[0];
        if (ih < 0 || ih >= xd[2]) {
            continue;
        }
        for (kx = 0; kx < a->kernel[1]; ++kx) {
            int32_t iw = iw0 + kx * a->dilations[1];
            const int8_t *xp, *wp;
            if (iw < 0 || iw >= xd[3]) {
                continue;
            }
            xp = xg + ih * xd[3] + iw;
            wp = wm + ky * a->kernel[1] + kx;
            for (ci = 0; ci < cg; ++ci) {
                acc += ((int32_t)xp[ci * plane] - x_zp) * ((int32_t)wp[ci * taps] - w_zp);
            }
        }
    }
    return acc;
}

int arena_k_qlinear_conv(const arena_ctx_t *c)
{
    const arena_attrs_t *a = &c->op->attrs;
    const arena_tensor_t *xt = arena_in(c, 0), *wt = arena_in(c, 3), *yt = arena_out(c, 0);
    const arena_tensor_t *xzt = arena_in(c, 2), *wst = arena_in(c, 4), *wzt = arena_in(c, 5), *yzt = arena_in(c, 7);
    const arena_tensor_t *bt = arena_in(c, 8);
    const void *x = arena_in_data(c, 0), *w = arena_in_data(c, 3);
    const void *xz = arena_in_data(c, 2), *wz = arena_in_data(c, 5), *yz = arena_in_data(c, 7);
    const float *xs = (const float *)arena_in_data(c, 1), *ws = (const float *)arena_in_data(c, 4);
    const float *ys = (const float *)arena_in_data(c, 6);
    const void *bias = bt != NULL ? arena_in_data(c, 8) : NULL;
    void *y = arena_out_data(c, 0);
    int32_t xd[4], yd[4], groups = a->group > 0 ? a->group : 1, cg, mg, n, m, oh, ow, ci, ky, kx;
    int32_t x_zp = load_int(xzt, xz, 0), y_zp = load_int(yzt, yz, 0);
    int fast;
    if (xt == NULL || wt == NULL || yt == NULL || xs == NULL || ws == NULL || ys == NULL) {
        return ARENA_ERR_SHAPE;
    }
    fast = xt->dtype == ARENA_DT_INT8 && wt->dtype == ARENA_DT_INT8;
    if (xt->rank == 4) {
        xd[0] = xt->shape[0]; xd[1] = xt->shape[1]; xd[2] = xt->shape[2]; xd[3] = xt->shape[3];
        yd[0] = yt->shape[0]; yd[1] = yt->shape[1]; yd[2] = yt->shape[2]; yd[3] = yt->shape[3];
    } else if (xt->rank == 3) {
        xd[0] = xt->shape[0]; xd[1] = xt->shape[1]; xd[2] = 1; xd[3] = xt->shape[2];
        yd[0] = yt->shape[0]; yd[1] = yt->shape[1]; yd[2] = 1; yd[3] = yt->shape[2];
    } else {
        return ARENA_ERR_SHAPE;
    }
    cg = xd[1] / groups;
    mg = yd[1] / groups;
    for (n = 0; n < xd[0]; ++n) {
        for (m = 0; m < yd[1]; ++m) {
            int32_t g = m / mg;
            uint32_t wk = wst->elements > 1u ? (uint32_t)m : 0u;
            int32_t w_zp = load_int(wzt, wz, wzt != NULL && wzt->elements > 1u ? (uint32_t)m : 0u);
            float mult = xs[0] * ws[wk] / ys[0];
            for (oh = 0; oh < yd[2]; ++oh) {
                for (ow = 0; ow < yd[3]; ++ow) {
                    int32_t acc = load_int(bt, bias, (uint32_t)m);
                    if (fast) {
                        acc += qconv_i8_pixel((const int8_t *)x, (const int8_t *)w, xd, a, n, m, g, cg, oh, ow,
                                              x_zp, w_zp);
                    } else for (ci = 0; ci < cg; ++ci) {
                        int32_t xc = g * cg + ci;
                        for (ky = 0; ky < a->kernel[0]; ++ky) {
                            int32_t ih = oh * a->strides[0] - a->pads[0] + ky * a->dilations[0];
                            if (ih < 0 || ih >= xd[2]) {
                                continue;
                            }
                            for (kx = 0; kx < a->kernel[1]; ++kx) {
                                int32_t iw = ow * a->strides[1] - a->pads[1] + kx * a->dilations[1];
                                uint32_t xi, wi;
                                if (iw < 0 || iw >= xd[3]) {
                                    continue;
                                }
                                xi = (uint32_t)(((n * xd[1] + xc) * xd[2] + ih) * xd[3] + iw);
                                wi = (uint32_t)(((m * cg + ci) * a->kernel[0] + ky) * a->kernel[1] + kx);
                                acc += (load_int(xt, x, xi) - x_zp) * (load_int(wt, w, wi) - w_zp);
                            }
                        }
                    }
                    {
                        uint32_t yi = (uint32_t)(((n * yd[1] + m) * yd[2] + oh) * yd[3] + ow);
                        int rc = store_q(yt, y, yi, clamp_range(a, arena_rintf((float)acc * mult) + (float)y_zp));
                        if (rc != ARENA_OK) {
                            return rc;
                        }
                    }
                }
            }
        }
    }
    return ARENA_OK;
}

int arena_k_qlinear_matmul(const arena_ctx_t *c)
{
    const arena_tensor_t *at = arena_in(c, 0), *bt = arena_in(c, 3), *yt = arena_out(c, 0);
    const arena_tensor_t *azt = arena_in(c, 2), *bst = arena_in(c, 4), *bzt = arena_in(c, 5), *yzt = arena_in(c, 7);
    const void *A = arena_in_data(c, 0), *B = arena_in_data(c, 3), *Y = arena_out_data(c, 0);
    const float *as = (const float *)arena_in_data(c, 1), *bs = (const float *)arena_in_data(c, 4);
    const float *ys = (const float *)arena_in_data(c, 6);
    int32_t M, N, K, i, j, k;
    int32_t a_zp = load_int(azt, arena_in_data(c, 2), 0), y_zp = load_int(yzt, arena_in_data(c, 7), 0);
    if (at == NULL || bt == NULL || yt == NULL || at->rank != 2 || bt->rank != 2 || as == NULL || bs == NULL
        || ys == NULL) {
        return ARENA_ERR_SHAPE;
    }
    M = at->shape[0];
    K = at->shape[1];
    N = bt->shape[1];
    for (i = 0; i < M; ++i) {
        for (j = 0; j < N; ++j) {
            uint32_t bk = bst->elements > 1u ? (uint32_t)j : 0u;
            int32_t b_zp = load_int(bzt, arena_in_data(c, 5), bzt != NULL && bzt->elements > 1u ? (uint32_t)j : 0u);
            int32_t acc = 0;
            int rc;
            for (k = 0; k < K; ++k) {
                acc += (load_int(at, A, (uint32_t)(i * K + k)) - a_zp) * (load_int(bt, B, (uint32_t)(k * N + j)) - b_zp);
            }
            rc = store_q(yt, (void *)(uintptr_t)Y, (uint32_t)(i * N + j),
                         clamp_range(&c->op->attrs, arena_rintf((float)acc * (as[0] * bs[bk] / ys[0])) + (float)y_zp));
            if (rc != ARENA_OK) {
                return rc;
            }
        }
    }
    return ARENA_OK;
}
