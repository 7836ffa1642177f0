"""run: executing what was built: one-model firmware, QEMU, the ELF check, verification against
onnxruntime and TFLM, the run report. Imports every stage below it.

The stage order (tests/test_layering.py): core < model < plan < target < emit < builder < run < report < cli.
"""
