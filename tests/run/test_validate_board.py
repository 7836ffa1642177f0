"""`arena-tool validate`: the validation firmware's framed protocol over a real TCP serial socket
with pyserial (arena_tool/run/validate.py, arena_tool/runtime/validate/main.c).

Fast: the host's side against a scripted board (a Python socket server): a damaged or refused
frame is sent again, a stale reply skipped; hostile replies (wrong CRC, wrong length, another
model's result, an error frame) and silence end in one clear error. Slow: the firmware under
QEMU mps2-an386 and mps2-an500 (outputs equal onnxruntime's, the count equal to `arena-tool run`'s),
behind a proxy that drops, flips and truncates frames (every damaged frame repeated, every
comparison right), and a board that stops answering (exit 2, one line, within the timeout).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import jsonschema
import pytest
from conftest import ROOT, require_tool

import serial_proxy
from arena_tool.core.errors import ArenaError
from arena_tool.run import validate

KWS = ROOT / "example_firmware" / "models" / "kws_int8.onnx"


# ---------------------------------------------------------------- a scripted board

def frames_of(buf: bytearray) -> Iterator[tuple[int, int, bytes]]:
    """Whole frames off the front of ``buf`` (the host's flush and damage skipped)."""
    while True:
        at = buf.find(validate.SYNC)
        if at < 0 or len(buf) < at + 8:
            return
        del buf[:at]
        length = struct.unpack_from("<I", buf, 4)[0]
        if len(buf) < 12 + length:
            return
        body = bytes(buf[2:8 + length])
        del buf[:12 + length]
        yield body[0], body[1], body[6:]


class FakeBoard:
    """A TCP server that answers each host frame with ``reply(type, seq, payload, index)``'s bytes."""

    def __init__(self, reply: Callable[[int, int, bytes, int], bytes]) -> None:
        self.reply = reply
        self.server = socket.socket()
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(1)
        self.port = f"tcp:127.0.0.1:{self.server.getsockname()[1]}"
        self.seen: list[tuple[int, int]] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        conn, _ = self.server.accept()
        buf = bytearray()
        with conn:
            while chunk := conn.recv(65536):
                buf += chunk
                for kind, seq, payload in frames_of(buf):
                    self.seen.append((kind, seq))
                    conn.sendall(self.reply(kind, seq, payload, len(self.seen) - 1))

    def link(self, timeout: float = 1.5, attempt: float = 0.3) -> validate.Link:
        return validate.Link(validate.open_port(self.port, 115200), timeout, attempt, name=self.port)


MODEL = validate.FwModel("kws", (validate.Tensor(4, "int8"),), (validate.Tensor(2, "int8"),), 3)


def result(model: int = 0, outputs: bytes = b"\x01\x02", count: int = 1234) -> bytes:
    return struct.pack("<BBBBiII", model, 0, 2, 0, -1, count, 0) + outputs


def test_frames_carry_type_seq_length_and_the_crc_of_all_after_the_sync() -> None:
    f = validate.frame(b"R", 7, b"\x00")
    assert f[:2] == b"\xa5\x5a" and f[2:4] == b"R\x07" and struct.unpack_from("<I", f, 4)[0] == 1
    assert struct.unpack_from("<I", f, 9)[0] == validate.crc(f[2:9])
    assert validate.serial_url("tcp:127.0.0.1:5555") == "socket://127.0.0.1:5555"
    assert validate.serial_url("/dev/ttyACM0") == "/dev/ttyACM0"
    with pytest.raises(ArenaError, match="tcp:HOST:PORT"):
        validate.serial_url("tcp:5555")


def test_a_refused_frame_is_sent_again_and_a_stale_reply_skipped() -> None:
    def reply(kind: int, seq: int, payload: bytes, i: int) -> bytes:
        if i == 0:
            return validate.frame(b"n", seq, b"")  # "your frame arrived damaged"
        if i == 1:  # a valid reply to an older request first, then this one's
            return validate.frame(b"r", (seq - 1) & 0xFF, result(count=1)) + validate.frame(b"r", seq, result())
        raise AssertionError("one retry is enough")

    board = FakeBoard(reply)
    link = board.link()
    rtype, body = link.request(b"R", b"\x00")
    r = validate.parse_result(body, 0, MODEL)
    assert rtype == b"r" and r.count == 1234 and r.outputs == (b"\x01\x02",)
    assert (link.stats.naks, link.stats.retries, link.stats.stale) == (1, 1, 1)
    assert board.seen[0][1] != board.seen[1][1]  # every transmission its own seq


def test_a_damaged_reply_is_asked_for_again() -> None:
    def reply(kind: int, seq: int, payload: bytes, i: int) -> bytes:
        f = bytearray(validate.frame(b"r", seq, result()))
        if i == 0:
            f[12] ^= 0x10  # one bit of the count
        return bytes(f)

    link = FakeBoard(reply).link()
    _, body = link.request(b"R", b"\x00")
    assert validate.parse_result(body, 0, MODEL).count == 1234
    assert link.stats.bad_crc == 1 and link.stats.retries == 1


@pytest.mark.parametrize("reply, words", [
    (lambda k, s, p, i: validate.frame(b"r", s, result(outputs=b"\x01\x02\x03")), "has 19 bytes"),
    (lambda k, s, p, i: validate.frame(b"r", s, result(model=1)), "a result of model #1 to a run of kws"),
    (lambda k, s, p, i: validate.frame(b"e", s, b"\x02no such model"), "refused a request: no such model"),
])
def test_hostile_replies_are_one_clear_error(reply: Callable[..., bytes], words: str) -> None:
    link = FakeBoard(reply).link()
    with pytest.raises(ArenaError) as err:
        _, body = link.request(b"R", b"\x00", limit=18)
        validate.parse_result(body, 0, MODEL)
    assert words in err.value.msg and err.value.exit_code == 2 and "\n" not in err.value.render()


@pytest.mark.parametrize("reply, words", [
    (lambda k, s, p, i: validate.frame(b"r", s, result())[:-1] + b"\x00", "replies failed their CRC"),
    (lambda k, s, p, i: b"", "no valid reply in 1.5 s"),
])
def test_wrong_crc_or_silence_is_no_answer_within_the_timeout(reply: Callable[..., bytes], words: str) -> None:
    link = FakeBoard(reply).link()
    start = time.monotonic()
    with pytest.raises(validate.NoAnswer, match="the board stopped answering") as err:
        link.request(b"R", b"\x00")
    assert words in err.value.msg and err.value.exit_code == 2
    assert time.monotonic() - start < 1.5 + 2 * 0.3 + 0.5


def test_a_hello_that_does_not_parse_says_it_is_not_the_validation_firmware() -> None:
    with pytest.raises(ArenaError, match="does not run arena's validation firmware"):
        validate.parse_info(b"\x01\x02\x00\x01")


# ---------------------------------------------------------------- the firmware under QEMU


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """kws_int8 on both QEMU boards; the validation firmware of each built once."""
    require_tool("arm-none-eabi-gcc")
    require_tool("qemu-system-arm")
    root = tmp_path_factory.mktemp("validate")
    shutil.copy(KWS, root / "kws_int8.onnx")
    (root / "arena.yaml").write_text("region: auto\nmodels:\n  - name: kws_int8\n    path: kws_int8.onnx\n"
                                     "boards:\n  - mps2_an386\n  - mps2_an500\n"
                                     "tolerances: {kws_int8: {max_abs_error: 0}}\n")
    return root


def cli(project: Path, *argv: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "arena_tool", *argv], cwd=project, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "PYTHONPATH": str(ROOT)})


# The protocol and the counts do not depend on the core: each whole-firmware check runs on one of the
# two boards (the M4 here, the M7 below), and the board-specific paths (the USART drivers, a flash
# command) have tests of their own.
@pytest.mark.slow
@pytest.mark.parametrize("board", ["mps2_an386"])
def test_outputs_equal_onnxruntime_and_the_count_equals_runs(project: Path, board: str) -> None:
    p = cli(project, "validate", "arena.yaml", "--board", board, "--port", "qemu", "--count", "2", "--json", "v.json")
    assert p.returncode == 0, p.stdout + p.stderr
    doc = json.loads((project / "v.json").read_text())
    jsonschema.validate(doc, json.loads((ROOT / "schemas" / "validate.schema.json").read_text()))
    m = doc["models"][0]
    assert doc["timer"] == "systick" and doc["unit"] == "instructions" and m["inferences"] == 2
    assert m["tolerance"] == {"max_abs_error": 0.0}  # the manifest's, not arena-tool run's
    assert [(o["exact_matches"], o["mismatches"], o["top1_agreement"]) for o in m["outputs"]] == [(2, 0, 2)]
    assert doc["link"]["retries"] == 0
    r = cli(project, "run", "kws_int8.onnx", "--board", board, "--json", "run.json")  # seed 0: the first set
    assert r.returncode == 0, r.stdout + r.stderr
    assert m["per_inference"][0] == json.loads((project / "run.json").read_text())["instructions"]


@pytest.mark.slow
def test_damaged_frames_are_repeated_never_compared(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every 4th frame either way is dropped a byte, flipped a bit or cut in half: each is detected
    and its request sent again; every output still equals onnxruntime's exactly."""
    from arena_tool import build_steps
    from arena_tool.core import files

    monkeypatch.chdir(project)
    try:
        built = build_steps.validate_firmware("arena.yaml", "mps2_an386", "build")
    finally:
        files.release_build_lock("build")
    qemu = validate.Qemu(built.elf, "mps2-an386")
    proxy = serial_proxy.Proxy(qemu.tcp, serial_proxy.every(4), seed=3)
    try:
        rc = build_steps.run_validate("arena.yaml", built.target, built.elf, built.plans,
                                      f"tcp:127.0.0.1:{proxy.port}", count=3, json_path="damaged.json", attempt=0.5)
    finally:
        qemu.close()
        proxy.close()
    doc = json.loads(Path("damaged.json").read_text())
    assert rc == 0 and all(n > 0 for n in proxy.damaged.values()), proxy.damaged
    out = doc["models"][0]["outputs"][0]
    assert (out["exact_matches"], out["mismatches"]) == (3, 0)
    assert doc["link"]["retries"] >= sum(proxy.damaged.values()) // 2 > 0


@pytest.mark.slow
def test_a_board_that_stops_answering_exits_2_with_one_line(project: Path) -> None:
    built = cli(project, "validate", "arena.yaml", "--board", "mps2_an386", "--port", "qemu", "--count", "1")
    assert built.returncode == 0, built.stderr
    qemu = validate.Qemu(str(project / "build" / "mps2_an386" / "validate.elf"), "mps2-an386")
    proxy = serial_proxy.Proxy(qemu.tcp, silent_after=3)
    try:
        start = time.monotonic()
        p = cli(project, "validate", "arena.yaml", "--board", "mps2_an386", "--port", f"tcp:127.0.0.1:{proxy.port}",
                "--timeout", "3", "--count", "5")
        took = time.monotonic() - start
    finally:
        qemu.close()
        proxy.close()
    assert p.returncode == 2, p.stdout + p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "the board stopped answering: no valid reply in 3 s" in lines[0], p.stderr
    assert took < 3 + 2 * validate.ATTEMPT + 15  # the CLI's start, the build's check, then the timeout


SCONSTRUCT = """\
import os
import arena_tool
env = Environment(tools=["arena"], toolpath=[arena_tool.site_tools_dir()])
app = os.path.join(arena_tool.runtime_dir(), "example")
env.ArenaFirmware("arena.yaml", sources=[os.path.join(app, "startup.c"), os.path.join(app, "main.c")], cpppath=[app])
"""


@pytest.mark.slow
def test_scons_validate_alias_validates_the_boards_firmware(tmp_path: Path) -> None:
    """scons board=B validate port=qemu: the build graph's validate.elf, built and validated as the
    CLI does; without port= one line and exit 2."""
    require_tool("arm-none-eabi-gcc")
    require_tool("qemu-system-arm")
    shutil.copy(KWS, tmp_path / "kws_int8.onnx")
    (tmp_path / "arena.yaml").write_text("region: auto\nmodels:\n  - name: kws_int8\n    path: kws_int8.onnx\n"
                                         "boards:\n  - mps2_an500\n")
    (tmp_path / "SConstruct").write_text(SCONSTRUCT)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    def scons(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "SCons", "-Q", "board=mps2_an500", *argv], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=900)

    p = scons("validate", "port=qemu")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "kws_int8: 10 inferences" in p.stdout and "match: every output of 10 inferences" in p.stdout
    assert (tmp_path / "build" / "mps2_an500" / "validate.elf").is_file()
    assert not (tmp_path / "build" / "mps2_an500" / "firmware.elf").exists()  # the alias builds what it needs
    p = scons("validate")
    assert p.returncode == 2 and "validate needs the board's port: scons board=NAME validate port=PORT" in p.stderr


@pytest.mark.slow
def test_profile_times_every_op_and_they_sum_to_the_inference(project: Path) -> None:
    p = cli(project, "validate", "arena.yaml", "--board", "mps2_an500", "--port", "qemu", "--count", "1", "--profile",
            "--json", "p.json")
    assert p.returncode == 0, p.stdout + p.stderr
    m = json.loads((project / "p.json").read_text())["models"][0]
    assert (project / "build" / "profile" / "mps2_an500" / "validate.elf").is_file()
    assert len(m["ops"]) > 10 and all(op["median"] > 0 for op in m["ops"])
    assert sum(op["median"] for op in m["ops"]) == m["count"]["median"]
    assert "instructions per op (median; -DARENA_PROFILE, the inference is their sum)" in p.stdout


def test_the_manifests_tolerances_judge_instead_of_runs(tmp_path: Path) -> None:
    """tolerances: {model: {max_abs_error, l2_relative_error, cosine}}: an inference beyond one is a
    mismatch (exit 1), whatever arena-tool run's tolerance says; exact outputs pass any bound."""
    import numpy as np

    from arena_tool.target import manifest

    run_only = validate.OutputStats("y", "float32")
    bounded = validate.OutputStats("y", "float32", bounds={"max_abs_error": 0.01, "cosine": 0.999})
    want = np.array([1.0, 2.0, 3.0], np.float32)
    for got in (want, want + np.float32(0.005), np.array([1.0, 2.0, 3.02], np.float32)):
        run_only.add(got, want, None)
        bounded.add(got, want, None)
    assert (run_only.exact, run_only.mismatches, bounded.mismatches) == (1, 2, 1)
    assert bounded.cosine < 1.0 and bounded.top1 == 3 and bounded.max_abs == pytest.approx(0.02, abs=1e-6)
    shutil.copy(KWS, tmp_path / "kws_int8.onnx")
    base = "models:\n  - name: kws_int8\n    path: kws_int8.onnx\nboards: [mps2_an500]\n"
    (tmp_path / "a.yaml").write_text(base + "tolerances: {kws_int8: {max_abs_error: 1, cosine: 0.99}}\n")
    assert manifest.load(str(tmp_path / "a.yaml")).tolerances == (("kws_int8", (("cosine", 0.99), ("max_abs_error", 1.0))),)
    (tmp_path / "b.yaml").write_text(base + "tolerances: {kws: {cosine: 0.99}}\n")
    with pytest.raises(ArenaError, match="tolerances: 'kws' is not a model of the manifest"):
        manifest.load(str(tmp_path / "b.yaml"))
    (tmp_path / "c.yaml").write_text(base + "tolerances: {kws_int8: {cosin: 0.99}}\n")
    with pytest.raises(ArenaError, match="cosin"):
        manifest.load(str(tmp_path / "c.yaml"))


# ---------------------------------------------------------------- every MLPerf Tiny model, and a .tflite

# The MLPerf Tiny float ONNX files, int8 as the tests quantize them (tests/quantized.py: QDQ, per
# channel, the session's qcache), with int8 I/O; and KWS's int8 .tflite on arena's runtime, against
# TFLite Micro's host interpreter. (ResNet large is left out for time: 1.2 G instructions an inference.)
MLPERF_ONNX = {"ad01": "anomaly_detection__ad01_fp32_tflite2onnx.onnx",
               "kws": "keyword_spotting__kws_ref_model_float32_tflite2onnx.onnx",
               "resnet8": "image_classification__pretrainedResnet_tflite2onnx.onnx",
               "vww": "visual_wake_words__vww_96_float_tflite2onnx.onnx"}
KWS_TFLITE = "keyword_spotting__kws_ref_model.tflite"


@pytest.fixture(scope="module")
def mlperf(tmp_path_factory: pytest.TempPathFactory, qcache: Path) -> Path:
    import quantized
    from conftest import require_shared
    from shared_paths import MLPERF

    require_tool("arm-none-eabi-gcc")
    require_tool("qemu-system-arm")
    root = tmp_path_factory.mktemp("validate_mlperf")
    lines = ["models:"]
    for name, file in MLPERF_ONNX.items():
        q = quantized.quantized(require_shared(MLPERF / file), "qdq", True, qcache)
        shutil.copy(q, root / f"{name}.onnx")
        lines.append(f"  - {{name: {name}, path: {name}.onnx, io: int8}}")
    shutil.copy(require_shared(MLPERF / KWS_TFLITE), root / "kws_tfl.tflite")
    lines.append("  - {name: kws_tfl, path: kws_tfl.tflite}")
    (root / "arena.yaml").write_text("\n".join([*lines, "boards: [mps2_an386, mps2_an500]", ""]))
    return root


@pytest.mark.slow
@pytest.mark.parametrize("board", ["mps2_an500"])
def test_every_mlperf_tiny_model_and_a_tflite_equal_their_reference_counted_as_run_counts(mlperf: Path,
                                                                                          board: str) -> None:
    """One validation firmware of KWS, VWW, ResNet-8, AD01 (int8 I/O) and KWS's .tflite: every output
    equals onnxruntime's (the .tflite's TFLite Micro's, bit for bit), and each inference's count
    equals `arena-tool run`'s of the model alone on the same input (seed 0)."""
    p = cli(mlperf, "validate", "arena.yaml", "--board", board, "--port", "qemu", "--count", "1", "--json", "v.json")
    assert p.returncode == 0, p.stdout + p.stderr
    doc = json.loads((mlperf / "v.json").read_text())
    jsonschema.validate(doc, json.loads((ROOT / "schemas" / "validate.schema.json").read_text()))
    models = {m["name"]: m for m in doc["models"]}
    assert list(models) == [*MLPERF_ONNX, "kws_tfl"]
    assert {n: m["reference"] for n, m in models.items()} == {**{n: "onnxruntime" for n in MLPERF_ONNX},
                                                               "kws_tfl": "tflm"}
    for m in models.values():
        assert m["mismatches"] == 0 and all(o["exact_matches"] == 1 for o in m["outputs"]), m
    assert "kws_tfl: 1 inferences, input seeded random (seeds 0..0), against TFLite Micro's host interpreter, " \
           "bit for bit" in p.stdout
    for name, m in models.items():
        model = f"{name}.tflite" if name == "kws_tfl" else f"{name}.onnx"
        flags = ["--runtime", "arena"] if name == "kws_tfl" else ["--io", "int8"]
        r = cli(mlperf, "run", model, "--board", board, *flags, "--json", f"run_{name}.json")
        assert r.returncode == 0, r.stdout + r.stderr
        assert m["per_inference"] == [json.loads((mlperf / f"run_{name}.json").read_text())["instructions"]], name


def test_a_tflm_board_has_no_validation_firmware_and_says_what_to_use(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """runtime: tflm: one line, exit 2, why and the two ways that work (arena's runtime; arena-tool run),
    before anything is compiled."""
    from arena_tool import cli as arena_cli
    from tflite_models import chain_model, save

    model = save(tmp_path, "chain.tflite", chain_model())
    (tmp_path / "arena.yaml").write_text(f"models:\n  - {{name: chain, path: {Path(model).name}}}\n"
                                         "boards:\n  - {name: mps2_an386, runtime: tflm}\n")
    monkeypatch.chdir(tmp_path)
    assert arena_cli.main(["validate", "arena.yaml", "--board", "mps2_an386", "--port", "qemu"]) == 2
    (line,) = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert "board mps2_an386 has no validation firmware: its runtime is tflm" in line
    assert "boards: [{name: mps2_an386, runtime: arena}]" in line
    assert "arena-tool run MODEL.tflite --board mps2_an386" in line


# ---------------------------------------------------------------- flash.command: programming the board

RECORDER = """\
import json, sys
with open(sys.argv[1], "w") as f:
    json.dump(sys.argv[2:], f)
"""
FAILING = """\
import sys
print("Open On-Chip Debugger 0.12.0", file=sys.stderr)
print("Error: open failed", file=sys.stderr)
print("** OpenOCD init failed **", file=sys.stderr)
sys.exit(1)
"""


def board_with_flash(folder: Path, command: str, name: str = "mps2_an386") -> Path:
    """``boards/<name>.yaml`` with ``flash: command:`` added, in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    text = (ROOT / "boards" / f"{name}.yaml").read_text()
    at = text.index("\nflash:\n") + len("\nflash:\n")
    path = folder / f"{name}.yaml"
    path.write_text(text[:at] + f"  command: {json.dumps(command)}\n" + text[at:])
    return path


def test_a_flash_command_that_fails_is_one_error_naming_the_board_file_and_its_stderr(tmp_path: Path) -> None:
    """The command really runs (a script standing in for OpenOCD, no probe here): exit status 1 ->
    ArenaError, exit 2, one line with the board file, the field and the command's last stderr lines."""
    from arena_tool.target import boards

    (tmp_path / "openocd.py").write_text(FAILING)
    path = board_with_flash(tmp_path / "b", f"{sys.executable} {tmp_path / 'openocd.py'} -c \"program {{elf}} exit\"")
    board = boards.load_board_file(str(path))
    assert board.flash_command is not None and boards.Board.from_json(board.to_json(), board.file) == board
    (tmp_path / "validate.elf").write_bytes(b"\x7fELF")
    log = __import__("io").StringIO()
    with pytest.raises(ArenaError) as err:
        validate.flash(board, str(tmp_path / "validate.elf"), log)
    text = err.value.render()
    assert err.value.exit_code == 2 and "\n" not in text.strip(), text
    assert str(path) in text and "flash.command" in text
    assert "the flash command failed (exit status 1): Open On-Chip Debugger 0.12.0 | Error: open failed | " \
           "** OpenOCD init failed **" in text
    assert f"program {tmp_path / 'validate.elf'} exit" in log.getvalue()  # {elf} replaced inside the quoted word
    with pytest.raises(ArenaError, match="not installed"):
        validate.flash(boards.load_board_file(str(board_with_flash(tmp_path / "c", "no-such-programmer {elf}"))),
                       str(tmp_path / "validate.elf"), log)


@pytest.mark.parametrize("command, words", [
    ("openocd -f board/st_nucleo_f7.cfg", "names no firmware: it must hold {elf} or {hex}"),
    ("pyocd flash \"{elf}", "does not split into words"),
])
def test_a_flash_command_is_checked_when_the_board_file_is_read(tmp_path: Path, command: str, words: str) -> None:
    from arena_tool.target import boards

    path = board_with_flash(tmp_path, command)
    with pytest.raises(ArenaError) as err:
        boards.load_board_file(str(path))
    assert words in err.value.msg and "flash" in err.value.render() and str(path) in err.value.render()


@pytest.mark.slow
def test_the_flash_command_programs_the_board_before_it_is_validated(project: Path) -> None:
    """A board file's flash.command runs (its arguments recorded: the ELF's path, an Intel hex made
    from it, a quoted word kept whole), then the board is validated over its port; --port qemu
    runs none (QEMU loads the ELF)."""
    board_with_flash(project / "flashboards", f"{sys.executable} record.py args.json {{elf}} {{hex}} \"a b\"")
    (project / "record.py").write_text(RECORDER)
    common = ["--board", "mps2_an386", "--board-dir", "flashboards", "--out", "build_flash", "--count", "1"]
    p = cli(project, "validate", "arena.yaml", "--port", "qemu", *common)
    assert p.returncode == 0 and not (project / "args.json").exists(), p.stdout + p.stderr
    elf = project / "build_flash" / "mps2_an386" / "validate.elf"
    qemu = validate.Qemu(str(elf), "mps2-an386")
    try:
        p = cli(project, "validate", "arena.yaml", "--port", f"tcp:127.0.0.1:{qemu.tcp}", *common)
    finally:
        qemu.close()
    assert p.returncode == 0, p.stdout + p.stderr
    args = json.loads((project / "args.json").read_text())
    assert args == [str(elf), str(elf.with_suffix(".hex")), "a b"]
    assert elf.with_suffix(".hex").read_text().startswith(":")  # Intel hex
    assert f"Flashing build_flash/mps2_an386/validate.elf: {sys.executable} record.py args.json {elf}" in p.stderr
    assert "match: every output of 1 inferences" in p.stdout


# ---------------------------------------------------------------- the STM32 USART drivers

# QEMU 7.2's netduinoplus2 (STM32F405: the SR/DR USART, USART1 on -serial 0) as a board file: the
# STM32 driver through the same TCP serial path as the MPS2 boards' UART. QEMU models no RCC and
# GPIO (their writes are ignored) and no baud rate; the setup writes are the real part's.
NETDUINO = """\
name: netduinoplus2
description: Netduino Plus 2 (STM32F405RG), as emulated by QEMU 7.2 (-M netduinoplus2)
source: ST RM0090 (STM32F405 memory map, RCC, GPIO, USART1); QEMU hw/arm/stm32f405_soc.c (USART1 on serial 0)
cpu: {core: cortex-m4, fpu: fpv4-sp-d16, float_abi: hard, clock_hz: 168000000, irqs: 82}
flash: {origin: 0x08000000, length: 1M}
ram:
  - {name: SRAM, origin: 0x20000000, length: 128K, zero_wait: true, cacheable: false, dma: true, executable: true}
default_region: SRAM
qemu: netduinoplus2
uart:
  kind: stm32f4_usart
  base: 0x40011000
  baud: 115200
  clock_hz: 16000000
  rx_irq: 37
  setup:
    - {address: 0x40023830, value: 0x00000001}
    - {address: 0x40023844, value: 0x00000010}
    - {address: 0x40020000, mask: 0x003C0000, value: 0x00280000}
    - {address: 0x40020024, mask: 0x00000FF0, value: 0x00000770}
"""


@pytest.mark.slow
def test_the_stm32_usart_driver_validates_under_qemu_netduinoplus2(project: Path) -> None:
    """kind: stm32f4_usart (SR/DR registers, RXNE interrupt into a ring) on QEMU's STM32F405: every
    output equals onnxruntime's, over the same TCP serial socket as the MPS2 boards."""
    (project / "stm32boards").mkdir(exist_ok=True)
    (project / "stm32boards" / "netduinoplus2.yaml").write_text(NETDUINO)
    (project / "stm32.yaml").write_text("board_dirs: [stm32boards]\nmodels:\n  - {name: kws_int8, path: kws_int8.onnx}\n"
                                        "boards: [netduinoplus2]\n")
    p = cli(project, "validate", "stm32.yaml", "--board", "netduinoplus2", "--port", "qemu", "--count", "3",
            "--json", "stm32.json")
    assert p.returncode == 0, p.stdout + p.stderr
    doc = json.loads((project / "stm32.json").read_text())
    (m,) = doc["models"]
    assert [(o["exact_matches"], o["mismatches"]) for o in m["outputs"]] == [(3, 0)]
    assert m["count"]["min"] > 0 and doc["link"]["naks"] == 0 and doc["link"]["bad_crc"] == 0


@pytest.mark.slow
def test_the_nucleo_boards_validation_firmware_builds_with_their_usart(project: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The shipped nucleo boards' uart: (kind stm32_usart or stm32_lpuart: ISR/RDR/TDR) and
    flash.command: their validation firmware compiles and links with the STM32 receiver (its
    interrupt's ring); no STM32F7/G4/H7/L4 runs here (QEMU 7.2 has none), so those drivers are
    proven by compiling only (the build graph's test checks the defines: kind, base, clock, setup)."""
    from arena_tool import build_steps
    from arena_tool.core import files
    from arena_tool.target import boards

    monkeypatch.chdir(project)
    names = ["nucleo_f746", "nucleo_g474re", "nucleo_h743", "nucleo_l432kc", "nucleo_l4r5zi"]
    (project / "nucleo.yaml").write_text("models:\n  - {name: kws_int8, path: kws_int8.onnx}\nboards: [" +
                                         ", ".join(names) + "]\n")
    for name in names:
        board = boards.load_board(name, boards.board_dirs())
        assert board.uart is not None and board.flash_command is not None
        assert board.uart.kind == ("stm32_lpuart" if name in ("nucleo_g474re", "nucleo_l4r5zi") else "stm32_usart")
        try:
            built = build_steps.validate_firmware("nucleo.yaml", name, "build_nucleo")
        finally:
            files.release_build_lock("build_nucleo")
        symbols = subprocess.run(["arm-none-eabi-nm", built.elf], capture_output=True, text=True, check=True).stdout
        names_in = {line.split()[-1] for line in symbols.splitlines()}
        assert {"uart_rx_handler", "ring"} <= names_in, name  # the STM32 receiver's ring (rx_irq)
