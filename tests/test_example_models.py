"""The example models in the repository are exactly what make_models.py writes.

They are committed so that a fresh clone builds with `scons` alone; this test
keeps them honest: regenerate into a temporary folder and compare byte for byte.
"""

from __future__ import annotations

import subprocess
import sys

from conftest import ROOT

MODELS = ROOT / "example_firmware" / "models"


def test_committed_models_are_the_scripts_output(tmp_path):
    r = subprocess.run([sys.executable, str(MODELS / "make_models.py"), str(tmp_path)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    made = sorted(p.name for p in tmp_path.glob("*.onnx"))
    assert made == ["autoencoder.onnx", "kws.onnx", "kws_int8.onnx", "resnet8.onnx"]
    for name in made:
        assert (tmp_path / name).read_bytes() == (MODELS / name).read_bytes(), (
            f"{name} differs from make_models.py's output: run "
            f"'python3 example_firmware/models/make_models.py' and commit the result")
