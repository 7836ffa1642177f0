/* arena_ops.h: the runtime's ops, generated from arena_tool/model/optable.py (python3 -m arena_tool.model.optable).
 * Do not edit; test_optable.py fails when this file and the table differ.
 *
 * An X-macro list: define ARENA_OP(op, kernel) and/or ARENA_KERNEL(kernel), include this
 * file, undefine them. ARENA_OP is every arena_op_type_t constant in enum order (its value is
 * its position: new ops go last) with the kernel the dispatch calls, and the ONNX op types and
 * the op-specific arena_attrs_t fields it reads as a comment; ARENA_KERNEL each kernel once. */

#ifdef ARENA_OP
ARENA_OP(ARENA_OP_IDENTITY, arena_k_identity)                               /* Identity, Reshape, Flatten, Squeeze, Unsqueeze, Dropout */
ARENA_OP(ARENA_OP_CONV, arena_k_conv)                                       /* Conv */
ARENA_OP(ARENA_OP_GEMM, arena_k_gemm)                                       /* Gemm */
ARENA_OP(ARENA_OP_MATMUL, arena_k_matmul)                                   /* MatMul */
ARENA_OP(ARENA_OP_RELU, arena_k_unary)                                      /* Relu */
ARENA_OP(ARENA_OP_CLIP, arena_k_unary)                                      /* Clip; min, max */
ARENA_OP(ARENA_OP_LEAKY_RELU, arena_k_unary)                                /* LeakyRelu; alpha */
ARENA_OP(ARENA_OP_SIGMOID, arena_k_unary)                                   /* Sigmoid */
ARENA_OP(ARENA_OP_ADD, arena_k_binary)                                      /* Add, Sum */
ARENA_OP(ARENA_OP_SUB, arena_k_binary)                                      /* Sub */
ARENA_OP(ARENA_OP_MUL, arena_k_binary)                                      /* Mul */
ARENA_OP(ARENA_OP_DIV, arena_k_binary)                                      /* Div */
ARENA_OP(ARENA_OP_MAX_POOL, arena_k_pool)                                   /* MaxPool */
ARENA_OP(ARENA_OP_AVERAGE_POOL, arena_k_pool)                               /* AveragePool */
ARENA_OP(ARENA_OP_GLOBAL_AVERAGE_POOL, arena_k_global_pool)                 /* GlobalAveragePool */
ARENA_OP(ARENA_OP_GLOBAL_MAX_POOL, arena_k_global_pool)                     /* GlobalMaxPool */
ARENA_OP(ARENA_OP_SOFTMAX, arena_k_softmax)                                 /* Softmax; axis, legacy_axis */
ARENA_OP(ARENA_OP_CONCAT, arena_k_concat)                                   /* Concat; axis */
ARENA_OP(ARENA_OP_BATCH_NORM, arena_k_batch_norm)                           /* BatchNormalization; epsilon */
ARENA_OP(ARENA_OP_QUANTIZE_LINEAR, arena_k_quantize)                        /* QuantizeLinear; axis */
ARENA_OP(ARENA_OP_DEQUANTIZE_LINEAR, arena_k_dequantize)                    /* DequantizeLinear; axis */
ARENA_OP(ARENA_OP_QLINEAR_CONV, arena_k_qlinear_conv)                       /* QLinearConv */
ARENA_OP(ARENA_OP_QLINEAR_MATMUL, arena_k_qlinear_matmul)                   /* QLinearMatMul */
ARENA_OP(ARENA_OP_QLINEAR_ADD, arena_k_qlinear_binary)                      /* QLinearAdd */
ARENA_OP(ARENA_OP_QLINEAR_MUL, arena_k_qlinear_binary)                      /* QLinearMul */
ARENA_OP(ARENA_OP_QGEMM, arena_k_qgemm)                                     /* QGemm; floats: alpha * a_scale * b_scale[j] / y_scale per entry of b_scale (int8 output; codegen) */
ARENA_OP(ARENA_OP_QLINEAR_AVERAGE_POOL, arena_k_qlinear_pool)               /* QLinearAveragePool */
ARENA_OP(ARENA_OP_QLINEAR_GLOBAL_AVERAGE_POOL, arena_k_qlinear_global_pool) /* QLinearGlobalAveragePool */
ARENA_OP(ARENA_OP_QLINEAR_CONCAT, arena_k_qlinear_concat)                   /* QLinearConcat */
ARENA_OP(ARENA_OP_QLINEAR_SOFTMAX, arena_k_qlinear_softmax)                 /* QLinearSoftmax */
ARENA_OP(ARENA_OP_QLINEAR_SIGMOID, arena_k_qlinear_unary)                   /* QLinearSigmoid */
ARENA_OP(ARENA_OP_QLINEAR_LEAKY_RELU, arena_k_qlinear_unary)                /* QLinearLeakyRelu */
ARENA_OP(ARENA_OP_QLINEAR_HARD_SWISH, arena_k_qlinear_unary)                /* QLinearHardSwish */
ARENA_OP(ARENA_OP_TRANSPOSE, arena_k_transpose)                             /* Transpose; ints: perm[rank] */
ARENA_OP(ARENA_OP_PAD, arena_k_pad)                                         /* Pad; ints: begin[rank], end[rank]; axis: mode 0 constant 1 reflect 2 edge; value */
ARENA_OP(ARENA_OP_SLICE, arena_k_slice)                                     /* Slice; ints: per input dim d, interleaved: start[d], step[d] (normalized, in range) */
ARENA_OP(ARENA_OP_SPLIT, arena_k_split)                                     /* Split; axis; the sizes are the outputs' */
ARENA_OP(ARENA_OP_RESIZE, arena_k_resize)                                   /* Resize, Upsample; ints: mode (0 nearest 1 linear), coordinate transform, nearest mode (4 = Resize-10's round up when downsampling); floats: scale per dim */
ARENA_OP(ARENA_OP_REDUCE_MEAN, arena_k_reduce_mean)                         /* ReduceMean; ints: 1 where dim d is reduced, per input dim */
ARENA_OP(ARENA_OP_HARD_SIGMOID, arena_k_unary)                              /* HardSigmoid; alpha, beta */
ARENA_OP(ARENA_OP_HARD_SWISH, arena_k_unary)                                /* HardSwish */
ARENA_OP(ARENA_OP_TANH, arena_k_unary)                                      /* Tanh */
ARENA_OP(ARENA_OP_EXP, arena_k_unary)                                       /* Exp */
ARENA_OP(ARENA_OP_NEG, arena_k_unary)                                       /* Neg */
ARENA_OP(ARENA_OP_ABS, arena_k_unary)                                       /* Abs */
ARENA_OP(ARENA_OP_SQRT, arena_k_unary)                                      /* Sqrt */
ARENA_OP(ARENA_OP_ERF, arena_k_unary)                                       /* Erf */
ARENA_OP(ARENA_OP_ELU, arena_k_unary)                                       /* Elu; alpha */
ARENA_OP(ARENA_OP_MAX, arena_k_binary)                                      /* Max */
ARENA_OP(ARENA_OP_MIN, arena_k_binary)                                      /* Min */
ARENA_OP(ARENA_OP_PRELU, arena_k_binary)                                    /* PRelu */
ARENA_OP(ARENA_OP_LRN, arena_k_lrn)                                         /* LRN; alpha, beta; ints: size; floats: bias */
ARENA_OP(ARENA_OP_SOFTSIGN, arena_k_unary)                                  /* Softsign */
ARENA_OP(ARENA_OP_PATCH_WRITE, arena_k_patch_write)                         /* PatchWrite; ints: per dim the first index of the box input 0 fills; input 1, when present, is the whole tensor so far (in place) */
ARENA_OP(ARENA_OP_QLINEAR_LOOKUP, arena_k_qlinear_lookup)                   /* QLinearLookup, TflLookup; ints: the 256 output bytes by input byte, four a word (little-endian) */
ARENA_OP(ARENA_OP_TFL_CONV, arena_k_tfl_conv)                               /* TflConv2D, TflDepthwiseConv2D; TFLite CONV_2D/DEPTHWISE_CONV_2D; ints: x_offset, y_zp, act_min, act_max, depth multiplier (0: a conv); input 3: (multiplier, shift) per output channel */
ARENA_OP(ARENA_OP_TFL_FULLY_CONNECTED, arena_k_tfl_fully_connected)         /* TflFullyConnected; TFLite FULLY_CONNECTED; ints: x_offset, w_offset, y_zp, act_min, act_max; input 3: (multiplier, shift) per output */
ARENA_OP(ARENA_OP_TFL_AVERAGE_POOL, arena_k_tfl_average_pool)               /* TflAveragePool2D; TFLite AVERAGE_POOL_2D; ints: act_min, act_max */
ARENA_OP(ARENA_OP_TFL_SOFTMAX, arena_k_tfl_softmax)                         /* TflSoftmax; TFLite SOFTMAX; ints: input multiplier, input left shift, diff_min */
ARENA_OP(ARENA_OP_TFL_BINARY, arena_k_tfl_binary)                           /* TflAdd, TflMul; TFLite ADD/MUL; ints: mode (0 add, 1 mul), offsets 1 and 2, output zero point, left shift, (multiplier, shift) of input 1, input 2, the output; act_min, act_max */
ARENA_OP(ARENA_OP_TFL_MAX_POOL, arena_k_tfl_max_pool)                       /* TflMaxPool2D; TFLite MAX_POOL_2D; ints: act_min, act_max */
ARENA_OP(ARENA_OP_TFL_QUANTIZE, arena_k_tfl_quantize)                       /* TflQuantize, TflDequantize; TFLite QUANTIZE float32 -> int8, DEQUANTIZE int8 -> float32; ints: zero point; floats: scale */
ARENA_OP(ARENA_OP_TFL_MEAN, arena_k_tfl_mean)                               /* TflMean; TFLite MEAN; ints: multiplier, shift, x_zp, y_zp (int8), then per input dim 1 where it is reduced */
ARENA_OP(ARENA_OP_TFL_CONV_F32, arena_k_tfl_conv_f32)                       /* TflConv2DF32, TflDepthwiseConv2DF32; TFLite CONV_2D/DEPTHWISE_CONV_2D float32; ints: 0, 0, 0, 0, depth multiplier (0: a conv); floats: act_min, act_max */
ARENA_OP(ARENA_OP_TFL_FULLY_CONNECTED_F32, arena_k_tfl_fully_connected_f32) /* TflFullyConnectedF32; TFLite FULLY_CONNECTED float32; floats: act_min, act_max */
ARENA_OP(ARENA_OP_TFL_BINARY_F32, arena_k_tfl_binary_f32)                   /* TflAddF32, TflMulF32; TFLite ADD/MUL float32; ints: mode (0 add, 1 mul); floats: act_min, act_max */
ARENA_OP(ARENA_OP_TFL_AVERAGE_POOL_F32, arena_k_tfl_average_pool_f32)       /* TflAveragePool2DF32; TFLite AVERAGE_POOL_2D float32; floats: act_min, act_max */
ARENA_OP(ARENA_OP_TFL_MAX_POOL_F32, arena_k_tfl_max_pool_f32)               /* TflMaxPool2DF32; TFLite MAX_POOL_2D float32; floats: act_min, act_max */
ARENA_OP(ARENA_OP_TFL_SOFTMAX_F32, arena_k_tfl_softmax_f32)                 /* TflSoftmaxF32; TFLite SOFTMAX float32; floats: beta */
ARENA_OP(ARENA_OP_TFL_UNARY_F32, arena_k_tfl_unary_f32)                     /* TflUnaryF32; TFLite LOGISTIC/TANH/HARD_SWISH float32; ints: function (0 logistic, 1 tanh, 2 hard swish) */
#endif

#ifdef ARENA_KERNEL
ARENA_KERNEL(arena_k_identity)
ARENA_KERNEL(arena_k_conv)
ARENA_KERNEL(arena_k_gemm)
ARENA_KERNEL(arena_k_matmul)
ARENA_KERNEL(arena_k_unary)
ARENA_KERNEL(arena_k_binary)
ARENA_KERNEL(arena_k_pool)
ARENA_KERNEL(arena_k_global_pool)
ARENA_KERNEL(arena_k_softmax)
ARENA_KERNEL(arena_k_concat)
ARENA_KERNEL(arena_k_batch_norm)
ARENA_KERNEL(arena_k_quantize)
ARENA_KERNEL(arena_k_dequantize)
ARENA_KERNEL(arena_k_qlinear_conv)
ARENA_KERNEL(arena_k_qlinear_matmul)
ARENA_KERNEL(arena_k_qlinear_binary)
ARENA_KERNEL(arena_k_qgemm)
ARENA_KERNEL(arena_k_qlinear_pool)
ARENA_KERNEL(arena_k_qlinear_global_pool)
ARENA_KERNEL(arena_k_qlinear_concat)
ARENA_KERNEL(arena_k_qlinear_softmax)
ARENA_KERNEL(arena_k_qlinear_unary)
ARENA_KERNEL(arena_k_transpose)
ARENA_KERNEL(arena_k_pad)
ARENA_KERNEL(arena_k_slice)
ARENA_KERNEL(arena_k_split)
ARENA_KERNEL(arena_k_resize)
ARENA_KERNEL(arena_k_reduce_mean)
ARENA_KERNEL(arena_k_lrn)
ARENA_KERNEL(arena_k_patch_write)
ARENA_KERNEL(arena_k_qlinear_lookup)
ARENA_KERNEL(arena_k_tfl_conv)
ARENA_KERNEL(arena_k_tfl_fully_connected)
ARENA_KERNEL(arena_k_tfl_average_pool)
ARENA_KERNEL(arena_k_tfl_softmax)
ARENA_KERNEL(arena_k_tfl_binary)
ARENA_KERNEL(arena_k_tfl_max_pool)
ARENA_KERNEL(arena_k_tfl_quantize)
ARENA_KERNEL(arena_k_tfl_mean)
ARENA_KERNEL(arena_k_tfl_conv_f32)
ARENA_KERNEL(arena_k_tfl_fully_connected_f32)
ARENA_KERNEL(arena_k_tfl_binary_f32)
ARENA_KERNEL(arena_k_tfl_average_pool_f32)
ARENA_KERNEL(arena_k_tfl_max_pool_f32)
ARENA_KERNEL(arena_k_tfl_softmax_f32)
ARENA_KERNEL(arena_k_tfl_unary_f32)
#endif
