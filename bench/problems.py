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

import glob
import os
import random
import time

from arena_tool.core.problem import Buffer, Problem


MODES = ("network", "tiled", "large", "syn")


def random_problem(n: int, seed: int, alignment: int = 16, mode: str = "network") -> Problem:
    """n buffers (n >= 1) from a network-like generator seeded by ``seed``.

    mode 'network' (default) is the chain described above; 'tiled' is the harder
    cut-rectangle shape of ``tiled_problem``.
    """
    if mode == "tiled":
        return tiled_problem(n, seed, alignment)
    if mode == "large":
        return large_problem(n, seed, alignment)
    if mode == "syn":
        return syn_problem(n, seed, alignment)
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



def large_problem(n: int, seed: int, alignment: int = 16) -> Problem:
    """A 1k-20k-buffer network (issue 27): one activation per op read by the next,
    stage sizes that halve or double, residual skips 2-16 ops long and a few 20-300
    ops long, fan-out blocks of 2-4 branches joined by a concat, one-op scratch
    buffers. Sizes are multiples of ``alignment``; same (n, seed) -> same Problem.
    """
    rng = random.Random(seed * 7_000_003 + n * 13 + 5)
    stage_len = max(8, n // rng.randint(4, 12))  # buffers per stage
    fmap = float(rng.choice([16, 32, 64, 128]) * 1024)
    bufs: list[Buffer] = []
    t = 0

    def add(size: float, start: int) -> int:
        size_b = max(alignment, -(-int(size) // alignment) * alignment)
        bufs.append(Buffer(f"t{len(bufs)}", size_b, start, start, alignment))
        return len(bufs) - 1

    def extend(i: int, end: int) -> None:
        b = bufs[i]
        if end > b.end:
            bufs[i] = Buffer(b.name, b.size, b.start, end, b.alignment)

    cur = add(fmap, 0)
    next_stage = stage_len
    while len(bufs) < n:
        if len(bufs) >= next_stage:
            next_stage += stage_len
            fmap = min(max(fmap * rng.choice([0.5, 0.5, 2.0]), 1024.0), 512.0 * 1024)
        r = rng.random()
        if r < 0.08 and n - len(bufs) >= 6:
            k = rng.randint(2, 4)
            outs = []
            for j in range(k):
                extend(cur, t + j)
                outs.append(add(fmap * rng.choice([0.25, 0.5, 1]), t + j))
            t += k
            for o in outs:
                extend(o, t)
            cur = add(sum(bufs[o].size for o in outs), t)
        else:
            extend(cur, t)
            out = add(fmap * rng.uniform(0.8, 1.2), t)
            if rng.random() < 0.15:
                add(fmap * rng.uniform(0.2, 2.0), t)  # scratch: this op only
            q = rng.random()
            if q < 0.25:
                extend(out, t + rng.randint(2, 16))  # a residual skip
            elif q < 0.255:
                extend(out, t + rng.randint(20, 300))  # a long skip (an encoder-decoder link)
            cur = out
        t += 1
    extend(cur, t)
    return Problem(tuple(bufs[:n]))


def syn_problem(n: int, seed: int, alignment: int = 64, bits: int = 12) -> Problem:
    """An independent generator (issue 39), unlike ``large_problem`` in shape: no chain.
    Buffers start at uniformly random ops of a timeline n ops long and live a mix of
    lengths (70 % 1-8 ops, 25 % 8-128, 5 % 128-1024), sizes log-uniform from
    ``alignment`` to 2^bits times it, as in minimalloc's CSV files (a trace of an
    accelerator's allocations). Same (n, seed, bits) -> same Problem.
    """
    rng = random.Random(seed * 9_000_011 + n * 17 + 3)
    bufs = []
    for i in range(n):
        start = rng.randrange(n)
        r = rng.random()
        life = rng.randint(1, 8) if r < 0.7 else rng.randint(8, 128) if r < 0.95 else rng.randint(128, 1024)
        size = alignment * int(2 ** rng.uniform(0, bits))
        bufs.append(Buffer(f"t{i}", size, start, min(n - 1, start + life - 1), alignment))
    return Problem(tuple(bufs))


def _rows(rows: list[tuple[int, int, int]], alignment: int) -> Problem:
    """(size, first op, last op) rows as a Problem, named t0, t1, ... in order."""
    return Problem(tuple(Buffer(f"t{i}", size, s, e, alignment) for i, (size, s, e) in enumerate(rows)))


def dag_problem(n: int, seed: int) -> Problem:
    """Op i writes one tensor (1-128 KiB, a power of two, a third of them times 3) read by 1-3
    later ops at exponential distances (mean 4): a random DAG's activations in op order."""
    rng = random.Random(seed * 101 + n)
    rows = []
    for i in range(n):
        size = rng.choice([1, 2, 4, 8, 16, 32, 64, 128]) * 1024 * rng.choice([1, 1, 3])
        last = max(i + 1 + int(rng.expovariate(0.25)) for _ in range(rng.choice([1, 1, 1, 2, 2, 3])))
        rows.append((size, i, min(last, n)))
    return _rows(rows, 64)


def pow2_problem(n: int, seed: int) -> Problem:
    """Random starts over n ops, lives geometric (mean 10 ops), sizes from four powers of two
    (1-8 KiB), no alignment: a minimalloc-paper-like trace of few distinct sizes."""
    rng = random.Random(seed * 173 + n)
    rows = []
    for _ in range(n):
        s = rng.randrange(n)
        rows.append((rng.choice([1024, 2048, 4096, 8192]), s, min(n - 1, s + int(rng.expovariate(0.1)))))
    return _rows(rows, 1)


def peak_problem(n: int, seed: int) -> Problem:
    """Short random intervals (0-20 ops over n) plus a tenth that span up to 200 ops either side of
    the middle: one deliberately tight peak. Sizes 256 B-4 KiB, powers of two, alignment 64."""
    rng = random.Random(seed * 127 + n)
    rows = []
    for _ in range(n):
        if rng.random() < 0.1:
            c = n // 2 + rng.randint(-50, 50)
            s, e = c - rng.randint(0, 200), c + rng.randint(0, 200)
        else:
            s = rng.randrange(n)
            e = s + rng.randint(0, 20)
        rows.append((rng.choice([1, 2, 4, 8, 16]) * 256, max(0, s), min(n - 1, e)))
    return _rows(rows, 64)


def lanes_problem(n: int, seed: int) -> Problem:
    """Packed by construction, no slack: ~sqrt(n)/2 lanes of 1-8 KiB, each filled end to end by
    buffers of 1-8 ops, shuffled; the lanes' stack is a layout at the load bound (~0.9 n buffers)."""
    rng = random.Random(seed * 113 + n)
    lanes = max(4, int(n ** 0.5) // 2)
    ops = n // lanes * 4
    rows = []
    for height in [rng.choice([1, 2, 3, 4, 8]) * 1024 for _ in range(lanes)]:
        t = 0
        while t < ops:
            life = rng.randint(1, 8)
            rows.append((height, t, min(ops, t + life) - 1))
            t += life
    rng.shuffle(rows)
    return _rows(rows, 64)


def trace_problem(n: int, seed: int) -> Problem:
    """An allocator's trace: each op allocates one buffer (a power of two, 64 B-64 KiB) and frees
    random live ones (each with odds 1/2 in turn, always down to 40 live)."""
    rng = random.Random(seed * 149 + n)
    rows: list[list[int]] = []
    live: list[int] = []
    for t in range(n):
        rows.append([2 ** rng.randint(6, 16), t, n])
        live.append(t)
        while live and (len(live) > 40 or rng.random() < 0.5):
            rows[live.pop(rng.randrange(len(live)))][2] = t
    return _rows([(size, s, e) for size, s, e in rows], 1)


def gpt_problem(n: int, seed: int) -> Problem:
    """Transformer blocks: q, k, v, scores (1-4 heads' worth), softmax, attention, MLP up (4x)
    and down per block, each op one tensor read 1-3 ops later, the block's output a residual
    read at the next block's end (fp16, model width 256-768, sequence 128-512)."""
    rng = random.Random(seed * 151 + n)
    width, seq = rng.choice([256, 512, 768]), rng.choice([128, 256, 512])
    rows: list[list[int]] = []
    t, residual = 0, -1
    while len(rows) < n:
        for size, life in ((seq * width, 1), (seq * width, 2), (seq * width, 3), (seq * seq * rng.choice([1, 2, 4]), 1),
                           (seq * seq, 1), (seq * width, 1), (4 * seq * width, 1), (seq * width, 1)):
            rows.append([2 * size, t, t + life])
            t += 1
        if residual >= 0:
            rows[residual][2] = t
        residual = len(rows) - 1
    return _rows([(size, s, e) for size, s, e in rows[:n]], 64)


def uniform_problem(n: int, seed: int) -> Problem:
    """Random intervals: starts uniform over n/2 ops, lives uniform 1-50 ops, sizes uniform
    16 B-16 KiB in steps of 16."""
    rng = random.Random(seed * 109 + n)
    ops = max(1, n // 2)
    rows = []
    for _ in range(n):
        s = rng.randrange(ops)
        rows.append((rng.randint(1, 1000) * 16, s, min(ops - 1, s + rng.randint(0, 49))))
    return _rows(rows, 16)


def paper_problem(n: int, seed: int) -> Problem:
    """One allocation per step, the clock advancing with odds 0.6 a step; sizes from five powers
    of two (1-256 KiB); lives exponential (mean 3 ops), a tenth of them 10-500 ops."""
    rng = random.Random(seed * 107 + n)
    rows, t = [], 0
    for _ in range(n):
        t += rng.random() < 0.6
        life = 1 + int(rng.expovariate(1 / 3)) if rng.random() < 0.9 else rng.randint(10, 500)
        rows.append((2 ** rng.choice([10, 12, 14, 16, 18]), t, t + life - 1))
    return _rows(rows, 1)


# name -> generator(n, seed) of the named problems NAME-N-sS (issue 39: plausible "gen-style" shapes
# besides large_problem and syn_problem, each measured side by side with minimalloc)
GENERATORS = {"dag": dag_problem, "pow2": pow2_problem, "peak": peak_problem, "lanes": lanes_problem,
              "trace": trace_problem, "gpt": gpt_problem, "uniform": uniform_problem, "paper": paper_problem}


CHALLENGES = os.path.join(os.environ.get("ARENA_SHARED") or os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "..", "shared"), "anchors", "minimalloc", "challenging")
LARGE = tuple((n, s) for n in (1000, 5000, 10000, 20000) for s in (1, 2, 3))


def _named(name: str, challenges: str) -> Problem:
    """A CSV file (minimalloc's format; the capacity from an ``X.<capacity>.csv`` name), a
    challenge letter (A-K, at the capacity its file name gives), large-N-sS, syn-N-sS,
    syn-N-sS-bB (sizes up to 2^B times the smallest, not 2^12) or G-N-sS for G in GENERATORS."""
    kind, *rest = name.split("-")
    if kind in ("large", "syn", *GENERATORS) and len(rest) >= 2 and not name.endswith(".csv"):
        n, s, *bits = rest
        if kind == "large":
            return large_problem(int(n), int(s[1:]))
        if kind in GENERATORS:
            return GENERATORS[kind](int(n), int(s[1:]))
        return syn_problem(int(n), int(s[1:]), bits=int(bits[0][1:]) if bits else 12)
    from arena_tool.model import csvio
    path = name if name.endswith(".csv") else glob.glob(os.path.join(challenges, f"{name}.*.csv"))[0]
    parts = os.path.basename(path).split(".")
    cap = int(parts[-2]) if len(parts) >= 3 and parts[-2].isdigit() else None
    return csvio.read_problem(path, capacity=cap)


def _challenge(name: str) -> bool:
    """A challenge letter or a CSV file (60 s by default), not a generated problem (30 s)."""
    return name.endswith(".csv") or name.split("-")[0] not in ("large", "syn", *GENERATORS)


def _label(name: str) -> str:
    return os.path.basename(name) if name.endswith(".csv") else name


def _run_one(name: str, limit: float, challenges: str) -> dict[str, object]:
    """Plan one problem with ``optimal`` in this process. fit: CPU seconds until the best
    layout first met the capacity (the challenges' question; the search then goes on below
    it) or, without one, the load bound."""
    import io
    import resource
    from arena_tool.core.progress import Progress
    from arena_tool.core.problem import lower_bound
    from arena_tool.plan import validate
    from arena_tool.plan.planners import PLANNERS, Params
    problem = _named(name, challenges)
    lb = lower_bound(problem.buffers)
    target = problem.capacity if problem.capacity is not None else lb

    class FitClock(Progress):
        """Records the CPU time of the first report of a best at or under the target."""
        fit: float | None = None

        def report(self, best: int | None = None, bound: int | None = None) -> None:
            if best is not None and best <= target and self.fit is None:
                self.fit = time.process_time() - c0

    clock = FitClock(io.StringIO())
    c0, w0 = time.process_time(), time.perf_counter()
    plan = PLANNERS["optimal"](problem, Params(time_limit=limit, progress=clock))
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    bad = validate.violations(Problem(problem.buffers), plan.offsets, plan.arena_size)
    return {"name": _label(name), "n": len(problem.buffers), "arena": plan.arena_size, "lb": lb,
            "target": target, "bound": plan.best_bound, "status": str(plan.status), "fit": clock.fit,
            "cpu": cpu, "wall": wall, "over": max(0.0, wall - limit),
            "peak": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "valid": "yes" if not bad else "NO: " + bad[0].message}


def _arena(name: str, limit: float, challenges: str) -> dict[str, object]:
    """``_run_one`` in a fresh process (its own peak RSS); proc: that process's whole CPU
    time, start-up and reading included."""
    import json
    import resource
    import subprocess
    import sys
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run([sys.executable, os.path.abspath(__file__), "--one", name, "--challenges", challenges,
                           "--limit", str(limit)], capture_output=True, text=True, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{name}: {done.stderr.strip().splitlines()[-1] if done.stderr.strip() else done.returncode}")
    row: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    row["proc"] = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return row


def _minimalloc(binary: str, name: str, challenges: str, capacity: int, limit: float,
                tmp: str) -> dict[str, object]:
    """minimalloc on the same problem at ``capacity`` (the file's, else the load bound): its
    CPU (the child's rusage) and wall time, whether it returned a solution, and that
    solution's height, checked by arena's validator."""
    import resource
    import subprocess
    from arena_tool.model import csvio
    from arena_tool.plan import validate
    problem = _named(name, challenges)
    src = name if name.endswith(".csv") else os.path.join(tmp, f"{_label(name)}.csv")
    if not name.endswith(".csv"):
        csvio.write_problem(Problem(problem.buffers), src)
    out = os.path.join(tmp, f"{_label(name)}.minimalloc.csv")
    if os.path.exists(out):
        os.unlink(out)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    w0 = time.perf_counter()
    subprocess.run([binary, f"--capacity={capacity}", f"--input={src}", f"--output={out}", f"--timeout={limit}s"],
                   capture_output=True, text=True, check=False)
    wall = time.perf_counter() - w0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    height = None
    valid = "no output"
    if os.path.exists(out):
        solved = csvio.read_problem(out)
        offsets = [b.fixed_offset or 0 for b in solved.buffers]
        height = max((o + b.size for o, b in zip(offsets, solved.buffers)), default=0)
        bad = validate.violations(Problem(problem.buffers), offsets, height)
        valid = "yes" if not bad else "NO: " + bad[0].message
    return {"cpu": cpu, "wall": wall, "height": height, "valid": valid}


def _line(r: dict[str, object]) -> str:
    fit = "   none" if r["fit"] is None else f"{r['fit']:7.2f}"
    fits = int(str(r["arena"])) <= int(str(r["target"]))
    return (f"{r['name']:16} n={r['n']:6} arena={r['arena']:9} bound={r['bound']:9} {r['status']:10} "
            f"fits={'yes' if fits else 'NO '} fit={fit}s cpu={r['cpu']:7.2f}s proc={r['proc']:6.2f}s "
            f"wall={r['wall']:7.2f}s over={r['over']:5.2f}s peak={r['peak']:7.1f}MB valid={r['valid']}")


def main(argv: list[str] | None = None) -> int:
    """Run each problem in a fresh process and print one line each; with --minimalloc,
    minimalloc on the same problem right after, and the ratios of the run at the end."""
    import argparse
    import json
    import tempfile
    ap = argparse.ArgumentParser(description="optimal on minimalloc's challenges, large networks and CSV files")
    ap.add_argument("names", nargs="*", help=f"A..K, large-N-sS, syn-N-sS[-bB], G-N-sS (G: {', '.join(GENERATORS)}) "
                                            "or minimalloc CSV files "
                                            "(X.<capacity>.csv sets the capacity; default: A..K and large-*)")
    ap.add_argument("--limit", type=float, default=0.0, help="seconds each (default 60 challenge, 30 large)")
    ap.add_argument("--challenges", default=CHALLENGES, help="folder of minimalloc's challenge CSVs")
    ap.add_argument("--minimalloc", metavar="PATH", help="a minimalloc binary: run it side by side")
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    names = args.names or [chr(c) for c in range(ord("A"), ord("L"))] + [f"large-{n}-s{s}" for n, s in LARGE]
    if args.one:
        lim = args.limit or (60.0 if _challenge(names[0]) else 30.0)
        print(json.dumps(_run_one(names[0], lim, args.challenges)), flush=True)
        return 0
    sums = {"arena": 0.0, "arena_proc": 0.0, "mm": 0.0, "arena_fits": 0, "mm_fits": 0}
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            lim = args.limit or (60.0 if _challenge(name) else 30.0)
            r = _arena(name, lim, args.challenges)
            print(_line(r), flush=True)
            if not args.minimalloc:
                continue
            m = _minimalloc(args.minimalloc, name, args.challenges, int(str(r["target"])), lim, tmp)
            mm_fit = m["height"] is not None and int(str(m["height"])) <= int(str(r["target"]))
            fit = r["fit"] is not None
            print(f"{'':16} minimalloc: height={m['height']} fits={'yes' if mm_fit else 'NO '} "
                  f"cpu={m['cpu']:7.2f}s wall={m['wall']:7.2f}s valid={m['valid']}"
                  + (f"  ratio arena/minimalloc CPU to fit {float(str(r['fit'])) / max(float(str(m['cpu'])), 1e-9):.2f}x"
                     f" (whole process {float(str(r['proc'])) / max(float(str(m['cpu'])), 1e-9):.2f}x)"
                     if fit and mm_fit else ""), flush=True)
            if fit and mm_fit:
                sums["arena"] += float(str(r["fit"]))
                sums["arena_proc"] += float(str(r["proc"]))
                sums["mm"] += float(str(m["cpu"]))
            sums["arena_fits"] += fit
            sums["mm_fits"] += mm_fit
    if args.minimalloc:
        mm = max(sums["mm"], 1e-9)
        print(f"fits: arena {sums['arena_fits']:.0f}/{len(names)}, minimalloc {sums['mm_fits']:.0f}/{len(names)}; "
              f"where both fit: arena {sums['arena']:.2f} CPU-s to the fit ({sums['arena_proc']:.2f} whole processes), "
              f"minimalloc {sums['mm']:.2f}: ratio {sums['arena'] / mm:.2f}x ({sums['arena_proc'] / mm:.2f}x)")
    return 0


if __name__ == "__main__":
    import sys
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    raise SystemExit(main())
