/* MatMul, float32: numpy matmul through arena_f32_gemm_nn. No workspace. */
#include "support_f32.h"

/* numpy matmul: 1-D operands promoted (and the dim dropped again), batch dims broadcast. */
int arena_k_matmul(const arena_ctx_t *c)
{
    const arena_tensor_t *at = arena_in(c, 0), *bt = arena_in(c, 1), *yt = arena_out(c, 0);
    const float *A = (const float *)arena_in_data(c, 0);
    const float *B = (const float *)arena_in_data(c, 1);
    float *Y = (float *)arena_out_data(c, 0);
    bcast_t w;
    uint32_t batches = 1u, b;
    int32_t M, N, K;
    int ra, rb, nb, d;
    if (at == NULL || bt == NULL || yt == NULL || at->rank < 1 || bt->rank < 1 || !arena_shape_ok(at) ||
        !arena_shape_ok(bt) || !arena_shape_ok(yt)) {
        return ARENA_ERR_SHAPE;
    }
    if (!is_f32(at) || !is_f32(bt) || !is_f32(yt)) {
        return ARENA_ERR_UNSUPPORTED;
    }
    ra = at->rank;
    rb = bt->rank;
    K = at->shape[ra - 1];
    M = ra >= 2 ? at->shape[ra - 2] : 1;
    N = rb >= 2 ? bt->shape[rb - 1] : 1;
    nb = (int)yt->rank - (ra >= 2) - (rb >= 2); /* batch dims of Y */
    if ((rb >= 2 ? bt->shape[rb - 2] : bt->shape[0]) != K || nb < 0 || (ra >= 2 && yt->shape[nb] != M) ||
        (rb >= 2 && yt->shape[yt->rank - 1] != N)) {
        return ARENA_ERR_SHAPE;
    }
    bcast_init(&w, yt->shape, nb);
    if (bcast_add(&w, at->shape, ra >= 2 ? ra - 2 : 0, (uint32_t)(M * K)) ||
        bcast_add(&w, bt->shape, rb >= 2 ? rb - 2 : 0, (uint32_t)(K * N))) {
        return ARENA_ERR_SHAPE;
    }
    for (d = 0; d < nb; ++d) {
        batches *= (uint32_t)yt->shape[d];
    }
    for (b = 0; b < batches; ++b) {
        const float *Ab = A + w.offset[0];
        const float *Bb = B + w.offset[1];
        float *Yb = Y + (size_t)b * (size_t)M * (size_t)N;
        arena_f32_gemm_nn(Ab, K, Bb, N, NULL, Yb, N, M, N, K);
        bcast_next(&w);
    }
    return ARENA_OK;
}
