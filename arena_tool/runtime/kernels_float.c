/* float32 kernels. NCHW layout; 1-D spatial ops (rank-3 tensors) run as H = 1.
 * Element-wise kernels read element i before writing element i, so they are
 * correct when the output shares its input's bytes (planned in-place ops). */
#include <string.h>

#include "arena_kernels.h"

#define FLT_BIG 3.402823466e38f

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

int arena_k_identity(const arena_ctx_t *c)
{
    const arena_tensor_t *x = arena_in(c, 0);
    const arena_tensor_t *y = arena_out(c, 0);
    void *src = arena_in_data(c, 0);
    void *dst = arena_out_data(c, 0);
    if (x == NULL || y == NULL) {
        return ARENA_ERR_SHAPE;
    }
    if (x->elements != y->elements || x->dtype != y->dtype) {
        return ARENA_ERR_SHAPE;
    }
    if (src != dst) {
        memmove(dst, src, (size_t)y->elements * arena_dtype_size(y->dtype));
    }
    return ARENA_OK;
}

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

int arena_k_conv(const arena_ctx_t *c)
{
    const arena_attrs_t *a = &c->op->attrs;
    const arena_tensor_t *xt = arena_in(c, 0), *wt = arena_in(c, 1), *yt = arena_out(c, 0);
    const float *x = (const float *)arena_in_data(c, 0);
    const float *w = (const float *)arena_in_data(c, 1);
    const float *bias = arena_in(c, 2) != NULL ? (const float *)arena_in_data(c, 2) : NULL;
    float *y = (float *)arena_out_data(c, 0);
    int32_t xd[4], yd[4];
    int32_t g, groups = a->group > 0 ? a->group : 1;
    int32_t cg, mg, kk, n, oh, ow, ci, ky, kx, m;
    size_t ws_bytes = 0;
    float *ws = NULL;
    if (xt == NULL || wt == NULL || yt == NULL || nchw(xt, xd) || nchw(yt, yd)) {
        return ARENA_ERR_SHAPE;
    }
    if (xt->dtype != ARENA_DT_FLOAT32 || wt->dtype != ARENA_DT_FLOAT32 || yt->dtype != ARENA_DT_FLOAT32) {
        return ARENA_ERR_UNSUPPORTED;
    }
    cg = xd[1] / groups;
    mg = yd[1] / groups;
    kk = cg * a->kernel[0] * a->kernel[1];
    if (c->op->workspace >= 0) {
        ws_bytes = c->m->tensors[c->op->workspace].size;
        ws = (float *)arena_tensor_data(c->m, c->base, c->op->workspace);
    }
    for (n = 0; n < xd[0]; ++n) {
        const float *xn = x + (size_t)n * (size_t)xd[1] * (size_t)xd[2] * (size_t)xd[3];
        float *yn = y + (size_t)n * (size_t)yd[1] * (size_t)yd[2] * (size_t)yd[3];
        for (g = 0; g < groups; ++g) {
            /* im2col over all output rows, one row at a time, or direct. */
            int32_t rows = 0;
            if (ws != NULL) {
                size_t row_bytes = (size_t)yd[3] * (size_t)kk * sizeof(float);
                rows = (int32_t)(ws_bytes / row_bytes);
                if (rows > yd[2]) {
                    rows = yd[2];
                }
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
                        }
                        yn[((size_t)m * (size_t)yd[2] + (size_t)oh) * (size_t)yd[3] + (size_t)ow] = acc;
                    }
                }
            }
        }
    }
    return ARENA_OK;
}

int arena_k_gemm(const arena_ctx_t *c)
{
    const arena_attrs_t *a = &c->op->attrs;
    const arena_tensor_t *at = arena_in(c, 0), *bt = arena_in(c, 1), *ct = arena_in(c, 2);
    const arena_tensor_t *yt = arena_out(c, 0);
    const float *A = (const float *)arena_in_data(c, 0);
    const float *B = (const float *)arena_in_data(c, 1);
    const float *C = ct != NULL ? (const float *)arena_in_data(c, 2) : NULL;
    float *Y = (float *)arena_out_data(c, 0);
    int32_t M, N, K, i, j, k;
    if (at == NULL || bt == NULL || yt == NULL || at->rank != 2 || bt->rank != 2 || yt->rank != 2) {
        return ARENA_ERR_SHAPE;
    }
    if (at->dtype != ARENA_DT_FLOAT32 || bt->dtype != ARENA_DT_FLOAT32) {
        return ARENA_ERR_UNSUPPORTED;
    }
    M = yt->shape[0];
    N = yt->shape[1];
    K = a->trans_a ? at->shape[0] : at->shape[1];
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
                size_t ci = 0;
                if (ct->rank == 1) {
                    ci = ct->shape[0] == 1 ? 0u : (size_t)j;
                } else if (ct->rank == 2) {
                    ci = (size_t)(ct->shape[0] == 1 ? 0 : i) * (size_t)ct->shape[1] + (size_t)(ct->shape[1] == 1 ? 0 : j);
                }
                acc += a->beta * C[ci];
            }
            Y[(size_t)i * (size_t)N + (size_t)j] = acc;
        }
    }
    return ARENA_OK;
}

int arena_k_matmul(const arena_ctx_t *c)
{
    const arena_tensor_t *at = arena_in(c, 0), *bt = arena_in(c, 1), *yt = arena_out(c, 0);
    const float *A = (const float *)arena_in_data(c, 0);
    const float *B = (const float *)arena_in_data(c, 1);
    float *Y = (float *)arena_out_data(c, 0);
    uint32_t batches, b, a_stride, b_stride;
    int32_t M, N, K, i, j, k;
    if (at == NULL || bt == NULL || yt == NULL || at->rank < 1 || bt->rank < 1) {
        return ARENA_ERR_SHAPE;
    }
    if (at->dtype != ARENA_DT_FLOAT32 || bt->dtype != ARENA_DT_FLOAT32) {
        return ARENA_ERR_UNSUPPORTED;
    }
    K = at->shape[at->rank - 1];
    M = at->rank >= 2 ? at->shape[at->rank - 2] : 1;
    N = bt->rank >= 2 ? bt->shape[bt->rank - 1] : 1;
    batches = (M * N) > 0 ? yt->elements / (uint32_t)(M * N) : 0u;
    a_stride = at->elements == batches * (uint32_t)(M * K) && batches > 1u ? (uint32_t)(M * K) : 0u;
    b_stride = bt->elements == batches * (uint32_t)(K * N) && batches > 1u ? (uint32_t)(K * N) : 0u;
    for (b = 0; b < batches; ++b) {
        const float *Ab = A + (size_t)b * a_stride;
        const float *Bb = B + (size_t)b * b_stride;
        float *Yb = Y + (size_t)b * (size_t)(M * N);
        for (i = 0; i < M; ++i) {
            for (j = 0; j < N; ++j) {
                float acc = 0.0f;
                for (k = 0; k < K; ++k) {
                    acc += Ab[(size_t)i * (size_t)K + (size_t)k] * Bb[(size_t)k * (size_t)N + (size_t)j];
                }
                Yb[(size_t)i * (size_t)N + (size_t)j] = acc;
            }
        }
    }
    return ARENA_OK;
}

int arena_k_unary(const arena_ctx_t *c)
{
    const arena_attrs_t *a = &c->op->attrs;
    const arena_tensor_t *xt = arena_in(c, 0), *yt = arena_out(c, 0);
    const float *x = (const float *)arena_in_data(c, 0);
    float *y = (float *)arena_out_data(c, 0);
    uint32_t i;
    if (xt == NULL || yt == NULL || xt->elements != yt->elements) {
        return ARENA_ERR_SHAPE;
    }
    if (xt->dtype != ARENA_DT_FLOAT32) {
        return ARENA_ERR_UNSUPPORTED;
    }
    for (i = 0; i < yt->elements; ++i) {
        float v = x[i];
        switch (c->op->type) {
        case ARENA_OP_RELU: v = v > 0.0f ? v : 0.0f; break;
        case ARENA_OP_CLIP: v = v < a->min ? a->min : (v > a->max ? a->max : v); break;
        case ARENA_OP_LEAKY_RELU: v = v >= 0.0f ? v : v * a->alpha; break;
        default: v = 1.0f / (1.0f + arena_expf(-v)); break;
        }
        y[i] = v;
    }
    return ARENA_OK;
}

/* Numpy broadcasting: per-output-dim strides of an input (0 where broadcast). */
static void bcast_strides(const arena_tensor_t *t, const arena_tensor_t *y, uint32_t s[ARENA_MAX_RANK])
{
    int d, off = (int)y->rank - (int)t->rank;
    uint32_t acc = 1u;
    for (d = (int)y->rank - 1; d >= 0; --d) {
        int td = d - off;
        if (td < 0 || t->shape[td] == 1) {
            s[d] = 0u;
        } else {
            s[d] = acc;
        }
        if (td >= 0) {
            acc *= (uint32_t)t->shape[td];
        }
    }
}

int arena_k_binary(const arena_ctx_t *c)
{
    const arena_tensor_t *at = arena_in(c, 0), *bt = arena_in(c, 1), *yt = arena_out(c, 0);
    const float *A = (const float *)arena_in_data(c, 0);
    const float *B = (const float *)arena_in_data(c, 1);
    float *Y = (float *)arena_out_data(c, 0);
    uint32_t sa[ARENA_MAX_RANK], sb[ARENA_MAX_RANK], idx[ARENA_MAX_RANK];
    uint32_t i, ia = 0, ib = 0;
    int d;
    if (at == NULL || bt == NULL || yt == NULL || at->rank > yt->rank || bt->rank > yt->rank) {
        return ARENA_ERR_SHAPE;
    }
    if (at->dtype != ARENA_DT_FLOAT32 || bt->dtype != ARENA_DT_FLOAT32) {
        return ARENA_ERR_UNSUPPORTED;
    }
    bcast_strides(at, yt, sa);
    bcast_strides(bt, yt, sb);
    for (d = 0; d < (int)yt->rank; ++d) {
        idx[d] = 0u;
    }
    for (i = 0; i < yt->elements; ++i) {
        float u = A[ia], v = B[ib], r;
        switch (c->op->type) {
        case ARENA_OP_ADD: r = u + v; break;
        case ARENA_OP_SUB: r = u - v; break;
        case ARENA_OP_MUL: r = u * v; break;
        default: r = u / v; break;
        }
        Y[i] = r;
        /* Advance the multi-index (last dim fastest). */
        for (d = (int)yt->rank - 1; d >= 0; --d) {
            idx[d] += 1u;
            ia += sa[d];
            ib += sb[d];
            if (idx[d] < (uint32_t)yt->shape[d]) {
                break;
            }
            ia -= sa[d] * idx[d];
            ib -= sb[d] * idx[d];
            idx[d] = 0u;
        }
    }
    return ARENA_OK;
}

int arena_k_pool(const arena_ctx_t *c)
{
    const arena_attrs_t *a = &c->op->attrs;
    const arena_tensor_t *xt = arena_in(c, 0), *yt = arena_out(c, 0);
    const float *x = (const float *)arena_in_data(c, 0);
    float *y = (float *)arena_out_data(c, 0);
    int32_t xd[4], yd[4], nc, oh, ow, ky, kx;
    int is_max = c->op->type == ARENA_OP_MAX_POOL;
    int32_t dh = a->dilations[0] > 0 ? a->dilations[0] : 1, dw = a->dilations[1] > 0 ? a->dilations[1] : 1;
    if (xt == NULL || yt == NULL || nchw(xt, xd) || nchw(yt, yd)) {
        return ARENA_ERR_SHAPE;
    }
    if (xt->dtype != ARENA_DT_FLOAT32) {
        return ARENA_ERR_UNSUPPORTED;
    }
    for (nc = 0; nc < xd[0] * xd[1]; ++nc) {
        const float *xc = x + (size_t)nc * (size_t)xd[2] * (size_t)xd[3];
        float *yc = y + (size_t)nc * (size_t)yd[2] * (size_t)yd[3];
        for (oh = 0; oh < yd[2]; ++oh) {
            for (ow = 0; ow < yd[3]; ++ow) {
                int32_t hs = oh * a->strides[0] - a->pads[0];
                int32_t ws = ow * a->strides[1] - a->pads[1];
                float acc = is_max ? -FLT_BIG : 0.0f;
                int32_t count = 0, padded;
                int32_t he = hs + a->kernel[0], we = ws + a->kernel[1];
                if (he > xd[2] + a->pads[2]) {
                    he = xd[2] + a->pads[2];
                }
                if (we > xd[3] + a->pads[3]) {
                    we = xd[3] + a->pads[3];
                }
                padded = (he - hs) * (we - ws);
                for (ky = 0; ky < a->kernel[0]; ++ky) {
                    int32_t ih = hs + ky * (is_max ? dh : 1);
                    if (ih < 0 || ih >= xd[2]) {
                        continue;
                    }
                    for (kx = 0; kx < a->kernel[1]; ++kx) {
                        int32_t iw = ws + kx * (is_max ? dw : 1);
                        float v;
                        if (iw < 0 || iw >= xd[3]) {
                            continue;
                        }
                        v = xc[(size_t)ih * (size_t)xd[3] + (size_t)iw];
                        if (is_max) {
                            acc = v > acc ? v : acc;
                        } else {
                            acc += v;
                        }
                        ++count;
                    }
                }
                if (!is_max) {
                    int32_t div = a->count_include_pad ? padded : count;
                    acc = div > 0 ? acc / (float)div : 0.0f;
                }
                yc[(size_t)oh * (size_t)yd[3] + (size_t)ow] = acc;
            }
        }
    }
    return ARENA_OK;
}

int arena_k_global_pool(const arena_ctx_t *c)
{
    const arena_tensor_t *xt = arena_in(c, 0), *yt = arena_out(c, 0);
    const float *x = (const float *)arena_in_data(c, 0);
    float *y = (float *)arena_out_data(c, 0);
    uint32_t nc, i, n_nc, spatial;
    if (xt == NULL || yt == NULL || xt->rank < 2) {
        return ARENA_ERR_SHAPE;
    }
    if (xt->dtype != ARENA_DT_FLOAT32) {
        return ARENA_ERR_UNSUPPORTED;
    }
    n_nc = arena_dims_product(xt, 0, 2);
    spatial = arena_dims_product(xt, 2, xt->rank);
    for (nc = 0; nc < n_nc; ++nc) {
        const float *xc = x + (size_t)nc * spatial;
        float acc = c->op->type == ARENA_OP_GLOBAL_MAX_POOL ? -FLT_BIG : 0.0f;
        for (i = 0; i < spatial; ++i) {
            if (c->op->type == ARENA_OP_GLOBAL_MAX_POOL) {
                acc = xc[i] > acc ? xc[i] : acc;
            } else {
                acc += xc[i];
            }
        }
        y[nc] = c->op->type == ARENA_OP_GLOBAL_MAX_POOL ? acc : acc / (float)spatial;
    }
    return ARENA_OK;
}

int arena_k_softmax(const arena_ctx_t *c)
{
    const arena_attrs_t *a = &c->op->attrs;
    const arena_tensor_t *xt = arena_in(c, 0), *yt = arena_out(c, 0);
    const float *x = (const float *)arena_in_data(c, 0);
    float *y = (float *)arena_out_data(c, 0);
    uint32_t outer, n, inner, o, in, j;
    if (xt == NULL || yt == NULL) {
        return ARENA_ERR_SHAPE;
    }
    if (xt->dtype != ARENA_DT_FLOAT32) {
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

int arena_k_concat(const arena_ctx_t *c)
{
    const arena_attrs_t *a = &c->op->attrs;
    const arena_tensor_t *yt = arena_out(c, 0);
    uint8_t *y = (uint8_t *)arena_out_data(c, 0);
    size_t es, outer, o, pos = 0;
    int i;
    if (yt == NULL) {
        return ARENA_ERR_SHAPE;
    }
    es = arena_dtype_size(yt->dtype);
    if (es == 0) {
        return ARENA_ERR_UNSUPPORTED;
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
    if (xt == NULL || yt == NULL || xt->rank < 2 || scale == NULL || bias == NULL || mean == NULL || var == NULL) {
        return ARENA_ERR_SHAPE;
    }
    if (xt->dtype != ARENA_DT_FLOAT32) {
        return ARENA_ERR_UNSUPPORTED;
    }
    C = (uint32_t)xt->shape[1];
    spatial = arena_dims_product(xt, 2, xt->rank);
    for (n = 0; n < (uint32_t)xt->shape[0]; ++n) {
        for (ch = 0; ch < C; ++ch) {
            float k = scale[ch] / arena_sqrtf(var[ch] + c->op->attrs.epsilon);
            size_t b = ((size_t)n * C + ch) * spatial;
            for (i = 0; i < spatial; ++i) {
                y[b + i] = (x[b + i] - mean[ch]) * k + bias[ch];
            }
        }
    }
    return ARENA_OK;
}
