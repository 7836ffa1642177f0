"""tflm_lib: what one TFLM library is made of, as build-graph nodes (the library itself is built
once per session: test_tflm_firmware's tflm_libraries)."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

from arena_tool.builder import execute, tflm_lib
from conftest import require_shared
from shared_paths import SHARED

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


def test_the_library_is_graph_nodes_objects_then_the_archive() -> None:
    tree = str(require_shared(SHARED / "third_party" / "tflite-micro"))
    spec = tflm_lib.LibrarySpec(tree, "cmsis_nn", ("CONV_2D", "SOFTMAX"), ("-mcpu=cortex-m7", "-mthumb"))
    graph = tflm_lib.graph(spec, "lib")
    *objects, archive = graph.nodes
    assert archive.kind == "archive" and archive.targets == ("lib/libtflm.a",)
    assert archive.sources == tuple(n.targets[0] for n in objects) and len(objects) > 50
    assert all(n.kind == "object" and n.targets[0].startswith("lib/obj/") for n in objects)
    assert any("conv.o" in n.targets[0] for n in objects) and not any("/add.o" in n.targets[0] for n in objects)
    env = {n.targets[0].removeprefix("lib/obj/"): graph.env(n.env) for n in objects}
    cxx = env["tensorflow/lite/micro/kernels/cmsis_nn/conv.o"]
    assert cxx.ccflags[:2] == ("-mcpu=cortex-m7", "-mthumb") and "-DCMSIS_NN" in cxx.ccflags
    assert cxx.prefix == "arm-none-eabi-" and os.path.abspath(tree) in cxx.cpppath
    assert "-DCMSIS_NN" in env["tensorflow/lite/micro/micro_profiler.o"].ccflags  # it tests CMSIS_NN
    # a file that never tests it is compiled as the reference library compiles it: one cached object
    ref = tflm_lib.graph(dataclasses.replace(spec, kernels="reference"), "lib")
    core = "tensorflow/lite/micro/micro_interpreter"
    a, b = (next(n for n in g.nodes if n.targets[0] == f"lib/obj/{core}.o") for g in (graph, ref))
    assert "-DCMSIS_NN" not in graph.env(a.env).ccflags
    assert execute.compile_command(graph.env(a.env), a.sources[0], a.targets[0], ".") == \
        execute.compile_command(ref.env(b.env), b.sources[0], b.targets[0], ".")


def test_ops_of_is_the_sorted_union_of_the_measurements(tmp_path: Path) -> None:
    a, b, c = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "c.json"
    a.write_text(json.dumps({"ops": ["SOFTMAX", "CONV_2D"]}))
    b.write_text(json.dumps({"ops": ["CONV_2D", "ADD"]}))
    c.write_text(json.dumps({}))
    assert tflm_lib.ops_of([str(a), str(b), str(c)]) == ("ADD", "CONV_2D", "SOFTMAX")
