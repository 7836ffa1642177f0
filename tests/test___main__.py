"""__main__: ``python -m arena_tool`` is the console script: the same plans byte for byte, and
main's exit status as the process's."""

from __future__ import annotations

import subprocess
import sys

import models
from builders import outputs_under_hash_seeds


def test_console_script_and_byte_identical_plans(tmp_path):
    chain_path = str(models.save(models.chain(), tmp_path / "chain.onnx"))
    out = str(tmp_path / "plan{seed}.json")
    docs = outputs_under_hash_seeds(["plan", chain_path, "-o", out], out)
    assert docs[0] == docs[1]


def test_a_usage_error_is_the_exit_status_and_one_line(tmp_path):
    r = subprocess.run([sys.executable, "-m", "arena_tool", "plan"], capture_output=True, text=True, timeout=120,
                       cwd=tmp_path)
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1 and "no model given" in r.stderr, r.stderr
