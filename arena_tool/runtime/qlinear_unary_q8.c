/* QLinearSigmoid, QLinearLeakyRelu, QLinearHardSwish: a 256-entry lookup table per op. In place allowed.
 * No workspace. */
#include "support_q8.h"

static float fn_sigmoid(float v, float alpha)
{
    (void)alpha;
    return 1.0f / (1.0f + arena_expf(-v));
}

static float fn_leaky_relu(float v, float alpha)
{
    return v >= 0.0f ? v : v * alpha;
}

static float fn_hard_swish(float v, float alpha)
{
    float g = v * (1.0f / 6.0f) + 0.5f;
    (void)alpha;
    g = g < 0.0f ? 0.0f : (g > 1.0f ? 1.0f : g);
    return v * g;
}

int arena_k_qlinear_unary(const arena_ctx_t *c)
{
    qin_t x;
    qout_t y;
    uint8_t table[256];
    qfn_t f;
    int rc = qin(c, 0, &x);
    if (rc == ARENA_OK) {
        rc = qout(c, 3, &y);
    }
    if (rc != ARENA_OK) {
        return rc;
    }
    if (!same_shape(x.t, y.t) || !alias_ok(&x, &y)) {
        return ARENA_ERR_SHAPE;
    }
    switch (c->op->type) {
    case ARENA_OP_QLINEAR_SIGMOID: f = fn_sigmoid; break;
    case ARENA_OP_QLINEAR_LEAKY_RELU: f = fn_leaky_relu; break;
    case ARENA_OP_QLINEAR_HARD_SWISH: f = fn_hard_swish; break;
    default: return ARENA_ERR_UNSUPPORTED;
    }
    build_table(table, &x, &y, f, c->op->attrs->alpha);
    apply_table(table, (const uint8_t *)x.data, (uint8_t *)y.data, y.t->elements);
    return ARENA_OK;
}
