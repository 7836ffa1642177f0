/* The table of models main.cc runs on TFLite Micro. arena generates its definition per board
 * (arena_tflm.cc, arena_tool.emit.tflm_app): each model's planned flatbuffer, its slice of the
 * planned tensor_arena, a resolver holding exactly its ops, the input data to copy (none: the
 * example's pattern) and its outputs' names. This header is the same for every board, so
 * main.cc compiles once per core and kernel set. */
#ifndef ARENA_TFLM_H
#define ARENA_TFLM_H

#include <stddef.h>
#include <stdint.h>

#include "tensorflow/lite/micro/micro_op_resolver.h"

struct ArenaTflmInput {
    const void *data; /* NULL: fill with the pattern */
    size_t bytes;
};

struct ArenaTflmModel {
    const char *name;
    const unsigned char *data;          /* the planned .tflite (flash) */
    uint8_t *arena;                      /* the model's slice of tensor_arena */
    size_t arena_bytes;                  /* head (arena's plan) + TFLM's persistent tail */
    const tflite::MicroOpResolver *(*resolver)(void); /* NULL when an op does not register */
    uint32_t n_inputs;
    const ArenaTflmInput *inputs;
    uint32_t n_outputs;
    const char *const *output_names;
};

extern const ArenaTflmModel arena_tflm_models[];
extern const uint32_t arena_tflm_model_count;

#endif /* ARENA_TFLM_H */
