"""emit: plans -> files for the firmware: C tables, the linker script and fragment, the planned .tflite,
what the C runtime supports. Imports core, model, plan and target.

The stage order (tests/test_layering.py): core < model < plan < target < emit < builder < run < report < cli.
"""
