/* Table-driven execution: bounds checks, dispatch, libm-free math. */
#include <string.h>

#include "arena_kernels.h"

size_t arena_dtype_size(uint8_t dtype)
{
    switch (dtype) {
    case ARENA_DT_FLOAT32: return 4;
    case ARENA_DT_INT8: return 1;
    case ARENA_DT_UINT8: return 1;
    case ARENA_DT_INT32: return 4;
    case ARENA_DT_INT64: return 8;
    default: return 0;
    }
}

void *arena_tensor_data(const arena_model_t *m, uint8_t *base, int index)
{
    const arena_tensor_t *t;
    if (index < 0 || index >= (int)m->n_tensors) {
        return NULL;
    }
    t = &m->tensors[index];
    if (t->data != NULL) {
        return (void *)(uintptr_t)t->data;
    }
    if (m->n_regions > 1u) {  /* a split arena: the tensor's own region (check_bounds checked it) */
        uint8_t r = m->tensor_regions[index];
        return r < m->n_regions ? (void *)(m->regions[r].base + t->offset) : NULL;
    }
    return (void *)(base + t->offset);
}

const arena_tensor_t *arena_tensor_row(const arena_ctx_t *c, int32_t index)
{
    const arena_tile_view_t *v = c->tile;
    int32_t k;
    if (index < 0 || index >= (int32_t)c->m->n_tensors) {
        return NULL;
    }
    if (v != NULL) {
        for (k = 0; k < v->n_over; ++k) {
            if (v->over_index[k] == index) {
                return &v->over_rows[k];
            }
        }
        if (index >= v->first && index - v->first < v->n) {
            return &v->rows[index - v->first];
        }
    }
    return &c->m->tensors[index];
}

void *arena_ctx_data(const arena_ctx_t *c, int32_t index)
{
    const arena_tile_view_t *v = c->tile;
    int32_t k;
    if (v != NULL) {
        for (k = 0; k < v->n_over; ++k) {
            if (v->over_index[k] == index) {
                return v->over_addr[k];
            }
        }
        if (index >= v->first && index - v->first < v->n) {
            return v->addr[index - v->first];
        }
    }
    return arena_tensor_data(c->m, c->base, index);
}

/* The four accessors below take an untiled op's tensor row from the table here, without the
 * tile view's lookups: a kernel calls them a few dozen times an op, which on a small op (a
 * 10-class dense head) cost as much as its arithmetic. */
static const arena_tensor_t *row_of(const arena_ctx_t *c, int32_t index)
{
    if (c->tile != NULL) {
        return arena_tensor_row(c, index);
    }
    return index >= 0 && index < (int32_t)c->m->n_tensors ? &c->m->tensors[index] : NULL;
}

static void *data_of(const arena_ctx_t *c, int32_t index)
{
    return c->tile != NULL ? arena_ctx_data(c, index) : arena_tensor_data(c->m, c->base, index);
}

const arena_tensor_t *arena_in(const arena_ctx_t *c, int i)
{
    return i < (int)c->op->n_inputs ? row_of(c, c->op->inputs[i]) : NULL;
}

const arena_tensor_t *arena_out(const arena_ctx_t *c, int i)
{
    return i < (int)c->op->n_outputs ? row_of(c, c->op->outputs[i]) : NULL;
}

void *arena_in_data(const arena_ctx_t *c, int i)
{
    return i < (int)c->op->n_inputs ? data_of(c, c->op->inputs[i]) : NULL;
}

void *arena_out_data(const arena_ctx_t *c, int i)
{
    return i < (int)c->op->n_outputs ? data_of(c, c->op->outputs[i]) : NULL;
}

void arena_op_inputs(const arena_ctx_t *c, int n, const arena_tensor_t **t, const void **d)
{
    const arena_tensor_t *rows = c->m->tensors;
    const int32_t *ins = c->op->inputs;
    const int n_in = (int)c->op->n_inputs;
    const uint32_t nt = c->m->n_tensors;
    uint8_t *base = c->base;
    int i;
    if (c->tile != NULL || c->m->n_regions > 1u) { /* a tile's rows, or a split arena's regions */
        for (i = 0; i < n; ++i) {
            t[i] = arena_in(c, i);
            d[i] = arena_in_data(c, i);
        }
        return;
    }
    for (i = 0; i < n; ++i) { /* the parameters in locals: a store to t or d may alias the tables */
        uint32_t index = i < n_in ? (uint32_t)ins[i] : nt; /* an absent input's -1: out of range too */
        const arena_tensor_t *r = index < nt ? &rows[index] : NULL;
        t[i] = r;
        d[i] = r == NULL ? NULL : r->data != NULL ? (const void *)(uintptr_t)r->data : (const void *)(base + r->offset);
    }
}

int arena_shape_ok(const arena_tensor_t *t)
{
    uint32_t n = 1u;
    int d;
    if (t == NULL || t->rank > ARENA_MAX_RANK) {
        return 0;
    }
    for (d = 0; d < (int)t->rank; ++d) {
        if (t->shape[d] < 0) {
            return 0;
        }
        n *= (uint32_t)t->shape[d];
    }
    return n == t->elements;
}

uint32_t arena_dims_product(const arena_tensor_t *t, int from, int to)
{
    uint32_t p = 1u;
    int i;
    for (i = from; i < to && i < (int)t->rank; ++i) {
        p *= (uint32_t)t->shape[i];
    }
    return p;
}

/* Every arena tensor must lie inside the model's slice of the arena (of its region, split:
 * whose first region must be the slice base points at). */
static int check_bounds(const arena_model_t *m, const uint8_t *base)
{
    uint32_t i;
    int split = m->n_regions > 1u;
    if (split && (m->regions == NULL || m->tensor_regions == NULL || m->regions[0].base != base)) {
        return ARENA_ERR_BOUNDS;
    }
    for (i = 0; i < m->n_tensors; ++i) {
        const arena_tensor_t *t = &m->tensors[i];
        uint32_t bytes = t->elements * (uint32_t)arena_dtype_size(t->dtype);
        uint32_t size = m->arena_size;
        if (t->data != NULL) {
            continue;
        }
        if (split) {
            if (m->tensor_regions[i] >= m->n_regions) {
                return ARENA_ERR_BOUNDS;
            }
            size = m->regions[m->tensor_regions[i]].size;
        }
        if (t->offset > size || bytes > size - t->offset) {
            return ARENA_ERR_BOUNDS;
        }
    }
    return ARENA_OK;
}

/* Every kernel, for a firmware whose board source defines no table (arena_kernels.h): a
 * generated board source's table overrides it, and then nothing references this one. */
__attribute__((weak)) const arena_kernel_t arena_kernels[ARENA_OP_COUNT] = {
#define ARENA_OP(op, kernel) [op] = kernel,
#include "arena_ops.h"
#undef ARENA_OP
};

static int dispatch(const arena_ctx_t *c)
{
    arena_kernel_t k = c->op->type < ARENA_OP_COUNT ? arena_kernels[c->op->type] : NULL;
    return k != NULL ? k(c) : ARENA_ERR_UNSUPPORTED;
}

int arena_run(const arena_model_t *m, uint8_t *base, int *failed_op)
{
    uint32_t i, loop = 0u;
    int rc = check_bounds(m, base);
    if (failed_op != NULL) {
        *failed_op = -1;
    }
    if (rc != ARENA_OK) {
        return rc;
    }
    for (i = 0; i < m->n_ops; ++i) {
        arena_ctx_t c;
        int failed = (int)i;
        c.m = m;
        c.op = &m->ops[i];
        c.base = base;
        c.tile = NULL;
        if (loop < m->n_loops && m->loops[loop].first == i) { /* a patched stage: its ops run per tile */
            const arena_tiles_t *t = &m->loops[loop]; ARENA_PROFILE_OP(m, i, 0)
            rc = t->run != NULL ? t->run(m, loop, base, &failed) : ARENA_ERR_UNSUPPORTED; ARENA_PROFILE_OP(m, i, 1)
            i += t->n_members > 0u ? t->n_members - 1u : 0u;
            ++loop;
        } else {
            ARENA_PROFILE_OP(m, i, 0)
            rc = dispatch(&c); ARENA_PROFILE_OP(m, i, 1)
        }
        if (rc != ARENA_OK) {
            if (failed_op != NULL) {
                *failed_op = failed;
            }
            return rc;
        }
    }
    return ARENA_OK;
}

/* --- math -------------------------------------------------------------- */

static float from_bits(uint32_t b)
{
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

static uint32_t to_bits(float f)
{
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    return b;
}

/* 2^k for -126 <= k <= 127. */
static float pow2i(int k)
{
    return from_bits((uint32_t)(k + 127) << 23);
}

/* exp(x): Cody-Waite reduction x = k ln2 + r, |r| <= ln2/2, then a degree-7
 * Taylor polynomial (truncation < 1e-8 relative) and a scale by 2^k. */
float arena_expf(float x)
{
    const float ln2_hi = 0.693145751953125f;
    const float ln2_lo = 1.42860682030941723212e-6f;
    float r, p;
    int k;
    if (x != x) {
        return x;
    }
    if (x > 88.72283f) {
        return from_bits(0x7F800000u);
    }
    if (x < -103.972f) {
        return 0.0f;
    }
    k = (int)(x * 1.44269504088896341f + (x >= 0.0f ? 0.5f : -0.5f));
    r = (x - (float)k * ln2_hi) - (float)k * ln2_lo;
    p = 1.0f + r * (1.0f + r * (0.5f + r * (1.0f / 6.0f + r * (1.0f / 24.0f + r * (1.0f / 120.0f
        + r * (1.0f / 720.0f + r * (1.0f / 5040.0f)))))));
    if (k > 127) {
        return p * pow2i(127) * pow2i(k - 127);
    }
    if (k < -126) {
        return p * pow2i(k + 100) * pow2i(-100);
    }
    return p * pow2i(k);
}

/* ln(x) for x > 0: x = m * 2^e with m in [sqrt(1/2), sqrt(2)), ln m = 2 atanh((m - 1) / (m + 1))
 * by its series (error below 1e-7 relative); 0 and negatives give -inf and NaN. */
float arena_logf(float x)
{
    uint32_t b;
    int e;
    float m, s, s2;
    if (x != x || x < 0.0f) {
        return from_bits(0x7FC00000u);
    }
    if (x == 0.0f) {
        return from_bits(0xFF800000u);
    }
    if (x > 3.4028234e38f) {
        return x;
    }
    if (x < 1.17549435e-38f) {  /* subnormal: scale into the normal range first */
        return arena_logf(x * 16777216.0f) - 16.6355323f;  /* ln(2^24) */
    }
    b = to_bits(x);
    e = (int)((b >> 23) & 0xFFu) - 127;
    m = from_bits((b & 0x007FFFFFu) | 0x3F800000u);
    if (m > 1.41421356f) {
        m *= 0.5f;
        e += 1;
    }
    s = (m - 1.0f) / (m + 1.0f);
    s2 = s * s;
    return (float)e * 0.693147181f
        + 2.0f * s * (1.0f + s2 * (1.0f / 3.0f + s2 * (1.0f / 5.0f + s2 * (1.0f / 7.0f + s2 * (1.0f / 9.0f)))));
}

/* sqrt(x): a bit-level first guess and Newton steps (full float precision). */
float arena_sqrtf(float x)
{
    float y;
    int i;
    if (x <= 0.0f || x != x) {
        return x == 0.0f ? 0.0f : from_bits(0x7FC00000u);
    }
    if (to_bits(x) >= 0x7F800000u) {
        return x;
    }
    y = from_bits(0x1FBD1DF5u + (to_bits(x) >> 1));
    for (i = 0; i < 4; ++i) {
        y = 0.5f * (y + x / y);
    }
    return y;
}

float arena_rintf(float x)
{
    float a = x < 0.0f ? -x : x;
    float t, frac;
    if (!(a < 8388608.0f)) {
        return x; /* already an integer, or NaN */
    }
    t = (float)(int32_t)a;
    frac = a - t;
    if (frac > 0.5f || (frac == 0.5f && ((int32_t)t & 1) != 0)) {
        t += 1.0f;
    }
    return x < 0.0f ? -t : t;
}

/* Depthwise in place (TinyEngine's scheme). A depthwise conv (group == C == M)
 * may be planned with y at x's very address when x dies there; its workspace
 * is then a one-channel temp. Channel i = n*C + ch is copied there first and
 * output channel i is computed from the copy: channel i's output bytes
 * [i*OH*OW, (i+1)*OH*OW) never reach past input channel i (OH*OW <= H*W, same
 * element width), and the input channels below i are already consumed.
 *
 * Sets *temp to the workspace when the op runs in place, NULL when x and y are
 * disjoint. ARENA_ERR_BOUNDS for any other overlap (x and y partly shared, or
 * the temp over them: tables and kernel disagree); ARENA_ERR_SHAPE when in
 * place but the output would outgrow its input or the temp is missing, too
 * small for plane_bytes or misaligned for the element type. */
int arena_dw_in_place(const arena_ctx_t *c, const void *x, size_t x_bytes, const void *y, size_t y_bytes,
                       size_t plane_bytes, size_t es, void **temp)
{
    uintptr_t xb = (uintptr_t)x, yb = (uintptr_t)y, tb;
    const arena_tensor_t *wst;
    size_t ws_bytes;
    *temp = NULL;
    if (x_bytes == 0u || y_bytes == 0u) {
        return ARENA_OK; /* nothing is read or written */
    }
    if (xb != yb) {
        /* Disjoint is the ordinary case; a partial overlap reads outputs as inputs. */
        return (xb < yb + y_bytes && yb < xb + x_bytes) ? ARENA_ERR_BOUNDS : ARENA_OK;
    }
    if (y_bytes > x_bytes || c->op->workspace < 0) {
        return ARENA_ERR_SHAPE;
    }
    wst = arena_tensor_row(c, c->op->workspace);
    ws_bytes = (size_t)wst->elements * arena_dtype_size(wst->dtype);
    *temp = arena_ctx_data(c, c->op->workspace);
    tb = (uintptr_t)*temp;
    if (wst->data != NULL || ws_bytes < plane_bytes || plane_bytes == 0u || tb % es != 0u) {
        *temp = NULL; /* a constant (flash) or a temp that cannot hold one channel */
        return ARENA_ERR_SHAPE;
    }
    if (tb < xb + x_bytes && xb < tb + plane_bytes) {
        *temp = NULL; /* the copy would overwrite channels still to be read */
        return ARENA_ERR_BOUNDS;
    }
    return ARENA_OK;
}
