/* The element-wise unary ops, float32 (Relu, Clip, LeakyRelu, Sigmoid, HardSigmoid, HardSwish,
 * Tanh, Exp, Neg, Abs, Sqrt, Erf, Elu, Softsign), and Relu/Clip on int8/uint8 (lowered QDQ).
 * In place allowed. No workspace. */
#include "support_f32.h"

/* tanh: an odd Taylor series near 0 (where exp-based forms cancel), else
 * 1 - 2 / (e^(2|x|) + 1); +-1 beyond |x| = 9 (below half a float ulp away). */
static float tanh_f(float x)
{
    float a = abs_f(x), r;
    if (a < 0.3f) {
        float x2 = x * x;
        return x * (1.0f + x2 * (-1.0f / 3.0f + x2 * (2.0f / 15.0f + x2 * (-17.0f / 315.0f + x2 * (62.0f / 2835.0f
            + x2 * (-1382.0f / 155925.0f))))));
    }
    r = a > 9.0f ? 1.0f : 1.0f - 2.0f / (arena_expf(2.0f * a) + 1.0f);
    return x < 0.0f ? -r : r;
}

/* erf: its Maclaurin series for |x| < 0.5 (relative error < 1e-8), else
 * 1 - erfc with Numerical Recipes' erfcc (relative error < 1.2e-7); +-1 from
 * |x| = 4 on, where erfc is below half a float ulp of 1. */
static float erf_f(float x)
{
    float a = abs_f(x), t, r;
    if (a < 0.5f) {
        float x2 = x * x;
        return x * 1.12837916709551257f * (1.0f + x2 * (-1.0f / 3.0f + x2 * (1.0f / 10.0f + x2 * (-1.0f / 42.0f
            + x2 * (1.0f / 216.0f + x2 * (-1.0f / 1320.0f + x2 * (1.0f / 9360.0f)))))));
    }
    if (a != a) {
        return x;
    }
    if (a >= 4.0f) {
        r = 1.0f;
    } else {
        t = 1.0f / (1.0f + 0.5f * a);
        r = 1.0f - t * arena_expf(-a * a - 1.26551223f + t * (1.00002368f + t * (0.37409196f + t * (0.09678418f
            + t * (-0.18628806f + t * (0.27886807f + t * (-1.13520398f + t * (1.48851587f + t * (-0.82215223f
            + t * 0.17087277f)))))))));
    }
    return x < 0.0f ? -r : r;
}

static float clamp01(float v)
{
    return v < 0.0f ? 0.0f : (v > 1.0f ? 1.0f : v);
}

/* *y = op(v); 0 for an op this file has no case for (the kernel returns ARENA_ERR_UNSUPPORTED):
 * every op is named, none is computed by default. */
static int unary_f(const arena_attrs_t *a, uint8_t op, float v, float *y)
{
    switch (op) {
    case ARENA_OP_RELU: *y = v > 0.0f ? v : 0.0f; return 1;
    case ARENA_OP_CLIP: v = v < a->min ? a->min : v; *y = v > a->max ? a->max : v; return 1; /* min(max(v, lo), hi) */
    case ARENA_OP_LEAKY_RELU: *y = v >= 0.0f ? v : v * a->alpha; return 1;
    case ARENA_OP_SIGMOID: *y = 1.0f / (1.0f + arena_expf(-v)); return 1;
    case ARENA_OP_HARD_SIGMOID: *y = clamp01(a->alpha * v + a->beta); return 1;
    case ARENA_OP_HARD_SWISH: *y = v * clamp01(v * (1.0f / 6.0f) + 0.5f); return 1; /* x * HardSigmoid(1/6, 1/2) */
    case ARENA_OP_TANH: *y = tanh_f(v); return 1;
    case ARENA_OP_EXP: *y = arena_expf(v); return 1;
    case ARENA_OP_NEG: *y = -v; return 1;
    case ARENA_OP_ABS: *y = v < 0.0f ? -v : (v == 0.0f ? 0.0f : v); return 1;
    case ARENA_OP_SQRT: *y = arena_sqrtf(v); return 1;
    case ARENA_OP_ERF: *y = erf_f(v); return 1;
    case ARENA_OP_SOFTSIGN: *y = v / (1.0f + (v < 0.0f ? -v : v)); return 1;
    case ARENA_OP_ELU: *y = v >= 0.0f ? v : a->alpha * (arena_expf(v) - 1.0f); return 1;
    default: return 0;
    }
}

/* y[i] = op(x[i]), i < n: the cheap ops as their own loops, so no element pays a call or a dispatch;
 * the transcendental ones through unary_f. y may be x (in place: element i is read first). */
static int unary_loop(const arena_attrs_t *a, uint8_t op, const float *x, float *y, uint32_t n)
{
    uint32_t i;
    float lo = a->min, hi = a->max;
    switch (op) {
    case ARENA_OP_RELU:
        for (i = 0; i < n; ++i) {
            float v = x[i];
            y[i] = v > 0.0f ? v : 0.0f;
        }
        break;
    case ARENA_OP_CLIP:
        for (i = 0; i < n; ++i) {
            float v = x[i];
            v = v < lo ? lo : v;
            y[i] = v > hi ? hi : v;
        }
        break;
    case ARENA_OP_LEAKY_RELU:
        for (i = 0; i < n; ++i) {
            float v = x[i];
            y[i] = v >= 0.0f ? v : v * a->alpha;
        }
        break;
    case ARENA_OP_NEG:
        for (i = 0; i < n; ++i) {
            y[i] = -x[i];
        }
        break;
    default: /* the first element fails for an op without a case, before anything is written */
        for (i = 0; i < n; ++i) {
            if (!unary_f(a, op, x[i], &y[i])) {
                return ARENA_ERR_UNSUPPORTED;
            }
        }
        break;
    }
    return ARENA_OK;
}

/* A float bound as an integer inside [lo, hi] (NaN and out-of-range values saturate). */
static int32_t int_bound(float f, int32_t lo, int32_t hi)
{
    if (!(f > (float)lo)) {
        return f != f ? hi : lo;
    }
    return f < (float)hi ? (int32_t)f : hi;
}

/* Relu/Clip on int8/uint8: lowered QDQ gives Clip with the quantized bounds in min/max. */
static int unary_q8(const arena_ctx_t *c, const arena_tensor_t *xt)
{
    const arena_attrs_t *a = c->op->attrs;
    const void *x = arena_in_data(c, 0);
    uint8_t *y = (uint8_t *)arena_out_data(c, 0);
    int is_s8 = xt->dtype == ARENA_DT_INT8;
    int32_t lo = is_s8 ? -128 : 0, hi = is_s8 ? 127 : 255;
    uint32_t i;
    if (c->op->type == ARENA_OP_CLIP) {
        int32_t l = int_bound(a->min, lo, hi), h = int_bound(a->max, lo, hi);
        lo = l;
        hi = h;
    } else {
        lo = 0;
    }
    for (i = 0; i < xt->elements; ++i) {
        int32_t v = is_s8 ? ((const int8_t *)x)[i] : ((const uint8_t *)x)[i];
        v = v < lo ? lo : v;
        v = v > hi ? hi : v;
        y[i] = (uint8_t)v; /* the low byte: int8's two's complement, or uint8 */
    }
    return ARENA_OK;
}

int arena_k_unary(const arena_ctx_t *c)
{
    const arena_tensor_t *xt = arena_in(c, 0), *yt = arena_out(c, 0);
    const float *x = (const float *)arena_in_data(c, 0);
    float *y = (float *)arena_out_data(c, 0);
    uint8_t op = c->op->type;
    if (xt == NULL || yt == NULL || xt->elements != yt->elements) {
        return ARENA_ERR_SHAPE;
    }
    if (xt->dtype != yt->dtype) {
        return ARENA_ERR_UNSUPPORTED;
    }
    if ((xt->dtype == ARENA_DT_INT8 || xt->dtype == ARENA_DT_UINT8) && (op == ARENA_OP_RELU || op == ARENA_OP_CLIP)) {
        return unary_q8(c, xt);
    }
    if (xt->dtype != ARENA_DT_FLOAT32) {
        return ARENA_ERR_UNSUPPORTED;
    }
    return unary_loop(c->op->attrs, op, x, y, yt->elements);
}
