/* int8/uint8 kernels: ONNX linear quantization, q = saturate(rint(x / s) + zp),
 * x = (q - zp) * s, with per-tensor or per-axis scales. QLinear ops requantize
 * an int32 accumulator with the float multiplier s_x * s_w / s_y, rounding
 * half to even (ONNX Runtime may differ by one step on exact ties).
 *
 * Also the quantization helpers every quantized kernel shares (arena_q_*,
 * declared in kernels_qlinear.c): operand checks, loads, the requantize/store path. */
#include <string.h>

#include "arena_kernels.h"

/* --- shared helpers ------------------------------------------------------ */

static int is_q8(uint8_t dtype)
{
    return dtype == ARENA_DT_INT8 || dtype == ARENA_DT_UINT8;
}

int32_t arena_q_load(const arena_tensor_t *t, const void *data, uint32_t i)
{
    if (t == NULL || data == NULL) {
        return 0;
    }
    switch (t->dtype) {
    case ARENA_DT_INT8: return ((const int8_t *)data)[i];
    case ARENA_DT_UINT8: return ((const uint8_t *)data)[i];
    case ARENA_DT_INT32: return ((const int32_t *)data)[i];
    default: return 0;
    }
}

/* Stores a value already inside the tensor's int8/uint8 range: the low byte is
 * its two's complement (int8_t) or plain (uint8_t) representation. */
void arena_q_put(void *data, uint32_t i, int32_t q)
{
    ((uint8_t *)data)[i] = (uint8_t)q;
}

/* The requantize step of every quantized output: rint(v) + zp clamped to
 * [lo, hi] (the dtype's range, narrowed by an absorbed Relu/Clip). Clamping in
 * float first keeps the int conversion defined for any v (NaN gives lo). */
int32_t arena_q_round(float v, int32_t zp, int32_t lo, int32_t hi)
{
    float r = arena_rintf(v) + (float)zp;
    if (!(r > (float)lo)) {
        return lo;
    }
    return r < (float)hi ? (int32_t)r : hi;
}

/* bias + dot with int32 wraparound (onnxruntime's arithmetic), without signed overflow. */
int32_t arena_q_bias_add(int32_t bias, int32_t dot)
{
    uint32_t s = (uint32_t)bias + (uint32_t)dot;
    return s <= (uint32_t)INT32_MAX ? (int32_t)s : -(int32_t)(~s) - 1;
}

/* Scale entry k of the float tensor at input s (entry 0 when it has one). */
float arena_q_scale(const arena_ctx_t *c, int s, uint32_t k)
{
    const arena_tensor_t *t = arena_in(c, s);
    const float *d = (const float *)arena_in_data(c, s);
    return d[t->elements > 1u ? k : 0u];
}

/* Zero point entry k at input z (0 when absent). */
int32_t arena_q_zp(const arena_ctx_t *c, int z, uint32_t k)
{
    const arena_tensor_t *t = arena_in(c, z);
    if (t == NULL) {
        return 0;
    }
    return arena_q_load(t, arena_in_data(c, z), t->elements > 1u ? k : 0u);
}

/* A quantized operand: tensor x at input `x`, int8/uint8; its float32 scale at x+1
 * and its zero point at x+2 (absent = 0, else x's dtype) with 1 or `n` entries
 * each (n = 1: per-tensor only). */
int arena_q_check(const arena_ctx_t *c, int x, uint32_t n)
{
    const arena_tensor_t *xt = arena_in(c, x), *st = arena_in(c, x + 1), *zt = arena_in(c, x + 2);
    if (xt == NULL || st == NULL) {
        return ARENA_ERR_SHAPE;
    }
    if (!is_q8(xt->dtype) || st->dtype != ARENA_DT_FLOAT32 || (zt != NULL && zt->dtype != xt->dtype)) {
        return ARENA_ERR_UNSUPPORTED;
    }
    if ((st->elements != 1u && st->elements != n) || (zt != NULL && zt->elements != 1u && zt->elements != n)) {
        return ARENA_ERR_UNSUPPORTED;
    }
    return ARENA_OK;
}

/* The quantized output 0: int8/uint8, per-tensor float32 scale at input s and zero
 * point at s+1 (absent = 0, else the output's dtype); [*lo, *hi] is its integer
 * range, narrowed by attrs.out_min/out_max when out_min < out_max. */
int arena_q_out(const arena_ctx_t *c, int s, int32_t *lo, int32_t *hi)
{
    const arena_attrs_t *a = &c->op->attrs;
    const arena_tensor_t *yt = arena_out(c, 0), *st = arena_in(c, s), *zt = arena_in(c, s + 1);
    if (yt == NULL || st == NULL) {
        return ARENA_ERR_SHAPE;
    }
    if (!is_q8(yt->dtype) || st->dtype != ARENA_DT_FLOAT32 || (zt != NULL && zt->dtype != yt->dtype)) {
        return ARENA_ERR_UNSUPPORTED;
    }
    if (st->elements != 1u || (zt != NULL && zt->elements != 1u)) {
        return ARENA_ERR_UNSUPPORTED;
    }
    *lo = yt->dtype == ARENA_DT_INT8 ? -128 : 0;
    *hi = yt->dtype == ARENA_DT_INT8 ? 127 : 255;
    if (a->out_min < a->out_max) {
        *lo = a->out_min > *lo ? a->out_min : *lo;
        *hi = a->out_max < *hi ? a->out_max : *hi;
    }
    return ARENA_OK;
}

/* --- QuantizeLinear, DequantizeLinear ------------------------------------- */

/* Which scale/zero-point entry element i of `x` uses (per-axis when the scale has more than one). */
static uint32_t axis_index(const arena_tensor_t *x, const arena_tensor_t *scale, int32_t axis, uint32_t i)
{
    uint32_t inner;
    if (scale->elements <= 1u) {
        return 0u;
    }
    inner = arena_dims_product(x, axis + 1, x->rank);
    return (i / inner) % (uint32_t)x->shape[axis];
}

/* Scale (and zero point) of `x`: float32, one entry or one per index of attrs.axis;
 * the zero point, when present, of dtype `zdtype` with as many entries as the scale. */
static int check_qparams(const arena_ctx_t *c, const arena_tensor_t *x, uint8_t zdtype)
{
    const arena_tensor_t *st = arena_in(c, 1), *zt = arena_in(c, 2);
    int32_t axis = c->op->attrs.axis;
    if (st == NULL || st->dtype != ARENA_DT_FLOAT32 || (zt != NULL && zt->dtype != zdtype)) {
        return ARENA_ERR_UNSUPPORTED;
    }
    if (st->elements > 1u && (axis < 0 || axis >= (int32_t)x->rank || st->elements != (uint32_t)x->shape[axis])) {
        return ARENA_ERR_SHAPE;
    }
    if (zt != NULL && zt->elements != st->elements) {
        return ARENA_ERR_SHAPE;
    }
    return ARENA_OK;
}

int arena_k_quantize(const arena_ctx_t *c)
{
    const arena_tensor_t *xt = arena_in(c, 0), *st = arena_in(c, 1), *yt = arena_out(c, 0);
    const float *x = (const float *)arena_in_data(c, 0);
    void *y = arena_out_data(c, 0);
    uint32_t i;
    int32_t lo, hi;
    int rc;
    if (xt == NULL || yt == NULL || xt->elements != yt->elements) {
        return ARENA_ERR_SHAPE;
    }
    if (xt->dtype != ARENA_DT_FLOAT32 || !is_q8(yt->dtype)) {
        return ARENA_ERR_UNSUPPORTED;
    }
    rc = check_qparams(c, xt, yt->dtype);
    if (rc != ARENA_OK) {
        return rc;
    }
    lo = yt->dtype == ARENA_DT_INT8 ? -128 : 0;
    hi = yt->dtype == ARENA_DT_INT8 ? 127 : 255;
    if (st->elements <= 1u) { /* per tensor: the parameters once */
        float scale = arena_q_scale(c, 1, 0);
        int32_t zp = arena_q_zp(c, 2, 0);
        arena_i8_quantize(x, y, yt->elements, scale, zp, lo, hi);
        return ARENA_OK;
    }
    for (i = 0; i < yt->elements; ++i) {
        uint32_t k = axis_index(xt, st, c->op->attrs.axis, i);
        arena_q_put(y, i, arena_q_round(x[i] / arena_q_scale(c, 1, k), arena_q_zp(c, 2, k), lo, hi));
    }
    return ARENA_OK;
}

int arena_k_dequantize(const arena_ctx_t *c)
{
    const arena_tensor_t *xt = arena_in(c, 0), *st = arena_in(c, 1), *yt = arena_out(c, 0);
    const void *x = arena_in_data(c, 0);
    float *y = (float *)arena_out_data(c, 0);
    uint32_t i;
    int rc;
    if (xt == NULL || yt == NULL || xt->elements != yt->elements) {
        return ARENA_ERR_SHAPE;
    }
    if (yt->dtype != ARENA_DT_FLOAT32 || !(is_q8(xt->dtype) || xt->dtype == ARENA_DT_INT32)) {
        return ARENA_ERR_UNSUPPORTED;
    }
    rc = check_qparams(c, xt, xt->dtype);
    if (rc != ARENA_OK) {
        return rc;
    }
    /* In place is possible only for int32 -> float32 (same width): forward order is safe then. */
    if (st->elements <= 1u && xt->dtype == ARENA_DT_INT8) { /* per tensor: the parameters once */
        const int8_t *xi = (const int8_t *)x;
        float scale = arena_q_scale(c, 1, 0);
        int32_t zp = arena_q_zp(c, 2, 0);
        for (i = 0; i < yt->elements; ++i) {
            y[i] = (float)((int32_t)xi[i] - zp) * scale;
        }
        return ARENA_OK;
    }
    for (i = 0; i < yt->elements; ++i) {
        uint32_t k = axis_index(xt, st, c->op->attrs.axis, i);
        y[i] = (float)(arena_q_load(xt, x, i) - arena_q_zp(c, 2, k)) * arena_q_scale(c, 1, k);
    }
    return ARENA_OK;
}

/* --- QLinearConv ------------------------------------------------------------ */

/* A conv's sizes (arena_conv_dims_t, arena_kernels.h). */
typedef arena_conv_dims_t conv_dims_t;

/* Output size of one spatial dim, or -1 when the window does not fit. */
static int32_t conv_out(int32_t in, int32_t k, int32_t stride, int32_t dil, int32_t p0, int32_t p1)
{
    int32_t span = (k - 1) * dil + 1;
    if (in + p0 + p1 < span) {
        return -1;
    }
    return (in + p0 + p1 - span) / stride + 1;
}

/* Checks the conv's tensors and attributes against each other and fills *d. */
static int conv_dims(const arena_ctx_t *c, conv_dims_t *d)
{
    const arena_attrs_t *a = &c->op->attrs;
    const arena_tensor_t *xt = arena_in(c, 0), *wt = arena_in(c, 3), *yt = arena_out(c, 0), *bt = arena_in(c, 8);
    int r;
    if (xt == NULL || wt == NULL || yt == NULL || (xt->rank != 3 && xt->rank != 4) || wt->rank != xt->rank
        || yt->rank != xt->rank) {
        return ARENA_ERR_SHAPE;
    }
    r = xt->rank;
    d->n = xt->shape[0];
    d->c = xt->shape[1];
    d->h = r == 4 ? xt->shape[2] : 1;
    d->w = xt->shape[r - 1];
    d->m = yt->shape[1];
    d->oh = r == 4 ? yt->shape[2] : 1;
    d->ow = yt->shape[r - 1];
    d->groups = a->group > 0 ? a->group : 1;
    if (a->kernel[0] < 1 || a->kernel[1] < 1 || a->strides[0] < 1 || a->strides[1] < 1 || a->dilations[0] < 1
        || a->dilations[1] < 1 || a->pads[0] < 0 || a->pads[1] < 0 || a->pads[2] < 0 || a->pads[3] < 0) {
        return ARENA_ERR_SHAPE;
    }
    if (d->c % d->groups != 0 || d->m % d->groups != 0 || yt->shape[0] != d->n || wt->shape[0] != d->m
        || wt->shape[1] != d->c / d->groups || wt->shape[r - 1] != a->kernel[1]
        || (r == 4 ? wt->shape[2] : 1) != a->kernel[0]) {
        return ARENA_ERR_SHAPE;
    }
    if (d->oh != conv_out(d->h, a->kernel[0], a->strides[0], a->dilations[0], a->pads[0], a->pads[2])
        || d->ow != conv_out(d->w, a->kernel[1], a->strides[1], a->dilations[1], a->pads[1], a->pads[3])) {
        return ARENA_ERR_SHAPE;
    }
    if (bt != NULL && (bt->dtype != ARENA_DT_INT32 || bt->elements != (uint32_t)d->m)) {
        return bt->dtype != ARENA_DT_INT32 ? ARENA_ERR_UNSUPPORTED : ARENA_ERR_SHAPE;
    }
    d->cg = d->c / d->groups;
    d->mg = d->m / d->groups;
    d->kk = d->cg * a->kernel[0] * a->kernel[1];
    if (d->kk > INT32_MAX / (255 * 255)) {
        return ARENA_ERR_SHAPE; /* the int32 accumulator could overflow */
    }
    return ARENA_OK;
}

/* What writing output channel m needs. */
typedef struct {
    void *y;
    float mult;   /* x_scale * w_scale[m] / y_scale */
    int32_t w_zp, bias, y_zp, lo, hi;
} conv_chan_t;

static conv_chan_t conv_chan(const arena_ctx_t *c, int32_t m, int32_t lo, int32_t hi)
{
    conv_chan_t ch;
    ch.y = arena_out_data(c, 0);
    ch.mult = arena_q_scale(c, 1, 0) * arena_q_scale(c, 4, (uint32_t)m) / arena_q_scale(c, 6, 0);
    ch.w_zp = arena_q_zp(c, 5, (uint32_t)m);
    ch.bias = arena_q_load(arena_in(c, 8), arena_in_data(c, 8), (uint32_t)m);
    ch.y_zp = arena_q_zp(c, 7, 0);
    ch.lo = lo;
    ch.hi = hi;
    return ch;
}

/* One output pixel's taps over one input plane (x from element x_base, H x W) and
 * one kernel (w from w_base), any int8/uint8 mix: the loop the reference pixel and the
 * in-place depthwise conv share (integer, so every path gives the same codes). The int8
 * fast paths are kernels_int8.c's. */
static int32_t qconv_taps(const arena_tensor_t *xt, const void *x, uint32_t x_base, const arena_tensor_t *wt,
                          const void *w, uint32_t w_base, const conv_dims_t *d, const arena_attrs_t *a,
                          int32_t oh, int32_t ow, int32_t x_zp, int32_t w_zp)
{
    int32_t acc = 0, ky, kx;
    for (ky = 0; ky < a->kernel[0]; ++ky) {
        int32_t ih = oh * a->strides[0] - a->pads[0] + ky * a->dilations[0];
        if (ih < 0 || ih >= d->h) {
            continue;
        }
        for (kx = 0; kx < a->kernel[1]; ++kx) {
            int32_t iw = ow * a->strides[1] - a->pads[1] + kx * a->dilations[1];
            uint32_t xi, wi;
            if (iw < 0 || iw >= d->w) {
                continue;
            }
            xi = x_base + (uint32_t)(ih * d->w + iw);
            wi = w_base + (uint32_t)(ky * a->kernel[1] + kx);
            acc += (arena_q_load(xt, x, xi) - x_zp) * (arena_q_load(wt, w, wi) - w_zp);
        }
    }
    return acc;
}

/* One output pixel's accumulator, any int8/uint8 mix: the reference loop. */
static int32_t qconv_pixel(const arena_ctx_t *c, const conv_dims_t *d, int32_t n, int32_t m, int32_t oh, int32_t ow,
                           int32_t x_zp, int32_t w_zp)
{
    const arena_attrs_t *a = &c->op->attrs;
    uint32_t taps = (uint32_t)(a->kernel[0] * a->kernel[1]), plane = (uint32_t)(d->h * d->w);
    int32_t g = m / d->mg, acc = 0, ci;
    for (ci = 0; ci < d->cg; ++ci) {
        uint32_t x_base = (uint32_t)(n * d->c + g * d->cg + ci) * plane;
        acc += qconv_taps(arena_in(c, 0), arena_in_data(c, 0), x_base, arena_in(c, 3), arena_in_data(c, 3),
                          (uint32_t)(m * d->cg + ci) * taps, d, a, oh, ow, x_zp, w_zp);
    }
    return acc;
}

/* Output pixel p (of OH * OW) of channel m, image n. */
static void qconv_store(const conv_dims_t *d, const conv_chan_t *ch, int32_t n, int32_t m, int32_t p, int32_t acc)
{
    uint32_t yi = (uint32_t)((n * d->m + m) * d->oh * d->ow + p);
    float v = (float)arena_q_bias_add(ch->bias, acc) * ch->mult;
    arena_q_put(ch->y, yi, arena_q_round(v, ch->y_zp, ch->lo, ch->hi));
}

/* Depthwise in place (arena_dw_in_place, TinyEngine's scheme) for a QLinearConv:
 * one byte per element on both sides. */
static int dw_in_place(const arena_ctx_t *c, const conv_dims_t *d, void **temp)
{
    size_t plane = (size_t)d->h * (size_t)d->w;
    return arena_dw_in_place(c, arena_in_data(c, 0), (size_t)d->n * (size_t)d->c * plane, arena_out_data(c, 0),
                             (size_t)d->n * (size_t)d->m * (size_t)d->oh * (size_t)d->ow, plane, 1u, temp);
}

/* The in-place depthwise conv through the one-channel temp (see dw_in_place):
 * the direct loop's integer arithmetic (exact, so the same codes), reading
 * input channel i only from its copy (which keeps x's element type). */
static void qconv_dw_in_place(const arena_ctx_t *c, const conv_dims_t *d, void *temp, int32_t lo, int32_t hi)
{
    const arena_attrs_t *a = &c->op->attrs;
    const arena_tensor_t *xt = arena_in(c, 0), *wt = arena_in(c, 3);
    const uint8_t *x = (const uint8_t *)arena_in_data(c, 0);
    int32_t x_zp = arena_q_zp(c, 2, 0), taps = a->kernel[0] * a->kernel[1], oh, ow;
    size_t plane = (size_t)d->h * (size_t)d->w, chans = (size_t)d->n * (size_t)d->c, i;
    for (i = 0; i < chans; ++i) { /* increasing i: see dw_in_place */
        int32_t m = (int32_t)(i % (size_t)d->c);
        conv_chan_t ch = conv_chan(c, m, lo, hi);
        memcpy(temp, x + i * plane, plane);
        for (oh = 0; oh < d->oh; ++oh) {
            for (ow = 0; ow < d->ow; ++ow) {
                int32_t acc = qconv_taps(xt, temp, 0u, wt, arena_in_data(c, 3), (uint32_t)(m * taps), d, a,
                                         oh, ow, x_zp, ch.w_zp);
                qconv_store(d, &ch, (int32_t)(i / (size_t)d->c), m, oh * d->ow + ow, acc);
            }
        }
    }
}

int arena_k_qlinear_conv(const arena_ctx_t *c)
{
    conv_dims_t d;
    int32_t lo, hi, x_zp, n, m, oh, ow;
    int dw, rc = conv_dims(c, &d);
    if (rc == ARENA_OK) {
        rc = arena_q_check(c, 0, 1u);
    }
    if (rc == ARENA_OK) {
        rc = arena_q_check(c, 3, (uint32_t)d.m);
    }
    if (rc == ARENA_OK) {
        rc = arena_q_out(c, 6, &lo, &hi);
    }
    if (rc != ARENA_OK) {
        return rc;
    }
    dw = d.groups == d.c && d.m == d.c;
    if (dw) {
        /* Depthwise (one input channel per output channel): in place through its temp. */
        void *temp;
        rc = dw_in_place(c, &d, &temp);
        if (rc != ARENA_OK) {
            return rc;
        }
        if (arena_i8_conv(c, &d, lo, hi, temp)) {
            return ARENA_OK;
        }
        if (temp != NULL) {
            qconv_dw_in_place(c, &d, temp, lo, hi);
            return ARENA_OK;
        }
    } else if (arena_i8_conv(c, &d, lo, hi, NULL)) {
        return ARENA_OK;
    }
    /* The reference loop: any int8/uint8 mix, weight zero points, and what the fast paths
     * leave (kernels_int8.c: a column longer than its buffer, a band too narrow). */
    x_zp = arena_q_zp(c, 2, 0);
    for (n = 0; n < d.n; ++n) {
        for (m = 0; m < d.m; ++m) {
            conv_chan_t ch = conv_chan(c, m, lo, hi);
            for (oh = 0; oh < d.oh; ++oh) {
                for (ow = 0; ow < d.ow; ++ow) {
                    int32_t acc = qconv_pixel(c, &d, n, m, oh, ow, x_zp, ch.w_zp);
                    qconv_store(&d, &ch, n, m, oh * d.ow + ow, acc);
                }
            }
        }
    }
    return ARENA_OK;
}

/* --- QLinearMatMul ------------------------------------------------------------ */

/* Y[..., M, N] = A[..., M, K] B[..., K, N]; A and B each hold every batch of Y or one
 * matrix shared by all; B's scale/zero point per tensor or per column (N). */
int arena_k_qlinear_matmul(const arena_ctx_t *c)
{
    const arena_tensor_t *at = arena_in(c, 0), *bt = arena_in(c, 3), *yt = arena_out(c, 0);
    const void *A = arena_in_data(c, 0), *B = arena_in_data(c, 3);
    void *Y = arena_out_data(c, 0);
    uint32_t batches, a_stride, b_stride, bi;
    int32_t M, N, K, i, j, k, lo, hi, a_zp, y_zp;
    float a_scale, y_scale;
    int rc;
    if (at == NULL || bt == NULL || yt == NULL || at->rank < 2 || bt->rank < 2 || yt->rank < 2) {
        return ARENA_ERR_SHAPE;
    }
    M = at->shape[at->rank - 2];
    K = at->shape[at->rank - 1];
    N = bt->shape[bt->rank - 1];
    if (bt->shape[bt->rank - 2] != K || yt->shape[yt->rank - 2] != M || yt->shape[yt->rank - 1] != N
        || K > INT32_MAX / (255 * 255)) {
        return ARENA_ERR_SHAPE;
    }
    batches = (uint32_t)M * (uint32_t)N > 0u ? yt->elements / ((uint32_t)M * (uint32_t)N) : 0u;
    a_stride = at->elements == (uint32_t)M * (uint32_t)K ? 0u : (uint32_t)M * (uint32_t)K;
    b_stride = bt->elements == (uint32_t)K * (uint32_t)N ? 0u : (uint32_t)K * (uint32_t)N;
    if ((a_stride != 0u && at->elements != batches * a_stride)
        || (b_stride != 0u && bt->elements != batches * b_stride)) {
        return ARENA_ERR_SHAPE;
    }
    rc = arena_q_check(c, 0, 1u);
    if (rc == ARENA_OK) {
        rc = arena_q_check(c, 3, (uint32_t)N);
    }
    if (rc == ARENA_OK) {
        rc = arena_q_out(c, 6, &lo, &hi);
    }
    if (rc != ARENA_OK) {
        return rc;
    }
    a_scale = arena_q_scale(c, 1, 0);
    a_zp = arena_q_zp(c, 2, 0);
    y_scale = arena_q_scale(c, 6, 0);
    y_zp = arena_q_zp(c, 7, 0);
    for (bi = 0; bi < batches; ++bi) {
        uint32_t a0 = bi * a_stride, b0 = bi * b_stride, y0 = bi * (uint32_t)(M * N);
        for (j = 0; j < N; ++j) {
            float mult = a_scale * arena_q_scale(c, 4, (uint32_t)j) / y_scale;
            int32_t b_zp = arena_q_zp(c, 5, (uint32_t)j);
            for (i = 0; i < M; ++i) {
                int32_t acc = 0;
                for (k = 0; k < K; ++k) {
                    acc += (arena_q_load(at, A, a0 + (uint32_t)(i * K + k)) - a_zp)
                           * (arena_q_load(bt, B, b0 + (uint32_t)(k * N + j)) - b_zp);
                }
                arena_q_put(Y, y0 + (uint32_t)(i * N + j), arena_q_round((float)acc * mult, y_zp, lo, hi));
            }
        }
    }
    return ARENA_OK;
}
