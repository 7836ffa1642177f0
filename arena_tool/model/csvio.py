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

import os
import re
from typing import Iterable, Sequence

from arena_tool.core.errors import ArenaError
from arena_tool.core.problem import Buffer, Plan, Problem
from arena_tool.core.files import write_atomic

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
    """Read a CSV problem; every malformed row is an ArenaError naming file, line and column."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise ArenaError(f"cannot read problem: {e.strerror}", file=path,
                         hint="give the path of an existing CSV file") from e
    lines = text.splitlines()
    if not lines or not lines[0].strip():
        raise ArenaError("empty file: expected a header line", file=path, line=1,
                         hint="start with 'id,lower,upper,size'")
    header = [h.strip().lower() for h in lines[0].split(",")]
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
    inclusive = "end" in cols
    hi_key = "end" if inclusive else "upper"
    fast = _read_rows_fast(lines, len(header), cols, inclusive)
    if fast is not None:
        return Problem(fast, capacity if capacity is not None else capacity_from_name(path))
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
    if capacity is None:
        capacity = capacity_from_name(path)
    return Problem(tuple(buffers), capacity)


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


def _rows(problem: Problem, offsets: Sequence[int] | None) -> str:
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
