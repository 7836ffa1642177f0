/* float32 kernels (and the few integer cases that only compare or copy:
 * Identity, integer Relu/Clip, MaxPool, GlobalMaxPool, Concat). NCHW layout;
 * 1-D spatial ops (rank-3 tensors) run as H = 1.
 * Element-wise kernels read element i before writing element i, so they are
 * correct when the output shares its input's bytes (planned in-place ops).
 * Every kernel checks its tensors' types and shapes before touching memory. */
#include <string.h>

#include "arena_kernels.h"

#define FLT_BIG 3.402823466e38f
#define MAX_OPERANDS 8 /* inputs of a variadic element-wise op (Add, Mul, Max, Min) */

/* --- helpers ------------------------------------------------------------ */

static float abs_f(float v)
{
    return v < 0.0f ? -v : v;
}

/* N, C, H, W of a rank-3 or rank-4 tensor. */
static int nchw(const arena_tensor_t *t, int32_t d[4])
{
    if (t->rank == 4) {
        d[0] = t->shape[0];
        d[1] = t->shape[1];
        d[2] = t->shape[2];
        d[3] = t->shape[3];
        return 0;
    }
    if (t->rank == 3) {
        d[0] = t->shape[0];
        d[1] = t->shape[1];
        d[2] = 1;
        d[3] = t->shape[2];
        return 0;
    }
    return -1;
}


static int is_f32(const arena_tensor_t *t)
{
    return t != NULL && t->dtype == ARENA_DT_FLOAT32;
}

/* A compensated (Neumaier) running sum: long reductions (a whole feature map)
 * stay as accurate as onnxruntime's vectorized sums. */
typedef struct {
    float sum, comp;
} fsum_t;

static void fsum_add(fsum_t *s, float v)
{
    float t = s->sum + v;
    s->comp += abs_f(s->sum) >= abs_f(v) ? (s->sum - t) + v : (v - t) + s->sum;
    s->sum = t;
}

/* An index over an output shape with, per operand, an offset kept in step:
 * numpy broadcasting (stride 0 along a broadcast dim). */
typedef struct {
    int rank, n;
    int32_t dims[ARENA_MAX_RANK], idx[ARENA_MAX_RANK];
    uint32_t stride[MAX_OPERANDS][ARENA_MAX_RANK];
    uint32_t offset[MAX_OPERANDS];
} bcast_t;

static void bcast_init(bcast_t *b, const int32_t *dims, int rank)
{
    int d, k;
    b->rank = rank;
    b->n = 0;
    for (d = 0; d < rank; ++d) {
        b->dims[d] = dims[d];
        b->idx[d] = 0;
    }
    for (k = 0; k < MAX_OPERANDS; ++k) {
        b->offset[k] = 0u;
    }
}

/* Add an operand of shape tdims[0..trank) whose elements come `unit` apart
 * (right-aligned against the walk's dims). -1 when it does not broadcast. */
static int bcast_add(bcast_t *b, const int32_t *tdims, int trank, uint32_t unit)
{
    int d, off = b->rank - trank, k = b->n;
    uint32_t acc = unit;
    if (off < 0 || k >= MAX_OPERANDS) {
        return -1;
    }
    for (d = b->rank - 1; d >= 0; --d) {
        int32_t td = d >= off ? tdims[d - off] : 1;
        if (td != 1 && td != b->dims[d]) {
            return -1;
        }
        b->stride[k][d] = td == 1 ? 0u : acc;
        acc *= (uint32_t)td;
    }
    b->n = k + 1;
    return 0;
}

static void bcast_next(bcast_t *b)
{
    int d, k;
    for (d = b->rank - 1; d >= 0; --d) {
        for (k = 0; k < b->n; ++k) {
            b->offset[k] += b->stride[k][d];
        }
        if (++b->idx[d] < b->dims[d]) {
            return;
        }
        for (k = 0; k < b->n; ++k) {
            b->offset[k] -= b->stride[k][d] * (uint32_t)b->dims[d];
        }
        b->idx[d] = 0;
    }
}

/* --- Identity (Reshape, Flatten, Squeeze, Unsqueeze, Dropout) ------------- */

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

/* --- blocked arithmetic: the GEMM and conv tiles ------------------------------------------- */

/* acc += a * b. Where the FPU has a fused multiply-add (VFMA: Cortex-M4F, M7, M33, M55) it is one
 * instruction at every optimisation level: -std=c99 forbids contracting a * b + acc, and -O2
 * would then split it into VMUL and VADD on a Cortex-M7. */
#if defined(__ARM_FEATURE_FMA) && defined(__ARM_FP) && (__ARM_FP & 4)
#define MAC(acc, a, b) ((acc) = __builtin_fmaf((a), (b), (acc)))
#else
#define MAC(acc, a, b) ((acc) += (a) * (b))
#endif

/* The tiles stay functions of their own: inlined into a kernel's body, -Os keeps their pointers
 * on the stack (a load and a store around every load of the hot loop). */
#if defined(__GNUC__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE
#endif

#define MAC4(c0, c1, c2, c3, u, v0, v1, v2, v3) \
    do { MAC(c0, u, v0); MAC(c1, u, v1); MAC(c2, u, v2); MAC(c3, u, v3); } while (0)

static int32_t min_i32(int32_t a, int32_t b)
{
    return a < b ? a : b;
}

/* Stores a tile row: the first n of four values. */
static void put4(float *y, int32_t n, float v0, float v1, float v2, float v3)
{
    y[0] = v0;
    if (n > 1) {
        y[1] = v1;
    }
    if (n > 2) {
        y[2] = v2;
    }
    if (n > 3) {
        y[3] = v3;
    }
}

/* A 4 x 4 output tile: y[i * ldy + j] = c[i] + sum_k a[i][k] * b[k * ldb + j] for the first `rows`
 * rows (a[i]: rows contiguous along k; rows past `rows` repeat the last and are not stored). The 16
 * sums stay in registers, so each value loaded feeds four multiply-adds. */
static NOINLINE void tile_4x4(const float *const a[4], const float *b, int32_t ldb, int32_t K, const float c[4], float *y,
                     int32_t ldy, int32_t rows)
{
    const float *a0 = a[0], *a1 = a[1], *a2 = a[2], *a3 = a[3];
    float c00 = c[0], c01 = c[0], c02 = c[0], c03 = c[0], c10 = c[1], c11 = c[1], c12 = c[1], c13 = c[1];
    float c20 = c[2], c21 = c[2], c22 = c[2], c23 = c[2], c30 = c[3], c31 = c[3], c32 = c[3], c33 = c[3];
    int32_t k;
    for (k = K; k > 0; --k) {
        float v0 = b[0], v1 = b[1], v2 = b[2], v3 = b[3], u;
        b += ldb;
        u = *a0++;
        MAC4(c00, c01, c02, c03, u, v0, v1, v2, v3);
        u = *a1++;
        MAC4(c10, c11, c12, c13, u, v0, v1, v2, v3);
        u = *a2++;
        MAC4(c20, c21, c22, c23, u, v0, v1, v2, v3);
        u = *a3++;
        MAC4(c30, c31, c32, c33, u, v0, v1, v2, v3);
    }
    put4(y, 4, c00, c01, c02, c03);
    if (rows > 1) {
        put4(y + ldy, 4, c10, c11, c12, c13);
    }
    if (rows > 2) {
        put4(y + 2 * ldy, 4, c20, c21, c22, c23);
    }
    if (rows > 3) {
        put4(y + 3 * ldy, 4, c30, c31, c32, c33);
    }
}

/* One row by a 4-wide panel: y[j] = c + sum_k a[k] * b[k * ldb + j], for the first n (<= 4) columns
 * (the panel then has only n columns: no column past them is read). */
static NOINLINE void tile_1x4(const float *a, const float *b, int32_t ldb, int32_t K, float c, float *y, int32_t n)
{
    float c0 = c, c1 = c, c2 = c, c3 = c;
    int32_t k;
    if (n == 4) {
        for (k = K; k > 0; --k) {
            float u = *a++;
            MAC4(c0, c1, c2, c3, u, b[0], b[1], b[2], b[3]);
            b += ldb;
        }
    } else {
        for (k = K; k > 0; --k) {
            float u = *a++;
            MAC(c0, u, b[0]);
            if (n > 1) {
                MAC(c1, u, b[1]);
            }
            if (n > 2) {
                MAC(c2, u, b[2]);
            }
            b += ldb;
        }
    }
    put4(y, n, c0, c1, c2, c3);
}

/* Four dot products with one vector: out[i] = c[i] + sum_k p[i][k] * q[k * qs] (p[i] contiguous). */
static NOINLINE void dot_4(const float *const p[4], const float *q, int32_t qs, int32_t K, const float c[4], float out[4])
{
    const float *p0 = p[0], *p1 = p[1], *p2 = p[2], *p3 = p[3];
    float c0 = c[0], c1 = c[1], c2 = c[2], c3 = c[3];
    int32_t k = K;
    if (qs == 1) {
        for (; k >= 4; k -= 4) {
            float v0 = q[0], v1 = q[1], v2 = q[2], v3 = q[3];
            q += 4;
            MAC(c0, p0[0], v0); MAC(c0, p0[1], v1); MAC(c0, p0[2], v2); MAC(c0, p0[3], v3);
            MAC(c1, p1[0], v0); MAC(c1, p1[1], v1); MAC(c1, p1[2], v2); MAC(c1, p1[3], v3);
            MAC(c2, p2[0], v0); MAC(c2, p2[1], v1); MAC(c2, p2[2], v2); MAC(c2, p2[3], v3);
            MAC(c3, p3[0], v0); MAC(c3, p3[1], v1); MAC(c3, p3[2], v2); MAC(c3, p3[3], v3);
            p0 += 4;
            p1 += 4;
            p2 += 4;
            p3 += 4;
        }
    }
    for (; k > 0; --k) {
        float v = *q;
        q += qs;
        MAC(c0, *p0++, v);
        MAC(c1, *p1++, v);
        MAC(c2, *p2++, v);
        MAC(c3, *p3++, v);
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

/* Y[m * ldy + n] = bias[m] + sum_k A[m * lda + k] * B[k * ldb + n] (m < M, n < N, k < K; bias NULL:
 * 0), in 4 x 4 register tiles. Y is none of A, B and bias. */
static void gemm_nn(const float *A, int32_t lda, const float *B, int32_t ldb, const float *bias, float *Y,
                    int32_t ldy, int32_t M, int32_t N, int32_t K)
{
    int32_t m, n, i;
    for (m = 0; m < M; m += 4) {
        int32_t rows = min_i32(4, M - m);
        const float *a[4];
        float c[4], out[4];
        float *y = Y + (size_t)m * (size_t)ldy;
        for (i = 0; i < 4; ++i) {
            int32_t r = m + min_i32(i, rows - 1);
            a[i] = A + (size_t)r * (size_t)lda;
            c[i] = bias != NULL ? bias[r] : 0.0f;
        }
        if (rows == 1) {
            for (n = 0; n < N; n += 4) {
                tile_1x4(a[0], B + n, ldb, K, c[0], y + n, min_i32(4, N - n));
            }
            continue;
        }
        for (n = 0; n + 4 <= N; n += 4) {
            tile_4x4(a, B + n, ldb, K, c, y + n, ldy, rows);
        }
        for (; n < N; ++n) {
            dot_4(a, B + n, ldb, K, c, out);
            for (i = 0; i < rows; ++i) {
                y[(size_t)i * (size_t)ldy + (size_t)n] = out[i];
            }
        }
    }
}

/* The output extent of a window sliding over `in` (pads, stride, dilation). */
static int32_t window_out(int32_t in, int32_t pad0, int32_t pad1, int32_t k, int32_t stride, int32_t dil)
{
    int32_t span = in + pad0 + pad1 - dil * (k - 1) - 1;
    return span < 0 ? 0 : span / stride + 1;
}

/* The spatial attributes are usable: kernel, strides, dilations >= 1, pads >= 0. */
static int spatial_ok(const arena_attrs_t *a)
{
    int i;
    for (i = 0; i < 2; ++i) {
        if (a->kernel[i] < 1 || a->strides[i] < 1 || a->dilations[i] < 1) {
            return 0;
        }
    }
    for (i = 0; i < 4; ++i) {
        if (a->pads[i] < 0) {
            return 0;
        }
    }
    return 1;
}

/* The taps k in [*k0, *k1) of a window starting at `start` (k * dil apart)
 * that land inside [0, size): padding is skipped, never read. */
static void window_taps(int32_t start, int32_t kernel, int32_t dil, int32_t size, int32_t *k0, int32_t *k1)
{
    int32_t lo = start < 0 ? (-start + dil - 1) / dil : 0;
    int32_t hi = start > size - 1 ? 0 : (size - 1 - start) / dil + 1;
    hi = hi < kernel ? hi : kernel;
    *k0 = lo;
    *k1 = hi > lo ? hi : lo;
}

/* One group of a convolution: input channels of H x W, kernels of KH x KW per input channel. */
typedef struct {
    int32_t cin, h, w, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow;
} geom_t;

/* The output columns [*lo, *hi) whose whole window lies inside the input row (no padding). */
static void interior_cols(const geom_t *g, int32_t *lo, int32_t *hi)
{
    int32_t last = g->w - 1 - (g->kw - 1) * g->dw + g->pw; /* the last window start, in padded columns */
    *lo = min_i32((g->pw + g->sw - 1) / g->sw, g->ow);
    *hi = last < 0 ? *lo : min_i32(last / g->sw + 1, g->ow);
    *hi = *hi > *lo ? *hi : *lo;
}

/* The taps of one output row's windows: their offsets from the window's first input column
 * (in the row's valid kernel rows), and how far the kernels skip past them to the next channel. */
#define MAX_TAPS 64
typedef struct {
    int32_t off[MAX_TAPS];
    int32_t ntaps;
    size_t plane, wskip;
    int32_t cin;
} rowtaps_t;

/* Four output channels (kernels w[i] from their first valid tap; rows past `nco` repeat the last)
 * at four output pixels S columns apart, whose windows start at x (every tap inside the input):
 * y[i][j] = c[i] + the taps, the 16 sums in registers. One function per stride keeps the four
 * input loads at constant offsets from one pointer. */
#define CONV_TILE(NAME, S)                                                                              \
    static NOINLINE void NAME(const rowtaps_t *t, const float *x, const float *const w[4], const float c[4], \
                              float *const y[4], int32_t nco, int32_t sw)                             \
    {                                                                                                   \
        const float *q0 = w[0], *q1 = w[1], *q2 = w[2], *q3 = w[3];                                   \
        const int32_t *oe = t->off + t->ntaps;                                                          \
        int32_t ci;                                                                                     \
        float c00 = c[0], c01 = c[0], c02 = c[0], c03 = c[0], c10 = c[1], c11 = c[1], c12 = c[1];      \
        float c13 = c[1], c20 = c[2], c21 = c[2], c22 = c[2], c23 = c[2], c30 = c[3], c31 = c[3];      \
        float c32 = c[3], c33 = c[3];                                                                   \
        (void)sw;                                                                                       \
        for (ci = t->ntaps > 0 ? t->cin : 0; ci > 0; --ci) {                                            \
            const int32_t *o = t->off;                                                                  \
            do {                                                                                        \
                const float *xp = x + *o++;                                                             \
                float v0 = xp[0], v1 = xp[S], v2 = xp[2 * (S)], v3 = xp[3 * (S)], u;                    \
                u = *q0++;                                                                              \
                MAC4(c00, c01, c02, c03, u, v0, v1, v2, v3);                                            \
                u = *q1++;                                                                              \
                MAC4(c10, c11, c12, c13, u, v0, v1, v2, v3);                                            \
                u = *q2++;                                                                              \
                MAC4(c20, c21, c22, c23, u, v0, v1, v2, v3);                                            \
                u = *q3++;                                                                              \
                MAC4(c30, c31, c32, c33, u, v0, v1, v2, v3);                                            \
            } while (o != oe);                                                                          \
            q0 += t->wskip;                                                                             \
            q1 += t->wskip;                                                                             \
            q2 += t->wskip;                                                                             \
            q3 += t->wskip;                                                                             \
            x += t->plane;                                                                              \
        }                                                                                               \
        put4(y[0], 4, c00, c01, c02, c03);                                                              \
        if (nco > 1) {                                                                                  \
            put4(y[1], 4, c10, c11, c12, c13);                                                          \
        }                                                                                               \
        if (nco > 2) {                                                                                  \
            put4(y[2], 4, c20, c21, c22, c23);                                                          \
        }                                                                                               \
        if (nco > 3) {                                                                                  \
            put4(y[3], 4, c30, c31, c32, c33);                                                          \
        }                                                                                               \
    }
CONV_TILE(conv_tile_s1, 1)
CONV_TILE(conv_tile_s2, 2)
CONV_TILE(conv_tile_sn, sw)
#undef CONV_TILE

/* Four output channels at one output pixel (oh, ow), the window clipped to the input: padding
 * is skipped, never read. Any stride and dilation. */
static NOINLINE void conv_px(const geom_t *g, const float *x, const float *const w[4], const float c[4], float *const y[4],
                    int32_t oh, int32_t ow, int32_t ky0, int32_t ky1, int32_t nco)
{
    int32_t kk = g->kh * g->kw, ci, ky, kx, kx0, kx1, ih0 = oh * g->sh - g->ph, iw0 = ow * g->sw - g->pw;
    size_t plane = (size_t)g->h * (size_t)g->w, rstep = (size_t)g->dh * (size_t)g->w;
    float c0 = c[0], c1 = c[1], c2 = c[2], c3 = c[3];
    window_taps(iw0, g->kw, g->dw, g->w, &kx0, &kx1);
    for (ci = 0; ci < g->cin; ++ci) {
        const float *xr = x + (size_t)ci * plane + (size_t)(ih0 + ky0 * g->dh) * (size_t)g->w
                          + (size_t)(iw0 + kx0 * g->dw);
        size_t off = (size_t)ci * (size_t)kk + (size_t)ky0 * (size_t)g->kw + (size_t)kx0;
        const float *q0 = w[0] + off, *q1 = w[1] + off, *q2 = w[2] + off, *q3 = w[3] + off;
        for (ky = ky0; ky < ky1; ++ky) {
            const float *xp = xr;
            for (kx = kx0; kx < kx1; ++kx) {
                float v = *xp;
                xp += g->dw;
                MAC(c0, *q0++, v);
                MAC(c1, *q1++, v);
                MAC(c2, *q2++, v);
                MAC(c3, *q3++, v);
            }
            q0 += g->kw - (kx1 - kx0);
            q1 += g->kw - (kx1 - kx0);
            q2 += g->kw - (kx1 - kx0);
            q3 += g->kw - (kx1 - kx0);
            xr += rstep;
        }
    }
    y[0][ow] = c0;
    if (nco > 1) {
        y[1][ow] = c1;
    }
    if (nco > 2) {
        y[2][ow] = c2;
    }
    if (nco > 3) {
        y[3][ow] = c3;
    }
}

/* A direct convolution of one group (no workspace): four output channels at a time, interior
 * pixels four at a time (conv_tile_*), the padded border one at a time (conv_px).
 * x: the group's first input channel; w: its first kernel; y: its first output channel. */
static void conv_direct(const geom_t *g, const float *x, const float *w, const float *bias, float *y, int32_t cout)
{
    int32_t kk = g->kh * g->kw, co, oh, ow, i, lo, hi, ky0, ky1, ky, kx;
    size_t oplane = (size_t)g->oh * (size_t)g->ow;
    rowtaps_t t;
    interior_cols(g, &lo, &hi);
    if (kk > MAX_TAPS) {
        lo = hi = 0; /* a kernel too large for the tap table: every pixel through conv_px */
    }
    t.plane = (size_t)g->h * (size_t)g->w;
    t.cin = g->cin;
    for (co = 0; co < cout; co += 4) {
        int32_t nco = min_i32(4, cout - co);
        const float *wp[4], *wt[4];
        float c[4];
        float *yp[4];
        for (i = 0; i < 4; ++i) {
            int32_t m = co + min_i32(i, nco - 1);
            wp[i] = w + (size_t)m * (size_t)g->cin * (size_t)kk;
            c[i] = bias != NULL ? bias[m] : 0.0f;
        }
        for (oh = 0; oh < g->oh; ++oh) {
            int32_t ih0 = oh * g->sh - g->ph;
            for (i = 0; i < 4; ++i) {
                yp[i] = y + (size_t)(co + min_i32(i, nco - 1)) * oplane + (size_t)oh * (size_t)g->ow;
            }
            window_taps(ih0, g->kh, g->dh, g->h, &ky0, &ky1);
            for (ow = 0; ow < lo; ++ow) {
                conv_px(g, x, wp, c, yp, oh, ow, ky0, ky1, nco);
            }
            if (lo + 4 <= hi) {
                t.ntaps = 0;
                for (ky = ky0; ky < ky1; ++ky) {
                    for (kx = 0; kx < g->kw; ++kx) {
                        t.off[t.ntaps++] = (ih0 + ky * g->dh) * g->w + kx * g->dw;
                    }
                }
                t.wskip = (size_t)(kk - t.ntaps);
                for (i = 0; i < 4; ++i) {
                    wt[i] = wp[i] + (size_t)ky0 * (size_t)g->kw;
                }
            }
            for (; ow + 4 <= hi || (ow < hi && lo + 4 <= hi); ow += 4) {
                /* the last tile of a row may overlap the one before: it recomputes those pixels
                 * in the same order (the same bits), cheaper than conv_px */
                int32_t o = ow + 4 <= hi ? ow : hi - 4;
                const float *xw = x + (o * g->sw - g->pw);
                float *yt[4];
                for (i = 0; i < 4; ++i) {
                    yt[i] = yp[i] + o;
                }
                if (g->sw == 1) {
                    conv_tile_s1(&t, xw, wt, c, yt, nco, 1);
                } else if (g->sw == 2) {
                    conv_tile_s2(&t, xw, wt, c, yt, nco, 2);
                } else {
                    conv_tile_sn(&t, xw, wt, c, yt, nco, g->sw);
                }
            }
            for (ow = ow > hi ? hi : ow; ow < g->ow; ++ow) {
                conv_px(g, x, wp, c, yp, oh, ow, ky0, ky1, nco);
            }
        }
    }
}

/* Output rows [r0, r0 + nr) of one group as an im2col matrix col[k][p] (k = (ci, ky, kx), p = the
 * pixels of those rows): row k of it is the input under tap k, zero where that is padding. (One
 * loop with the bounds test: zero runs as loops of their own would become memset calls.) */
static NOINLINE void im2col_rows(const geom_t *g, const float *x, float *col, int32_t r0, int32_t nr)
{
    int32_t ci, ky, kx, oh, ow;
    size_t plane = (size_t)g->h * (size_t)g->w;
    for (ci = 0; ci < g->cin; ++ci) {
        const float *xc = x + (size_t)ci * plane;
        for (ky = 0; ky < g->kh; ++ky) {
            for (kx = 0; kx < g->kw; ++kx) {
                for (oh = r0; oh < r0 + nr; ++oh) {
                    int32_t ih = oh * g->sh - g->ph + ky * g->dh, iw = kx * g->dw - g->pw;
                    uint32_t w = ih >= 0 && ih < g->h ? (uint32_t)g->w : 0u; /* 0: the whole row is padding */
                    const float *xr = xc + (size_t)(w != 0u ? ih : 0) * (size_t)g->w;
                    for (ow = 0; ow < g->ow; ++ow) {
                        *col++ = (uint32_t)iw < w ? xr[iw] : 0.0f;
                        iw += g->sw;
                    }
                }
            }
        }
    }
}

/* One output pixel of one channel (kernel wm), the window clipped to the input. */
static NOINLINE float dw_px(const geom_t *g, const float *xc, const float *wm, float b, int32_t oh, int32_t ow, int32_t ky0,
                   int32_t ky1)
{
    int32_t ky, kx, kx0, kx1, ih0 = oh * g->sh - g->ph, iw0 = ow * g->sw - g->pw;
    float acc = b;
    window_taps(iw0, g->kw, g->dw, g->w, &kx0, &kx1);
    for (ky = ky0; ky < ky1; ++ky) {
        const float *xr = xc + (size_t)(ih0 + ky * g->dh) * (size_t)g->w + (size_t)(iw0 + kx0 * g->dw);
        const float *q = wm + (size_t)ky * (size_t)g->kw + (size_t)kx0;
        for (kx = kx0; kx < kx1; ++kx) {
            MAC(acc, *q++, *xr);
            xr += g->dw;
        }
    }
    return acc;
}

/* One depthwise output channel from its input channel xc: y = b + the taps of kernel wm. Interior
 * pixels read their window without bounds checks (3 x 3: the nine weights in registers), border
 * pixels clip it. The one routine both the in-place and the ordinary depthwise run, so both give
 * the same bits. */
static NOINLINE void dw_channel(const float *xc, const float *wm, float b, float *yc, const geom_t *g)
{
    int32_t oh, ow, lo, hi, ky0, ky1, ky, kx;
    interior_cols(g, &lo, &hi);
    for (oh = 0; oh < g->oh; ++oh) {
        float *yr = yc + (size_t)oh * (size_t)g->ow;
        int32_t ih0 = oh * g->sh - g->ph;
        window_taps(ih0, g->kh, g->dh, g->h, &ky0, &ky1);
        for (ow = 0; ow < lo; ++ow) {
            yr[ow] = dw_px(g, xc, wm, b, oh, ow, ky0, ky1);
        }
        if (ky0 == 0 && ky1 == g->kh && g->kh == 3 && g->kw == 3 && g->dw == 1) {
            const float *r0 = xc + (size_t)ih0 * (size_t)g->w + (size_t)(lo * g->sw - g->pw);
            const float *r1 = r0 + (size_t)g->dh * (size_t)g->w, *r2 = r1 + (size_t)g->dh * (size_t)g->w;
            float w0 = wm[0], w1 = wm[1], w2 = wm[2], w3 = wm[3], w4_ = wm[4], w5 = wm[5], w6 = wm[6], w7 = wm[7];
            float w8 = wm[8];
            float *yp = yr + lo;
            for (ow = lo; ow < hi; ++ow) {
                float acc = b;
                MAC(acc, w0, r0[0]);
                MAC(acc, w1, r0[1]);
                MAC(acc, w2, r0[2]);
                MAC(acc, w3, r1[0]);
                MAC(acc, w4_, r1[1]);
                MAC(acc, w5, r1[2]);
                MAC(acc, w6, r2[0]);
                MAC(acc, w7, r2[1]);
                MAC(acc, w8, r2[2]);
                *yp++ = acc;
                r0 += g->sw;
                r1 += g->sw;
                r2 += g->sw;
            }
        } else {
            for (ow = lo; ow < hi; ++ow) {
                const float *xr = xc + (size_t)(ih0 + ky0 * g->dh) * (size_t)g->w + (size_t)(ow * g->sw - g->pw);
                const float *q = wm + (size_t)ky0 * (size_t)g->kw;
                float acc = b;
                for (ky = ky0; ky < ky1; ++ky) {
                    const float *xp = xr;
                    for (kx = 0; kx < g->kw; ++kx) {
                        MAC(acc, *q++, *xp);
                        xp += g->dw;
                    }
                    xr += (size_t)g->dh * (size_t)g->w;
                }
                yr[ow] = acc;
            }
        }
        for (ow = hi; ow < g->ow; ++ow) {
            yr[ow] = dw_px(g, xc, wm, b, oh, ow, ky0, ky1);
        }
    }
}

/* --- Conv ------------------------------------------------------------------------------------ */

int arena_k_conv(const arena_ctx_t *c)
{
    const arena_attrs_t *a = &c->op->attrs;
    const arena_tensor_t *xt = arena_in(c, 0), *wt = arena_in(c, 1), *bt = arena_in(c, 2), *yt = arena_out(c, 0);
    const float *x = (const float *)arena_in_data(c, 0);
    const float *w = (const float *)arena_in_data(c, 1);
    const float *bias = bt != NULL ? (const float *)arena_in_data(c, 2) : NULL;
    float *y = (float *)arena_out_data(c, 0);
    int32_t xd[4], yd[4];
    int32_t g, groups = a->group > 0 ? a->group : 1;
    int32_t mg, kk, n, m;
    size_t ws_elems = 0, xplane, yplane;
    float *ws = NULL;
    geom_t ge;
    if (xt == NULL || wt == NULL || yt == NULL || nchw(xt, xd) || nchw(yt, yd) || wt->rank != xt->rank ||
        yt->rank != xt->rank || !arena_shape_ok(xt) || !arena_shape_ok(wt) || !arena_shape_ok(yt)) {
        return ARENA_ERR_SHAPE;
    }
    if (!is_f32(xt) || !is_f32(wt) || !is_f32(yt) || (bt != NULL && !is_f32(bt))) {
        return ARENA_ERR_UNSUPPORTED;
    }
    if (!spatial_ok(a) || xd[1] % groups != 0 || yd[1] % groups != 0 || yd[0] != xd[0]) {
        return ARENA_ERR_SHAPE;
    }
    ge.cin = xd[1] / groups;
    ge.h = xd[2];
    ge.w = xd[3];
    ge.kh = a->kernel[0];
    ge.kw = a->kernel[1];
    ge.sh = a->strides[0];
    ge.sw = a->strides[1];
    ge.ph = a->pads[0];
    ge.pw = a->pads[1];
    ge.dh = a->dilations[0];
    ge.dw = a->dilations[1];
    ge.oh = yd[2];
    ge.ow = yd[3];
    mg = yd[1] / groups;
    kk = ge.cin * ge.kh * ge.kw;
    if (wt->shape[0] != yd[1] || wt->shape[1] != ge.cin || wt->shape[wt->rank - 1] != a->kernel[1] ||
        (wt->rank == 4 && wt->shape[2] != a->kernel[0]) || (wt->rank == 3 && a->kernel[0] != 1) ||
        (bt != NULL && bt->elements != (uint32_t)yd[1]) ||
        yd[2] != window_out(xd[2], a->pads[0], a->pads[2], a->kernel[0], a->strides[0], a->dilations[0]) ||
        yd[3] != window_out(xd[3], a->pads[1], a->pads[3], a->kernel[1], a->strides[1], a->dilations[1])) {
        return ARENA_ERR_SHAPE;
    }
    xplane = (size_t)xd[2] * (size_t)xd[3];
    yplane = (size_t)yd[2] * (size_t)yd[3];
    if (groups == xd[1] && yd[1] == xd[1]) {
        /* Depthwise (one input channel per output channel): in place through its temp. */
        size_t chans = (size_t)xd[0] * (size_t)xd[1], i, j;
        void *temp;
        int rc = arena_dw_in_place(c, x, chans * xplane * sizeof(float), y, chans * yplane * sizeof(float),
                                   xplane * sizeof(float), sizeof(float), &temp);
        if (rc != ARENA_OK) {
            return rc;
        }
        for (i = 0; i < chans; ++i) { /* increasing i: see arena_dw_in_place */
            const float *xc = x + i * xplane;
            m = (int32_t)(i % (size_t)xd[1]);
            if (temp != NULL) {
                float *t = (float *)temp;
                for (j = 0; j < xplane; ++j) {
                    t[j] = xc[j];
                }
                xc = t;
            }
            dw_channel(xc, w + (size_t)m * (size_t)kk, bias != NULL ? bias[m] : 0.0f, y + i * yplane, &ge);
        }
        return ARENA_OK;
    }
    if (c->op->workspace >= 0) {
        const arena_tensor_t *wst = &c->m->tensors[c->op->workspace];
        if (wst->dtype == ARENA_DT_FLOAT32 && wst->data == NULL) {
            ws_elems = (size_t)wst->elements;
            ws = (float *)arena_tensor_data(c->m, c->base, c->op->workspace);
        }
    }
    for (n = 0; n < xd[0]; ++n) {
        const float *xn = x + (size_t)n * (size_t)xd[1] * xplane;
        float *yn = y + (size_t)n * (size_t)yd[1] * yplane;
        for (g = 0; g < groups; ++g) {
            const float *xg = xn + (size_t)g * (size_t)ge.cin * xplane;
            const float *wg = w + (size_t)g * (size_t)mg * (size_t)kk;
            const float *bg = bias != NULL ? bias + g * mg : NULL;
            float *yg = yn + (size_t)g * (size_t)mg * yplane;
            /* rows of im2col columns the workspace holds */
            size_t row_elems = (size_t)yd[3] * (size_t)kk;
            int32_t rows = ws != NULL && row_elems > 0 ? (int32_t)(ws_elems / row_elems) : 0, r0;
            rows = min_i32(rows, yd[2]);
            if (ge.kh == 1 && ge.kw == 1 && ge.sh == 1 && ge.sw == 1 && ge.ph == 0 && ge.pw == 0 &&
                a->pads[2] == 0 && a->pads[3] == 0) {
                /* 1 x 1: the input channels are the GEMM's columns as they lie */
                gemm_nn(wg, kk, xg, (int32_t)xplane, bg, yg, (int32_t)yplane, mg, (int32_t)yplane, kk);
            } else if (rows > 0) {
                for (r0 = 0; r0 < yd[2]; r0 += rows) {
                    int32_t nr = min_i32(rows, yd[2] - r0), np = nr * yd[3];
                    im2col_rows(&ge, xg, ws, r0, nr);
                    gemm_nn(wg, kk, ws, np, bg, yg + (size_t)r0 * (size_t)yd[3], (int32_t)yplane, mg, np, kk);
                }
            } else {
                conv_direct(&ge, xg, wg, bg, yg, mg);
            }
        }
    }
    return ARENA_OK;
}

/* --- Gemm, MatMul ------------------------------------------------------------ */

int arena_k_gemm(const arena_ctx_t *c)
{
    const arena_attrs_t *a = &c->op->attrs;
    const arena_tensor_t *at = arena_in(c, 0), *bt = arena_in(c, 1), *ct = arena_in(c, 2);
    const arena_tensor_t *yt = arena_out(c, 0);
    const float *A = (const float *)arena_in_data(c, 0);
    const float *B = (const float *)arena_in_data(c, 1);
    const float *C = ct != NULL ? (const float *)arena_in_data(c, 2) : NULL;
    float *Y = (float *)arena_out_data(c, 0);
    int32_t M, N, K, i, j, k, cm = 1, cn = 1;
    if (at == NULL || bt == NULL || yt == NULL || at->rank != 2 || bt->rank != 2 || yt->rank != 2 ||
        !arena_shape_ok(at) || !arena_shape_ok(bt) || !arena_shape_ok(yt) || (ct != NULL && !arena_shape_ok(ct))) {
        return ARENA_ERR_SHAPE;
    }
    if (!is_f32(at) || !is_f32(bt) || !is_f32(yt) || (ct != NULL && !is_f32(ct))) {
        return ARENA_ERR_UNSUPPORTED;
    }
    M = yt->shape[0];
    N = yt->shape[1];
    K = a->trans_a ? at->shape[0] : at->shape[1];
    if ((a->trans_a ? at->shape[1] : at->shape[0]) != M || (a->trans_b ? bt->shape[1] : bt->shape[0]) != K ||
        (a->trans_b ? bt->shape[0] : bt->shape[1]) != N) {
        return ARENA_ERR_SHAPE;
    }
    if (ct != NULL) { /* C broadcasts to [M, N] (unidirectionally) */
        if (ct->rank > 2) {
            return ARENA_ERR_SHAPE;
        }
        cn = ct->rank >= 1 ? ct->shape[ct->rank - 1] : 1;
        cm = ct->rank == 2 ? ct->shape[0] : 1;
        if ((cn != 1 && cn != N) || (cm != 1 && cm != M)) {
            return ARENA_ERR_SHAPE;
        }
    }
    if (a->trans_a) {
        for (i = 0; i < M; ++i) { /* A read down its columns: a plain loop (no model here does this) */
            for (j = 0; j < N; ++j) {
                float acc = 0.0f;
                for (k = 0; k < K; ++k) {
                    float bv = a->trans_b ? B[(size_t)j * (size_t)K + (size_t)k] : B[(size_t)k * (size_t)N + (size_t)j];
                    MAC(acc, A[(size_t)k * (size_t)M + (size_t)i], bv);
                }
                Y[(size_t)i * (size_t)N + (size_t)j] = acc;
            }
        }
    } else if (a->trans_b) {
        /* Y[i][j] = A row i . B row j, both contiguous: four rows of B per pass over A's row */
        static const float zero[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        for (i = 0; i < M; ++i) {
            for (j = 0; j < N; j += 4) {
                int32_t nj = min_i32(4, N - j), t;
                const float *p[4];
                float out[4];
                for (t = 0; t < 4; ++t) {
                    p[t] = B + (size_t)(j + min_i32(t, nj - 1)) * (size_t)K;
                }
                dot_4(p, A + (size_t)i * (size_t)K, 1, K, zero, out);
                for (t = 0; t < nj; ++t) {
                    Y[(size_t)i * (size_t)N + (size_t)(j + t)] = out[t];
                }
            }
        }
    } else {
        gemm_nn(A, K, B, N, NULL, Y, N, M, N, K);
    }
    if (a->alpha != 1.0f || C != NULL) {
        for (i = 0; i < M; ++i) {
            float *yr = Y + (size_t)i * (size_t)N;
            const float *cr = C != NULL ? C + (size_t)(cm == 1 ? 0 : i) * (size_t)cn : NULL;
            for (j = 0; j < N; ++j) {
                float acc = yr[j] * a->alpha;
                if (cr != NULL) {
                    acc += a->beta * cr[cn == 1 ? 0 : j];
                }
                yr[j] = acc;
            }
        }
    }
    return ARENA_OK;
}

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
        gemm_nn(Ab, K, Bb, N, NULL, Yb, N, M, N, K);
        bcast_next(&w);
    }
    return ARENA_OK;
}

/* --- element-wise: unary ----------------------------------------------------- */

/* tanh: an odd Taylor series near 0 (where exp-based forms cancel), else
 * 1 - 2 / (e^(2|x|) + 1); +-1 beyond |x| = 9 (below half a float ulp away). */
static float tanh_f(float x)
{
    float a = abs_f(x), r;
    if (a < 0.3f) {
        float x2 = x * x;
        return x * (1.0f + x2 * (-1.0f / 3.0f + x2 * (2.0f / 15.0f + x2 * (-17.0f / 315.0f + x2 * (62.0f / 2835.0f
            + x2 * (-1382.0f / 155925.0f))))));
    }
    r = a > 9.0f ? 1.0f : 1.0f - 2.0f / (arena_expf(2.0f * a) + 1.0f);
    return x < 0.0f ? -r : r;
}

/* erf: its Maclaurin series for |x| < 0.5 (relative error < 1e-8), else
 * 1 - erfc with Numerical Recipes' erfcc (relative error < 1.2e-7); +-1 from
 * |x| = 4 on, where erfc is below half a float ulp of 1. */
static float erf_f(float x)
{
    float a = abs_f(x), t, r;
    if (a < 0.5f) {
        float x2 = x * x;
        return x * 1.12837916709551257f * (1.0f + x2 * (-1.0f / 3.0f + x2 * (1.0f / 10.0f + x2 * (-1.0f / 42.0f
            + x2 * (1.0f / 216.0f + x2 * (-1.0f / 1320.0f + x2 * (1.0f / 9360.0f)))))));
    }
    if (a != a) {
        return x;
    }
    if (a >= 4.0f) {
        r = 1.0f;
    } else {
        t = 1.0f / (1.0f + 0.5f * a);
        r = 1.0f - t * arena_expf(-a * a - 1.26551223f + t * (1.00002368f + t * (0.37409196f + t * (0.09678418f
            + t * (-0.18628806f + t * (0.27886807f + t * (-1.13520398f + t * (1.48851587f + t * (-0.82215223f
            + t * 0.17087277f)))))))));
    }
    return x < 0.0f ? -r : r;
}

static float clamp01(float v)
{
    return v < 0.0f ? 0.0f : (v > 1.0f ? 1.0f : v);
}

static float unary_f(const arena_attrs_t *a, uint8_t op, float v)
{
    switch (op) {
    case ARENA_OP_RELU: return v > 0.0f ? v : 0.0f;
    case ARENA_OP_CLIP: v = v < a->min ? a->min : v; return v > a->max ? a->max : v; /* min(max(v, lo), hi) */
    case ARENA_OP_LEAKY_RELU: return v >= 0.0f ? v : v * a->alpha;
    case ARENA_OP_SIGMOID: return 1.0f / (1.0f + arena_expf(-v));
    case ARENA_OP_HARD_SIGMOID: return clamp01(a->alpha * v + a->beta);
    case ARENA_OP_HARD_SWISH: return v * clamp01(v * (1.0f / 6.0f) + 0.5f); /* x * HardSigmoid(1/6, 1/2) */
    case ARENA_OP_TANH: return tanh_f(v);
    case ARENA_OP_EXP: return arena_expf(v);
    case ARENA_OP_NEG: return -v;
    case ARENA_OP_ABS: return v < 0.0f ? -v : (v == 0.0f ? 0.0f : v);
    case ARENA_OP_SQRT: return arena_sqrtf(v);
    case ARENA_OP_ERF: return erf_f(v);
    case ARENA_OP_SOFTSIGN: return v / (1.0f + (v < 0.0f ? -v : v));
    default: return v >= 0.0f ? v : a->alpha * (arena_expf(v) - 1.0f); /* Elu */
    }
}

/* y[i] = op(x[i]), i < n: the cheap ops as their own loops, so no element pays a call or a dispatch;
 * the transcendental ones through unary_f. y may be x (in place: element i is read first). */
static void unary_loop(const arena_attrs_t *a, uint8_t op, const float *x, float *y, uint32_t n)
{
    uint32_t i;
    float lo = a->min, hi = a->max;
    switch (op) {
    case ARENA_OP_RELU:
        for (i = 0; i < n; ++i) {
            float v = x[i];
            y[i] = v > 0.0f ? v : 0.0f;
        }
        break;
    case ARENA_OP_CLIP:
        for (i = 0; i < n; ++i) {
            float v = x[i];
            v = v < lo ? lo : v;
            y[i] = v > hi ? hi : v;
        }
        break;
    case ARENA_OP_LEAKY_RELU:
        for (i = 0; i < n; ++i) {
            float v = x[i];
            y[i] = v >= 0.0f ? v : v * a->alpha;
        }
        break;
    case ARENA_OP_NEG:
        for (i = 0; i < n; ++i) {
            y[i] = -x[i];
        }
        break;
    default:
        for (i = 0; i < n; ++i) {
            y[i] = unary_f(a, op, x[i]);
        }
        break;
    }
}

/* A float bound as an integer inside [lo, hi] (NaN and out-of-range values saturate). */
static int32_t int_bound(float f, int32_t lo, int32_t hi)
{
    if (!(f > (float)lo)) {
        return f != f ? hi : lo;
    }
    return f < (float)hi ? (int32_t)f : hi;
}

/* Relu/Clip on int8/uint8: lowered QDQ gives Clip with the quantized bounds in min/max. */
static int unary_q8(const arena_ctx_t *c, const arena_tensor_t *xt)
{
    const arena_attrs_t *a = &c->op->attrs;
    const void *x = arena_in_data(c, 0);
    uint8_t *y = (uint8_t *)arena_out_data(c, 0);
    int is_s8 = xt->dtype == ARENA_DT_INT8;
    int32_t lo = is_s8 ? -128 : 0, hi = is_s8 ? 127 : 255;
    uint32_t i;
    if (c->op->type == ARENA_OP_CLIP) {
        int32_t l = int_bound(a->min, lo, hi), h = int_bound(a->max, lo, hi);
        lo = l;
        hi = h;
    } else {
        lo = 0;
    }
    for (i = 0; i < xt->elements; ++i) {
        int32_t v = is_s8 ? ((const int8_t *)x)[i] : ((const uint8_t *)x)[i];
        v = v < lo ? lo : v;
        v = v > hi ? hi : v;
        y[i] = (uint8_t)v; /* the low byte: int8's two's complement, or uint8 */
    }
    return ARENA_OK;
}

int arena_k_unary(const arena_ctx_t *c)
{
    const arena_tensor_t *xt = arena_in(c, 0), *yt = arena_out(c, 0);
    const float *x = (const float *)arena_in_data(c, 0);
    float *y = (float *)arena_out_data(c, 0);
    uint8_t op = c->op->type;
    if (xt == NULL || yt == NULL || xt->elements != yt->elements) {
        return ARENA_ERR_SHAPE;
    }
    if (xt->dtype != yt->dtype) {
        return ARENA_ERR_UNSUPPORTED;
    }
    if ((xt->dtype == ARENA_DT_INT8 || xt->dtype == ARENA_DT_UINT8) && (op == ARENA_OP_RELU || op == ARENA_OP_CLIP)) {
        return unary_q8(c, xt);
    }
    if (xt->dtype != ARENA_DT_FLOAT32) {
        return ARENA_ERR_UNSUPPORTED;
    }
    unary_loop(&c->op->attrs, op, x, y, yt->elements);
    return ARENA_OK;
}

/* --- element-wise: binary and variadic --------------------------------------- */

static float binary_f(uint8_t op, float r, float v)
{
    switch (op) {
    case ARENA_OP_ADD: return r + v;
    case ARENA_OP_SUB: return r - v;
    case ARENA_OP_MUL: return r * v;
    case ARENA_OP_DIV: return r / v;
    case ARENA_OP_MAX: return v > r ? v : r;
    case ARENA_OP_MIN: return v < r ? v : r;
    default: return r < 0.0f ? r * v : r; /* PRelu */
    }
}

/* y[j] = p[j * sp] op q[j * sq] for j < n (sp, sq: 1, or 0 for a broadcast operand), one loop per
 * op. y may be p or q (in place: element j of both is read before y[j] is written). */
#define BINARY_RUN(expr)                                            \
    do {                                                            \
        if (sp && sq) {                                             \
            for (j = 0; j < n; ++j) {                               \
                float r = p[j], v = q[j];                           \
                y[j] = (expr);                                      \
            }                                                       \
        } else {                                                    \
            for (j = 0; j < n; ++j) {                               \
                float r = *p, v = *q;                               \
                p += sp;                                            \
                q += sq;                                            \
                y[j] = (expr);                                      \
            }                                                       \
        }                                                           \
    } while (0)

static void binary_run(uint8_t op, const float *p, uint32_t sp, const float *q, uint32_t sq, float *y, uint32_t n)
{
    uint32_t j;
    switch (op) {
    case ARENA_OP_ADD: BINARY_RUN(r + v); break;
    case ARENA_OP_SUB: BINARY_RUN(r - v); break;
    case ARENA_OP_MUL: BINARY_RUN(r * v); break;
    case ARENA_OP_DIV: BINARY_RUN(r / v); break;
    case ARENA_OP_MAX: BINARY_RUN(v > r ? v : r); break;
    case ARENA_OP_MIN: BINARY_RUN(v < r ? v : r); break;
    default: BINARY_RUN(r < 0.0f ? r * v : r); break; /* PRelu */
    }
}
#undef BINARY_RUN

/* Sub, Div, PRelu (two inputs); Add, Mul, Max, Min (1 to MAX_OPERANDS inputs,
 * folded left to right, so Sum can run as Add); numpy-broadcast to the
 * output's shape (PRelu: the slope to X's). */
int arena_k_binary(const arena_ctx_t *c)
{
    const arena_tensor_t *yt = arena_out(c, 0);
    const float *in[MAX_OPERANDS];
    float *Y = (float *)arena_out_data(c, 0);
    uint8_t op = c->op->type;
    int n = (int)c->op->n_inputs, k, d, d0, mode[MAX_OPERANDS];
    uint32_t i, run = 1u;
    bcast_t w;
    int variadic = op == ARENA_OP_ADD || op == ARENA_OP_MUL || op == ARENA_OP_MAX || op == ARENA_OP_MIN;
    if (yt == NULL || !arena_shape_ok(yt) || n < 1 || n > MAX_OPERANDS || (n != 2 && !variadic)) {
        return ARENA_ERR_SHAPE;
    }
    if (!is_f32(yt)) {
        return ARENA_ERR_UNSUPPORTED;
    }
    bcast_init(&w, yt->shape, yt->rank);
    for (k = 0; k < n; ++k) {
        const arena_tensor_t *t = arena_in(c, k);
        if (t == NULL || !arena_shape_ok(t)) {
            return ARENA_ERR_SHAPE;
        }
        if (!is_f32(t)) {
            return ARENA_ERR_UNSUPPORTED;
        }
        if (bcast_add(&w, t->shape, t->rank, 1u) || (op == ARENA_OP_PRELU && k == 0 && t->elements != yt->elements)) {
            return ARENA_ERR_SHAPE;
        }
        in[k] = (const float *)arena_in_data(c, k);
    }
    /* The output is the broadcast shape: each dim other than 1 is some input's. */
    for (d = 0; d < (int)yt->rank; ++d) {
        int found = yt->shape[d] == 1;
        for (k = 0; k < n; ++k) {
            found |= w.stride[k][d] != 0u;
        }
        if (!found) {
            return ARENA_ERR_SHAPE;
        }
    }
    /* The innermost dims along which every operand is contiguous or broadcast throughout run as one
     * loop (a whole same-shape Add is one run; x * scale[C, 1, 1] runs over each H x W plane). */
    for (k = 0; k < n; ++k) {
        mode[k] = -1;
    }
    for (d0 = (int)yt->rank; d0 > 0; --d0) {
        int dd = d0 - 1, fits = 1;
        if (yt->shape[dd] != 1) {
            for (k = 0; k < n; ++k) {
                int md = w.stride[k][dd] != 0u;
                fits &= mode[k] < 0 || mode[k] == md;
            }
            if (!fits) {
                break;
            }
            for (k = 0; k < n; ++k) {
                mode[k] = w.stride[k][dd] != 0u;
            }
            run *= (uint32_t)yt->shape[dd];
        }
    }
    if (run == 0u) {
        return ARENA_OK;
    }
    w.rank = d0; /* bcast_next steps the outer dims only */
    for (i = 0; i < yt->elements; i += run) {
        float *y = Y + i;
        if (n == 2) {
            binary_run(op, in[0] + w.offset[0], mode[0] > 0, in[1] + w.offset[1], mode[1] > 0, y, run);
        } else {
            uint32_t j;
            for (j = 0; j < run; ++j) {
                float r = in[0][w.offset[0] + (mode[0] > 0 ? j : 0u)];
                for (k = 1; k < n; ++k) {
                    r = binary_f(op, r, in[k][w.offset[k] + (mode[k] > 0 ? j : 0u)]);
                }
                y[j] = r;
            }
        }
        bcast_next(&w);
    }
    return ARENA_OK;
}

/* --- pooling ------------------------------------------------------------------ */

/* One pooling window of one channel plane: origin, steps and the taps inside it. */
typedef struct {
    int32_t h0, w0, dh, dw, ky0, ky1, kx0, kx1, width;
} taps_t;

static float max_taps_f(const float *x, const taps_t *t)
{
    float acc = -FLT_BIG; /* onnxruntime's start: the lowest float, also for an all-padding window */
    int32_t ky, kx;
    for (ky = t->ky0; ky < t->ky1; ++ky) {
        const float *row = x + (size_t)(t->h0 + ky * t->dh) * (size_t)t->width;
        for (kx = t->kx0; kx < t->kx1; ++kx) {
            float v = row[t->w0 + kx * t->dw];
            acc = v > acc ? v : acc;
        }
    }
    return acc;
}

static int32_t max_taps_q8(const void *x, int is_s8, const taps_t *t)
{
    int32_t acc = is_s8 ? -128 : 0, ky, kx;
    for (ky = t->ky0; ky < t->ky1; ++ky) {
        size_t row = (size_t)(t->h0 + ky * t->dh) * (size_t)t->width;
        for (kx = t->kx0; kx < t->kx1; ++kx) {
            size_t i = row + (size_t)(t->w0 + kx * t->dw);
            int32_t v = is_s8 ? ((const int8_t *)x)[i] : ((const uint8_t *)x)[i];
            acc = v > acc ? v : acc;
        }
    }
    return acc;
}

/* MaxPool (float32, int8, uint8; dilations) and AveragePool (float32, no dilations). */
int arena_k_pool(const arena_ctx_t *c)
{
    const arena_attrs_t *a = &c->op->attrs;
    const arena_tensor_t *xt = arena_in(c, 0), *yt = arena_out(c, 0);
    const uint8_t *x = (const uint8_t *)arena_in_data(c, 0);
    uint8_t *y = (uint8_t *)arena_out_data(c, 0);
    int32_t xd[4], yd[4], nc, oh, ow;
    int is_max = c->op->type == ARENA_OP_MAX_POOL;
    size_t es, plane_in, plane_out;
    if (xt == NULL || yt == NULL || nchw(xt, xd) || nchw(yt, yd) || xt->rank != yt->rank || !arena_shape_ok(xt) ||
        !arena_shape_ok(yt) || !spatial_ok(a) || yd[0] != xd[0] || yd[1] != xd[1]) {
        return ARENA_ERR_SHAPE;
    }
    if (xt->dtype != yt->dtype || (xt->dtype != ARENA_DT_FLOAT32 && !(is_max && arena_dtype_size(xt->dtype) == 1))) {
        return ARENA_ERR_UNSUPPORTED;
    }
    if (!is_max && (a->dilations[0] != 1 || a->dilations[1] != 1)) {
        return ARENA_ERR_UNSUPPORTED;
    }
    es = arena_dtype_size(xt->dtype);
    plane_in = (size_t)xd[2] * (size_t)xd[3];
    plane_out = (size_t)yd[2] * (size_t)yd[3];
    for (nc = 0; nc < xd[0] * xd[1]; ++nc) {
        const uint8_t *xc = x + (size_t)nc * plane_in * es;
        for (oh = 0; oh < yd[2]; ++oh) {
            for (ow = 0; ow < yd[3]; ++ow) {
                size_t o = (size_t)nc * plane_out + (size_t)oh * (size_t)yd[3] + (size_t)ow;
                taps_t t;
                t.h0 = oh * a->strides[0] - a->pads[0];
                t.w0 = ow * a->strides[1] - a->pads[1];
                t.dh = a->dilations[0];
                t.dw = a->dilations[1];
                t.width = xd[3];
                window_taps(t.h0, a->kernel[0], t.dh, xd[2], &t.ky0, &t.ky1);
                window_taps(t.w0, a->kernel[1], t.dw, xd[3], &t.kx0, &t.kx1);
                if (is_max && es == 1) {
                    y[o] = (uint8_t)max_taps_q8(xc, xt->dtype == ARENA_DT_INT8, &t);
                } else if (is_max) {
                    ((float *)(void *)y)[o] = max_taps_f((const float *)(const void *)xc, &t);
                } else {
                    /* count_include_pad divides by the window clipped to the padded input. */
                    int32_t he = t.h0 + a->kernel[0], we = t.w0 + a->kernel[1];
                    int32_t count = (t.ky1 - t.ky0) * (t.kx1 - t.kx0), div;
                    const float *xf = (const float *)(const void *)xc;
                    float acc = 0.0f;
                    int32_t ky, kx;
                    he = he < xd[2] + a->pads[2] ? he : xd[2] + a->pads[2];
                    we = we < xd[3] + a->pads[3] ? we : xd[3] + a->pads[3];
                    for (ky = t.ky0; ky < t.ky1; ++ky) {
                        for (kx = t.kx0; kx < t.kx1; ++kx) {
                            acc += xf[(size_t)(t.h0 + ky) * (size_t)xd[3] + (size_t)(t.w0 + kx)];
                        }
                    }
                    div = a->count_include_pad ? (he - t.h0) * (we - t.w0) : count;
                    ((float *)(void *)y)[o] = div > 0 ? acc / (float)div : 0.0f;
                }
            }
        }
    }
    return ARENA_OK;
}

/* GlobalAveragePool (float32), GlobalMaxPool (float32, int8, uint8). */
int arena_k_global_pool(const arena_ctx_t *c)
{
    const arena_tensor_t *xt = arena_in(c, 0), *yt = arena_out(c, 0);
    const void *x = arena_in_data(c, 0);
    void *y = arena_out_data(c, 0);
    int is_max = c->op->type == ARENA_OP_GLOBAL_MAX_POOL;
    uint32_t nc, i, n_nc, spatial;
    if (xt == NULL || yt == NULL || xt->rank < 2 || !arena_shape_ok(xt) || !arena_shape_ok(yt)) {
        return ARENA_ERR_SHAPE;
    }
    if (xt->dtype != yt->dtype || (xt->dtype != ARENA_DT_FLOAT32 && !(is_max && arena_dtype_size(xt->dtype) == 1))) {
        return ARENA_ERR_UNSUPPORTED;
    }
    n_nc = arena_dims_product(xt, 0, 2);
    spatial = arena_dims_product(xt, 2, xt->rank);
    if (yt->elements != n_nc || spatial == 0u) {
        return ARENA_ERR_SHAPE;
    }
    for (nc = 0; nc < n_nc; ++nc) {
        size_t b = (size_t)nc * spatial;
        if (xt->dtype == ARENA_DT_FLOAT32) {
            const float *xc = (const float *)x + b;
            float mx = -FLT_BIG;
            fsum_t s = {0.0f, 0.0f};
            for (i = 0; i < spatial; ++i) {
                mx = xc[i] > mx ? xc[i] : mx;
                fsum_add(&s, xc[i]);
            }
            ((float *)y)[nc] = is_max ? mx : (s.sum + s.comp) / (float)spatial;
        } else {
            int is_s8 = xt->dtype == ARENA_DT_INT8;
            int32_t mx = is_s8 ? -128 : 0;
            for (i = 0; i < spatial; ++i) {
                int32_t v = is_s8 ? ((const int8_t *)x)[b + i] : ((const uint8_t *)x)[b + i];
                mx = v > mx ? v : mx;
            }
            ((uint8_t *)y)[nc] = (uint8_t)mx;
        }
    }
    return ARENA_OK;
}

/* --- Softmax, Concat, BatchNormalization ---------------------------------------- */

int arena_k_softmax(const arena_ctx_t *c)
{
    const arena_attrs_t *a = &c->op->attrs;
    const arena_tensor_t *xt = arena_in(c, 0), *yt = arena_out(c, 0);
    const float *x = (const float *)arena_in_data(c, 0);
    float *y = (float *)arena_out_data(c, 0);
    uint32_t outer, n, inner, o, in, j;
    if (xt == NULL || yt == NULL || xt->elements != yt->elements || !arena_shape_ok(xt) || a->axis < 0 ||
        (a->axis >= (int32_t)xt->rank && xt->rank > 0)) {
        return ARENA_ERR_SHAPE;
    }
    if (!is_f32(xt) || !is_f32(yt)) {
        return ARENA_ERR_UNSUPPORTED;
    }
    outer = arena_dims_product(xt, 0, a->axis);
    if (a->legacy_axis) {
        n = arena_dims_product(xt, a->axis, xt->rank);
        inner = 1u;
    } else {
        n = arena_dims_product(xt, a->axis, a->axis + 1);
        inner = arena_dims_product(xt, a->axis + 1, xt->rank);
    }
    for (o = 0; o < outer; ++o) {
        for (in = 0; in < inner; ++in) {
            size_t b = (size_t)o * n * inner + in;
            float mx = -FLT_BIG, sum = 0.0f;
            for (j = 0; j < n; ++j) {
                float v = x[b + (size_t)j * inner];
                mx = v > mx ? v : mx;
            }
            for (j = 0; j < n; ++j) {
                float e = arena_expf(x[b + (size_t)j * inner] - mx);
                y[b + (size_t)j * inner] = e;
                sum += e;
            }
            for (j = 0; j < n; ++j) {
                y[b + (size_t)j * inner] /= sum;
            }
        }
    }
    return ARENA_OK;
}

/* Any element type; inputs of the output's rank and type, equal but along axis. */
int arena_k_concat(const arena_ctx_t *c)
{
    const arena_attrs_t *a = &c->op->attrs;
    const arena_tensor_t *yt = arena_out(c, 0);
    uint8_t *y = (uint8_t *)arena_out_data(c, 0);
    size_t es, outer, o, pos = 0;
    int32_t total = 0;
    int i, d;
    if (yt == NULL || !arena_shape_ok(yt) || a->axis < 0 || a->axis >= (int32_t)yt->rank) {
        return ARENA_ERR_SHAPE;
    }
    es = arena_dtype_size(yt->dtype);
    if (es == 0) {
        return ARENA_ERR_UNSUPPORTED;
    }
    for (i = 0; i < (int)c->op->n_inputs; ++i) {
        const arena_tensor_t *xt = arena_in(c, i);
        if (xt == NULL) {
            continue;
        }
        if (xt->dtype != yt->dtype) {
            return ARENA_ERR_UNSUPPORTED;
        }
        if (!arena_shape_ok(xt) || xt->rank != yt->rank) {
            return ARENA_ERR_SHAPE;
        }
        for (d = 0; d < (int)yt->rank; ++d) {
            if (d != a->axis && xt->shape[d] != yt->shape[d]) {
                return ARENA_ERR_SHAPE;
            }
        }
        total += xt->shape[a->axis];
    }
    if (total != yt->shape[a->axis]) {
        return ARENA_ERR_SHAPE;
    }
    outer = arena_dims_product(yt, 0, a->axis);
    for (o = 0; o < outer; ++o) {
        for (i = 0; i < (int)c->op->n_inputs; ++i) {
            const arena_tensor_t *xt = arena_in(c, i);
            size_t chunk;
            if (xt == NULL) {
                continue;
            }
            chunk = (size_t)arena_dims_product(xt, a->axis, xt->rank) * es;
            memmove(y + pos, (const uint8_t *)arena_in_data(c, i) + o * chunk, chunk);
            pos += chunk;
        }
    }
    return ARENA_OK;
}

int arena_k_batch_norm(const arena_ctx_t *c)
{
    const arena_tensor_t *xt = arena_in(c, 0), *yt = arena_out(c, 0);
    const float *x = (const float *)arena_in_data(c, 0);
    const float *scale = (const float *)arena_in_data(c, 1);
    const float *bias = (const float *)arena_in_data(c, 2);
    const float *mean = (const float *)arena_in_data(c, 3);
    const float *var = (const float *)arena_in_data(c, 4);
    float *y = (float *)arena_out_data(c, 0);
    uint32_t n, ch, i, C, spatial;
    int k;
    if (xt == NULL || yt == NULL || xt->rank < 2 || !arena_shape_ok(xt) || xt->elements != yt->elements ||
        scale == NULL || bias == NULL || mean == NULL || var == NULL) {
        return ARENA_ERR_SHAPE;
    }
    if (!is_f32(xt) || !is_f32(yt)) {
        return ARENA_ERR_UNSUPPORTED;
    }
    C = (uint32_t)xt->shape[1];
    for (k = 1; k <= 4; ++k) {
        if (!is_f32(arena_in(c, k)) || arena_in(c, k)->elements != C) {
            return ARENA_ERR_SHAPE;
        }
    }
    spatial = arena_dims_product(xt, 2, xt->rank);
    for (n = 0; n < (uint32_t)xt->shape[0]; ++n) {
        for (ch = 0; ch < C; ++ch) {
            float k2 = scale[ch] / arena_sqrtf(var[ch] + c->op->attrs.epsilon);
            size_t b = ((size_t)n * C + ch) * spatial;
            for (i = 0; i < spatial; ++i) {
                y[b + i] = (x[b + i] - mean[ch]) * k2 + bias[ch];
            }
        }
    }
    return ARENA_OK;
}

/* LRN across channels (NC...): y = x / (bias + alpha / size * sum of x^2 over the channels
 * [c - (size-1)/2, c + ceil((size-1)/2)])^beta, the power as exp(beta * ln(.)). Not in place:
 * every output reads its neighbours' inputs. */
int arena_k_lrn(const arena_ctx_t *c)
{
    const arena_tensor_t *xt = arena_in(c, 0), *yt = arena_out(c, 0);
    const arena_attrs_t *a = &c->op->attrs;
    const float *x = (const float *)arena_in_data(c, 0);
    float *y = (float *)arena_out_data(c, 0);
    int32_t size, lo, hi, n, ch, k;
    uint32_t inner, i, channels;
    if (xt == NULL || yt == NULL || x == NULL || y == NULL || xt->dtype != ARENA_DT_FLOAT32
        || yt->dtype != ARENA_DT_FLOAT32 || xt->rank < 2 || xt->elements != yt->elements
        || !arena_shape_ok(xt) || a->n_ints != 1u || a->n_floats != 1u) {
        return ARENA_ERR_SHAPE;
    }
    if ((const void *)x == (const void *)y) {
        return ARENA_ERR_SHAPE;
    }
    size = a->ints[0];
    if (size < 1) {
        return ARENA_ERR_SHAPE;
    }
    lo = (size - 1) / 2;
    hi = size - 1 - lo;
    channels = (uint32_t)xt->shape[1];
    inner = arena_dims_product(xt, 2, (int)xt->rank);
    for (n = 0; n < xt->shape[0]; ++n) {
        const float *xn = x + (uint32_t)n * channels * inner;
        float *yn = y + (uint32_t)n * channels * inner;
        for (ch = 0; ch < (int32_t)channels; ++ch) {
            for (i = 0; i < inner; ++i) {
                float sum = 0.0f, v;
                for (k = ch - lo; k <= ch + hi; ++k) {
                    if (k >= 0 && k < (int32_t)channels) {
                        float t = xn[(uint32_t)k * inner + i];
                        sum += t * t;
                    }
                }
                v = a->floats[0] + a->alpha / (float)size * sum;
                yn[(uint32_t)ch * inner + i] = xn[(uint32_t)ch * inner + i] * arena_expf(-a->beta * arena_logf(v));
            }
        }
    }
    return ARENA_OK;
}
