"""One definition of the model options (problem.ModelOptions' fields and their Option): the CLI
flags, the manifest's hints and checks, the schemas and the JSON form all derive from it."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import jsonschema
import pytest

from arena_tool import cli
from arena_tool.core import schema
from arena_tool.model import liveness
from arena_tool.plan import planfile
from arena_tool.target import manifest, option_schemas, yamlio
from arena_tool.core.errors import ArenaError
from arena_tool.core.problem import SCRATCHES, ModelOptions, option, option_fields
from conftest import model_option_schemas


def test_the_plan_file_states_the_options_where_the_schema_does():
    names = {f.name for f, _ in option_fields(ModelOptions)}
    later = {f.name for f, o in option_fields(ModelOptions) if o.omit_default}  # written only when set
    assert later == {"io", "io_buffers", "kernels", "op_scratch", "patches"}
    assert set(planfile.options_doc(ModelOptions())) == names - set(option_schemas.PLAN_TOP_LEVEL) - later
    assert set(planfile.options_doc(ModelOptions(io="int8", io_buffers="caller", kernels="cmsis_nn_dsp",
                                                 op_scratch=(("0", (16,)),), patches="auto"))) == \
        names - set(option_schemas.PLAN_TOP_LEVEL)
    assert liveness.SCRATCHES == SCRATCHES


@pytest.mark.parametrize("argv, field, value", [
    (["--input-shape", "x=1,3", "--input-shape", "a=2"], "input_shapes", (("a", (2,)), ("x", (1, 3)))),
    (["--activation-dtype", "int8"], "activation_dtype", "int8"),
    (["--no-inplace"], "inplace", False),
    (["--no-inplace-depthwise"], "inplace_depthwise", False),
    (["--execution", "pipelined"], "execution", "pipelined"),
    (["--io-alignment", "0x20"], "io_alignment", 32),
    (["--weights", "SRAM1"], "weights", "SRAM1"),
    (["--allow-external-data-outside"], "allow_external_data_outside", True),
    (["--schedule", "memory"], "schedule", "memory"),
    (["--scratch", "row"], "scratch", "row"),
    (["--alignment", "8"], "alignment", 8),
])
def test_each_flag_sets_its_option_and_only_it(argv, field, value):
    assert cli._model_options(cli.parser().parse_args(["plan", "m.onnx"])) == ModelOptions()
    opts = cli._model_options(cli.parser().parse_args(["plan", "m.onnx", *argv]))
    assert opts == dataclasses.replace(ModelOptions(), **{field: value})


def test_bitwidths_flag_reads_its_file(tmp_path):
    path = tmp_path / "bits.json"
    path.write_text('{"t2": 4, "t1": 2}')
    opts = cli._model_options(cli.parser().parse_args(["export", "m.onnx", "-o", "x.csv", "--bitwidths", str(path)]))
    assert opts.bitwidths == (("t1", 2), ("t2", 4))


@pytest.mark.parametrize("flag", ["--execution=pipelined", "--io-alignment=32", "--weights=SRAM1",
                                  "--allow-external-data-outside", "--scratch=row", "--input-shape=x=1"])
def test_every_model_flag_is_refused_on_a_plan_file(capsys, tmp_path, flag):
    code = cli.main(["explain", str(tmp_path / "p.json"), flag])
    err = capsys.readouterr().err
    assert code == 2 and f"{flag.split('=')[0]} does not apply to a plan file" in err


# --- A new option, defined once, reaches every place


@dataclasses.dataclass(frozen=True)
class WithTile(ModelOptions):
    """ModelOptions plus two options, as a contributor would add them: only here."""

    tile: int | None = option(
        None, flag="--tile", cli="positive", metavar="N", power_of_two=True, help="tile the Convs by N rows",
        hint="write the tile height in rows, a power of two",
        schema={"type": ["integer", "null"], "minimum": 1, "description": "rows per Conv tile"},
        plan_schema={"type": ["integer", "null"], "minimum": 1})
    fuse: bool = option(
        True, flag="--no-fuse", cli="switch", help="do not fuse Relu into its producer",
        hint="write true or false (fuse Relu)", schema={"type": "boolean"}, plan_schema={"type": "boolean"})


def test_a_new_option_reaches_the_cli(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(cli, "ModelOptions", WithTile)
    args = cli.parser().parse_args(["plan", "m.onnx", "--tile", "8", "--no-fuse", "--alignment", "4"])
    assert cli._model_options(args) == WithTile(tile=8, fuse=False, alignment=4)
    assert cli._model_options(cli.parser().parse_args(["plan", "m.onnx"])) == WithTile()
    with pytest.raises(SystemExit):
        cli.parser().parse_args(["plan", "--help"])
    out = capsys.readouterr().out
    assert "--tile N" in out and "tile the Convs by N rows" in out and "--no-fuse" in out
    assert cli.main(["explain", str(tmp_path / "p.json"), "--tile", "8"]) == 2
    assert "--tile does not apply to a plan file" in capsys.readouterr().err


def test_a_new_option_reaches_the_json_form_and_the_plan_schema():
    opts = WithTile(tile=4, fuse=False, bitwidths=(("t", 4),))
    doc = opts.to_doc()
    assert doc["tile"] == 4 and doc["fuse"] is False
    assert WithTile.from_doc(json.loads(json.dumps(doc))) == opts
    assert WithTile.from_doc({}) == WithTile()
    lines = option_schemas.differences(*model_option_schemas(), cls=WithTile)  # the static schemas miss it: loudly
    assert sum("tile" in line for line in lines) == 4 and sum("fuse" in line for line in lines) == 4
    m, p = option_schemas.with_options(*model_option_schemas(), cls=WithTile)
    assert option_schemas.differences(m, p, cls=WithTile) == []
    assert option_schemas.differences(m, p) != []  # and the real options no longer match those schemas
    plan_options = {k: v for k, v in doc.items() if k not in option_schemas.PLAN_TOP_LEVEL}
    jsonschema.validate(plan_options, p["properties"]["options"])
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**plan_options, "tile": 0}, p["properties"]["options"])


def test_a_new_option_reaches_the_manifest(monkeypatch, tmp_path: Path):
    m, _ = option_schemas.with_options(*model_option_schemas(), cls=WithTile)
    real = yamlio._validator
    monkeypatch.setattr(yamlio, "_validator",
                        lambda name: schema.validator_class()(m) if name == "manifest" else real(name))
    monkeypatch.setattr(manifest, "ModelOptions", WithTile)
    (tmp_path / "m.onnx").write_bytes(b"")

    def load(models: str, defaults: str = "{}") -> manifest.Manifest:
        path = tmp_path / "arena.yaml"
        path.write_text(f"defaults: {defaults}\nmodels:\n{models}\nboards: [mps2_an500]\n", encoding="utf-8")
        return manifest.load(str(path))

    got = load("  - {name: a, path: m.onnx, tile: 8}\n  - {name: b, path: m.onnx}", defaults="{fuse: false}")
    a, b = got.targets[0].models
    assert a.options == WithTile(tile=8, fuse=False) and b.options == WithTile(fuse=False)
    assert json.loads(a.key())["options"]["tile"] == 8
    with pytest.raises(ArenaError) as e:
        load("  - {name: a, path: m.onnx, tile: 6}")
    assert "tile 6 is not a power of two" in e.value.msg
    with pytest.raises(ArenaError) as e:
        load("  - {name: a, path: m.onnx, fuse: 3}")
    assert e.value.hint == "write true or false (fuse Relu)"


def test_an_unknown_flag_kind_is_refused_where_it_is_defined():
    from arena_tool.core.problem import Option

    with pytest.raises(ValueError, match="--tile: cli 'int'"):
        Option(flag="--tile", help="rows", cli="int")
