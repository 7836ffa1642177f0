/* QGemm, int8/uint8 (the int8 fast path is fully_connected_int8.c's). No workspace. */
#include <string.h>

#include "support_q8.h"

/* --- QGemm ------------------------------------------------------------------------ */

/* Element strides (per row i, per column j) of QGemm's int32 bias C over the M x N
 * output: onnxruntime's GemmBroadcastBias shapes (), (1), (N), (1, N), (M, 1), (M, N). */
static int gemm_bias(const arena_tensor_t *ct, int32_t M, int32_t N, uint32_t *si, uint32_t *sj)
{
    *si = 0u;
    *sj = 0u;
    if (ct == NULL || ct->elements == 1u) {
        return ct == NULL || ct->dtype == ARENA_DT_INT32 ? ARENA_OK : ARENA_ERR_UNSUPPORTED;
    }
    if (ct->dtype != ARENA_DT_INT32) {
        return ARENA_ERR_UNSUPPORTED;
    }
    if ((ct->rank == 1 && ct->shape[0] == N) || (ct->rank == 2 && ct->shape[0] == 1 && ct->shape[1] == N)) {
        *sj = 1u;
    } else if (ct->rank == 2 && ct->shape[0] == M && ct->shape[1] == 1) {
        *si = 1u;
    } else if (ct->rank == 2 && ct->shape[0] == M && ct->shape[1] == N) {
        *si = (uint32_t)N;
        *sj = 1u;
    } else {
        return ARENA_ERR_SHAPE;
    }
    return ARENA_OK;
}

/* Y = alpha * a_scale * b_scale[j] * (A' B' + C) with A' = A - a_zp, B' = B - b_zp[j],
 * requantized to y_scale / y_zp, or float32 when y_scale is absent. Each operand is looked up
 * once (arena_qgemm_t) and handed to the int8 fast path as it is. */
int arena_k_qgemm(const arena_ctx_t *c)
{
    const arena_attrs_t *at = c->op->attrs;
    const arena_tensor_t *ta, *tb, *ty = arena_out(c, 0);
    const int32_t *C;
    arena_qgemm_t g;
    qin_t a, b;
    qout_t y;
    uint32_t ai, ak, bk, bj;
    int32_t M, N, K, i, j, k;
    int rc;
    arena_op_inputs(c, 9, g.t, g.d);
    ta = g.t[0];
    tb = g.t[3];
    C = (const int32_t *)g.d[6];
    if (ta == NULL || tb == NULL || ty == NULL || ta->rank != 2 || tb->rank != 2 || ty->rank != 2) {
        return ARENA_ERR_SHAPE;
    }
    if ((at->trans_a != 0 && at->trans_a != 1) || (at->trans_b != 0 && at->trans_b != 1)) {
        return ARENA_ERR_UNSUPPORTED;
    }
    M = ta->shape[at->trans_a ? 1 : 0];
    K = ta->shape[at->trans_a ? 0 : 1];
    N = tb->shape[at->trans_b ? 0 : 1];
    if (tb->shape[at->trans_b ? 1 : 0] != K || ty->shape[0] != M || ty->shape[1] != N || K > INT32_MAX / (255 * 255)) {
        return ARENA_ERR_SHAPE;
    }
    g.M = M;
    g.N = N;
    g.K = K;
    g.lo = 0;
    g.hi = 0;
    g.quant_out = g.t[7] != NULL;
    rc = arena_q_check_t(g.t[0], g.t[1], g.t[2], 1u);
    if (rc == ARENA_OK) {
        rc = arena_q_check_t(g.t[3], g.t[4], g.t[5], (uint32_t)N);
    }
    if (rc == ARENA_OK) {
        rc = gemm_bias(g.t[6], M, N, &g.si, &g.sj);
    }
    if (rc == ARENA_OK && g.quant_out) {
        rc = arena_q_out_t(at, ty, g.t[7], g.t[8], &g.lo, &g.hi);
    } else if (rc == ARENA_OK && (ty->dtype != ARENA_DT_FLOAT32 || g.t[8] != NULL)) {
        rc = ARENA_ERR_UNSUPPORTED; /* no y_scale: a float32 output, no zero point */
    }
    if (rc != ARENA_OK) {
        return rc;
    }
    g.a_scale = ((const float *)g.d[1])[0];
    g.a_zp = zp0(g.t[2], g.d[2]);
    g.y_scale = g.quant_out ? ((const float *)g.d[7])[0] : 1.0f;
    g.y_zp = g.quant_out ? zp0(g.t[8], g.d[8]) : 0;
    g.y = arena_out_data(c, 0);
    if (arena_i8_qgemm(c, &g)) {
        return ARENA_OK;
    }
    a.t = ta;
    a.data = g.d[0];
    a.scale = g.a_scale;
    a.zp = g.a_zp;
    y.t = ty;
    y.data = g.y;
    y.scale = g.y_scale;
    y.zp = g.y_zp;
    y.lo = g.lo;
    y.hi = g.hi;
    memset(&b, 0, sizeof b); /* B's parameters are per column, read below */
    b.t = tb;
    b.data = arena_in_data(c, 3);
    /* Element (i, k) of A is at i * ai + k * ak; (k, j) of B at k * bk + j * bj. */
    ai = at->trans_a ? 1u : (uint32_t)K;
    ak = at->trans_a ? (uint32_t)M : 1u;
    bk = at->trans_b ? 1u : (uint32_t)N;
    bj = at->trans_b ? (uint32_t)K : 1u;
    for (j = 0; j < N; ++j) {
        float scale = at->alpha * a.scale * arena_q_scale(c, 4, (uint32_t)j);
        int32_t b_zp = arena_q_zp(c, 5, (uint32_t)j);
        if (g.quant_out) {
            scale /= y.scale;
        }
        for (i = 0; i < M; ++i) {
            uint32_t yi = (uint32_t)i * (uint32_t)N + (uint32_t)j;
            int32_t acc = 0;
            for (k = 0; k < K; ++k) {
                acc += (code(&a, (uint32_t)i * ai + (uint32_t)k * ak) - a.zp)
                       * (code(&b, (uint32_t)k * bk + (uint32_t)j * bj) - b_zp);
            }
            if (C != NULL) {
                acc = arena_q_bias_add(C[(uint32_t)i * g.si + (uint32_t)j * g.sj], acc);
            }
            if (g.quant_out) {
                put(&y, yi, (float)acc * scale);
            } else {
                ((float *)g.y)[yi] = (float)acc * scale;
            }
        }
    }
    return ARENA_OK;
}
