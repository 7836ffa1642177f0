/* QLinearMatMul, int8/uint8. No workspace. */
#include "support_q8.h"

/* Y[..., M, N] = A[..., M, K] B[..., K, N]; A and B each hold every batch of Y or one
 * matrix shared by all; B's scale/zero point per tensor or per column (N). */
int arena_k_qlinear_matmul(const arena_ctx_t *c)
{
    const arena_tensor_t *at = arena_in(c, 0), *bt = arena_in(c, 3), *yt = arena_out(c, 0);
    const void *A = arena_in_data(c, 0), *B = arena_in_data(c, 3);
    void *Y = arena_out_data(c, 0);
    uint32_t batches, a_stride, b_stride, bi;
    int32_t M, N, K, i, j, k, lo, hi, a_zp, y_zp;
    float a_scale, y_scale;
    int rc;
    if (at == NULL || bt == NULL || yt == NULL || at->rank < 2 || bt->rank < 2 || yt->rank < 2) {
        return ARENA_ERR_SHAPE;
    }
    M = at->shape[at->rank - 2];
    K = at->shape[at->rank - 1];
    N = bt->shape[bt->rank - 1];
    if (bt->shape[bt->rank - 2] != K || yt->shape[yt->rank - 2] != M || yt->shape[yt->rank - 1] != N
        || K > INT32_MAX / (255 * 255)) {
        return ARENA_ERR_SHAPE;
    }
    batches = (uint32_t)M * (uint32_t)N > 0u ? yt->elements / ((uint32_t)M * (uint32_t)N) : 0u;
    a_stride = at->elements == (uint32_t)M * (uint32_t)K ? 0u : (uint32_t)M * (uint32_t)K;
    b_stride = bt->elements == (uint32_t)K * (uint32_t)N ? 0u : (uint32_t)K * (uint32_t)N;
    if ((a_stride != 0u && at->elements != batches * a_stride)
        || (b_stride != 0u && bt->elements != batches * b_stride)) {
        return ARENA_ERR_SHAPE;
    }
    rc = arena_q_check(c, 0, 1u);
    if (rc == ARENA_OK) {
        rc = arena_q_check(c, 3, (uint32_t)N);
    }
    if (rc == ARENA_OK) {
        rc = arena_q_out(c, 6, &lo, &hi);
    }
    if (rc != ARENA_OK) {
        return rc;
    }
    a_scale = arena_q_scale(c, 1, 0);
    a_zp = arena_q_zp(c, 2, 0);
    y_scale = arena_q_scale(c, 6, 0);
    y_zp = arena_q_zp(c, 7, 0);
    for (bi = 0; bi < batches; ++bi) {
        uint32_t a0 = bi * a_stride, b0 = bi * b_stride, y0 = bi * (uint32_t)(M * N);
        for (j = 0; j < N; ++j) {
            float mult = a_scale * arena_q_scale(c, 4, (uint32_t)j) / y_scale;
            int32_t b_zp = arena_q_zp(c, 5, (uint32_t)j);
            for (i = 0; i < M; ++i) {
                int32_t acc = 0;
                for (k = 0; k < K; ++k) {
                    acc += (arena_q_load(at, A, a0 + (uint32_t)(i * K + k)) - a_zp)
                           * (arena_q_load(bt, B, b0 + (uint32_t)(k * N + j)) - b_zp);
                }
                arena_q_put(Y, y0 + (uint32_t)(i * N + j), arena_q_round((float)acc * mult, y_zp, lo, hi));
            }
        }
    }
    return ARENA_OK;
}
