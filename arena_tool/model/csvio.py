"""Planning problems in minimalloc's CSV format, converted once to inclusive lifetimes.

Format (minimalloc ``converter.cc``, read from its description): a header line,
then one row per buffer; columns found by name in any order; no quoting.
  id (aliases buffer, buffer_id)    any text, becomes Buffer.name (unique)
  lower (aliases start, begin)      first op
  upper                             one past the last op: half-open [lower, upper)
  end                               the last op itself (inclusive) -- instead of upper
  size                              bytes, > 0
  alignment (optional)              bytes, >= 1 (default 1)
  offset (optional)                 bytes: a fixed offset on input, the answer on output
Other minimalloc columns (hint, gaps) are refused with a message, not ignored.
The capacity comes from the file name ``X.<capacity>.csv`` unless given.

Worked example (minimalloc's examples/input.12.csv, capacity 12)::

    id,lower,upper,size        Buffer("b1", 4, start=0, end=2)
    b1,0,3,4          ->       ...
    b5,0,21,4                  Buffer("b5", 4, start=0, end=20)

Writers use the half-open ``upper`` form and write atomically.
"""

from __future__ import annotations

import ctypes
import os
import re
from pathlib import Path
from typing import Iterable, Sequence

from arena_tool.core import native
from arena_tool.core.cache import machine_cache
from arena_tool.core.errors import ArenaError
from arena_tool.core.problem import Buffer, ColumnBuffers, Columns, Plan, Problem
from arena_tool.core.files import write_atomic

SOURCE = Path(__file__).with_name("csvio.c")

_ALIASES = {
    "id": "id", "buffer": "id", "buffer_id": "id",
    "lower": "lower", "start": "lower", "begin": "lower",
    "upper": "upper", "end": "end",
    "size": "size", "alignment": "alignment", "offset": "offset",
}
_UNSUPPORTED = {"hint", "gaps"}


def capacity_from_name(path: str) -> int | None:
    """``A.1048576.csv`` -> 1048576; None when the name carries no capacity."""
    m = re.search(r"\.(\d+)\.csv$", os.path.basename(path))
    return int(m.group(1)) if m else None


def read_problem(path: str, capacity: int | None = None) -> Problem:
    """Read a CSV problem; every malformed row is an ArenaError naming file, line and column.
    A well-formed file without an offset column is read by csvio.c straight into columns (a
    ColumnBuffers); any other, or without a C compiler, row by row here."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise ArenaError(f"cannot read problem: {e.strerror}", file=path,
                         hint="give the path of an existing CSV file") from e
    if capacity is None:
        capacity = capacity_from_name(path)
    fast = _read_compiled(path, data)
    if fast is not None:
        return Problem(fast, capacity)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ArenaError(f"not UTF-8 text: byte {e.start} is {data[e.start:e.start + 1]!r}", file=path,
                         hint="save the file as UTF-8 (or ASCII) text") from None
    lines = text.splitlines()
    header, cols, inclusive = _header(path, lines[0] if lines else "")
    hi_key = "end" if inclusive else "upper"
    fast_rows = _read_rows_fast(lines, len(header), cols, inclusive)
    if fast_rows is not None:
        return Problem(fast_rows, capacity)
    buffers: list[Buffer] = []
    seen: dict[str, int] = {}
    for ln, raw in enumerate(lines[1:], start=2):
        if not raw.strip():
            continue  # blank lines (e.g. a trailing one) carry nothing
        cells = [c.strip() for c in raw.split(",")]
        if len(cells) != len(header):
            raise ArenaError(f"{len(cells)} fields, the header has {len(header)}", file=path, line=ln,
                             hint="give one value per header column, separated by commas")

        def num(key: str, minimum: int) -> int:
            c = cols[key]
            try:
                v = int(cells[c])
            except ValueError:
                raise ArenaError(f"'{cells[c]}' is not an integer", file=path, line=ln, col=c + 1,
                                 field=header[c], hint=f"write a whole number >= {minimum}") from None
            if v < minimum:
                raise ArenaError(f"{v} is below {minimum}", file=path, line=ln, col=c + 1,
                                 field=header[c], hint=f"write a whole number >= {minimum}")
            return v

        name = cells[cols["id"]]
        if not name:
            raise ArenaError("empty id", file=path, line=ln, col=cols["id"] + 1, field=header[cols["id"]],
                             hint="give every buffer a name")
        if name in seen:
            raise ArenaError(f"id '{name}' repeats line {seen[name]}", file=path, line=ln,
                             col=cols["id"] + 1, field=header[cols["id"]], hint="make every id unique")
        seen[name] = ln
        lower = num("lower", 0)
        hi = num(hi_key, 0)
        end = hi if inclusive else hi - 1
        if end < lower:
            rel = "lower <= end" if inclusive else "lower < upper"
            raise ArenaError(f"empty lifetime [{lower}, {hi}{']' if inclusive else ')'}", file=path, line=ln,
                             col=cols[hi_key] + 1, field=hi_key, hint=f"need {rel}")
        size = num("size", 1)
        alignment = num("alignment", 1) if "alignment" in cols else 1
        fixed = None
        if "offset" in cols and cells[cols["offset"]] not in ("", "-1"):
            fixed = num("offset", 0)
            if fixed % alignment:
                raise ArenaError(f"offset {fixed} is not a multiple of alignment {alignment}", file=path,
                                 line=ln, col=cols["offset"] + 1, field="offset",
                                 hint="fix the offset or the alignment")
        buffers.append(Buffer(name, size, lower, end, alignment, fixed))
    return Problem(tuple(buffers), capacity)


def _header(path: str, line: str) -> tuple[list[str], dict[str, int], bool]:
    """The header line's cells (lower case), the column of each field, and whether the
    lifetime's end is inclusive ('end') rather than half-open ('upper')."""
    if not line.strip():
        raise ArenaError("empty file: expected a header line", file=path, line=1,
                         hint="start with 'id,lower,upper,size'")
    header = [h.strip().lower() for h in line.split(",")]
    cols: dict[str, int] = {}
    for c, h in enumerate(header):
        if h in _UNSUPPORTED:
            raise ArenaError(f"column '{h}' is not supported", file=path, line=1, col=c + 1, field=h,
                             hint="remove the column; arena plans contiguous lifetimes only")
        if h not in _ALIASES:
            raise ArenaError(f"unknown column '{h}'", file=path, line=1, col=c + 1, field=h,
                             hint="expected one of id, lower, upper (or end), size, alignment, offset")
        key = _ALIASES[h]
        if key in cols or (key in ("upper", "end") and ({"upper", "end"} & cols.keys())):
            raise ArenaError(f"duplicate column '{h}'", file=path, line=1, col=c + 1, field=h,
                             hint="keep one column of each kind")
        cols[key] = c
    for need in ("id", "lower", "size"):
        if need not in cols:
            raise ArenaError(f"missing column '{need}'", file=path, line=1, field=need,
                             hint="the header must name id, lower, upper (or end) and size")
    if "upper" not in cols and "end" not in cols:
        raise ArenaError("missing column 'upper' (or 'end')", file=path, line=1, field="upper",
                         hint="add 'upper' (half-open) or 'end' (inclusive last op)")
    return header, cols, "end" in cols


_PRINTABLE = re.compile(rb"[ -~\t]*")  # a header line the row reader's splitlines splits nowhere


def _library() -> ctypes.CDLL | None:
    """csvio.c compiled, or None (no compiler, ARENA_NATIVE=0)."""
    lib = native.library("arena_csvio", (SOURCE,), machine_cache())
    if lib is not None and lib.arena_read_rows.restype is not ctypes.c_int64:
        p = ctypes.POINTER(ctypes.c_int64)
        lib.arena_read_rows.restype = ctypes.c_int64
        lib.arena_read_rows.argtypes = [ctypes.c_char_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, p,
                                        ctypes.c_int64, ctypes.c_int64, p, p, p, p, p, p]
        lib.arena_write_rows.restype = ctypes.c_int64
        lib.arena_write_rows.argtypes = [ctypes.c_int64, ctypes.c_char_p, p, p, p, p, p, p, p, ctypes.c_void_p]
    return lib


def _read_compiled(path: str, data: bytes) -> ColumnBuffers | None:
    """The rows by csvio.c, when the header is one printable ASCII line without an offset
    column and every row reads as the row reader would read it; else None (the row reader
    then reads the file, or names its first fault)."""
    eol = data.find(b"\n")
    first = data[:len(data) if eol < 0 else eol].removesuffix(b"\r")
    if not first.strip() or not _PRINTABLE.fullmatch(first):
        return None
    header, cols, inclusive = _header(path, first.decode("ascii"))
    if "offset" in cols or len(header) > 64:
        return None
    lib = _library()
    if lib is None:
        return None
    import numpy as np

    start = len(data) if eol < 0 else eol + 1
    rows = data.count(b"\n", start) + 1
    out = np.empty((6, rows), dtype=np.int64)
    keys = np.array([cols["id"], cols["lower"], cols["end" if inclusive else "upper"], cols["size"],
                     cols.get("alignment", -1)], dtype=np.int64)
    p = ctypes.POINTER(ctypes.c_int64)
    m = lib.arena_read_rows(data, start, len(data), len(header), keys.ctypes.data_as(p), int(inclusive), rows,
                            *(out[k].ctypes.data_as(p) for k in range(6)))
    if m < 0:
        return None
    at, length, lower, end, size, align = (a.copy() if m < rows else a for a in out[:, :m])
    for a in (at, length, lower, end, size, align):
        a.flags.writeable = False
    fixed = np.full(m, -1, dtype=np.int64)
    fixed.flags.writeable = False
    return ColumnBuffers(Columns(size, lower, end, align, fixed), data, at, length)


def _read_rows_fast(lines: list[str], width: int, cols: dict[str, int], inclusive: bool) -> tuple[Buffer, ...] | None:
    """The rows of a well-formed file without fixed offsets, column by column (issue 39: the time
    limit counts reading; at 100,000 rows 0.4 CPU-s row by row); None when any row is not, and
    the row-by-row reader then names the first fault."""
    rows = [r for r in lines[1:] if r.strip()]
    if "offset" in cols or any(r.count(",") != width - 1 for r in rows):
        return None
    cells = ",".join(rows).split(",")  # one split of the whole body, then a column is a slice

    def column(key: str) -> list[str]:
        return cells[cols[key]::width]
    names = [c.strip() for c in column("id")]
    if "" in names or len(set(names)) != len(names):
        return None
    try:
        lower = list(map(int, column("lower")))
        hi = list(map(int, column("end" if inclusive else "upper")))
        size = list(map(int, column("size")))
        align = list(map(int, column("alignment"))) if "alignment" in cols else [1] * len(rows)
    except ValueError:
        return None
    end = hi if inclusive else [h - 1 for h in hi]
    if rows and (min(lower) < 0 or min(hi) < 0 or min(size) < 1 or min(align) < 1
                 or any(e < lo for lo, e in zip(lower, end))):
        return None
    return tuple(map(Buffer, names, size, lower, end, align))


def _rows_compiled(bufs: ColumnBuffers, offsets: Sequence[int] | None) -> bytes | None:
    """``_rows`` by csvio.c (the same bytes) for buffers read by it; None without the library.
    Its ids hold no comma or newline: the reader split the rows and cells at them."""
    lib = _library()
    c = bufs.columns
    if lib is None or (c.fixed >= 0).any():
        return None
    import numpy as np

    with_align = bool((c.align != 1).any())
    head = "id,lower,upper,size" + (",alignment" if with_align else "") + (",offset" if offsets is not None else "")
    n = len(bufs)
    off = None if offsets is None else np.array(offsets, dtype=np.int64)
    if off is not None and len(off) != n:
        return None
    out = np.empty(int(bufs.name_len.sum()) + 6 * 21 * n + 1, dtype=np.uint8)
    p = ctypes.POINTER(ctypes.c_int64)
    arrays = (bufs.name_at, bufs.name_len, c.start, c.end, c.size)
    written = lib.arena_write_rows(n, bufs.text, *(a.ctypes.data_as(p) for a in arrays),
                                   c.align.ctypes.data_as(p) if with_align else None,
                                   None if off is None else off.ctypes.data_as(p), out.ctypes.data)
    return head.encode() + b"\n" + out[:written].tobytes()


def _rows(problem: Problem, offsets: Sequence[int] | None) -> str | bytes:
    """The file's text: a header line and a line per buffer."""
    if isinstance(problem.buffers, ColumnBuffers):
        done = _rows_compiled(problem.buffers, offsets)
        if done is not None:
            return done
    with_align = any(b.alignment != 1 for b in problem.buffers)
    head = ["id", "lower", "upper", "size"] + (["alignment"] if with_align else [])
    if offsets is not None or any(b.fixed_offset is not None for b in problem.buffers):
        head.append("offset")
    bufs = problem.buffers
    names = [b.name for b in bufs]
    for name in names:
        if "," in name or "\n" in name:
            raise ArenaError(f"buffer name '{name}' contains a comma or newline", field="id",
                             hint="CSV ids cannot be quoted; rename the buffer")
    fields: list[Iterable[str]] = [names, (str(b.start) for b in bufs), (str(b.end + 1) for b in bufs),
                                   (str(b.size) for b in bufs)]
    if with_align:
        fields.append(str(b.alignment) for b in bufs)
    if offsets is not None:
        fields.append(map(str, offsets))
    elif "offset" in head:
        fields.append("" if b.fixed_offset is None else str(b.fixed_offset) for b in bufs)
    return "\n".join([",".join(head), *map(",".join, zip(*fields))]) + "\n"  # a column at a time: issue 39


def write_problem(problem: Problem, path: str) -> None:
    """Write half-open ``id,lower,upper,size[,alignment][,offset]`` (offset = fixed offsets)."""
    write_atomic(path, _rows(problem, None))


def write_solution(problem: Problem, plan: Plan, path: str) -> None:
    """The problem's rows plus an ``offset`` column holding the plan's offsets."""
    write_atomic(path, _rows(problem, plan.offsets))
