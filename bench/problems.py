"""Seeded random planning problems shaped like the activations of real networks.

A network here is a chain of ops in stages (resolution halves, channels double,
so tensors shrink stage by stage). Each op writes one output read by the next
op; some outputs also feed a residual add a few ops later (ResNet), some ops
fan out into 2-4 parallel branches joined by a concat (Inception, DenseNet), and
some carry a one-op scratch buffer (im2col). Sizes are multiples of 16 bytes,
lifetimes inclusive op indices. Same (n, seed) -> same Problem, on any machine.

Worked example: ``random_problem(50, 0)`` has exactly 50 buffers; its load bound
is reached by the peak op, usually a residual or concat point.
"""

from __future__ import annotations

import random

from arena_tool.core.problem import Buffer, Problem


MODES = ("network", "tiled")


def random_problem(n: int, seed: int, alignment: int = 16, mode: str = "network") -> Problem:
    """n buffers (n >= 1) from a network-like generator seeded by ``seed``.

    mode 'network' (default) is the chain described above; 'tiled' is the harder
    cut-rectangle shape of ``tiled_problem``.
    """
    if mode == "tiled":
        return tiled_problem(n, seed, alignment)
    if mode != "network":
        raise ValueError(f"mode {mode!r}: expected one of {MODES}")
    rng = random.Random(seed * 1_000_003 + n)
    stages = rng.randint(3, 6)
    base = rng.choice([8, 16, 32, 64, 128]) * 1024  # bytes of the first feature map
    per_stage = max(1, n // stages)
    bufs: list[Buffer] = []
    t = 0
    cur = 0  # index of the tensor the next op reads

    def add(size: float, start: int, end: int) -> int:
        size = max(alignment, -(-int(size) // alignment) * alignment)
        bufs.append(Buffer(f"t{len(bufs)}", size, start, end, alignment))
        return len(bufs) - 1

    def extend(i: int, end: int) -> None:
        b = bufs[i]
        if end > b.end:
            bufs[i] = Buffer(b.name, b.size, b.start, end, b.alignment)

    cur = add(base * rng.choice([0.5, 1, 1]), 0, 0)
    while len(bufs) < n:
        stage = min(len(bufs) // per_stage, stages)
        fmap = base * (0.6 ** stage)
        r = rng.random()
        if r < 0.12 and n - len(bufs) >= 4:
            # fan out into parallel branches, joined by a concat
            k = rng.randint(2, 4)
            outs = []
            for j in range(k):
                extend(cur, t + j)
                outs.append(add(fmap * rng.choice([0.25, 0.5, 1]), t + j, t + j))
            t += k
            for o in outs:
                extend(o, t)
            cur = add(sum(bufs[o].size for o in outs), t, t)
        else:
            extend(cur, t)
            factor = rng.choice([0.25, 0.5, 1, 1, 1, 2, 3, 4])
            out = add(fmap * factor * rng.uniform(0.8, 1.2), t, t)
            if rng.random() < 0.2 and len(bufs) < n:
                add(fmap * rng.uniform(0.2, 3.0), t, t)  # scratch: this op only
            if rng.random() < 0.3:
                extend(out, t + rng.randint(2, 12))  # a residual add / skip reads it later
            cur = out
        t += 1
    extend(cur, t)
    return Problem(tuple(bufs[:n]))



def tiled_problem(n: int, seed: int, alignment: int = 16, drop: float = 0.05) -> Problem:
    """A hard mode shaped like minimalloc's challenge set: a cut-up rectangle.

    A rectangle of ``ops`` time steps by ``height`` bytes is cut (guillotine cuts,
    largest piece first, at random points on the time or byte axis) into
    n / (1 - drop) pieces; each piece is a buffer (size = its height, lifetime =
    its ops). Then ``drop`` of them are removed at random, so the load bound
    falls below the height at some ops while the rest may still need nearly all
    of it: the bound is often not reachable, and a proof must exhaust a search.
    Many pieces share a size (a cut splits a piece into equal heights when
    cutting in time). Same (n, seed) -> same Problem.
    """
    rng = random.Random(seed * 1_000_033 + n * 7 + 1)
    total = max(n, int(round(n / (1.0 - drop))))
    ops = 2 * total
    height = rng.choice([32, 64, 128, 256]) * 1024
    pieces = [(0, ops, 0, height)]  # [t0, t1) x [o0, o1), o in bytes
    while len(pieces) < total:
        pieces.sort(key=lambda p: ((p[1] - p[0]) * (p[3] - p[2]), p))
        t0, t1, o0, o1 = pieces.pop()
        units = (o1 - o0) // alignment
        by_time = (t1 - t0 >= 2) and (units < 2 or rng.random() < 0.5)
        if by_time:
            c = rng.randint(t0 + 1, t1 - 1)
            pieces += [(t0, c, o0, o1), (c, t1, o0, o1)]
        else:
            c = o0 + alignment * rng.randint(1, units - 1)
            pieces += [(t0, t1, o0, c), (t0, t1, c, o1)]
    pieces.sort()
    rng.shuffle(pieces)
    keep = pieces[:n]
    return Problem(tuple(Buffer(f"t{i}", o1 - o0, t0, t1 - 1, alignment)
                         for i, (t0, t1, o0, o1) in enumerate(keep)))
