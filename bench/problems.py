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

from arena_tool.problem import Buffer, Problem


def random_problem(n: int, seed: int, alignment: int = 16) -> Problem:
    """n buffers (n >= 1) from a network-like generator seeded by ``seed``."""
    rng = random.Random(seed * 1_000_003 + n)
    stages = rng.randint(3, 6)
    base = rng.choice([8, 16, 32, 64, 128]) * 1024  # bytes of the first feature map
    per_stage = max(1, n // stages)
    bufs: list[Buffer] = []
    t = 0
    cur = 0  # index of the tensor the next op reads

    def add(size: int, start: int, end: int) -> int:
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
