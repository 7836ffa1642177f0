/* The quantization helpers every quantized kernel shares (arena_q_*, declared in arena_kernels.h):
 * operand checks, loads, the requantize/store path. ONNX linear quantization,
 * q = saturate(rint(x / s) + zp), x = (q - zp) * s, with per-tensor or per-axis scales. QLinear
 * ops requantize an int32 accumulator with the float multiplier s_x * s_w / s_y, rounding half
 * to even (ONNX Runtime may differ by one step on exact ties). */
#include "support_q8.h"

int32_t arena_q_load(const arena_tensor_t *t, const void *data, uint32_t i)
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

/* Stores a value already inside the tensor's int8/uint8 range: the low byte is
 * its two's complement (int8_t) or plain (uint8_t) representation. */
void arena_q_put(void *data, uint32_t i, int32_t q)
{
    ((uint8_t *)data)[i] = (uint8_t)q;
}

/* The requantize step of every quantized output: rint(v) + zp clamped to
 * [lo, hi] (the dtype's range, narrowed by an absorbed Relu/Clip). Clamping in
 * float first keeps the int conversion defined for any v (NaN gives lo). */
int32_t arena_q_round(float v, int32_t zp, int32_t lo, int32_t hi)
{
    float r = arena_rintf(v) + (float)zp;
    if (!(r > (float)lo)) {
        return lo;
    }
    return r < (float)hi ? (int32_t)r : hi;
}

/* bias + dot with int32 wraparound (onnxruntime's arithmetic), without signed overflow. */
int32_t arena_q_bias_add(int32_t bias, int32_t dot)
{
    uint32_t s = (uint32_t)bias + (uint32_t)dot;
    return s <= (uint32_t)INT32_MAX ? (int32_t)s : -(int32_t)(~s) - 1;
}

/* Scale entry k of the float tensor at input s (entry 0 when it has one). */
float arena_q_scale(const arena_ctx_t *c, int s, uint32_t k)
{
    const arena_tensor_t *t = arena_in(c, s);
    const float *d = (const float *)arena_in_data(c, s);
    return d[t->elements > 1u ? k : 0u];
}

/* Zero point entry k at input z (0 when absent). */
int32_t arena_q_zp(const arena_ctx_t *c, int z, uint32_t k)
{
    const arena_tensor_t *t = arena_in(c, z);
    if (t == NULL) {
        return 0;
    }
    return arena_q_load(t, arena_in_data(c, z), t->elements > 1u ? k : 0u);
}

/* A quantized operand: tensor x at input `x`, int8/uint8; its float32 scale at x+1
 * and its zero point at x+2 (absent = 0, else x's dtype) with 1 or `n` entries
 * each (n = 1: per-tensor only). */
int arena_q_check(const arena_ctx_t *c, int x, uint32_t n)
{
    return arena_q_check_t(arena_in(c, x), arena_in(c, x + 1), arena_in(c, x + 2), n);
}

/* arena_q_check of the tensors themselves (x, its scale, its zero point or NULL). */
int arena_q_check_t(const arena_tensor_t *xt, const arena_tensor_t *st, const arena_tensor_t *zt, uint32_t n)
{
    if (xt == NULL || st == NULL) {
        return ARENA_ERR_SHAPE;
    }
    if (!is_q8(xt->dtype) || st->dtype != ARENA_DT_FLOAT32 || (zt != NULL && zt->dtype != xt->dtype)) {
        return ARENA_ERR_UNSUPPORTED;
    }
    if ((st->elements != 1u && st->elements != n) || (zt != NULL && zt->elements != 1u && zt->elements != n)) {
        return ARENA_ERR_UNSUPPORTED;
    }
    return ARENA_OK;
}

/* The quantized output 0: int8/uint8, per-tensor float32 scale at input s and zero
 * point at s+1 (absent = 0, else the output's dtype); [*lo, *hi] is its integer
 * range, narrowed by attrs.out_min/out_max when out_min < out_max. */
int arena_q_out(const arena_ctx_t *c, int s, int32_t *lo, int32_t *hi)
{
    return arena_q_out_t(c->op->attrs, arena_out(c, 0), arena_in(c, s), arena_in(c, s + 1), lo, hi);
}

/* arena_q_out of the tensors themselves (the output, its scale, its zero point or NULL). */
int arena_q_out_t(const arena_attrs_t *a, const arena_tensor_t *yt, const arena_tensor_t *st,
                  const arena_tensor_t *zt, int32_t *lo, int32_t *hi)
{
    if (yt == NULL || st == NULL) {
        return ARENA_ERR_SHAPE;
    }
    if (!is_q8(yt->dtype) || st->dtype != ARENA_DT_FLOAT32 || (zt != NULL && zt->dtype != yt->dtype)) {
        return ARENA_ERR_UNSUPPORTED;
    }
    if (st->elements != 1u || (zt != NULL && zt->elements != 1u)) {
        return ARENA_ERR_UNSUPPORTED;
    }
    *lo = yt->dtype == ARENA_DT_INT8 ? -128 : 0;
    *hi = yt->dtype == ARENA_DT_INT8 ? 127 : 255;
    if (a->out_min < a->out_max) {
        *lo = a->out_min > *lo ? a->out_min : *lo;
        *hi = a->out_max < *hi ? a->out_max : *hi;
    }
    return ARENA_OK;
}
