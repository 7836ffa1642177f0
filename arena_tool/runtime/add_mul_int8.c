/* QLinearAdd, QLinearMul: the int8 fast path of an operand a of the output's shape and an operand b
 * of the same shape or constant over the output's trailing dims (arena_i8_binary; a squeeze-excite's
 * per-channel gate), all three int8 or all three uint8 (a uint8 network's residual adds). No
 * workspace. */
#include "support_int8.h"

#if !ARENA_HAVE_FPU
/* floor(f * 2^16) for |f| < 2^14, from f's bits. */
static inline int32_t q16_floor(float f)
{
    uint32_t bits, m, e;
    int32_t sh;
    memcpy(&bits, &f, sizeof bits);
    e = bits >> 23 & 0xFFu;
    m = (bits & 0x7FFFFFu) | (e != 0u ? 0x800000u : 0u);
    sh = (int32_t)(e != 0u ? e : 1u) - 150 + 16; /* f = m 2^(sh - 16) */
    if (sh >= 0) {
        m <<= sh; /* |f| < 2^14: below 2^30 */
    } else if (bits >> 31) { /* rounded away from 0, so toward -inf once negated */
        m = sh > -32 ? (m >> -sh) + ((m & ((1u << -sh) - 1u)) != 0u) : (m != 0u);
    } else {
        m = sh > -32 ? m >> -sh : 0u;
    }
    return bits >> 31 ? -(int32_t)m : (int32_t)m;
}

/* One sum the float way (soft-float calls). */
static __attribute__((noinline)) int8_t add_x(float ra, int32_t u, float rb, int32_t v, const qpar_t *q)
{
    return (int8_t)requant_f(ra * (float)u + rb * (float)v, q);
}

/* QLinearAdd without an FPU, in integers, to the float loop's codes: ta[a] = ra (a - a_zp) and
 * tb[b] = rb (b - b_zp), each the float product as the loop rounds it, held with 16 fraction
 * bits (floored: under 1 unit low) for all 256 bytes; the float sum rounds to 24 bits, at most
 * 1 unit below 512 (2^(8 - 23) / 2), so rint is (ta + tb + 0x8000) >> 16 unless the fraction
 * is within a few units of one half (then add_x decides). 0 when a product reaches 2^13 (the
 * caller runs the float loop). Worth its two 256-entry tables (512 soft-float products) for
 * larger tensors only. */
static int add_i(const int8_t *a, const int8_t *b, int8_t *y, uint32_t n, uint32_t plane, int32_t a_zp,
                 int32_t b_zp, float ra, float rb, const qpar_t *q)
{
    int32_t ta[256], tb[256], k, rl = q->rl, rh = q->rh, zp = q->zp;
    uint32_t i, o;
    for (k = -128; k < 128; ++k) {
        float fa = ra * (float)(k - a_zp), fb = rb * (float)(k - b_zp);
        uint32_t ba, bb;
        memcpy(&ba, &fa, sizeof ba);
        memcpy(&bb, &fb, sizeof bb);
        if ((ba & 0x7FFFFFFFu) >= 0x46000000u || (bb & 0x7FFFFFFFu) >= 0x46000000u) { /* 2^13 or more, or NaN */
            return 0;
        }
        ta[k + 128] = q16_floor(fa);
        tb[k + 128] = q16_floor(fb);
    }
/* y[i] from the sum s of its two table entries; u, v its operands minus their zero points. */
#define ADD_I_STORE(s, u, v)                                                                                        \
    do {                                                                                                            \
        int32_t r_;                                                                                                 \
        if ((((uint32_t)(s) - 0x7FFAu) & 0xFFFFu) <= 9u) {                                                          \
            y[i] = add_x(ra, (u), rb, (v), q);                                                                      \
        } else {                                                                                                    \
            r_ = ((s) + 0x8000) >> 16;                                                                              \
            r_ = r_ > rl ? r_ : rl;                                                                                 \
            r_ = r_ < rh ? r_ : rh;                                                                                 \
            y[i] = (int8_t)(r_ + zp);                                                                               \
        }                                                                                                           \
    } while (0)
    if (plane == 1u) {
        for (i = 0; i < n; ++i) {
            int32_t s = ta[a[i] + 128] + tb[b[i] + 128];
            ADD_I_STORE(s, (int32_t)a[i] - a_zp, (int32_t)b[i] - b_zp);
        }
        return 1;
    }
    for (o = 0, i = 0; o < n / plane; ++o) {
        int32_t bo = tb[b[o] + 128];
        uint32_t end = i + plane;
        for (; i < end; ++i) {
            int32_t s = ta[a[i] + 128] + bo;
            ADD_I_STORE(s, (int32_t)a[i] - a_zp, (int32_t)b[o] - b_zp);
        }
    }
#undef ADD_I_STORE
    return 1;
}
#endif

#if defined(ARENA_MVE_F)
/* 4 codes from p as int32 lanes: int8 bytes (VLDRB.S32), or (u8, a constant where inlined) uint8
 * ones read as stored (VLDRB.U32); _z: the lanes of predicate m only. */
#define LD4(p, u8) ((u8) ? vreinterpretq_s32_u32(vldrbq_u32((const uint8_t *)(p))) : vldrbq_s32(p))
#define LD4_Z(p, m, u8) ((u8) ? vreinterpretq_s32_u32(vldrbq_z_u32((const uint8_t *)(p), (m))) : vldrbq_z_s32((p), (m)))

/* arena_i8_binary in Helium's float lanes, 4 outputs a step (the last predicated), to the scalar
 * loops' codes: the same float products and sum, each rounded once (VMUL, VADD; no fused
 * multiply-add, as the C is built), then VCVTN as VCVTR rounds (half to even) and the clamp.
 * b either n bytes (plane 1) or one byte per plane of a; q: the add's, or the product's (zero
 * point 0, the output's zf added before rounding). u8: every operand and the output uint8 (the
 * output's code stored as its low byte, as VSTRB.32 stores an int8 one). */
static inline __attribute__((always_inline)) void binary_mve_t(const int8_t *a, const int8_t *b, int8_t *y,
                                                               uint32_t n, uint32_t plane, int32_t a_zp,
                                                               int32_t b_zp, float ra, float rb, float rm, int is_add,
                                                               const qpar_t *q, float zf, const int u8)
{
    const int32x4_t lo = vdupq_n_s32(q->rl), hi = vdupq_n_s32(q->rh);
    const int32_t zp = q->zp;
    uint32_t o, k, i;
    if (plane == 1u && is_add) { /* same shapes (a residual add): whole steps unpredicated, no branch in the loop */
#define ADD4(u, w)                                                                                         \
    vaddq_n_s32(vminq_s32(vmaxq_s32(vcvtnq_s32_f32(vaddq_f32(vmulq_n_f32(vcvtq_f32_s32(vsubq_n_s32((u), a_zp)), ra), \
                                                              vmulq_n_f32(vcvtq_f32_s32(vsubq_n_s32((w), b_zp)), rb))), \
                                   lo), hi), zp)
        for (k = 0; k + 4u <= n; k += 4u) {
            vstrbq_s32(y + k, ADD4(LD4(a + k, u8), LD4(b + k, u8)));
        }
        if (k < n) {
            const mve_pred16_t p = vctp32q(n - k);
            vstrbq_p_s32(y + k, ADD4(LD4_Z(a + k, p, u8), LD4_Z(b + k, p, u8)), p);
        }
#undef ADD4
        return;
    }
    for (o = 0, i = 0; i < n; ++o) {
        /* one plane of a against b's byte o, or (plane 1) all of a against all of b */
        const uint32_t end = plane == 1u ? n : i + plane;
        const int32_t v = plane == 1u ? 0 : (u8 ? (int32_t)((const uint8_t *)b)[o] : (int32_t)b[o]) - b_zp;
        const float bv = rb * (float)v;
        for (k = i; k < end; k += 4u) {
            const mve_pred16_t p = vctp32q(end - k);
            const int32x4_t u = vsubq_n_s32(LD4_Z(a + k, p, u8), a_zp);
            const int32x4_t w = plane == 1u ? vsubq_n_s32(LD4_Z(b + k, p, u8), b_zp) : vdupq_n_s32(v);
            int32x4_t r;
            if (is_add) {
                float32x4_t s = vmulq_n_f32(vcvtq_f32_s32(u), ra);
                s = plane == 1u ? vaddq_f32(s, vmulq_n_f32(vcvtq_f32_s32(w), rb)) : vaddq_n_f32(s, bv);
                r = vaddq_n_s32(vminq_s32(vmaxq_s32(vcvtnq_s32_f32(s), lo), hi), zp);
            } else { /* rm (u v) + zp, clamped to [rl, rh] with 0 as its zero point, as qm */
                r = vminq_s32(vmaxq_s32(vcvtnq_s32_f32(vaddq_n_f32(vmulq_n_f32(vcvtq_f32_s32(vmulq_s32(u, w)), rm), zf)), lo), hi);
            }
            vstrbq_p_s32(y + k, r, p);
        }
        i = end;
    }
}
#undef LD4
#undef LD4_Z

static __attribute__((noinline)) void binary_mve(const int8_t *a, const int8_t *b, int8_t *y, uint32_t n,
                                                 uint32_t plane, int32_t a_zp, int32_t b_zp, float ra, float rb,
                                                 float rm, int is_add, const qpar_t *q, float zf, int u8)
{
    if (u8) {
        binary_mve_t(a, b, y, n, plane, a_zp, b_zp, ra, rb, rm, is_add, q, zf, 1);
    } else {
        binary_mve_t(a, b, y, n, plane, a_zp, b_zp, ra, rb, rm, is_add, q, zf, 0);
    }
}
#endif

/* Code i of p: an int8 byte, or (u8) a uint8 one. */
static inline __attribute__((always_inline)) int32_t at(const int8_t *p, uint32_t i, int u8)
{
    return u8 ? (int32_t)((const uint8_t *)p)[i] : (int32_t)p[i];
}

/* arena_i8_binary's scalar loops over int8 or (u8, a constant) uint8 operands and output: the
 * same float arithmetic on the codes minus their zero points, so the same outputs either way. */
static inline __attribute__((always_inline)) void binary_loops(const int8_t *a, const int8_t *b, int8_t *y, uint32_t n,
                                                               uint32_t plane, int32_t a_zp, int32_t b_zp, float ra,
                                                               float rb, float rm, int is_add, const qpar_t *q,
                                                               const qpar_t *qm, float zf, int u8)
{
    uint32_t i, o, k;
    if (plane == 1u) {
        if (is_add) {
            for (i = 0; i < n; ++i) {
                int32_t u = at(a, i, u8) - a_zp, v = at(b, i, u8) - b_zp;
                y[i] = (int8_t)requant_f(ra * (float)u + rb * (float)v, q);
            }
        } else {
            for (i = 0; i < n; ++i) {
                int32_t u = at(a, i, u8) - a_zp, v = at(b, i, u8) - b_zp;
                y[i] = (int8_t)requant_f(rm * (float)(u * v) + zf, qm);
            }
        }
        return;
    }
    for (o = 0; o < n / plane; ++o, a += plane, y += plane) {
        int32_t v = at(b, o, u8) - b_zp;
        if (is_add) {
            float bv = rb * (float)v;
            for (k = 0; k < plane; ++k) {
                y[k] = (int8_t)requant_f(ra * (float)(at(a, k, u8) - a_zp) + bv, q);
            }
        } else {
            for (k = 0; k < plane; ++k) {
                y[k] = (int8_t)requant_f(rm * (float)((at(a, k, u8) - a_zp) * v) + zf, qm);
            }
        }
    }
}

int arena_i8_binary(const int8_t *a, const int8_t *b, int8_t *y, uint32_t n, uint32_t plane, int32_t a_zp,
                    int32_t b_zp, float ra, float rb, float rm, int is_add, int32_t y_zp, int32_t lo, int32_t hi, int u8)
{
    qpar_t q = qpar(y_zp, lo, hi), qm = qpar(0, lo, hi);
    float zf = (float)y_zp;
    /* Scaled by 2^16 > 255 * 255 and still finite: no product or sum below is inf, so none NaN. */
    if (!mult_ok(ra * 65536.0f) || !mult_ok(rb * 65536.0f) || !mult_ok(rm * 65536.0f) || plane == 0u) {
        return 0;
    }
#if defined(ARENA_MVE_F)
    binary_mve(a, b, y, n, plane, a_zp, b_zp, ra, rb, rm, is_add, is_add ? &q : &qm, zf, u8);
    return 1;
#endif
    if (u8) { /* uint8 codes: the scalar loops (the integer tables read int8) */
        binary_loops(a, b, y, n, plane, a_zp, b_zp, ra, rb, rm, is_add, &q, &qm, zf, 1);
        return 1;
    }
#if !ARENA_HAVE_FPU
    if (is_add && n >= 1024u && add_i(a, b, y, n, plane, a_zp, b_zp, ra, rb, &q)) {
        return 1;
    }
#endif
    binary_loops(a, b, y, n, plane, a_zp, b_zp, ra, rb, rm, is_add, &q, &qm, zf, 0);
    return 1;
}
