"""The user's own linker script (``linker: fragment``): what it INCLUDEs and defines, read and
checked when the manifest is loaded and again before the board is linked.

Apart from writing the fragment (linker_fragment, an output): reading what the user declared
belongs with the target, which the manifest checks before anything is planned.
"""

from __future__ import annotations

import bisect
import dataclasses
import difflib
import os
import re
from typing import Iterable, Mapping

from arena_tool.core.errors import ArenaError

FRAGMENT_NAME = "arena_fragment.ld"  # the name a user's script INCLUDEs; one per board folder


@dataclasses.dataclass
class ScriptInfo:
    """What ``read_script`` found in a linker script and the scripts it INCLUDEs from its folder.

    fragment_at: (file, line, inside SECTIONS) of each INCLUDE of the fragment;
    memory: MEMORY name -> (file, line, ORIGIN, LENGTH): numbers in bytes, None where not a plain number;
    complete: every INCLUDE was read and nothing needs the C preprocessor (else ``memory``
    may lack regions defined elsewhere, and is not held against the manifest);
    files: every script read, the given one first (what ``arena-tool generate``'s depfile lists).
    """

    fragment_at: list[tuple[str, int, bool]] = dataclasses.field(default_factory=list)
    memory: dict[str, tuple[str, int, int | None, int | None]] = dataclasses.field(default_factory=dict)
    complete: bool = True
    files: list[str] = dataclasses.field(default_factory=list)


_INCLUDE = re.compile(r"\bINCLUDE\s+(\"[^\"\n]+\"|[^\s;{}]+)")
_BRACE = re.compile(r"\b(SECTIONS|MEMORY)\s*\{|[{}]")
# A region starts at a name's first character (the lookbehind), so no position inside a long word
# is tried again; its attributes are short: every pattern here is linear in the script.
_REGION = re.compile(r"(?<![\w.$-])([A-Za-z_.][\w.$-]*)\s*(?:\([^)\n]{0,64}\))?\s*:\s*(?:ORIGIN|org|o)\s*=\s*"
                     r"([^,\n]+),\s*(?:LENGTH|len|l)\s*=\s*([^\n,}]+)")
_NUMBER = re.compile(r"^\s*(0[xX][0-9a-fA-F]+|[0-9]+)\s*([KkMm]?)\s*$")


def _strip_comments(text: str) -> str:
    """``text`` with every /* comment */ blanked, newlines kept (so positions keep their line); an
    unclosed comment runs to the end, as ld reads it. One pass."""
    out, i = [], 0
    while True:
        start = text.find("/*", i)
        if start < 0:
            out.append(text[i:])
            return "".join(out)
        end = text.find("*/", start + 2)
        end = len(text) if end < 0 else end + 2
        out.append(text[i:start])
        comment = text[start:end]
        out.append(re.sub(r"[^\n]", " ", comment))
        i = end


def _blocks(text: str, keyword: str) -> list[tuple[int, int]]:
    """(start, end) offsets of every outermost ``keyword { ... }`` command, braces matched, in one
    pass (a block nested in another of its kind is inside the outer span already)."""
    spans = []
    depth = 0
    open_at: int | None = None  # start of the outermost open block of ``keyword``
    open_depth = 0
    for m in _BRACE.finditer(text):
        if m.group(0) == "}":
            depth = max(depth - 1, 0)
            if open_at is not None and depth < open_depth:
                spans.append((open_at, m.end()))
                open_at = None
            continue
        depth += 1
        if m.group(1) == keyword and open_at is None:
            open_at, open_depth = m.start(), depth
    if open_at is not None:
        spans.append((open_at, len(text)))
    return spans


def _number(expr: str) -> int | None:
    """A plain ld number (0x8000000, 512K, 1M) in bytes; None for an expression."""
    m = _NUMBER.match(expr)
    if not m:
        return None
    n = int(m.group(1), 16 if m.group(1)[:2].lower() == "0x" else 10)
    return n * {"": 1, "K": 1024, "M": 1 << 20}[m.group(2).upper()]


class _Lines:
    """Line numbers of offsets in one text, by bisection over its newlines (not a count per lookup)."""

    def __init__(self, text: str) -> None:
        self.newlines = [m.start() for m in re.finditer("\n", text)]

    def __call__(self, pos: int) -> int:
        return bisect.bisect_left(self.newlines, pos) + 1


def read_script(path: str, fragment_name: str = FRAGMENT_NAME) -> ScriptInfo:
    """Read ``path`` (and, recursively, the scripts it INCLUDEs that sit beside it)."""
    info = ScriptInfo()
    _read_into(info, path, fragment_name, in_sections=False, seen=set())
    return info


def _read_into(info: ScriptInfo, path: str, fragment_name: str, in_sections: bool, seen: set[str]) -> None:
    key = os.path.normcase(os.path.abspath(path))
    if key in seen:
        return
    seen.add(key)
    info.files.append(path)
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = _strip_comments(f.read())
    except OSError as e:
        raise ArenaError(f"cannot read the linker script: {e.strerror or e}", file=path) from None
    if re.search(r"^[ \t]*#[ \t]*(include|define|if)", text, re.M):
        info.complete = False  # a C-preprocessed template (Zephyr): its MEMORY may come from elsewhere
    sections = _blocks(text, "SECTIONS")  # disjoint, in order
    starts = [a for a, _ in sections]
    line = _Lines(text)
    for m in _INCLUDE.finditer(text):
        target = m.group(1).strip('"')
        k = bisect.bisect_left(starts, m.start()) - 1
        inside = in_sections or (k >= 0 and m.start() < sections[k][1])
        if os.path.basename(target) == fragment_name:
            info.fragment_at.append((path, line(m.start()), inside))
            continue
        nested = os.path.join(os.path.dirname(path), target)
        if os.path.isfile(nested):
            _read_into(info, nested, fragment_name, inside, seen)
        else:
            info.complete = False  # found through -L at link time: not read here
    for a, b in _blocks(text, "MEMORY"):
        for r in _REGION.finditer(text, a, b):
            info.memory.setdefault(r.group(1), (path, line(r.start()), _number(r.group(2)),
                                                _number(r.group(3))))


def check_script(path: str, needed: Mapping[str, str], field: str | None = None,
                 origins: Mapping[str, int] | None = None, regions_field: str = "linker_regions",
                 fragment_name: str = FRAGMENT_NAME) -> ScriptInfo:
    """Raise ArenaError (naming ``path``) unless the script INCLUDEs the fragment inside SECTIONS
    and, when its MEMORY is all in view, defines every name ``needed`` maps a board region to.

    needed: board region -> the MEMORY name the fragment will write for it; origins: board
    region -> its start address (the hint then names the script's region at that address).
    """
    if not os.path.isfile(path):
        raise ArenaError(f"linker script not found: {path}", field=field,
                         hint="linker_script: is relative to the manifest's folder")
    info = read_script(path, fragment_name)
    include = f"INCLUDE {fragment_name}"
    if not info.fragment_at:
        raise ArenaError(f"{path} never INCLUDEs {fragment_name}, so arena's sections and checks would not be "
                         "linked", file=path, field=field,
                         hint=f"add the line '{include}' inside its SECTIONS {{ }}, after the .bss section and "
                              "before the heap/stack section")
    outside = [(f, line) for f, line, inside in info.fragment_at if not inside]
    if outside and len(outside) == len(info.fragment_at):
        f, line = outside[0]
        raise ArenaError(f"'{include}' is outside SECTIONS {{ }}: the fragment holds output sections, which ld "
                         "reads only inside the SECTIONS command", file=f, line=line, field=field,
                         hint="move the INCLUDE inside SECTIONS { }, after the .bss section")
    if info.memory and info.complete:
        _check_memory(path, info, needed, origins or {}, regions_field)
    return info


def _check_memory(path: str, info: ScriptInfo, needed: Mapping[str, str], origins: Mapping[str, int],
                  field: str) -> None:
    names = sorted(info.memory)
    for board_name, memory in sorted(needed.items()):
        if memory in info.memory:
            continue
        guess = _same_address(info, origins.get(board_name)) or difflib.get_close_matches(memory, names, 1, 0.5)
        example = f"linker_regions: {{{board_name}: {guess[0] if guess else '<your name>'}}}"
        raise ArenaError(f"arena's sections go to MEMORY region {memory}, which {path} does not define "
                         f"(its MEMORY regions: {', '.join(names)})", file=path, field=field,
                         hint=f"map the board's {board_name} to your script's name for that memory: {example}")


def _same_address(info: ScriptInfo, origin: int | None) -> list[str]:
    """The script's MEMORY region that holds address ``origin`` (a board region's start), if any."""
    for name, (_, _, start, length) in sorted(info.memory.items()):
        if origin is not None and start is not None and length is not None and start <= origin < start + length:
            return [name]
    return []


def memory_lengths(path: str) -> dict[str, int]:
    """MEMORY name -> LENGTH in bytes, for the plain numbers of a user's script (messages only)."""
    try:
        info = read_script(path)
    except ArenaError:
        return {}
    return {name: length for name, (_, _, _, length) in info.memory.items() if length is not None}


def needed_names(regions: Iterable[str], names: Mapping[str, str]) -> dict[str, str]:
    """board region -> the MEMORY name the fragment writes for it."""
    return {r: names.get(r, r) for r in regions}
