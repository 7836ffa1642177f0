/* TFLite's SOFTMAX on int8 (int8 output, scale 1/256, zero point -128), as TFLite Micro's reference
 * kernel computes it (reference_ops::Softmax over the last dim): gemmlowp's fixed-point exp of the
 * rescaled differences to the row's maximum (Q5.26 in, Q0.31 out), their sum in Q12.19, its
 * reciprocal by Newton-Raphson, every step TFLite's integer arithmetic (gemmlowp/fixedpoint.h).
 *
 * Input 0 x int8, output 0 y int8 of x's shape. ints: input_multiplier, input_left_shift and
 * diff_min, computed at build time as TFLite's PreprocessSoftmaxScaling and CalculateInputRadius do. */
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

/* exp(a) for a in [-1/4, 0), Q0.31 in and out. */
static int32_t exp_quarter(int32_t a)
{
    const int32_t constant_term = 1895147668, one_third = 715827883;
    int32_t x = tfl_add(a, 1 << 28), x2 = tfl_srdhm(x, x), x3 = tfl_srdhm(x2, x), x4 = tfl_srdhm(x2, x2);
    int32_t x4_over_4 = tfl_rdbpot(x4, 2);
    int32_t t = tfl_rdbpot(tfl_add(tfl_srdhm(tfl_add(x4_over_4, x3), one_third), x2), 1);
    return tfl_add(constant_term, tfl_srdhm(constant_term, tfl_add(x, t)));
}

/* gemmlowp::exp_on_negative_values of a Q5.26 value a <= 0, Q0.31 out. */
static int32_t exp_negative(int32_t a)
{
    static const int32_t mult[7] = {1672461947, 1302514674, 790015084, 290630308, 39332535, 720401, 242};
    const int32_t quarter = 1 << 24;
    int32_t a_mod = tfl_add(a & (quarter - 1), -quarter);
    int32_t result = exp_quarter(sat_shl(a_mod, 5));
    int32_t remainder = (int32_t)((uint32_t)a_mod - (uint32_t)a);
    int32_t k;
    for (k = 0; k < 7; ++k) { /* exponents -2 .. 4: bit 26 + exponent of the remainder */
        if (remainder & (int32_t)((uint32_t)1 << (24 + k))) {
            result = tfl_srdhm(result, mult[k]);
        }
    }
    return a == 0 ? INT32_MAX : result;
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
    const arena_tensor_t *xt = arena_in(c, 0), *yt = arena_out(c, 0);
    const int8_t *x;
    int8_t *y;
    int32_t mult, shift, diff_min, depth, rows, r, i;
    if (xt == NULL || yt == NULL || a->n_ints < 3 || xt->rank < 1 || xt->dtype != ARENA_DT_INT8
        || yt->dtype != ARENA_DT_INT8) {
        return ARENA_ERR_UNSUPPORTED;
    }
    depth = xt->shape[xt->rank - 1];
    if (depth <= 0 || yt->elements != xt->elements || xt->elements % (uint32_t)depth != 0u) {
        return ARENA_ERR_SHAPE;
    }
    rows = (int32_t)(xt->elements / (uint32_t)depth);
    mult = a->ints[0], shift = a->ints[1], diff_min = a->ints[2];
    x = (const int8_t *)arena_in_data(c, 0);
    y = (int8_t *)arena_out_data(c, 0);
    for (r = 0; r < rows; ++r, x += depth, y += depth) {
        int32_t max = -128, sum = 0, headroom, over, scale, shifted, exponent;
        for (i = 0; i < depth; ++i) {
            max = x[i] > max ? x[i] : max;
        }
        for (i = 0; i < depth; ++i) {
            int32_t diff = (int32_t)x[i] - max;
            if (diff >= diff_min) {
                sum = tfl_add(sum, tfl_rdbpot(exp_negative(tfl_srdhm(tfl_shl(diff, shift), mult)), 12));
            }
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
            int32_t diff = (int32_t)x[i] - max;
            if (diff >= diff_min) {
                int32_t e = exp_negative(tfl_srdhm(tfl_shl(diff, shift), mult));
                y[i] = (int8_t)tfl_clamp(tfl_rdbpot(tfl_srdhm(scale, e), exponent) - 128, -128, 127);
            } else {
                y[i] = -128;
            }
        }
    }
    return ARENA_OK;
}
