/* QLinearAveragePool, QLinearGlobalAveragePool, int8/uint8. No workspace. */
#include "support_q8.h"
#include "support_int8.h"

/* --- QLinearAveragePool, QLinearGlobalAveragePool ----------------------------------- */

/* Pooled size of one dim (floor mode), or -1 when the window does not fit. */
static int32_t pooled(int32_t in, int32_t k, int32_t stride, int32_t p0, int32_t p1)
{
    return in + p0 + p1 < k ? -1 : (in + p0 + p1 - k) / stride + 1;
}

#if defined(__ARM_FEATURE_MVE)
#include <arm_mve.h>
/* The sum of a window row's n bytes (n >= 1) on Helium: 16 a VADDVA, the last ones predicated. */
static int32_t row_sum(const qin_t *x, uint32_t i, int32_t n)
{
    int32_t s = 0;
    if (x->t->dtype == ARENA_DT_INT8) {
        const int8_t *p = (const int8_t *)x->data + i;
        for (; n > 0; n -= 16, p += 16) {
            const mve_pred16_t on = vctp8q((uint32_t)n);
            s = vaddvaq_p_s8(s, vldrbq_z_s8(p, on), on);
        }
    } else {
        const uint8_t *p = (const uint8_t *)x->data + i;
        for (; n > 0; n -= 16, p += 16) {
            const mve_pred16_t on = vctp8q((uint32_t)n);
            s = (int32_t)vaddvaq_p_u8((uint32_t)s, vldrbq_z_u8(p, on), on);
        }
    }
    return s;
}
#endif

/* onnxruntime's QLinearPool2DTask: the mean of the dequantized window (clipped to
 * the input; count_include_pad divides by the kernel size), quantized. NCHW only. */
int arena_k_qlinear_pool(const arena_ctx_t *c)
{
    const arena_attrs_t *a = c->op->attrs;
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
                ih = hs;
#if defined(__ARM_FEATURE_MVE)
                if (ws == 0 && we == xd[3] && he > hs) { /* whole rows lie in one run (KWS's 25 x 5 pool) */
                    sum = row_sum(&x, plane + (uint32_t)(hs * xd[3]), (he - hs) * xd[3]) - x.zp * (he - hs) * xd[3];
                    ih = he;
                }
#endif
                for (; ih < he; ++ih) {
#if defined(__ARM_FEATURE_MVE)
                    if (we > ws) { /* the same integer sum, a row at a time */
                        sum += row_sum(&x, plane + (uint32_t)(ih * xd[3] + ws), we - ws) - x.zp * (we - ws);
                    }
                    continue;
#endif
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

/* The sum of n codes at p, int8 (flip 0x80808080) or uint8 (flip 0): four bytes a USADA8 on DSP
 * cores (int8 bytes read as b + 128 after XOR 0x80, 128 n taken off after), else a byte at a
 * time. n <= 4194304, so the unsigned sum of the flipped bytes fits. */
#if defined(__OPTIMIZE_SIZE__) /* a size build (-Os) keeps one copy: flash is what a part lacks */
#define PLANE_SUM_INLINE __attribute__((noinline))
#else
#define PLANE_SUM_INLINE inline __attribute__((always_inline))
#endif
static PLANE_SUM_INLINE int32_t plane_sum(const uint8_t *p, uint32_t n, uint32_t flip)
{
    uint32_t s = 0u, i = 0u;
#if defined(__ARM_FEATURE_DSP)
    uint32_t t = 0u;
    for (; n - i >= 8u; i += 8u) {
        uint32_t a, b;
        memcpy(&a, p + i, 4); /* one LDR: unaligned loads are allowed on these cores */
        memcpy(&b, p + i + 4u, 4);
        s = __usada8(a ^ flip, 0u, s);
        t = __usada8(b ^ flip, 0u, t);
    }
    s += t;
#endif
    for (; i < n; ++i) {
        s += (uint32_t)(p[i] ^ (uint8_t)flip);
    }
    return (int32_t)(s - (flip != 0u ? 128u * n : 0u));
}

/* onnxruntime's MlasQLinearGlobalAveragePoolNchw: integer sums, one requantization a channel,
 * (float)(sum - zp * spatial) * (x_scale / (y_scale * spatial)) rounded half to even (requant_f:
 * one VCVTR where the core has an FPU). */
int arena_k_qlinear_global_pool(const arena_ctx_t *c)
{
    const arena_tensor_t *t[5];
    const void *d[5];
    qin_t x;
    qout_t y;
    qpar_t q;
    uint32_t nc, n_nc, spatial, flip;
    const uint8_t *p;
    uint8_t *out;
    int32_t zs;
    float scale;
    int k, rc;
    arena_op_inputs(c, 5, t, d); /* each operand looked up once: a DS-TCN's pool is 32 codes */
    rc = arena_q_check_t(t[0], t[1], t[2], 1u);
    if (rc == ARENA_OK) {
        rc = arena_q_out(c, 3, &y.lo, &y.hi);
    }
    if (rc != ARENA_OK) {
        return rc;
    }
    x.t = t[0];
    x.data = d[0];
    x.scale = ((const float *)d[1])[0];
    x.zp = zp0(t[2], d[2]);
    y.t = arena_out(c, 0);
    y.data = arena_out_data(c, 0);
    y.scale = ((const float *)d[3])[0];
    y.zp = zp0(t[4], d[4]);
    if (x.t->rank < 3 || y.t->rank != x.t->rank || y.t->shape[0] != x.t->shape[0] || y.t->shape[1] != x.t->shape[1]) {
        return ARENA_ERR_SHAPE;
    }
    spatial = 1u;
    for (k = 2; k < (int)y.t->rank; ++k) {
        if (y.t->shape[k] != 1) {
            return ARENA_ERR_SHAPE;
        }
        spatial *= (uint32_t)x.t->shape[k];
    }
    n_nc = y.t->elements; /* N C, as y's other dims are 1 */
    if (spatial == 0u || spatial > 4194304u) {
        return ARENA_ERR_SHAPE; /* no mean, or sum - zp * spatial could overflow int32 */
    }
    scale = x.scale / (y.scale * (float)spatial);
    zs = x.zp * (int32_t)spatial;
    flip = x.t->dtype == ARENA_DT_INT8 ? 0x80808080u : 0u;
    p = (const uint8_t *)x.data;
    out = (uint8_t *)y.data;
    if (!mult_ok(scale)) { /* a NaN or infinite multiplier: arena_q_round's way */
        for (nc = 0; nc < n_nc; ++nc, p += spatial) {
            put(&y, nc, (float)(plane_sum(p, spatial, flip) - zs) * scale);
        }
        return ARENA_OK;
    }
    q = qpar(y.zp, y.lo, y.hi);
#if !defined(__OPTIMIZE_SIZE__)
    if (spatial == 1u && flip != 0u) { /* one code a channel (a DS-TCN's last plane): no sum to take */
        for (nc = 0; nc < n_nc; ++nc) {
            out[nc] = (uint8_t)requant_f((float)((int32_t)((const int8_t *)p)[nc] - zs) * scale, &q);
        }
        return ARENA_OK;
    }
    if (spatial == 1u) {
        for (nc = 0; nc < n_nc; ++nc) {
            out[nc] = (uint8_t)requant_f((float)((int32_t)p[nc] - zs) * scale, &q);
        }
        return ARENA_OK;
    }
#endif
    for (nc = 0; nc < n_nc; ++nc, p += spatial) {
        out[nc] = (uint8_t)requant_f((float)(plane_sum(p, spatial, flip) - zs) * scale, &q);
    }
    return ARENA_OK;
}
