"""core: the vocabulary and helpers every stage uses: problems and plans, options, errors, dtypes, the
schemas, files, the progress line. Imports nothing else of arena_tool.

The stage order (tests/test_layering.py): core < model < plan < target < emit < builder < run < report < cli.
"""
