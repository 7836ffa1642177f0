/* MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool: float32 (max pools int8/uint8 too).
 * No workspace. */
#include "support_f32.h"

/* One pooling window of one channel plane: origin, steps and the taps inside it. */
typedef struct {
    int32_t h0, w0, dh, dw, ky0, ky1, kx0, kx1, width;
} taps_t;

static float max_taps_f(const float *x, const taps_t *t)
{
    float acc = -FLT_BIG; /* onnxruntime's start: the lowest float, also for an all-padding window */
    int32_t ky, kx;
    for (ky = t->ky0; ky < t->ky1; ++ky) {
        const float *row = x + (size_t)(t->h0 + ky * t->dh) * (size_t)t->width;
        for (kx = t->kx0; kx < t->kx1; ++kx) {
            float v = row[t->w0 + kx * t->dw];
            acc = v > acc ? v : acc;
        }
    }
    return acc;
}

static int32_t max_taps_q8(const void *x, int is_s8, const taps_t *t)
{
    int32_t acc = is_s8 ? -128 : 0, ky, kx;
    for (ky = t->ky0; ky < t->ky1; ++ky) {
        size_t row = (size_t)(t->h0 + ky * t->dh) * (size_t)t->width;
        for (kx = t->kx0; kx < t->kx1; ++kx) {
            size_t i = row + (size_t)(t->w0 + kx * t->dw);
            int32_t v = is_s8 ? ((const int8_t *)x)[i] : ((const uint8_t *)x)[i];
            acc = v > acc ? v : acc;
        }
    }
    return acc;
}

/* MaxPool (float32, int8, uint8; dilations) and AveragePool (float32, no dilations). */
int arena_k_pool(const arena_ctx_t *c)
{
    const arena_attrs_t *a = c->op->attrs;
    const arena_tensor_t *xt = arena_in(c, 0), *yt = arena_out(c, 0);
    const uint8_t *x = (const uint8_t *)arena_in_data(c, 0);
    uint8_t *y = (uint8_t *)arena_out_data(c, 0);
    int32_t xd[4], yd[4], nc, oh, ow;
    int is_max = c->op->type == ARENA_OP_MAX_POOL;
    size_t es, plane_in, plane_out;
    if (!is_max && c->op->type != ARENA_OP_AVERAGE_POOL) {
        return ARENA_ERR_UNSUPPORTED;
    }
    if (xt == NULL || yt == NULL || nchw(xt, xd) || nchw(yt, yd) || xt->rank != yt->rank || !arena_shape_ok(xt) ||
        !arena_shape_ok(yt) || !spatial_ok(a) || yd[0] != xd[0] || yd[1] != xd[1]) {
        return ARENA_ERR_SHAPE;
    }
    if (xt->dtype != yt->dtype || (xt->dtype != ARENA_DT_FLOAT32 && !(is_max && arena_dtype_size(xt->dtype) == 1))) {
        return ARENA_ERR_UNSUPPORTED;
    }
    if (!is_max && (a->dilations[0] != 1 || a->dilations[1] != 1)) {
        return ARENA_ERR_UNSUPPORTED;
    }
    es = arena_dtype_size(xt->dtype);
    if (is_max && es == 1 && xd[2] > 0 && xd[3] > 0 && arena_i8_max_pool(c, xd, yd)) {
        return ARENA_OK;
    }
    plane_in = (size_t)xd[2] * (size_t)xd[3];
    plane_out = (size_t)yd[2] * (size_t)yd[3];
    for (nc = 0; nc < xd[0] * xd[1]; ++nc) {
        const uint8_t *xc = x + (size_t)nc * plane_in * es;
        for (oh = 0; oh < yd[2]; ++oh) {
            for (ow = 0; ow < yd[3]; ++ow) {
                size_t o = (size_t)nc * plane_out + (size_t)oh * (size_t)yd[3] + (size_t)ow;
                taps_t t;
                t.h0 = oh * a->strides[0] - a->pads[0];
                t.w0 = ow * a->strides[1] - a->pads[1];
                t.dh = a->dilations[0];
                t.dw = a->dilations[1];
                t.width = xd[3];
                window_taps(t.h0, a->kernel[0], t.dh, xd[2], &t.ky0, &t.ky1);
                window_taps(t.w0, a->kernel[1], t.dw, xd[3], &t.kx0, &t.kx1);
                if (is_max && es == 1) {
                    y[o] = (uint8_t)max_taps_q8(xc, xt->dtype == ARENA_DT_INT8, &t);
                } else if (is_max) {
                    ((float *)(void *)y)[o] = max_taps_f((const float *)(const void *)xc, &t);
                } else {
                    /* count_include_pad divides by the window clipped to the padded input. */
                    int32_t he = t.h0 + a->kernel[0], we = t.w0 + a->kernel[1];
                    int32_t count = (t.ky1 - t.ky0) * (t.kx1 - t.kx0), div;
                    const float *xf = (const float *)(const void *)xc;
                    float acc = 0.0f;
                    int32_t ky, kx;
                    he = he < xd[2] + a->pads[2] ? he : xd[2] + a->pads[2];
                    we = we < xd[3] + a->pads[3] ? we : xd[3] + a->pads[3];
                    for (ky = t.ky0; ky < t.ky1; ++ky) {
                        for (kx = t.kx0; kx < t.kx1; ++kx) {
                            acc += xf[(size_t)(t.h0 + ky) * (size_t)xd[3] + (size_t)(t.w0 + kx)];
                        }
                    }
                    div = a->count_include_pad ? (he - t.h0) * (we - t.w0) : count;
                    ((float *)(void *)y)[o] = div > 0 ? acc / (float)div : 0.0f;
                }
            }
        }
    }
    return ARENA_OK;
}

/* GlobalAveragePool (float32), GlobalMaxPool (float32, int8, uint8). For Helium cores GCC 12's
 * late if-conversion at -Os puts a VCVT under an IT condition, which binutils 2.40 then reads as
 * MVE's VCVTN with a predicate suffix and refuses ("vcvtne.f32.s32"): off for this function. */
#if defined(__ARM_FEATURE_MVE) && defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("no-if-conversion2")))
#endif
int arena_k_global_pool(const arena_ctx_t *c)
{
    const arena_tensor_t *xt = arena_in(c, 0), *yt = arena_out(c, 0);
    const void *x = arena_in_data(c, 0);
    void *y = arena_out_data(c, 0);
    int is_max = c->op->type == ARENA_OP_GLOBAL_MAX_POOL;
    uint32_t nc, i, n_nc, spatial;
    if (!is_max && c->op->type != ARENA_OP_GLOBAL_AVERAGE_POOL) {
        return ARENA_ERR_UNSUPPORTED;
    }
    if (xt == NULL || yt == NULL || xt->rank < 2 || !arena_shape_ok(xt) || !arena_shape_ok(yt)) {
        return ARENA_ERR_SHAPE;
    }
    if (xt->dtype != yt->dtype || (xt->dtype != ARENA_DT_FLOAT32 && !(is_max && arena_dtype_size(xt->dtype) == 1))) {
        return ARENA_ERR_UNSUPPORTED;
    }
    n_nc = arena_dims_product(xt, 0, 2);
    spatial = arena_dims_product(xt, 2, xt->rank);
    if (yt->elements != n_nc || spatial == 0u) {
        return ARENA_ERR_SHAPE;
    }
    for (nc = 0; nc < n_nc; ++nc) {
        size_t b = (size_t)nc * spatial;
        if (xt->dtype == ARENA_DT_FLOAT32) {
            const float *xc = (const float *)x + b;
            float mx = -FLT_BIG;
            fsum_t s = {0.0f, 0.0f};
            for (i = 0; i < spatial; ++i) {
                mx = xc[i] > mx ? xc[i] : mx;
                fsum_add(&s, xc[i]);
            }
            ((float *)y)[nc] = is_max ? mx : (s.sum + s.comp) / (float)spatial;
        } else {
            int is_s8 = xt->dtype == ARENA_DT_INT8;
            int32_t mx = is_s8 ? -128 : 0;
            for (i = 0; i < spatial; ++i) {
                int32_t v = is_s8 ? ((const int8_t *)x)[b + i] : ((const uint8_t *)x)[b + i];
                mx = v > mx ? v : mx;
            }
            ((uint8_t *)y)[nc] = (uint8_t)mx;
        }
    }
    return ARENA_OK;
}
