"""bench: the random generator is seeded and network-shaped; the script runs and validates;
int8_io's checks hold on a model and catch a graph input planned into the arena; its --run skips
the light models, reports a failed run as a cell, tallies its cells and refuses an unknown board."""

from __future__ import annotations

import sys
from pathlib import Path

from arena_tool.core.problem import ModelOptions, lower_bound
from arena_tool.plan import planning
from bench import bench, int8_io
from bench.problems import GENERATORS, random_problem
from builders import printed_under_hash_seeds

KWS_INT8 = Path(__file__).resolve().parent.parent / "example_firmware" / "models" / "kws_int8.onnx"


def test_generator_sized_and_the_same_whatever_the_hash_seed() -> None:
    code = "from bench.problems import random_problem; print(random_problem(200, 3))"
    one, two = printed_under_hash_seeds(code)
    assert one == two and one.count("Buffer(") == 200
    for n in (50, 200, 500):
        a = random_problem(n, 3)
        assert len(a.buffers) == n
        assert all(x.size % 16 == 0 and x.start <= x.end for x in a.buffers)
        assert len({x.name for x in a.buffers}) == n
    assert random_problem(100, 1) != random_problem(100, 2)
    p = random_problem(200, 0)
    assert p.total_size > 2 * lower_bound(p.buffers)  # real reuse to be had


def test_named_generators_sized_and_seeded() -> None:
    """bench/problems.py's G-N-sS problems (issue 39): the same buffers for the same (n, seed),
    other ones for another seed, n of them (lanes: its lanes filled end to end, ~0.9 n), aligned."""
    for name, gen in GENERATORS.items():
        a = gen(400, 1)
        assert a == gen(400, 1) and a != gen(400, 2), name
        assert len(a.buffers) == 400 or (name == "lanes" and 300 < len(a.buffers) < 400), name
        assert all(0 <= b.start <= b.end and b.size > 0 and b.size % b.alignment == 0 for b in a.buffers), name
        assert len({b.name for b in a.buffers}) == len(a.buffers), name


def test_bench_runs_and_summarises(capsys) -> None:
    rc = bench.main(["--random", "2", "--seed", "5", "--buffers", "60", "--time-limit", "2",
                     "--planners", "optimal", "greedy_size", "tflite_gpu", "hill_climb"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "random-60-s5" in out and "random-60-s6" in out
    assert "optimal proved 2 of 2" in out and "geomean" in out and "INVALID" not in out


def test_int8_io_measures_a_model_and_catches_io_in_the_arena() -> None:
    row, fails = int8_io.measure(int8_io.Case("kws_int8", "shipped", KWS_INT8))
    assert fails == [] and row.startswith("| kws_int8 | shipped | 8,000 | 8,000 | 8,000 | 8,000 | 512 | "), row
    # a plan that keeps its I/O in the arena (io_buffers: arena) fails the caller check
    in_arena = planning.plan_model(str(KWS_INT8), ModelOptions(io="int8"), "optimal", int8_io.PARAMS)
    assert any(m.endswith("is packed in the arena") for m in int8_io.io_in_arena(KWS_INT8, in_arena))


def test_int8_io_run_skips_the_light_models_tallies_and_refuses_an_unknown_board(capsys) -> None:
    light = int8_io.Case("light vgg19", "qdq pt", KWS_INT8, mcu=False)
    assert int8_io.run_cell(light, "host", "caller") == "not run"  # no firmware built
    # a run that fails (here before any build: a float model with io: int8) is a FAIL cell, not a crash
    float_kws = int8_io.Case("kws", "float", KWS_INT8.with_name("kws.onnx"))
    assert int8_io.run_cell(float_kws, "host", "int8").startswith("FAIL int8 I/O: input 'input' (float32)")
    line = int8_io.run_summary("run host: caller", ["exact", "max abs err 0.5", "FAIL mismatch in y", "not run"])
    assert line == ("run host: caller: 1 of 3 exact, 1 within tolerance, 1 FAIL, "
                    "1 not run (onnx light models, too big for an MCU)")
    assert int8_io.main(["--run", "host,mps2_an9"]) == 2
    assert capsys.readouterr().err.startswith("int8_io: --run: unknown board 'mps2_an9'")


FAKE_MINIMALLOC = '''
import sys
args = dict(a[2:].split("=", 1) for a in sys.argv[1:])
rows = open(args["input"]).read().split()
out, top = [rows[0] + ",offset"], 0
for row in rows[1:]:
    out.append(f"{row},{top}")
    top += int(row.split(",")[3])
open(args["output"], "w").write("\\n".join(out) + "\\n")
'''


def test_problems_runs_minimalloc_side_by_side(tmp_path, capsys) -> None:
    """bench/problems.py on a minimalloc CSV (capacity from its name) with --minimalloc: a
    stand-in binary taking minimalloc's flags (it stacks every buffer, 48 B <= 64 B) runs
    right after arena; its solution is validated and the CPU ratios are printed."""
    from bench import problems
    fake = tmp_path / "minimalloc"
    fake.write_text(f"#!{sys.executable}\n{FAKE_MINIMALLOC}")
    fake.chmod(0o755)
    csv = tmp_path / "small.64.csv"
    csv.write_text("id,lower,upper,size\na,0,2,16\nb,1,3,16\nc,0,3,16\n")
    assert problems.main([str(csv), "--minimalloc", str(fake), "--limit", "5"]) == 0
    out = capsys.readouterr().out
    assert "small.64.csv" in out and "arena=       48" in out and "fits=yes" in out and "valid=yes" in out
    assert "minimalloc: height=48 fits=yes" in out and "ratio arena/minimalloc CPU to fit" in out
    assert "fits: arena 1/1, minimalloc 1/1" in out
