/* arena_model.h: the tables arena_tool/emit/codegen.py generates, and the runtime
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
 *
 * The C API a firmware calls
 * --------------------------
 * Building with the arena SCons tool (env.ArenaFirmware) compiles this
 * folder's *.c (arena_tool.runtime_dir()) into the firmware and puts it on
 * the include path, unless the manifest says `runtime: none`. The generated
 * sources of a board define:
 *
 *   uint8_t arena[];                   the one activation arena (section .arena, NOLOAD:
 *                                      its contents at reset are undefined)
 *   const uint32_t arena_size;         its size in bytes (the board's planned arena)
 *   const arena_entry_t arena_entries[];  one entry per model of the manifest, in
 *   const uint32_t arena_entry_count;     manifest order: {model, base}, where the model's
 *                                      slice of the arena starts at arena + base
 *                                      (sequential sharing: every base is 0)
 *   const arena_model_t <name>_model;  each model's tables (name: the manifest's model name)
 *   arena_kernels[ARENA_OP_COUNT]      (arena_kernels.h) the kernel of each op type the board's
 *                                      models use, NULL for the others: arena_run calls only
 *                                      these, so the link drops every other kernel
 *
 * With `runtime: none` the board source defines no arena_kernels. A firmware that still
 * compiles this folder's *.c itself (its own build) gets the runtime's weak default table,
 * every kernel; to link fewer, define arena_kernels with the ones it needs, as the
 * generated board source does.
 *
 * A split arena (manifest region: [A, B], or split: true) has one array per region,
 * uint8_t arena_A[] in section .arena_A (NOLOAD) and so on, fastest first; arena is the
 * first of them (an alias) and arena_size its size. A split model's m->regions[r] gives the
 * base and size of its slice in region r; every other line below holds as it stands.
 * Weights in RAM (weights: <region>) are linked in section .weights_<region> with their
 * load image in flash, and copied by arena_init() (see below) before main.
 *
 * To run model e:
 *
 *   const arena_model_t *m = arena_entries[e].model;
 *   uint8_t *base = arena + arena_entries[e].base;
 *   for each k < m->n_inputs: write the input's bytes (m->tensors[m->inputs[k]]:
 *       dtype, rank, shape, elements, size) at arena_tensor_data(m, base, m->inputs[k]);
 *   int failed = -1;
 *   int rc = arena_run(m, base, &failed);
 *   rc == ARENA_OK: each output m->outputs[k] is at arena_tensor_data(m, base, m->outputs[k]);
 *   else rc is an arena_status_t and failed the index of the op that stopped
 *       (-1 when no op ran; built with ARENA_NAMES, m->op_names[failed] and m->op_types[failed] name it).
 *
 * A model planned with io_buffers: caller keeps its inputs and outputs outside the arena: run it
 * with arena_run_io(m, base, inputs, outputs, &failed), the application's buffers (see below).
 *
 * arena_run touches only the model's slice [base, base + m->arena_size) and its
 * constants; outputs stay valid until the next arena_run over the same bytes
 * (in sequential sharing, any model). It keeps no state between calls.
 * arena_tensor_data returns the address of an arena tensor inside the slice or
 * of a constant in flash (never write those); arena_dtype_size is the bytes of
 * one element of an arena_dtype_t (0 for ARENA_DT_OTHER).
 *
 * Status codes (arena_status_t): ARENA_OK 0; ARENA_ERR_UNSUPPORTED 10 (an op type
 * or element type the runtime lacks, or an op whose kernel arena_kernels leaves NULL;
 * the build's coverage check refuses such a model first, so this means tables, kernel
 * table and runtime disagree); ARENA_ERR_SHAPE 11
 * (shapes a kernel cannot handle); ARENA_ERR_BOUNDS 12 (a tensor outside the
 * model's arena slice: tables and plan disagree).
 *
 * The example firmware (example/main.c; startup.c holds the vector table and
 * exits through semihosting with main's return value) runs every entry once and
 * prints one line per fact:
 *
 *   calibrate 50000 ticks 1250      target only: a loop of 50000 instructions, timed
 *   model kws                       before each model
 *   ticks kws 123456                target only: SysTick ticks of that inference
 *   output logits float32 12        per output: name, element type, element count,
 *   0 0x3e2aaaab 0.166667           then one line per element: index, value (float32:
 *                                   exact bits, then six decimals)
 *   error kws op 3 code 11          instead of the outputs when arena_run fails (with ARENA_NAMES:
 *                                   error kws op 3 Conv conv1 code 11)
 *   status kws 0                    arena_run's status for that model
 *
 * and returns 0 when every model ran, else the first non-zero status.
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

/* The runtime's ops, in the order of arena_ops.h (generated from the op table, arena_tool/model/optable.py:
 * each constant's value is its position, so new ops go last). */
typedef enum {
#define ARENA_OP(op, kernel) op,
#include "arena_ops.h"
#undef ARENA_OP
    ARENA_OP_UNSUPPORTED,  /* an op the runtime lacks: arena_run fails on it */
    ARENA_OP_COUNT
} arena_op_type_t;

/* Names. A model's tables name its graph inputs and outputs (io_names) and a split arena's regions;
 * every tensor's and op's name and op type (tensor_names, op_names, op_types) only in a build that
 * defines ARENA_NAMES (a debug build; the host build does), else those pointers are NULL and no
 * string is in flash, as TFLite Micro's tensors carry none: a model's node names can take more
 * flash than its tables (MLPerf Tiny's VWW int8: 41,717 B of names, 230 KB of weights). Tools name
 * an op from its index (the plan and arena-tool's reports know every name), the way profiles do. */
#if defined(ARENA_NAMES)
#define ARENA_NAME(names) (names)
#else
#define ARENA_NAME(names) NULL
#endif

/* Field types: the generated tables assert (_Static_assert) that every count, index and
 * size fits its field, and arena_tool.emit.codegen.FIELD_TYPES names these types. */
typedef struct {
    const void *data;   /* constant data in flash, or NULL for arena tensors */
    uint32_t offset;    /* bytes from the model's arena base (arena tensors) */
    uint32_t size;      /* bytes planned (arena) or stored (constants) */
    uint32_t elements;
    uint8_t dtype;      /* arena_dtype_t */
    uint8_t rank;
    int32_t shape[ARENA_MAX_RANK];
} arena_tensor_t;

/* One region of a split arena (a model planned over several RAM regions, fastest first):
 * the model's tensors of region r live at regions[r].base + offset. */
typedef struct {
    const char *name;   /* the board's RAM region (linker MEMORY name) */
    uint8_t *base;      /* the model's slice there: arena_<name> (section .arena_<name>) */
    uint32_t size;      /* bytes the model needs there */
} arena_region_t;

/* Kernel attributes; the generator fills only what an op uses (others 0). Ops with equal
 * attributes share one (arena_op_t.attrs). */
typedef struct {
    int32_t kernel[2];    /* kernel_shape (H, W) */
    int32_t strides[2];
    int32_t pads[4];      /* top, left, bottom, right */
    int32_t dilations[2];
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
    uint16_t n_inputs;     /* (a Concat may have hundreds) */
    uint16_t n_outputs;
    uint16_t group;        /* Conv's group (0: none, as 1) */
    int32_t workspace;     /* tensor index of the planned scratch, or -1 */
    const int32_t *inputs; /* tensor indices, -1 = absent */
    const int32_t *outputs;
    const arena_attrs_t *attrs;
} arena_op_t;

/* A patched stage run as one loop over its tiles (patch-based inference; arena_tool/emit/tileloop.py
 * writes it). Its ops (members) are ops[first .. first + n_members), as the untiled model has
 * them (each with its own pads); arena_run runs them once per tile, row-major. Their tile tensors
 * (slots) are, per slot: kind (ARENA_SLOT_*), member, and for a crop the input it crops; the OUT
 * and WS slots have rows tensors[first_slot ...] in slot order, the crops (last) none. Per tile
 * the runtime derives, as model/patches.py does: the tile's box of the stage output (the grid's
 * cut), backwards through the members each output's box (the union of what its readers read),
 * each window member's input window and tile-local pads, a crop (copied) where a member reads less
 * than its input's box, a depthwise in-place workspace's elements (a SCRATCH slot, a .tflite
 * conv's im2col columns, keeps its row's); each slot's offset is the
 * plan's for that tile: row tile_rows[tile] of offsets16 (offsets32 when the arena is 64 KiB or
 * more), n_slots each. After the members the tile is copied into the whole stage output. `run`
 * is arena_run_tiles (tile_loop.c), named only by models that have loops, so other firmware
 * links none of it. */
#define ARENA_TILE_SLOTS 24 /* the most slots (and members) a loop may have: the runtime's rows on the stack */
enum { ARENA_SLOT_OUT = 0, ARENA_SLOT_WS_IN = 1, ARENA_SLOT_CROP = 2, ARENA_SLOT_SCRATCH = 3 };
struct arena_model;
typedef struct {
    int (*run)(const struct arena_model *m, uint32_t k, uint8_t *base, int *failed_op);
    uint32_t first;        /* the members' first op row */
    uint16_t rows, cols;   /* the grid */
    uint16_t n_members;
    uint16_t n_slots;
    uint16_t nhwc;         /* the images' layout: 0 NCHW (ONNX), 1 NHWC (a lowered .tflite) */
    int32_t input, output; /* the stage's whole input and output tensors */
    int32_t first_slot;
    const int16_t *slots;  /* per slot: kind, member, input position (crops) */
    const uint8_t *tile_rows;
    const uint16_t *offsets16;
    const uint32_t *offsets32;
} arena_tiles_t;

typedef struct arena_model {
    const char *name;
    uint32_t arena_size;   /* bytes this model needs from its base */
    uint32_t n_tensors;
    uint32_t n_ops;
    uint16_t n_inputs;
    uint16_t n_outputs;
    const arena_tensor_t *tensors;
    const arena_op_t *ops;
    const int32_t *inputs;
    const int32_t *outputs;
    uint32_t n_regions;    /* 0: one arena; > 1: a split arena, arena tensor i in
                              regions[tensor_regions[i]], arena_size the first region's (arena_run's base) */
    const arena_region_t *regions;
    const uint8_t *tensor_regions; /* per tensor, its region index (split arenas; else NULL) */
    uint32_t n_loops;      /* patched stages run as tile loops (arena_tiles_t) */
    const arena_tiles_t *loops;
    const char *const *io_names;     /* the graph inputs' names, then the outputs' (as in the ONNX model) */
    const char *const *tensor_names; /* per tensor row; NULL unless ARENA_NAMES */
    const char *const *op_names;     /* per op row: its node's name (or its first output's); NULL unless ARENA_NAMES */
    const char *const *op_types;     /* per op row: its ONNX op type; NULL unless ARENA_NAMES */
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
 * *failed_op (when not NULL) is the index of the op that failed. A split model
 * (n_regions > 1) reads its regions from m->regions; base must be regions[0].base. */
int arena_run(const arena_model_t *m, uint8_t *base, int *failed_op);

/* io_buffers: caller. The model's graph inputs and outputs live outside the arena, each in a
 * buffer of its own (a camera's DMA buffer, say): region "caller" of m->regions, whose tables
 * are writable. Points input k at inputs[k] and output k at outputs[k] (NULL, or a NULL entry:
 * keep the buffer it has; each of at least the tensor's size in bytes, aligned for its
 * type), the model's arena slice at base, then runs arena_run. ARENA_ERR_BOUNDS for a model
 * without caller-owned buffers. Until then the tables point at weak default buffers
 * <model>_input<k> / <model>_output<k> (the model's header declares them; define your own of
 * the same name to place them), so arena_run and arena_tensor_data work as for any model whose
 * slice starts at arena (sequential sharing); with sharing: concurrent, call arena_run_io, which
 * points the slice at base. */
static inline int arena_is_caller_region(const arena_region_t *r)
{
    static const char caller[] = "caller";
    int i;
    for (i = 0; i < (int)sizeof caller; ++i) {
        if (r->name == NULL || r->name[i] != caller[i]) {
            return 0;
        }
    }
    return 1;
}

static inline int arena_run_io(const arena_model_t *m, uint8_t *base, void *const *inputs,
                               void *const *outputs, int *failed_op)
{
    arena_region_t *regions = (arena_region_t *)(uintptr_t)m->regions; /* writable: see above */
    uint32_t k, callers = 0u;
    for (k = 0u; regions != NULL && m->tensor_regions != NULL && k < m->n_regions; ++k) {
        callers += (uint32_t)arena_is_caller_region(&regions[k]);
    }
    if (failed_op != NULL) {
        *failed_op = -1;
    }
    if (callers == 0u) {
        return ARENA_ERR_BOUNDS;
    }
    if (m->n_regions == callers + 1u) { /* one arena (not split): its slice is wherever base says */
        regions[0].base = base;
    }
    for (k = 0u; k < m->n_inputs + m->n_outputs; ++k) {
        int32_t t = k < m->n_inputs ? m->inputs[k] : m->outputs[k - m->n_inputs];
        void *const *given = k < m->n_inputs ? inputs : outputs;
        void *p = given != NULL ? given[k < m->n_inputs ? k : k - m->n_inputs] : NULL;
        uint8_t r = m->tensor_regions[t];
        if (p != NULL && r < m->n_regions && arena_is_caller_region(&regions[r])) {
            regions[r].base = (uint8_t *)p;
        }
    }
    return arena_run(m, base, failed_op);
}

/* Boards with weights in RAM (weights: <region>) define it in their generated arena
 * source: it copies the weights from their load image in flash. It is a constructor,
 * so a startup that runs the init array (__libc_init_array, the example's startup.c)
 * calls it before main; a startup that does not must call it once before arena_run. */
void arena_init(void);

/* Runs tile loop k of m (arena_tiles_t; arena_run calls it through the loop's `run`). On error
 * *failed_op is the member's op row that stopped. */
int arena_run_tiles(const arena_model_t *m, uint32_t k, uint8_t *base, int *failed_op);

/* Address of tensor `index` (arena or constant). */
void *arena_tensor_data(const arena_model_t *m, uint8_t *base, int index);

size_t arena_dtype_size(uint8_t dtype);

/* Per-op profiling: a firmware compiled with -DARENA_PROFILE defines this hook; arena_run calls
 * it with done = 0 just before op `op` of `m` runs and with done = 1 just after (the example
 * main.c times each op with SysTick and prints "op <model> <index> <ticks>"). Without the macro
 * arena_run calls nothing. */
#if defined(ARENA_PROFILE)
void arena_profile_op(const arena_model_t *m, uint32_t op, int done);
#endif

#endif
