/* TFLite's SOFTMAX on int8 (int8 output, scale 1/256, zero point -128), as TFLite Micro's reference
 * kernel computes it (reference_ops::Softmax over the last dim): gemmlowp's fixed-point exp of the
 * rescaled differences to the row's maximum (Q5.26 in, Q0.31 out), their sum in Q12.19, its
 * reciprocal by Newton-Raphson, every step TFLite's integer arithmetic (gemmlowp/fixedpoint.h).
 *
 * The exp depends on the difference alone (0 .. -255), so the lowering computes it once per
 * difference as TFLite does (input 1; 0 below diff_min, where TFLite skips the term and writes
 * -128, which 0 gives too): per element one load in each of the two passes.
 *
 * Input 0 x int8, 1 the exps int32 [256] by -difference; output 0 y int8 of x's shape. ints:
 * input_multiplier, input_left_shift and diff_min, computed at build time as TFLite's
 * PreprocessSoftmaxScaling and CalculateInputRadius do (model/tflite_lower.py). */
#include "support_tfl.h"

/* gemmlowp::SaturatingRoundingMultiplyByPOT<e> for e > 0: x * 2^e, saturated. */
static int32_t sat_shl(int32_t x, int32_t e)
{
    int32_t threshold = (int32_t)(((int64_t)1 << (31 - e)) - 1);
    if (x > threshold) {
        return INT32_MAX;
    }
    if (x < -threshold) {
        return INT32_MIN;
    }
    return tfl_shl(x, e);
}

/* gemmlowp::one_over_one_plus_x_for_x_in_0_1, Q0.31 in and out. */
static int32_t one_over_one_plus_x(int32_t a)
{
    int64_t sum = (int64_t)a + INT32_MAX;
    int32_t half = (int32_t)((sum + (sum >= 0 ? 1 : -1)) / 2);
    int32_t x = tfl_add(1515870810, tfl_srdhm(half, -1010580540)), i;
    for (i = 0; i < 3; ++i) {
        int32_t one_minus = tfl_add(1 << 29, -tfl_srdhm(half, x));
        x = tfl_add(x, sat_shl(tfl_srdhm(x, one_minus), 2));
    }
    return sat_shl(x, 1);
}

int arena_k_tfl_softmax(const arena_ctx_t *c)
{
    const arena_attrs_t *a = c->op->attrs;
    const arena_tensor_t *xt = arena_in(c, 0), *yt = arena_out(c, 0), *et = arena_in(c, 1);
    const int8_t *x;
    const int32_t *ex;
    int8_t *y;
    int32_t depth, rows, r, i;
    if (xt == NULL || yt == NULL || et == NULL || a->n_ints < 3 || xt->rank < 1 || xt->dtype != ARENA_DT_INT8
        || yt->dtype != ARENA_DT_INT8 || et->dtype != ARENA_DT_INT32 || et->elements != 256u) {
        return ARENA_ERR_UNSUPPORTED;
    }
    depth = xt->shape[xt->rank - 1];
    if (depth <= 0 || yt->elements != xt->elements || xt->elements % (uint32_t)depth != 0u) {
        return ARENA_ERR_SHAPE;
    }
    rows = (int32_t)(xt->elements / (uint32_t)depth);
    ex = (const int32_t *)arena_in_data(c, 1);
    x = (const int8_t *)arena_in_data(c, 0);
    y = (int8_t *)arena_out_data(c, 0);
    for (r = 0; r < rows; ++r, x += depth, y += depth) {
        int32_t max = -128, sum = 0, headroom, over, scale, shifted, exponent;
        for (i = 0; i < depth; ++i) {
            max = x[i] > max ? x[i] : max;
        }
        for (i = 0; i < depth; ++i) {
            sum = tfl_add(sum, tfl_rdbpot(ex[max - x[i]], 12));
        }
        if (sum <= 0) { /* the row maximum alone adds exp(0) */
            return ARENA_ERR_SHAPE;
        }
        headroom = (int32_t)__builtin_clz((uint32_t)sum);
        over = 12 - headroom;
        shifted = (int32_t)(((uint32_t)sum << headroom) - 0x80000000u);
        scale = one_over_one_plus_x(shifted);
        exponent = over + 31 - 8;
        if (exponent < 0 || exponent > 31) {
            return ARENA_ERR_SHAPE;
        }
        for (i = 0; i < depth; ++i) { /* y may be x's bytes: each x[i] is read before y[i] is written */
            y[i] = (int8_t)tfl_clamp(tfl_rdbpot(tfl_srdhm(scale, ex[max - x[i]]), exponent) - 128, -128, 127);
        }
    }
    return ARENA_OK;
}
