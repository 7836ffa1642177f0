"""Where the shared folder is (MLPerf Tiny models, minimalloc's examples), without pytest.

ARENA_SHARED, else ../shared beside the clone. A CI job that names it with ARENA_REQUIRE_TOOLS=1
asked for those tests to run: conftest then fails where a file is absent instead of skipping.
The model builders (quantized, tflite_models) import this and not conftest, so bench/ and mypy
see no pytest fixtures.
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("ARENA_SHARED") or ROOT.parent / "shared")
MLPERF = SHARED / "models" / "mlperf_tiny"
TFLM_EXAMPLES = SHARED / "models" / "tflm_examples"  # TFLM's example models (SOURCE.md there)
SHARED_REQUIRED = bool(os.environ.get("ARENA_SHARED")) and os.environ.get("ARENA_REQUIRE_TOOLS") == "1"
