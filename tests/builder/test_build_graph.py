"""arena_tool.builder.build_graph: the firmware build as data, checked without SCons; and, once, that the
SCons tool wires exactly that graph (scons -n on a SConstruct that dumps the nodes it made).

Graphs: the example manifest (eleven boards, four models, linked and not), and a temporary project
with per-board model options (two plans of one model), a split-arena board, a ``linker:
fragment`` board with its own vendor script, and two boards sharing core flags.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import arena_tool
from arena_tool.builder import build_graph as bg
from arena_tool.target import manifest
from arena_tool.builder import noop_cache
from arena_tool.builder.build_graph import BuildGraph, Value
from arena_tool.core.errors import ArenaError
from conftest import ROOT
from builders import H743_MEMORY, SPLIT_BOARD, vendor_script

EXAMPLE = ROOT / "example_firmware" / "arena.yaml"
APP = Path(arena_tool.runtime_dir()) / "example"
GEN = "digest"  # a fixed generator digest: graphs independent of arena's own sources


def example_doc(tmp_path: Path) -> dict[str, Any]:
    return noop_cache.cached(str(EXAMPLE.relative_to(ROOT)), (), str(tmp_path / "cache.json"))


def toolchain(root: Path, link: bool = True) -> bg.Toolchain:
    return bg.Toolchain(link=link, sources=(str(APP / "startup.c"), str(APP / "main.c")), cpppath=(str(APP),),
                        root=str(root))


@pytest.fixture
def in_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # the example manifest's paths are relative to the checkout


def closure(g: BuildGraph, target: str) -> set[str]:
    """Every file ``target`` is made from, directly or through other nodes (sources, depends and
    what the manifest names for a node that has it as a source, as the tool's scanner finds)."""
    made = {t: n for n in g.nodes for t in n.targets}
    named = {b.name: b.named for b in g.boards}
    seen: set[str] = set()
    todo = [target]
    while todo:
        n = made.get(todo.pop())
        for s in (*n.sources, *n.depends, *(named[n.board] if n.manifest else ())) if n else ():
            if isinstance(s, str) and s not in seen:
                seen.add(s)
                todo.append(s)
    return seen


# ---------------------------------------------------------------- the example


def test_example_graph(tmp_path: Path, in_root: None) -> None:
    doc = example_doc(tmp_path)
    g = bg.graph_of(doc, "build", toolchain(ROOT), generator=GEN)
    names = [t["name"] for t in doc["targets"]]
    assert [b.name for b in g.boards] == names and g.generator == Value("arena_tool sources digest")
    assert set(bg.KINDS) >= {n.kind for n in g.nodes} == {"plan", "tables", "gate", "object", "elf", "report",
                                                             "status"}
    # wiring order: whatever a node is made from comes before it (requires may name a later
    # board's gate: order only); no file has two nodes
    index = {t: i for i, n in enumerate(g.nodes) for t in n.targets}
    assert len(index) == len(g.targets())
    for i, n in enumerate(g.nodes):
        assert all(index.get(s, -1) < i for s in (*n.sources, *n.depends) if isinstance(s, str))
    specs = {s["key"]: s for t in doc["targets"] for s in t["models"]}
    # one plan and one set of tables per distinct (model, options): the example's four, shared by all boards
    plans = g.of_kind("plan")
    assert len(plans) == len(specs) == 4
    for p in plans:
        spec = next(s for s in specs.values() if p.sources[1] == Value(s["key"]))
        name = f"{spec['name']}-{bg.digest(spec['key'])}"
        assert p.targets == (f"build/plans/{name}.plan.json",) and p.sources[0] == spec["path"]
        assert p.depends == (g.generator,)
        tables = g.node(f"build/tables/{name}/model_{spec['name']}.c")
        assert tables.kind == "tables" and tables.targets[1].endswith(f"model_{spec['name']}.h")
        assert tables.sources == (p.targets[0], spec["path"])  # every table: its plan and its model
        assert tables.requires == tuple(f"build/{b}/arena_gate.json" for b in names)  # after every gate
        assert tables.gates == tables.requires  # and made when one of them passed
    gates = g.of_kind("gate")
    assert [n.board for n in gates] == names
    for t in doc["targets"]:
        b = g.board(t["name"])
        gate = g.node(b.gate)
        assert gate.targets == (b.gate, f"build/{b.name}/gen/arena_board.c", f"build/{b.name}/gen/arena_board.h",
                                f"build/{b.name}/{b.name}.ld")
        assert gate.sources == (*b.plans, Value(t["key"] + "|" + "|".join(s["key"] for s in t["models"])),
                                doc["file"]) and gate.manifest == doc["file"]
        # the manifest scanner's answer: the board file and the models, nothing of another board
        assert b.named == bg.manifest_names(t) == (t["board_file"], *(s["path"] for s in t["models"]))
        assert b.arena == gate.targets[1:3] and b.ld == gate.targets[3]
        # every ELF: its objects (in link order), its linker script, through the gate its board file
        elf = g.node(b.elf)
        assert elf.kind == "elf" and elf.board == b.name and elf.depends == (b.ld,) and elf.linkflags is None
        objs = [g.node(o) for o in elf.sources]
        assert all(o.kind == "object" and o.env == elf.env for o in objs)
        key = bg.flags_key(t["gcc_flags"])
        assert elf.env == key and objs[0].targets == (f"build/{b.name}/obj/arena_board.o",)
        assert objs[0].sources == (b.arena[0],) and objs[0].requires == () and objs[0].gates == (b.gate,)
        assert elf.gates == (b.gate,) and all(b.gate in o.gates for o in objs)
        common = [o.targets[0] for o in objs[1:]]
        assert common[:2] == [f"build/common/{key}/arena_runtime/example/startup.o",
                              f"build/common/{key}/arena_runtime/example/main.o"]
        assert f"build/common/{key}/arena_runtime/arena_runtime.o" in common
        assert common[-4:] == [f"build/common/{key}/tables/{os.path.basename(os.path.dirname(p))}.o"
                               for p in b.tables[::2]]
        assert all(o.requires == (bg.gates_alias(key),) for o in objs[1:])
        assert {t["board_file"], b.ld, *b.plans, *(s["path"] for s in t["models"])} <= closure(g, b.elf)
        assert elf.clean == (f"build/{b.name}/firmware.map", f"build/{b.name}/run_report.json")
        rep = g.node(b.report)
        assert rep.targets == (b.report, *b.views) and rep.sources == (b.gate, b.elf)
        assert rep.depends == (g.generator, *b.plans)
        status = g.node(f"build/.arena_status_{b.name}.json")  # the alias's exit status: after all of it
        assert g.alias(b.name).targets == (*b.top, *status.targets) and b.top == (b.report, *b.views)
        assert status.kind == "status" and status.sources == (b.report,) and status.requires == b.views
        assert b.elf in b.deleted and b.ld in b.deleted and b.arena[0] in b.deleted
        assert b.gate in g.alias(bg.gates_alias(key)).targets
    # boards with the same core flags share one environment and its objects
    h743, an500 = g.node(g.board("nucleo_h743").elf), g.node(g.board("mps2_an500").elf)
    assert h743.env == an500.env and h743.sources[1:] == an500.sources[1:]
    gates = (g.board("nucleo_h743").gate, g.board("mps2_an500").gate)
    assert all(set(gates) <= set(g.node(o).gates) for o in h743.sources[1:])  # made when one of them passes
    # the default alias ends in a status over every board's report; the arena alias over the gates
    assert g.node(g.alias("boards").targets[-1]).sources == tuple(b.report for b in g.boards)
    assert g.node(g.alias("arena").targets[-1]).sources == tuple(b.gate for b in g.boards)
    cores = [e for e in g.envs if "_validate_" not in e.key]  # and one per board's UART (mps2, nucleo boards)
    uarts = len([b for b in g.boards if b.validate])
    assert len(cores) == len({bg.flags_key(t["gcc_flags"]) for t in doc["targets"]}) == 7 == len(g.envs) - uarts
    # the report alias covers every board's report and its views
    report = g.alias("report").targets
    assert report == (*(b.report for b in g.boards), *(v for b in g.boards for v in b.views),
                      "build/.arena_status_report.json")
    assert g.alias("boards").targets == (*(p for b in g.boards for p in b.top), "build/.arena_status_boards.json")
    assert g.default == ("boards",)
    arena = set(g.alias("arena").targets) - {"build/.arena_status_arena.json"}
    assert {p for b in g.boards for p in (*b.plans, b.gate, *b.arena, b.ld, *b.tables)} == arena
    assert not arena & {b.elf for b in g.boards} and not arena & set(report)  # generation only
    run = g.alias("run")
    assert run.action == "run" and run.always
    emulated = ("mps2_an385", "mps2_an386", "mps2_an500", "mps2_an505", "mps3_an547")
    assert run.targets == tuple(f"build/{b}/firmware.elf" for b in emulated)
    assert run.depends == tuple(f"build/{b}/arena_report.json" for b in emulated)
    # the flags: the board's core flags, arena's, the project mapped to "."
    env = g.env(bg.flags_key(doc["targets"][0]["gcc_flags"]))
    assert env.ccflags[:4] == tuple(doc["targets"][0]["gcc_flags"]) and "-Werror=trigraphs" in env.ccflags
    assert env.ccflags[-3:] == ("$(", f"-ffile-prefix-map={ROOT}=.", "$)") and env.libs == ("m",)  # out of the signature
    assert env.cpppath == (str(APP), str(ROOT / "arena_tool" / "runtime"))
    assert "${TARGET.dir}/${TARGET.dir.name}.ld" in env.linkflags


def test_example_graph_without_linking(tmp_path: Path, in_root: None) -> None:
    g = bg.graph_of(example_doc(tmp_path), "build", toolchain(ROOT, link=False), boards="mps2_an500,nucleo_f746",
                generator=GEN)
    assert [b.name for b in g.boards] == ["mps2_an500", "nucleo_f746"]  # in the order given
    assert not g.of_kind("object") and not g.of_kind("elf") and g.envs == ()
    b = g.board("mps2_an500")
    assert b.elf == "" and g.node(b.report).sources == (b.gate,)
    assert b.top == (b.report, *b.views, *b.tables) and set(b.generated) >= {b.report, *b.views}
    assert g.alias("run") == bg.Alias("run", (), action="no_run", always=True)
    assert not [a for a in g.aliases if a.name.startswith("arena-gates-")]


def test_graph_is_deterministic(tmp_path: Path, in_root: None) -> None:
    doc = example_doc(tmp_path)
    g = bg.graph_of(doc, "build", toolchain(ROOT), generator=GEN)
    assert g == bg.graph_of(json.loads(json.dumps(doc)), "build", toolchain(ROOT), generator=GEN)
    assert g == bg.graph_of(manifest.load(str(EXAMPLE.relative_to(ROOT))), "build", toolchain(ROOT), generator=GEN)
    assert bg.graph_of(doc, "build/", toolchain(ROOT), generator=GEN) == g
    # the same bytes whatever the hash seed (no set or dict order leaks into the graph)
    code = ("import sys; from arena_tool.builder import build_graph as bg, noop_cache\n"
            f"doc = noop_cache.cached({str(EXAMPLE.relative_to(ROOT))!r}, (), sys.argv[1])\n"
            f"print(repr(bg.graph_of(doc, 'build', bg.Toolchain(link=True, root={str(ROOT)!r}), generator='x')))\n")
    out = {subprocess.run([sys.executable, "-c", code, str(tmp_path / f"c{seed}.json")], cwd=ROOT, check=True,
                          capture_output=True, text=True, env=dict(os.environ, PYTHONHASHSEED=seed)).stdout
           for seed in ("1", "2")}
    assert len(out) == 1
    # an unknown board is the manifest's usage error, as for board=
    with pytest.raises(ArenaError, match="board 'nucleo_f747' is not in the manifest"):
        bg.graph_of(doc, "build", toolchain(ROOT), boards="nucleo_f747", generator=GEN)


def test_tflm_boards_get_the_tflm_nodes(tmp_path: Path, in_root: None) -> None:
    """runtime: tflm (from the plain data: a .tflite model is not needed to wire it)."""
    doc = example_doc(tmp_path)
    t = dict(doc["targets"][-1], runtime="tflm")
    g = bg.graph_of(dict(doc, targets=[t]), "build", toolchain(ROOT), generator=GEN)
    b = g.board(t["name"])
    assert b.arena == (f"build/{b.name}/gen/tflm_arena.c", f"build/{b.name}/gen/tflm_arena.h")
    for spec in t["models"]:
        folder = f"build/tables/{spec['name']}-{bg.digest(spec['key'])}"
        alloc = g.node(f"{folder}/{spec['name']}.tflm.json")
        assert alloc.kind == "tflm" and alloc.targets[1] == f"{folder}/{spec['name']}.planned.tflite"
        assert alloc.sources == (f"build/plans/{spec['name']}-{bg.digest(spec['key'])}.plan.json", spec["path"])
        model = g.node(f"{folder}/model_{spec['name']}.c")
        assert model.kind == "tflm_tables" and model.sources == (alloc.targets[1], alloc.targets[0])
        assert alloc.targets[0] in g.node(b.gate).sources
    objs = [g.node(o).targets[0] for o in g.node(b.elf).sources]
    assert objs[0] == f"build/{b.name}/obj/tflm_arena.o" and not [o for o in objs if "/arena_runtime/arena_" in o]


def test_tflm_sources_build_one_library_per_core_and_kernels(tmp_path: Path, in_root: None) -> None:
    """tflm: {path}: one libtflm.a per core and kernel set, made from every board's tflm.json that
    links it; the package's tflm/main.cc (TFLM's C++ flags) in place of the example main.c; a C++ link."""
    doc = example_doc(tmp_path)
    tflm = {"path": str(tmp_path / "tflite-micro"), "kernels": "cmsis_nn", "library": "", "include": []}
    first, last = doc["targets"][0], doc["targets"][-1]
    ts = [dict(first, runtime="tflm", tflm=tflm), dict(first, name="twin", runtime="tflm", tflm=tflm),
          dict(last, runtime="tflm", tflm=tflm)]
    g = bg.graph_of(dict(doc, targets=ts), "build", toolchain(ROOT), generator=GEN)
    libs = g.of_kind("tflm_lib")
    assert len(libs) == 2  # two cores: nucleo_f746 and its twin share one
    key = bg.env_key(first["gcc_flags"]) + "_tflm_cmsis_nn"
    lib = g.node(f"build/common/{key}/libtflm.a")
    spec = json.loads(lib.sources[0].text)
    assert spec == {"root": tflm["path"], "kernels": "cmsis_nn", "cpu_flags": first["gcc_flags"],
                    "prefix": "arm-none-eabi-"}
    allocs = [s for s in lib.sources[1:]]
    assert len(allocs) == len(first["models"]) and all(a.endswith(".tflm.json") for a in allocs)
    for name in ("nucleo_f746", "twin"):
        elf = g.node(g.board(name).elf)
        assert elf.cxx and elf.sources[-1] == lib.targets[0]
        objs = [o for o in elf.sources if o.endswith(".o")]
        assert f"build/common/{key}/arena_runtime/tflm/main.o" in objs
        assert f"build/{name}/obj/arena_tflm.o" in objs and not [o for o in objs if o.endswith("example/main.o")]
        app = g.node(f"build/{name}/gen/arena_tflm.cc")
        assert app.kind == "tflm_app" and json.loads(app.sources[0].text)["models"] == [m["name"] for m in first["models"]]
    cxx = g.env(key)
    assert "-std=c++17" in cxx.ccflags and "-DCMSIS_NN" in cxx.ccflags and "-std=c99" not in cxx.ccflags
    assert f"{tflm['path']}/tensorflow/lite/micro/tools/make/downloads/flatbuffers/include" in cxx.cpppath
    assert not g.node(g.board(ts[0]["name"]).elf).sources[0].startswith(f"build/common/{key}")


# ---------------------------------------------------------------- several boards and models


MANIFEST = """\
board_dirs: [boards]
defaults: {planner: greedy_size, time_limit: 5}
models:
  - {name: kws, path: models/kws.onnx, input_shapes: {input: [1, 1, 49, 10]}}
  - {name: ae, path: models/autoencoder.onnx}
boards:
  - name: nucleo_f746
    models: {ae: {planner: optimal}}        # another plan of ae for this board only
  - name: nucleo_h743
    region: AXI_SRAM
    linker: fragment
    linker_script: vendor/h743.ld
    linker_regions: {AXI_SRAM: RAM_D1}
  - {name: split_an500, region: [FAST, SLOW]}
  - mps2_an500
"""


def project(tmp_path: Path) -> Path:
    proj = tmp_path / "p"
    (proj / "models").mkdir(parents=True)
    for name in ("kws", "autoencoder"):
        shutil.copy2(ROOT / "example_firmware" / "models" / f"{name}.onnx", proj / "models" / f"{name}.onnx")
    (proj / "boards").mkdir()
    (proj / "boards" / "split_an500.yaml").write_text(SPLIT_BOARD)
    (proj / "vendor").mkdir()
    (proj / "vendor" / "h743.ld").write_text(vendor_script(H743_MEMORY, "RAM_D1"))
    (proj / "arena.yaml").write_text(MANIFEST)
    return proj


def project_graph(proj: Path, monkeypatch: pytest.MonkeyPatch, **kw: Any) -> tuple[dict[str, Any], BuildGraph]:
    monkeypatch.chdir(proj)
    doc = noop_cache.cached("arena.yaml", (), str(proj / "build" / ".arena_manifest.json"))
    return doc, bg.graph_of(doc, "build", toolchain(proj), **{"generator": GEN, **kw})


def test_a_board_with_a_uart_gets_a_validation_firmware(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """mps2_an500's, nucleo_f746's and nucleo_h743's board files name uart: (split_an500's none):
    build/mps2_an500/validate.elf, the validation main.c compiled for that UART (its kind, address
    and, for an STM32, its clock and setup writes), over the firmware's own arena, runtime and
    tables objects and linked with its script (its own map); the validate alias, not the default."""
    _, g = project_graph(project(tmp_path), monkeypatch)
    assert [b.name for b in g.boards if b.validate] == ["nucleo_f746", "nucleo_h743", "mps2_an500"]
    f746 = g.env(g.node("build/nucleo_f746/obj/validate.o").env).ccflags
    assert {"-DARENA_UART_STM32_USART", "-DARENA_UART_BASE=0x40004800u", "-DARENA_UART_CLOCK_HZ=16000000u",
            "-DARENA_UART_SETUP_0_ADDR=0x40023830u", "-DARENA_UART_SETUP_0_MASK=0x00000008u",
            "-DARENA_UART_SETUP_3_MASK=0x000000ffu", "-DARENA_UART_SETUP_3_VALUE=0x00000077u"} <= set(f746)
    assert "-DARENA_UART_CMSDK_APB" in g.env(g.node("build/mps2_an500/obj/validate.o").env).ccflags
    b = g.board("mps2_an500")
    v, fw = g.node(b.validate), g.node(b.elf)
    assert v.targets == ("build/mps2_an500/validate.elf",) and v.board == "mps2_an500" and v.gates == (b.gate,)
    main = g.node("build/mps2_an500/obj/validate.o")
    assert main.sources == (os.path.join(arena_tool.runtime_dir(), "validate", "main.c"),)
    assert "-DARENA_UART_BASE=0x40004000u" in g.env(main.env).ccflags and "-DARENA_UART_RX_IRQ=0u" in g.env(main.env).ccflags
    key = g.env(fw.env).key
    assert v.sources[:3] == (fw.sources[0], f"build/common/{key}/arena_runtime/example/startup.o", main.targets[0])
    assert set(v.sources[3:]) == {s for s in fw.sources if "/example/" not in s and s != fw.sources[0]}
    assert "-Wl,-Map,${TARGET.dir}/validate.map" in v.linkflags and v.depends == fw.depends
    assert g.alias("validate").targets == tuple(x.validate for x in g.boards if x.validate)
    assert g.alias("validate").action == "validate"
    assert b.validate not in g.alias("boards").targets and b.validate not in b.all


def test_boards_and_models_graph(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    doc, g = project_graph(project(tmp_path), monkeypatch)
    # kws once for all; ae twice (greedy_size everywhere, optimal on nucleo_f746); split_an500's own
    # plans (a split arena is planned for its regions)
    plans = {n.targets[0]: n for n in g.of_kind("plan")}
    keys = {s["key"] for t in doc["targets"] for s in t["models"]}
    assert len(plans) == len(keys) == 5 and len(g.of_kind("tables")) == 5
    f746, h743, split, an500 = (g.board(n) for n in ("nucleo_f746", "nucleo_h743", "split_an500", "mps2_an500"))
    assert f746.plans[0] == h743.plans[0] == an500.plans[0] != split.plans[0]  # kws
    assert f746.plans[1] != h743.plans[1] == an500.plans[1]  # ae: optimal on nucleo_f746 only
    for b in g.boards:  # each table depends on its plan and its model and waits for its boards' gates
        for tables_c in b.tables[::2]:
            n = g.node(tables_c)
            assert n.sources[0] in b.plans and n.sources[1] in ("models/kws.onnx", "models/autoencoder.onnx")
            assert b.gate in n.requires
    assert g.node(f746.tables[2]).requires == (f746.gate,)  # ae-optimal's tables: that board only
    # the split board: its plans name both regions in their options; one linker script of its own
    split_spec = next(t for t in doc["targets"] if t["name"] == "split_an500")["models"][0]
    assert split_spec["regions"] and plans[split.plans[0]].sources[1] == Value(split_spec["key"])
    assert g.node(split.gate).targets[3] == split.ld == "build/split_an500/split_an500.ld"
    assert g.node(split.elf).depends == (split.ld,) and g.node(split.elf).linkflags is None
    # linker: fragment: the gate writes arena_fragment.ld (and checks the project's script); the ELF
    # links with -T that script, -L its folder and -L the board folder, and relinks when it changes
    script = next(t for t in doc["targets"] if t["name"] == "nucleo_h743")["linker_script"]
    assert script == "vendor/h743.ld"  # as the manifest has it, relative to the project
    gate = g.node(h743.gate)
    assert h743.ld == gate.targets[3] == "build/nucleo_h743/arena_fragment.ld" and gate.sources[-1] == "arena.yaml"
    h743_file = next(t for t in doc["targets"] if t["name"] == "nucleo_h743")["board_file"]
    assert h743.named == (h743_file, "models/kws.onnx", "models/autoencoder.onnx", script)  # the gate checks it
    assert split.named == ("boards/split_an500.yaml", "models/kws.onnx", "models/autoencoder.onnx")
    elf = g.node(h743.elf)
    assert elf.depends == (script, h743.ld)
    flags = list(elf.linkflags or ())
    i = flags.index("-T")
    assert flags[i:i + 6] == ["-T", "vendor/h743.ld", "-L", "vendor", "-L", "${TARGET.dir}"]
    assert "${TARGET.dir}/${TARGET.dir.name}.ld" not in flags
    assert flags == bg.fragment_link_flags(g.env(elf.env).linkflags, "vendor/h743.ld")
    # nucleo_h743, split_an500 and mps2_an500 share core flags: one environment, the same objects but
    # each board's arena_board.o and its own tables
    assert elf.env == g.node(split.elf).env == g.node(an500.elf).env != g.node(f746.elf).env
    shared = set(elf.sources[1:]) & set(g.node(an500.elf).sources[1:])
    assert {o for o in shared if "/arena_runtime/" in o} and len(g.envs) == 2 + 3  # and the UARTs' (mps2_an500, nucleo_f746, nucleo_h743)
    assert set(g.alias(bg.gates_alias(elf.env)).targets) == {h743.gate, split.gate, an500.gate}
    # the report alias: every board's JSON, HTML and Markdown
    assert set(g.alias("report").targets) == {p for b in g.boards for p in (b.report, *b.views)} | {
        "build/.arena_status_report.json"}
    assert g.alias("run").targets == ("build/mps2_an500/firmware.elf", "build/split_an500/firmware.elf")


# ---------------------------------------------------------------- policy


def test_flag_and_name_policy() -> None:
    flags = ["-mcpu=cortex-m4", "-mthumb", "-mfpu=fpv4-sp-d16", "-mfloat-abi=hard"]
    assert bg.flags_key(flags) == "cortex-m4_fpv4-sp-d16_hard"
    cc = bg.compile_flags(flags, "/p/a$b", extra=["-DX"], user=["-O0"])
    assert cc[:4] == flags and cc[-5:] == ["$(", "-ffile-prefix-map=/p/a$$b=.", "$)", "-DX", "-O0"]  # the user's last: it wins
    assert {"-Werror=overflow", "-Werror=trigraphs", "-ffunction-sections", "-fdata-sections"} <= set(cc)
    ld = bg.link_flags(flags, user=["-Wl,--print-memory-usage"])
    assert ld[:4] == flags and ld[-1] == "-Wl,--print-memory-usage" and "-Wl,--gc-sections" in ld
    assert bg.fragment_link_flags(ld, "s.ld")[4:][-7:-1] == ["-T", "s.ld", "-L", ".", "-L", "${TARGET.dir}"]
    assert bg.object_name("/p/src/main.c", "/p", "/r") == "src/main"
    assert bg.object_name("/r/example/main.c", "/p", "/r") == "arena_runtime/example/main"
    outside = bg.object_name("/elsewhere/main.c", "/p", "/r")
    assert outside.startswith("_ext/") and outside.endswith("/main") and outside != bg.object_name(
        "/other/main.c", "/p", "/r")
    assert bg.project_file("/p/vendor/x.ld", "/p") == "vendor/x.ld" == bg.project_file("vendor/x.ld", "/p")
    assert bg.project_file("/q/x.ld", "/p") == "/q/x.ld" and bg.scons_path("a$b") == "a$$b"
    env = bg.compile_env(flags, bg.Toolchain(root="/p", cpppath=("inc",), user=bg.UserFlags(
        ccflags=("-DU",), cpppath=("uinc",), libs=("c",), cppdefines={"A": 1})))
    assert env.ccflags[-1] == "-DU" and env.cpppath[:2] == ("uinc", "inc") and env.libs == ("c", "m")
    assert env.cppdefines == {"A": 1}


# ---------------------------------------------------------------- the SCons tool wires the graph


DUMP = """
import json, os, sys
import SCons.Node.Alias, SCons.Script
import arena_tool
env = Environment(tools=["arena"], toolpath=[arena_tool.site_tools_dir()])
app = os.path.join(arena_tool.runtime_dir(), "example")
env.ArenaFirmware("arena.yaml", sources=[os.path.join(app, "startup.c"), os.path.join(app, "main.c")], cpppath=[app])

def name(n):
    if isinstance(n, SCons.Node.Alias.Alias):
        return "alias:" + str(n)
    if n.__class__.__name__.startswith("Value"):
        return "value:" + n.read()
    return os.path.abspath(n.get_abspath())

nodes, aliases, todo = {}, {}, []
for a in SCons.Node.Alias.default_ans.values():
    aliases[str(a)] = {"targets": [name(s) for s in a.sources], "depends": [name(d) for d in a.depends]}
    todo += a.sources + a.depends
while todo:
    n = todo.pop()
    if not n.has_builder() or isinstance(n, SCons.Node.Alias.Alias) or name(n) in nodes:
        continue
    e = n.get_executor()
    nodes[name(n)] = {"targets": [name(t) for t in e.get_all_targets()], "sources": [name(s) for s in n.sources],
                      "depends": [name(d) for d in n.depends], "requires": [name(p) for p in (n.prerequisites or [])]}
    if n.get_suffix() in (".o", ".elf"):
        var = "CCFLAGS" if n.get_suffix() == ".o" else "LINKFLAGS"
        nodes[name(n)]["flags"] = [str(f) for f in n.get_build_env()[var]]
    if n.name == "arena_gate.json":  # what SCons's own scan of its sources finds, what it ignores
        n.scan()
        nodes[name(n)]["implicit"] = [name(i) for i in n.implicit]
        nodes[name(n)]["ignore"] = [name(i) for i in n.ignore]
    todo += n.sources + n.depends + list(n.prerequisites or [])
default = [name(n) for n in SCons.Script.DEFAULT_TARGETS]
with open(os.environ["DUMP"], "w") as f:
    json.dump({"nodes": nodes, "aliases": aliases, "default": default}, f)
"""


def test_scons_tool_wires_the_graph(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The nodes SCons holds after reading the SConstruct (scons -n: nothing runs) are the graph's:
    the same targets made together, the same sources in order, depends and order-only requires,
    the same aliases and default, the graph's compile and link flags. A stand-in cross gcc on
    PATH makes the tool wire the objects and ELFs whether or not one is installed."""
    proj = project(tmp_path)
    (proj / "SConstruct").write_text(DUMP)
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "arm-none-eabi-gcc").write_text("#!/bin/sh\nexit 1\n")
    (fake / "arm-none-eabi-gcc").chmod(0o755)
    dump = tmp_path / "dump.json"
    env = dict(os.environ, PYTHONPATH=str(ROOT), DUMP=str(dump), PATH=f"{fake}{os.pathsep}{os.environ['PATH']}")
    for var in ("CCFLAGS", "CFLAGS", "LINKFLAGS", "CPPPATH", "LIBS", "LIBPATH", "CPPDEFINES", "VERBOSE"):
        env.pop(var, None)
    p = subprocess.run([sys.executable, "-m", "SCons", "-Q", "-n"], cwd=proj, env=env, capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    got = json.loads(dump.read_text())
    # the digest of arena's sources the tool saw (another checkout's edits may move it since)
    prefix = "value:arena_tool sources "
    [digest] = {d[len(prefix):] for n in got["nodes"].values() for d in n["depends"] if d.startswith(prefix)}
    _, g = project_graph(proj, monkeypatch, generator=digest)

    def name(s: bg.Source) -> str:
        if isinstance(s, Value):
            return "value:" + s.text
        return "alias:" + s if s.startswith("arena-gates-") else os.path.abspath(os.path.join(proj, s))

    want = {}
    for n in g.nodes:
        for t in n.targets:
            want[name(t)] = {"targets": [name(x) for x in n.targets], "sources": [name(s) for s in n.sources],
                             "depends": [name(d) for d in n.depends], "requires": [name(r) for r in n.requires]}
            if n.kind in ("object", "elf"):
                e = g.env(n.env)
                want[name(t)]["flags"] = list(e.ccflags if n.kind == "object" else (n.linkflags or e.linkflags))
            if n.kind == "gate" and t == n.targets[0]:  # the manifest scanner: what it names for that board
                want[name(t)].update(implicit=[name(f) for f in g.board(n.board).named], ignore=[name(n.manifest)])
    assert got["nodes"].keys() == want.keys()
    # 4 boards' arena_board.o, per core (two) the example's 5 objects and one per runtime C file, and
    # the validation firmware of the boards with a uart: (mps2_an500, nucleo_f746, nucleo_h743):
    # validate.o and validate.elf each
    runtime_c = len(list(Path(arena_tool.runtime_dir()).glob("*.c")))
    assert len([p for p in want if p.endswith(".elf")]) == 4 + 3
    assert len([p for p in want if p.endswith(".o")]) == 4 + 2 * (5 + runtime_c) + 3
    for path, node in want.items():
        assert got["nodes"][path] == node, path
    assert got["aliases"] == {a.name: {"targets": [name(t) for t in a.targets], "depends": [name(d) for d in a.depends]}
                              for a in g.aliases}
    assert got["default"] == ["alias:" + d for d in g.default]


@pytest.mark.parametrize("required", [True, False])
def test_a_build_that_cannot_link_leaves_nothing_looking_current(tmp_path, required):
    """gcc_prefix=foo-none-eabi- require_link=1 exited 2 with a clear line, but build/<board>/arena_report.json
    still said ok, linked, beside the previous firmware.elf (issue 35). Required, the build stops before it
    runs: the ELF, map, run report and board report go. Not required, the build goes on without linking
    and writes the board report again: the ELF, map and run report go."""
    from arena_tool.builder import build_graph

    bdir = tmp_path / "mps2_an500"
    bdir.mkdir()
    names = ["firmware.elf", "firmware.map", "run_report.json", "arena_report.json", "arena_board.c"]
    for n in names:
        (bdir / n).write_text("old")
    text, code = build_graph.without_gcc([str(bdir)], "foo-none-eabi-gcc", True, required)
    assert code == (2 if required else 0) and "foo-none-eabi-gcc" in text
    left = sorted(p.name for p in bdir.iterdir())
    assert left == (["arena_board.c"] if required else ["arena_board.c", "arena_report.json"]), left


def test_a_tflm_board_without_a_startup_file_is_refused_before_any_compile(tmp_path: Path, in_root: None) -> None:
    """tflm: with arena's linker script and no source defining the vector table: the link failed
    only after TFLM's compile (about 9 minutes); the graph says so before anything is compiled."""
    from arena_tool.core.errors import ArenaError

    doc = example_doc(tmp_path)
    tflm = {"path": str(tmp_path / "tflite-micro"), "kernels": "reference", "library": "", "include": []}
    ts = [dict(doc["targets"][0], runtime="tflm", tflm=tflm)]
    main_only = bg.Toolchain(link=True, sources=(str(APP / "main.c"),), cpppath=(str(APP),), root=str(ROOT))
    with pytest.raises(ArenaError) as e:
        bg.graph_of(dict(doc, targets=ts), "build", main_only, generator=GEN)
    text = e.value.render()
    assert "tflm/main.cc (in place of main.c)" in text and ".isr_vector" in text and "startup.c" in text, text
    assert bg.graph_of(dict(doc, targets=ts), "build", toolchain(ROOT), generator=GEN).of_kind("tflm_lib")
