/* Internal to the quantized reference kernels (*_q8.c; int8 and uint8, any zero point): their
 * shared helpers, static inline.
 *
 * onnxruntime's quantized contrib ops (QOperator models) and the ops lowered QDQ models
 * become (arena_tool/model/lowering.py), int8/uint8, matching onnxruntime within one step.
 * Each kernel does onnxruntime's arithmetic (float requantization, rounding half to even)
 * and clamps its output to attrs.out_min/out_max when out_min < out_max (a Relu/Clip the
 * lowering absorbed). Operands may mix int8 and uint8; scales and zero points are per
 * tensor except QGemm's B (per column). Element-wise kernels read element i before
 * writing element i, so an output may share an input's bytes (the planner's in-place ops). */
#ifndef ARENA_SUPPORT_Q8_H
#define ARENA_SUPPORT_Q8_H

#include "arena_kernels.h"

static inline int is_q8(uint8_t dtype)
{
    return dtype == ARENA_DT_INT8 || dtype == ARENA_DT_UINT8;
}

/* --- operands ---------------------------------------------------------------- */

/* A quantized input: the integer tensor and its per-tensor parameters. */
typedef struct {
    const arena_tensor_t *t;
    const void *data;
    float scale;
    int32_t zp;
} qin_t;

/* The quantized output 0, its parameters and integer range. */
typedef struct {
    const arena_tensor_t *t;
    void *data;
    float scale;
    int32_t zp, lo, hi;
} qout_t;

/* Entry 0 of a zero point tensor (t NULL: absent, 0) holding x's dtype (arena_q_check's). */
static inline int32_t zp0(const arena_tensor_t *t, const void *data)
{
    if (t == NULL || data == NULL) {
        return 0;
    }
    return t->dtype == ARENA_DT_INT8 ? ((const int8_t *)data)[0] : ((const uint8_t *)data)[0];
}

/* Input triple (x, scale, zero point) from input position x, per tensor (entry 0 of each);
 * each tensor looked up once. */
static inline int qin(const arena_ctx_t *c, int x, qin_t *q)
{
    int rc = arena_q_check(c, x, 1u);
    if (rc != ARENA_OK) {
        return rc;
    }
    q->t = arena_in(c, x);
    q->data = arena_in_data(c, x);
    q->scale = ((const float *)arena_in_data(c, x + 1))[0];
    q->zp = zp0(arena_in(c, x + 2), arena_in_data(c, x + 2));
    return ARENA_OK;
}

/* Output 0 with its scale at input s and zero point at s + 1. */
static inline int qout(const arena_ctx_t *c, int s, qout_t *q)
{
    int rc = arena_q_out(c, s, &q->lo, &q->hi);
    if (rc != ARENA_OK) {
        return rc;
    }
    q->t = arena_out(c, 0);
    q->data = arena_out_data(c, 0);
    q->scale = ((const float *)arena_in_data(c, s))[0];
    q->zp = zp0(arena_in(c, s + 1), arena_in_data(c, s + 1));
    return ARENA_OK;
}

/* The integer code of element i (int8 or uint8; checked by qin). */
static inline int32_t code(const qin_t *x, uint32_t i)
{
    if (x->t->dtype == ARENA_DT_INT8) {
        return ((const int8_t *)x->data)[i];
    }
    return ((const uint8_t *)x->data)[i];
}

/* Writes output element i from v, the value in units of the output's scale. */
static inline void put(const qout_t *y, uint32_t i, float v)
{
    arena_q_put(y->data, i, arena_q_round(v, y->zp, y->lo, y->hi));
}

/* An input either shares no byte with the output, or exactly its bytes (an in-place
 * element-wise op; 1-byte elements). */
static inline int alias_ok(const qin_t *x, const qout_t *y)
{
    uintptr_t xa = (uintptr_t)x->data, ya = (uintptr_t)y->data;
    if (xa + x->t->elements <= ya || ya + y->t->elements <= xa) {
        return 1;
    }
    return xa == ya && x->t->elements == y->t->elements;
}

static inline int same_shape(const arena_tensor_t *a, const arena_tensor_t *b)
{
    int d;
    if (a->rank != b->rank) {
        return 0;
    }
    for (d = 0; d < (int)a->rank; ++d) {
        if (a->shape[d] != b->shape[d]) {
            return 0;
        }
    }
    return 1;
}

/* N, C, H, W of a rank-3 (1-D: H = 1) or rank-4 tensor; -1 for other ranks. */
static inline int nchw(const arena_tensor_t *t, int32_t d[4])
{
    if (t->rank != 3 && t->rank != 4) {
        return -1;
    }
    d[0] = t->shape[0];
    d[1] = t->shape[1];
    d[2] = t->rank == 4 ? t->shape[2] : 1;
    d[3] = t->shape[t->rank - 1];
    return 0;
}

/* --- lookup tables: QLinearSigmoid, QLinearLeakyRelu, QLinearHardSwish ---------- */

typedef float (*qfn_t)(float v, float alpha);

static inline float fn_identity(float v, float alpha)
{
    (void)alpha;
    return v;
}

/* table[b] = the output code for the input whose code has byte b, as onnxruntime's
 * QlinearBuildLookupTable makes it: y = Q(f(DQ(x))). The op is then one load per element. */
static inline void build_table(uint8_t table[256], const qin_t *x, const qout_t *y, qfn_t f, float alpha)
{
    int32_t b;
    for (b = 0; b < 256; ++b) {
        int32_t q = x->t->dtype == ARENA_DT_INT8 && b >= 128 ? b - 256 : b;
        float v = f(x->scale * (float)(q - x->zp), alpha);
        table[b] = (uint8_t)arena_q_round(v / y->scale, y->zp, y->lo, y->hi);
    }
}

static inline void apply_table(const uint8_t table[256], const uint8_t *x, uint8_t *y, uint32_t n)
{
    uint32_t i;
    for (i = 0; i < n; ++i) {
        y[i] = table[x[i]];
    }
}

#endif
