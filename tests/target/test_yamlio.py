"""yamlio: positions, YAML errors, schema messages, sizes."""

from __future__ import annotations

import textwrap

import pytest

from arena_tool.target import yamlio
from arena_tool.core.errors import ArenaError

BOARD = textwrap.dedent("""\
    name: x
    description: d
    source: s
    cpu:
      core: cortex-m7
      fpu: fpv5-d16
      float_abi: hard
    flash: {origin: 0x08000000, length: 1M}
    ram:
      - name: DTCM
        origin: 0x20000000
        length: 64K
        zero_wait: true
        cacheable: false
        dma: true
        executable: true
    default_region: DTCM
    """)


def _error(text: str, schema: str | None = "board") -> str:
    with pytest.raises(ArenaError) as info:
        doc = yamlio.loads(text, "b.yaml")
        if schema:
            yamlio.validate(doc, schema)
    return str(info.value)


def test_positions_of_keys_items_and_values() -> None:
    doc = yamlio.loads("a: 1\nb:\n  c: [1, 2]\n  d:\n    - x: 0x10\n      y: 64K\n", "f.yaml")
    assert doc.data == {"a": 1, "b": {"c": [1, 2], "d": [{"x": 16, "y": "64K"}]}}
    assert doc.position(("b", "c")) == (3, 3)
    assert doc.value_position(("b", "c")) == (3, 6)
    assert doc.position(("b", "c", 1)) == (3, 10)
    assert doc.position(("b", "d", 0, "y")) == (6, 7)
    assert doc.value_position(("b", "d", 0, "y")) == (6, 10)
    # unknown paths fall back to the nearest ancestor
    assert doc.position(("b", "d", 0, "nope")) == (5, 7)
    assert doc.position(()) == (1, 1)


def test_doc_error_names_file_line_and_field() -> None:
    doc = yamlio.loads("models:\n  - path: m.onnx\n    k: 0\n", "man.yaml")
    err = doc.error("k must be >= 1", ("models", 0, "k"), at_value=True, hint="use k: 1")
    assert str(err) == "man.yaml:3:8: error: models[0].k: k must be >= 1 (hint: use k: 1)"
    located = doc.locate(ArenaError("bad"), ("models", 0, "path"))
    assert str(located) == "man.yaml:2:5: error: models[0].path: bad"


def test_duplicate_key_is_an_error() -> None:
    assert _error("a: 1\nb:\n  c: 1\n  c: 2\n", None) == (
        "b.yaml:4:3: error: b.c: duplicate key 'c' (first defined on line 3) (hint: keep only one of them)")


def test_yaml_syntax_error_has_line_and_column() -> None:
    assert _error("a: 1\nb: c: d\n", None) == (
        "b.yaml:2:5: error: YAML syntax error: mapping values are not allowed here "
        "(hint: check indentation, colons and quoting on this line or the one before)")


def test_merge_keys_are_resolved_and_explicit_keys_win() -> None:
    doc = yamlio.loads("base: &b {p: 1, r: 3}\nm:\n  <<: *b\n  p: 2\n", "f.yaml")
    assert doc.data["m"] == {"r": 3, "p": 2}
    assert doc.position(("m", "p")) == (4, 3)


def test_empty_document_and_missing_file(tmp_path) -> None:
    assert yamlio.loads("", "e.yaml").data is None
    with pytest.raises(ArenaError) as info:
        yamlio.load(str(tmp_path / "nope.yaml"))
    assert str(info.value) == f"{tmp_path / 'nope.yaml'}: error: file not found (hint: check the path)"


def test_valid_board_passes() -> None:
    yamlio.validate(yamlio.loads(BOARD, "b.yaml"), "board")


def test_unknown_key_with_did_you_mean() -> None:
    text = BOARD.replace("    executable: true\n", "    executable: true\n    regoin: 1\n")
    assert _error(text) == (
        "b.yaml:17:5: error: ram[0].regoin: unknown key 'regoin' (hint: expected one of: cacheable, dma, "
        "executable, length, name, needs_init, note, origin, speed, zero_wait)")
    text = BOARD.replace("default_region", "defualt_region")
    assert _error(text).startswith(
        "b.yaml:17:1: error: defualt_region: unknown key 'defualt_region' (hint: did you mean 'default_region'? "
        "expected one of: cpu, data_region, default_region, description,")


def test_wrong_type_points_at_the_value() -> None:
    text = BOARD.replace("  float_abi: hard\n", "  float_abi: hard\n  irqs: abc\n")
    assert _error(text) == "b.yaml:8:9: error: cpu.irqs: wrong type: expected integer, got 'abc'"
    text = BOARD.replace("zero_wait: true", "zero_wait: 1")
    assert _error(text) == "b.yaml:13:16: error: ram[0].zero_wait: wrong type: expected boolean (true/false), got 1"


def test_missing_required_key() -> None:
    text = BOARD.replace("source: s\n", "")
    assert _error(text) == (
        "b.yaml:1:1: error: source: missing required key 'source' (hint: add 'source: ...': "
        "where the memory map comes from (reference manual, datasheet, QEMU source))")
    text = BOARD.replace("    length: 64K\n", "")
    assert _error(text) == "b.yaml:10:5: error: ram[0].length: missing required key 'length' (hint: add 'length: ...')"


def test_enum_and_x_expected_messages() -> None:
    assert _error(BOARD.replace("hard", "hrad")) == (
        "b.yaml:7:14: error: cpu.float_abi: invalid value 'hrad' (hint: did you mean 'hard'? "
        "expected one of: soft, softfp, hard)")
    assert _error(BOARD.replace("64K", "64Q")) == (
        "b.yaml:12:13: error: ram[0].length: invalid value '64Q': "
        "expected a byte count like 65536, '64K', '64KiB', '1M' or '0x10000'")
    assert _error(BOARD.replace("origin: 0x20000000", "origin: [1]")) == (
        "b.yaml:11:13: error: ram[0].origin: wrong type: expected an address like 0x20000000, got a list")


def test_first_error_in_the_file_wins() -> None:
    text = BOARD.replace("64K", "64Q").replace("fpu: fpv5-d16", "fpu: x")
    assert _error(text).startswith("b.yaml:6:8: error: cpu.fpu: invalid value 'x'")


def test_schema_path_and_unknown_schema() -> None:
    assert yamlio.schema_path("board").name == "board.schema.json"
    with pytest.raises(ArenaError) as info:
        yamlio.schema_path("nope")
    assert info.value.exit_code == 3


@pytest.mark.parametrize("value, expected", [
    (65536, 65536), ("65536", 65536), ("64K", 65536), ("64KiB", 65536), ("64 KB", 65536), ("64k", 65536),
    ("0x10000", 65536), ("1M", 1 << 20), ("1MiB", 1 << 20), ("512B", 512), (0, 0), ("65_536", 65536),
])
def test_parse_size(value: object, expected: int) -> None:
    assert yamlio.parse_size(value) == expected


@pytest.mark.parametrize("value, message", [
    ("abc", "invalid size 'abc': expected a byte count like 65536, '64K', '64KiB', '1M' or '0x10000'"),
    ("64G", "invalid size '64G': expected a byte count like 65536, '64K', '64KiB', '1M' or '0x10000'"),
    ("1.5K", "invalid size '1.5K': expected a byte count like 65536, '64K', '64KiB', '1M' or '0x10000'"),
    ("50%", "invalid size '50%': expected a byte count like 65536, '64K', '64KiB', '1M' or '0x10000'"),
    (-1, "invalid size -1: must not be negative"),
    (True, "invalid size True: expected a byte count like 65536, '64K', '64KiB', '1M' or '0x10000'"),
    (1.5, "invalid size 1.5: expected a byte count like 65536, '64K', '64KiB', '1M' or '0x10000'"),
])
def test_parse_size_errors(value: object, message: str) -> None:
    with pytest.raises(ArenaError) as info:
        yamlio.parse_size(value)
    assert info.value.msg == message


def test_field_name() -> None:
    assert yamlio.field_name(("boards", "nucleo_f746", "budget")) == "boards.nucleo_f746.budget"
    assert yamlio.field_name(("models", 2, "path")) == "models[2].path"
    assert yamlio.field_name(()) == ""
