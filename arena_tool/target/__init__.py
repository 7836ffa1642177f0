"""target: what the user declares: YAML, boards, the manifest, the user's linker script, the per-board
report document. Imports core, model and plan.

The stage order (tests/test_layering.py): core < model < plan < target < emit < builder < run < report < cli.
"""
