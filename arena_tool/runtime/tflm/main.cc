/* The TFLite Micro firmware arena builds for `runtime: tflm` with `tflm:` sources.
 *
 * For each model of the generated table (arena_tflm.h; arena_tool.emit.tflm_app writes it): a
 * tflite::MicroInterpreter over the model's slice of the planned tensor_arena (section
 * .tensor_arena, placed by arena's linker script), with an op resolver that registers
 * exactly the model's ops; AllocateTensors, each input filled with the given data or else the
 * example's pattern, one Invoke timed with SysTick, and each output printed as the example
 * main.c prints arena's (fw_io.h), so arena_tool.run.verify.parse_output reads both:
 *
 *   calibrate 50000 ticks 1250
 *   model vww
 *   ticks vww 600660
 *   arena vww used 80112          (TFLM's arena_used_bytes: head + tail on this target)
 *   output Identity int8 2
 *   0 -3
 *   status vww 0
 *
 * main returns 0 when every model ran, else 1 (startup.c passes it to QEMU's exit status); an
 * arena allocation that fails prints "error MODEL tensor_arena too small: ..." and exits 1.
 */
#include <stdint.h>
#include <string.h>

#include "arena_tflm.h"
#include "tensorflow/lite/micro/micro_interpreter.h"
#include "tensorflow/lite/schema/schema_generated.h"

#if defined(__arm__) && !defined(__linux__)
#include "semihost.h"
#include "tensorflow/lite/micro/cortex_m_generic/debug_log_callback.h"
#endif
#include "fw_io.h"

#if defined(ARENA_TARGET)
/* No static destructors run on a bare-metal target (main never returns to a C library). */
extern "C" {
void *__dso_handle = nullptr;
}

static const char *current_model = "?";

/* TFLM's log. An arena allocation that fails returns nullptr, which some kernels (CMSIS-NN's
 * LSTM kernel sums) write through in Prepare: on mps2 that overwrites the vector table at 0 and
 * locks the core up. So the first "Failed to allocate" ends the run here with one error line
 * and exit status 1: the arena given is too small for the kernels linked. */
static void log_line(const char *text)
{
    if (strncmp(text, "Failed to allocate", 18) != 0) {
        out(text);
    } else {
        put_s("error ");
        put_s(current_model);
        put_s(" tensor_arena too small: ");
        put_s(text);
        flush();
        put_s("status ");
        put_s(current_model);
        put_s(" 1");
        flush();
        sh_exit(1);
    }
}
#endif

static const char *type_name(TfLiteType t)
{
    switch (t) {
    case kTfLiteFloat32: return "float32";
    case kTfLiteInt8: return "int8";
    case kTfLiteUInt8: return "uint8";
    case kTfLiteInt16: return "int16";
    case kTfLiteInt32: return "int32";
    case kTfLiteInt64: return "int64";
    case kTfLiteBool: return "bool";
    default: return "other";
    }
}

static size_t element_size(TfLiteType t)
{
    switch (t) {
    case kTfLiteFloat32: case kTfLiteInt32: return 4u;
    case kTfLiteInt16: return 2u;
    case kTfLiteInt64: return 8u;
    default: return 1u;
    }
}

static void fill_input(TfLiteTensor *t, uint32_t which)
{
    const uint32_t n = (uint32_t)(t->bytes / element_size(t->type));
    for (uint32_t i = 0; i < n; ++i) {
        const int32_t v = pattern_value(i, which);
        switch (t->type) {
        case kTfLiteFloat32: t->data.f[i] = (float)v / 125.0f - 1.0f; break;
        case kTfLiteInt8: t->data.int8[i] = (int8_t)(v - 125); break;
        case kTfLiteUInt8: t->data.uint8[i] = (uint8_t)v; break;
        case kTfLiteInt16: t->data.i16[i] = (int16_t)(v - 125); break;
        case kTfLiteInt32: t->data.i32[i] = v - 125; break;
        case kTfLiteInt64: t->data.i64[i] = (int64_t)(v - 125); break;
        default: break;
        }
    }
}

static void print_tensor(const char *name, const TfLiteTensor *t)
{
    const uint32_t n = (uint32_t)(t->bytes / element_size(t->type));
    put_s("output ");
    put_s(name);
    put_s(" ");
    put_s(type_name(t->type));
    put_s(" ");
    put_u(n);
    flush();
    for (uint32_t i = 0; i < n; ++i) {
        put_u(i);
        put_s(" ");
        switch (t->type) {
        case kTfLiteFloat32: {
            uint32_t bits;
            memcpy(&bits, &t->data.f[i], sizeof bits);
            put_hex(bits);
            put_s(" ");
            put_f(t->data.f[i]);
            break;
        }
        case kTfLiteInt8: put_i(t->data.int8[i]); break;
        case kTfLiteUInt8: put_u(t->data.uint8[i]); break;
        case kTfLiteBool: put_u(t->data.uint8[i]); break;
        case kTfLiteInt16: put_i(t->data.i16[i]); break;
        case kTfLiteInt32: put_i(t->data.i32[i]); break;
        case kTfLiteInt64: put_i((int32_t)t->data.i64[i]); break;
        default: put_s("?"); break;
        }
        flush();
    }
}

static void fail(const ArenaTflmModel &m, const char *what)
{
    put_s("error ");
    put_s(m.name);
    put_s(" ");
    put_s(what);
    flush();
}

/* One model: 0 when it ran and printed its outputs. */
static int run_model(const ArenaTflmModel &m)
{
    put_s("model ");
    put_s(m.name);
    flush();
#if defined(ARENA_TARGET)
    current_model = m.name;
#endif
    memset(m.arena, 0xFF, m.arena_bytes); /* what nobody wrote reads as NaN or -1 */
    const tflite::MicroOpResolver *resolver = m.resolver();
    if (resolver == nullptr) {
        fail(m, "op resolver");
        return 1;
    }
    tflite::MicroInterpreter interpreter(tflite::GetModel(m.data), *resolver, m.arena, m.arena_bytes);
    if (interpreter.AllocateTensors() != kTfLiteOk) {
        fail(m, "AllocateTensors");
        return 1;
    }
    for (uint32_t k = 0; k < interpreter.inputs_size(); ++k) {
        TfLiteTensor *t = interpreter.input(k);
        if (k < m.n_inputs && m.inputs[k].data != nullptr && m.inputs[k].bytes == t->bytes) {
            memcpy(t->data.raw, m.inputs[k].data, t->bytes);
        } else {
            fill_input(t, k);
        }
    }
#if defined(ARENA_TARGET)
    ticks_start();
    const TfLiteStatus rc = interpreter.Invoke();
    const uint32_t ticks = ticks_stop();
    put_s("ticks ");
    put_s(m.name);
    put_s(" ");
    put_u(ticks);
    flush();
#else
    const TfLiteStatus rc = interpreter.Invoke();
#endif
    put_s("arena ");
    put_s(m.name);
    put_s(" used ");
    put_u((uint32_t)interpreter.arena_used_bytes());
    flush();
    if (rc == kTfLiteOk) {
        for (uint32_t k = 0; k < interpreter.outputs_size(); ++k) {
            print_tensor(k < m.n_outputs ? m.output_names[k] : "?", interpreter.output(k));
        }
    } else {
        fail(m, "Invoke");
    }
    put_s("status ");
    put_s(m.name);
    put_s(" ");
    put_i(rc == kTfLiteOk ? 0 : 1);
    flush();
    return rc == kTfLiteOk ? 0 : 1;
}

int main(void)
{
    int status = 0;
#if defined(ARENA_TARGET)
    RegisterDebugLogCallback(log_line);
#endif
    print_calibration();
    for (uint32_t e = 0; e < arena_tflm_model_count; ++e) {
        if (run_model(arena_tflm_models[e]) != 0 && status == 0) {
            status = 1;
        }
    }
    return status;
}
