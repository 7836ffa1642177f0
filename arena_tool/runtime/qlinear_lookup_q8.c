/* QLinearLookup: an int8/uint8 element-wise chain (DequantizeLinear -> HardSigmoid ... ->
 * QuantizeLinear, a hard-swish's QLinearMul) that arena_tool/model/lowering.py folded into one
 * 256-entry table at build time: y[i] = table[byte of x[i]], the table in attrs.ints (64 words,
 * little-endian). In place allowed. No workspace. */
#include <string.h>

#include "support_q8.h"

int arena_k_qlinear_lookup(const arena_ctx_t *c)
{
    const arena_tensor_t *xt = arena_in(c, 0), *yt = arena_out(c, 0);
    const uint8_t *table = (const uint8_t *)c->op->attrs->ints, *x;
    uint8_t *y;
    uint32_t i = 0u, n;
    if (xt == NULL || yt == NULL || !is_q8(xt->dtype) || !is_q8(yt->dtype) || c->op->attrs->n_ints != 64u
        || table == NULL) {
        return ARENA_ERR_UNSUPPORTED;
    }
    x = (const uint8_t *)arena_in_data(c, 0);
    y = (uint8_t *)arena_out_data(c, 0);
    n = yt->elements;
    if (xt->elements != n || !(x + n <= y || y + n <= x || x == y)) {
        return ARENA_ERR_SHAPE;
    }
    if ((((uintptr_t)x | (uintptr_t)y) & 3u) == 0u) { /* four bytes a word: one load and one store */
        for (; i + 4u <= n; i += 4u) {
            uint32_t w, r;
            memcpy(&w, x + i, 4u);
            r = (uint32_t)table[w & 0xFFu] | (uint32_t)table[(w >> 8) & 0xFFu] << 8
                | (uint32_t)table[(w >> 16) & 0xFFu] << 16 | (uint32_t)table[w >> 24] << 24;
            memcpy(y + i, &r, 4u);
        }
    }
    for (; i < n; ++i) {
        y[i] = table[x[i]];
    }
    return ARENA_OK;
}
