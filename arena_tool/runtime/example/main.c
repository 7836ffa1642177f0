/* Example firmware: runs every model of the generated tables.
 *
 * For each entry of arena_entries (codegen.arena_sources): poison the model's
 * arena slice (each of its slices, split over regions) with 0xFF bytes (NaN for float32, so a kernel that reads memory
 * nobody wrote shows up in the output), fill each input with a deterministic
 * pattern (the same one arena_tool.run.verify.input_pattern makes), run the model
 * through the tables, and print each output, one value per line, as the
 * exact bit pattern plus a readable decimal:
 *
 *   calibrate 50000 ticks 1250 (target only: a loop of 50000 instructions timed)
 *   model kws
 *   ticks kws 123456        (target only: SysTick ticks of the inference)
 *   output logits float32 12
 *   0 0x3e2aaaab 0.166667
 *   status kws 0
 *
 * A firmware may link a table of input data (`arena_inputs`, as
 * arena_tool/run/firmware.py generates for `arena-tool run`): an input listed
 * there gets those exact bytes instead of the pattern. Without the table
 * (it is a weak symbol) nothing changes.
 *
 * main returns 0 when every model ran, else the first runtime error code.
 * On the target, startup.c passes that to semihosting SYS_EXIT_EXTENDED (the
 * QEMU exit status); on the host it is the process exit status.
 */
#include <stdint.h>
#include <string.h>

#include "arena_model.h"

#include "fw_io.h"

static const char *dtype_name(uint8_t dt)
{
    switch (dt) {
    case ARENA_DT_FLOAT32: return "float32";
    case ARENA_DT_INT8: return "int8";
    case ARENA_DT_UINT8: return "uint8";
    case ARENA_DT_INT32: return "int32";
    case ARENA_DT_INT64: return "int64";
    default: return "other";
    }
}

/* The input pattern; arena_tool.run.verify.input_pattern is its Python twin. */
static void fill_input(const arena_tensor_t *t, void *data, uint32_t which)
{
    uint32_t i;
    for (i = 0; i < t->elements; ++i) {
        int32_t v = pattern_value(i, which);
        switch (t->dtype) {
        case ARENA_DT_FLOAT32: ((float *)data)[i] = (float)v / 125.0f - 1.0f; break;
        case ARENA_DT_INT8: ((int8_t *)data)[i] = (int8_t)(v - 125); break;
        case ARENA_DT_UINT8: ((uint8_t *)data)[i] = (uint8_t)v; break;
        case ARENA_DT_INT32: ((int32_t *)data)[i] = v - 125; break;
        case ARENA_DT_INT64: ((int64_t *)data)[i] = (int64_t)(v - 125); break;
        default: break;
        }
    }
}

/* Optional input data: one row per (model, input index), ended by a row whose
 * model is NULL. arena_tool/run/firmware.py writes the same struct; bytes must be
 * the tensor's elements times its element size, else the pattern is used.
 * A weak reference (GCC, Clang): the table is NULL unless a source defines it. */
typedef struct {
    const arena_model_t *model;
    uint32_t input;     /* index into model->inputs */
    const void *data;
    uint32_t bytes;
} arena_input_t;

#if defined(__GNUC__)
extern const arena_input_t arena_inputs[] __attribute__((weak));
#endif

/* The given data of input k of m, or NULL: fill it with the pattern. */
static const arena_input_t *given_input(const arena_model_t *m, uint32_t k)
{
#if defined(__GNUC__)
    const arena_input_t *p = arena_inputs;
    const arena_tensor_t *t = &m->tensors[m->inputs[k]];
    for (; p != NULL && p->model != NULL; ++p) {
        if (p->model == m && p->input == k && p->bytes == t->elements * (uint32_t)arena_dtype_size(t->dtype)) {
            return p;
        }
    }
#else
    (void)m;
    (void)k;
#endif
    return NULL;
}

static void print_tensor(const char *name, const arena_tensor_t *t, const void *data)
{
    uint32_t i;
    put_s("output ");
    put_s(name);
    put_s(" ");
    put_s(dtype_name(t->dtype));
    put_s(" ");
    put_u(t->elements);
    flush();
    for (i = 0; i < t->elements; ++i) {
        put_u(i);
        put_s(" ");
        switch (t->dtype) {
        case ARENA_DT_FLOAT32: {
            float f = ((const float *)data)[i];
            uint32_t bits;
            memcpy(&bits, &f, sizeof bits);
            put_hex(bits);
            put_s(" ");
            put_f(f);
            break;
        }
        case ARENA_DT_INT8: put_i(((const int8_t *)data)[i]); break;
        case ARENA_DT_UINT8: put_u(((const uint8_t *)data)[i]); break;
        case ARENA_DT_INT32: put_i(((const int32_t *)data)[i]); break;
        case ARENA_DT_INT64: put_i((int32_t)((const int64_t *)data)[i]); break;
        default: put_s("?"); break;
        }
        flush();
    }
}

int main(void)
{
    int status = 0;
    uint32_t e;
    print_calibration();
    for (e = 0; e < arena_entry_count; ++e) {
        const arena_model_t *m = arena_entries[e].model;
        uint8_t *base = arena + arena_entries[e].base;
        int failed = -1;
        int rc;
        uint32_t k;
        put_s("model ");
        put_s(m->name);
        flush();
        memset(base, 0xFF, m->arena_size);
        for (k = 1; k < m->n_regions; ++k) { /* a split arena: the model's slices in its other regions */
            memset(m->regions[k].base, 0xFF, m->regions[k].size);
        }
        for (k = 0; k < m->n_inputs; ++k) {
            const arena_input_t *given = given_input(m, k);
            void *data = arena_tensor_data(m, base, m->inputs[k]);
            if (given != NULL) {
                memcpy(data, given->data, given->bytes);
            } else {
                fill_input(&m->tensors[m->inputs[k]], data, k);
            }
        }
#if defined(ARENA_TARGET) && !defined(ARENA_PROFILE)
        ticks_start();
        rc = arena_run(m, base, &failed);
        {
            uint32_t ticks = ticks_stop();
            put_s("ticks ");
            put_s(m->name);
            put_s(" ");
            put_u(ticks);
            flush();
        }
#else
        rc = arena_run(m, base, &failed);
#endif
        if (rc != ARENA_OK) {
            put_s("error ");
            put_s(m->name);
            put_s(" op ");
            put_i(failed);
            if (failed >= 0 && m->op_names != NULL && m->op_types != NULL) { /* ARENA_NAMES */
                put_s(" ");
                put_s(m->op_types[failed]);
                put_s(" ");
                put_s(m->op_names[failed]);
            }
            put_s(" code ");
            put_i(rc);
            flush();
            if (status == 0) {
                status = rc;
            }
        } else {
            for (k = 0; k < m->n_outputs; ++k) {
                print_tensor(m->io_names[m->n_inputs + k], &m->tensors[m->outputs[k]],
                             arena_tensor_data(m, base, m->outputs[k]));
            }
        }
        put_s("status ");
        put_s(m->name);
        put_s(" ");
        put_i(rc);
        flush();
    }
    return status;
}

/* Per-op profile (built with -DARENA_PROFILE; arena-tool run --profile): arena_run calls this
 * around every op, and instead of the inference's "ticks" line the firmware prints one line per
 * op, SysTick ticks of that op alone (the printing falls between two ops, outside both counts):
 *
 *   op kws 3 1234           model, op index (the tables' order), ticks
 *
 * Written after main so that a normal build (no macro) keeps every line of this file where it
 * was: its ELF, debug line table included, is the same bytes as before profiling existed. */
#if defined(ARENA_PROFILE) && defined(ARENA_TARGET)
void arena_profile_op(const arena_model_t *m, uint32_t op, int done)
{
    uint32_t ticks;
    if (!done) {
        ticks_start();
        return;
    }
    ticks = ticks_stop();
    put_s("op ");
    put_s(m->name);
    put_s(" ");
    put_u(op);
    put_s(" ");
    put_u(ticks);
    flush();
}
#endif
