"""Shared test helpers.

Tests that need the Arm cross toolchain or QEMU call ``require_tool``: they are
skipped with a reason where the tool is absent, except under
ARENA_REQUIRE_TOOLS=1 (set by .ci/run), where an absent tool is a failure, so
CI can never go green by skipping the firmware tests.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))


def require_tool(name: str) -> str:
    path = shutil.which(name)
    if path:
        return path
    if os.environ.get("ARENA_REQUIRE_TOOLS") == "1":
        pytest.fail(f"{name} is not on PATH but ARENA_REQUIRE_TOOLS=1 (CI must install it: see .ci/setup)")
    pytest.skip(f"{name} is not on PATH (install it with .ci/setup)")
    raise AssertionError("unreachable")


def light_models() -> list[Path]:
    """The real models that ship inside the onnx package."""
    import onnx

    folder = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
    return sorted(folder.glob("*.onnx"))


@pytest.fixture(scope="session")
def qcache(tmp_path_factory):
    """One folder of int8 twins (tests/quantized.py) for the whole run: each is made once."""
    return tmp_path_factory.mktemp("quantized")


@pytest.fixture(scope="session")
def zoo_dir(tmp_path_factory):
    """tests/zoo.py's networks (MobileNet V1/V2/V3, MnasNet, EfficientNet, ShuffleNetV2,
    SqueezeNet, ResNet at 96x96) saved once per run, as <name>.onnx."""
    import onnx

    import zoo

    d = tmp_path_factory.mktemp("zoo")
    for name in zoo.NAMES:
        onnx.save(zoo.build(name), str(d / f"{name}.onnx"))
    return d
