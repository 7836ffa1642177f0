/* QLinearConcat, int8/uint8. No workspace. */
#include <string.h>

#include "support_q8.h"
#include "support_int8.h"

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

/* table[b] = the output code of input code b (byte b as x's dtype): build_table's identity,
 * round(x_scale (q - x_zp) / y_scale) + y_zp clamped, with the same float operations, rounded
 * inline (requant_f: one VCVTR with an FPU) instead of a call an entry. */
static void requant_table(uint8_t table[256], const qin_t *x, const qout_t *y)
{
    const qpar_t q = qpar(y->zp, y->lo, y->hi);
    const int32_t off = x->t->dtype == ARENA_DT_INT8 ? 256 : 0;
    int32_t b;
    if (!mult_ok(x->scale) || !mult_ok(y->scale) || y->scale == 0.0f) { /* a NaN could come: arena_q_round's way */
        build_table(table, x, y, fn_identity, 0.0f);
        return;
    }
    for (b = 0; b < 256; ++b) {
        int32_t v = b >= 128 ? b - off : b;
        table[b] = (uint8_t)requant_f(x->scale * (float)(v - x->zp) / y->scale, &q);
    }
}

/* y[i] = table[x[i]] for i < n, four a step. */
static void requant_bytes(const uint8_t table[256], const uint8_t *x, uint8_t *y, uint32_t n)
{
    uint32_t i = 0;
    for (; n - i >= 4u; i += 4u) {
        uint8_t a = table[x[i]], b = table[x[i + 1u]], c = table[x[i + 2u]], d = table[x[i + 3u]];
        y[i] = a;
        y[i + 1u] = b;
        y[i + 2u] = c;
        y[i + 3u] = d;
    }
    for (; i < n; ++i) {
        y[i] = table[x[i]];
    }
}

/* Each input is copied where its codes are already the output's (same dtype, scale and
 * zero point, no narrowed range), else requantized through a table (onnxruntime's
 * QLinearConcat does the same). An input the plan placed at its position of the output (a
 * concat view: liveness) is not copied, and requantized in place. */
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
            requant_table(table, &x, &y);
        }
        for (o = 0; o < outer; ++o) {
            const uint8_t *src = (const uint8_t *)x.data + (size_t)o * chunk;
            uint8_t *dst = (uint8_t *)y.data + (size_t)o * y_row + offset;
            if (copy) {
                if (dst != src) { /* an input the plan wrote in place (a concat view) is there */
                    memcpy(dst, src, chunk);
                }
            } else {
                requant_bytes(table, src, dst, chunk);
            }
        }
        offset += chunk;
    }
    return ARENA_OK;
}
