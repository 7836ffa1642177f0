/* Identity, Reshape, Flatten, Squeeze, Unsqueeze, Dropout: any element type, a copy (none when planned in
 * place: same address). No workspace. */
#include <string.h>

#include "arena_kernels.h"

int arena_k_identity(const arena_ctx_t *c)
{
    const arena_tensor_t *x = arena_in(c, 0);
    const arena_tensor_t *y = arena_out(c, 0);
    void *src = arena_in_data(c, 0);
    void *dst = arena_out_data(c, 0);
    size_t es;
    if (x == NULL || y == NULL || x->elements != y->elements) {
        return ARENA_ERR_SHAPE;
    }
    es = arena_dtype_size(x->dtype);
    if (es == 0 || x->dtype != y->dtype) {
        return ARENA_ERR_UNSUPPORTED; /* a type whose element size the runtime does not know */
    }
    if (src != dst) {
        memmove(dst, src, (size_t)y->elements * es);
    }
    return ARENA_OK;
}
