"""tflm_lib: what one TFLM library is made of and when an object is compiled again (the library
itself is built once per session: test_tflm_firmware's tflm_libraries)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from arena_tool.builder import tflm_lib

SPEC = tflm_lib.LibrarySpec("/tflm", "cmsis_nn", ("CONV_2D", "SOFTMAX"), ("-mcpu=cortex-m7", "-mthumb"))


def test_a_spec_round_trips_through_its_json() -> None:
    doc = json.loads(json.dumps(SPEC.to_json()))
    assert tflm_lib.LibrarySpec.from_json(doc) == SPEC
    host = tflm_lib.LibrarySpec("/tflm", "reference", (), (), prefix="")
    assert SPEC.target and not host.target and tflm_lib.LibrarySpec.from_json(host.to_json()) == host


def test_compile_flags_are_the_cores_then_tflms_then_the_tree() -> None:
    cxx = SPEC.compile_flags("c++")
    assert cxx[:2] == ["-mcpu=cortex-m7", "-mthumb"] and "-DCMSIS_NN" in cxx
    assert any(f.startswith("-I/tflm") for f in cxx) and cxx != SPEC.compile_flags("c")


def _object(tmp_path: Path, command: list[str], deps: list[Path]) -> tuple[str, str]:
    obj, cmd = tmp_path / "k.o", tmp_path / "k.o.cmd"
    obj.write_bytes(b"")
    cmd.write_text(json.dumps(command))
    (tmp_path / "k.d").write_text("k.o: " + " \\\n ".join(map(str, deps)) + "\n")
    return str(obj), str(cmd)


def test_an_object_is_stale_on_another_command_a_newer_or_vanished_input(tmp_path: Path) -> None:
    src = tmp_path / "k.cc"
    src.write_text("int k;\n")
    os.utime(src, ns=(1, 1))
    obj, cmd = _object(tmp_path, ["g++", "-c", "k.cc"], [src])
    assert not tflm_lib._stale(obj, cmd, ["g++", "-c", "k.cc"])
    assert tflm_lib._stale(obj, cmd, ["g++", "-O2", "-c", "k.cc"])
    os.utime(src, ns=(2 * 10**18, 2 * 10**18))  # edited after the object
    assert tflm_lib._stale(obj, cmd, ["g++", "-c", "k.cc"])
    os.remove(src)
    assert tflm_lib._stale(obj, cmd, ["g++", "-c", "k.cc"])
    os.remove(obj)
    assert tflm_lib._stale(obj, cmd, ["g++", "-c", "k.cc"])


def test_ops_of_is_the_sorted_union_of_the_measurements(tmp_path: Path) -> None:
    a, b, c = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "c.json"
    a.write_text(json.dumps({"ops": ["SOFTMAX", "CONV_2D"]}))
    b.write_text(json.dumps({"ops": ["CONV_2D", "ADD"]}))
    c.write_text(json.dumps({}))
    assert tflm_lib.ops_of([str(a), str(b), str(c)]) == ("ADD", "CONV_2D", "SOFTMAX")
