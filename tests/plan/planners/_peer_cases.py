"""Shared cases for the planner tests: two hand-computed ones and three seeded generators."""

import random

from arena_tool.core.problem import Buffer, Problem

# TFLite Micro greedy_memory_planner_test.cc TestGreedyMedium, (size, first, last)
MEDIUM = Problem(tuple(Buffer(f"b{i}", s, a, e) for i, (s, a, e) in
                       enumerate([(10, 0, 1), (20, 1, 2), (30, 2, 3), (40, 3, 4), (50, 0, 1)])))

# three fixed blocks leave gaps [8, 40) (32 B) and [48, 60) (12 B) for a 10-byte buffer x:
# first fit takes 8, best fit 48, a stacking planner 68
GAPS = Problem((Buffer("f1", 8, 0, 1, 8, 0), Buffer("f2", 8, 0, 1, 8, 40),
                Buffer("f3", 8, 0, 1, 4, 60), Buffer("x", 10, 0, 1)))


def tiny(seed: int, n: int, fixed: bool = False) -> Problem:
    """n buffers of 1..9 B over ops 0..8, alignments 1/2/4; with ``fixed`` the first
    one pinned at 0, 4 or 8 (brute force settles these in milliseconds)."""
    rng = random.Random(seed)
    bufs = []
    for i in range(n):
        s = rng.randint(0, 5)
        align = rng.choice([1, 1, 2, 4])
        fo = None
        if fixed and i == 0:
            fo = rng.choice([0, 4, 8])
            align = 4
        bufs.append(Buffer(f"b{i}", rng.randint(1, 9), s, s + rng.randint(0, 3), align, fo))
    return Problem(tuple(bufs))


def mixed(seed: int, n: int) -> Problem:
    """Like ``tiny`` with sizes up to 40 B and alignments 1..8 (3 and 6 too): padding
    between buffers live together lifts the minimum above the load bound."""
    rng = random.Random(seed)
    bufs = []
    for i in range(n):
        s = rng.randint(0, 5)
        fo = rng.choice([None, 3, 8]) if i == 0 and seed % 3 == 0 else None
        bufs.append(Buffer(f"b{i}", rng.randint(1, 40), s, s + rng.randint(0, 3),
                           rng.choice([1, 2, 4, 8, 3, 6]), fo))
    return Problem(tuple(bufs))


def crowded(seed: int, n: int = 30, ops: int = 16) -> Problem:
    """n buffers with random lifetimes of 1..7 ops, 16..1024 B, alignments 1/4/16, the
    first two fixed (stacked, so they never clash): many overlaps and many gaps."""
    rng = random.Random(seed)
    bufs = []
    top = 0
    for i in range(n):
        s = rng.randrange(ops)
        align = rng.choice([1, 4, 16])
        size = 16 * rng.randint(1, 64) - rng.choice([0, 0, 3])
        fixed = None
        if i < 2:
            fixed = -(-(top + 8) // align) * align
            top = fixed + size
        bufs.append(Buffer(f"b{i}", size, s, min(ops - 1, s + rng.randint(0, 6)), align, fixed))
    return Problem(tuple(bufs))
