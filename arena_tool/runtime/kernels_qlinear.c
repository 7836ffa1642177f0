/* onnxruntime's quantized contrib ops (QOperator models) and the ops lowered QDQ models
 * become (arena_tool/model/lowering.py), int8/uint8, matching onnxruntime within one step.
 *
 * Each kernel does onnxruntime's arithmetic (float requantization, rounding half to even)
 * and clamps its output to attrs.out_min/out_max when out_min < out_max (a Relu/Clip the
 * lowering absorbed). Operands may mix int8 and uint8; scales and zero points are per
 * tensor except QGemm's B (per column). Element-wise kernels read element i before
 * writing element i, so an output may share an input's bytes (the planner's in-place ops). */
#include <string.h>

#include "arena_kernels.h"

/* --- operands ---------------------------------------------------------------- */

/* A quantized input: the integer tensor and its per-tensor parameters. */
typedef struct {
    const arena_tensor_t *t;
    const void *data;
    float scale;
    int32_t zp;
} qin_t;

/* The quantized output 0, its parameters and integer range. */
typedef struct {
    const arena_tensor_t *t;
    void *data;
    float scale;
    int32_t zp, lo, hi;
} qout_t;

/* Input triple (x, scale, zero point) from input position x, per tensor. */
static int qin(const arena_ctx_t *c, int x, qin_t *q)
{
    int rc = arena_q_check(c, x, 1u);
    if (rc != ARENA_OK) {
        return rc;
    }
    q->t = arena_in(c, x);
    q->data = arena_in_data(c, x);
    q->scale = arena_q_scale(c, x + 1, 0);
    q->zp = arena_q_zp(c, x + 2, 0);
    return ARENA_OK;
}

/* Output 0 with its scale at input s and zero point at s + 1. */
static int qout(const arena_ctx_t *c, int s, qout_t *q)
{
    int rc = arena_q_out(c, s, &q->lo, &q->hi);
    if (rc != ARENA_OK) {
        return rc;
    }
    q->t = arena_out(c, 0);
    q->data = arena_out_data(c, 0);
    q->scale = arena_q_scale(c, s, 0);
    q->zp = arena_q_zp(c, s + 1, 0);
    return ARENA_OK;
}

/* The integer code of element i (int8 or uint8; checked by qin). */
static int32_t code(const qin_t *x, uint32_t i)
{
    if (x->t->dtype == ARENA_DT_INT8) {
        return ((const int8_t *)x->data)[i];
    }
    return ((const uint8_t *)x->data)[i];
}

/* Writes output element i from v, the value in units of the output's scale. */
static void put(const qout_t *y, uint32_t i, float v)
{
    arena_q_put(y->data, i, arena_q_round(v, y->zp, y->lo, y->hi));
}

/* An input either shares no byte with the output, or exactly its bytes (an in-place
 * element-wise op; 1-byte elements). */
static int alias_ok(const qin_t *x, const qout_t *y)
{
    uintptr_t xa = (uintptr_t)x->data, ya = (uintptr_t)y->data;
    if (xa + x->t->elements <= ya || ya + y->t->elements <= xa) {
        return 1;
    }
    return xa == ya && x->t->elements == y->t->elements;
}

static int same_shape(const arena_tensor_t *a, const arena_tensor_t *b)
{
    int d;
    if (a->rank != b->rank) {
        return 0;
    }
    for (d = 0; d < (int)a->rank; ++d) {
        if (a->shape[d] != b->shape[d]) {
            return 0;
        }
    }
    return 1;
}

/* N, C, H, W of a rank-3 (1-D: H = 1) or rank-4 tensor; -1 for other ranks. */
static int nchw(const arena_tensor_t *t, int32_t d[4])
{
    if (t->rank != 3 && t->rank != 4) {
        return -1;
    }
    d[0] = t->shape[0];
    d[1] = t->shape[1];
    d[2] = t->rank == 4 ? t->shape[2] : 1;
    d[3] = t->shape[t->rank - 1];
    return 0;
}

/* --- lookup tables: QLinearSigmoid, QLinearLeakyRelu, QLinearHardSwish ---------- */

typedef float (*qfn_t)(float v, float alpha);

static float fn_identity(float v, float alpha)
{
    (void)alpha;
    return v;
}

static float fn_sigmoid(float v, float alpha)
{
    (void)alpha;
    return 1.0f / (1.0f + arena_expf(-v));
}

static float fn_leaky_relu(float v, float alpha)
{
    return v >= 0.0f ? v : v * alpha;
}

static float fn_hard_swish(float v, float alpha)
{
    float g = v * (1.0f / 6.0f) + 0.5f;
    (void)alpha;
    g = g < 0.0f ? 0.0f : (g > 1.0f ? 1.0f : g);
    return v * g;
}

/* table[b] = the output code for the input whose code has byte b, as onnxruntime's
 * QlinearBuildLookupTable makes it: y = Q(f(DQ(x))). The op is then one load per element. */
static void build_table(uint8_t table[256], const qin_t *x, const qout_t *y, qfn_t f, float alpha)
{
    int32_t b;
    for (b = 0; b < 256; ++b) {
        int32_t q = x->t->dtype == ARENA_DT_INT8 && b >= 128 ? b - 256 : b;
        float v = f(x->scale * (float)(q - x->zp), alpha);
        table[b] = (uint8_t)arena_q_round(v / y->scale, y->zp, y->lo, y->hi);
    }
}

static void apply_table(const uint8_t table[256], const uint8_t *x, uint8_t *y, uint32_t n)
{
    uint32_t i;
    for (i = 0; i < n; ++i) {
        y[i] = table[x[i]];
    }
}

int arena_k_qlinear_unary(const arena_ctx_t *c)
{
    qin_t x;
    qout_t y;
    uint8_t table[256];
    qfn_t f;
    int rc = qin(c, 0, &x);
    if (rc == ARENA_OK) {
        rc = qout(c, 3, &y);
    }
    if (rc != ARENA_OK) {
        return rc;
    }
    if (!same_shape(x.t, y.t) || !alias_ok(&x, &y)) {
        return ARENA_ERR_SHAPE;
    }
    switch (c->op->type) {
    case ARENA_OP_QLINEAR_SIGMOID: f = fn_sigmoid; break;
    case ARENA_OP_QLINEAR_LEAKY_RELU: f = fn_leaky_relu; break;
    case ARENA_OP_QLINEAR_HARD_SWISH: f = fn_hard_swish; break;
    default: return ARENA_ERR_UNSUPPORTED;
    }
    build_table(table, &x, &y, f, c->op->attrs.alpha);
    apply_table(table, (const uint8_t *)x.data, (uint8_t *)y.data, y.t->elements);
    return ARENA_OK;
}

/* --- QLinearAdd, QLinearMul ---------------------------------------------------- */

/* Dim d of y's rank, right-aligned, of a tensor broadcast to rank `rank` (1 where it has none). */
static int32_t dim_at(const arena_tensor_t *t, int rank, int d)
{
    int td = d - (rank - (int)t->rank);
    return td < 0 ? 1 : t->shape[td];
}

/* y has the numpy broadcast shape of a and b; sa/sb: the inputs' element strides per
 * dim of y (0 where they broadcast). */
static int broadcast(const arena_tensor_t *a, const arena_tensor_t *b, const arena_tensor_t *y,
                     uint32_t sa[ARENA_MAX_RANK], uint32_t sb[ARENA_MAX_RANK])
{
    int r = (int)y->rank, d;
    uint32_t ka = 1u, kb = 1u;
    if (a->rank > y->rank || b->rank > y->rank) {
        return 0;
    }
    for (d = r - 1; d >= 0; --d) {
        int32_t ad = dim_at(a, r, d), bd = dim_at(b, r, d), yd = y->shape[d];
        if ((ad != yd && ad != 1) || (bd != yd && bd != 1) || (yd != ad && yd != bd)) {
            return 0;
        }
        sa[d] = ad == 1 ? 0u : ka;
        sb[d] = bd == 1 ? 0u : kb;
        ka *= (uint32_t)ad;
        kb *= (uint32_t)bd;
    }
    return 1;
}

/* onnxruntime's MlasQLinearAdd / MlasQLinearMul: float requantization of the
 * zero-point-free codes. */
int arena_k_qlinear_binary(const arena_ctx_t *c)
{
    qin_t a, b;
    qout_t y;
    uint32_t sa[ARENA_MAX_RANK], sb[ARENA_MAX_RANK], idx[ARENA_MAX_RANK];
    uint32_t i = 0, ia = 0, ib = 0, len, la, lb, k;
    float ra, rb, rm;
    int r, d, is_add = c->op->type == ARENA_OP_QLINEAR_ADD;
    int rc = qin(c, 0, &a);
    if (rc == ARENA_OK) {
        rc = qin(c, 3, &b);
    }
    if (rc == ARENA_OK) {
        rc = qout(c, 6, &y);
    }
    if (rc != ARENA_OK) {
        return rc;
    }
    if (!broadcast(a.t, b.t, y.t, sa, sb) || !alias_ok(&a, &y) || !alias_ok(&b, &y)) {
        return ARENA_ERR_SHAPE;
    }
    ra = a.scale / y.scale;
    rb = b.scale / y.scale;
    rm = a.scale * b.scale / y.scale;
    if (same_shape(a.t, y.t) && same_shape(b.t, y.t) && a.t->dtype == ARENA_DT_INT8 && b.t->dtype == ARENA_DT_INT8
        && y.t->dtype == ARENA_DT_INT8
        && arena_i8_binary((const int8_t *)a.data, (const int8_t *)b.data, (int8_t *)y.data, y.t->elements, a.zp,
                           b.zp, ra, rb, rm, is_add, y.zp, y.lo, y.hi)) {
        return ARENA_OK;
    }
    r = (int)y.t->rank;
    len = r > 0 ? (uint32_t)y.t->shape[r - 1] : 1u;
    la = r > 0 ? sa[r - 1] : 0u;
    lb = r > 0 ? sb[r - 1] : 0u;
    for (d = 0; d < r; ++d) {
        idx[d] = 0u;
    }
    while (i < y.t->elements) {
        /* One run along the last dim, then advance the outer multi-index. */
        for (k = 0; k < len; ++k, ++i) {
            int32_t u = code(&a, ia + k * la) - a.zp, v = code(&b, ib + k * lb) - b.zp;
            put(&y, i, is_add ? ra * (float)u + rb * (float)v : rm * (float)(u * v));
        }
        for (d = r - 2; d >= 0; --d) {
            ia += sa[d];
            ib += sb[d];
            if (++idx[d] < (uint32_t)y.t->shape[d]) {
                break;
            }
            ia -= sa[d] * idx[d];
            ib -= sb[d] * idx[d];
            idx[d] = 0u;
        }
    }
    return ARENA_OK;
}

/* --- QGemm ------------------------------------------------------------------------ */

/* Element strides (per row i, per column j) of QGemm's int32 bias C over the M x N
 * output: onnxruntime's GemmBroadcastBias shapes (), (1), (N), (1, N), (M, 1), (M, N). */
static int gemm_bias(const arena_tensor_t *ct, int32_t M, int32_t N, uint32_t *si, uint32_t *sj)
{
    *si = 0u;
    *sj = 0u;
    if (ct == NULL || ct->elements == 1u) {
        return ct == NULL || ct->dtype == ARENA_DT_INT32 ? ARENA_OK : ARENA_ERR_UNSUPPORTED;
    }
    if (ct->dtype != ARENA_DT_INT32) {
        return ARENA_ERR_UNSUPPORTED;
    }
    if ((ct->rank == 1 && ct->shape[0] == N) || (ct->rank == 2 && ct->shape[0] == 1 && ct->shape[1] == N)) {
        *sj = 1u;
    } else if (ct->rank == 2 && ct->shape[0] == M && ct->shape[1] == 1) {
        *si = 1u;
    } else if (ct->rank == 2 && ct->shape[0] == M && ct->shape[1] == N) {
        *si = (uint32_t)N;
        *sj = 1u;
    } else {
        return ARENA_ERR_SHAPE;
    }
    return ARENA_OK;
}

/* Y = alpha * a_scale * b_scale[j] * (A' B' + C) with A' = A - a_zp, B' = B - b_zp[j],
 * requantized to y_scale / y_zp, or float32 when y_scale is absent. */
int arena_k_qgemm(const arena_ctx_t *c)
{
    const arena_attrs_t *at = &c->op->attrs;
    const arena_tensor_t *ta = arena_in(c, 0), *tb = arena_in(c, 3), *ty = arena_out(c, 0);
    const int32_t *C = (const int32_t *)arena_in_data(c, 6);
    int quant_out = arena_in(c, 7) != NULL;
    qin_t a, b;
    qout_t y;
    uint32_t si, sj, ai, ak, bk, bj;
    int32_t M, N, K, i, j, k;
    int rc;
    memset(&y, 0, sizeof y);
    if (ta == NULL || tb == NULL || ty == NULL || ta->rank != 2 || tb->rank != 2 || ty->rank != 2) {
        return ARENA_ERR_SHAPE;
    }
    if ((at->trans_a != 0 && at->trans_a != 1) || (at->trans_b != 0 && at->trans_b != 1)) {
        return ARENA_ERR_UNSUPPORTED;
    }
    M = ta->shape[at->trans_a ? 1 : 0];
    K = ta->shape[at->trans_a ? 0 : 1];
    N = tb->shape[at->trans_b ? 0 : 1];
    if (tb->shape[at->trans_b ? 1 : 0] != K || ty->shape[0] != M || ty->shape[1] != N || K > INT32_MAX / (255 * 255)) {
        return ARENA_ERR_SHAPE;
    }
    rc = qin(c, 0, &a);
    if (rc == ARENA_OK) {
        rc = arena_q_check(c, 3, (uint32_t)N);
    }
    if (rc == ARENA_OK) {
        rc = gemm_bias(arena_in(c, 6), M, N, &si, &sj);
    }
    if (rc == ARENA_OK && quant_out) {
        rc = qout(c, 7, &y);
    } else if (rc == ARENA_OK && (ty->dtype != ARENA_DT_FLOAT32 || arena_in(c, 8) != NULL)) {
        rc = ARENA_ERR_UNSUPPORTED; /* no y_scale: a float32 output, no zero point */
    }
    if (rc != ARENA_OK) {
        return rc;
    }
    if (arena_i8_qgemm(c, M, N, K, si, sj, quant_out, y.lo, y.hi)) {
        return ARENA_OK;
    }
    memset(&b, 0, sizeof b); /* B's parameters are per column, read below */
    b.t = tb;
    b.data = arena_in_data(c, 3);
    /* Element (i, k) of A is at i * ai + k * ak; (k, j) of B at k * bk + j * bj. */
    ai = at->trans_a ? 1u : (uint32_t)K;
    ak = at->trans_a ? (uint32_t)M : 1u;
    bk = at->trans_b ? 1u : (uint32_t)N;
    bj = at->trans_b ? (uint32_t)K : 1u;
    for (j = 0; j < N; ++j) {
        float scale = at->alpha * a.scale * arena_q_scale(c, 4, (uint32_t)j);
        int32_t b_zp = arena_q_zp(c, 5, (uint32_t)j);
        if (quant_out) {
            scale /= y.scale;
        }
        for (i = 0; i < M; ++i) {
            uint32_t yi = (uint32_t)i * (uint32_t)N + (uint32_t)j;
            int32_t acc = 0;
            for (k = 0; k < K; ++k) {
                acc += (code(&a, (uint32_t)i * ai + (uint32_t)k * ak) - a.zp)
                       * (code(&b, (uint32_t)k * bk + (uint32_t)j * bj) - b_zp);
            }
            if (C != NULL) {
                acc = arena_q_bias_add(C[(uint32_t)i * si + (uint32_t)j * sj], acc);
            }
            if (quant_out) {
                put(&y, yi, (float)acc * scale);
            } else {
                ((float *)arena_out_data(c, 0))[yi] = (float)acc * scale;
            }
        }
    }
    return ARENA_OK;
}

/* --- QLinearAveragePool, QLinearGlobalAveragePool ----------------------------------- */

/* Pooled size of one dim (floor mode), or -1 when the window does not fit. */
static int32_t pooled(int32_t in, int32_t k, int32_t stride, int32_t p0, int32_t p1)
{
    return in + p0 + p1 < k ? -1 : (in + p0 + p1 - k) / stride + 1;
}

/* onnxruntime's QLinearPool2DTask: the mean of the dequantized window (clipped to
 * the input; count_include_pad divides by the kernel size), quantized. NCHW only. */
int arena_k_qlinear_pool(const arena_ctx_t *c)
{
    const arena_attrs_t *a = &c->op->attrs;
    const int32_t *k = a->kernel, *s = a->strides, *p = a->pads;
    qin_t x;
    qout_t y;
    int32_t xd[4], yd[4], nc, oh, ow, ih, iw;
    uint32_t yi = 0;
    int rc = qin(c, 0, &x);
    if (rc == ARENA_OK) {
        rc = qout(c, 3, &y);
    }
    if (rc != ARENA_OK) {
        return rc;
    }
    if (nchw(x.t, xd) || nchw(y.t, yd) || x.t->rank != y.t->rank || yd[0] != xd[0] || yd[1] != xd[1]) {
        return ARENA_ERR_SHAPE;
    }
    /* onnxruntime refuses pads >= kernel; a dilated or ceil-mode pool has other output sizes. */
    if (k[0] < 1 || k[1] < 1 || s[0] < 1 || s[1] < 1 || p[0] < 0 || p[1] < 0 || p[2] < 0 || p[3] < 0
        || p[0] >= k[0] || p[2] >= k[0] || p[1] >= k[1] || p[3] >= k[1] || a->dilations[0] > 1 || a->dilations[1] > 1) {
        return ARENA_ERR_SHAPE;
    }
    if (yd[2] != pooled(xd[2], k[0], s[0], p[0], p[2]) || yd[3] != pooled(xd[3], k[1], s[1], p[1], p[3])) {
        return ARENA_ERR_SHAPE;
    }
    for (nc = 0; nc < xd[0] * xd[1]; ++nc) {
        uint32_t plane = (uint32_t)nc * (uint32_t)xd[2] * (uint32_t)xd[3];
        for (oh = 0; oh < yd[2]; ++oh) {
            int32_t hs = oh * s[0] - p[0], he = hs + k[0] < xd[2] ? hs + k[0] : xd[2];
            hs = hs > 0 ? hs : 0;
            for (ow = 0; ow < yd[3]; ++ow, ++yi) {
                int32_t ws = ow * s[1] - p[1], we = ws + k[1] < xd[3] ? ws + k[1] : xd[3], sum = 0, count;
                ws = ws > 0 ? ws : 0;
                for (ih = hs; ih < he; ++ih) {
                    for (iw = ws; iw < we; ++iw) {
                        sum += code(&x, plane + (uint32_t)(ih * xd[3] + iw)) - x.zp;
                    }
                }
                count = a->count_include_pad ? k[0] * k[1] : (he - hs) * (we - ws);
                put(&y, yi, (float)sum * x.scale / (float)count / y.scale);
            }
        }
    }
    return ARENA_OK;
}

/* onnxruntime's MlasQLinearGlobalAveragePoolNchw: integer sums, one requantization. */
int arena_k_qlinear_global_pool(const arena_ctx_t *c)
{
    qin_t x;
    qout_t y;
    uint32_t nc, n_nc, spatial, i;
    float scale;
    int d, rc = qin(c, 0, &x);
    if (rc == ARENA_OK) {
        rc = qout(c, 3, &y);
    }
    if (rc != ARENA_OK) {
        return rc;
    }
    if (x.t->rank < 3 || y.t->rank != x.t->rank || y.t->shape[0] != x.t->shape[0] || y.t->shape[1] != x.t->shape[1]) {
        return ARENA_ERR_SHAPE;
    }
    for (d = 2; d < (int)y.t->rank; ++d) {
        if (y.t->shape[d] != 1) {
            return ARENA_ERR_SHAPE;
        }
    }
    n_nc = arena_dims_product(x.t, 0, 2);
    spatial = arena_dims_product(x.t, 2, x.t->rank);
    if (spatial == 0u || spatial > 4194304u) {
        return ARENA_ERR_SHAPE; /* no mean, or sum - zp * spatial could overflow int32 */
    }
    scale = x.scale / (y.scale * (float)spatial);
    for (nc = 0; nc < n_nc; ++nc) {
        int32_t sum = 0;
        for (i = 0; i < spatial; ++i) {
            sum += code(&x, nc * spatial + i);
        }
        put(&y, nc, (float)(sum - x.zp * (int32_t)spatial) * scale);
    }
    return ARENA_OK;
}

/* --- QLinearConcat ------------------------------------------------------------------ */

/* Inputs: Y_scale, Y_zp, then (X, X_scale, X_zp) per input; a trailing absent X_zp may be cut. */
static int concat_inputs(const arena_ctx_t *c)
{
    int n = (int)c->op->n_inputs - 2;
    return n >= 2 && n % 3 != 1 ? (n + 2) / 3 : 0;
}

/* Input X's dims equal Y's except along the axis. */
static int concat_fits(const arena_tensor_t *x, const arena_tensor_t *y, int32_t axis)
{
    int d;
    if (x->rank != y->rank) {
        return 0;
    }
    for (d = 0; d < (int)y->rank; ++d) {
        if (d != axis && x->shape[d] != y->shape[d]) {
            return 0;
        }
    }
    return 1;
}

/* Each input is copied where its codes are already the output's (same dtype, scale and
 * zero point, no narrowed range), else requantized through a table (onnxruntime's
 * QLinearConcat does the same). */
int arena_k_qlinear_concat(const arena_ctx_t *c)
{
    int32_t axis = c->op->attrs.axis, along = 0;
    int n = concat_inputs(c), i, rc;
    qout_t y;
    uint32_t outer, inner, y_row, offset = 0, o;
    rc = qout(c, 0, &y);
    if (rc != ARENA_OK) {
        return rc;
    }
    if (n == 0 || axis < 0 || axis >= (int32_t)y.t->rank) {
        return ARENA_ERR_SHAPE;
    }
    for (i = 0; i < n; ++i) {
        qin_t x;
        rc = qin(c, 2 + 3 * i, &x);
        if (rc != ARENA_OK) {
            return rc;
        }
        if (!concat_fits(x.t, y.t, axis)) {
            return ARENA_ERR_SHAPE;
        }
        along += x.t->shape[axis];
    }
    if (along != y.t->shape[axis]) {
        return ARENA_ERR_SHAPE;
    }
    outer = arena_dims_product(y.t, 0, axis);
    inner = arena_dims_product(y.t, axis + 1, y.t->rank);
    y_row = (uint32_t)y.t->shape[axis] * inner;
    for (i = 0; i < n; ++i) {
        qin_t x;
        uint8_t table[256];
        uint32_t chunk;
        int copy;
        if (qin(c, 2 + 3 * i, &x) != ARENA_OK) {
            return ARENA_ERR_SHAPE; /* unreachable: checked above */
        }
        chunk = (uint32_t)x.t->shape[axis] * inner;
        copy = x.t->dtype == y.t->dtype && x.scale == y.scale && x.zp == y.zp
               && y.lo == (y.t->dtype == ARENA_DT_INT8 ? -128 : 0) && y.hi == (y.t->dtype == ARENA_DT_INT8 ? 127 : 255);
        if (!copy) {
            build_table(table, &x, &y, fn_identity, 0.0f);
        }
        for (o = 0; o < outer; ++o) {
            const uint8_t *src = (const uint8_t *)x.data + (size_t)o * chunk;
            uint8_t *dst = (uint8_t *)y.data + (size_t)o * y_row + offset;
            if (copy) {
                memcpy(dst, src, chunk);
            } else {
                apply_table(table, src, dst, chunk);
            }
        }
        offset += chunk;
    }
    return ARENA_OK;
}

/* --- QLinearSoftmax ------------------------------------------------------------------ */

/* floor(v) for finite |v| < 2^23 (others are integral already, or inf/NaN). */
static float floor_f(float v)
{
    float t;
    if (!(v > -8388608.0f && v < 8388608.0f)) {
        return v;
    }
    t = (float)(int32_t)v;
    return t > v ? t - 1.0f : t;
}

/* onnxruntime's QlinearSoftmaxCPU: e_j = exp((x_j - max) * x_scale) (its table of 256
 * entries holds exactly these, times a constant that cancels), then
 * y_j = rint(e_j * floor(1 / y_scale) / sum e) + y_zp, saturated (some older onnxruntime
 * releases wrapped int8 codes above 127 instead). */
int arena_k_qlinear_softmax(const arena_ctx_t *c)
{
    const arena_attrs_t *a = &c->op->attrs;
    qin_t x;
    qout_t y;
    uint32_t outer, n, inner, o, in, j;
    float y_mult;
    int rc = qin(c, 0, &x);
    if (rc == ARENA_OK) {
        rc = qout(c, 3, &y);
    }
    if (rc != ARENA_OK) {
        return rc;
    }
    if (!same_shape(x.t, y.t) || a->axis < 0 || a->axis >= (int32_t)x.t->rank) {
        return ARENA_ERR_SHAPE;
    }
    outer = arena_dims_product(x.t, 0, a->axis);
    /* Before opset 13 the input is coerced to 2-D at the axis. */
    n = arena_dims_product(x.t, a->axis, a->legacy_axis ? x.t->rank : a->axis + 1);
    inner = a->legacy_axis ? 1u : arena_dims_product(x.t, a->axis + 1, x.t->rank);
    y_mult = floor_f(1.0f / y.scale);
    for (o = 0; o < outer; ++o) {
        for (in = 0; in < inner; ++in) {
            uint32_t base = o * n * inner + in;
            int32_t mx = -128;
            float sum = 0.0f;
            for (j = 0; j < n; ++j) {
                int32_t v = code(&x, base + j * inner);
                mx = v > mx ? v : mx;
            }
            for (j = 0; j < n; ++j) {
                sum += arena_expf((float)(code(&x, base + j * inner) - mx) * x.scale);
            }
            for (j = 0; j < n; ++j) {
                float e = arena_expf((float)(code(&x, base + j * inner) - mx) * x.scale);
                put(&y, base + j * inner, e * y_mult / sum);
            }
        }
    }
    return ARENA_OK;
}
