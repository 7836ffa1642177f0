"""Shared tiny cases for the peer planner tests (hand-computed in each test)."""

from arena_tool.problem import Buffer, Problem

# TFLite Micro greedy_memory_planner_test.cc TestGreedyMedium, (size, first, last)
MEDIUM = Problem(tuple(Buffer(f"b{i}", s, a, e) for i, (s, a, e) in
                       enumerate([(10, 0, 1), (20, 1, 2), (30, 2, 3), (40, 3, 4), (50, 0, 1)])))

# three fixed blocks leave gaps [8, 40) (32 B) and [48, 60) (12 B) for a 10-byte buffer x:
# first fit takes 8, best fit 48, a stacking planner 68
GAPS = Problem((Buffer("f1", 8, 0, 1, 8, 0), Buffer("f2", 8, 0, 1, 8, 40),
                Buffer("f3", 8, 0, 1, 4, 60), Buffer("x", 10, 0, 1)))
