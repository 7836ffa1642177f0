/* Layout ops: Transpose, Pad, Slice, Split, Resize (any element type; linear
 * interpolation float32 only) and ReduceMean (float32).
 *
 * They only move elements, so they work on bytes by element size. One N-D
 * walker (walk_t) drives all of them: it counts an index through a shape in
 * row-major order and keeps a linear offset in step with it. None of these ops
 * runs in place (the planner never aliases them), so an output that overlaps
 * its input is refused rather than computed into garbage.
 */
#include <string.h>

#include "arena_kernels.h"

/* --- shared helpers ----------------------------------------------------- */

/* An index counting through dims[0..rank) (last dim fastest) and the offset
 * sum(idx[d] * stride[d]) kept in step with it. */
typedef struct {
    int rank;
    int32_t dims[ARENA_MAX_RANK];
    int32_t idx[ARENA_MAX_RANK];
    int32_t stride[ARENA_MAX_RANK];
    int32_t offset;
} walk_t;

static void walk_init(walk_t *w, int rank, int32_t offset)
{
    int d;
    w->rank = rank;
    w->offset = offset;
    for (d = 0; d < ARENA_MAX_RANK; ++d) {
        w->dims[d] = 1;
        w->idx[d] = 0;
        w->stride[d] = 0;
    }
}

/* Step to the next index. Returns the outermost dim that changed (every dim
 * after it went back to 0), or -1 once the walk is over. */
static int walk_next(walk_t *w)
{
    int d;
    for (d = w->rank - 1; d >= 0; --d) {
        w->offset += w->stride[d];
        if (++w->idx[d] < w->dims[d]) {
            return d;
        }
        w->offset -= w->stride[d] * w->dims[d];
        w->idx[d] = 0;
    }
    return -1;
}

/* Row-major element strides of t. */
static void strides_of(const arena_tensor_t *t, int32_t s[ARENA_MAX_RANK])
{
    int d;
    int32_t acc = 1;
    for (d = (int)t->rank - 1; d >= 0; --d) {
        s[d] = acc;
        acc *= t->shape[d];
    }
}


/* Byte ranges of two tensors overlap (the op would read what it already wrote). */
static int overlap(const void *a, const arena_tensor_t *ta, const void *b, const arena_tensor_t *tb)
{
    uintptr_t pa = (uintptr_t)a, pb = (uintptr_t)b;
    uintptr_t na = (uintptr_t)ta->elements * arena_dtype_size(ta->dtype);
    uintptr_t nb = (uintptr_t)tb->elements * arena_dtype_size(tb->dtype);
    return na > 0u && nb > 0u && pa < pb + nb && pb < pa + na;
}

/* Input 0 and output 0 of a data-movement op: present, consistent, same known
 * element type, not overlapping. Returns the element size, 0 on error (*rc). */
static size_t check_io(const arena_ctx_t *c, const arena_tensor_t **x, const arena_tensor_t **y, int *rc)
{
    size_t es;
    *x = arena_in(c, 0);
    *y = arena_out(c, 0);
    *rc = ARENA_ERR_SHAPE;
    if (*x == NULL || *y == NULL || !arena_shape_ok(*x) || !arena_shape_ok(*y)) {
        return 0;
    }
    es = arena_dtype_size((*x)->dtype);
    if (es == 0 || (*x)->dtype != (*y)->dtype) {
        *rc = ARENA_ERR_UNSUPPORTED;
        return 0;
    }
    if (overlap(arena_in_data(c, 0), *x, arena_out_data(c, 0), *y)) {
        return 0;
    }
    return es;
}

/* Copy one element of es bytes (constant sizes let the compiler inline it). */
static void copy_elem(uint8_t *dst, const uint8_t *src, size_t es)
{
    switch (es) {
    case 1: *dst = *src; break;
    case 4: memcpy(dst, src, 4); break;
    default: memcpy(dst, src, 8); break;
    }
}

/* n elements to contiguous dst from src read every `step` elements (may be negative). */
static void copy_row(uint8_t *dst, const uint8_t *src, int32_t n, int32_t step, size_t es)
{
    int32_t i;
    if (step == 1) {
        memcpy(dst, src, (size_t)n * es);
        return;
    }
    for (i = 0; i < n; ++i) {
        copy_elem(dst + (size_t)i * es, src + (ptrdiff_t)i * step * (ptrdiff_t)es, es);
    }
}

/* The output row by row: walk the outer dims of y, read each row from x at
 * w.offset (set up by the caller) with `step` elements between reads. */
static void copy_rows(uint8_t *y, const uint8_t *x, const arena_tensor_t *yt, walk_t *w, int32_t step, size_t es)
{
    int32_t row = yt->rank > 0 ? yt->shape[yt->rank - 1] : 1;
    size_t out = 0;
    if (yt->elements == 0u) {
        return;
    }
    do {
        copy_row(y + out, x + (ptrdiff_t)w->offset * (ptrdiff_t)es, row, step, es);
        out += (size_t)row * es;
    } while (walk_next(w) >= 0);
}

/* --- Transpose ------------------------------------------------------------ */

int arena_k_transpose(const arena_ctx_t *c)
{
    const arena_attrs_t *a = &c->op->attrs;
    const arena_tensor_t *xt, *yt;
    int32_t xs[ARENA_MAX_RANK];
    uint32_t seen = 0u;
    walk_t w;
    int rc, d, r;
    size_t es = check_io(c, &xt, &yt, &rc);
    if (es == 0) {
        return rc;
    }
    r = (int)xt->rank;
    if (yt->rank != xt->rank || a->n_ints != r || (r > 0 && a->ints == NULL)) {
        return ARENA_ERR_SHAPE;
    }
    strides_of(xt, xs);
    walk_init(&w, r > 0 ? r - 1 : 0, 0);
    for (d = 0; d < r; ++d) {
        int32_t p = a->ints[d];
        if (p < 0 || p >= r || (seen & (1u << p)) || yt->shape[d] != xt->shape[p]) {
            return ARENA_ERR_SHAPE; /* not a permutation, or the output's shape disagrees */
        }
        seen |= 1u << p;
        w.dims[d] = yt->shape[d];
        w.stride[d] = xs[p];
    }
    copy_rows((uint8_t *)arena_out_data(c, 0), (const uint8_t *)arena_in_data(c, 0), yt, &w,
              r > 0 ? xs[a->ints[r - 1]] : 1, es);
    return ARENA_OK;
}

/* --- Slice ---------------------------------------------------------------- */

/* ints: per input dim the first index read and the step; the output's shape gives the counts. */
int arena_k_slice(const arena_ctx_t *c)
{
    const arena_attrs_t *a = &c->op->attrs;
    const arena_tensor_t *xt, *yt;
    int32_t xs[ARENA_MAX_RANK];
    int32_t start = 0;
    walk_t w;
    int rc, d, r;
    size_t es = check_io(c, &xt, &yt, &rc);
    if (es == 0) {
        return rc;
    }
    r = (int)xt->rank;
    if (yt->rank != xt->rank || a->n_ints != 2 * r || (r > 0 && a->ints == NULL)) {
        return ARENA_ERR_SHAPE;
    }
    if (yt->elements == 0u) {
        return ARENA_OK;
    }
    strides_of(xt, xs);
    walk_init(&w, r > 0 ? r - 1 : 0, 0);
    for (d = 0; d < r; ++d) {
        int32_t first = a->ints[2 * d], step = a->ints[2 * d + 1];
        int64_t last = (int64_t)first + (int64_t)(yt->shape[d] - 1) * step;
        if (step == 0 || first < 0 || first >= xt->shape[d] || last < 0 || last >= xt->shape[d]) {
            return ARENA_ERR_SHAPE; /* the slice would read outside the input */
        }
        start += first * xs[d];
        w.dims[d] = yt->shape[d];
        w.stride[d] = step * xs[d];
    }
    w.offset = start;
    copy_rows((uint8_t *)arena_out_data(c, 0), (const uint8_t *)arena_in_data(c, 0), yt, &w,
              r > 0 ? a->ints[2 * r - 1] : 1, es);
    return ARENA_OK;
}

/* --- Pad ------------------------------------------------------------------ */

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
    const arena_attrs_t *a = &c->op->attrs;
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

/* --- PatchWrite (patch-based inference) -------------------------------------- */

/* ints: per dim the first index of the box that input 0 (one tile of a patched stage) fills in
 * output 0, the whole stage output. Input 1, when present, is the stage output so far: the
 * planner puts it at the output's address (in place); elsewhere it is copied first. */
int arena_k_patch_write(const arena_ctx_t *c)
{
    const arena_attrs_t *a = &c->op->attrs;
    const arena_tensor_t *xt, *yt, *pt;
    int32_t ys[ARENA_MAX_RANK];
    int32_t start = 0;
    walk_t w;
    int rc, d, r;
    size_t es = check_io(c, &xt, &yt, &rc), out = 0;
    const uint8_t *x;
    uint8_t *y;
    if (es == 0) {
        return rc;
    }
    r = (int)xt->rank;
    if (yt->rank != xt->rank || r < 1 || a->n_ints != r || a->ints == NULL) {
        return ARENA_ERR_SHAPE;
    }
    y = (uint8_t *)arena_out_data(c, 0);
    pt = arena_in(c, 1);
    if (pt != NULL) {
        if (pt->dtype != yt->dtype || pt->elements != yt->elements) {
            return ARENA_ERR_SHAPE;
        }
        if (arena_in_data(c, 1) != (void *)y) {
            memmove(y, arena_in_data(c, 1), (size_t)yt->elements * es);
        }
    }
    strides_of(yt, ys);
    walk_init(&w, r - 1, 0);
    for (d = 0; d < r; ++d) {
        int32_t first = a->ints[d];
        if (first < 0 || first + xt->shape[d] > yt->shape[d]) {
            return ARENA_ERR_SHAPE; /* the tile would fall outside the whole tensor */
        }
        start += first * ys[d];
        w.dims[d] = xt->shape[d];
        w.stride[d] = ys[d];
    }
    w.offset = start;
    if (xt->elements == 0u) {
        return ARENA_OK;
    }
    x = (const uint8_t *)arena_in_data(c, 0);
    do { /* one row of the tile to its place in the row of the whole */
        memcpy(y + (size_t)w.offset * es, x + out, (size_t)xt->shape[r - 1] * es);
        out += (size_t)xt->shape[r - 1] * es;
    } while (walk_next(&w) >= 0);
    return ARENA_OK;
}

/* --- Split ---------------------------------------------------------------- */

/* axis; each output's extent along it is its own shape's. */
int arena_k_split(const arena_ctx_t *c)
{
    const arena_tensor_t *xt = arena_in(c, 0);
    const uint8_t *x = (const uint8_t *)arena_in_data(c, 0);
    int axis = c->op->attrs.axis;
    uint32_t outer, inner, o;
    int32_t total = 0;
    size_t es, pos = 0;
    int k, d;
    if (xt == NULL || !arena_shape_ok(xt) || axis < 0 || axis >= (int)xt->rank || c->op->n_outputs == 0) {
        return ARENA_ERR_SHAPE;
    }
    es = arena_dtype_size(xt->dtype);
    if (es == 0) {
        return ARENA_ERR_UNSUPPORTED;
    }
    for (k = 0; k < (int)c->op->n_outputs; ++k) {
        const arena_tensor_t *yt = arena_out(c, k);
        if (yt == NULL || !arena_shape_ok(yt) || yt->rank != xt->rank) {
            return ARENA_ERR_SHAPE;
        }
        if (yt->dtype != xt->dtype) {
            return ARENA_ERR_UNSUPPORTED;
        }
        for (d = 0; d < (int)xt->rank; ++d) {
            if (d != axis && yt->shape[d] != xt->shape[d]) {
                return ARENA_ERR_SHAPE;
            }
        }
        if (overlap(x, xt, arena_out_data(c, k), yt)) {
            return ARENA_ERR_SHAPE;
        }
        total += yt->shape[axis];
    }
    if (total != xt->shape[axis]) {
        return ARENA_ERR_SHAPE; /* the outputs do not tile the input */
    }
    outer = arena_dims_product(xt, 0, axis);
    inner = arena_dims_product(xt, axis + 1, xt->rank);
    for (o = 0; o < outer; ++o) {
        for (k = 0; k < (int)c->op->n_outputs; ++k) {
            const arena_tensor_t *yt = arena_out(c, k);
            size_t chunk = (size_t)yt->shape[axis] * inner * es;
            memcpy((uint8_t *)arena_out_data(c, k) + (size_t)o * chunk, x + pos, chunk);
            pos += chunk;
        }
    }
    return ARENA_OK;
}

/* --- Resize --------------------------------------------------------------- */

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
    const arena_attrs_t *a = &c->op->attrs;
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

/* --- ReduceMean ----------------------------------------------------------- */

static float abs_f(float v)
{
    return v < 0.0f ? -v : v;
}

/* ints: 1 where input dim d is reduced. The output keeps those dims as 1 or drops them. */
int arena_k_reduce_mean(const arena_ctx_t *c)
{
    const arena_attrs_t *a = &c->op->attrs;
    const arena_tensor_t *xt, *yt;
    const float *x = (const float *)arena_in_data(c, 0);
    float *y = (float *)arena_out_data(c, 0);
    int32_t xs[ARENA_MAX_RANK];
    walk_t outer, inner;
    uint32_t count = 1u, kept = 1u;
    int rc, d, r, ko = 0;
    size_t es = check_io(c, &xt, &yt, &rc), pos = 0;
    if (es == 0) {
        return rc;
    }
    if (xt->dtype != ARENA_DT_FLOAT32) {
        return ARENA_ERR_UNSUPPORTED;
    }
    r = (int)xt->rank;
    if (a->n_ints != r || (r > 0 && a->ints == NULL)) {
        return ARENA_ERR_SHAPE;
    }
    strides_of(xt, xs);
    walk_init(&outer, 0, 0);
    walk_init(&inner, 0, 0);
    for (d = 0; d < r; ++d) {
        int red = a->ints[d];
        walk_t *wk = red ? &inner : &outer;
        if (red != 0 && red != 1) {
            return ARENA_ERR_SHAPE;
        }
        if (red) {
            count *= (uint32_t)xt->shape[d];
        } else {
            kept *= (uint32_t)xt->shape[d];
        }
        wk->dims[wk->rank] = xt->shape[d];
        wk->stride[wk->rank] = xs[d];
        ++wk->rank;
    }
    /* keepdims: the same rank with 1 for each reduced dim; else the kept dims alone. */
    if (yt->rank == xt->rank) {
        for (d = 0; d < r; ++d) {
            if (yt->shape[d] != (a->ints[d] ? 1 : xt->shape[d])) {
                return ARENA_ERR_SHAPE;
            }
        }
    } else if ((int)yt->rank == outer.rank) {
        for (d = 0; d < r; ++d) {
            if (!a->ints[d] && yt->shape[ko++] != xt->shape[d]) {
                return ARENA_ERR_SHAPE;
            }
        }
    } else {
        return ARENA_ERR_SHAPE;
    }
    if (yt->elements != kept) {
        return ARENA_ERR_SHAPE;
    }
    if (kept == 0u) {
        return ARENA_OK;
    }
    if (count == 0u) {
        return ARENA_ERR_SHAPE; /* the mean of nothing */
    }
    do {
        /* Neumaier-compensated sum: long reductions (a whole feature map) stay
         * as accurate as onnxruntime's vectorized one. */
        float sum = 0.0f, comp = 0.0f;
        inner.offset = outer.offset;
        do {
            float v = x[inner.offset], t = sum + v;
            comp += abs_f(sum) >= abs_f(v) ? (sum - t) + v : (v - t) + sum;
            sum = t;
        } while (walk_next(&inner) >= 0);
        y[pos++] = (sum + comp) / (float)count;
    } while (walk_next(&outer) >= 0);
    return ARENA_OK;
}
