/* A dot product two int8 fast paths share (conv_int8.c's tail column, fully_connected_int8.c's tail rows). */
#include "support_int8.h"

/* s[0] = w.x, s[1] = (w + K).x (x minus zp). */
__attribute__((noinline)) void arena_i8_dot2x1(int32_t s[2], const int8_t *w, const int8_t *x, int32_t K, int32_t zp)
{
    int32_t s0 = 0, s1 = 0, k, n = K;
#if defined(__ARM_FEATURE_MVE)
    arena_mve_dot2x1(s, w, x, K, zp);
    return;
#endif
#if defined(__ARM_FEATURE_DSP)
    uint32_t nz = ((uint32_t)(-zp) & 0xFFFFu) * 0x10001u;
    const int8_t *end = x + (K & ~3);
    for (; x != end; x += 4, w += 4) {
        uint32_t a = ld4(x), u = ld4(w), v = ld4(w + K);
        uint32_t a0 = LO16(a, nz), a1 = HI16(a, nz);
        s0 = MAC2(W_LO(u), a0, s0);
        s0 = MAC2(W_HI(u), a1, s0);
        s1 = MAC2(W_LO(v), a0, s1);
        s1 = MAC2(W_HI(v), a1, s1);
    }
    n = K & 3;
#endif
    for (k = 0; k < n; ++k) {
        int32_t a = (int32_t)x[k] - zp;
        s0 += (int32_t)w[k] * a;
        s1 += (int32_t)w[k + K] * a;
    }
    s[0] = s0;
    s[1] = s1;
}
