/* Internal to the int8 fast paths (*_int8.c): their shared helpers, static inline.
 *
 * The int8 x int8 fast paths of QLinearConv and QGemm, NCHW, weights in the model's order.
 *
 * Every conv that is not depthwise runs as a GEMM: a few output pixels' im2col columns
 * (k = ci, ky, kx, as in the weights; taps in the padding hold x_zp) go into the planned
 * workspace or a small stack buffer, and each (output channel, pixel) is the dot product of
 * a weight row and a column, blocked 2 channels x 2 pixels. A depthwise conv runs one
 * plane at a time, the interior without bounds checks and the border through checked taps.
 *
 * Cores with the DSP extension (__ARM_FEATURE_DSP: Cortex-M4, M7, M33, M55) unpack four
 * bytes of a 32-bit load into two pairs of halfwords with SXTB16 (SXTAB16 subtracts the
 * input zero point in the same instruction) and do two multiply-accumulates per SMLAD; the
 * portable path (M0, M3, the host) does the same integer sums in plain C. QGemm's four-row
 * dot product is a Thumb-2 assembly function (arena_i8_dot4: its loop takes every
 * register). The sums are exact, so both give the same accumulators, and every output is
 * requantized once, with the float arithmetic of arena_q_round (onnxruntime's), so both
 * give the same codes.
 * uint8 activations and weight zero points other than 0 take the same paths, as gemmlowp and
 * CMSIS-NN fold them: a uint8 input's bytes are read as int8 after XOR 0x80 (b - 128, and its
 * zero point minus 128, so every x - zp is unchanged: the im2col columns, the depthwise band
 * and the dense row are copies anyway), a uint8 output stores the same byte as the int8 code
 * would (its range [0, 255] is in qpar); and with weight zero points wz, an accumulator
 * sum((x - xz) (w - wz)) is sum((x - xz) w) - wz * sum(x - xz), the per-pixel (per-row)
 * input sum computed once for every output channel (a depthwise kernel's w - wz fits its
 * int16 taps). uint8 weights run the reference loops of qlinear_conv_q8.c, qgemm_q8.c. */
#ifndef ARENA_SUPPORT_INT8_H
#define ARENA_SUPPORT_INT8_H

#include <string.h>

#include "arena_kernels.h"

#if defined(__ARM_FEATURE_DSP)
#include <arm_acle.h>
#endif

/* --- requantization ------------------------------------------------------------ */

/* Output parameters shared by every channel: the zero point and the clamp [lo, hi], also
 * as the bounds [lo - zp, hi - zp] that rint(v) is clamped to before zp is added. */
typedef struct {
    int32_t zp, lo, hi, rl, rh;
    float fl, fh;
} qpar_t;

static inline qpar_t qpar(int32_t zp, int32_t lo, int32_t hi)
{
    qpar_t q;
    q.zp = zp;
    q.lo = lo;
    q.hi = hi;
    q.rl = lo - zp;
    q.rh = hi - zp;
    q.fl = (float)q.rl;
    q.fh = (float)q.rh;
    return q;
}

/* arena_q_round(v, zp, lo, hi), inline (v = acc * mult for requant): the same
 * round-half-even, the same clamp (clamping rint(v) to integers equals clamping v first).
 * With a single-precision FPU one VCVTR rounds (the FPSCR's default mode, to nearest even)
 * and converts, saturating; v must be no NaN (the callers check that their multipliers
 * are finite: mult_ok).
 * Without one, v is clamped in float first (NaN gives lo, as in arena_q_round) and adding
 * 1.5 * 2^23 rounds it to an integer with ties to even, as arena_rintf. */
static inline __attribute__((always_inline)) int32_t requant_f(float v, const qpar_t *q)
{
#if defined(__arm__) && defined(__ARM_FP) && (__ARM_FP & 4)
    int32_t r;
    __asm__("vcvtr.s32.f32 %0, %0" : "+t"(v));
    memcpy(&r, &v, sizeof r);
    r = r > q->rl ? r : q->rl;
    r = r < q->rh ? r : q->rh;
    return r + q->zp;
#else
    v = v > q->fl ? v : q->fl;
    v = v < q->fh ? v : q->fh;
    v = (v + 12582912.0f) - 12582912.0f;
    return (int32_t)v + q->zp;
#endif
}

static inline __attribute__((always_inline)) int32_t requant(int32_t acc, float mult, const qpar_t *q)
{
    return requant_f((float)acc * mult, q);
}

/* A multiplier requant() takes: finite (any product with an int32 is then no NaN). */
static inline int mult_ok(float mult)
{
    return mult == mult && mult - mult == 0.0f;
}

/* mult_ok(mult) && mult >= 0 (or -0), from its bits: no soft-float compare calls without an FPU. */
static inline int mult_nonneg(float mult)
{
    uint32_t bits;
    memcpy(&bits, &mult, sizeof bits);
    return bits < 0x7F800000u || bits == 0x80000000u;
}

/* arena_q_bias_add, inline: bias + dot with int32 wraparound. */
static inline __attribute__((always_inline)) int32_t bias_add(int32_t bias, int32_t dot)
{
    uint32_t s = (uint32_t)bias + (uint32_t)dot;
    return s <= (uint32_t)INT32_MAX ? (int32_t)s : -(int32_t)(~s) - 1;
}

/* Whether this build has a single-precision FPU (else float arithmetic is soft-float calls).
 * A host build may set it to 0 to test the integer paths (tests/test_requant_nofpu.py). */
#ifndef ARENA_HAVE_FPU
#if defined(__ARM_FP) && (__ARM_FP & 4) || !defined(__arm__)
#define ARENA_HAVE_FPU 1
#else
#define ARENA_HAVE_FPU 0
#endif
#endif

/* What requantizing one output channel needs (wz: its weight zero point; without an FPU, for
 * requant_i: M and L, mult = M 2^(-L - 32 + 16) on its short path; mm, me: mult = mm * 2^me,
 * its significand and exponent, for requant_x). */
typedef struct {
    float mult;
    int32_t bias, wz;
#if !ARENA_HAVE_FPU
    int32_t M, L;
    uint32_t mm;
    int32_t me;
#endif
} chan_t;

#if !ARENA_HAVE_FPU
/* x / 2^s rounded half to even, 0 < s < 64. */
static inline __attribute__((always_inline)) uint64_t rne_shift(uint64_t x, int32_t s)
{
    uint64_t q = x >> s, r = x - (q << s), half = (uint64_t)1 << (s - 1);
    return q + (r > half || (r == half && (q & 1u)));
}

/* x rounded half to even to 24 significant bits: *e grows by the bits dropped. */
static inline __attribute__((always_inline)) uint64_t round24(uint64_t x, int32_t *e)
{
    int32_t n = x >> 32 ? 64 - __builtin_clz((uint32_t)(x >> 32)) : 32 - __builtin_clz((uint32_t)x);
    if (n > 24) {
        x = rne_shift(x, n - 24);
        *e += n - 24;
        if (x >> 24) { /* rounded up to 2^24 */
            x >>= 1;
            *e += 1;
        }
    }
    return x;
}

/* requant(acc, mult, q) without an FPU, in integers, to the same bits: (float)acc rounds |acc|
 * to 24 significant bits, the float product rounds acc * mm to 24 bits again, and rint rounds
 * that times 2^e to an integer, each half to even as the FPU does (a product below the normal
 * range is below 0.5 and gives 0 either way; one past 2^31 is past every clamp). The cores
 * without an FPU (Cortex-M0+, M3) would run the float version as soft-float calls. */
static __attribute__((noinline)) int32_t requant_x(int32_t acc, const chan_t *ch, const qpar_t *q)
{
    uint64_t a = acc < 0 ? (uint64_t)(-(int64_t)acc) : (uint64_t)acc, p;
    int32_t e = ch->me, r;
    if (a == 0u || ch->mm == 0u) {
        r = 0;
    } else {
        a = round24(a, &e);
        p = round24((uint64_t)(uint32_t)a * ch->mm, &e);
        if (e >= 0) {
            r = e > 7 || (p << e) > 0x7FFFFFFFu ? 0x7FFFFFFF : (int32_t)(p << e);
        } else {
            r = -e > 25 ? 0 : (int32_t)rne_shift(p, -e);
        }
        r = acc < 0 ? -r : r;
    }
    r = r > q->rl ? r : q->rl;
    r = r < q->rh ? r : q->rh;
    return r + q->zp;
}

/* requant_x's codes for an 8-bit output (|lo - zp|, |hi - zp| < 256), the short way: with
 * a = acc 2^L (no overflow, so |acc| < 2^24 and (float)acc is exact), the high word of the
 * signed product a * M is v = floor(acc * mult * 2^16) (L + t = me + 48, M = mm 2^t), one
 * SMULL. The float product's rounding to 24 bits moves acc * mult by at most 2^-16 while it is
 * below 256 (2^(8 - 24)), so rint gives floor((v + 2^15) / 2^16) unless v's fraction is within
 * one unit of one half, where requant_x decides (about 1 in 20,000 outputs); 256 or more is
 * past every clamp. About 14 instructions an output (the soft-float product and rint: some 150). */
static inline __attribute__((always_inline)) int32_t requant_i(int32_t acc, const chan_t *ch, const qpar_t *q)
{
    int32_t L = ch->L, a = (int32_t)((uint32_t)acc << L), v, r;
    if (a >> L != acc) {
        return requant_x(acc, ch, q);
    }
    v = (int32_t)((int64_t)a * ch->M >> 32) + 0x8000;
    if (((uint32_t)v << 16) + 0x10000u <= 0x20000u) { /* v's fraction 0x7FFF .. 0x8001 */
        return requant_x(acc, ch, q);
    }
    r = (v >> 16) + q->zp;
    r = r > q->lo ? r : q->lo;
    return r < q->hi ? r : q->hi;
}

/* ch's M, L, mm and me for requant_i from mult, a finite float >= 0. M = mm 2^t, L + t = me + 48
 * with t <= 7 (M < 2^31) and L >= 7 (a without overflow is below 2^31, so |acc| < 2^24): mult in
 * [2^-18, 2^14), every layer's. Outside it L = 31 and M = 0 (mult < 2^-18) or 2^31 - 1
 * (mult >= 2^14): every acc but 0 and -1 overflows to requant_x, and those two get its codes
 * (0; 0 or past the low clamp). */
static inline void chan_mult(chan_t *ch, float mult)
{
    uint32_t bits, e;
    int32_t s;
    memcpy(&bits, &mult, sizeof bits);
    e = bits >> 23 & 0xFFu;
    ch->mm = (bits & 0x7FFFFFu) | (e != 0u ? 0x800000u : 0u);
    ch->me = (int32_t)(e != 0u ? e : 1u) - 150;
    s = ch->me + 48;
    if (ch->mm == 0u) {
        ch->M = 0;
        ch->L = 7;
    } else if (s >= 14 && s <= 38) {
        ch->M = (int32_t)(ch->mm << 7);
        ch->L = s - 7;
    } else if (s >= 7 && s < 14) {
        ch->M = (int32_t)(ch->mm << (s - 7));
        ch->L = 7;
    } else {
        ch->M = s < 7 ? 0 : INT32_MAX;
        ch->L = 31;
    }
}
#endif

static inline __attribute__((always_inline)) int8_t store(const qpar_t *q, const chan_t *ch, int32_t acc)
{
#if ARENA_HAVE_FPU
    return (int8_t)requant(bias_add(ch->bias, acc), ch->mult, q);
#else
    return (int8_t)requant_i(bias_add(ch->bias, acc), ch, q);
#endif
}

#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 2) && ARENA_HAVE_FPU
#include <arm_mve.h>
/* store() of four accumulators to y[0 .. 4) in Helium's float lanes, to the same codes: bias b
 * added with int32 wraparound (VADD), converted and multiplied as (float)acc * mult is, rounded
 * half to even and saturated (VCVTN, as VCVTR under the FPSCR's default mode), clamped, zp
 * added, the low bytes stored (VSTRB.32; store4_p: the lanes on only). mult must be finite (mult_ok), as for store(). */
static inline __attribute__((always_inline)) int32x4_t requant4(const qpar_t *q, int32x4_t acc, int32_t b, float mult)
{
    int32x4_t r = vcvtnq_s32_f32(vmulq_n_f32(vcvtq_f32_s32(vaddq_n_s32(acc, b)), mult));
    return vaddq_n_s32(vminq_s32(vmaxq_s32(r, vdupq_n_s32(q->rl)), vdupq_n_s32(q->rh)), q->zp);
}
static inline __attribute__((always_inline)) void store4(int8_t *y, const qpar_t *q, int32x4_t acc, int32_t b,
                                                          float mult)
{
    vstrbq_s32(y, requant4(q, acc, b, mult));
}
static inline __attribute__((always_inline)) void store4_p(int8_t *y, const qpar_t *q, int32x4_t acc, int32_t b,
                                                            float mult, mve_pred16_t lanes)
{
    vstrbq_p_s32(y, requant4(q, acc, b, mult), lanes);
}
#define ARENA_MVE_F 1
#endif

/* --- dot products --------------------------------------------------------------- */

#if defined(__ARM_FEATURE_DSP)
static inline uint32_t ld4(const int8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4); /* one LDR: unaligned loads are allowed on these cores */
    return v;
}
/* Bytes 1, 3 of v as signed halfwords (plus nz's): SXTB16/SXTAB16 with ROR #8, which
 * GCC's ACLE intrinsics do not fold from a separate rotate. */
static inline uint32_t sxtb16_ror8(uint32_t v)
{
    uint32_t r;
    __asm__("sxtb16 %0, %1, ror #8" : "=r"(r) : "r"(v));
    return r;
}
static inline uint32_t sxtab16_ror8(uint32_t nz, uint32_t v)
{
    uint32_t r;
    __asm__("sxtab16 %0, %1, %2, ror #8" : "=r"(r) : "r"(nz), "r"(v));
    return r;
}
/* Bytes 1, 3 of v as unsigned halfwords: UXTB16 with ROR #8 (a uint8 input's bytes). */
static inline uint32_t uxtb16_ror8(uint32_t v)
{
    uint32_t r;
    __asm__("uxtb16 %0, %1, ror #8" : "=r"(r) : "r"(v));
    return r;
}
/* Bytes 1, 3 of v as unsigned halfwords plus nz's: UXTAB16 with ROR #8 (a uint8 input's bytes). */
static inline uint32_t uxtab16_ror8(uint32_t nz, uint32_t v)
{
    uint32_t r;
    __asm__("uxtab16 %0, %1, %2, ror #8" : "=r"(r) : "r"(nz), "r"(v));
    return r;
}
/* Bytes 0, 2 and 1, 3 of v as two pairs of signed halfwords, plus nz = (-zp, -zp). */
#define LO16(v, nz) ((uint32_t)__sxtab16((nz), (v)))
#define HI16(v, nz) sxtab16_ror8((nz), (v))
#define W_LO(v) ((uint32_t)__sxtb16(v))
#define W_HI(v) sxtb16_ror8(v)
#define MAC2(a, b, acc) __smlad((int32_t)(a), (int32_t)(b), (acc))
/* LO16, HI16 of an input word whose bytes are int8, or uint8 when u8 (a constant where inlined):
 * x - zp fits a halfword either way (UXTAB16 zero-extends), so uint8 needs no flip to int8. */
#define X_LO16(v, nz, u8) ((u8) ? (uint32_t)__uxtab16((nz), (v)) : LO16((v), (nz)))
#define X_HI16(v, nz, u8) ((u8) ? uxtab16_ror8((nz), (v)) : HI16((v), (nz)))
#endif

#if !defined(__ARM_FEATURE_DSP)
/* Without the DSP extension two 8-bit products share one multiply: a + a' 2^23 times w into a
 * 64-bit sum l + h 2^23 (SMLAL), split while |l| < 2^22 (conv_int8.c's dot2x2, depthwise_int8.c's
 * dw3_block): the low and the high sum. */
static inline int32_t lo23(int64_t a)
{
    return (int32_t)((uint32_t)a << 9) >> 9;
}
static inline int32_t hi23(int64_t a)
{
    return (int32_t)((a - lo23(a)) >> 23);
}
#endif

#if defined(__ARM_FEATURE_MVE)
/* Helium's dot products (mve_int8.c): the same sums as the scalar loops, any K. */
void arena_mve_dot2x2(int32_t s[4], const int8_t *w, const int8_t *x, int32_t K, int32_t zp);
void arena_mve_dot2x1(int32_t s[2], const int8_t *w, const int8_t *x, int32_t K, int32_t zp);
int32_t arena_mve_dot1x1(const int8_t *w, const int8_t *x, int32_t K, int32_t zp);
/* arena_mve_gemm_row's parameters (its assembly reads them at these offsets; w is its scratch). */
typedef struct {
    int32_t bias;       /* 0: the channel's bias (the row takes xzp * sum(w) off it, wrapping) */
    float mult;         /* 4 */
    int32_t zp, np, K;  /* 8, 12 (counted down), 16 */
    const int8_t *last; /* 20: the last column */
    int32_t rl, rh;     /* 24, 28: qpar_t's */
    const int8_t *w;    /* 32 */
    int32_t xzp;        /* 36: x's zero point */
    const int32_t *sums; /* 40: arena_mve_gemm_row_wz: the columns' sum(x - xzp), 4 read a step */
    int32_t nwz;        /* 44: arena_mve_gemm_row_wz: minus the row's weight zero point */
} mve_row_t;
void arena_mve_gemm_row(int8_t *y, const int8_t *w, const int8_t *x, mve_row_t *p);
void arena_mve_gemm_row_wz(int8_t *y, const int8_t *w, const int8_t *x, mve_row_t *p);
#endif

/* w.x (x minus zp). */
static inline int32_t dot1x1(const int8_t *w, const int8_t *x, int32_t K, int32_t zp)
{
    int32_t s = 0, k = 0;
#if defined(__ARM_FEATURE_MVE)
    return arena_mve_dot1x1(w, x, K, zp);
#endif
#if defined(__ARM_FEATURE_DSP)
    uint32_t nz = ((uint32_t)(-zp) & 0xFFFFu) * 0x10001u;
    int32_t q;
    for (q = K >> 2; q > 0; --q, x += 4, w += 4) {
        uint32_t a = ld4(x), u = ld4(w);
        s = MAC2(W_LO(u), LO16(a, nz), s);
        s = MAC2(W_HI(u), HI16(a, nz), s);
    }
    K &= 3;
#endif
    for (; k < K; ++k) {
        s += (int32_t)w[k] * ((int32_t)x[k] - zp);
    }
    return s;
}

#if defined(__ARM_FEATURE_DSP) && defined(__thumb2__)
/* fully_connected_int8.c's Thumb-2 assembly: s[r] = (w + r K).x over taps [0, K & ~3), x's bytes plus
 * nz's halfwords (-zp, -zp). */
void arena_i8_dot4(int32_t s[4], const int8_t *x, const int8_t *w, int32_t K, uint32_t nz);
#endif

/* s[r] = (w + r K).x for r < 4 (x minus zp): x unpacked once for four rows (arena_i8_dot4
 * on DSP cores, then the last K % 4 taps here). Inlined into fc_row, which requantizes the
 * four sums from registers. */
static inline __attribute__((always_inline)) void dot4x1(int32_t s[4], const int8_t *w, const int8_t *x, int32_t K,
                                                         int32_t zp)
{
    const int8_t *w2 = w + 2 * K;
    int32_t s0 = 0, s1 = 0, s2 = 0, s3 = 0, k = 0;
#if defined(__ARM_FEATURE_MVE)
    arena_mve_dot2x1(s, w, x, K, zp);
    arena_mve_dot2x1(s + 2, w2, x, K, zp);
    return;
#endif
#if defined(__ARM_FEATURE_DSP) && defined(__thumb2__)
    arena_i8_dot4(s, x, w, K, ((uint32_t)(-zp) & 0xFFFFu) * 0x10001u);
    s0 = s[0];
    s1 = s[1];
    s2 = s[2];
    s3 = s[3];
    k = K & ~3;
#endif
    for (; k < K; ++k) {
        int32_t a = (int32_t)x[k] - zp;
        s0 += (int32_t)w[k] * a;
        s1 += (int32_t)w[k + K] * a;
        s2 += (int32_t)w2[k] * a;
        s3 += (int32_t)w2[k + K] * a;
    }
    s[0] = s0;
    s[1] = s1;
    s[2] = s2;
    s[3] = s3;
}

/* Every byte of the 1-byte tensor t (data d) is 0, or t is absent: OR-ed four at a time. */
static inline int zeros(const arena_tensor_t *t, const void *data)
{
    const int8_t *d = (const int8_t *)data;
    uint32_t i = 0, n, any = 0u;
    if (t == NULL) {
        return 1;
    }
    n = t->elements;
    for (; n - i >= 4u; i += 4u) {
        uint32_t v;
        memcpy(&v, d + i, 4);
        any |= v;
    }
    for (; i < n; ++i) {
        any |= (uint8_t)d[i];
    }
    return any == 0u;
}

/* Every weight zero point (input z) is 0: absent, or all entries 0. */
static inline int w_zp_zero(const arena_ctx_t *c, int z)
{
    return zeros(arena_in(c, z), arena_in_data(c, z));
}

/* Per-channel requantization: the reference's mult = x_scale * w_scale[m] / y_scale, from
 * the operands read once per op. */
typedef struct {
    float xs, ys;
    const float *ws;
    uint32_t nws;
    const int32_t *bias; /* int32, one per channel (conv_dims checked), or NULL */
    const int8_t *wz;    /* the weight zero points, nwz of them (1 or M); NULL when all are 0 */
    uint32_t nwz;
    const float *mc;     /* every channel's mult computed once (arena_i8_conv without an FPU), or NULL */
} cparams_t;

static inline cparams_t cparams(const arena_ctx_t *c)
{
    cparams_t p;
    p.xs = arena_q_scale(c, 1, 0);
    p.ys = arena_q_scale(c, 6, 0);
    p.ws = (const float *)arena_in_data(c, 4);
    p.nws = arena_in(c, 4)->elements;
    p.bias = arena_in(c, 8) != NULL ? (const int32_t *)arena_in_data(c, 8) : NULL;
    p.wz = w_zp_zero(c, 5) ? NULL : (const int8_t *)arena_in_data(c, 5);
    p.nwz = p.wz != NULL ? arena_in(c, 5)->elements : 0u;
    p.mc = NULL;
    return p;
}

static inline chan_t chan(const cparams_t *p, int32_t m)
{
    chan_t ch;
    ch.mult = p->mc != NULL ? p->mc[m] : p->xs * p->ws[p->nws > 1u ? (uint32_t)m : 0u] / p->ys;
    ch.bias = p->bias != NULL ? p->bias[m] : 0;
    ch.wz = p->wz != NULL ? p->wz[p->nwz > 1u ? (uint32_t)m : 0u] : 0;
#if !ARENA_HAVE_FPU
    chan_mult(&ch, ch.mult); /* finite and > 0 (mult_ok, the lowering's scale check) */
#endif
    return ch;
}

/* Input x's zero point as its int8 bytes see it (*zp; minus 128 for uint8) and whether its
 * bytes are uint8 ones to flip (1), int8 (0), or neither (-1: no fast path). */
static inline int act_in(const arena_ctx_t *c, int x, int32_t *zp)
{
    uint8_t dt = arena_in(c, x)->dtype;
    *zp = arena_q_zp(c, x + 2, 0) - (dt == ARENA_DT_UINT8 ? 128 : 0);
    return dt == ARENA_DT_UINT8 ? 1 : dt == ARENA_DT_INT8 ? 0 : -1;
}

/* A uint8 output stores the byte of its code as an int8 one does (qpar's range is [0, 255]). */
static inline int q8_out(const arena_ctx_t *c)
{
    uint8_t dt = arena_out(c, 0)->dtype;
    return dt == ARENA_DT_INT8 || dt == ARENA_DT_UINT8;
}

/* p[i] ^= 0x80 for i < n, four bytes at a time: uint8 bytes b become the int8 bytes b - 128. */
static inline void flip_u8(int8_t *p, size_t n)
{
    size_t i = 0;
    for (; n - i >= 4u; i += 4u) {
        uint32_t v;
        memcpy(&v, p + i, 4);
        v ^= 0x80808080u;
        memcpy(p + i, &v, 4);
    }
    for (; i < n; ++i) {
        p[i] = (int8_t)((uint8_t)p[i] ^ 0x80u);
    }
}

/* dot_int8.c: s[0] = w.x, s[1] = (w + K).x (x minus zp); conv_int8.c and fully_connected_int8.c. */
void arena_i8_dot2x1(int32_t s[2], const int8_t *w, const int8_t *x, int32_t K, int32_t zp);
/* conv_int8.c: s[0] = w.x, s[1] = w.(x + K), s[2] = (w + K).x, s[3] = (w + K).(x + K) (x minus zp); its
 * GEMM's 2 x 2 block, and tfl_conv_int8.c's. */
void arena_i8_dot2x2(int32_t s[4], const int8_t *w, const int8_t *x, int32_t K, int32_t zp);

/* depthwise_int8.c: a depthwise conv (group == C, M a multiple of C) into output codes through q,
 * the input uint8 (u8) or int8 with int8-side zero point x_zp (act_in), mc: every channel's
 * multiplier or NULL (cparams_t); 0 when its window does not fit the stack band or its kernel
 * DW_TAPS (the caller runs the reference loop), else 1. */
int arena_i8_depthwise(const arena_ctx_t *c, const arena_conv_dims_t *d, const qpar_t *q, int8_t *temp, int u8,
                       int32_t x_zp, const float *mc);

#endif
