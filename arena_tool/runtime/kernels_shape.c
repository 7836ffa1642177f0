/* Layout ops that move elements of any type: Transpose, Pad, Slice, Split, Resize, ReduceMean. */
#include <string.h>

#include "arena_kernels.h"

int arena_k_transpose(const arena_ctx_t *c)
{
    (void)c;
    return ARENA_ERR_UNSUPPORTED;
}

int arena_k_pad(const arena_ctx_t *c)
{
    (void)c;
    return ARENA_ERR_UNSUPPORTED;
}

int arena_k_slice(const arena_ctx_t *c)
{
    (void)c;
    return ARENA_ERR_UNSUPPORTED;
}

int arena_k_split(const arena_ctx_t *c)
{
    (void)c;
    return ARENA_ERR_UNSUPPORTED;
}

int arena_k_resize(const arena_ctx_t *c)
{
    (void)c;
    return ARENA_ERR_UNSUPPORTED;
}

int arena_k_reduce_mean(const arena_ctx_t *c)
{
    (void)c;
    return ARENA_ERR_UNSUPPORTED;
}
