/* int8 x int8 fast paths of QLinearConv and QGemm, NCHW, weights in the model's order.
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
 * Only weight zero points 0 take these paths (every int8 model's weights are symmetric);
 * others run the reference loops of kernels_quant.c. */
#include <string.h>

#include "arena_kernels.h"

#if defined(__ARM_FEATURE_DSP)
#include <arm_acle.h>
#endif

/* Bytes of the stack buffer for im2col columns when the op has no workspace: at least
 * one pixel's column (kk bytes) must fit, else the reference loop runs. */
#define COL_STACK_BYTES 1024

/* --- requantization ------------------------------------------------------------ */

/* Output parameters shared by every channel: the zero point and the clamp [lo, hi], also
 * as the bounds [lo - zp, hi - zp] that rint(v) is clamped to before zp is added. */
typedef struct {
    int32_t zp, lo, hi, rl, rh;
    float fl, fh;
} qpar_t;

static qpar_t qpar(int32_t zp, int32_t lo, int32_t hi)
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
static int mult_ok(float mult)
{
    return mult == mult && mult - mult == 0.0f;
}

/* arena_q_bias_add, inline: bias + dot with int32 wraparound. */
static inline __attribute__((always_inline)) int32_t bias_add(int32_t bias, int32_t dot)
{
    uint32_t s = (uint32_t)bias + (uint32_t)dot;
    return s <= (uint32_t)INT32_MAX ? (int32_t)s : -(int32_t)(~s) - 1;
}

/* What requantizing one output channel needs. */
typedef struct {
    float mult;
    int32_t bias;
} chan_t;

static inline __attribute__((always_inline)) int8_t store(const qpar_t *q, const chan_t *ch, int32_t acc)
{
    return (int8_t)requant(bias_add(ch->bias, acc), ch->mult, q);
}

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
/* Bytes 0, 2 and 1, 3 of v as two pairs of signed halfwords, plus nz = (-zp, -zp). */
#define LO16(v, nz) ((uint32_t)__sxtab16((nz), (v)))
#define HI16(v, nz) sxtab16_ror8((nz), (v))
#define W_LO(v) ((uint32_t)__sxtb16(v))
#define W_HI(v) sxtb16_ror8(v)
#define MAC2(a, b, acc) __smlad((int32_t)(a), (int32_t)(b), (acc))
#endif

/* The dot products of weight rows w and w + K with columns x and x + K, each column
 * element minus zp: s[0] = w.x, s[1] = w.(x + K), s[2] = (w + K).x, s[3] = (w + K).(x + K).
 * Not inlined: its loop gets every register (4 sums, zp, 2 pointers, K, the end). */
static __attribute__((noinline)) void dot2x2(int32_t s[4], const int8_t *w, const int8_t *x, int32_t K, int32_t zp)
{
    int32_t s00 = 0, s01 = 0, s10 = 0, s11 = 0, k, n = K;
#if defined(__ARM_FEATURE_DSP)
    uint32_t nz = ((uint32_t)(-zp) & 0xFFFFu) * 0x10001u;
    const int8_t *end = x + (K & ~3);
/* One step of 4 taps at offset o: both columns against both rows. */
#define STEP2X2(o)                                                                                                  \
    do {                                                                                                            \
        uint32_t a = ld4(x + (o)), u = ld4(w + (o)), b, v, b0, b1, v0, v1;                                          \
        uint32_t a0 = LO16(a, nz), a1 = HI16(a, nz), u0 = W_LO(u), u1 = W_HI(u);                                    \
        s00 = MAC2(u0, a0, s00);                                                                                    \
        s00 = MAC2(u1, a1, s00);                                                                                    \
        b = ld4(x + K + (o));                                                                                       \
        b0 = LO16(b, nz);                                                                                           \
        b1 = HI16(b, nz);                                                                                           \
        s01 = MAC2(u0, b0, s01);                                                                                    \
        s01 = MAC2(u1, b1, s01);                                                                                    \
        v = ld4(w + K + (o));                                                                                       \
        v0 = W_LO(v);                                                                                               \
        v1 = W_HI(v);                                                                                               \
        s10 = MAC2(v0, a0, s10);                                                                                    \
        s10 = MAC2(v1, a1, s10);                                                                                    \
        s11 = MAC2(v0, b0, s11);                                                                                    \
        s11 = MAC2(v1, b1, s11);                                                                                    \
    } while (0)
    if (K & 4) {
        STEP2X2(0);
        x += 4;
        w += 4;
    }
    for (; x != end; x += 8, w += 8) {
        STEP2X2(0);
        STEP2X2(4);
    }
#undef STEP2X2
    n = K & 3;
#endif
    for (k = 0; k < n; ++k) {
        int32_t a = (int32_t)x[k] - zp, b = (int32_t)x[k + K] - zp, u = w[k], v = w[k + K];
        s00 += u * a;
        s01 += u * b;
        s10 += v * a;
        s11 += v * b;
    }
    s[0] = s00;
    s[1] = s01;
    s[2] = s10;
    s[3] = s11;
}

/* s[0] = w.x, s[1] = (w + K).x (x minus zp). */
static __attribute__((noinline)) void dot2x1(int32_t s[2], const int8_t *w, const int8_t *x, int32_t K, int32_t zp)
{
    int32_t s0 = 0, s1 = 0, k, n = K;
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

/* w.x (x minus zp). */
static int32_t dot1x1(const int8_t *w, const int8_t *x, int32_t K, int32_t zp)
{
    int32_t s = 0, k = 0;
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

/* --- QLinearConv ------------------------------------------------------------------ */

/* Per-channel requantization: the reference's mult = x_scale * w_scale[m] / y_scale, from
 * the operands read once per op. */
typedef struct {
    float xs, ys;
    const float *ws;
    uint32_t nws;
    const int32_t *bias; /* int32, one per channel (conv_dims checked), or NULL */
} cparams_t;

static cparams_t cparams(const arena_ctx_t *c)
{
    cparams_t p;
    p.xs = arena_q_scale(c, 1, 0);
    p.ys = arena_q_scale(c, 6, 0);
    p.ws = (const float *)arena_in_data(c, 4);
    p.nws = arena_in(c, 4)->elements;
    p.bias = arena_in(c, 8) != NULL ? (const int32_t *)arena_in_data(c, 8) : NULL;
    return p;
}

static chan_t chan(const cparams_t *p, int32_t m)
{
    chan_t ch;
    ch.mult = p->xs * p->ws[p->nws > 1u ? (uint32_t)m : 0u] / p->ys;
    ch.bias = p->bias != NULL ? p->bias[m] : 0;
    return ch;
}

/* Every weight zero point is 0 (absent, or all entries 0): their bytes OR-ed four at a time. */
static int w_zp_zero(const arena_ctx_t *c, int z)
{
    const arena_tensor_t *t = arena_in(c, z);
    const int8_t *d = (const int8_t *)arena_in_data(c, z);
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

/* Column bytes of a window inside the plane: per channel, KH rows of KW taps. Leaf
 * functions (not inlined), so their loops keep their variables in registers. */
static __attribute__((noinline)) int8_t *window(int8_t *col, const int8_t *xr, int32_t cg, int32_t plane,
                                                int32_t KH, int32_t KW, int32_t row, int32_t dw)
{
    int32_t ci, ky, kx;
    if (KW == 3 && dw == 1) {
        for (ci = 0; ci < cg; ++ci, xr += plane) {
            const int8_t *r = xr;
            for (ky = 0; ky < KH; ++ky, r += row, col += 3) {
                col[0] = r[0];
                col[1] = r[1];
                col[2] = r[2];
            }
        }
        return col;
    }
    for (ci = 0; ci < cg; ++ci, xr += plane) {
        const int8_t *r = xr;
        for (ky = 0; ky < KH; ++ky, r += row) {
            for (kx = 0; kx < KW; ++kx) {
                *col++ = r[kx * dw];
            }
        }
    }
    return col;
}

/* col[p][ci] = src[ci * plane + p] for np pixels, K = cg bytes a column: a 1x1 conv's
 * columns (stride 1, no padding), four channels a step. */
static __attribute__((noinline)) void slab(int8_t *col, const int8_t *src, int32_t cg, int32_t plane, int32_t np,
                                           int32_t K)
{
    int32_t ci = 0, p;
    for (; ci + 4 <= cg; ci += 4, src += 4 * plane) {
        const int8_t *s0 = src, *s1 = s0 + plane, *s2 = s1 + plane, *s3 = s2 + plane;
        int8_t *dst = col + ci;
        for (p = 0; p < np; ++p, dst += K) {
            dst[0] = s0[p];
            dst[1] = s1[p];
            dst[2] = s2[p];
            dst[3] = s3[p];
        }
    }
    for (; ci < cg; ++ci, src += plane) {
        int8_t *dst = col + ci;
        for (p = 0; p < np; ++p, dst += K) {
            *dst = src[p];
        }
    }
}

/* im2col of output pixels [p0, p0 + np) (flat over OH * OW) of image n, group g into
 * col[p][k]; taps in the padding hold x_zp. */
static void im2col(const int8_t *x, const arena_conv_dims_t *d, const arena_attrs_t *a, int32_t n, int32_t g,
                   int32_t p0, int32_t np, int8_t x_zp, int8_t *col)
{
    const int8_t *xg = x + (size_t)(n * d->c + g * d->cg) * (size_t)d->h * (size_t)d->w;
    int32_t plane = d->h * d->w, p, ci, ky, kx, oh, ow;
    int32_t KH = a->kernel[0], KW = a->kernel[1], dh = a->dilations[0], dw = a->dilations[1];
    if (KH == 1 && KW == 1 && a->strides[0] == 1 && a->strides[1] == 1 && a->pads[0] == 0 && a->pads[1] == 0
        && d->oh == d->h && d->ow == d->w) {
        slab(col, xg + p0, d->cg, plane, np, d->kk);
        return;
    }
    oh = p0 / d->ow;
    ow = p0 - oh * d->ow;
    for (p = 0; p < np; ++p) {
        int32_t ih0 = oh * a->strides[0] - a->pads[0], iw0 = ow * a->strides[1] - a->pads[1];
        if (ih0 >= 0 && ih0 + (KH - 1) * dh < d->h && iw0 >= 0 && iw0 + (KW - 1) * dw < d->w) {
            col = window(col, xg + ih0 * d->w + iw0, d->cg, plane, KH, KW, dh * d->w, dw);
        } else {
            for (ci = 0; ci < d->cg; ++ci) {
                const int8_t *xc = xg + (size_t)ci * (size_t)plane;
                for (ky = 0; ky < KH; ++ky) {
                    int32_t ih = ih0 + ky * dh;
                    for (kx = 0; kx < KW; ++kx) {
                        int32_t iw = iw0 + kx * dw;
                        *col++ = ih >= 0 && ih < d->h && iw >= 0 && iw < d->w ? xc[ih * d->w + iw] : x_zp;
                    }
                }
            }
        }
        if (++ow == d->ow) {
            ow = 0;
            ++oh;
        }
    }
}

/* Output channels [m0, m1) of group g over the np columns in col (pixels p0 ...). */
static void conv_gemm(const arena_ctx_t *c, const arena_conv_dims_t *d, const qpar_t *q, const cparams_t *cp,
                      int32_t n, int32_t m0, int32_t m1, int32_t p0, int32_t np, const int8_t *col, int32_t x_zp)
{
    const int8_t *w = (const int8_t *)arena_in_data(c, 3);
    int8_t *y = (int8_t *)arena_out_data(c, 0);
    size_t ohw = (size_t)d->oh * (size_t)d->ow, K = (size_t)d->kk;
    int32_t m, p, s[4];
    for (m = m0; m + 1 < m1; m += 2) {
        chan_t c0 = chan(cp, m), c1 = chan(cp, m + 1);
        const int8_t *w0 = w + (size_t)m * K;
        int8_t *y0 = y + (size_t)(n * d->m + m) * ohw + (size_t)p0, *y1 = y0 + ohw;
        for (p = 0; p + 1 < np; p += 2) {
            dot2x2(s, w0, col + (size_t)p * K, d->kk, x_zp);
            y0[p] = store(q, &c0, s[0]);
            y0[p + 1] = store(q, &c0, s[1]);
            y1[p] = store(q, &c1, s[2]);
            y1[p + 1] = store(q, &c1, s[3]);
        }
        if (p < np) {
            dot2x1(s, w0, col + (size_t)p * K, d->kk, x_zp);
            y0[p] = store(q, &c0, s[0]);
            y1[p] = store(q, &c1, s[1]);
        }
    }
    if (m < m1) {
        chan_t c0 = chan(cp, m);
        const int8_t *w0 = w + (size_t)m * K;
        int8_t *y0 = y + (size_t)(n * d->m + m) * ohw + (size_t)p0;
        for (p = 0; p < np; ++p) {
            y0[p] = store(q, &c0, dot1x1(w0, col + (size_t)p * K, d->kk, x_zp));
        }
    }
}

/* A conv that is not depthwise: im2col columns of as many pixels as the buffer (the
 * planned workspace when it holds a column, else COL_STACK_BYTES on the stack) holds, then the GEMM. 0 when not
 * even one column fits (the caller runs the reference loop). */
static int conv_im2col(const arena_ctx_t *c, const arena_conv_dims_t *d, const qpar_t *q)
{
    int8_t stack_col[COL_STACK_BYTES];
    const int8_t *x = (const int8_t *)arena_in_data(c, 0);
    int8_t *col = stack_col;
    uint32_t cap = COL_STACK_BYTES;
    int32_t x_zp = arena_q_zp(c, 2, 0), ohw = d->oh * d->ow, n, g, p0, chunk;
    cparams_t cp = cparams(c);
    if (c->op->workspace >= 0) {
        const arena_tensor_t *wst = &c->m->tensors[c->op->workspace];
        if (wst->dtype == ARENA_DT_INT8 && wst->elements >= (uint32_t)d->kk) {
            col = (int8_t *)arena_tensor_data(c->m, c->base, c->op->workspace);
            cap = wst->elements;
        }
    }
    if (d->kk < 1 || (uint32_t)d->kk > cap) {
        return 0;
    }
    chunk = (int32_t)(cap / (uint32_t)d->kk);
    for (n = 0; n < d->n; ++n) {
        for (g = 0; g < d->groups; ++g) {
            for (p0 = 0; p0 < ohw; p0 += chunk) {
                int32_t np = ohw - p0 < chunk ? ohw - p0 : chunk;
                im2col(x, d, &c->op->attrs, n, g, p0, np, (int8_t)x_zp, col);
                conv_gemm(c, d, q, &cp, n, g * d->mg, (g + 1) * d->mg, p0, np, col, x_zp);
            }
        }
    }
    return 1;
}

/* A block of depthwise outputs computed from a band (see dw_plane): nh rows of n outputs,
 * output (i, j) from the window at band + i * rstep + j * sw, rows width apart. */
typedef struct {
    const int8_t *band, *w; /* band; kernel KH x KW */
    int8_t *dst;            /* output (0, 0); rows dstride apart */
    int32_t width, n, nh, sw, rstep, dstride, kh, kw, dh, dwl;
    int32_t fold;           /* x_zp * sum(w): every tap is inside the band, padding = x_zp */
} dw_block_t;

#if defined(__ARM_FEATURE_DSP)
/* 3x3, no dilation: per kernel row one 32-bit load x0..x3, (x0, x2) . (w0, w2) by SMLAD and
 * x1 * w1 by SMLABB; at stride 1 the same load gives the next output too, (x1, x3) . (w0, w2)
 * and x2 * w1 (SMLATB). */
static __attribute__((noinline)) void dw3_block(const dw_block_t *b, const qpar_t *q, const chan_t *ch)
{
    uint32_t w02[3], w1[3];
    int32_t i, j, ky, W = b->width, n = b->n, sw = b->sw;
    for (ky = 0; ky < 3; ++ky) {
        w02[ky] = ((uint32_t)(uint16_t)b->w[3 * ky]) | ((uint32_t)(uint16_t)b->w[3 * ky + 2] << 16);
        w1[ky] = (uint32_t)(uint16_t)b->w[3 * ky + 1];
    }
    for (i = 0; i < b->nh; ++i) {
        const int8_t *r = b->band + i * b->rstep;
        int8_t *dst = b->dst + i * b->dstride;
        j = 0;
        if (sw == 1) {
            for (; j + 1 < n; j += 2, r += 2) {
                int32_t a0 = 0, a1 = 0;
                for (ky = 0; ky < 3; ++ky) {
                    uint32_t v = ld4(r + ky * W), lo = W_LO(v), hi = W_HI(v);
                    a0 = MAC2(lo, w02[ky], a0);
                    a0 = __smlabb((int32_t)hi, (int32_t)w1[ky], a0);
                    a1 = MAC2(hi, w02[ky], a1);
                    a1 = __smlatb((int32_t)lo, (int32_t)w1[ky], a1);
                }
                dst[j] = store(q, ch, a0 - b->fold);
                dst[j + 1] = store(q, ch, a1 - b->fold);
            }
        }
        for (; j < n; ++j, r += sw) {
            int32_t acc = 0;
            for (ky = 0; ky < 3; ++ky) {
                uint32_t v = ld4(r + ky * W);
                acc = MAC2(W_LO(v), w02[ky], acc);
                acc = __smlabb((int32_t)W_HI(v), (int32_t)w1[ky], acc);
            }
            dst[j] = store(q, ch, acc - b->fold);
        }
    }
}
#else
/* 3x3, no dilation, in C. */
static __attribute__((noinline)) void dw3_block(const dw_block_t *b, const qpar_t *q, const chan_t *ch)
{
    const int8_t *w = b->w;
    int32_t i, j;
    for (i = 0; i < b->nh; ++i) {
        const int8_t *r0 = b->band + i * b->rstep, *r1 = r0 + b->width, *r2 = r1 + b->width;
        int8_t *dst = b->dst + i * b->dstride;
        for (j = 0; j < b->n; ++j, r0 += b->sw, r1 += b->sw, r2 += b->sw) {
            int32_t acc = r0[0] * w[0] + r0[1] * w[1] + r0[2] * w[2] + r1[0] * w[3] + r1[1] * w[4] + r1[2] * w[5]
                          + r2[0] * w[6] + r2[1] * w[7] + r2[2] * w[8];
            dst[j] = store(q, ch, acc - b->fold);
        }
    }
}
#endif

/* Any kernel size and dilation. */
static __attribute__((noinline)) void dw_block(const dw_block_t *b, const qpar_t *q, const chan_t *ch)
{
    int32_t i, j, ky, kx;
    for (i = 0; i < b->nh; ++i) {
        for (j = 0; j < b->n; ++j) {
            const int8_t *r = b->band + i * b->rstep + j * b->sw;
            int32_t acc = 0;
            for (ky = 0; ky < b->kh; ++ky, r += b->dh * b->width) {
                for (kx = 0; kx < b->kw; ++kx) {
                    acc += (int32_t)r[kx * b->dwl] * (int32_t)b->w[ky * b->kw + kx];
                }
            }
            b->dst[i * b->dstride + j] = store(q, ch, acc - b->fold);
        }
    }
}

/* Bytes of the stack band a depthwise plane is computed from (padded input rows). */
#define DW_BAND_BYTES 1024

/* row[j] = srow[j0 + j] for j < width where that is inside [0, W), else zp. */
static void band_row(int8_t *row, const int8_t *srow, int32_t j0, int32_t width, int32_t W, int8_t zp)
{
    int32_t lo = j0 < 0 ? -j0 : 0, hi = W - j0 < width ? W - j0 : width;
    if (lo > width) {
        lo = width;
    }
    if (hi < lo) {
        hi = lo;
    }
    memset(row, zp, (size_t)lo);
    memcpy(row + lo, srow + j0 + lo, (size_t)(hi - lo));
    memset(row + hi, zp, (size_t)(width - hi));
}

/* How a depthwise conv's output splits into blocks whose band fits DW_BAND_BYTES: per_w
 * outputs a row (the band's width holds their windows plus 3 bytes: a 32-bit load past the
 * last window's start), per_h rows. per_w == 0: not even one window fits. */
typedef struct {
    int32_t per_w, per_h, span_w, span_h;
} dw_split_t;

static dw_split_t dw_split(const arena_conv_dims_t *d, const arena_attrs_t *a)
{
    dw_split_t t;
    int32_t width;
    t.span_w = (a->kernel[1] - 1) * a->dilations[1] + 1;
    t.span_h = (a->kernel[0] - 1) * a->dilations[0] + 1;
    width = DW_BAND_BYTES / t.span_h;
    t.per_w = width < t.span_w + 3 ? 0 : (width - t.span_w - 3) / a->strides[1] + 1;
    t.per_w = t.per_w < d->ow ? t.per_w : d->ow;
    width = (t.per_w - 1) * a->strides[1] + t.span_w + 3;
    t.per_h = t.per_w < 1 ? 0 : (DW_BAND_BYTES / width - t.span_h) / a->strides[0] + 1;
    t.per_h = t.per_h < d->oh ? t.per_h : d->oh;
    return t;
}

/* A depthwise plane: src (H x W, one channel) through kernel w (KH x KW) into dst
 * (OH x OW), block by block: the input rows and columns a block's windows read are copied
 * into the band with the padding filled with x_zp, so every window is inside the band and
 * its sum is sum(x * w) - x_zp * sum(w), without bounds checks. */
static void dw_plane(const int8_t *src, int8_t *dst, const int8_t *w, const arena_conv_dims_t *d,
                     const arena_attrs_t *a, const dw_split_t *t, int32_t x_zp, const qpar_t *q, const chan_t *ch)
{
    int8_t band[DW_BAND_BYTES];
    dw_block_t b;
    int32_t oh0, ow0, j, i, wsum = 0;
    int fast3 = a->kernel[0] == 3 && a->kernel[1] == 3 && a->dilations[0] == 1 && a->dilations[1] == 1;
    for (i = 0; i < a->kernel[0] * a->kernel[1]; ++i) {
        wsum += w[i];
    }
    b.band = band;
    b.w = w;
    b.sw = a->strides[1];
    b.dstride = d->ow;
    b.kh = a->kernel[0];
    b.kw = a->kernel[1];
    b.dh = a->dilations[0];
    b.dwl = a->dilations[1];
    b.fold = x_zp * wsum;
    for (ow0 = 0; ow0 < d->ow; ow0 += t->per_w) {
        b.n = d->ow - ow0 < t->per_w ? d->ow - ow0 : t->per_w;
        b.width = (b.n - 1) * b.sw + t->span_w + 3;
        b.rstep = a->strides[0] * b.width;
        for (oh0 = 0; oh0 < d->oh; oh0 += t->per_h) {
            int32_t ih0 = oh0 * a->strides[0] - a->pads[0];
            b.nh = d->oh - oh0 < t->per_h ? d->oh - oh0 : t->per_h;
            for (j = 0; j < (b.nh - 1) * a->strides[0] + t->span_h; ++j) {
                int32_t ih = ih0 + j;
                if (ih < 0 || ih >= d->h) {
                    memset(band + j * b.width, x_zp, (size_t)b.width);
                } else {
                    band_row(band + j * b.width, src + ih * d->w, ow0 * b.sw - a->pads[1], b.width, d->w,
                             (int8_t)x_zp);
                }
            }
            b.dst = dst + oh0 * d->ow + ow0;
            if (fast3) {
                dw3_block(&b, q, ch);
            } else {
                dw_block(&b, q, ch);
            }
        }
    }
}

/* A depthwise conv (group == C == M), in place through temp (one channel, copied
 * before its output is written: arena_dw_in_place) or from x directly (temp NULL). A
 * plane whose band is one block is all copied before any output is written: in place it
 * needs no temp. */
static void conv_depthwise(const arena_ctx_t *c, const arena_conv_dims_t *d, const qpar_t *q, int8_t *temp)
{
    const int8_t *x = (const int8_t *)arena_in_data(c, 0), *w = (const int8_t *)arena_in_data(c, 3);
    int8_t *y = (int8_t *)arena_out_data(c, 0);
    int32_t x_zp = arena_q_zp(c, 2, 0), taps = c->op->attrs.kernel[0] * c->op->attrs.kernel[1];
    size_t plane = (size_t)d->h * (size_t)d->w, oplane = (size_t)d->oh * (size_t)d->ow;
    size_t chans = (size_t)d->n * (size_t)d->c, i;
    dw_split_t t = dw_split(d, &c->op->attrs);
    cparams_t cp = cparams(c);
    if (t.per_w == d->ow && t.per_h == d->oh) {
        temp = NULL;
    }
    for (i = 0; i < chans; ++i) { /* increasing i: see arena_dw_in_place */
        int32_t m = (int32_t)(i % (size_t)d->c);
        chan_t ch = chan(&cp, m);
        const int8_t *src = x + i * plane;
        if (temp != NULL) {
            memcpy(temp, src, plane);
            src = temp;
        }
        dw_plane(src, y + i * oplane, w + (size_t)m * (size_t)taps, d, &c->op->attrs, &t, x_zp, q, &ch);
    }
}

int arena_i8_conv(const arena_ctx_t *c, const arena_conv_dims_t *d, int32_t lo, int32_t hi, void *dw_temp)
{
    qpar_t q = qpar(arena_q_zp(c, 7, 0), lo, hi);
    cparams_t cp;
    int32_t m;
    if (arena_in(c, 0)->dtype != ARENA_DT_INT8 || arena_in(c, 3)->dtype != ARENA_DT_INT8
        || arena_out(c, 0)->dtype != ARENA_DT_INT8 || !w_zp_zero(c, 5)) {
        return 0;
    }
    cp = cparams(c);
    for (m = 0; m < d->m; ++m) {
        if (!mult_ok(chan(&cp, m).mult)) {
            return 0;
        }
    }
    if (d->groups == d->c && d->m == d->c) {
        if (dw_split(d, &c->op->attrs).per_w == 0) {
            return 0;
        }
        conv_depthwise(c, d, &q, (int8_t *)dw_temp);
        return 1;
    }
    return conv_im2col(c, d, &q);
}

/* --- QLinearAdd, QLinearMul ------------------------------------------------------------ */

int arena_i8_binary(const int8_t *a, const int8_t *b, int8_t *y, uint32_t n, int32_t a_zp, int32_t b_zp, float ra,
                    float rb, float rm, int is_add, int32_t y_zp, int32_t lo, int32_t hi)
{
    qpar_t q = qpar(y_zp, lo, hi);
    uint32_t i;
    /* Scaled by 2^16 > 255 * 255 and still finite: no product or sum below is inf, so none NaN. */
    if (!mult_ok(ra * 65536.0f) || !mult_ok(rb * 65536.0f) || !mult_ok(rm * 65536.0f)) {
        return 0;
    }
    if (is_add) {
        for (i = 0; i < n; ++i) {
            int32_t u = (int32_t)a[i] - a_zp, v = (int32_t)b[i] - b_zp;
            y[i] = (int8_t)requant_f(ra * (float)u + rb * (float)v, &q);
        }
    } else {
        for (i = 0; i < n; ++i) {
            int32_t u = (int32_t)a[i] - a_zp, v = (int32_t)b[i] - b_zp;
            y[i] = (int8_t)requant_f(rm * (float)(u * v), &q);
        }
    }
    return 1;
}

/* --- QuantizeLinear ------------------------------------------------------------------- */

/* y = arena_q_round(x / scale, zp, lo, hi) per element, one scale and zero point; a NaN
 * gives lo there too. */
void arena_i8_quantize(const float *x, void *y, uint32_t n, float scale, int32_t zp, int32_t lo, int32_t hi)
{
    qpar_t q = qpar(zp, lo, hi);
    uint8_t *out = (uint8_t *)y;
    uint32_t i;
    for (i = 0; i < n; ++i) {
        float v = x[i] / scale;
        out[i] = (uint8_t)(v == v ? requant_f(v, &q) : lo);
    }
}

/* --- QGemm ---------------------------------------------------------------------------- */

/* What requantizing QGemm's outputs needs, the same for every output. */
typedef struct {
    const float *bs; /* B's scales, nbs of them (1 or N) */
    uint32_t nbs, sj; /* sj: the bias's stride per column */
    int32_t K, zp;    /* the rows' length, A's zero point */
    float ab, ys;     /* alpha * a_scale, y_scale (unused for a float32 output) */
    int quant_out;
    qpar_t q;
} fc_t;

/* acc times mult requantized to int8; a NaN product, from a non-finite multiplier, gives lo
 * as in arena_q_round (checking the product costs less than checking every multiplier
 * before the first output). */
static inline __attribute__((always_inline)) int8_t fc_q(int32_t acc, float mult, const qpar_t *q)
{
    float v = (float)acc * mult;
    return (int8_t)(v == v ? requant_f(v, q) : q->lo);
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
        ((int8_t *)Y)[yi + (uint32_t)t] = fc_q(acc, ab * *bs / ys, &q);
    }
}

/* The last one to three outputs of a row of Y. */
static __attribute__((noinline)) void fc_tail(const fc_t *f, void *Y, uint32_t yi, const int8_t *w, const int8_t *x,
                                              uint32_t j, const int32_t *cb, int32_t nj)
{
    int32_t s[3];
    if (nj >= 2) {
        dot2x1(s, w, x, f->K, f->zp);
    }
    if (nj != 2) {
        s[nj - 1] = dot1x1(w + (size_t)(nj - 1) * (size_t)f->K, x, f->K, f->zp);
    }
    fc_out(f, Y, yi, s, j, cb, nj);
}

/* Row x of A against every row of B: outputs Y[yi + j], j < N, four columns a step (cb:
 * the bias of column 0, or NULL). One call a row, the parameters in a local copy that no
 * output store can alias, so the loop keeps them in registers. */
static __attribute__((noinline)) void fc_row(const fc_t *f, void *Y, uint32_t yi, const int8_t *B, const int8_t *x,
                                             const int32_t *cb, int32_t N)
{
    fc_t g = *f;
    int32_t j, s[4];
    /* int8 output, per-column scales and a bias (every quantized dense layer): the four
     * outputs written out, without fc_out's loop and tests. */
    int common = g.quant_out && g.nbs > 1u && cb != NULL;
    for (j = 0; j + 4 <= N; j += 4) {
        dot4x1(s, B + (size_t)j * (size_t)g.K, x, g.K, g.zp);
        if (common) {
            int8_t *y = (int8_t *)Y + yi + (uint32_t)j;
            const float *bs = g.bs + j;
            const int32_t *cj = cb + (uint32_t)j * g.sj;
            y[0] = fc_q(bias_add(cj[0], s[0]), g.ab * bs[0] / g.ys, &g.q);
            y[1] = fc_q(bias_add(cj[g.sj], s[1]), g.ab * bs[1] / g.ys, &g.q);
            y[2] = fc_q(bias_add(cj[2u * g.sj], s[2]), g.ab * bs[2] / g.ys, &g.q);
            y[3] = fc_q(bias_add(cj[3u * g.sj], s[3]), g.ab * bs[3] / g.ys, &g.q);
        } else {
            fc_out(&g, Y, yi + (uint32_t)j, s, (uint32_t)j, cb != NULL ? cb + (uint32_t)j * g.sj : NULL, 4);
        }
    }
    if (j < N) {
        fc_tail(&g, Y, yi + (uint32_t)j, B + (size_t)j * (size_t)g.K, x, (uint32_t)j,
                cb != NULL ? cb + (uint32_t)j * g.sj : NULL, N - j);
    }
}

/* Y = A B^T for int8 A (M x K, rows contiguous) and B (N x K: transB), weight zero points
 * 0: rows of B in fours against each row of A (fc_row). scale_j, bias and output as
 * arena_k_qgemm. */
int arena_i8_qgemm(const arena_ctx_t *c, int32_t M, int32_t N, int32_t K, uint32_t si, uint32_t sj, int quant_out,
                   int32_t lo, int32_t hi)
{
    const arena_attrs_t *at = &c->op->attrs;
    const int8_t *A = (const int8_t *)arena_in_data(c, 0), *B = (const int8_t *)arena_in_data(c, 3);
    const int32_t *C = (const int32_t *)arena_in_data(c, 6);
    void *Yv = arena_out_data(c, 0);
    fc_t f;
    int32_t i;
    if (arena_in(c, 0)->dtype != ARENA_DT_INT8 || arena_in(c, 3)->dtype != ARENA_DT_INT8 || at->trans_a != 0
        || at->trans_b != 1 || !w_zp_zero(c, 5) || (quant_out && arena_out(c, 0)->dtype != ARENA_DT_INT8)) {
        return 0;
    }
    f.bs = (const float *)arena_in_data(c, 4);
    f.nbs = arena_in(c, 4)->elements;
    f.sj = sj;
    f.ab = at->alpha * arena_q_scale(c, 1, 0); /* the reference's alpha * a_scale * b_scale, same rounding */
    f.ys = 1.0f;
    f.quant_out = quant_out;
    f.q = qpar(0, lo, hi);
    f.K = K;
    f.zp = arena_q_zp(c, 2, 0);
    if (quant_out) {
        f.ys = arena_q_scale(c, 7, 0);
        f.q = qpar(arena_q_zp(c, 8, 0), lo, hi);
    }
    for (i = 0; i < M; ++i) {
        fc_row(&f, Yv, (uint32_t)i * (uint32_t)N, B, A + (size_t)i * (size_t)K, C != NULL ? C + (uint32_t)i * si : NULL,
               N);
    }
    return 1;
}
