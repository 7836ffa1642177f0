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

/* --- Conv ------------------------------------------------------------------ */

/* One output pixel range of one group, from an im2col matrix laid out as
 * col[p][k] (p = output pixel, k = (c, ky, kx)), so both operands of the
 * dot product are contiguous. */
static void gemm_cols(const float *w, const float *bias, const float *col, float *y, int32_t m0,
                      int32_t mg, int32_t kk, int32_t npix, int32_t ystride)
{
    int32_t m, p, k;
    for (m = 0; m < mg; ++m) {
        const float *wr = w + (size_t)(m0 + m) * (size_t)kk;
        float b = bias != NULL ? bias[m0 + m] : 0.0f;
        for (p = 0; p < npix; ++p) {
            const float *cr = col + (size_t)p * (size_t)kk;
            float acc = b;
            for (k = 0; k < kk; ++k) {
                acc += wr[k] * cr[k];
            }
            y[(size_t)(m0 + m) * (size_t)ystride + (size_t)p] = acc;
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

/* acc plus one output pixel's taps over one input channel xc (H x W) and its
 * kernel wc, row by row: the one loop the direct conv and the in-place
 * depthwise conv share, so both round alike (in place gives the same bits). */
static float conv_taps(float acc, const float *xc, const float *wc, const arena_attrs_t *a, const int32_t xd[4],
                       int32_t oh, int32_t ow)
{
    int32_t ky, kx;
    for (ky = 0; ky < a->kernel[0]; ++ky) {
        int32_t ih = oh * a->strides[0] - a->pads[0] + ky * a->dilations[0];
        if (ih < 0 || ih >= xd[2]) {
            continue;
        }
        for (kx = 0; kx < a->kernel[1]; ++kx) {
            int32_t iw = ow * a->strides[1] - a->pads[1] + kx * a->dilations[1];
            if (iw < 0 || iw >= xd[3]) {
                continue;
            }
            acc += wc[ky * a->kernel[1] + kx] * xc[(size_t)ih * (size_t)xd[3] + (size_t)iw];
        }
    }
    return acc;
}

/* One depthwise output channel from its input channel xc: bias first, then the taps. */
static void dw_channel(const float *xc, const float *wm, float b, float *yc, const arena_attrs_t *a,
                       const int32_t xd[4], const int32_t yd[4])
{
    int32_t oh, ow;
    for (oh = 0; oh < yd[2]; ++oh) {
        for (ow = 0; ow < yd[3]; ++ow) {
            yc[(size_t)oh * (size_t)yd[3] + (size_t)ow] = conv_taps(b, xc, wm, a, xd, oh, ow);
        }
    }
}

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
    int32_t cg, mg, kk, n, oh, ow, ci, ky, kx, m;
    size_t ws_bytes = 0;
    float *ws = NULL;
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
    cg = xd[1] / groups;
    mg = yd[1] / groups;
    kk = cg * a->kernel[0] * a->kernel[1];
    if (wt->shape[0] != yd[1] || wt->shape[1] != cg || wt->shape[wt->rank - 1] != a->kernel[1] ||
        (wt->rank == 4 && wt->shape[2] != a->kernel[0]) || (wt->rank == 3 && a->kernel[0] != 1) ||
        (bt != NULL && bt->elements != (uint32_t)yd[1]) ||
        yd[2] != window_out(xd[2], a->pads[0], a->pads[2], a->kernel[0], a->strides[0], a->dilations[0]) ||
        yd[3] != window_out(xd[3], a->pads[1], a->pads[3], a->kernel[1], a->strides[1], a->dilations[1])) {
        return ARENA_ERR_SHAPE;
    }
    if (groups == xd[1] && yd[1] == xd[1]) {
        /* Depthwise (one input channel per output channel): in place through its temp. */
        size_t plane = (size_t)xd[2] * (size_t)xd[3], yplane = (size_t)yd[2] * (size_t)yd[3];
        size_t chans = (size_t)xd[0] * (size_t)xd[1], i;
        void *temp;
        int rc = arena_dw_in_place(c, x, chans * plane * sizeof(float), y, chans * yplane * sizeof(float),
                             plane * sizeof(float), sizeof(float), &temp);
        if (rc != ARENA_OK) {
            return rc;
        }
        if (temp != NULL) {
            for (i = 0; i < chans; ++i) { /* increasing i: see arena_dw_in_place */
                m = (int32_t)(i % (size_t)xd[1]);
                memcpy(temp, x + i * plane, plane * sizeof(float));
                dw_channel((const float *)temp, w + (size_t)m * (size_t)kk, bias != NULL ? bias[m] : 0.0f,
                           y + i * yplane, a, xd, yd);
            }
            return ARENA_OK;
        }
    }
    /* A depthwise op's workspace (group > 1) is the in-place channel temp, never im2col
     * columns: not in place, it runs direct. group == 1 (one channel) keeps im2col. */
    if (c->op->workspace >= 0 && !(groups > 1 && groups == xd[1] && yd[1] == xd[1])) {
        const arena_tensor_t *wst = &c->m->tensors[c->op->workspace];
        if (wst->dtype == ARENA_DT_FLOAT32) {
            ws_bytes = (size_t)wst->elements * sizeof(float);
            ws = (float *)arena_tensor_data(c->m, c->base, c->op->workspace);
        }
    }
    for (n = 0; n < xd[0]; ++n) {
        const float *xn = x + (size_t)n * (size_t)xd[1] * (size_t)xd[2] * (size_t)xd[3];
        float *yn = y + (size_t)n * (size_t)yd[1] * (size_t)yd[2] * (size_t)yd[3];
        for (g = 0; g < groups; ++g) {
            /* im2col over as many output rows as the workspace holds, or direct. */
            int32_t rows = 0;
            size_t row_bytes = (size_t)yd[3] * (size_t)kk * sizeof(float);
            if (ws != NULL && row_bytes > 0) {
                rows = ws_bytes / row_bytes > (size_t)yd[2] ? yd[2] : (int32_t)(ws_bytes / row_bytes);
            }
            if (rows > 0) {
                int32_t r0;
                for (r0 = 0; r0 < yd[2]; r0 += rows) {
                    int32_t nr = yd[2] - r0 < rows ? yd[2] - r0 : rows;
                    float *col = ws;
                    for (oh = r0; oh < r0 + nr; ++oh) {
                        for (ow = 0; ow < yd[3]; ++ow) {
                            for (ci = 0; ci < cg; ++ci) {
                                const float *xc = xn + (size_t)(g * cg + ci) * (size_t)xd[2] * (size_t)xd[3];
                                for (ky = 0; ky < a->kernel[0]; ++ky) {
                                    int32_t ih = oh * a->strides[0] - a->pads[0] + ky * a->dilations[0];
                                    for (kx = 0; kx < a->kernel[1]; ++kx) {
                                        int32_t iw = ow * a->strides[1] - a->pads[1] + kx * a->dilations[1];
                                        *col++ = (ih >= 0 && ih < xd[2] && iw >= 0 && iw < xd[3])
                                                     ? xc[(size_t)ih * (size_t)xd[3] + (size_t)iw] : 0.0f;
                                    }
                                }
                            }
                        }
                    }
                    gemm_cols(w, bias, ws, yn + (size_t)r0 * (size_t)yd[3], g * mg, mg, kk, nr * yd[3],
                              yd[2] * yd[3]);
                }
                continue;
            }
            for (m = g * mg; m < (g + 1) * mg; ++m) {
                const float *wm = w + (size_t)m * (size_t)kk;
                for (oh = 0; oh < yd[2]; ++oh) {
                    for (ow = 0; ow < yd[3]; ++ow) {
                        float acc = bias != NULL ? bias[m] : 0.0f;
                        for (ci = 0; ci < cg; ++ci) {
                            const float *xc = xn + (size_t)(g * cg + ci) * (size_t)xd[2] * (size_t)xd[3];
                            const float *wc = wm + (size_t)ci * (size_t)a->kernel[0] * (size_t)a->kernel[1];
                            acc = conv_taps(acc, xc, wc, a, xd, oh, ow);
                        }
                        yn[((size_t)m * (size_t)yd[2] + (size_t)oh) * (size_t)yd[3] + (size_t)ow] = acc;
                    }
                }
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
    for (i = 0; i < M; ++i) {
        for (j = 0; j < N; ++j) {
            float acc = 0.0f;
            for (k = 0; k < K; ++k) {
                float av = a->trans_a ? A[(size_t)k * (size_t)M + (size_t)i] : A[(size_t)i * (size_t)K + (size_t)k];
                float bv = a->trans_b ? B[(size_t)j * (size_t)K + (size_t)k] : B[(size_t)k * (size_t)N + (size_t)j];
                acc += av * bv;
            }
            acc *= a->alpha;
            if (C != NULL) {
                acc += a->beta * C[(size_t)(cm == 1 ? 0 : i) * (size_t)cn + (size_t)(cn == 1 ? 0 : j)];
            }
            Y[(size_t)i * (size_t)N + (size_t)j] = acc;
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
    int32_t M, N, K, i, j, k;
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
        for (i = 0; i < M; ++i) {
            for (j = 0; j < N; ++j) {
                float acc = 0.0f;
                for (k = 0; k < K; ++k) {
                    acc += Ab[(size_t)i * (size_t)K + (size_t)k] * Bb[(size_t)k * (size_t)N + (size_t)j];
                }
                Yb[(size_t)i * (size_t)N + (size_t)j] = acc;
            }
        }
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
    default: return v >= 0.0f ? v : a->alpha * (arena_expf(v) - 1.0f); /* Elu */
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
    uint32_t i;
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
    for (i = 0; i < yt->elements; ++i) {
        y[i] = unary_f(&c->op->attrs, op, x[i]);
    }
    return ARENA_OK;
}

/* --- element-wise: binary and variadic --------------------------------------- */

/* Sub, Div, PRelu (two inputs); Add, Mul, Max, Min (1 to MAX_OPERANDS inputs,
 * folded left to right, so Sum can run as Add); numpy-broadcast to the
 * output's shape (PRelu: the slope to X's). */
int arena_k_binary(const arena_ctx_t *c)
{
    const arena_tensor_t *yt = arena_out(c, 0);
    const float *in[MAX_OPERANDS];
    float *Y = (float *)arena_out_data(c, 0);
    uint8_t op = c->op->type;
    int n = (int)c->op->n_inputs, k, d;
    uint32_t i;
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
    for (i = 0; i < yt->elements; ++i) {
        float r = in[0][w.offset[0]];
        for (k = 1; k < n; ++k) {
            float v = in[k][w.offset[k]];
            switch (op) {
            case ARENA_OP_ADD: r = r + v; break;
            case ARENA_OP_SUB: r = r - v; break;
            case ARENA_OP_MUL: r = r * v; break;
            case ARENA_OP_DIV: r = r / v; break;
            case ARENA_OP_MAX: r = v > r ? v : r; break;
            case ARENA_OP_MIN: r = v < r ? v : r; break;
            default: r = r < 0.0f ? r * v : r; break; /* PRelu */
            }
        }
        Y[i] = r;
        bcast_next(&w);
    }
    return ARENA_OK;
}

/* --- pooling ------------------------------------------------------------------ */

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
