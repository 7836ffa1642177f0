"""manifest_data: a loaded manifest's types and their plain JSON, which the no-op build reads
instead of the YAML: the round trip is exact."""

from __future__ import annotations

import json
from pathlib import Path

from arena_tool.target import manifest, manifest_data
from conftest import write_manifest as write

ROOT = Path(__file__).resolve().parents[2]


def test_the_cache_document_carries_the_whole_board(tmp_path: Path) -> None:
    """to_doc/from_doc: every target keeps its Board (Board.to_json), the round trip is exact and
    its text byte-identical."""

    m = manifest.load(str(ROOT / "example_firmware" / "arena.yaml"))
    doc = manifest_data.to_doc(m)
    text = json.dumps(doc)
    back = manifest_data.from_doc(json.loads(text))
    assert back == m and json.dumps(manifest_data.to_doc(back)) == text
    for t, d in zip(m.targets, doc["targets"]):
        assert d["board"] == t.board.to_json() and d["board_file"] == t.board.file
        assert d["gcc_flags"] == list(t.board.cpu.gcc_flags()) and d["key"] == t.key()


def test_every_target_and_budget_round_trips_and_resolves(tmp_path: Path) -> None:
    m = manifest.load(write(tmp_path, "budget: 50%\nreserve: {stack: 4100}\nmodels: [{name: a, path: m.onnx}]\n"
                                      "boards: [mps2_an500, {name: rpi_pico, budget: 64K}]\n"))
    for t in m.targets:
        assert manifest_data.target_from_doc(manifest_data.target_doc(t)) == t
    an500, pico = m.targets
    region = an500.board.region(an500.board.default_region)
    assert an500.budget.resolve(region.length) == region.length // 2 and pico.budget.resolve(1) == 64 * 1024
    data = an500.board.data_region
    assert an500.reserve == 4104  # the stack rounded up to 8, as the linker script lays it out
    assert an500.region_room(data) == an500.board.region(data).length - an500.reserve
    assert an500.region_limit(data) == min(an500.budget.resolve(an500.board.region(data).length),
                                           an500.region_room(data))


def test_every_board_option_is_in_the_manifest_schema_at_both_levels() -> None:
    """A BoardOptions field is a manifest key at the top level and in a board's entry (the loader
    reads it by its name from either); a field the schema lacks would be refused as unknown."""
    from arena_tool.target.manifest_data import BoardOptions

    schema = json.loads((ROOT / "schemas" / "manifest.schema.json").read_text())
    for name in BoardOptions.names():
        assert name in schema["properties"] and name in schema["$defs"]["board"]["properties"], name
    assert BoardOptions(optimize="size").chosen() == {"optimize": "size"} and BoardOptions().chosen() == {}
