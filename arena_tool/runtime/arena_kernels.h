/* Internal to the runtime: what the kernels share. Not for firmware code. */
#ifndef ARENA_KERNELS_H
#define ARENA_KERNELS_H

#include "arena_model.h"

/* A tile loop's tile tensors in the tile being run (tile_loop.c): tensors[first .. first + n) are
 * rows[0 .. n) at addr[0 .. n), not their table rows; and for the op being run, tensor
 * over_index[k] (an input it reads cropped) is over_rows[k] at over_addr[k]. */
typedef struct {
    int32_t first, n;
    const arena_tensor_t *rows;
    uint8_t *const *addr;
    int32_t n_over;
    const int32_t *over_index;
    const arena_tensor_t *over_rows;
    uint8_t *const *over_addr;
} arena_tile_view_t;

/* One op being run: its model, its tables row and the model's arena base; tile: NULL, or the
 * slots of the tile a loop body op runs in. */
typedef struct {
    const arena_model_t *m;
    const arena_op_t *op;
    uint8_t *base;
    const arena_tile_view_t *tile;
} arena_ctx_t;

/* Input/output `i` of the op: tensor row (NULL when absent) and data. */
const arena_tensor_t *arena_in(const arena_ctx_t *c, int i);
const arena_tensor_t *arena_out(const arena_ctx_t *c, int i);
void *arena_in_data(const arena_ctx_t *c, int i);
void *arena_out_data(const arena_ctx_t *c, int i);
/* Inputs 0 .. n-1 at once: t[i] = arena_in(c, i), d[i] = arena_in_data(c, i). */
void arena_op_inputs(const arena_ctx_t *c, int n, const arena_tensor_t **t, const void **d);
const arena_tensor_t *arena_tensor_row(const arena_ctx_t *c, int32_t index); /* a table or tile row */
void *arena_ctx_data(const arena_ctx_t *c, int32_t index);                    /* its bytes */
uint32_t arena_dims_product(const arena_tensor_t *t, int from, int to);
int arena_shape_ok(const arena_tensor_t *t); /* the shape agrees with the element count, no dim < 0 */
/* A depthwise conv's in-place check (TinyEngine's scheme; arena_runtime.c): *temp is the
 * one-channel workspace when y is at x's address, NULL when they are disjoint. */
int arena_dw_in_place(const arena_ctx_t *c, const void *x, size_t x_bytes, const void *y, size_t y_bytes,
                      size_t plane_bytes, size_t es, void **temp);

/* Math without libm (the firmware links none). */
float arena_expf(float x);
float arena_sqrtf(float x);
float arena_logf(float x);
float arena_rintf(float x); /* round half to even, as ONNX quantization does */

/* The kernels the dispatch calls (arena_ops.h; one file per op and element type, <op>_<dtype>.c):
 * one per line of the op table's runtime ops, each returns an arena_status_t. */
#define ARENA_KERNEL(kernel) int kernel(const arena_ctx_t *c);
#include "arena_ops.h"
#undef ARENA_KERNEL

/* What arena_run calls for an op of type t: arena_kernels[t], NULL for an op no model of the
 * firmware uses (arena_run then fails with ARENA_ERR_UNSUPPORTED at that op). The generated
 * board source (codegen.arena_sources) defines the table with its models' kernels only, so the
 * linker's --gc-sections drops the others; arena_runtime.c's weak default holds every kernel,
 * for a firmware that builds the runtime without arena's board source (runtime: none). */
typedef int (*arena_kernel_t)(const arena_ctx_t *c);
extern const arena_kernel_t arena_kernels[ARENA_OP_COUNT];

/* Quantization helpers shared by the quantized kernels (quant_support.c documents them). */
int32_t arena_q_load(const arena_tensor_t *t, const void *data, uint32_t i);
void arena_q_put(void *data, uint32_t i, int32_t q);
int32_t arena_q_round(float v, int32_t zp, int32_t lo, int32_t hi);
int32_t arena_q_bias_add(int32_t bias, int32_t dot);
float arena_q_scale(const arena_ctx_t *c, int s, uint32_t k);
int32_t arena_q_zp(const arena_ctx_t *c, int z, uint32_t k);
int arena_q_check(const arena_ctx_t *c, int x, uint32_t n);
int arena_q_check_t(const arena_tensor_t *xt, const arena_tensor_t *st, const arena_tensor_t *zt, uint32_t n);
int arena_q_out(const arena_ctx_t *c, int s, int32_t *lo, int32_t *hi);
int arena_q_out_t(const arena_attrs_t *a, const arena_tensor_t *yt, const arena_tensor_t *st,
                  const arena_tensor_t *zt, int32_t *lo, int32_t *hi);

/* A conv's sizes, NCHW (a rank-3 1-D conv runs as H = 1); qlinear_conv_q8.c checks them. */
typedef struct {
    int32_t n, c, h, w;     /* input */
    int32_t m, oh, ow;      /* output channels and size */
    int32_t groups, cg, mg; /* groups, input and output channels per group */
    int32_t kk;             /* cg * KH * KW: one output pixel's dot product length */
} arena_conv_dims_t;

/* The int8 fast paths (conv_int8.c, add_mul_int8.c, quantize_int8.c, fully_connected_int8.c; conv and
 * QGemm take uint8 activations and weight zero points too); 1 when they ran the
 * op, 0 when it is not theirs (the caller runs its reference loop). dw_temp: a depthwise
 * conv's in-place channel temp, or NULL. */
int arena_i8_conv(const arena_ctx_t *c, const arena_conv_dims_t *d, int32_t lo, int32_t hi, void *dw_temp);
/* A QLinearConv writing its concat's codes (arena_tool/model/lowering.py _concat_codes): the
 * 256-byte table its own codes go through, in attrs.ints as a QLinearLookup's; else NULL.
 * arena_i8_conv returns 2 where it wrote the codes through it, 1 where the caller still must. */
static inline const uint8_t *arena_conv_table(const arena_ctx_t *c)
{
    return c->op->attrs->n_ints == 64u ? (const uint8_t *)c->op->attrs->ints : NULL;
}
/* b: one element per `plane` elements of a and y (1: same shapes), n a multiple of plane; u8: all
 * three uint8 (else int8) */
int arena_i8_binary(const int8_t *a, const int8_t *b, int8_t *y, uint32_t n, uint32_t plane, int32_t a_zp,
                    int32_t b_zp, float ra, float rb, float rm, int is_add, int32_t y_zp, int32_t lo, int32_t hi,
                    int u8);
void arena_i8_quantize(const float *x, void *y, uint32_t n, float scale, int32_t zp, int32_t lo, int32_t hi);
/* max_pool_int8.c: MaxPool of 1-byte planes (xd, yd: NCHW dims as arena_k_pool read them). */
int arena_i8_max_pool(const arena_ctx_t *c, const int32_t xd[4], const int32_t yd[4]);
/* QGemm's operands as arena_k_qgemm looked them up and checked them, each once: a 10-class dense
 * head is small enough that looking them up again cost as much as its dot products. */
typedef struct {
    const arena_tensor_t *t[9]; /* inputs A, a_scale, a_zp, B, b_scale, b_zp, C, y_scale, y_zp (NULL: absent) */
    const void *d[9];           /* their data */
    void *y;                    /* output 0's data */
    float a_scale, y_scale;
    int32_t a_zp, y_zp;         /* in A's and Y's own dtypes */
    int32_t M, N, K, lo, hi;    /* [lo, hi]: the output's range */
    uint32_t si, sj;            /* C's strides per row and column */
    int quant_out;              /* y_scale given: an int8/uint8 output, else float32 */
} arena_qgemm_t;
int arena_i8_qgemm(const arena_ctx_t *c, const arena_qgemm_t *g);

/* arena_run's hook around each op: a call only in a firmware built with -DARENA_PROFILE
 * (arena-tool run --profile), nothing at all otherwise, so a normal build is unchanged. The
 * macro brings its own semicolon (an empty statement would still leave a debug statement
 * marker), and arena_run writes it after other statements on their lines, so that no line of
 * the runtime moved: normal ELFs, their debug line tables too, are the bytes they were. */
#if defined(ARENA_PROFILE)
#define ARENA_PROFILE_OP(m, i, done) arena_profile_op((m), (i), (done));
#else
#define ARENA_PROFILE_OP(m, i, done)
#endif

#endif
