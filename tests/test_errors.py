"""Every folder under tests/errors/ is one bad manifest or board file.

Each holds ``manifest.yaml`` (plus ``boards/*.yaml`` for board-file cases) and
``expected.txt``: the exact one-line message ``manifest.load`` must render,
naming file, line, column and field with a hint. A new user error is a new
folder. The model file each manifest names is created empty here: these cases
stop before anything reads a model.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from arena_tool.target import manifest
from arena_tool.core.errors import EXIT_USAGE, ArenaError

CASES = Path(__file__).resolve().parent / "errors"
NAMES = sorted(p.name for p in CASES.iterdir() if (p / "expected.txt").is_file())


def test_there_are_enough_cases() -> None:
    assert len(NAMES) >= 20
    assert sum(1 for n in NAMES if (CASES / n / "boards").is_dir()) >= 5


@pytest.mark.parametrize("case", NAMES)
def test_error_case(case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copytree(CASES / case, tmp_path, dirs_exist_ok=True)
    (tmp_path / "kws.onnx").write_bytes(b"")
    monkeypatch.chdir(tmp_path)
    expected = (CASES / case / "expected.txt").read_text(encoding="utf-8").strip()
    with pytest.raises(ArenaError) as info:
        manifest.load("manifest.yaml")
    err = info.value
    assert err.render() == expected
    assert "\n" not in err.render()
    assert err.exit_code == EXIT_USAGE
    assert err.file and err.line is not None, "every manifest error names file and line"
    assert err.hint, "every manifest error says how to fix it"
