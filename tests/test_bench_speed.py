"""bench/speed.py: where it finds ../shared, why it skips, how it reads tflm_speed's run lines and
decides a TFLM firmware must be rebuilt, and its table; then (slow) one real run on AD01."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from conftest import ROOT, unavailable

from bench import speed  # a package import: bench/ on sys.path would shadow tests/models.py with bench/models.py

ALL_TOOLS = {"arm-none-eabi-g++", "arm-none-eabi-gcc", "qemu-system-arm", "make", "bash"}


def fake_shared(tmp_path: Path) -> Path:
    shared = tmp_path / "shared"
    (shared / "third_party" / "tflite-micro").mkdir(parents=True)
    (shared / "tools" / "tflm_speed").mkdir(parents=True)
    (shared / "tools" / "tflm_speed" / "build.sh").write_text("#!/bin/bash\n")
    (shared / "models" / "mlperf_tiny").mkdir(parents=True)
    return shared


def which_all_but(*missing: str):
    return lambda tool: None if tool in missing else f"/usr/bin/{tool}"


def test_shared_is_beside_the_project_unless_the_environment_says():
    assert speed.shared_dir({}) == ROOT.parent / "shared"
    assert speed.shared_dir({"ARENA_SHARED": "/elsewhere/shared"}) == Path("/elsewhere/shared")
    assert speed.shared_dir({"ARENA_SHARED": ""}) == ROOT.parent / "shared"


def test_skips_without_shared_saying_where_it_looked(tmp_path):
    why = speed.skip_reason(tmp_path / "nowhere", which_all_but(), lambda m: True)
    assert why is not None and str(tmp_path / "nowhere") in why and "ARENA_SHARED" in why


@pytest.mark.parametrize("remove, words", [
    ("third_party/tflite-micro", "TFLM's sources"),
    ("tools/tflm_speed/build.sh", "tflm_speed tool"),
    ("models/mlperf_tiny", "MLPerf Tiny models"),
])
def test_skips_when_a_part_of_shared_is_missing(tmp_path, remove, words):
    shared = fake_shared(tmp_path)
    target = shared / remove
    target.unlink() if target.is_file() else target.rmdir()
    why = speed.skip_reason(shared, which_all_but(), lambda m: True)
    assert why is not None and words in why and str(target) in why


@pytest.mark.parametrize("tool, words", [("arm-none-eabi-g++", "libstdc++-arm-none-eabi-newlib"),
                                         ("qemu-system-arm", "qemu-system-arm"), ("make", "build.sh")])
def test_skips_without_a_tool_naming_its_package(tmp_path, tool, words):
    why = speed.skip_reason(fake_shared(tmp_path), which_all_but(tool), lambda m: True)
    assert why is not None and why.startswith(f"{tool} is not on PATH") and words in why


def test_skips_without_tflite_micro_and_runs_with_everything(tmp_path):
    shared = fake_shared(tmp_path)
    why = speed.skip_reason(shared, which_all_but(), lambda m: m != "tflite_micro")
    assert why is not None and "tflite_micro" in why and "pip install" in why
    assert speed.skip_reason(shared, which_all_but(), lambda m: True) is None


def test_main_without_shared_prints_why_and_exits_0(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ARENA_SHARED", str(tmp_path / "absent"))
    assert speed.main(["--networks", "ad01", "--build", str(tmp_path / "b")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("speed: skipped, nothing measured: ") and str(tmp_path / "absent") in out
    assert not (tmp_path / "b").exists()


def test_unknown_network_or_level_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as e:
        speed.main(["--networks", "vww,mobilenet"])
    assert e.value.code == 2 and "mobilenet" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        speed.main(["--optimize", "fast"])
    assert e.value.code == 2 and "size" in capsys.readouterr().err


def test_unknown_variant_network_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as e:
        speed.main(["--networks", "", "--variants", "kws,vww"])
    assert e.value.code == 2 and "vww" in capsys.readouterr().err


def test_the_zoo_networks_are_variants_on_request(capsys, monkeypatch, tmp_path):
    """MobileNetV3, ShuffleNetV2 and SqueezeNet are --variants choices (not in the default run):
    accepted, then the missing shared folder skips the run."""
    monkeypatch.setenv("ARENA_SHARED", str(tmp_path / "absent"))
    assert speed.main(["--networks", "", "--variants", "mobilenet_v3,shufflenet_v2,squeezenet"]) == 0
    assert "skipped" in capsys.readouterr().out
    assert "mobilenet_v3" not in speed.DEFAULT_VARIANTS and set(speed.DEFAULT_VARIANTS) < set(speed.VARIANT_NETWORKS)


def test_op_kinds_name_the_conv_by_kernel_and_group():
    assert speed.op_kind("QLinearConv", {"kernel_shape": [15, 1], "group": 128}, 128) == "depthwise 15x1"
    assert speed.op_kind("QLinearConv", {"kernel_shape": [3, 3], "group": 4}, 8) == "conv 3x3"  # grouped, not depthwise
    assert speed.op_kind("QLinearConv", {"kernel_shape": [1, 1], "group": 1}, 64) == "pointwise"
    assert speed.op_kind("QLinearConv", {"kernel_shape": [3], "group": 1}, 3) == "conv 3x1"
    assert speed.op_kind("QGemm", {}, None) == speed.op_kind("MatMul", {}, None) == "fully connected"
    assert speed.op_kind("MaxPool", {}, 8) == "MaxPool"


@pytest.mark.slow
def test_variants_of_the_ds_tcn_run_against_their_int8_twin(request, tmp_path_factory, capsys):
    """--variants alone (no TFLM build): the DS-TCN's int8, uint8 and asymmetric-weight twins, each
    run with --profile, equal to onnxruntime, their ratios and the per-op-kind table printed."""
    shared = speed.shared_dir()
    why = speed.skip_reason(shared)
    if why is not None:
        pytest.skip(why)
    rc = speed.main(["--networks", "", "--variants", "ds_tcn", "--build", str(tmp_path_factory.mktemp("variants"))])
    out = capsys.readouterr().out
    assert rc == 0, out
    row = next(ln for ln in out.splitlines() if ln.startswith("| ds_tcn |"))
    ratios = [float(c) for c in [c.strip() for c in row.strip("|").split("|")][2:5:2]]
    assert all(0.5 < r <= 1.2 for r in ratios), row  # the floor: at most 1.2x the int8 twin
    kinds = {ln.split("|")[3].strip() for ln in out.splitlines() if ln.startswith("| ds_tcn | ")}
    assert {"depthwise 3x1", "depthwise 15x1", "pointwise", "fully connected"} <= kinds, out


def test_run_lines_of_tflm_speed_are_read():
    ok = {"elf": "b/ref/m/fw.elf", "exit": 0, "ticks1": 14588, "instructions": 583520, "flash": 321604, "log": ""}
    assert speed.parse_tflm_run(json.dumps(ok)) == ("b/ref/m/fw.elf", speed.Measured(583520, 321604))
    bad = {**ok, "exit": 3, "instructions": None, "log": "fatal: HardFault\n"}
    elf, m = speed.parse_tflm_run(json.dumps(bad))
    assert elf == "b/ref/m/fw.elf" and m.instructions is None and "exit status 3" in m.error and "HardFault" in m.error


def test_a_firmware_is_rebuilt_when_its_model_or_the_tool_is_newer(tmp_path):
    model, tool, elf = tmp_path / "m.tflite", tmp_path / "build.sh", tmp_path / "fw.elf"
    model.write_bytes(b"m")
    tool.write_text("t")
    assert speed.stale(elf, [model, tool])  # never built
    elf.write_bytes(b"e")
    os.utime(model, (1000, 1000))
    os.utime(tool, (1000, 1000))
    os.utime(elf, (2000, 2000))
    assert not speed.stale(elf, [model, tool])
    os.utime(tool, (3000, 3000))
    assert speed.stale(elf, [model, tool])


def test_table_prints_per_mac_and_the_ratios_of_this_run():
    row = speed.Row("AD01", "int8", 264_192, speed.Measured(1_000_000, 300_000),
                    {"ref": speed.Measured(2_000_000, 310_000), "cmsis_nn": speed.Measured(500_000, 320_000)})
    failed = speed.Row("KWS", "float", 1000, speed.Measured(None, None, "mismatch"),
                       {"ref": speed.Measured(10_000, 5), "cmsis_nn": speed.Measured(None, None, "exit status 1")})
    head, rule, ok, bad = speed.table([row, failed])
    cells = [c.strip() for c in ok.strip("|").split("|")]
    assert cells == ["AD01", "int8", "264,192", "1,000,000", "3.79", "300,000", "2,000,000", "7.57", "310,000",
                     "500,000", "1.89", "320,000", "0.50", "2.00", "0.94"]
    assert [c.strip() for c in bad.strip("|").split("|")][3:5] == ["failed", "-"]
    assert bad.rstrip(" |").endswith("-") and len(head) == len(ok) == len(bad) and set(rule) <= {"|", "-"}


def test_speed_on_ad01_measures_every_runtime(request, tmp_path_factory, monkeypatch, capsys):
    """The whole script on AD01: TFLM (a fresh cache builds TFLM's core once, a few minutes),
    arena-tool run on the float and the quantized ONNX, every row measured.

    Its cache is pytest's (a second session builds nothing), not build/speed, which a benchmark
    run may be using. build.sh compiles only AD01's one kernel (``OPS``; speed.py passes the
    environment through): its firmwares are byte-identical to the ones the default list of the
    MLPerf Tiny kernels links, so the numbers are the benchmark's, and the six other kernels,
    twice (reference and CMSIS-NN), are about 130 s of CPU that test no line of speed.py."""
    shared = speed.shared_dir()
    why = speed.skip_reason(shared)
    if why is not None:
        unavailable(why, "install what it names, or set ARENA_SHARED")
    cache_plugin = getattr(request.config, "cache", None)
    build = cache_plugin.mkdir("arena_speed") if cache_plugin else tmp_path_factory.mktemp("arena_speed")
    monkeypatch.setenv("OPS", "fully_connected")
    rc = speed.main(["--networks", "ad01", "--variants", "", "--build", str(build)])
    out = capsys.readouterr().out
    assert rc == 0, out
    rows = [ln for ln in out.splitlines() if ln.startswith("| AD01")]
    assert len(rows) == 2, out
    for line in rows:
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert cells[2] == "264,192"  # the same network: TFLM's conv + FC count, AD01 has no pooling
        insns = [int(cells[i].replace(",", "")) for i in (3, 6, 9)]
        assert all(n > 264_192 for n in insns)
        for col, tflm in ((12, insns[1]), (13, insns[2])):
            assert float(cells[col]) == pytest.approx(insns[0] / tflm, abs=0.006)
    assert rows[0].split("|")[2].strip() == "int8"
    assert re.search(r"AD01 int8: arena \S+_qdq_pc\.onnx \(quantized from", out)
    assert "arena at speed (-O2)" in out  # the default level
    assert "TFLM anomaly_detection__ad01_int8.tflite" in out and "TFLM anomaly_detection__ad01_fp32.tflite" in out


def test_tflm_is_built_and_run_for_the_board_core(tmp_path):
    """--board: tflm_speed as shipped for mps2_an500; for another board a copy whose build.sh compiles
    for its core (CMSIS-NN's DSP path on the M4, its plain C on the M3) and whose run.py starts its
    machine; a tool that no longer holds the line to replace is an error, not a silent M7 build."""
    shared = fake_shared(tmp_path)
    tool = shared / "tools" / "tflm_speed"
    (tool / "build.sh").write_text(f'ARCH="{speed.TOOL_ARCH} -mthumb"\nDEFS="-DNDEBUG {speed.TOOL_CPU_DEF} \\\n')
    (tool / "run.py").write_text(f'cmd = ["qemu-system-arm", "-M", {speed.TOOL_MACHINE}, "-kernel", elf]\n')
    (tool / "main.cc").write_text("int main() {}\n")
    assert speed.tool_for(shared, tmp_path / "b", "mps2_an500") == tool
    m4 = speed.tool_for(shared, tmp_path / "m4", "mps2_an386")
    assert (m4 / "build.sh").read_text() == 'ARCH="-mcpu=cortex-m4 -mfpu=fpv4-sp-d16 -mfloat-abi=hard -mthumb"\n' \
                                           'DEFS="-DNDEBUG -DCPU_M4=1 \\\n'
    assert '"mps2-an386"' in (m4 / "run.py").read_text() and (m4 / "main.cc").read_text() == "int main() {}\n"
    m3 = speed.tool_for(shared, tmp_path / "m3", "mps2_an385")
    assert '"-mcpu=cortex-m3 -mfloat-abi=soft -mthumb"' in (m3 / "build.sh").read_text().replace('ARCH=', '')
    assert "-DCPU_M3=1" in (m3 / "build.sh").read_text() and '"mps2-an385"' in (m3 / "run.py").read_text()
    # the M55's board: its SysTick clock (32 MHz) and memory map (ITCM 512K, ISRAM 4M) replace the an500's
    (tool / "run.py").write_text(f'{speed.TOOL_CLOCK}\ncmd = ["qemu-system-arm", "-M", {speed.TOOL_MACHINE}]\n')
    (tool / "link.ld").write_text(f"  {speed.TOOL_FLASH}\n  {speed.TOOL_RAM}\n")
    m55 = speed.tool_for(shared, tmp_path / "m55", "mps3_an547")
    assert (m55 / "run.py").read_text() == 'CLOCK_HZ = 32_000_000\ncmd = ["qemu-system-arm", "-M", "mps3-an547"]\n'
    assert (m55 / "link.ld").read_text() == ("  FLASH (rx)  : ORIGIN = 0x00000000, LENGTH = 524288\n"
                                             "  RAM   (rwx) : ORIGIN = 0x21000000, LENGTH = 4194304\n")
    (tool / "run.py").write_text('cmd = ["qemu-system-arm", "-M", "mps2-an511"]\n')
    with pytest.raises(SystemExit) as e:
        speed.tool_for(shared, tmp_path / "m3", "mps2_an385")
    assert "run.py" in str(e.value) and "tool_for" in str(e.value)


def test_the_zoo_tool_resolves_the_zoo_s_ops(tmp_path):
    """--zoo: tflm_speed copied with model_to_c.py's resolver table holding HARD_SWISH, TRANSPOSE,
    SPLIT, SPLIT_V and PADV2; a table that changed is an error naming the function to update."""
    tool = tmp_path / "tool"
    tool.mkdir()
    (tool / "model_to_c.py").write_text(f"ADD = {{{speed.TOOL_ADD}\n")
    (tool / "build.sh").write_text("make\n")
    out = speed.zoo_tool(tool, tmp_path / "b")
    assert (out / "model_to_c.py").read_text() == f"ADD = {{{speed.ZOO_ADD}\n" and (out / "build.sh").read_text() == "make\n"
    assert '"HARD_SWISH": "AddHardSwish"' in speed.ZOO_ADD and "hard_swish" in speed.ZOO_OPS.split()
    (tool / "model_to_c.py").write_text("ADD = {}\n")
    with pytest.raises(SystemExit) as e:
        speed.zoo_tool(tool, tmp_path / "c")
    assert "model_to_c.py" in str(e.value) and "zoo_tool" in str(e.value)


def test_unknown_zoo_network_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as e:
        speed.main(["--networks", "", "--variants", "", "--zoo", "mobilenet_v2,vww"])
    assert e.value.code == 2 and "vww" in capsys.readouterr().err


def test_unknown_board_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as e:
        speed.main(["--board", "mps2_an500,nucleo_f746"])
    assert e.value.code == 2 and "mps2_an385" in capsys.readouterr().err


def test_the_ratio_table_has_a_column_per_board():
    def row(a: int, nn: int) -> speed.Row:
        return speed.Row("VWW", "int8", 1, speed.Measured(a, 1), {"cmsis_nn": speed.Measured(nn, 1)})
    lines = speed.ratios({"mps2_an386": [row(90, 100)], "mps2_an385": [row(150, 100)]})
    assert lines[0] == "| network | dtype | mps2_an386 (cortex-m4) | mps2_an385 (cortex-m3) |"
    assert lines[2] == "| VWW | int8 | 0.90 | 1.50 |"
