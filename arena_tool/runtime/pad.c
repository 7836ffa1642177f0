/* Pad. Not in place. No workspace. */
#include <string.h>

#include "support_layout.h"

enum { PAD_CONSTANT = 0, PAD_REFLECT = 1, PAD_EDGE = 2 };

/* One dim of a Pad. Negative pads crop first and the kept input range
 * [lo, hi) is then padded, as onnxruntime does (reflect/edge read inside it). */
typedef struct {
    int32_t begin, lo, hi;
} pad_dim_t;

/* The input index output index o reads, or -1 for the constant. */
static int32_t pad_source(const pad_dim_t *p, int mode, int32_t o)
{
    int32_t i = o - p->begin;
    if (i >= p->lo && i < p->hi) {
        return i;
    }
    if (mode == PAD_CONSTANT) {
        return -1;
    }
    if (mode == PAD_EDGE) {
        return i < p->lo ? p->lo : p->hi - 1;
    }
    return i < p->lo ? 2 * p->lo - i : 2 * (p->hi - 1) - i; /* reflect, edge not repeated */
}

/* The pad value as one element of the tensor's type (integer types: already
 * quantized; clamped so an out-of-range value cannot overflow the conversion). */
static void pad_fill(float v, uint8_t dtype, uint8_t out[8])
{
    float lo = -2147483648.0f, hi = 2147483520.0f; /* int32 range as floats */
    if (v != v) {
        v = 0.0f;
    }
    switch (dtype) {
    case ARENA_DT_FLOAT32: memcpy(out, &v, 4); return;
    case ARENA_DT_INT8: lo = -128.0f; hi = 127.0f; break;
    case ARENA_DT_UINT8: lo = 0.0f; hi = 255.0f; break;
    case ARENA_DT_INT64: lo = -9.2233720e18f; hi = 9.2233715e18f; break;
    default: break;
    }
    v = v < lo ? lo : (v > hi ? hi : v);
    switch (dtype) {
    case ARENA_DT_INT8: { int8_t q = (int8_t)v; memcpy(out, &q, 1); break; }
    case ARENA_DT_UINT8: { uint8_t q = (uint8_t)v; memcpy(out, &q, 1); break; }
    case ARENA_DT_INT32: { int32_t q = (int32_t)v; memcpy(out, &q, 4); break; }
    default: { int64_t q = (int64_t)v; memcpy(out, &q, 8); break; }
    }
}

/* ints: begin[rank], end[rank]; axis: mode; value: the constant. */
int arena_k_pad(const arena_ctx_t *c)
{
    const arena_attrs_t *a = c->op->attrs;
    const arena_tensor_t *xt, *yt;
    const uint8_t *x = (const uint8_t *)arena_in_data(c, 0);
    uint8_t *y = (uint8_t *)arena_out_data(c, 0);
    pad_dim_t pd[ARENA_MAX_RANK];
    int32_t xs[ARENA_MAX_RANK];
    uint8_t fill[8];
    int32_t row, o, inner0, inner1, kept;
    int mode = a->axis;
    walk_t w;
    int rc, d, r;
    size_t es = check_io(c, &xt, &yt, &rc), pos = 0;
    if (es == 0) {
        return rc;
    }
    r = (int)xt->rank;
    if (mode != PAD_CONSTANT && mode != PAD_REFLECT && mode != PAD_EDGE) {
        return ARENA_ERR_UNSUPPORTED; /* wrap, or a mode codegen did not know */
    }
    if (r == 0 || yt->rank != xt->rank || a->n_ints != 2 * r || a->ints == NULL) {
        return ARENA_ERR_SHAPE;
    }
    for (d = 0; d < r; ++d) {
        int32_t b = a->ints[d], e = a->ints[r + d], n = xt->shape[d];
        pd[d].begin = b;
        pd[d].lo = b < 0 ? -b : 0;
        pd[d].hi = e < 0 ? n + e : n;
        if ((int64_t)n + b + e != yt->shape[d] || pd[d].lo > pd[d].hi) {
            return ARENA_ERR_SHAPE;
        }
        kept = pd[d].hi - pd[d].lo;
        if (mode != PAD_CONSTANT && yt->shape[d] > 0 &&
            (kept == 0 || (mode == PAD_REFLECT && (b > kept - 1 || e > kept - 1)))) {
            return ARENA_ERR_SHAPE; /* nothing to copy from, or reflect pads past the (cropped) input */
        }
    }
    if (yt->elements == 0u) {
        return ARENA_OK;
    }
    pad_fill(a->value, xt->dtype, fill);
    strides_of(xt, xs);
    /* The last dim in three runs: padding, a contiguous copy of the input, padding. */
    row = yt->shape[r - 1];
    inner0 = pd[r - 1].begin + pd[r - 1].lo;
    inner1 = pd[r - 1].begin + pd[r - 1].hi;
    inner0 = inner0 < 0 ? 0 : (inner0 > row ? row : inner0);
    inner1 = inner1 < inner0 ? inner0 : (inner1 > row ? row : inner1);
    walk_init(&w, r - 1, 0);
    for (d = 0; d < r - 1; ++d) {
        w.dims[d] = yt->shape[d];
    }
    do {
        int32_t src = 0;
        int is_fill = 0;
        for (d = 0; d < r - 1; ++d) {
            int32_t i = pad_source(&pd[d], mode, w.idx[d]);
            is_fill |= i < 0;
            src += i * xs[d];
        }
        for (o = 0; o < row; ++o) {
            int32_t i;
            if (!is_fill && o == inner0 && inner1 > inner0) {
                memcpy(y + pos, x + (size_t)(src + inner0 - pd[r - 1].begin) * es, (size_t)(inner1 - inner0) * es);
                pos += (size_t)(inner1 - inner0) * es;
                o = inner1 - 1;
                continue;
            }
            i = is_fill ? -1 : pad_source(&pd[r - 1], mode, o);
            copy_elem(y + pos, i < 0 ? fill : x + (size_t)(src + i) * es, es);
            pos += es;
        }
    } while (walk_next(&w) >= 0);
    return ARENA_OK;
}
