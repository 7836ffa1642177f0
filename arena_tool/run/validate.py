"""``arena-tool validate``: a data set through the validation firmware over a serial port, every
output compared with onnxruntime (a .tflite's with TFLite Micro's host interpreter, bit for bit),
the time measured on the target.

The firmware (``arena_tool/runtime/validate/main.c``, built as ``build/<board>/validate.elf`` by
the build graph) speaks the framed protocol its header describes: ``0xA5 0x5A type seq length
payload crc32``. This is the host's side (``Link``): every request gets a fresh sequence number
and only the reply carrying it counts; a reply that fails its CRC, arrives short or does not
arrive within ``attempt`` seconds makes the host end whatever the firmware may still be reading
(``FLUSH`` zero bytes: they complete a partial frame, whose CRC then fails, and are skipped while
it looks for a sync) and send the request again. Inputs go in chunks the firmware acknowledges,
and a repeated run request gets the same result again without a second inference, so a repeat
never changes what is compared. No valid reply for ``timeout`` seconds: the board stopped
answering (``NoAnswer``, exit 2). A reply with a valid CRC that makes no sense (a wrong length,
another model's result, an error frame): ``ArenaError``, exit 2.

Ports: a serial device (``/dev/ttyACM0``), any pyserial URL (``socket://HOST:PORT``,
``rfc2217://``...), ``tcp:HOST:PORT`` (``socket://``), or ``qemu``: the board's QEMU machine
started here with UART0 on a local TCP socket (``-icount shift=0``), so a CI run validates exactly
what a board would run.

Time: DWT CYCCNT cycles where the core has them; else SysTick ticks, as instructions under QEMU
(``runreport.instructions``: 40 per tick at 25 MHz with ``-icount shift=0``), the same count
``arena-tool run`` reports for the same input.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import shlex
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TextIO

import numpy as np

from arena_tool.core.errors import EXIT_CHECK_FAILED, EXIT_OK, ArenaError, require_regular
from arena_tool.core.files import project_path, write_atomic
from arena_tool.core.schema import check_json
from arena_tool.emit import tileloop
from arena_tool.plan import plancheck
from arena_tool.model import tflite_model
from arena_tool.run import reference, runreport, tflm_host
from arena_tool.run.verify import NUMPY_TYPES

if TYPE_CHECKING:
    import serial

    from arena_tool.plan.planfile import PlanFile
    from arena_tool.target.boards import Board
    from arena_tool.target.manifest_data import ModelSpec

SYNC = b"\xa5\x5a"
MAX_FRAME = 1024  # the firmware's VALIDATE_MAX_FRAME: payload bytes of one host frame
FLUSH = bytes(MAX_FRAME + 16)
CHUNK = MAX_FRAME - 8  # input bytes per 'I' frame
MAX_REPLY = 64 << 20  # a reply longer than this is not the firmware's
TIMER_DWT, TIMER_SYSTICK = 1, 2
DTYPES = {0: "float32", 1: "int8", 2: "uint8", 3: "int32", 4: "int64"}
FORMAT_VERSION = 1
TIMEOUT = 20.0
ATTEMPT = 2.0


class NoAnswer(ArenaError):
    """The board stopped answering: no valid reply within the timeout (exit 2)."""


@dataclasses.dataclass
class Stats:
    """What the link saw: frames sent, replies received, and what went wrong on the way."""

    sent: int = 0
    received: int = 0
    retries: int = 0  # requests sent again
    bad_crc: int = 0  # replies whose CRC failed
    short: int = 0  # replies cut off (or none) within the attempt's time
    naks: int = 0  # the firmware's 'n': it received a damaged frame
    stale: int = 0  # valid replies to an earlier request, skipped

    def to_json(self) -> dict[str, int]:
        return dataclasses.asdict(self)


def crc(data: bytes) -> int:
    return zlib.crc32(data) & 0xFFFFFFFF


def frame(kind: bytes, seq: int, payload: bytes) -> bytes:
    """One frame: sync, type, seq, length, payload, CRC-32 of everything after the sync."""
    body = kind + bytes([seq & 0xFF]) + struct.pack("<I", len(payload)) + payload
    return SYNC + body + struct.pack("<I", crc(body))


def serial_url(port: str) -> str:
    """The pyserial URL of ``--port``: ``tcp:HOST:PORT`` is ``socket://HOST:PORT``; a device
    path or a URL stays as given."""
    if port.startswith("tcp:"):
        rest = port[4:]
        host, _, number = rest.rpartition(":")
        if not host or not number.isdigit():
            raise ArenaError(f"'{port}' is not tcp:HOST:PORT", field="--port", hint="like tcp:127.0.0.1:5555")
        return f"socket://{host}:{number}"
    return port


def open_port(port: str, baud: int, connect_for: float = 0.0) -> serial.SerialBase:
    """The serial port (pyserial) of ``port`` at ``baud``; ``connect_for``: seconds to keep
    trying a socket that does not listen yet (QEMU starting)."""
    try:
        import serial
    except ImportError as e:
        raise ArenaError("pyserial is not installed: arena-tool validate talks to the board with it",
                         field="--port", hint="pip install 'arena-tool[validate]'") from e
    url = serial_url(port)
    end = time.monotonic() + connect_for
    while True:
        try:
            return serial.serial_for_url(url, baudrate=baud, timeout=0.05, write_timeout=10)
        except (serial.SerialException, ValueError, OSError) as e:
            if time.monotonic() < end:
                time.sleep(0.05)
                continue
            raise ArenaError(f"cannot open the port: {e}", field="--port",
                             hint="a serial device (/dev/ttyACM0), tcp:HOST:PORT, socket://HOST:PORT, "
                                  "or qemu") from None


class Link:
    """The host's side of the protocol over an open pyserial port (see the module docstring)."""

    def __init__(self, port: Any, timeout: float = TIMEOUT, attempt: float = ATTEMPT, name: str = "") -> None:
        self.port = port
        self.timeout = timeout
        self.attempt = attempt
        self.name = name
        self.seq = 0
        self.stats = Stats()
        self._buf = bytearray()

    def _fill(self, need: int, deadline: float) -> bool:
        while len(self._buf) < need:
            if time.monotonic() > deadline:
                return False
            try:
                chunk = self.port.read(max(1, min(need - len(self._buf), 65536)))
            except Exception as e:  # noqa: BLE001 - pyserial's and the socket's own errors
                raise NoAnswer(f"the port failed: {e}", field="--port") from None
            if chunk:
                self._buf += chunk
        return True

    def _frame(self, deadline: float) -> tuple[int, int, bytes] | str:
        """The next frame: (type, seq, payload), or why none: 'short' (time ran out), 'crc'."""
        while True:
            if not self._fill(2, deadline):
                return "short"
            at = self._buf.find(SYNC)
            if at < 0:
                del self._buf[:-1]
                continue
            del self._buf[:at]
            if not self._fill(8, deadline):
                return "short"
            length = struct.unpack_from("<I", self._buf, 4)[0]
            if length > MAX_REPLY:  # a damaged header: look for the next sync
                del self._buf[:2]
                return "crc"
            if not self._fill(12 + length, deadline):
                return "short"
            body = bytes(self._buf[2:8 + length])
            want = struct.unpack_from("<I", self._buf, 8 + length)[0]
            if crc(body) != want:
                del self._buf[:2]
                return "crc"
            del self._buf[:12 + length]
            return body[0], body[1], body[6:]

    def request(self, kind: bytes, payload: bytes, limit: int = MAX_REPLY, wait: float | None = None) -> tuple[bytes, bytes]:
        """Send a request until its reply arrives whole: (reply type, payload). NoAnswer when no
        valid frame came back for ``timeout`` seconds; ArenaError for an error frame."""
        last_valid = time.monotonic()
        damaged = 0  # replies since the last valid one that failed their CRC
        first = True
        while True:
            self.seq = (self.seq + 1) & 0xFF
            if not first:
                self.stats.retries += 1
                self.write(FLUSH)
                time.sleep(0.05)
                self._drain()
            first = False
            self.write(frame(kind, self.seq, payload))
            self.stats.sent += 1
            deadline = time.monotonic() + (wait if wait is not None else self.attempt)
            while True:
                got = self._frame(min(deadline, last_valid + self.timeout))
                if got == "short":
                    self.stats.short += 1
                    break
                if got == "crc":
                    self.stats.bad_crc += 1
                    damaged += 1
                    continue  # the reply may still come whole after the damage
                assert not isinstance(got, str)
                rtype, rseq, body = got
                last_valid = time.monotonic()
                damaged = 0
                self.stats.received += 1
                if rseq != self.seq:
                    self.stats.stale += 1
                    continue
                if rtype == ord("n"):
                    self.stats.naks += 1
                    break
                if len(body) > limit:
                    raise ArenaError(f"the board's reply to {kind.decode()!r} has {len(body)} bytes, more than the "
                                     f"{limit} it can have", field="--port",
                                     hint="the firmware is not the manifest's: build and flash validate.elf")
                if rtype == ord("e"):
                    text = body[1:].decode("ascii", "replace")
                    raise ArenaError(f"the board refused a request: {text} (code {body[0] if body else '?'})",
                                     field="--port", hint="the firmware is not the manifest's: build and flash "
                                                          "the board's validate.elf again")
                return bytes([rtype]), body
            if time.monotonic() - last_valid > self.timeout:
                why = f" ({damaged} replies failed their CRC)" if damaged else ""
                raise NoAnswer(f"the board stopped answering: no valid reply in {self.timeout:g} s"
                               + (f" on {self.name}" if self.name else "") + why, field="--port",
                               hint="check the port, the baud rate and that the board runs validate.elf "
                                    "(--timeout S waits longer)")

    def write(self, data: bytes) -> None:
        try:
            self.port.write(data)
            self.port.flush()
        except Exception as e:  # noqa: BLE001 - pyserial's and the socket's own errors
            raise NoAnswer(f"the board stopped answering: writing to the port failed: {e}", field="--port") from None

    def _drain(self) -> None:
        """Drop what arrived so far (replies to requests that will be sent again)."""
        self._buf.clear()
        try:
            while self.port.read(65536):
                pass
        except Exception:  # noqa: BLE001 - a closed port shows at the next write
            pass


# --- the firmware's description of itself ----------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Tensor:
    bytes: int
    dtype: str


@dataclasses.dataclass(frozen=True)
class FwModel:
    name: str
    inputs: tuple[Tensor, ...]
    outputs: tuple[Tensor, ...]
    ops: int


@dataclasses.dataclass(frozen=True)
class Info:
    version: int
    timer: int
    profile: bool
    max_frame: int
    clock_hz: int
    models: tuple[FwModel, ...]


def parse_info(body: bytes) -> Info:
    """The 'h' reply; ArenaError when it does not parse (not arena's validation firmware)."""
    try:
        version, timer, profile, count, max_frame, clock = struct.unpack_from("<BBBBII", body, 0)
        at = 12
        models = []
        for _ in range(count):
            n = body[at]
            name = body[at + 1:at + 1 + n].decode("ascii")
            at += 1 + n
            n_in, n_out, n_ops = struct.unpack_from("<BBH", body, at)
            at += 4
            tensors = []
            for _ in range(n_in + n_out):
                size, dt = struct.unpack_from("<IB", body, at)
                at += 5
                tensors.append(Tensor(size, DTYPES.get(dt, "other")))
            models.append(FwModel(name, tuple(tensors[:n_in]), tuple(tensors[n_in:]), n_ops))
        if at != len(body):
            raise ValueError(f"{len(body) - at} bytes after the last model")
    except (struct.error, IndexError, UnicodeDecodeError, ValueError) as e:
        raise ArenaError(f"the board's hello reply does not parse ({e}): it does not run arena's validation "
                         "firmware", field="--port", hint="flash build/<board>/validate.elf") from None
    return Info(version, timer, bool(profile), max_frame, clock, tuple(models))


@dataclasses.dataclass(frozen=True)
class Result:
    status: int
    failed_op: int
    count: int
    op_counts: tuple[int, ...]
    outputs: tuple[bytes, ...]


def parse_result(body: bytes, index: int, model: FwModel) -> Result:
    """The 'r' reply for model ``index``; ArenaError for one of another model or a wrong length."""
    if len(body) < 16:
        raise ArenaError(f"the board's result for {model.name} has {len(body)} bytes, fewer than its 16-byte "
                         "header", field="--port", hint="the firmware is not arena's validation firmware")
    m, status, _timer, _, failed, count, n = struct.unpack_from("<BBBBiII", body, 0)
    if m != index:
        raise ArenaError(f"the board answered with a result of model #{m} to a run of {model.name} (#{index})",
                         field="--port", hint="the firmware is not the manifest's: build and flash validate.elf")
    want = 16 + 4 * n + (sum(t.bytes for t in model.outputs) if status == 0 else 0)
    if len(body) != want or n > model.ops:
        raise ArenaError(f"the board's result for {model.name} has {len(body)} bytes, its outputs need {want}",
                         field="--port", hint="the firmware is not the manifest's: build and flash validate.elf")
    counts = struct.unpack_from(f"<{n}I", body, 16)
    at = 16 + 4 * n
    outs = []
    if status == 0:
        for t in model.outputs:
            outs.append(body[at:at + t.bytes])
            at += t.bytes
    return Result(status, failed, count, tuple(counts), tuple(outs))


# --- programming the board ---------------------------------------------------------------------------

FLASH_TIMEOUT = 300.0


def flash_argv(command: str, elf: str) -> list[str]:
    """The board file's ``flash.command`` as an argument list, ``{elf}`` and ``{hex}`` replaced in
    each word by the firmware's absolute paths (an Intel hex beside the ELF, made by objcopy when
    the command names it). Split before the paths go in, so a path with spaces stays one word."""
    paths = {"{elf}": os.path.abspath(elf)}
    if "{hex}" in command:
        paths["{hex}"] = os.path.abspath(os.path.splitext(elf)[0] + ".hex")
        try:
            made = subprocess.run(["arm-none-eabi-objcopy", "-O", "ihex", elf, paths["{hex}"]], capture_output=True,
                                  text=True, errors="replace", timeout=60)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise ArenaError(f"cannot make the Intel hex flash.command names: {e}", file=elf, field="flash.command",
                             hint="install arm-none-eabi-objcopy (binutils-arm-none-eabi), or program {elf}") from None
        if made.returncode != 0:
            raise ArenaError(f"arm-none-eabi-objcopy -O ihex failed: {_tail(made.stderr)}", file=elf,
                             field="flash.command", exit_code=3, hint="this is an arena bug; please report it")
    words = shlex.split(command)
    for key, path in paths.items():
        words = [w.replace(key, path) for w in words]
    return words


def _tail(text: str, lines: int = 3, chars: int = 400) -> str:
    """The last lines of a command's output, on one line."""
    kept = [ln.strip() for ln in text.splitlines() if ln.strip()][-lines:]
    return " | ".join(kept)[-chars:] or "(nothing on stderr)"


def flash(board: Board, elf: str, err: TextIO) -> None:
    """Program the board with ``elf`` by its board file's ``flash.command`` (OpenOCD, pyOCD,
    STM32CubeProgrammer...): run, not through a shell, within FLASH_TIMEOUT s. A command that is
    not found, fails or hangs is one ArenaError (exit 2) naming the board file and the command's
    last stderr lines: validating a board that runs an older firmware would compare the wrong one."""
    assert board.flash_command is not None
    argv = flash_argv(board.flash_command, elf)
    err.write(f"Flashing {elf}: {shlex.join(argv)}\n")
    err.flush()
    file, field = board.file or board.name, "flash.command"
    hint = f"run it by hand to see why (is the probe connected?): {shlex.join(argv)}"
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, errors="replace",
                              timeout=FLASH_TIMEOUT)
    except FileNotFoundError:
        raise ArenaError(f"the flash command {argv[0]!r} is not installed (or not on PATH)", file=file, field=field,
                         hint=f"install it, or change flash.command in {board.file or 'the board file'}") from None
    except subprocess.TimeoutExpired as e:
        out = e.stderr.decode("utf-8", "replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
        raise ArenaError(f"the flash command did not finish in {FLASH_TIMEOUT:g} s: {_tail(out)}", file=file, field=field,
                         hint=hint) from None
    except OSError as e:
        raise ArenaError(f"cannot run the flash command: {e}", file=file, field=field, hint=hint) from None
    if done.returncode != 0:
        raise ArenaError(f"the flash command failed (exit status {done.returncode}): "
                         f"{_tail(done.stderr or done.stdout)}", file=file, field=field, hint=hint)


# --- QEMU as the board --------------------------------------------------------------------------------

class Qemu:
    """The board's QEMU machine running ``elf`` (-icount shift=0) with UART0 on a local TCP socket."""

    def __init__(self, elf: str, machine: str) -> None:
        self.log = tempfile.TemporaryFile()
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.tcp = s.getsockname()[1]
        cmd = ["qemu-system-arm", "-M", machine, "-icount", "shift=0", "-display", "none", "-monitor", "none",
               "-semihosting", "-serial", f"tcp:127.0.0.1:{self.tcp},server=on,wait=off,nodelay=on", "-kernel", elf]
        try:
            self.proc: subprocess.Popen[bytes] = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=self.log,
                                                                  stderr=subprocess.STDOUT)
        except OSError as e:
            raise ArenaError(f"cannot start qemu-system-arm: {e}", field="--port",
                             hint="apt-get install qemu-system-arm, or give the board's serial port") from None
        self.port = f"socket://127.0.0.1:{self.tcp}"

    def output(self) -> str:
        self.log.seek(0)
        return self.log.read().decode("utf-8", "replace")

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.log.close()


# --- inputs, reference and metrics ----------------------------------------------------------------------

@dataclasses.dataclass
class ModelRun:
    """One model of the board: its spec, plan, what the firmware computes from what."""

    index: int
    spec: ModelSpec
    plan: PlanFile
    fw: FwModel
    in_specs: list[reference.TensorSpec]
    to_firmware: Callable[[Sequence[np.ndarray]], list[tuple[str, np.ndarray]]]
    compared: list[tuple[str, str, float | None]]  # (output, dtype, quantization step) as compared
    from_firmware: Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]]
    # the reference's outputs for every input set: onnxruntime, or TFLite Micro's host interpreter
    expected: Callable[[Sequence[Sequence[np.ndarray]]], list[dict[str, np.ndarray]]]
    fw_outputs: list[reference.TensorSpec]
    exact: bool = False  # a .tflite against TFLM: every element equal (arena-tool run's rule)

    @property
    def reference_name(self) -> str:
        return "TFLite Micro's host interpreter" if self.exact else "onnxruntime"


def prepare(index: int, spec: ModelSpec, plan: PlanFile, fw: FwModel) -> ModelRun:
    """What validating one model needs: its inputs' specs, the firmware's I/O (io: int8 too), one
    onnxruntime session for every input set; a .tflite (lowered onto arena's runtime) is compared
    with TFLite Micro's host interpreter bit for bit, as ``arena-tool run MODEL.tflite`` does."""
    lowered = plancheck.lowered_model(spec.path, plan)
    tflite = lowered.graph.model is None and tflite_model.is_tflite(spec.path)
    io = reference.IntegerIO.of(spec.path, plan) if plan.options.io == "int8" and not tflite else None
    fw_outputs = reference.graph_specs(plan, list(lowered.outputs))
    if io is not None:
        in_specs = io.specs
        names = [*lowered.outputs, *(b.model for b in io.outputs)]
        source = io.lowered
    else:
        in_specs = reference.graph_specs(plan, list(lowered.inputs))
        names = list(lowered.outputs)
        source = lowered
    compared = [(n, s.dtype, reference.quant_step(lowered, plan, n)) for n, s in zip(lowered.outputs, fw_outputs)]
    if io is not None:
        compared += [(b.model, "float32", float(b.quant.scale[0])) for b in io.outputs]
    if tflite:
        def expected(sets: Sequence[Sequence[np.ndarray]]) -> list[dict[str, np.ndarray]]:
            """TFLM on every set in one child process (a process per inference would cost more
            than the inference's transfer)."""
            if not sets:
                return []
            ran = tflm_host.run_tflm(tflite_model.read_bytes(spec.path), spec.path, sets)
            return [dict(zip(lowered.outputs, outs)) for outs in ran.outputs]
    else:
        session = reference.reference_session(spec.path, names, source)

        def expected(sets: Sequence[Sequence[np.ndarray]]) -> list[dict[str, np.ndarray]]:
            return [session({s.name: a for s, a in zip(in_specs, inputs)}) for inputs in sets]

    def to_fw(inputs: Sequence[np.ndarray]) -> list[tuple[str, np.ndarray]]:
        return io.quantize(inputs) if io is not None else [(s.name, a) for s, a in zip(in_specs, inputs)]

    def from_fw(outs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        if io is not None:
            for edge, value in zip(io.outputs, io.dequantize(outs)):
                outs[edge.model] = value
        return outs

    expect = [(s.dtype, s.shape) for s in reference.graph_specs(plan, list(lowered.inputs))]
    got_in = [(t.dtype, t.bytes) for t in fw.inputs]
    want_in = [(d, int(np.prod(sh, dtype=np.int64)) * np.dtype(NUMPY_TYPES[d]).itemsize) for d, sh in expect]
    want_out = [(s.dtype, int(np.prod(s.shape, dtype=np.int64)) * np.dtype(NUMPY_TYPES[s.dtype]).itemsize)
                for s in fw_outputs]
    if got_in != want_in or [(t.dtype, t.bytes) for t in fw.outputs] != want_out:
        raise ArenaError(f"the board's model {fw.name} takes and gives other tensors than the manifest's "
                         f"{spec.name} plans", field="--port",
                         hint="the board runs another build: flash this build's validate.elf")
    return ModelRun(index, spec, plan, fw, in_specs, to_fw, compared, from_fw, expected, fw_outputs, exact=tflite)


def input_sets(run: ModelRun, data: str | None, sample: str | None, count: int | None,
               seed: int) -> tuple[str, list[list[np.ndarray]]]:
    """(what the inputs are, the input sets) of one model: the --data file's arrays (a leading
    dimension of N sets, or one set), else the manifest's inputs: sample, else seeded random."""
    if data is not None:
        sets = data_sets(data, run.in_specs)
        if count is not None:
            if count > len(sets):
                raise ArenaError(f"--count {count}, but the data set holds {len(sets)} input sets", file=data,
                                 field="--count", hint=f"give --count {len(sets)} or less")
            sets = sets[:count]
        return f"{project_path(data)} ({len(sets)} sets)", sets
    if sample is not None:
        one = reference.load_inputs(sample, run.in_specs)
        return f"{sample} (the manifest's inputs:)", [one] * (count or 1)
    n = count or 10
    return f"seeded random (seeds {seed}..{seed + n - 1})", [reference.random_inputs(run.in_specs, seed + i)
                                                             for i in range(n)]


def data_sets(path: str, specs: Sequence[reference.TensorSpec]) -> list[list[np.ndarray]]:
    """The sets of an .npz data set: per graph input name an array of N sets (shape [N, *input])
    or of one (the input's shape)."""
    import zipfile

    require_regular(path, "the data set", "--data")
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: np.asarray(z[k]) for k in z.files}
    except FileNotFoundError:
        raise ArenaError("data set file not found", file=path, field="--data") from None
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as e:
        raise ArenaError(f"cannot read it as an .npz archive: {e}", file=path, field="--data",
                         hint="numpy.savez(FILE, input_name=array of [N, *shape])") from None
    n: int | None = None
    per: list[np.ndarray] = []
    for s in specs:
        if s.name not in arrays:
            raise ArenaError(f"no array for graph input {s.name!r}", file=path, field="--data",
                             hint=f"the model's inputs are {', '.join(x.describe() for x in specs)}")
        a = arrays[s.name]
        if str(a.dtype) != s.dtype:
            raise ArenaError(f"array {s.name!r} is {a.dtype}, the model takes {s.dtype}", file=path, field=s.name)
        if tuple(a.shape) == s.shape:
            a = a[None]
        if tuple(a.shape[1:]) != s.shape:
            raise ArenaError(f"array {s.name!r} has shape {list(a.shape)}; expected [N, {', '.join(map(str, s.shape))}]",
                             file=path, field=s.name)
        if n is not None and a.shape[0] != n:
            raise ArenaError(f"array {s.name!r} holds {a.shape[0]} sets, another input {n}", file=path, field=s.name)
        n = a.shape[0]
        per.append(a)
    return [[np.ascontiguousarray(a[i]) for a in per] for i in range(n or 0)]


@dataclasses.dataclass
class OutputStats:
    """One output over every inference: how close the board's values are to onnxruntime's."""

    name: str
    dtype: str
    inferences: int = 0
    exact: int = 0  # inferences whose values equal onnxruntime's exactly
    mismatches: int = 0  # beyond arena-tool run's tolerance
    top1: int = 0  # argmax agrees
    max_abs: float = 0.0
    l2_relative: float = 0.0  # the largest ||board - ort|| / ||ort||
    cosine: float = 1.0  # the smallest
    bounds: Mapping[str, float] | None = None  # the manifest's tolerances: (else arena-tool run's)

    def add(self, got: np.ndarray, want: np.ndarray, step: float | None, exact: bool = False) -> None:
        c = reference.compare(self.name, got, want, step, exact=exact)
        g = np.asarray(got, np.float64).reshape(-1)
        w = np.asarray(want, np.float64).reshape(-1)
        self.inferences += 1
        self.exact += int(g.size == w.size and np.array_equal(g, w))
        l2, cos = math.inf, -1.0
        if g.size == w.size and np.array_equal(g, w):
            l2, cos = 0.0, 1.0
            self.top1 += int(g.size > 0)
        elif g.size == w.size and g.size:
            self.top1 += int(int(np.argmax(g)) == int(np.argmax(w)))
            nw, ng = float(np.linalg.norm(w)), float(np.linalg.norm(g))
            diff = float(np.linalg.norm(g - w))
            l2 = diff / nw if nw else (0.0 if diff == 0 else math.inf)
            cos = float(np.dot(g, w) / (ng * nw)) if ng and nw else (1.0 if ng == nw else 0.0)
        self.max_abs = max(self.max_abs, c.max_abs)
        self.l2_relative = max(self.l2_relative, l2)
        self.cosine = min(self.cosine, cos)
        if self.bounds is None:
            self.mismatches += int(not c.ok)
        else:
            b = self.bounds
            self.mismatches += int(c.max_abs > b.get("max_abs_error", math.inf)
                                   or l2 > b.get("l2_relative_error", math.inf) or cos < b.get("cosine", -1.0))

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "dtype": self.dtype, "inferences": self.inferences, "exact_matches": self.exact,
                "mismatches": self.mismatches, "top1_agreement": self.top1, "max_abs_error": _num(self.max_abs),
                "l2_relative_error": _num(self.l2_relative), "cosine": _num(self.cosine)}


def _num(v: float) -> float | None:
    return float(v) if math.isfinite(v) else None


@dataclasses.dataclass
class ModelReport:
    name: str
    inputs: str
    counts: list[int] = dataclasses.field(default_factory=list)  # per inference, in the timer's unit
    op_counts: list[tuple[int, ...]] = dataclasses.field(default_factory=list)
    outputs: list[OutputStats] = dataclasses.field(default_factory=list)
    errors: list[str] = dataclasses.field(default_factory=list)
    tolerance: dict[str, float] | None = None  # the manifest's (None: arena-tool run's)
    reference: str = "onnxruntime"  # what the outputs were compared with

    @property
    def mismatches(self) -> int:
        return max((o.mismatches for o in self.outputs), default=0) + len(self.errors)


def unit(info: Info, board: Board) -> tuple[str, Callable[[int], int]]:
    """The unit reported and the conversion from the firmware's count: DWT cycles as they are,
    SysTick ticks as instructions under QEMU (-icount shift=0), else as core cycles (a tick is
    one cycle of the processor clock)."""
    if info.timer == TIMER_DWT:
        return "cycles", lambda c: c
    if board.qemu and board.cpu.clock_hz:
        clock = board.cpu.clock_hz
        return "instructions", lambda c: runreport.instructions(c, clock)
    return "cycles", lambda c: c


def validate(link: Link, board: Board, specs: Sequence[ModelSpec], plans: Sequence[PlanFile], *,
             data: str | None, samples: Mapping[str, str], count: int | None, seed: int,
             tolerances: Mapping[str, Mapping[str, float]] | None = None,
             progress: TextIO | None = None) -> tuple[Info, list[ModelReport]]:
    """Every model of the board over ``link``; the per-model reports."""
    link.write(FLUSH)  # ends a frame an earlier session left half sent
    _, body = link.request(b"H", b"", limit=1 << 16)
    info = parse_info(body)
    if [m.name for m in info.models] != [s.name for s in specs]:
        raise ArenaError(f"the board runs models {', '.join(m.name for m in info.models) or 'none'}, the manifest "
                         f"plans {', '.join(s.name for s in specs)} for {board.name}", field="--port",
                         hint="build and flash this manifest's validate.elf")
    reports = []
    for i, (spec, plan, fwm) in enumerate(zip(specs, plans, info.models)):
        run = prepare(i, spec, plan, fwm)
        what, sets = input_sets(run, data, samples.get(spec.name), count, seed)
        bounds = (tolerances or {}).get(spec.name)
        rep = ModelReport(spec.name, what, outputs=[OutputStats(n, d, bounds=bounds) for n, d, _ in run.compared],
                          tolerance=dict(bounds) if bounds is not None else None, reference=run.reference_name)
        wants = run.expected(sets)
        for k, (inputs, want) in enumerate(zip(sets, wants)):
            result = infer(link, run, inputs)
            if result.status != 0:
                rep.errors.append(f"input set {k}: arena_run returned {result.status} at op {result.failed_op}")
                continue
            rep.counts.append(result.count)
            if result.op_counts:
                rep.op_counts.append(result.op_counts)
            outs = {s.name: np.frombuffer(b, NUMPY_TYPES[s.dtype]).reshape(s.shape)
                    for s, b in zip(run.fw_outputs, result.outputs)}
            outs = run.from_firmware(outs)
            for st, (name, _, step) in zip(rep.outputs, run.compared):
                st.add(outs[name], want[name], step, exact=run.exact)
            if progress is not None and (k + 1) % 10 == 0:
                progress.write(f"validate {spec.name}: {k + 1}/{len(sets)} inferences\n")
                progress.flush()
        reports.append(rep)
    return info, reports


def infer(link: Link, run: ModelRun, inputs: Sequence[np.ndarray]) -> Result:
    """One inference on the board: each input in chunks, then the run."""
    for k, (_, arr) in enumerate(run.to_firmware(inputs)):
        raw = np.ascontiguousarray(arr).tobytes()
        for at in range(0, max(len(raw), 1), CHUNK):
            part = raw[at:at + CHUNK]
            rtype, _ = link.request(b"I", struct.pack("<BBHI", run.index, k, 0, at) + part, limit=64)
            if rtype != b"a":
                raise ArenaError(f"the board answered {rtype!r} to an input chunk (expected 'a')", field="--port",
                                 hint="the firmware is not arena's validation firmware")
    want = 16 + 4 * run.fw.ops + sum(t.bytes for t in run.fw.outputs)
    rtype, body = link.request(b"R", bytes([run.index]), limit=want, wait=max(link.attempt, link.timeout / 2))
    if rtype != b"r":
        raise ArenaError(f"the board answered {rtype!r} to a run (expected 'r')", field="--port",
                         hint="the firmware is not arena's validation firmware")
    return parse_result(body, run.index, run.fw)


# --- the command ---------------------------------------------------------------------------------------

def _spread(values: Sequence[int]) -> dict[str, int | None]:
    if not values:
        return {"min": None, "median": None, "max": None}
    return {"min": min(values), "median": int(statistics.median_low(values)), "max": max(values)}


def report_doc(manifest: str, board: Board, port: str, info: Info, reports: Sequence[ModelReport],
               link: Link, plans: Sequence[PlanFile], result: str) -> dict[str, Any]:
    """The --json document (schemas/validate.schema.json)."""
    name, conv = unit(info, board)
    models = []
    for rep, plan in zip(reports, plans):
        counts = [conv(c) for c in rep.counts]
        ops = None
        if rep.op_counts:
            rows = tileloop.table_rows(plan)
            ops = [{"index": i, "name": r[0], "op_type": r[1],
                    **_spread([conv(c[i]) for c in rep.op_counts if i < len(c)])} for i, r in enumerate(rows)]
        models.append({"name": rep.name, "inputs": rep.inputs,
                       "reference": "tflm" if rep.reference != "onnxruntime" else "onnxruntime", "inferences": len(rep.counts) + len(rep.errors),
                       "mismatches": rep.mismatches, "errors": rep.errors,
                       "count": _spread(counts), "per_inference": counts,
                       "tolerance": rep.tolerance, "outputs": [o.to_json() for o in rep.outputs], "ops": ops})
    return {"format_version": FORMAT_VERSION, "manifest": project_path(manifest), "board": board.name,
            "port": "qemu" if port == "qemu" else port, "timer": "dwt" if info.timer == TIMER_DWT else "systick",
            "unit": name, "profile": info.profile, "link": link.stats.to_json(), "models": models, "result": result}


def summary(board: Board, port: str, info: Info, reports: Sequence[ModelReport], link: Link,
            plans: Sequence[PlanFile]) -> list[str]:
    name, conv = unit(info, board)
    timer = "DWT CYCCNT" if info.timer == TIMER_DWT else (
        "SysTick (no DWT cycle counter" + (" under QEMU" if board.qemu and port == "qemu" else "") + ")")
    where = f"{board.qemu} under QEMU (-icount shift=0)" if port == "qemu" else port
    lines = [f"validate {board.name} on {where}: time from {timer}, in {name}"]
    for rep in reports:
        tol = ("bit for bit" if rep.tolerance is None and rep.reference != "onnxruntime" else
               "arena-tool run's tolerances" if rep.tolerance is None else "the manifest's tolerances: " + ", ".join(
            f"{k} {'>=' if k == 'cosine' else '<='} {v:g}" for k, v in sorted(rep.tolerance.items())))
        lines.append(f"{rep.name}: {len(rep.counts) + len(rep.errors)} inferences, input {rep.inputs}, against "
                     f"{rep.reference}, {tol}")
        for o in rep.outputs:
            lines.append(f"  output {o.name}: exact {o.exact}/{o.inferences}, mismatches {o.mismatches}, "
                         f"max abs error {o.max_abs:.3e}, L2 relative {o.l2_relative:.3e}, cosine {o.cosine:.6f}, "
                         f"top-1 agreement {o.top1}/{o.inferences}")
        for e in rep.errors:
            lines.append(f"  error: {e}")
        s = _spread([conv(c) for c in rep.counts])
        if s["min"] is not None:
            lines.append(f"  {name} per inference: min {s['min']:,}, median {s['median']:,}, max {s['max']:,}")
    for rep, plan in zip(reports, plans):
        if rep.op_counts:  # --profile: each op's median
            lines.append(f"{rep.name}: {name} per op (median; -DARENA_PROFILE, the inference is their sum)")
            for i, (op, op_type, _) in enumerate(tileloop.table_rows(plan)):
                counts = [conv(c[i]) for c in rep.op_counts if i < len(c)]
                if counts:
                    lines.append(f"  {i:>3}  {op}  {op_type}  {int(statistics.median_low(counts)):,}")
    st = link.stats
    lines.append(f"link: {st.sent} frames sent, {st.retries} sent again ({st.naks} refused by the board, "
                 f"{st.bad_crc} replies with a bad CRC, {st.short} cut off or missing)")
    return lines


def main(manifest: str, board: Board, port: str, specs: Sequence[ModelSpec], plans: Sequence[PlanFile],
         elf: str, *, data: str | None = None, samples: Mapping[str, str] | None = None, count: int | None = None,
         tolerances: Mapping[str, Mapping[str, float]] | None = None,
         seed: int = 0, json_path: str | None = None, timeout: float = TIMEOUT, attempt: float = ATTEMPT,
         out: TextIO | None = None, err: TextIO | None = None) -> int:
    """``arena-tool validate`` once the firmware is built: open the port (or start QEMU), validate,
    print, write --json; 0 every output within tolerance, 1 a mismatch; NoAnswer/ArenaError (2)."""
    out = out or sys.stdout
    err = err or sys.stderr
    assert board.uart is not None, "validate_firmware builds only for boards with a uart"
    qemu: Qemu | None = None
    try:
        if port == "qemu":
            if not board.qemu:
                raise ArenaError(f"board {board.name} has no qemu machine in its board file", field="--port",
                                 hint="give the board's serial port (a device, tcp:HOST:PORT or socket://)")
            qemu = Qemu(elf, board.qemu)
            ser = open_port(qemu.port, board.uart.baud, connect_for=10.0)
        else:
            if board.flash_command is not None:  # QEMU loads the ELF itself; a board is programmed first
                flash(board, elf, err)
            ser = open_port(port, board.uart.baud)
        link = Link(ser, timeout, attempt, name=port)
        try:
            info, reports = validate(link, board, specs, plans, data=data, samples=samples or {}, count=count,
                                     seed=seed, tolerances=tolerances, progress=err)
        finally:
            ser.close()
    except ArenaError:
        if qemu is not None and qemu.proc.poll() is not None:
            err.write(f"arena-tool: validate: QEMU exited with status {qemu.proc.returncode}: "
                      f"{qemu.output().strip()[-500:]}\n")
        raise
    finally:
        if qemu is not None:
            qemu.close()
    bad = sum(r.mismatches for r in reports)
    refs = " and ".join(dict.fromkeys(f"{r.reference}'s" for r in reports)) or "onnxruntime's"
    for line in summary(board, port, info, reports, link, plans):
        print(line, file=out)
    if json_path:
        doc = report_doc(manifest, board, port, info, reports, link, plans, "mismatch" if bad else "match")
        check_json(doc, "validate", json_path)
        try:
            write_atomic(json_path, json.dumps(doc, indent=2) + "\n")
        except ArenaError as e:
            raise e.located(field="--json") from None
        print(f"wrote {json_path}", file=out)
    if bad:
        print(f"arena-tool: {board.name}: error: mismatch: {bad} inference(s) differ from {refs} beyond "
              "their tolerance", file=err)
        return EXIT_CHECK_FAILED
    print(f"match: every output of {sum(len(r.counts) for r in reports)} inferences equals {refs} "
          "within its tolerance", file=out)
    return EXIT_OK

