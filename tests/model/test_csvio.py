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
from arena_tool.core.problem import Buffer, ColumnBuffers, Problem

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


def _each_reader(monkeypatch, path: str) -> list[Problem]:
    """``read_problem(path)`` by each of its readers: csvio.c, the Python column reader, the row reader."""
    out = [csvio.read_problem(path)]
    monkeypatch.setattr(csvio, "_library", lambda: None)
    out.append(csvio.read_problem(path))
    monkeypatch.setattr(csvio, "_read_rows_fast", lambda *a: None)
    out.append(csvio.read_problem(path))
    monkeypatch.undo()
    return out


COMPILED = csvio._library() is not None  # a C compiler (CI has one): csvio.c reads well-formed files


@pytest.mark.parametrize("text", [
    "size, upper ,id,lower,alignment\n8, 3 , a ,0,4\n\n16,9,b,2,16\n",  # spaces, blank lines, any order
    "buffer,start,end,size\nx,5,5,1\ny,0,7,3\n",  # the inclusive form
    "id,lower,upper,size\r\n\ta b\t,+0,003,8\r\n \t \r\nc,-0,2,+0008\r\n",  # CRLF, tabs, signs, zeros
    "id,lower,upper,size\nlast,0,1,8",  # no final newline
    "id,lower,upper,size\n",  # no rows
])
def test_every_reader_reads_a_well_formed_file_alike(tmp_path, monkeypatch, text) -> None:
    """The compiled reader (columns, no Buffer per row), the Python column reader and the row
    reader give one Problem: spaces, blank lines, columns in another order, both lifetime forms."""
    path = write(tmp_path, "x.7.csv", text)
    compiled, column, rows = _each_reader(monkeypatch, path)
    assert compiled == column == rows and compiled.capacity == 7
    assert isinstance(compiled.buffers, ColumnBuffers) == COMPILED
    assert tuple(compiled.buffers) == rows.buffers and hash(compiled) == hash(rows)


def test_every_reader_reads_what_only_python_reads(tmp_path, monkeypatch) -> None:
    """What csvio.c does not read (non-ASCII ids, 1_000, signs in odd places) goes to the Python readers."""
    for text in ("id,lower,upper,size\nä,0,1,8\nb,0,2,1_000\n", "id,lower,upper,size\na,0,1,8\x0c\n"):
        path = write(tmp_path, "x.csv", text)
        compiled, column, rows = _each_reader(monkeypatch, path)
        assert compiled == column == rows and isinstance(compiled.buffers, tuple)


def test_column_buffers_are_a_sequence_of_buffers(tmp_path) -> None:
    if not COMPILED:
        pytest.skip("no C compiler: csvio.c is not built")
    p = csvio.read_problem(write(tmp_path, "x.csv", INPUT12))
    bufs = p.buffers
    assert isinstance(bufs, ColumnBuffers) and len(bufs) == 5 and p.total_size == 20 and p.horizon == 21
    assert bufs[0] == Buffer("b1", 4, 0, 2) and bufs[-1] == Buffer("b5", 4, 0, 20) and bufs[1:3] == tuple(bufs)[1:3]
    assert bufs.take([4, 0]) == (Buffer("b5", 4, 0, 20), Buffer("b1", 4, 0, 2))
    with pytest.raises(IndexError):
        bufs[5]
    assert p == Problem(tuple(bufs), None) and bufs.names() == ["b1", "b2", "b3", "b4", "b5"]


def test_optimal_and_the_validator_on_columns_as_on_buffers(tmp_path) -> None:
    """optimal's column path (one part, several parts) and the validator's give the offsets
    and messages of the Buffer path."""
    more = INPUT12 + "".join(f"c{i},{30 + i},{33 + 2 * i},{8 * (i % 3 + 1)}\n" for i in range(9))
    aligned = "id,lower,upper,size,alignment\na,0,3,12,4\nb,1,9,6,8\nc,2,5,4,2\nd,4,9,10,16\n"
    for text in (INPUT12, more, aligned):
        p = csvio.read_problem(write(tmp_path, "x.csv", text))
        q = Problem(tuple(p.buffers), p.capacity)
        a, b = PLANNERS["optimal"](p, Params()), PLANNERS["optimal"](q, Params())
        assert a.offsets == b.offsets and a.arena_size == b.arena_size and a.status == b.status
        bad = (0,) * len(p.buffers)
        assert validate.violations(p, bad, 4) == validate.violations(q, bad, 4) != []


@pytest.mark.parametrize("name", sorted(PLANNERS))
def test_every_planner_plans_columns_as_buffers(tmp_path, name) -> None:
    """A CSV problem read into columns is planned by every planner as its tuple of Buffers is."""
    text = INPUT12 + "".join(f"c{i},{3 * i},{3 * i + 5},{4 * (i % 3 + 1)}\n" for i in range(8))
    p = csvio.read_problem(write(tmp_path, "x.csv", text))
    q = Problem(tuple(p.buffers), p.capacity)
    a, b = PLANNERS[name](p, Params(time_limit=5)), PLANNERS[name](q, Params(time_limit=5))
    assert (a.offsets, a.arena_size, a.status) == (b.offsets, b.arena_size, b.status)


@pytest.mark.parametrize("align", [False, True])
def test_the_compiled_writer_writes_the_python_bytes(tmp_path, monkeypatch, align) -> None:
    text = INPUT12 if not align else INPUT12.replace("size\n", "size,alignment\n").replace(",4\n", ",4,2\n")
    p = csvio.read_problem(write(tmp_path, "x.csv", text))
    plan = PLANNERS["optimal"](p, Params())
    out = []
    for compiled in (True, False):
        if not compiled:
            monkeypatch.setattr(csvio, "_library", lambda: None)
        csvio.write_problem(p, str(tmp_path / f"p{compiled}.csv"))
        csvio.write_solution(p, plan, str(tmp_path / f"s{compiled}.csv"))
        out.append(((tmp_path / f"p{compiled}.csv").read_bytes(), (tmp_path / f"s{compiled}.csv").read_bytes()))
    assert out[0] == out[1] and out[0][0] == text.encode()


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
    ("id,lower,upper,size\na,-1,1,8\n", 2, 2, "below 0"),
    ("id,lower,upper,size\na,0,1,8\n ,0,1,8\n", 3, 1, "empty id"),
    ("id,lower,upper,size\na,0,1,8\nb,0,1,8,\n", 3, None, "5 fields"),
    ("id,lower,upper,size,alignment\na,0,1,8,0\n", 2, 5, "below 1"),
    ("buffer,start,end,size\na,2,1,8\n", 2, 3, "empty lifetime"),
    ("id,lower,upper,size\n" + "".join(f"b{i},0,1,8\n" for i in range(300)) + "b7,0,1,8\n", 302, 1, "repeats line 9"),
])
def test_errors_name_file_line_column(tmp_path, monkeypatch, text, line, col, words) -> None:
    """Every fault named alike with csvio.c (which refuses the file to the row reader) and without."""
    path = write(tmp_path, "bad.csv", text)
    errors = []
    for compiled in (True, False):
        if not compiled:
            monkeypatch.setattr(csvio, "_library", lambda: None)
        with pytest.raises(ArenaError) as e:
            csvio.read_problem(path)
        errors.append(e.value.render())
    err = e.value
    assert err.file == path and err.line == line and err.col == col and words in err.msg and err.hint
    assert errors[0] == errors[1]


def test_not_utf8_is_an_error_not_a_traceback(tmp_path) -> None:
    path = tmp_path / "bad.csv"
    path.write_bytes(b"id,lower,upper,size\na\xff,0,1,8\n")
    with pytest.raises(ArenaError) as e:
        csvio.read_problem(str(path))
    assert "not UTF-8" in e.value.msg and e.value.file == str(path)


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
