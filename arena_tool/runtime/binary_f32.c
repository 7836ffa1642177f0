/* The element-wise binary and variadic ops, float32 (Add/Sum, Sub, Mul, Div, Max, Min, PRelu),
 * numpy broadcasting. In place allowed. No workspace. */
#include "support_f32.h"

/* *y = r op v; 0 for an op this file has no case for (the caller returns ARENA_ERR_UNSUPPORTED):
 * every op is named, none is computed by default. */
static int binary_f(uint8_t op, float r, float v, float *y)
{
    switch (op) {
    case ARENA_OP_ADD: *y = r + v; return 1;
    case ARENA_OP_SUB: *y = r - v; return 1;
    case ARENA_OP_MUL: *y = r * v; return 1;
    case ARENA_OP_DIV: *y = r / v; return 1;
    case ARENA_OP_MAX: *y = v > r ? v : r; return 1;
    case ARENA_OP_MIN: *y = v < r ? v : r; return 1;
    case ARENA_OP_PRELU: *y = r < 0.0f ? r * v : r; return 1;
    default: return 0;
    }
}

/* y[j] = p[j * sp] op q[j * sq] for j < n (sp, sq: 1, or 0 for a broadcast operand), one loop per
 * op. y may be p or q (in place: element j of both is read before y[j] is written). */
#define BINARY_RUN(expr)                                            \
    do {                                                            \
        if (sp && sq) {                                             \
            for (j = 0; j < n; ++j) {                               \
                float r = p[j], v = q[j];                           \
                y[j] = (expr);                                      \
            }                                                       \
        } else {                                                    \
            for (j = 0; j < n; ++j) {                               \
                float r = *p, v = *q;                               \
                p += sp;                                            \
                q += sq;                                            \
                y[j] = (expr);                                      \
            }                                                       \
        }                                                           \
    } while (0)

#if ARENA_MVE_F32
/* BINARY_RUN in Helium's float lanes, four elements a step, the last step's lanes past n off (VCTP);
 * a broadcast operand is one VDUP. Each step loads before it stores: in place as the scalar loop. */
#define BINARY_RUN_MVE(expr)                                                      \
    do {                                                                          \
        float32x4_t r = vdupq_n_f32(*p), v = vdupq_n_f32(*q);                     \
        for (j = 0; j < n; j += 4u) {                                             \
            mve_pred16_t on = vctp32q(n - j);                                     \
            if (sp) {                                                             \
                r = vldrwq_z_f32(p + j, on);                                      \
            }                                                                     \
            if (sq) {                                                             \
                v = vldrwq_z_f32(q + j, on);                                      \
            }                                                                     \
            vstrwq_p_f32(y + j, (expr), on);                                      \
        }                                                                         \
    } while (0)
#endif

/* 0 for an op without a case, before writing anything. Helium: every op but Div in vectors (MVE has
 * no vector divide); Max and Min select as the scalar compare does (a NaN operand gives r). */
static int binary_run(uint8_t op, const float *p, uint32_t sp, const float *q, uint32_t sq, float *y, uint32_t n)
{
    uint32_t j;
#if ARENA_MVE_F32
    switch (op) {
    case ARENA_OP_ADD: BINARY_RUN_MVE(vaddq_f32(r, v)); return 1;
    case ARENA_OP_SUB: BINARY_RUN_MVE(vsubq_f32(r, v)); return 1;
    case ARENA_OP_MUL: BINARY_RUN_MVE(vmulq_f32(r, v)); return 1;
    case ARENA_OP_MAX: BINARY_RUN_MVE(vpselq_f32(v, r, vcmpgtq_f32(v, r))); return 1;
    case ARENA_OP_MIN: BINARY_RUN_MVE(vpselq_f32(v, r, vcmpltq_f32(v, r))); return 1;
    case ARENA_OP_PRELU: BINARY_RUN_MVE(vpselq_f32(vmulq_f32(r, v), r, vcmpltq_n_f32(r, 0.0f))); return 1;
    default: break;
    }
#endif
    switch (op) {
    case ARENA_OP_ADD: BINARY_RUN(r + v); break;
    case ARENA_OP_SUB: BINARY_RUN(r - v); break;
    case ARENA_OP_MUL: BINARY_RUN(r * v); break;
    case ARENA_OP_DIV: BINARY_RUN(r / v); break;
    case ARENA_OP_MAX: BINARY_RUN(v > r ? v : r); break;
    case ARENA_OP_MIN: BINARY_RUN(v < r ? v : r); break;
    case ARENA_OP_PRELU: BINARY_RUN(r < 0.0f ? r * v : r); break;
    default: return 0;
    }
    return 1;
}
#undef BINARY_RUN
#undef BINARY_RUN_MVE

/* Sub, Div, PRelu (two inputs); Add, Mul, Max, Min (1 to MAX_OPERANDS inputs,
 * folded left to right, so Sum can run as Add); numpy-broadcast to the
 * output's shape (PRelu: the slope to X's). */
int arena_k_binary(const arena_ctx_t *c)
{
    const arena_tensor_t *yt = arena_out(c, 0);
    const float *in[MAX_OPERANDS];
    float *Y = (float *)arena_out_data(c, 0);
    uint8_t op = c->op->type;
    int n = (int)c->op->n_inputs, k, d, d0, mode[MAX_OPERANDS];
    uint32_t i, run = 1u;
    bcast_t w;
    int variadic = op == ARENA_OP_ADD || op == ARENA_OP_MUL || op == ARENA_OP_MAX || op == ARENA_OP_MIN;
    if (yt == NULL || !arena_shape_ok(yt) || n < 1 || n > MAX_OPERANDS || (n != 2 && !variadic)) {
        return ARENA_ERR_SHAPE;
    }
    if (!is_f32(yt)) {
        return ARENA_ERR_UNSUPPORTED;
    }
    bcast_init(&w, yt->shape, yt->rank);
    for (k = 0; k < n; ++k) {
        const arena_tensor_t *t = arena_in(c, k);
        if (t == NULL || !arena_shape_ok(t)) {
            return ARENA_ERR_SHAPE;
        }
        if (!is_f32(t)) {
            return ARENA_ERR_UNSUPPORTED;
        }
        if (bcast_add(&w, t->shape, t->rank, 1u) || (op == ARENA_OP_PRELU && k == 0 && t->elements != yt->elements)) {
            return ARENA_ERR_SHAPE;
        }
        in[k] = (const float *)arena_in_data(c, k);
    }
    /* The output is the broadcast shape: each dim other than 1 is some input's. */
    for (d = 0; d < (int)yt->rank; ++d) {
        int found = yt->shape[d] == 1;
        for (k = 0; k < n; ++k) {
            found |= w.stride[k][d] != 0u;
        }
        if (!found) {
            return ARENA_ERR_SHAPE;
        }
    }
    /* The innermost dims along which every operand is contiguous or broadcast throughout run as one
     * loop (a whole same-shape Add is one run; x * scale[C, 1, 1] runs over each H x W plane). */
    for (k = 0; k < n; ++k) {
        mode[k] = -1;
    }
    for (d0 = (int)yt->rank; d0 > 0; --d0) {
        int dd = d0 - 1, fits = 1;
        if (yt->shape[dd] != 1) {
            for (k = 0; k < n; ++k) {
                int md = w.stride[k][dd] != 0u;
                fits &= mode[k] < 0 || mode[k] == md;
            }
            if (!fits) {
                break;
            }
            for (k = 0; k < n; ++k) {
                mode[k] = w.stride[k][dd] != 0u;
            }
            run *= (uint32_t)yt->shape[dd];
        }
    }
    if (run == 0u) {
        return ARENA_OK;
    }
    w.rank = d0; /* bcast_next steps the outer dims only */
    for (i = 0; i < yt->elements; i += run) {
        float *y = Y + i;
        if (n == 2) {
            if (!binary_run(op, in[0] + w.offset[0], mode[0] > 0, in[1] + w.offset[1], mode[1] > 0, y, run)) {
                return ARENA_ERR_UNSUPPORTED;
            }
        } else {
            uint32_t j;
            for (j = 0; j < run; ++j) {
                float r = in[0][w.offset[0] + (mode[0] > 0 ? j : 0u)];
                for (k = 1; k < n; ++k) {
                    if (!binary_f(op, r, in[k][w.offset[k] + (mode[k] > 0 ? j : 0u)], &r)) {
                        return ARENA_ERR_UNSUPPORTED;
                    }
                }
                y[j] = r;
            }
        }
        bcast_next(&w);
    }
    return ARENA_OK;
}
