"""plan: problems -> plans: the planners, the validator, the one planning pipeline, the split arena, the
plan file and its checker. Imports core and model.

The stage order (tests/test_layering.py): core < model < plan < target < emit < builder < run < report < cli.
"""
