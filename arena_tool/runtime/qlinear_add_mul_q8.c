/* QLinearAdd, QLinearMul, int8/uint8, numpy broadcasting. In place allowed. No workspace. */
#include "support_q8.h"

/* --- QLinearAdd, QLinearMul ---------------------------------------------------- */

/* Dim d of y's rank, right-aligned, of a tensor broadcast to rank `rank` (1 where it has none). */
static int32_t dim_at(const arena_tensor_t *t, int rank, int d)
{
    int td = d - (rank - (int)t->rank);
    return td < 0 ? 1 : t->shape[td];
}

/* y has the numpy broadcast shape of a and b; sa/sb: the inputs' element strides per
 * dim of y (0 where they broadcast). */
static int broadcast(const arena_tensor_t *a, const arena_tensor_t *b, const arena_tensor_t *y,
                     uint32_t sa[ARENA_MAX_RANK], uint32_t sb[ARENA_MAX_RANK])
{
    int r = (int)y->rank, d;
    uint32_t ka = 1u, kb = 1u;
    if (a->rank > y->rank || b->rank > y->rank) {
        return 0;
    }
    for (d = r - 1; d >= 0; --d) {
        int32_t ad = dim_at(a, r, d), bd = dim_at(b, r, d), yd = y->shape[d];
        if ((ad != yd && ad != 1) || (bd != yd && bd != 1) || (yd != ad && yd != bd)) {
            return 0;
        }
        sa[d] = ad == 1 ? 0u : ka;
        sb[d] = bd == 1 ? 0u : kb;
        ka *= (uint32_t)ad;
        kb *= (uint32_t)bd;
    }
    return 1;
}

/* How many elements of y each element of t stands for when t's dims (right-aligned) are y's
 * leading ones and 1 after them (1: t has y's shape), else 0. */
static uint32_t plane_of(const arena_tensor_t *t, const arena_tensor_t *y)
{
    int r = (int)y->rank, k = r, d;
    uint32_t plane = 1u;
    while (k > 0 && dim_at(t, r, k - 1) == 1) {
        --k;
        plane *= (uint32_t)y->shape[k];
    }
    for (d = 0; d < k; ++d) {
        if (dim_at(t, r, d) != y->shape[d]) {
            return 0u;
        }
    }
    return plane;
}

/* onnxruntime's MlasQLinearAdd / MlasQLinearMul: float requantization of the
 * zero-point-free codes (Mul: rint(rm * (u * v) + y_zp), the zero point added in float). */
int arena_k_qlinear_binary(const arena_ctx_t *c)
{
    qin_t a, b;
    qout_t y;
    uint32_t sa[ARENA_MAX_RANK], sb[ARENA_MAX_RANK], idx[ARENA_MAX_RANK];
    uint32_t i = 0, ia = 0, ib = 0, len, la, lb, k;
    float ra, rb, rm;
    int r, d, is_add = c->op->type == ARENA_OP_QLINEAR_ADD;
    int rc = is_add || c->op->type == ARENA_OP_QLINEAR_MUL ? qin(c, 0, &a) : ARENA_ERR_UNSUPPORTED;
    if (rc == ARENA_OK) {
        rc = qin(c, 3, &b);
    }
    if (rc == ARENA_OK) {
        rc = qout(c, 6, &y);
    }
    if (rc != ARENA_OK) {
        return rc;
    }
    if (!broadcast(a.t, b.t, y.t, sa, sb) || !alias_ok(&a, &y) || !alias_ok(&b, &y)) {
        return ARENA_ERR_SHAPE;
    }
    ra = a.scale / y.scale;
    rb = b.scale / y.scale;
    rm = a.scale * b.scale / y.scale;
    if (a.t->dtype == b.t->dtype && a.t->dtype == y.t->dtype) { /* int8 or uint8 (qin, qout checked) */
        /* a of y's shape and b the same or constant over y's trailing dims, or the other way round */
        uint32_t pb = same_shape(a.t, y.t) ? plane_of(b.t, y.t) : 0u, pa = same_shape(b.t, y.t) ? plane_of(a.t, y.t) : 0u;
        int u8 = y.t->dtype == ARENA_DT_UINT8;
        if (pb != 0u && arena_i8_binary((const int8_t *)a.data, (const int8_t *)b.data, (int8_t *)y.data, y.t->elements,
                                        pb, a.zp, b.zp, ra, rb, rm, is_add, y.zp, y.lo, y.hi, u8)) {
            return ARENA_OK;
        }
        if (pb == 0u && pa != 0u && arena_i8_binary((const int8_t *)b.data, (const int8_t *)a.data, (int8_t *)y.data,
                                                    y.t->elements, pa, b.zp, a.zp, rb, ra, rm, is_add, y.zp, y.lo, y.hi,
                                                    u8)) {
            return ARENA_OK;
        }
    }
    r = (int)y.t->rank;
    len = r > 0 ? (uint32_t)y.t->shape[r - 1] : 1u;
    la = r > 0 ? sa[r - 1] : 0u;
    lb = r > 0 ? sb[r - 1] : 0u;
    for (d = 0; d < r; ++d) {
        idx[d] = 0u;
    }
    while (i < y.t->elements) {
        /* One run along the last dim, then advance the outer multi-index. */
        for (k = 0; k < len; ++k, ++i) {
            int32_t u = code(&a, ia + k * la) - a.zp, v = code(&b, ib + k * lb) - b.zp;
            if (is_add) {
                put(&y, i, ra * (float)u + rb * (float)v);
            } else { /* MlasQLinearMul adds the zero point before rounding */
                arena_q_put(y.data, i, arena_q_round(rm * (float)(u * v) + (float)y.zp, 0, y.lo, y.hi));
            }
        }
        for (d = r - 2; d >= 0; --d) {
            ia += sa[d];
            ib += sb[d];
            if (++idx[d] < (uint32_t)y.t->shape[d]) {
                break;
            }
            ia -= sa[d] * idx[d];
            ib -= sb[d] * idx[d];
            idx[d] = 0u;
        }
    }
    return ARENA_OK;
}
