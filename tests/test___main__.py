"""__main__: ``python -m arena_tool`` is the console script: the same plans byte for byte, and
main's exit status as the process's."""

from __future__ import annotations

import os
import subprocess
import sys

import models


def test_console_script_and_byte_identical_plans(tmp_path):
    chain_path = str(models.save(models.chain(), tmp_path / "chain.onnx"))
    docs = []
    for seed in ("0", "12345"):
        out_path = tmp_path / f"plan{seed}.json"
        env = dict(os.environ, PYTHONHASHSEED=seed)
        r = subprocess.run([sys.executable, "-m", "arena_tool", "plan", chain_path, "-o", str(out_path)],
                           env=env, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        docs.append(out_path.read_bytes())
    assert docs[0] == docs[1]


def test_a_usage_error_is_the_exit_status_and_one_line(tmp_path):
    r = subprocess.run([sys.executable, "-m", "arena_tool", "plan"], capture_output=True, text=True, timeout=120,
                       cwd=tmp_path)
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1 and "no model given" in r.stderr, r.stderr
