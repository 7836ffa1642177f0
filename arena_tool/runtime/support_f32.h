/* Internal to the float32 kernels (*_f32.c, identity.c, concat.c): their shared helpers, static
 * inline so each kernel's file compiles them as the one file holding every kernel did. NCHW layout;
 * 1-D spatial ops (rank-3 tensors) run as H = 1. Element-wise kernels read element i before
 * writing element i, so they are correct when the output shares its input's bytes (planned
 * in-place ops). Every kernel checks its tensors' types and shapes before touching memory. */
#ifndef ARENA_SUPPORT_F32_H
#define ARENA_SUPPORT_F32_H

#include "arena_kernels.h"

#define FLT_BIG 3.402823466e38f
#define MAX_OPERANDS 8 /* inputs of a variadic element-wise op (Add, Mul, Max, Min) */

/* --- helpers ------------------------------------------------------------ */

static inline float abs_f(float v)
{
    return v < 0.0f ? -v : v;
}

/* N, C, H, W of a rank-3 or rank-4 tensor. */
static inline int nchw(const arena_tensor_t *t, int32_t d[4])
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


static inline int is_f32(const arena_tensor_t *t)
{
    return t != NULL && t->dtype == ARENA_DT_FLOAT32;
}

/* A compensated (Neumaier) running sum: long reductions (a whole feature map)
 * stay as accurate as onnxruntime's vectorized sums. */
typedef struct {
    float sum, comp;
} fsum_t;

static inline void fsum_add(fsum_t *s, float v)
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

static inline void bcast_init(bcast_t *b, const int32_t *dims, int rank)
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
static inline int bcast_add(bcast_t *b, const int32_t *tdims, int trank, uint32_t unit)
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

static inline void bcast_next(bcast_t *b)
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

/* Helium's float lanes (MVE-F: Cortex-M55, M85 with an FPU; __ARM_FEATURE_MVE bit 1): the GEMM and conv
 * tiles, the depthwise interior and the element-wise runs take four outputs a VFMA / VADD. Each output
 * lane sums the same products in the same order, each one fused (VFMA as VFMA.F32 / fmaf does), as the
 * scalar path; off lanes of a tail are predicated (VCTP), never read or written. */
#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 2)
#include <arm_mve.h>
#define ARENA_MVE_F32 1
#else
#define ARENA_MVE_F32 0
#endif

#define MAC4(c0, c1, c2, c3, u, v0, v1, v2, v3) \
    do { MAC(c0, u, v0); MAC(c1, u, v1); MAC(c2, u, v2); MAC(c3, u, v3); } while (0)

static inline int32_t min_i32(int32_t a, int32_t b)
{
    return a < b ? a : b;
}

/* Stores a tile row: the first n of four values. */
static inline void put4(float *y, int32_t n, float v0, float v1, float v2, float v3)
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

/* The output extent of a window sliding over `in` (pads, stride, dilation). */
static inline int32_t window_out(int32_t in, int32_t pad0, int32_t pad1, int32_t k, int32_t stride, int32_t dil)
{
    int32_t span = in + pad0 + pad1 - dil * (k - 1) - 1;
    return span < 0 ? 0 : span / stride + 1;
}

/* The spatial attributes are usable: kernel, strides, dilations >= 1, pads >= 0. */
static inline int spatial_ok(const arena_attrs_t *a)
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
static inline void window_taps(int32_t start, int32_t kernel, int32_t dil, int32_t size, int32_t *k0, int32_t *k1)
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
static inline void interior_cols(const geom_t *g, int32_t *lo, int32_t *hi)
{
    int32_t last = g->w - 1 - (g->kw - 1) * g->dw + g->pw; /* the last window start, in padded columns */
    *lo = min_i32((g->pw + g->sw - 1) / g->sw, g->ow);
    *hi = last < 0 ? *lo : min_i32(last / g->sw + 1, g->ow);
    *hi = *hi > *lo ? *hi : *lo;
}

/* gemm_f32.c: Y = bias + A B in 4 x 4 register tiles (Conv's im2col and 1x1 paths, Gemm, MatMul). */
void arena_f32_gemm_nn(const float *A, int32_t lda, const float *B, int32_t ldb, const float *bias, float *Y,
                       int32_t ldy, int32_t M, int32_t N, int32_t K);

/* depthwise_f32.c: one depthwise output channel yc from its input channel xc and kernel wm. */
void arena_f32_dw_channel(const float *xc, const float *wm, float b, float *yc, const geom_t *g);

#endif
