/* QuantizeLinear (float32 -> int8/uint8) and DequantizeLinear (int8/uint8/int32 -> float32),
 * per tensor or per axis. In place allowed. No workspace. */
#include "support_q8.h"

/* Which scale/zero-point entry element i of `x` uses (per-axis when the scale has more than one). */
static uint32_t axis_index(const arena_tensor_t *x, const arena_tensor_t *scale, int32_t axis, uint32_t i)
{
    uint32_t inner;
    if (scale->elements <= 1u) {
        return 0u;
    }
    inner = arena_dims_product(x, axis + 1, x->rank);
    return (i / inner) % (uint32_t)x->shape[axis];
}

/* Scale (and zero point) of `x`: float32, one entry or one per index of attrs.axis;
 * the zero point, when present, of dtype `zdtype` with as many entries as the scale. */
static int check_qparams(const arena_ctx_t *c, const arena_tensor_t *x, uint8_t zdtype)
{
    const arena_tensor_t *st = arena_in(c, 1), *zt = arena_in(c, 2);
    int32_t axis = c->op->attrs->axis;
    if (st == NULL || st->dtype != ARENA_DT_FLOAT32 || (zt != NULL && zt->dtype != zdtype)) {
        return ARENA_ERR_UNSUPPORTED;
    }
    if (st->elements > 1u && (axis < 0 || axis >= (int32_t)x->rank || st->elements != (uint32_t)x->shape[axis])) {
        return ARENA_ERR_SHAPE;
    }
    if (zt != NULL && zt->elements != st->elements) {
        return ARENA_ERR_SHAPE;
    }
    return ARENA_OK;
}

int arena_k_quantize(const arena_ctx_t *c)
{
    const arena_tensor_t *xt = arena_in(c, 0), *st = arena_in(c, 1), *yt = arena_out(c, 0);
    const float *x = (const float *)arena_in_data(c, 0);
    void *y = arena_out_data(c, 0);
    uint32_t i;
    int32_t lo, hi;
    int rc;
    if (xt == NULL || yt == NULL || xt->elements != yt->elements) {
        return ARENA_ERR_SHAPE;
    }
    if (xt->dtype != ARENA_DT_FLOAT32 || !is_q8(yt->dtype)) {
        return ARENA_ERR_UNSUPPORTED;
    }
    rc = check_qparams(c, xt, yt->dtype);
    if (rc != ARENA_OK) {
        return rc;
    }
    lo = yt->dtype == ARENA_DT_INT8 ? -128 : 0;
    hi = yt->dtype == ARENA_DT_INT8 ? 127 : 255;
    if (st->elements <= 1u) { /* per tensor: the parameters once */
        float scale = arena_q_scale(c, 1, 0);
        int32_t zp = arena_q_zp(c, 2, 0);
        arena_i8_quantize(x, y, yt->elements, scale, zp, lo, hi);
        return ARENA_OK;
    }
    for (i = 0; i < yt->elements; ++i) {
        uint32_t k = axis_index(xt, st, c->op->attrs->axis, i);
        arena_q_put(y, i, arena_q_round(x[i] / arena_q_scale(c, 1, k), arena_q_zp(c, 2, k), lo, hi));
    }
    return ARENA_OK;
}

int arena_k_dequantize(const arena_ctx_t *c)
{
    const arena_tensor_t *xt = arena_in(c, 0), *st = arena_in(c, 1), *yt = arena_out(c, 0);
    const void *x = arena_in_data(c, 0);
    float *y = (float *)arena_out_data(c, 0);
    uint32_t i;
    int rc;
    if (xt == NULL || yt == NULL || xt->elements != yt->elements) {
        return ARENA_ERR_SHAPE;
    }
    if (yt->dtype != ARENA_DT_FLOAT32 || !(is_q8(xt->dtype) || xt->dtype == ARENA_DT_INT32)) {
        return ARENA_ERR_UNSUPPORTED;
    }
    rc = check_qparams(c, xt, xt->dtype);
    if (rc != ARENA_OK) {
        return rc;
    }
    /* In place is possible only for int32 -> float32 (same width): forward order is safe then. */
    if (st->elements <= 1u && xt->dtype == ARENA_DT_INT8) { /* per tensor: the parameters once */
        const int8_t *xi = (const int8_t *)x;
        float scale = arena_q_scale(c, 1, 0);
        int32_t zp = arena_q_zp(c, 2, 0);
        for (i = 0; i < yt->elements; ++i) {
            y[i] = (float)((int32_t)xi[i] - zp) * scale;
        }
        return ARENA_OK;
    }
    for (i = 0; i < yt->elements; ++i) {
        uint32_t k = axis_index(xt, st, c->op->attrs->axis, i);
        y[i] = (float)(arena_q_load(xt, x, i) - arena_q_zp(c, 2, k)) * arena_q_scale(c, 1, k);
    }
    return ARENA_OK;
}
