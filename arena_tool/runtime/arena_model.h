/* arena_model.h: the tables arena_tool/codegen.py generates, and the runtime
 * that executes them.
 *
 * A model is a tensor table plus an op list. Tensors are either arena
 * tensors (data == NULL: they live at `offset` bytes from the model's base in
 * the one arena) or constants (data points at a `static const` array in
 * flash). Ops name their tensors by index into that table; -1 marks an absent
 * optional input. The runtime never allocates: every activation is read and
 * written at its planned offset, im2col workspace is the op's planned
 * workspace tensor, and element-wise kernels are correct when an output
 * shares its input's bytes (the planner's in-place ops).
 *
 * C99, freestanding (string.h only); no libm, no malloc.
 */
#ifndef ARENA_MODEL_H
#define ARENA_MODEL_H

#include <stddef.h>
#include <stdint.h>

#define ARENA_MAX_RANK 6

typedef enum {
    ARENA_DT_FLOAT32 = 0,
    ARENA_DT_INT8 = 1,
    ARENA_DT_UINT8 = 2,
    ARENA_DT_INT32 = 3,
    ARENA_DT_INT64 = 4,
    ARENA_DT_OTHER = 5   /* a type the runtime has no kernels for (int4, float16 ...) */
} arena_dtype_t;

typedef enum {
    ARENA_OP_IDENTITY = 0, /* also Reshape, Flatten, Squeeze, Unsqueeze */
    ARENA_OP_CONV,
    ARENA_OP_GEMM,
    ARENA_OP_MATMUL,
    ARENA_OP_RELU,
    ARENA_OP_CLIP,
    ARENA_OP_LEAKY_RELU,
    ARENA_OP_SIGMOID,
    ARENA_OP_ADD,
    ARENA_OP_SUB,
    ARENA_OP_MUL,
    ARENA_OP_DIV,
    ARENA_OP_MAX_POOL,
    ARENA_OP_AVERAGE_POOL,
    ARENA_OP_GLOBAL_AVERAGE_POOL,
    ARENA_OP_GLOBAL_MAX_POOL,
    ARENA_OP_SOFTMAX,
    ARENA_OP_CONCAT,
    ARENA_OP_BATCH_NORM,
    ARENA_OP_QUANTIZE_LINEAR,
    ARENA_OP_DEQUANTIZE_LINEAR,
    ARENA_OP_QLINEAR_CONV,
    ARENA_OP_QLINEAR_MATMUL,
    /* Quantized (QOperator and lowered QDQ; kernels_qlinear.c). Scales and zero points are
     * inputs in onnxruntime's QOperator order. */
    ARENA_OP_QLINEAR_ADD,
    ARENA_OP_QLINEAR_MUL,
    ARENA_OP_QGEMM,
    ARENA_OP_QLINEAR_AVERAGE_POOL,
    ARENA_OP_QLINEAR_GLOBAL_AVERAGE_POOL,
    ARENA_OP_QLINEAR_CONCAT,
    ARENA_OP_QLINEAR_SOFTMAX,
    ARENA_OP_QLINEAR_SIGMOID,
    ARENA_OP_QLINEAR_LEAKY_RELU,
    ARENA_OP_QLINEAR_HARD_SWISH,
    /* Layout and more element-wise ops (kernels_shape.c, kernels_float.c). */
    ARENA_OP_TRANSPOSE,    /* ints: perm[rank] */
    ARENA_OP_PAD,          /* ints: begin[rank], end[rank]; axis: mode 0 constant 1 reflect 2 edge; value */
    ARENA_OP_SLICE,        /* ints: start[d], step[d] per output dim d (normalized, in range) */
    ARENA_OP_SPLIT,        /* axis; the sizes are the outputs' */
    ARENA_OP_RESIZE,       /* ints: mode (0 nearest 1 linear), coordinate transform, nearest mode; floats: scale per dim */
    ARENA_OP_REDUCE_MEAN,  /* ints: 1 where dim d is reduced, per input dim */
    ARENA_OP_HARD_SIGMOID, /* alpha, beta */
    ARENA_OP_HARD_SWISH,
    ARENA_OP_TANH,
    ARENA_OP_EXP,
    ARENA_OP_NEG,
    ARENA_OP_ABS,
    ARENA_OP_SQRT,
    ARENA_OP_ERF,
    ARENA_OP_ELU,          /* alpha */
    ARENA_OP_MAX,
    ARENA_OP_MIN,
    ARENA_OP_PRELU,
    ARENA_OP_UNSUPPORTED,  /* an op the runtime lacks: arena_run fails on it */
    ARENA_OP_COUNT
} arena_op_type_t;

typedef struct {
    const char *name;   /* as in the ONNX model */
    const void *data;   /* constant data in flash, or NULL for arena tensors */
    uint32_t offset;    /* bytes from the model's arena base (arena tensors) */
    uint32_t size;      /* bytes planned (arena) or stored (constants) */
    uint32_t elements;
    uint8_t dtype;      /* arena_dtype_t */
    uint8_t rank;
    int32_t shape[ARENA_MAX_RANK];
} arena_tensor_t;

/* Kernel attributes; the generator fills only what an op uses (others 0). */
typedef struct {
    int32_t kernel[2];    /* kernel_shape (H, W) */
    int32_t strides[2];
    int32_t pads[4];      /* top, left, bottom, right */
    int32_t dilations[2];
    int32_t group;
    int32_t axis;
    int32_t trans_a, trans_b;
    int32_t count_include_pad;
    int32_t legacy_axis;  /* Softmax before opset 13: flatten from axis */
    float alpha, beta;    /* Gemm; alpha of LeakyRelu */
    float min, max;       /* Clip */
    float epsilon;        /* BatchNormalization */
    int32_t out_min, out_max; /* quantized output range of a lowered op (an absorbed Relu/Clip);
                                 ignored unless out_min < out_max */
    float value;          /* Pad: the constant (for integer tensors, the quantized integer) */
    uint16_t n_ints, n_floats;
    const int32_t *ints;  /* op-specific integer parameters (see the op's enum comment) */
    const float *floats;  /* op-specific float parameters */
} arena_attrs_t;

typedef struct {
    uint8_t type;          /* arena_op_type_t */
    uint8_t n_inputs;
    uint8_t n_outputs;
    int16_t workspace;     /* tensor index of the planned scratch, or -1 */
    const int16_t *inputs;
    const int16_t *outputs;
    const char *name;      /* node name (or its first output) */
    const char *op_type;   /* ONNX op_type, for messages */
    arena_attrs_t attrs;
} arena_op_t;

typedef struct {
    const char *name;
    uint32_t arena_size;   /* bytes this model needs from its base */
    uint16_t n_tensors;
    uint16_t n_ops;
    uint8_t n_inputs;
    uint8_t n_outputs;
    const arena_tensor_t *tensors;
    const arena_op_t *ops;
    const int16_t *inputs;
    const int16_t *outputs;
} arena_model_t;

/* One model of a board's firmware and where its slice of the arena starts. */
typedef struct {
    const arena_model_t *model;
    uint32_t base;
} arena_entry_t;

/* Defined by the generated arena source (codegen.arena_sources). */
extern uint8_t arena[];
extern const uint32_t arena_size;
extern const arena_entry_t arena_entries[];
extern const uint32_t arena_entry_count;

typedef enum {
    ARENA_OK = 0,
    ARENA_ERR_UNSUPPORTED = 10,  /* op type or dtype the runtime lacks */
    ARENA_ERR_SHAPE = 11,        /* shapes the kernel cannot handle */
    ARENA_ERR_BOUNDS = 12        /* a tensor outside the model's arena */
} arena_status_t;

/* Run every op of `m` over the arena slice starting at `base`. On error,
 * *failed_op (when not NULL) is the index of the op that failed. */
int arena_run(const arena_model_t *m, uint8_t *base, int *failed_op);

/* Address of tensor `index` (arena or constant). */
void *arena_tensor_data(const arena_model_t *m, uint8_t *base, int index);

size_t arena_dtype_size(uint8_t dtype);

#endif
