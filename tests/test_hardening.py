"""Audit issue 14: hostile or broken input and a failing machine give one clear error, never a hang,
a traceback or exit status 3.

One section per finding: YAML bombs, numbers and names, external data, environment
failures, model paths as written, case-colliding model names.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import models
from arena_tool.core import files, schema
from arena_tool.model import onnx_graph
from arena_tool.target import boards, manifest, yamlio
from arena_tool.cli import main
from arena_tool.core.errors import EXIT_USAGE, ArenaError

ROOT = Path(__file__).resolve().parent.parent

BOARD = """\
name: {name}
description: test board
source: made up for a test
cpu: {{core: cortex-m4, fpu: fpv4-sp-d16, float_abi: hard, irqs: 10}}
flash: {{origin: 0x08000000, length: 64K}}
ram:
  - {{name: TCM, origin: 0x10000000, length: 8K, zero_wait: true, cacheable: false, dma: false, executable: true}}
  - {{name: SRAM, origin: 0x20000000, length: 32K, zero_wait: true, cacheable: false, dma: true, executable: true}}
default_region: SRAM
data_region: SRAM
qemu: mps2-an386
"""

MANIFEST = """\
models:
  - {name: kws, path: m.onnx}
boards:
  - mps2_an500
"""


def manifest_error(tmp: Path, text: str) -> ArenaError:
    """The ArenaError manifest.load raises for ``text`` (model file m.onnx exists, empty)."""
    (tmp / "m.onnx").write_bytes(b"")
    path = tmp / "arena.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ArenaError) as info:
        manifest.load(str(path))
    return info.value


def board_error(tmp: Path, text: str, name: str = "t") -> ArenaError:
    folder = tmp / "boards"
    folder.mkdir(exist_ok=True)
    (folder / f"{name}.yaml").write_text(text, encoding="utf-8")
    with pytest.raises(ArenaError) as info:
        boards.load_board(name, [str(folder)])
    return info.value


def one_line(err: ArenaError) -> str:
    text = err.render()
    assert "\n" not in text and err.exit_code == EXIT_USAGE, text
    return text


# ---------------------------------------------------------------- 1. YAML bombs


def laughs(levels: int = 9, width: int = 9) -> str:
    """'Billion laughs': ``width ** levels`` values from a dozen lines."""
    lines = ["a0: &a0 [" + ", ".join(["lol"] * width) + "]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def test_alias_bomb_in_a_manifest_is_one_error_in_under_a_second(tmp_path: Path) -> None:
    start = time.process_time()  # CPU seconds, not the machine's load
    err = manifest_error(tmp_path, laughs() + MANIFEST)
    assert time.process_time() - start < 1.0
    assert err.file and err.file.endswith("arena.yaml") and err.line == 6
    assert "aliases expand this value to more than 100,000 values" in one_line(err)


def test_alias_bomb_in_a_board_file_is_one_error(tmp_path: Path) -> None:
    start = time.process_time()  # CPU seconds, not the machine's load
    err = board_error(tmp_path, laughs() + BOARD.format(name="t") + "note: *a8\n")
    assert time.process_time() - start < 1.0
    assert err.file and err.file.endswith("t.yaml") and err.line is not None
    assert "more than 100,000 values" in one_line(err)


def test_merge_key_bomb_is_one_error(tmp_path: Path) -> None:
    """``<<`` copies whole mappings: PyYAML's flatten_mapping would build 9**9 pairs."""
    lines = ["m0: &m0 {" + ", ".join(f"k{j}: 1" for j in range(9)) + "}"]
    lines += [f"m{i}: &m{i} {{<<: [" + ", ".join([f"*m{i - 1}"] * 9) + "]}" for i in range(1, 9)]
    start = time.process_time()  # CPU seconds, not the machine's load
    err = manifest_error(tmp_path, "\n".join(lines) + "\n" + MANIFEST)
    assert time.process_time() - start < 1.0
    assert "more than 100,000 values" in one_line(err)


@pytest.mark.parametrize("text", [
    "models: " + "[" * 10_000 + "]" * 10_000 + "\n",
    "models: " + "{a: " * 10_000 + "1" + "}" * 10_000 + "\n",
], ids=["lists", "mappings"])
def test_deep_nesting_is_one_error_not_a_recursion_error(tmp_path: Path, text: str) -> None:
    err = manifest_error(tmp_path, text)
    assert err.line == 1 and "nests more than 100 levels deep" in one_line(err)


def test_nesting_through_aliases_is_bounded(tmp_path: Path) -> None:
    lines = ["n0: &n0 " + "[" * 90 + "]" * 90]
    lines += [f"n{i}: &n{i} " + "[" * 90 + f"*n{i - 1}" + "]" * 90 for i in range(1, 40)]
    err = manifest_error(tmp_path, "\n".join(lines) + "\n" + MANIFEST)
    assert "levels deep (through aliases)" in one_line(err)


def test_recursive_alias_is_one_error(tmp_path: Path) -> None:
    err = manifest_error(tmp_path, "x: &x [1, *x]\n" + MANIFEST)
    assert err.line == 1 and "recursive alias" in one_line(err)


def test_ordinary_aliases_and_merges_still_load(tmp_path: Path) -> None:
    (tmp_path / "m.onnx").write_bytes(b"")
    path = tmp_path / "arena.yaml"
    path.write_text("defaults: &d {planner: greedy_size, alignment: 8}\n"
                    "models:\n  - {name: a, path: m.onnx, <<: *d}\n  - {name: b, path: m.onnx, <<: *d, alignment: 4}\n"
                    "boards: [mps2_an500]\n")
    a, b = manifest.load(str(path)).models
    assert (a.planner, a.options.alignment, b.options.alignment) == ("greedy_size", 8, 4)


# ---------------------------------------------------------------- 2. numbers, names, cores


@pytest.mark.parametrize("value", [".nan", ".NaN", ".inf", "-.inf", "+.Inf"])
@pytest.mark.parametrize("key", ["time_limit", "warn_above"])
def test_numbers_must_be_finite(tmp_path: Path, key: str, value: str) -> None:
    text = MANIFEST.replace("path: m.onnx}", f"path: m.onnx, {key}: {value}}}") if key == "time_limit" \
        else f"{key}: {value}\n" + MANIFEST
    err = manifest_error(tmp_path, text)
    assert err.line is not None and err.field and err.field.endswith(key)
    assert "numbers must be finite" in one_line(err)


def test_non_finite_numbers_in_a_board_file(tmp_path: Path) -> None:
    err = board_error(tmp_path, BOARD.format(name="t").replace("irqs: 10", "irqs: .inf"))
    assert err.field == "cpu.irqs" and "numbers must be finite" in one_line(err)


def test_k_must_be_in_range(tmp_path: Path) -> None:
    err = manifest_error(tmp_path, MANIFEST.replace("path: m.onnx}", f"path: m.onnx, k: {2 ** 70}}}"))
    assert err.field == "models[0].k" and "must be <= 1048576" in one_line(err)
    (tmp_path / "ok.yaml").write_text(MANIFEST.replace("path: m.onnx}", f"path: m.onnx, k: {2 ** 20}}}"))
    assert manifest.load(str(tmp_path / "ok.yaml")).models[0].k == 2 ** 20


@pytest.mark.parametrize("option", ["alignment: 16.0", "k: 4.0", "input_shapes: {x: [1.0, 3]}"])
def test_float_where_an_integer_is_expected(tmp_path: Path, option: str) -> None:
    err = manifest_error(tmp_path, MANIFEST.replace("path: m.onnx}", f"path: m.onnx, {option}}}"))
    assert "wrong type: expected integer, got" in one_line(err)


def test_plan_files_are_as_strict(tmp_path: Path) -> None:
    bad = tmp_path / "p.json"
    bad.write_text('{"a": NaN}')
    with pytest.raises(ArenaError, match="NaN is not a JSON number"):
        files.read_json(str(bad), "plan file", "re-plan")
    assert not schema.validator_class()({"type": "integer"}).is_valid(16.0)


@pytest.mark.parametrize("where, origin", [("ram", "0x20000001"), ("ram", "0x20000002"), ("flash", "0x08000003")])
def test_region_origins_must_be_aligned(tmp_path: Path, where: str, origin: str) -> None:
    old = "origin: 0x20000000" if where == "ram" else "origin: 0x08000000"
    err = board_error(tmp_path, BOARD.format(name="t").replace(old, f"origin: {origin}"))
    text = one_line(err)
    assert f"origin {origin} is not 4-byte aligned" in text
    assert ("region 'SRAM'" in text and err.field == "ram[1].origin") if where == "ram" else \
        ("flash origin" in text and err.field == "flash.origin")


def _newline_cases() -> Iterator[tuple[str, str, str]]:
    """(case id, file kind, text) with one name ending in a newline, for every named field."""
    board = BOARD.format(name="t")
    yield "board.name", "board", board.replace("name: t\n", 'name: "t\\n"\n', 1)
    yield "board.qemu", "board", board.replace("qemu: mps2-an386", 'qemu: "mps2-an386\\n"')
    yield "board.ram.name", "board", board.replace("name: SRAM,", 'name: "SRAM\\n",')
    yield "board.flash.name", "board", board.replace("{origin: 0x08000000", '{name: "FLASH\\n", origin: 0x08000000')
    yield "board.default_region", "board", board.replace("default_region: SRAM", 'default_region: "SRAM\\n"')
    yield "board.data_region", "board", board.replace("data_region: SRAM", 'data_region: "SRAM\\n"')
    yield "board.origin", "board", board.replace("origin: 0x20000000", 'origin: "0x20000000\\n"')
    yield "manifest.model", "manifest", MANIFEST.replace("name: kws", 'name: "kws\\n"')
    yield "manifest.board", "manifest", MANIFEST.replace("- mps2_an500", '- "mps2_an500\\n"')
    yield "manifest.board_mapping", "manifest", MANIFEST.replace("- mps2_an500", '- {name: "mps2_an500\\n"}')
    yield "manifest.region", "manifest", 'region: "SSRAM23\\n"\n' + MANIFEST
    yield "manifest.override", "manifest", MANIFEST.replace("- mps2_an500", '- {name: mps2_an500, models: {"kws\\n": {k: 2}}}')


@pytest.mark.parametrize("case, kind, text", list(_newline_cases()), ids=[c[0] for c in _newline_cases()])
def test_names_ending_in_a_newline_are_rejected(tmp_path: Path, case: str, kind: str, text: str) -> None:
    err = (board_error if kind == "board" else manifest_error)(tmp_path, text)
    rendered = one_line(err)
    assert "\\n" in rendered, rendered  # the offending name, shown escaped


def test_every_schema_pattern_anchors_at_the_real_end() -> None:
    """JSON Schema patterns are searched with Python's re, where '$' also matches before a final
    newline: every pattern ending in '$' must say '(?!\\n)$' (or allow trailing whitespace on purpose)."""
    def patterns(node: Any) -> Iterator[str]:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "pattern" and isinstance(value, str):
                    yield value
                if key == "patternProperties" and isinstance(value, dict):
                    yield from value
                yield from patterns(value)
        elif isinstance(node, list):
            for item in node:
                yield from patterns(item)

    found = []
    for path in sorted((ROOT / "schemas").glob("*.json")):
        for p in patterns(json.loads(path.read_text())):
            found.append(p)
            if p.endswith("$"):
                assert p.endswith("(?!\\n)$") or p.endswith("\\s*$"), f"{path.name}: {p}"
                if p.endswith("(?!\\n)$"):
                    assert re.search(p, "x\n") is None
    assert len(found) >= 8


@pytest.mark.parametrize("core, fpu, abi", [
    ("cortex-m0", "fpv4-sp-d16", "hard"), ("cortex-m0plus", "fpv5-d16", "softfp"), ("cortex-m3", "auto", "soft"),
    ("cortex-m23", "fpv5-sp-d16", "hard"), ("cortex-m4", "fpv5-d16", "hard"), ("cortex-m7", "fpv4-sp-d16", "hard"),
    ("cortex-m33", "fpv5-d16", "hard"),
])
def test_impossible_core_and_fpu_pairs(tmp_path: Path, core: str, fpu: str, abi: str) -> None:
    text = BOARD.format(name="t").replace("core: cortex-m4, fpu: fpv4-sp-d16, float_abi: hard",
                                          f"core: {core}, fpu: {fpu}, float_abi: {abi}")
    err = board_error(tmp_path, text)
    assert err.field == "cpu.fpu" and f"core {core}" in one_line(err) and err.hint


@pytest.mark.parametrize("core, fpu, abi", [
    ("cortex-m0", "none", "soft"), ("cortex-m4", "fpv4-sp-d16", "hard"), ("cortex-m4", "none", "soft"),
    ("cortex-m7", "fpv5-sp-d16", "hard"), ("cortex-m7", "fpv5-d16", "softfp"), ("cortex-m33", "fpv5-sp-d16", "hard"),
    ("cortex-m33", "none", "soft"), ("cortex-m55", "auto", "hard"), ("cortex-m85", "fpv5-d16", "hard"),
])
def test_possible_core_and_fpu_pairs(tmp_path: Path, core: str, fpu: str, abi: str) -> None:
    folder = tmp_path / "boards"
    folder.mkdir()
    (folder / "t.yaml").write_text(BOARD.format(name="t").replace(
        "core: cortex-m4, fpu: fpv4-sp-d16, float_abi: hard", f"core: {core}, fpu: {fpu}, float_abi: {abi}"))
    assert boards.load_board("t", [str(folder)]).cpu.fpu == fpu


def test_shipped_boards_pass_the_new_checks() -> None:
    for name in boards.list_boards():
        assert boards.load_board(name).name == name


# ---------------------------------------------------------------- 3. external data


def external_model(folder: Path, location: str) -> str:
    """A MatMul model whose weight 'w' lives in external data at ``location``."""
    folder.mkdir(parents=True, exist_ok=True)
    w = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4, 4], data_location=TensorProto.EXTERNAL)
    w.external_data.add(key="location", value=location)
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    path = folder / "net.onnx"
    path.write_bytes(model.SerializeToString())
    return str(path)


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    path = tmp_path / "secret.bin"
    path.write_bytes(np.arange(16, dtype=np.float32).tobytes())
    return path


@pytest.mark.parametrize("kind", ["dotdot", "absolute", "symlink"])
def test_external_data_outside_the_model_folder_is_refused(tmp_path: Path, secret: Path, kind: str) -> None:
    folder = tmp_path / "model"
    folder.mkdir()
    if kind == "symlink":
        (folder / "w.bin").symlink_to(secret)
    location = {"dotdot": "../secret.bin", "absolute": str(secret), "symlink": "w.bin"}[kind]
    path = external_model(folder, location)
    with pytest.raises(ArenaError) as info:
        onnx_graph.load(path)
    text = one_line(info.value)
    assert info.value.file == path and "tensor 'w'" in text and repr(location) in text
    assert "outside the model's folder" in text
    assert onnx_graph.load(path, allow_external_data_outside=True).weights[0].name == "w"


def test_external_data_inside_the_model_folder_loads(tmp_path: Path) -> None:
    folder = tmp_path / "model"
    (folder / "data").mkdir(parents=True)
    (folder / "data" / "w.bin").write_bytes(np.zeros(16, np.float32).tobytes())
    path = external_model(folder, "data/w.bin")
    assert onnx_graph.load(path).weights[0].shape == (4, 4)


def test_external_data_is_checked_by_the_cli(tmp_path: Path, secret: Path, capsys: pytest.CaptureFixture) -> None:
    path = external_model(tmp_path / "model", "../secret.bin")
    code = main(["plan", path, "--planner", "greedy_size"])
    err = capsys.readouterr().err
    assert code == 2 and "outside the model's folder" in err and "Traceback" not in err


# ---------------------------------------------------------------- 4. environment failures


class _FullDisk:
    """A file object whose writes fail as on a full disk, after writing a little."""

    def __init__(self, real: Any) -> None:
        self.real = real

    def write(self, data: Any) -> int:
        self.real.write(data[:3])
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def __enter__(self) -> "_FullDisk":
        return self

    def __exit__(self, *exc: object) -> None:
        self.real.close()


@pytest.fixture
def full_disk(monkeypatch: pytest.MonkeyPatch) -> None:
    real = os.fdopen
    monkeypatch.setattr(files.os, "fdopen", lambda *a, **kw: _FullDisk(real(*a, **kw)))


def test_write_atomic_on_a_full_disk_leaves_the_old_file(tmp_path: Path, full_disk: None) -> None:
    target = tmp_path / "plan.json"
    target.write_text("old")
    with pytest.raises(ArenaError) as info:
        files.write_atomic(target, "new contents")
    err = info.value
    assert err.file == str(target) and "No space left on device" in one_line(err) and "disk is full" in err.hint
    assert isinstance(err, OSError)  # callers that treat a cache write as optional keep working
    assert target.read_text() == "old" and sorted(os.listdir(tmp_path)) == ["plan.json"]


def test_write_atomic_when_os_replace_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(src: str, dst: str) -> None:
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), dst)

    monkeypatch.setattr(files.os, "replace", refuse)
    with pytest.raises(ArenaError) as info:
        files.write_atomic(tmp_path / "x.c", b"int x;")
    assert "Permission denied" in one_line(info.value) and os.listdir(tmp_path) == []


def test_write_atomic_below_a_file(tmp_path: Path) -> None:
    (tmp_path / "blocker").write_text("")
    with pytest.raises(ArenaError) as info:
        files.write_atomic(tmp_path / "blocker" / "x.ld", "MEMORY {}")
    assert info.value.file == str(tmp_path / "blocker" / "x.ld") and "cannot write" in one_line(info.value)


def test_cli_plan_on_a_full_disk(tmp_path: Path, full_disk: None, capsys: pytest.CaptureFixture) -> None:
    model = models.save(models.chain(), tmp_path / "chain.onnx")
    out = tmp_path / "chain.plan.json"
    code = main(["plan", model, "--planner", "greedy_size", "-o", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and "arena bug" not in err
    assert err.strip().count("\n") == 0 and f"{out}: error: cannot write: No space left on device" in err
    assert not out.exists() and not [p for p in os.listdir(tmp_path) if p.startswith(".tmp-")]


def test_cli_turns_a_stray_oserror_into_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture) -> None:
    import arena_tool.cli as cli

    def denied(args: Any) -> int:
        raise PermissionError(errno.EACCES, "Permission denied", "build/x.json")

    monkeypatch.setattr(cli, "cmd_check", denied)
    assert main(["check", "m.onnx", "p.json"]) == 2
    err = capsys.readouterr().err
    assert "build/x.json: error: cannot access the file: Permission denied" in err and "Traceback" not in err


@pytest.mark.parametrize("damage", ["truncate", "nan"])
def test_cli_check_with_a_damaged_plan_file(tmp_path: Path, capsys: pytest.CaptureFixture, damage: str) -> None:
    model = models.save(models.chain(), tmp_path / "chain.onnx")
    plan = tmp_path / "chain.plan.json"
    assert main(["plan", model, "--planner", "greedy_size", "-o", str(plan)]) == 0
    text = plan.read_text()
    plan.write_text(text[: len(text) // 2] if damage == "truncate" else text.replace('"arena_size": ', '"arena_size": NaN, "x": ', 1))
    capsys.readouterr()
    code = main(["check", model, str(plan)])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and err.strip().count("\n") == 0
    assert f"{plan}" in err and "not JSON" in err and "damaged?" in err


def test_scons_gate_with_a_truncated_plan_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """The gate step (what the SCons tool's ArenaGate runs) on a plan cut short: one located line, exit 2."""
    from arena_tool import build_steps

    (tmp_path / "m.onnx").write_bytes(b"")
    (tmp_path / "arena.yaml").write_text(MANIFEST)
    target = manifest.target_doc(manifest.load(str(tmp_path / "arena.yaml")).targets[0])
    plan = tmp_path / "kws.plan.json"
    plan.write_text('{"format_version": 1, "model": "m.on')
    build = build_steps.Build({target["name"]: target})
    gate = str(tmp_path / "arena_gate.json")
    build.gates[gate] = build_steps.Gate(target["name"], (), str(tmp_path / "arena_report.json"))
    with pytest.raises(SystemExit) as info:
        build_steps.guarded(lambda: build_steps.gate(build, [gate], [str(plan)]))
    err = capsys.readouterr().err
    assert info.value.code == 2 and "Traceback" not in err and "arena bug" not in err
    assert f"{plan}:1:" in err and "not JSON" in err and "delete it and run scons again" in err


def test_scons_action_turns_an_oserror_into_exit_2(capsys: pytest.CaptureFixture) -> None:
    from arena_tool import build_steps

    def action() -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "build/x.c")

    with pytest.raises(SystemExit) as info:
        build_steps.guarded(action)
    err = capsys.readouterr().err
    assert info.value.code == 2 and "build/x.c: error: cannot access the file: No space left on device" in err
    assert "Traceback" not in err


# ---------------------------------------------------------------- 5. model paths as written


def test_scons_path_escapes_dollars() -> None:
    from SCons.Environment import Environment

    from arena_tool.builder.build_graph import scons_path

    assert scons_path("models/a$b.onnx") == "models/a$$b.onnx"
    env = Environment(tools=[])
    assert env.File(scons_path("models/a$b.onnx")).path == os.path.join("models", "a$b.onnx")
    assert env.File(scons_path("models/net")).path == os.path.join("models", "net")


def test_scons_uses_model_paths_exactly_as_written(tmp_path: Path) -> None:
    """A model at models/k$ws (no .onnx, a '$'): planned and tabled from that very file."""
    proj = tmp_path / "p"
    shutil.copytree(ROOT / "example_firmware" / "models", proj / "models",
                    ignore=lambda d, names: [n for n in names if n != "kws.onnx"])
    os.rename(proj / "models" / "kws.onnx", proj / "models" / "k$ws")
    (proj / "arena.yaml").write_text("models:\n  - {name: kws, path: models/k$ws, planner: greedy_size, "
                                     "input_shapes: {input: [1, 1, 49, 10]}}\nboards: [mps2_an500]\n")
    (proj / "SConstruct").write_text(
        "import arena_tool\n"
        "env = Environment(tools=['arena'], toolpath=[arena_tool.site_tools_dir()])\n"
        "env.ArenaFirmware('arena.yaml', link=False)\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.run([sys.executable, "-m", "SCons", "-Q", "arena"], cwd=proj, env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    plan = json.loads(next((proj / "build" / "plans").glob("kws-*.plan.json")).read_text())
    assert plan["model"] == "models/k$ws"
    assert list((proj / "build" / "tables").glob("kws-*/model_kws.c"))
    assert not (proj / "models" / "k$ws.onnx").exists() and not (proj / "models" / "k.onnx").exists()


# ---------------------------------------------------------------- 6. C identifiers


def test_model_names_differing_only_in_case_are_refused(tmp_path: Path) -> None:
    text = MANIFEST.replace("  - {name: kws, path: m.onnx}\n",
                            "  - {name: kws, path: m.onnx}\n  - {name: net, path: m.onnx}\n  - {name: KWS, path: m.onnx}\n")
    err = manifest_error(tmp_path, text)
    text = one_line(err)
    assert err.field == "models[2].name" and err.line == 4
    assert "'kws' (models[0]) and 'KWS' differ only in case" in text and err.hint


def test_the_external_data_opt_in_reaches_planning_and_verify(tmp_path: Path, secret: Path,
                                                              capsys: pytest.CaptureFixture) -> None:
    """The model option (CLI flag / manifest key) is what lets planning, the plan's re-check and
    verify read a symlinked data file from outside the model's folder."""
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "w.bin").symlink_to(secret)
    path = external_model(folder, "w.bin")
    plan = tmp_path / "p.json"
    assert main(["plan", path, "--planner", "greedy_size", "-o", str(plan)]) == 2
    assert main(["plan", path, "--planner", "greedy_size", "--allow-external-data-outside", "-o", str(plan)]) == 0
    assert main(["check", path, str(plan)]) == 0
    capsys.readouterr()
