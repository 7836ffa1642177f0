"""report: for people: the HTML/Markdown report, explain, the timeline and the layout plot. Imports every
stage below it; only cli imports it.

The stage order (tests/test_layering.py): core < model < plan < target < emit < builder < run < report < cli.
"""
