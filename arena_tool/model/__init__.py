"""model: a model file -> lowered graph -> live ranges: ONNX loading and folding, the op table, lowering,
TFLite, liveness, scheduling, the problem CSV. Imports core.

The stage order (tests/test_layering.py): core < model < plan < target < emit < builder < run < report < cli.
"""
