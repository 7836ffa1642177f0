/* Internal to the layout kernels (transpose.c, slice.c, pad.c, patch_write.c, split.c, resize.c):
 * their shared helpers, static inline.
 *
 * Layout ops: Transpose, Pad, Slice, Split, Resize (any element type; linear
 * interpolation float32 only) and ReduceMean (float32).
 *
 * They only move elements, so they work on bytes by element size. One N-D
 * walker (walk_t) drives all of them: it counts an index through a shape in
 * row-major order and keeps a linear offset in step with it. None of these ops
 * runs in place (the planner never aliases them), so an output that overlaps
 * its input is refused rather than computed into garbage.
 */
#ifndef ARENA_SUPPORT_LAYOUT_H
#define ARENA_SUPPORT_LAYOUT_H

#include <string.h>

#include "arena_kernels.h"

/* An index counting through dims[0..rank) (last dim fastest) and the offset
 * sum(idx[d] * stride[d]) kept in step with it. */
typedef struct {
    int rank;
    int32_t dims[ARENA_MAX_RANK];
    int32_t idx[ARENA_MAX_RANK];
    int32_t stride[ARENA_MAX_RANK];
    int32_t offset;
} walk_t;

static inline void walk_init(walk_t *w, int rank, int32_t offset)
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
static inline int walk_next(walk_t *w)
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
static inline void strides_of(const arena_tensor_t *t, int32_t s[ARENA_MAX_RANK])
{
    int d;
    int32_t acc = 1;
    for (d = (int)t->rank - 1; d >= 0; --d) {
        s[d] = acc;
        acc *= t->shape[d];
    }
}


/* Byte ranges of two tensors overlap (the op would read what it already wrote). */
static inline int overlap(const void *a, const arena_tensor_t *ta, const void *b, const arena_tensor_t *tb)
{
    uintptr_t pa = (uintptr_t)a, pb = (uintptr_t)b;
    uintptr_t na = (uintptr_t)ta->elements * arena_dtype_size(ta->dtype);
    uintptr_t nb = (uintptr_t)tb->elements * arena_dtype_size(tb->dtype);
    return na > 0u && nb > 0u && pa < pb + nb && pb < pa + na;
}

/* Input 0 and output 0 of a data-movement op: present, consistent, same known
 * element type, not overlapping. Returns the element size, 0 on error (*rc). */
static inline size_t check_io(const arena_ctx_t *c, const arena_tensor_t **x, const arena_tensor_t **y, int *rc)
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
static inline void copy_elem(uint8_t *dst, const uint8_t *src, size_t es)
{
    switch (es) {
    case 1: *dst = *src; break;
    case 4: memcpy(dst, src, 4); break;
    default: memcpy(dst, src, 8); break;
    }
}

/* n elements to contiguous dst from src read every `step` elements (may be negative). */
static inline void copy_row(uint8_t *dst, const uint8_t *src, int32_t n, int32_t step, size_t es)
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
static inline void copy_rows(uint8_t *y, const uint8_t *x, const arena_tensor_t *yt, walk_t *w, int32_t step, size_t es)
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

#endif
