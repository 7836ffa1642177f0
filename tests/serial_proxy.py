"""A TCP proxy between ``arena-tool validate`` and the board's serial socket (QEMU's UART0) that
damages frames on purpose: the link faults the validation protocol must survive.

Both directions are cut into the protocol's frames (``0xA5 0x5A type seq length payload crc``);
bytes between frames (the host's flush) pass as they are. A frame picked by ``damage`` (its
index over both directions, from 0) is forwarded with one fault: ``drop`` leaves out one byte,
``flip`` inverts one bit, ``truncate`` forwards only its first half. ``silent_after``: after that
many board-to-host frames the board's replies stop (a board that stopped answering).
"""

from __future__ import annotations

import random
import socket
import struct
import threading
import time
from collections.abc import Callable

SYNC = b"\xa5\x5a"
FAULTS = ("drop", "flip", "truncate")


class Proxy:
    def __init__(self, upstream: int, damage: Callable[[int], str | None] = lambda i: None,
                 silent_after: int | None = None, seed: int = 0) -> None:
        self.upstream = upstream
        self.damage = damage
        self.silent_after = silent_after
        self.rng = random.Random(seed)
        self.frames = 0
        self.replies = 0
        self.damaged: dict[str, int] = {f: 0 for f in FAULTS}
        self.lock = threading.Lock()
        self.server = socket.socket()
        self.server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(1)
        self.port = self.server.getsockname()[1]
        self.threads: list[threading.Thread] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        client, _ = self.server.accept()
        for _ in range(200):  # QEMU may still be starting
            try:
                board = socket.create_connection(("127.0.0.1", self.upstream))
                break
            except OSError:
                time.sleep(0.05)
        else:
            client.close()
            return
        for src, dst, to_host in ((client, board, False), (board, client, True)):
            t = threading.Thread(target=self._pump, args=(src, dst, to_host), daemon=True)
            t.start()
            self.threads.append(t)

    def _fault(self, data: bytes) -> bytes:
        with self.lock:
            index = self.frames
            self.frames += 1
            kind = self.damage(index)
            if kind is None:
                return data
            self.damaged[kind] += 1
            at = self.rng.randrange(len(data))
        if kind == "drop":
            return data[:at] + data[at + 1:]
        if kind == "flip":
            return data[:at] + bytes([data[at] ^ (1 << self.rng.randrange(8))]) + data[at + 1:]
        return data[:len(data) // 2]

    def _pump(self, src: socket.socket, dst: socket.socket, to_host: bool) -> None:
        buf = bytearray()
        try:
            while True:
                chunk = src.recv(65536)
                if not chunk:
                    break
                buf += chunk
                out = bytearray()
                while buf:
                    at = buf.find(SYNC)
                    if at != 0:  # bytes between frames pass as they are
                        n = len(buf) - 1 if at < 0 else at
                        out += buf[:n]
                        del buf[:n]
                        if at < 0:
                            break
                        continue
                    if len(buf) < 8:
                        break
                    length = struct.unpack_from("<I", buf, 4)[0]
                    if length > 1 << 20:  # not a frame
                        out += buf[:2]
                        del buf[:2]
                        continue
                    if len(buf) < 12 + length:
                        break
                    whole = bytes(buf[:12 + length])
                    del buf[:12 + length]
                    if to_host:
                        self.replies += 1
                        if self.silent_after is not None and self.replies > self.silent_after:
                            continue
                    out += self._fault(whole)
                if out:
                    dst.sendall(bytes(out))
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self) -> None:
        self.server.close()


def every(n: int, offset: int = 0) -> Callable[[int], str | None]:
    """Damage every n-th frame, the faults in turn."""
    return lambda i: FAULTS[(i // n) % len(FAULTS)] if i % n == offset else None


def fraction(p: float, seed: int = 1) -> Callable[[int], str | None]:
    """Damage each frame with probability p (seeded), the fault picked at random."""
    rng = random.Random(seed)
    return lambda i: rng.choice(FAULTS) if rng.random() < p else None
