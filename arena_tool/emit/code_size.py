"""The runtime code a board's firmware links, from the measured table (run/code_size.py).

``arena_tool/runtime/code_size.json`` holds, per core flags and level, the functions the
runtime keeps with no kernel (the base) and the functions each kernel and the tile loop add
(``name:bytes``), measured by linking the compiled runtime with ``--gc-sections``. A board's
code is the base plus the union of its kernels' functions (code two kernels share counts
once), plus the tile loop's when a model has one. None for a core or level the table lacks.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, Iterable, Sequence

from arena_tool.core.files import read_json
from arena_tool.model import optable

TABLE = Path(__file__).resolve().parent.parent / "runtime" / "code_size.json"


def key(cpu: Sequence[str], level: str) -> str:
    """The table's key of a core's gcc flags and an optimize level."""
    return " ".join([*cpu, level])


@functools.lru_cache(maxsize=1)
def _table() -> dict[str, Any]:
    doc: dict[str, Any] = read_json(str(TABLE), "code size table", "regenerate it: python3 -m arena_tool.run.code_size",
                                    "code_size")
    return doc


def functions(cpu: Sequence[str], level: str, ops: Iterable[str], loops: bool) -> dict[str, int] | None:
    """The runtime functions (``name:bytes`` -> bytes) a firmware for ``cpu`` at ``level`` links
    for the runtime ops ``ops`` (codegen.runtime_ops), with the tile loop when ``loops``."""
    entry = _table()["entries"].get(key(cpu, level))
    if entry is None:
        return None
    kernel_of = {r.enum: r.kernel for r in optable.RUNTIME}
    out: dict[str, int] = dict(entry["base"])
    for op in ops:
        out.update(entry["kernels"].get(kernel_of.get(op, ""), {}))
    if loops:
        out.update(entry["tiles"])
    return out


def code_bytes(cpu: Sequence[str], level: str, ops: Iterable[str], loops: bool) -> int | None:
    """Bytes of runtime code ``functions`` counts; None for a core or level the table lacks."""
    found = functions(cpu, level, ops, loops)
    return None if found is None else sum(found.values())
