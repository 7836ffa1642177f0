/* Resize, Upsample (nearest: any element type; linear: float32). Not in place. No workspace. */
#include <string.h>

#include "support_layout.h"

enum { RESIZE_NEAREST = 0, RESIZE_LINEAR = 1 };
enum { CT_HALF_PIXEL = 0, CT_ASYMMETRIC, CT_ALIGN_CORNERS, CT_PYTORCH_HALF_PIXEL, CT_TF_HALF_PIXEL_FOR_NN,
       CT_HALF_PIXEL_SYMMETRIC, CT_COUNT };
/* NN_SIMPLE: Resize-10's rounding (no nearest_mode yet): ceil when downsampling, else floor. */
enum { NN_ROUND_PREFER_FLOOR = 0, NN_ROUND_PREFER_CEIL, NN_FLOOR, NN_CEIL, NN_SIMPLE, NN_COUNT };

/* Output coordinate o of a dim -> input coordinate, in onnxruntime's float
 * arithmetic (half_pixel_symmetric in double, as it computes it). */
static float resize_coord(int mode, int32_t o, float scale, int32_t out_len, int32_t in_len)
{
    float x = (float)o, lo = (float)out_len, li = (float)in_len;
    switch (mode) {
    case CT_ASYMMETRIC: return x / scale;
    case CT_ALIGN_CORNERS: return out_len == 1 ? 0.0f : x * (li - 1.0f) / (lo - 1.0f);
    case CT_PYTORCH_HALF_PIXEL: return lo > 1.0f ? (x + 0.5f) / scale - 0.5f : 0.0f;
    case CT_TF_HALF_PIXEL_FOR_NN: return (x + 0.5f) / scale;
    case CT_HALF_PIXEL_SYMMETRIC: {
        float adjustment = lo / (scale * li);
        float offset = li / 2.0f * (1.0f - adjustment);
        return (float)((double)offset + ((double)x + 0.5) / (double)scale - 0.5);
    }
    default: return (x + 0.5f) / scale - 0.5f; /* half_pixel */
    }
}

/* Nearest input index of coordinate v, clamped to [0, len) as onnxruntime clamps. */
static int32_t resize_nearest(int mode, float v, int32_t len)
{
    int32_t t;
    float frac;
    if (!(v > 0.0f)) {
        return 0; /* every rounding of a coordinate <= 0 clamps to 0 (and NaN) */
    }
    if (v >= (float)len) {
        return len - 1;
    }
    t = (int32_t)v; /* floor: 0 < v < len */
    frac = v - (float)t;
    switch (mode) {
    case NN_ROUND_PREFER_FLOOR: t += frac > 0.5f; break;
    case NN_ROUND_PREFER_CEIL: t += frac >= 0.5f; break;
    case NN_CEIL: t += frac > 0.0f; break;
    default: break; /* floor */
    }
    return t < len ? t : len - 1;
}

/* Linear: the two input indices around coordinate v and their weights, as
 * onnxruntime's bilinear setup (clamped into the input; both weights 0.5 when
 * the two indices coincide). w1 weighs i1 and w2 weighs i2. */
static void resize_linear(float v, int32_t len, int32_t *i1, int32_t *i2, float *w1, float *w2)
{
    float top = (float)(len - 1);
    v = v < 0.0f ? 0.0f : (v > top ? top : v);
    *i1 = (int32_t)v;
    *i1 = *i1 < len - 1 ? *i1 : len - 1;
    *i2 = *i1 + 1 < len - 1 ? *i1 + 1 : len - 1;
    if (*i1 == *i2) {
        *w1 = *w2 = 0.5f;
        return;
    }
    /* onnxruntime's dx1 = |v - i1| weighs the second index, dx2 = |v - i2| the first. */
    *w2 = v - (float)*i1;
    *w1 = (float)*i2 - v;
}

/* ints: mode, coordinate transform, nearest mode; floats: scale per dim; the
 * output shape is the output tensor's. */
int arena_k_resize(const arena_ctx_t *c)
{
    const arena_attrs_t *a = c->op->attrs;
    const arena_tensor_t *xt, *yt;
    const uint8_t *x = (const uint8_t *)arena_in_data(c, 0);
    uint8_t *y = (uint8_t *)arena_out_data(c, 0);
    int32_t xs[ARENA_MAX_RANK], src[ARENA_MAX_RANK], i2[ARENA_MAX_RANK];
    float w1[ARENA_MAX_RANK], w2[ARENA_MAX_RANK];
    int lin[ARENA_MAX_RANK]; /* linear: the interpolated dims, innermost first */
    int mode, coord, nearest, n_lin = 0, r, d, changed;
    walk_t w;
    int rc;
    size_t es = check_io(c, &xt, &yt, &rc), pos = 0;
    if (es == 0) {
        return rc;
    }
    r = (int)xt->rank;
    if (a->n_ints != 3 || a->ints == NULL || a->n_floats != r || a->floats == NULL || r == 0 || yt->rank != xt->rank) {
        return ARENA_ERR_SHAPE;
    }
    mode = a->ints[0];
    coord = a->ints[1];
    nearest = a->ints[2];
    if ((mode != RESIZE_NEAREST && mode != RESIZE_LINEAR) || coord < 0 || coord >= CT_COUNT) {
        return ARENA_ERR_UNSUPPORTED; /* cubic, tf_crop_and_resize */
    }
    if (mode == RESIZE_NEAREST && (nearest < 0 || nearest >= NN_COUNT)) {
        return ARENA_ERR_UNSUPPORTED;
    }
    if (mode == RESIZE_LINEAR && xt->dtype != ARENA_DT_FLOAT32) {
        return ARENA_ERR_UNSUPPORTED;
    }
    for (d = 0; d < r; ++d) {
        float s = a->floats[d];
        if (!(s > 0.0f && s < 3.0e38f) || (xt->shape[d] == 0) != (yt->shape[d] == 0) ||
            (s == 1.0f && xt->shape[d] != yt->shape[d])) {
            return ARENA_ERR_SHAPE;
        }
    }
    if (yt->elements == 0u) {
        return ARENA_OK;
    }
    strides_of(xt, xs);
    for (d = r - 1; d >= 0; --d) {
        if (a->floats[d] != 1.0f) {
            lin[n_lin++] = d;
        }
    }
    walk_init(&w, r, 0);
    for (d = 0; d < r; ++d) {
        w.dims[d] = yt->shape[d];
    }
    changed = 0;
    do {
        int32_t base = 0;
        /* Recompute the source of every dim from the outermost one that moved
         * (onnxruntime maps a dim of scale 1 one to one, without the transform). */
        for (d = changed; d < r; ++d) {
            float v;
            if (a->floats[d] == 1.0f) {
                src[d] = w.idx[d];
                continue;
            }
            v = resize_coord(coord, w.idx[d], a->floats[d], yt->shape[d], xt->shape[d]);
            if (mode == RESIZE_NEAREST) {
                int rounding = nearest != NN_SIMPLE ? nearest : (a->floats[d] < 1.0f ? NN_CEIL : NN_FLOOR);
                src[d] = resize_nearest(rounding, v, xt->shape[d]);
            } else {
                resize_linear(v, xt->shape[d], &src[d], &i2[d], &w1[d], &w2[d]);
            }
        }
        for (d = 0; d < r; ++d) {
            base += src[d] * xs[d];
        }
        if (mode == RESIZE_NEAREST) {
            copy_elem(y + pos, x + (size_t)base * es, es);
        } else {
            /* Every corner of the interpolated dims, innermost dim as bit 0, weights
             * multiplied innermost first: onnxruntime's terms, in its order. */
            const float *xf = (const float *)(const void *)x;
            float acc = 0.0f;
            uint32_t corner;
            for (corner = 0; corner < (1u << n_lin); ++corner) {
                int32_t off = base;
                float wt = 1.0f;
                int j;
                for (j = 0; j < n_lin; ++j) {
                    int dd = lin[j];
                    int far = (corner >> j) & 1u;
                    wt *= far ? w2[dd] : w1[dd];
                    off += far ? (i2[dd] - src[dd]) * xs[dd] : 0;
                }
                acc += wt * xf[off];
            }
            memcpy(y + pos, &acc, 4);
        }
        pos += es;
        changed = walk_next(&w);
    } while (changed >= 0);
    return ARENA_OK;
}
