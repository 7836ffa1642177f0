"""builder: the gate and the build graph: the budget gate and its hints, the SCons build as data, the no-op
build's cache. Imports every stage below it.

The stage order (tests/test_layering.py): core < model < plan < target < emit < builder < run < report < cli.
"""
