"""noop_cache: a no-op build's manifest document and end-of-build summary, reused while no input
changed (the manifest, its boards and models, arena's own files) and made anew otherwise."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from arena_tool.builder import noop_cache
from arena_tool.core.errors import ArenaError
from arena_tool.target import manifest
from conftest import write_manifest as write


def test_cached_load_skips_yaml_until_an_input_changes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, "models: [{name: a, path: m.onnx}]\nboards: [rpi_pico]\n")
    cache = str(tmp_path / "build" / "cache.pickle")
    first = noop_cache.load(path, (), cache)

    def boom(*a: object, **k: object) -> None:
        raise AssertionError("load called although nothing changed")

    monkeypatch.setattr(manifest, "load", boom)
    assert noop_cache.load(path, (), cache) == first
    monkeypatch.undo()
    Path(path).write_text("budget: 50%\nmodels: [{name: a, path: m.onnx}]\nboards: [rpi_pico]\n")
    os.utime(path, ns=(1, 1))  # a different mtime even on coarse clocks
    assert noop_cache.load(path, (), cache).targets[0].budget.percent == 50.0
    os.remove(tmp_path / "m.onnx")  # a vanished model is noticed, not served from the cache
    with pytest.raises(ArenaError, match="model file not found"):
        noop_cache.load(path, (), cache)


def test_a_cache_of_the_previous_format_is_not_reused(tmp_path: Path) -> None:
    import json

    path = write(tmp_path, "models: [{name: a, path: m.onnx}]\nboards: [rpi_pico]\n")
    cache = tmp_path / "cache.json"
    noop_cache.cached(path, (), str(cache))
    entry = json.loads(cache.read_text())
    assert entry["key"][0] == noop_cache.FORMAT == 3
    board = entry["manifest"]["targets"][0].pop("board")  # format 2 had copies of some board fields
    cache.write_text(json.dumps(dict(entry, key=[2, *entry["key"][1:]])))
    assert noop_cache.cached(path, (), str(cache))["targets"][0]["board"] == board


def test_truncated_manifest_cache_is_rebuilt(tmp_path: Path) -> None:
    path = write(tmp_path, "models:\n  - {name: kws, path: m.onnx}\nboards:\n  - mps2_an500\n")
    cache = tmp_path / "build" / ".arena_manifest.json"
    first = noop_cache.cached(path, (), str(cache))
    cache.write_text(cache.read_text()[:40])
    assert noop_cache.cached(path, (), str(cache)) == first
    json.loads(cache.read_text())  # written anew, whole
