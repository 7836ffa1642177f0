"""csvio: minimalloc CSV in and out, conversions, round trip through a planner, errors."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SHARED, require_shared

from arena_tool.model import csvio
from arena_tool.plan import validate
from arena_tool.core.errors import ArenaError
from arena_tool.plan.planners import PLANNERS, Params
from arena_tool.core.problem import Buffer, Problem

INPUT12 = "id,lower,upper,size\nb1,0,3,4\nb2,3,9,4\nb3,0,9,4\nb4,9,21,4\nb5,0,21,4\n"


def write(tmp_path, name: str, text: str) -> str:
    path = os.path.join(tmp_path, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def test_input12_half_open_to_inclusive(tmp_path) -> None:
    p = csvio.read_problem(write(tmp_path, "input.12.csv", INPUT12))
    assert p.capacity == 12
    assert p.buffers[0] == Buffer("b1", 4, 0, 2)
    assert p.buffers[3] == Buffer("b4", 4, 9, 20)
    plan = PLANNERS["optimal"](p, Params())
    validate.check(p, plan.offsets, plan.arena_size)
    assert plan.arena_size == 12


def test_end_header_is_inclusive_and_aliases(tmp_path) -> None:
    p = csvio.read_problem(write(tmp_path, "x.csv", "buffer,start,end,size,alignment\na,0,3,8,4\n"), capacity=99)
    assert p.buffers == (Buffer("a", 8, 0, 3, 4),) and p.capacity == 99


def test_column_reader_reads_what_the_row_reader_does(tmp_path, monkeypatch) -> None:
    """The column-at-a-time reader (well-formed files) gives the row-by-row reader's Problem:
    spaces, blank lines, columns in another order, both lifetime forms."""
    for text in ("size, upper ,id,lower,alignment\n8, 3 , a ,0,4\n\n16,9,b,2,16\n",
                 "buffer,start,end,size\nx,5,5,1\ny,0,7,3\n"):
        path = write(tmp_path, "x.7.csv", text)
        fast = csvio.read_problem(path)
        monkeypatch.setattr(csvio, "_read_rows_fast", lambda *a: None)
        assert csvio.read_problem(path) == fast and len(fast.buffers) == 2 and fast.capacity == 7
        monkeypatch.undo()


def test_capacity_absent(tmp_path) -> None:
    assert csvio.read_problem(write(tmp_path, "plain.csv", "id,lower,upper,size\na,0,1,8\n")).capacity is None


def test_round_trip_plan_and_offsets(tmp_path) -> None:
    src = Problem((Buffer("x", 10, 0, 1, 2), Buffer("y", 20, 1, 2, 4), Buffer("z", 30, 2, 3, 2),
                   Buffer("w", 40, 3, 4, 8), Buffer("v", 50, 0, 1, 2)))
    path = os.path.join(tmp_path, "p.csv")
    csvio.write_problem(src, path)
    back = csvio.read_problem(path)
    assert back.buffers == src.buffers
    plan = PLANNERS["optimal"](back, Params())
    out = os.path.join(tmp_path, "p.solution.csv")
    csvio.write_solution(back, plan, out)
    solved = csvio.read_problem(out)  # the offset column reads back as fixed offsets
    offsets = [b.fixed_offset for b in solved.buffers]
    assert offsets == list(plan.offsets)
    validate.check(src, offsets, max(o + b.size for o, b in zip(offsets, src.buffers)))
    assert not [f for f in os.listdir(tmp_path) if f.startswith(".tmp-")]


def test_fixed_offset_column_round_trip(tmp_path) -> None:
    src = Problem((Buffer("f", 8, 0, 3, 8, fixed_offset=16), Buffer("g", 8, 1, 2)))
    path = os.path.join(tmp_path, "f.csv")
    csvio.write_problem(src, path)
    assert csvio.read_problem(path).buffers == src.buffers


@pytest.mark.parametrize("text,line,col,words", [
    ("id,lower,upper,size\na,0,1,x\n", 2, 4, "not an integer"),
    ("id,lower,upper,size\na,0,1\n", 2, None, "3 fields"),
    ("id,lower,upper,size\na,3,3,8\n", 2, 3, "empty lifetime"),
    ("id,lower,upper,size\na,0,1,0\n", 2, 4, "below 1"),
    ("id,lower,upper,size\na,0,1,8\na,1,2,8\n", 3, 1, "repeats line 2"),
    ("id,lower,upper,size,colour\n", 1, 5, "unknown column"),
    ("id,lower,size\n", 1, None, "missing column 'upper'"),
    ("id,lower,upper,end,size\n", 1, 4, "duplicate column"),
    ("id,lower,upper,size,gaps\n", 1, 5, "not supported"),
    ("", 1, None, "empty file"),
    ("id,lower,upper,size,alignment,offset\na,0,1,8,4,6\n", 2, 6, "not a multiple"),
])
def test_errors_name_file_line_column(tmp_path, text, line, col, words) -> None:
    path = write(tmp_path, "bad.csv", text)
    with pytest.raises(ArenaError) as e:
        csvio.read_problem(path)
    err = e.value
    assert err.file == path and err.line == line and err.col == col and words in err.msg and err.hint


def test_missing_file(tmp_path) -> None:
    with pytest.raises(ArenaError) as e:
        csvio.read_problem(os.path.join(tmp_path, "nope.csv"))
    assert e.value.file.endswith("nope.csv")


def test_shared_example_if_present() -> None:
    path = str(require_shared(SHARED / "anchors" / "minimalloc" / "examples" / "input.12.csv"))
    p = csvio.read_problem(path)
    assert p.capacity == 12 and len(p.buffers) == 5


def _run_shared_example(shared: str, require: str) -> "subprocess.CompletedProcess[str]":
    env = dict(os.environ, ARENA_SHARED=shared, ARENA_REQUIRE_TOOLS=require)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs",
                           f"{__file__}::test_shared_example_if_present"], cwd=str(Path(__file__).parents[2]),
                          env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)


def test_shared_folder_comes_from_arena_shared_and_is_required_under_ci(tmp_path) -> None:
    """No machine's absolute path: ARENA_SHARED names the folder; named but absent under
    ARENA_REQUIRE_TOOLS=1 is a failure, not a skip."""
    examples = tmp_path / "shared" / "anchors" / "minimalloc" / "examples"
    examples.mkdir(parents=True)
    (examples / "input.12.csv").write_text(INPUT12)
    found = _run_shared_example(str(tmp_path / "shared"), "1")
    assert "1 passed" in found.stdout, found.stdout
    skipped = _run_shared_example(str(tmp_path / "nowhere"), "0")
    assert "1 skipped" in skipped.stdout and str(tmp_path / "nowhere") in skipped.stdout, skipped.stdout
    failed = _run_shared_example(str(tmp_path / "nowhere"), "1")
    assert failed.returncode == 1 and "1 failed" in failed.stdout and "ARENA_REQUIRE_TOOLS=1" in failed.stdout
