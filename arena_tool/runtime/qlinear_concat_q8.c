/* QLinearConcat, int8/uint8. No workspace. */
#include <string.h>

#include "support_q8.h"

/* --- QLinearConcat ------------------------------------------------------------------ */

/* Inputs: Y_scale, Y_zp, then (X, X_scale, X_zp) per input; a trailing absent X_zp may be cut. */
static int concat_inputs(const arena_ctx_t *c)
{
    int n = (int)c->op->n_inputs - 2;
    return n >= 2 && n % 3 != 1 ? (n + 2) / 3 : 0;
}

/* Input X's dims equal Y's except along the axis. */
static int concat_fits(const arena_tensor_t *x, const arena_tensor_t *y, int32_t axis)
{
    int d;
    if (x->rank != y->rank) {
        return 0;
    }
    for (d = 0; d < (int)y->rank; ++d) {
        if (d != axis && x->shape[d] != y->shape[d]) {
            return 0;
        }
    }
    return 1;
}

/* Each input is copied where its codes are already the output's (same dtype, scale and
 * zero point, no narrowed range), else requantized through a table (onnxruntime's
 * QLinearConcat does the same). */
int arena_k_qlinear_concat(const arena_ctx_t *c)
{
    int32_t axis = c->op->attrs->axis, along = 0;
    int n = concat_inputs(c), i, rc;
    qout_t y;
    uint32_t outer, inner, y_row, offset = 0, o;
    rc = qout(c, 0, &y);
    if (rc != ARENA_OK) {
        return rc;
    }
    if (n == 0 || axis < 0 || axis >= (int32_t)y.t->rank) {
        return ARENA_ERR_SHAPE;
    }
    for (i = 0; i < n; ++i) {
        qin_t x;
        rc = qin(c, 2 + 3 * i, &x);
        if (rc != ARENA_OK) {
            return rc;
        }
        if (!concat_fits(x.t, y.t, axis)) {
            return ARENA_ERR_SHAPE;
        }
        along += x.t->shape[axis];
    }
    if (along != y.t->shape[axis]) {
        return ARENA_ERR_SHAPE;
    }
    outer = arena_dims_product(y.t, 0, axis);
    inner = arena_dims_product(y.t, axis + 1, y.t->rank);
    y_row = (uint32_t)y.t->shape[axis] * inner;
    for (i = 0; i < n; ++i) {
        qin_t x;
        uint8_t table[256];
        uint32_t chunk;
        int copy;
        if (qin(c, 2 + 3 * i, &x) != ARENA_OK) {
            return ARENA_ERR_SHAPE; /* unreachable: checked above */
        }
        chunk = (uint32_t)x.t->shape[axis] * inner;
        copy = x.t->dtype == y.t->dtype && x.scale == y.scale && x.zp == y.zp
               && y.lo == (y.t->dtype == ARENA_DT_INT8 ? -128 : 0) && y.hi == (y.t->dtype == ARENA_DT_INT8 ? 127 : 255);
        if (!copy) {
            build_table(table, &x, &y, fn_identity, 0.0f);
        }
        for (o = 0; o < outer; ++o) {
            const uint8_t *src = (const uint8_t *)x.data + (size_t)o * chunk;
            uint8_t *dst = (uint8_t *)y.data + (size_t)o * y_row + offset;
            if (copy) {
                memcpy(dst, src, chunk);
            } else {
                apply_table(table, src, dst, chunk);
            }
        }
        offset += chunk;
    }
    return ARENA_OK;
}
