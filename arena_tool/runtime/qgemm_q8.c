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
 * requantized to y_scale / y_zp, or float32 when y_scale is absent. */
int arena_k_qgemm(const arena_ctx_t *c)
{
    const arena_attrs_t *at = c->op->attrs;
    const arena_tensor_t *ta = arena_in(c, 0), *tb = arena_in(c, 3), *ty = arena_out(c, 0);
    const int32_t *C = (const int32_t *)arena_in_data(c, 6);
    int quant_out = arena_in(c, 7) != NULL;
    qin_t a, b;
    qout_t y;
    uint32_t si, sj, ai, ak, bk, bj;
    int32_t M, N, K, i, j, k;
    int rc;
    memset(&y, 0, sizeof y);
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
    rc = qin(c, 0, &a);
    if (rc == ARENA_OK) {
        rc = arena_q_check(c, 3, (uint32_t)N);
    }
    if (rc == ARENA_OK) {
        rc = gemm_bias(arena_in(c, 6), M, N, &si, &sj);
    }
    if (rc == ARENA_OK && quant_out) {
        rc = qout(c, 7, &y);
    } else if (rc == ARENA_OK && (ty->dtype != ARENA_DT_FLOAT32 || arena_in(c, 8) != NULL)) {
        rc = ARENA_ERR_UNSUPPORTED; /* no y_scale: a float32 output, no zero point */
    }
    if (rc != ARENA_OK) {
        return rc;
    }
    if (arena_i8_qgemm(c, M, N, K, si, sj, quant_out, y.lo, y.hi)) {
        return ARENA_OK;
    }
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
        if (quant_out) {
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
                acc = arena_q_bias_add(C[(uint32_t)i * si + (uint32_t)j * sj], acc);
            }
            if (quant_out) {
                put(&y, yi, (float)acc * scale);
            } else {
                ((float *)arena_out_data(c, 0))[yi] = (float)acc * scale;
            }
        }
    }
    return ARENA_OK;
}
