/* QGemm's int8 fast path (arena_i8_qgemm): Y = A B^T, four rows of B a step through
 * arena_i8_dot4 (Thumb-2 assembly) on DSP cores. A uint8 A's rows are flipped into a stack
 * row of FC_ROW_BYTES first (support_int8.h). No workspace. */
#include "support_int8.h"

/* Bytes of the stack copy of a uint8 row of A: a longer row runs the reference loop. */
#define FC_ROW_BYTES 1024

#if defined(__ARM_FEATURE_DSP) && defined(__thumb2__)
/* arena_i8_dot4(s, x, w, K, nz): s[r] = (w + r K).x over taps [0, K & ~3), x's bytes plus
 * nz's halfwords (-zp, -zp). Four rows, x unpacked once per 4 taps, 8 taps an iteration:
 * the loop needs 14 registers (4 sums; x, its end; rows 0 and 2, rows 1 and 3 addressed K
 * bytes past them; nz; 4 temporaries), every one the core has. GCC's allocation of the
 * same C spilled, and differed between -O2 and -Os; an inline asm statement with 14
 * operands does not compile when r7 holds the frame (-O0, -fno-omit-frame-pointer) or r9
 * the PIC base. So it is a function of its own, in its own section for --gc-sections.
 * r4-r7 sums, r1 x, r9 end, r2 row 0, r8 row 2, r3 K, r10 nz, r11/r12 x's bytes 0, 2 and
 * 1, 3, lr a row's word, r0 its other half (s is kept on the stack). */
#define DOT4_ROW(sum)                                                                                               \
    "sxtb16 r0, lr\n\t"                                                                                             \
    "smlad " sum ", r0, r11, " sum "\n\t"                                                                           \
    "sxtb16 lr, lr, ror #8\n\t"                                                                                     \
    "smlad " sum ", lr, r12, " sum "\n\t"
#define DOT4_STEP                                                                                                   \
    "ldr r11, [r1], #4\n\t"                                                                                         \
    "ldr lr, [r2, r3]\n\t"                                                                                          \
    "sxtab16 r12, r10, r11, ror #8\n\t"                                                                             \
    "sxtab16 r11, r10, r11\n\t" DOT4_ROW("r5") "ldr lr, [r2], #4\n\t" DOT4_ROW("r4") "ldr lr, [r8, r3]\n\t"        \
    DOT4_ROW("r7") "ldr lr, [r8], #4\n\t" DOT4_ROW("r6")
__asm__(".pushsection .text.arena_i8_dot4,\"ax\",%progbits\n\t"
        ".p2align 2\n\t"
        ".global arena_i8_dot4\n\t"
        ".type arena_i8_dot4, %function\n\t"
        ".thumb_func\n"
        "arena_i8_dot4:\n\t"
        "push {r0, r4, r5, r6, r7, r8, r9, r10, r11, lr}\n\t"
        "ldr r10, [sp, #40]\n\t"
        "add r8, r2, r3, lsl #1\n\t"
        "bic r9, r3, #7\n\t"
        "add r9, r1, r9\n\t"
        "movs r4, #0\n\t"
        "movs r5, #0\n\t"
        "movs r6, #0\n\t"
        "movs r7, #0\n\t"
        "cmp r1, r9\n\t"
        "beq 2f\n"
        "1:\n\t" DOT4_STEP DOT4_STEP "cmp r1, r9\n\t"
        "bne 1b\n"
        "2:\n\t"
        "tst r3, #4\n\t"
        "beq 3f\n\t" DOT4_STEP "3:\n\t"
        "pop {r0}\n\t"
        "stmia r0, {r4, r5, r6, r7}\n\t"
        "pop {r4, r5, r6, r7, r8, r9, r10, r11, pc}\n\t"
        ".size arena_i8_dot4, . - arena_i8_dot4\n\t"
        ".popsection");
#undef DOT4_ROW
#undef DOT4_STEP
#endif

/* What requantizing QGemm's outputs needs, the same for every output. */
typedef struct {
    const float *bs; /* B's scales, nbs of them (1 or N) */
    uint32_t nbs, sj; /* sj: the bias's stride per column */
    int32_t K, zp;    /* the rows' length, A's zero point (int8 side) */
    const int8_t *bz; /* B's zero points, nbz of them (1 or N); NULL when all are 0 */
    uint32_t nbz;
    int32_t xsum;     /* with bz: the row's sum(x - zp), which bz[j] times comes off column j */
    float ab, ys;     /* alpha * a_scale, y_scale (unused for a float32 output) */
    const float *mt;  /* int8 output: ab * b_scale[j] / ys per entry of B's scales, from the op's table
                       * (codegen's _qgemm_mults: every one finite), or NULL */
    int quant_out;
    qpar_t q;
} fc_t;

/* acc times mult requantized to int8; a NaN product, from a non-finite multiplier, gives lo
 * as in arena_q_round (checking the product costs less than checking every multiplier
 * before the first output). finite: mult is one of codegen's (fc_t.mt: all finite), so no
 * product is NaN and none is checked. */
static inline __attribute__((always_inline)) int8_t fc_q(int32_t acc, float mult, const qpar_t *q, int finite)
{
    float v;
#if !ARENA_HAVE_FPU
    uint32_t bits; /* a finite mult > 0 (any other: the float way): requant_i's integers */
    memcpy(&bits, &mult, sizeof bits);
    if (bits - 0x00800000u < 0x7F000000u) {
        chan_t ch;
        chan_mult(&ch, mult);
        return (int8_t)requant_i(acc, &ch, q);
    }
#endif
    v = (float)acc * mult;
    return (int8_t)(finite || v == v ? requant_f(v, q) : q->lo);
}

/* Outputs Y[yi + t] for t < nj (columns j + t): bias cb[t * sj] (cb NULL: none) plus the
 * sum s[t], times alpha * a_scale * b_scale[j + t] (divided by y_scale), requantized to
 * int8 (fc_q) or stored as float32. The parameters are copied to locals first (a byte
 * store may alias *f), so the loop keeps them in registers. */
static inline __attribute__((always_inline)) void fc_out(const fc_t *f, void *Y, uint32_t yi, const int32_t *s,
                                                         uint32_t j, const int32_t *cb, int32_t nj)
{
    const float *bs = f->nbs > 1u ? f->bs + j : f->bs;
    uint32_t bstep = f->nbs > 1u ? 1u : 0u, sj = f->sj;
    float ab = f->ab, ys = f->ys;
    qpar_t q = f->q;
    int32_t t;
    if (!f->quant_out) {
        for (t = 0; t < nj; ++t, bs += bstep) {
            int32_t acc = cb != NULL ? bias_add(cb[(uint32_t)t * sj], s[t]) : s[t];
            ((float *)Y)[yi + (uint32_t)t] = (float)acc * (ab * *bs);
        }
        return;
    }
    for (t = 0; t < nj; ++t, bs += bstep) {
        int32_t acc = cb != NULL ? bias_add(cb[(uint32_t)t * sj], s[t]) : s[t];
        if (f->mt != NULL) {
            ((int8_t *)Y)[yi + (uint32_t)t] = fc_q(acc, f->mt[(uint32_t)(bs - f->bs)], &q, 1);
        } else {
            ((int8_t *)Y)[yi + (uint32_t)t] = fc_q(acc, ab * *bs / ys, &q, 0);
        }
    }
}

/* s[t] -= bz[j + t] * xsum for t < nj: column j's weight zero point folded in. */
static inline __attribute__((always_inline)) void fc_fix(const fc_t *f, int32_t *s, uint32_t j, int32_t nj)
{
    int32_t t;
    for (t = 0; t < nj; ++t) {
        s[t] -= f->bz[f->nbz > 1u ? j + (uint32_t)t : 0u] * f->xsum;
    }
}

/* The last one to three outputs of a row of Y. */
static __attribute__((noinline)) void fc_tail(const fc_t *f, void *Y, uint32_t yi, const int8_t *w, const int8_t *x,
                                              uint32_t j, const int32_t *cb, int32_t nj)
{
    int32_t s[3];
    if (nj >= 2) {
        arena_i8_dot2x1(s, w, x, f->K, f->zp);
    }
    if (nj != 2) {
        s[nj - 1] = dot1x1(w + (size_t)(nj - 1) * (size_t)f->K, x, f->K, f->zp);
    }
    if (f->bz != NULL) {
        fc_fix(f, s, j, nj);
    }
    if (f->quant_out && f->nbs > 1u && cb != NULL && f->mt != NULL) { /* fc_row's common case */
        int8_t *y = (int8_t *)Y + yi;
        const qpar_t q = f->q;
        int32_t t;
        for (t = 0; t < nj; ++t) {
            y[t] = fc_q(bias_add(cb[(uint32_t)t * f->sj], s[t]), f->mt[j + (uint32_t)t], &q, 1);
        }
        return;
    }
    fc_out(f, Y, yi, s, j, cb, nj);
}

#if defined(ARENA_MVE_F)
/* fc_row on Helium for an int8/uint8 output with codegen's multipliers (mt, finite: no product
 * is NaN): four rows of B a step (the last step's rows past N read row N - 1 again), their sums
 * requantized in one vector: zero points' term, bias, (float) times the multiplier, VCVTN (round
 * half to even, saturating, as requant_f's VCVTR), clamp, zero point, the lanes before N stored. */
static __attribute__((noinline)) void fc_row_mve(const fc_t *f, int8_t *y, const int8_t *B, const int8_t *x,
                                                 const int32_t *cb, int32_t N)
{
    const int32_t K = f->K, zp = f->zp;
    const int32x4_t rl = vdupq_n_s32(f->q.rl), rh = vdupq_n_s32(f->q.rh), yz = vdupq_n_s32(f->q.zp);
    const int32x4_t bz = f->bz != NULL && f->nbz <= 1u ? vdupq_n_s32(f->bz[0] * f->xsum) : vdupq_n_s32(0);
    const float32x4_t m0 = vdupq_n_f32(f->mt[0]);
    const int32x4_t c0 = vdupq_n_s32(cb != NULL ? cb[0] : 0);
    const int bzs = f->bz != NULL && f->nbz > 1u, per_col = f->nbs > 1u, bias_col = cb != NULL && f->sj != 0u;
    int32_t j, s[4] = {0, 0, 0, 0};
    for (j = 0; j < N; j += 4) {
        const int8_t *w = B + (size_t)j * (size_t)K;
        const int32_t n = N - j;
        const mve_pred16_t p = vctp32q((uint32_t)n);
        int32x4_t acc;
        float32x4_t v;
        if (n >= 4) {
            dot4x1(s, w, x, K, zp);
        } else {
            if (n >= 2) {
                arena_mve_dot2x1(s, w, x, K, zp);
            }
            if (n != 2) {
                s[n - 1] = arena_mve_dot1x1(w + (size_t)(n - 1) * (size_t)K, x, K, zp);
            }
        }
        acc = vsubq_s32(vldrwq_s32(s), bz);
        if (bzs) {
            acc = vsubq_s32(acc, vmulq_n_s32(vldrbq_z_s32(f->bz + j, p), f->xsum));
        }
        acc = vaddq_s32(acc, bias_col ? vldrwq_z_s32(cb + j, p) : c0);
        v = vmulq_f32(vcvtq_f32_s32(acc), per_col ? vldrwq_z_f32(f->mt + j, p) : m0);
        acc = vaddq_s32(vminq_s32(vmaxq_s32(vcvtnq_s32_f32(v), rl), rh), yz);
        vstrbq_p_s32(y + j, acc, p);
    }
}
#endif

#if defined(__ARM_FEATURE_DSP) && defined(__ARM_FP) && (__ARM_FP & 4) && !defined(ARENA_MVE_F) && !defined(__OPTIMIZE_SIZE__)
#define FC_SAT 1
/* requant_f's codes for an output whose clamp is its dtype's whole range (no fused activation):
 * VCVTR, then the zero point added saturating and the byte saturated in one SSAT (a uint8
 * output's as the int8 byte of code - 128: zq = zp - 128, flip 0x80). mult finite (codegen's). */
static inline __attribute__((always_inline)) int8_t fc_qs(int32_t acc, float mult, int32_t zq, uint32_t flip)
{
    float v = (float)acc * mult;
    int32_t r;
    __asm__("vcvtr.s32.f32 %0, %0" : "+t"(v));
    memcpy(&r, &v, sizeof r);
    return (int8_t)((uint32_t)__ssat(__qadd(r, zq), 8) ^ flip);
}

/* fc_row for that output, codegen's multipliers per column and a bias per column (every
 * quantized dense head): four rows a step through dot4x1, each output 12 instructions. */
static __attribute__((noinline)) void fc_row_sat(const fc_t *f, int8_t *y, const int8_t *B, const int8_t *x,
                                                 const int32_t *cb, int32_t N)
{
    const int32_t K = f->K, zp = f->zp;
    const float *const mt = f->mt;
    const uint32_t flip = f->q.lo == 0 ? 0x80u : 0u;
    const int32_t zq = f->q.zp - (int32_t)flip;
    int32_t j, t, s[4];
    for (j = 0; j < N; j += 4) {
        const int8_t *w = B + (size_t)j * (size_t)K;
        const int32_t n = N - j < 4 ? N - j : 4;
        if (n == 4) {
            dot4x1(s, w, x, K, zp);
        } else {
            if (n >= 2) {
                arena_i8_dot2x1(s, w, x, K, zp);
            }
            if (n != 2) {
                s[n - 1] = dot1x1(w + (size_t)(n - 1) * (size_t)K, x, K, zp);
            }
        }
        if (f->bz != NULL) {
            fc_fix(f, s, (uint32_t)j, n);
        }
        for (t = 0; t < n; ++t) {
            y[j + t] = fc_qs(bias_add(cb[j + t], s[t]), mt[j + t], zq, flip);
        }
    }
}
#endif

/* Row x of A against every row of B: outputs Y[yi + j], j < N, four columns a step (cb:
 * the bias of column 0, or NULL). One call a row, the parameters the loop uses in locals that
 * no output store can alias, so it keeps them in registers. */
static __attribute__((noinline)) void fc_row(const fc_t *f, void *Y, uint32_t yi, const int8_t *B, const int8_t *x,
                                             const int32_t *cb, int32_t N)
{
    const int32_t K = f->K, zp = f->zp;
    const uint32_t sj = f->sj;
    const float *const mt = f->mt;
    const qpar_t q = f->q;
    const int asym = f->bz != NULL;
    int32_t j, s[4];
    /* int8 output, per-column multipliers and a bias (every quantized dense layer): the four
     * outputs written out, without fc_out's loop and tests. */
    const int common = f->quant_out && f->nbs > 1u && cb != NULL && mt != NULL;
#if defined(ARENA_MVE_F)
    if (f->quant_out && mt != NULL && f->sj <= 1u) {
        fc_row_mve(f, (int8_t *)Y + yi, B, x, cb, N);
        return;
    }
#elif defined(FC_SAT)
    if (common && sj == 1u && ((q.lo == -128 && q.hi == 127) || (q.lo == 0 && q.hi == 255))) {
        fc_row_sat(f, (int8_t *)Y + yi, B, x, cb, N);
        return;
    }
#endif
    for (j = 0; j + 4 <= N; j += 4) {
        dot4x1(s, B + (size_t)j * (size_t)K, x, K, zp);
        if (asym) {
            fc_fix(f, s, (uint32_t)j, 4);
        }
        if (common) {
            int8_t *y = (int8_t *)Y + yi + (uint32_t)j;
            const float *m = mt + j;
            const int32_t *cj = cb + (uint32_t)j * sj;
            y[0] = fc_q(bias_add(cj[0], s[0]), m[0], &q, 1);
            y[1] = fc_q(bias_add(cj[sj], s[1]), m[1], &q, 1);
            y[2] = fc_q(bias_add(cj[2u * sj], s[2]), m[2], &q, 1);
            y[3] = fc_q(bias_add(cj[3u * sj], s[3]), m[3], &q, 1);
        } else {
            fc_out(f, Y, yi + (uint32_t)j, s, (uint32_t)j, cb != NULL ? cb + (uint32_t)j * sj : NULL, 4);
        }
    }
    if (j < N) {
        fc_tail(f, Y, yi + (uint32_t)j, B + (size_t)j * (size_t)K, x, (uint32_t)j,
                cb != NULL ? cb + (uint32_t)j * sj : NULL, N - j);
    }
}

/* row[k] = x[k] ^ 0x80 for k < K (uint8 bytes b as the int8 bytes b - 128), four a step. */
static void flip_copy(int8_t *row, const int8_t *x, int32_t K)
{
    int32_t k = 0;
    for (; K - k >= 4; k += 4) {
        uint32_t v;
        memcpy(&v, x + k, 4);
        v ^= 0x80808080u;
        memcpy(row + k, &v, 4);
    }
    for (; k < K; ++k) {
        row[k] = (int8_t)((uint8_t)x[k] ^ 0x80u);
    }
}

/* The sum of x's K int8 codes: four a USADA8 on DSP cores (the bytes plus 128, after XOR 0x80). */
static int32_t row_sum(const int8_t *x, int32_t K)
{
    int32_t k = 0, s = 0;
#if defined(__ARM_FEATURE_DSP)
    uint32_t u = 0u;
    for (; K - k >= 4; k += 4) {
        u = __usada8(ld4(x + k) ^ 0x80808080u, 0u, u);
    }
    s = (int32_t)u - 128 * k;
#endif
    for (; k < K; ++k) {
        s += x[k];
    }
    return s;
}

/* Y = A B^T for int8 or uint8 A (M x K, rows contiguous) and int8 B (N x K: transB), any
 * zero points: rows of B in fours against each row of A (fc_row). scale_j, bias and output
 * as arena_k_qgemm, the operands as it looked them up (g). */
int arena_i8_qgemm(const arena_ctx_t *c, const arena_qgemm_t *g)
{
    const arena_attrs_t *at = c->op->attrs;
    const int8_t *A = (const int8_t *)g->d[0], *B = (const int8_t *)g->d[3];
    const int32_t *C = (const int32_t *)g->d[6];
    uint8_t dt = g->t[0]->dtype;
    int8_t row[FC_ROW_BYTES];
    fc_t f;
    int32_t i, M = g->M, N = g->N, K = g->K;
    int u8 = dt == ARENA_DT_UINT8 ? 1 : dt == ARENA_DT_INT8 ? 0 : -1;
    if (u8 < 0 || g->t[3]->dtype != ARENA_DT_INT8 || at->trans_a != 0 || at->trans_b != 1 || (u8 && K > FC_ROW_BYTES)) {
        return 0;
    }
    f.zp = g->a_zp - (u8 ? 128 : 0); /* as A's bytes read as int8 see it */
    f.bz = zeros(g->t[5], g->d[5]) ? NULL : (const int8_t *)g->d[5];
    f.nbz = f.bz != NULL ? g->t[5]->elements : 0u;
    f.xsum = 0;
    f.bs = (const float *)g->d[4];
    f.nbs = g->t[4]->elements;
    f.sj = g->sj;
    f.ab = at->alpha * g->a_scale; /* the reference's alpha * a_scale * b_scale, same rounding */
    f.ys = g->quant_out ? g->y_scale : 1.0f;
    f.quant_out = g->quant_out;
    f.mt = g->quant_out && at->floats != NULL && at->n_floats == f.nbs ? at->floats : NULL;
    f.q = qpar(g->quant_out ? g->y_zp : 0, g->lo, g->hi);
    f.K = K;
    for (i = 0; i < M; ++i) {
        const int8_t *x = A + (size_t)i * (size_t)K;
        if (u8) {
            flip_copy(row, x, K);
            x = row;
        }
        if (f.bz != NULL) {
            f.xsum = row_sum(x, K) - K * f.zp;
        }
        fc_row(&f, g->y, (uint32_t)i * (uint32_t)N, B, x, C != NULL ? C + (uint32_t)i * g->si : NULL, N);
    }
    return 1;
}
