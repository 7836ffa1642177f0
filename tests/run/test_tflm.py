"""run.tflm: ``arena-tool verify`` in TFLite Micro's host interpreter (and LiteRT where installed):
TFLM's head against arena's plan, and what TFLM itself refuses."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from arena_tool.emit import tflite_write
from arena_tool.run import tflm
from arena_tool.core.errors import ArenaError
from conftest import require_shared
from tflite_models import KWS_HYBRID, MLPERF, chain_model, run, save


def test_kws_float32_is_hybrid_and_tflm_refuses_it_too(capsys):
    path = require_shared(MLPERF / KWS_HYBRID)
    code, out, err = run(capsys, "plan", path)
    assert code == 2 and "hybrid model" in err and "TFLite Micro refuses" in err and len(err.splitlines()) == 1
    data = path.read_bytes()
    with pytest.raises(ArenaError, match="Hybrid models are not supported"):  # TFLM says the same
        tflm.run_tflm(data, str(path), [[np.zeros((1, 49, 10, 1), np.float32)]])


def test_verify_fails_when_tflm_head_is_not_arenas(tmp_path, capsys):
    """x (live throughout) left to TFLM (-1) cannot fit between arena's a@0, b@64, y@128: TFLM's head grows."""
    src = save(tmp_path, "chain.tflite", chain_model())
    offsets = [-1, -1, -1, 0, 64, 128]  # x, c1, c2, a, b, y
    path = save(tmp_path, "p.tflite", tflite_write.planned_bytes(Path(src).read_bytes(), src, offsets))
    code, out_text, err = run(capsys, "verify", src, path, "--runs", "1")
    assert code == 1
    assert "TFLM's head 256 B differs from arena's plan 192 B: TFLM planned x itself" in err
    assert "bit-identical" in out_text  # the outputs are right; the head is not arena's


def test_verify_without_litert_says_so(tmp_path, capsys, monkeypatch):
    src = save(tmp_path, "chain.tflite", chain_model())
    assert run(capsys, "plan", src, "-o", tmp_path / "p.tflite")[0] == 0
    monkeypatch.setattr(tflm, "litert_available", lambda: "ai-edge-litert is not installed")
    code, out, err = run(capsys, "verify", src, tmp_path / "p.tflite", "--runs", "1")
    assert code == 0, err
    assert "LiteRT: skipped: ai-edge-litert is not installed" in out
