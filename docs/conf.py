"""Sphinx configuration: MyST Markdown pages, the furo theme, and arena_reference, the extension
that generates the reference pages from the schemas, the CLI parser and arena_model.h at build
time. tests/test_docs.py builds with -W (every warning an error)."""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))
sys.path.insert(0, str(HERE.parent))  # arena_tool, for the CLI reference

project = "arena"
author = "the arena authors"
extensions = ["myst_parser", "arena_reference"]
source_suffix = {".md": "markdown"}
exclude_patterns = ["_build"]
myst_heading_anchors = 3
myst_enable_extensions = ["deflist"]
html_theme = "furo"
html_title = "arena"
templates_path: list[str] = []
