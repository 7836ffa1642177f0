"""No-op build time: `scons board=all` on the example vs an SConstruct with no targets.

Floor (issue 3): the no-op build of the example (>= 3 models x >= 3 boards)
takes at most 1.5x the time of a no-op build of an empty SConstruct, measured
on the same machine in the same run.

Usage: python3 bench/noop_build.py [--runs N] [--keep DIR] [--no-bytecode]

Both builds run as `python -m SCons` (no shell wrapper) with Python's default
bytecode caching; a PYTHONDONTWRITEBYTECODE=1 in the environment is dropped
unless --no-bytecode, since it makes every run recompile arena's own modules
(SCons itself ships compiled).

Copies the example (SConstruct, site_scons, example_firmware) to a temporary
folder, builds it once (board=all; links when arm-none-eabi-gcc is on PATH),
checks that a second build runs no action (`scons -n` prints no command), then
times N no-op builds of each kind, alternating them so machine load hits both
alike, and prints the best and the median time of each and their ratio.
Exit status 1 when the median ratio is above 1.5.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FLOOR = 1.5
KEEP_NO_BYTECODE = False  # --no-bytecode: keep PYTHONDONTWRITEBYTECODE from the environment


def copy_example(dest: Path) -> None:
    shutil.copy2(ROOT / "SConstruct", dest / "SConstruct")
    shutil.copytree(ROOT / "site_scons", dest / "site_scons",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "example_firmware", dest / "example_firmware",
                    ignore=shutil.ignore_patterns("__pycache__", "build"))


def scons(cwd: Path, *args: str) -> tuple[float, subprocess.CompletedProcess[str]]:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    if not KEEP_NO_BYTECODE:
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # Python's default: cache bytecode
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "SCons", "-Q", *args], cwd=cwd, env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return time.perf_counter() - t0, p


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--keep", help="build in this folder and keep it")
    ap.add_argument("--no-bytecode", action="store_true",
                    help="keep PYTHONDONTWRITEBYTECODE if set (every run then recompiles arena_tool and the tool)")
    args = ap.parse_args(argv)
    global KEEP_NO_BYTECODE
    KEEP_NO_BYTECODE = args.no_bytecode

    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="arena-noop-"))
    try:
        example = work / "example"
        empty = work / "empty"
        example.mkdir(parents=True, exist_ok=True)
        empty.mkdir(parents=True, exist_ok=True)
        copy_example(example)
        (empty / "SConstruct").write_text("# no targets\n")

        seconds, p = scons(example, "board=all")
        if p.returncode != 0:
            print(p.stdout)
            print(f"full build failed with status {p.returncode}")
            return 2
        print(f"full build (board=all): {seconds:.2f} s")
        _, p = scons(example, "board=all", "-n")
        actions = [ln for ln in p.stdout.splitlines()
                   if ln.startswith(("Planning", "Checking", "Generating", "Compiling", "Linking"))]
        if actions:
            print("the no-op build is not a no-op:\n" + "\n".join(actions))
            return 1
        scons(empty)  # warm caches for both
        scons(example, "board=all")

        t_example: list[float] = []
        t_empty: list[float] = []
        for _ in range(args.runs):
            t_empty.append(scons(empty)[0])
            t_example.append(scons(example, "board=all")[0])
        boards = len(list((example / "build").glob("*/arena_report.json")))
        models = len(list((example / "build" / "plans").glob("*.plan.json")))
        med_ex, med_em = statistics.median(t_example), statistics.median(t_empty)
        ratio = med_ex / med_em
        print(f"no-op scons board=all ({boards} boards, {models} models): best {min(t_example):.3f} s, "
              f"median {med_ex:.3f} s")
        print(f"no-op scons, empty SConstruct:                  best {min(t_empty):.3f} s, "
              f"median {med_em:.3f} s")
        print(f"ratio (median) {ratio:.2f}x, (best) {min(t_example) / min(t_empty):.2f}x; floor {FLOOR}x: "
              + ("ok" if ratio <= FLOOR else "ABOVE"))
        return 0 if ratio <= FLOOR else 1
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
