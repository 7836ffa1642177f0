"""A board file from what a vendor already ships: a GNU ld script's MEMORY block, a PlatformIO
board JSON, or a Zephyr devicetree after the C preprocessor (``arena-tool board import``).

Each source says only part of a board: an ld script has addresses, sizes and ``x`` (executable)
but no core; PlatformIO has the core, clock and sizes but no addresses; a devicetree has
addresses, sizes, the core and which RAM Zephyr uses (``zephyr,sram``, ``zephyr,dtcm``,
``zephyr,itcm``) but no wait states, cache or DMA reach. :class:`Imported` carries the board
document with conservative values where the source is silent (no zero-wait, no cache, no DMA)
and ``unknown``: one line per such guess, for the user to check and fill in.
"""

from __future__ import annotations

import ast
import json
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from arena_tool.core.errors import ArenaError

CORES = ("cortex-m0", "cortex-m0plus", "cortex-m3", "cortex-m4", "cortex-m7", "cortex-m23", "cortex-m33",
         "cortex-m55", "cortex-m85")
FLASH_NAMES = ("FLASH", "ROM", "FLASH0", "IROM", "CODE")


@dataclass
class Region:
    name: str
    origin: int
    length: int
    executable: bool = True
    writable: bool = True


@dataclass
class Imported:
    """A board document (``doc``, ready for yaml) and what the source did not say (``unknown``)."""

    doc: dict[str, Any]
    unknown: list[str] = field(default_factory=list)


def _strip_comments(text: str) -> str:
    """Without C comments; an unclosed ``/*`` runs to the end (one scan: a pattern needing the closing
    ``*/`` scanned to the end once per unclosed ``/*``, quadratic)."""
    return re.sub(r"//[^\n]*", "", re.sub(r"/\*.*?(?:\*/|\Z)", " ", text, flags=re.S))


MAX_EXPRESSION = 200  # characters of one number's expression: a vendor's is a few dozen


def _number(text: str, where: str) -> int:
    """An ld/dts number or constant expression (``0x20000000``, ``64K``, ``(256 * 1024)``)."""
    expr = text.strip()
    bad = ArenaError(f"{where}: '{expr[:60]}{'...' if len(expr) > 60 else ''}' is not a number arena can read",
                     hint="write the value in the file")
    if len(expr) > MAX_EXPRESSION:  # 100,000 terms overflowed the parser's and the evaluator's stacks
        raise bad
    expr = re.sub(r"\b(0[xX][0-9a-fA-F]+|[0-9]+)[uUlL]*\s*([KkMm])\b",
                  lambda m: f"({m.group(1)}*{1024 if m.group(2) in 'Kk' else 1024 * 1024})", expr)
    expr = re.sub(r"\b(0[xX][0-9a-fA-F]+|[0-9]+)[uUlL]+\b", r"\1", expr)
    try:
        tree = ast.parse(expr.replace("/", "//"), mode="eval")
    except (SyntaxError, ValueError):  # ValueError: a NUL byte
        raise bad from None
    return _evaluate(tree.body, bad)


_OPS: dict[type, Callable[[int, int], int]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv,
    ast.LShift: operator.lshift, ast.RShift: operator.rshift}


def _evaluate(node: ast.expr, bad: ArenaError) -> int:
    """Integer constants and + - * / << >> only, every value within 64 bits (no eval)."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        value = node.value
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        value = -_evaluate(node.operand, bad)
    elif isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        a, b = _evaluate(node.left, bad), _evaluate(node.right, bad)
        if (isinstance(node.op, (ast.LShift, ast.RShift)) and not 0 <= b < 64) or \
                (isinstance(node.op, ast.FloorDiv) and b == 0):
            raise bad
        value = _OPS[type(node.op)](a, b)
    else:
        raise bad
    if abs(value) >= 1 << 64:
        raise bad
    return value


# ---------------------------------------------------------------- GNU ld MEMORY

# Linear on any text: a block without its '}' runs to the end once (not once per "MEMORY {"), a region
# name starts only where a word starts and is taken whole (a 27 KB word took 300 s, each of its
# characters a start that scanned to its end), the pieces before ',' possessively.
_MEMORY = re.compile(r"\bMEMORY\s*+\{([^}]*+)(?:\}|\Z)")
_LD_REGION = re.compile(r"(?<![\w.$-])([A-Za-z_.][\w.$-]*+)\s*+(?:\(([^)]*+)\))?\s*+:\s*+(?:ORIGIN|org|o)\s*+=\s*+"
                        r"([^,]++),\s*+(?:LENGTH|len|l)\s*+=\s*+([^\n,}]++)")


def ld_regions(path: str) -> list[Region]:
    """The MEMORY regions of a GNU ld script, in order: attributes ``w`` and ``x`` (none: both)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = _strip_comments(f.read())
    except OSError as e:
        raise ArenaError(f"cannot read the linker script: {e.strerror or e}", file=path) from None
    out = []
    for block in _MEMORY.finditer(text):
        for m in _LD_REGION.finditer(block.group(1)):
            attrs = (m.group(2) or "rwx").lower()
            given = attrs.split("!")[0]  # after '!': what the region is not
            out.append(Region(m.group(1), _number(m.group(3), f"{path}: {m.group(1)} ORIGIN"),
                              _number(m.group(4), f"{path}: {m.group(1)} LENGTH"), executable="x" in given,
                              writable="w" in given))
    if not out:
        raise ArenaError("no MEMORY block with regions in the linker script", file=path,
                         hint="give the script that defines MEMORY (a C-preprocessed one after cpp)")
    return out


# ---------------------------------------------------------------- a board document


def _board(name: str, source: str, description: str, core: str | None, fpu: str | None, float_abi: str | None,
           flash: Region, ram: list[Region], default: str | None, unknown: list[str],
           clock_hz: int | None = None) -> Imported:
    if not re.fullmatch(r"[a-z0-9][a-z0-9_]*", name):
        raise ArenaError(f"board name '{name}' is not lower-case letters, digits and '_'", field="name",
                         hint="give --name like my_board")
    if core is None:
        core = "cortex-m4"
        unknown.append("cpu.core: the source names no core (cortex-m4 written; give --core)")
    if core not in CORES:
        raise ArenaError(f"core '{core}' is not one arena knows", field="cpu.core", hint="expected one of: " + ", ".join(CORES))
    if fpu is None:
        fpu = {"cortex-m4": "fpv4-sp-d16", "cortex-m7": "fpv5-sp-d16"}.get(core, "none")
        if core in ("cortex-m4", "cortex-m7", "cortex-m33", "cortex-m55", "cortex-m85"):
            unknown.append(f"cpu.fpu: whether the part has an FPU and which ({fpu} written; give --fpu)")
    if float_abi is None:
        float_abi = "soft" if fpu == "none" else "hard"
    cpu: dict[str, Any] = {"core": core, "fpu": fpu, "float_abi": float_abi}
    if clock_hz:
        cpu["clock_hz"] = clock_hz
    else:
        unknown.append("cpu.clock_hz: the core clock (informational)")
    regions = []
    for speed, r in enumerate(ram, 1):
        regions.append({"name": r.name, "origin": f"0x{r.origin:08X}", "length": _size(r.length),
                        "zero_wait": False, "cacheable": False, "dma": False, "executable": r.executable,
                        "speed": speed})
    unknown.append("ram[*].zero_wait, cacheable, dma, speed: wait states, D-cache and DMA reach of each region "
                   "(no, no, no and source order written; see the reference manual)")
    default = default or max(ram, key=lambda r: r.length).name
    doc: dict[str, Any] = {"name": name, "description": description, "source": source, "cpu": cpu,
                           "flash": {"name": flash.name, "origin": f"0x{flash.origin:08X}", "length": _size(flash.length)},
                           "ram": regions, "default_region": default, "data_region": default,
                           "note": "imported by arena-tool board import; to check: " + "; ".join(unknown)}
    if flash.name == "FLASH":
        del doc["flash"]["name"]
    return Imported(doc, unknown)


def _size(n: int) -> int | str:
    if n and n % (1024 * 1024) == 0:
        return f"{n // (1024 * 1024)}M"
    if n and n % 1024 == 0:
        return f"{n // 1024}K"
    return n


def from_ld(path: str, name: str, core: str | None = None, fpu: str | None = None,
            float_abi: str | None = None) -> Imported:
    """A board from a linker script's MEMORY: its flash the read-only region (or one named
    FLASH/ROM), every writable region a RAM region."""
    regions = ld_regions(path)
    flash = [r for r in regions if not r.writable or r.name.upper() in FLASH_NAMES]
    ram = [r for r in regions if r not in flash[:1] and r.writable]
    if not flash or not ram:
        raise ArenaError("the MEMORY block needs a flash region (no 'w', or named FLASH) and a RAM region",
                         file=path)
    return _board(name, f"GNU ld MEMORY of {path}", f"{name} (from {path})", core, fpu, float_abi, flash[0], ram,
                  None, [])


# Parts whose RAM is not one block at 0x20000000: (mcu prefix, the bank there, its name, where the
# rest is). PlatformIO gives one RAM size, which at 0x20000000 would run past the bank (an STM32H723's
# 564K where only the 128K DTCM is): the import writes that bank alone and names the rest.
_BANKED = (("stm32h7", 128 * 1024, "DTCM", "AXI SRAM at 0x24000000, SRAM1-4 at 0x30000000 and 0x38000000, ITCM at 0"),)


def from_platformio(path: str, name: str | None = None, core: str | None = None, fpu: str | None = None,
                    float_abi: str | None = None) -> Imported:
    """A board from a PlatformIO board JSON: core (``build.cpu``), clock (``build.f_cpu``), flash and
    RAM sizes (``upload.maximum_size``, ``maximum_ram_size``); no addresses, so the Cortex-M
    defaults (RAM 0x20000000, flash 0x08000000 on STM32 and 0 elsewhere) are written and named;
    on a part whose RAM is in banks (``_BANKED``) only the bank at 0x20000000, never a region that
    would run past it on silicon."""
    doc = _read_json(path)
    build, upload = doc.get("build", {}), doc.get("upload", {})
    if not isinstance(build, dict) or not isinstance(upload, dict):
        raise ArenaError("not a PlatformIO board JSON: 'build' and 'upload' must be objects", file=path,
                         field="build" if not isinstance(build, dict) else "upload")
    flash_size = _json_size(upload, "maximum_size", path)
    ram_size = _json_size(upload, "maximum_ram_size", path)
    mcu = str(build.get("mcu", ""))
    unknown = []
    flash_origin = 0x08000000 if mcu.lower().startswith("stm32") else 0
    unknown.append(f"flash.origin: PlatformIO gives no addresses (0x{flash_origin:08X} written)")
    ram = Region("SRAM", 0x20000000, ram_size)
    banked = next((b for b in _BANKED if mcu.lower().startswith(b[0])), None)
    if banked is not None and ram_size > banked[1]:
        ram = Region(banked[2], 0x20000000, banked[1])
        unknown.append(f"ram: PlatformIO's {ram_size:,} B of RAM span several banks of the {mcu}: only its "
                       f"{banked[1]:,} B {banked[2]} at 0x20000000 is written (the rest: {banked[3]}); import the "
                       "vendor's linker script (CubeMX's *_FLASH.ld) for every bank")
    else:
        unknown.append("ram[0].origin: PlatformIO gives no addresses (0x20000000, the Cortex-M SRAM region, written); "
                       "its one RAM size may span several regions")
    f_cpu = re.sub(r"[^0-9]", "", str(build.get("f_cpu", ""))[:40])
    if f_cpu and not 0 < int(f_cpu) < 1 << 32:
        raise ArenaError(f"build.f_cpu {f_cpu} Hz is not a clock", file=path, field="build.f_cpu",
                         hint="give the core clock in Hz, like \"168000000L\"")
    stem = re.sub(r"[^a-z0-9_]", "_", (name or path.rsplit("/", 1)[-1].rsplit(".", 1)[0]).lower())
    cpu = build.get("cpu")
    return _board(stem, f"PlatformIO board {path}", str(doc.get("name") or stem)[:200],
                  core or (cpu if isinstance(cpu, str) else None), fpu,
                  float_abi, Region("FLASH", flash_origin, flash_size, writable=False),
                  [ram], None, unknown, int(f_cpu) if f_cpu else None)


def _read_json(path: str) -> dict[str, Any]:
    """A JSON object from ``path``: anything else (a list, NaN, 100,000 nested '[') is one error naming it."""
    def no_constant(name: str) -> Any:
        raise ValueError(f"{name} is not JSON")

    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f, parse_constant=no_constant)
    except OSError as e:
        raise ArenaError(f"cannot read the PlatformIO board: {e.strerror or e}", file=path) from None
    except (ValueError, RecursionError) as e:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        why = "nested too deeply" if isinstance(e, RecursionError) else str(e)[:200]
        raise ArenaError(f"not a PlatformIO board JSON: {why}", file=path) from None
    if not isinstance(doc, dict):
        raise ArenaError(f"not a PlatformIO board JSON: a {type(doc).__name__}, not an object", file=path)
    return doc


def _json_size(upload: dict[str, Any], key: str, path: str) -> int:
    """``upload[key]``, a size in bytes (an integer or its digits) between 1 B and 4 GiB."""
    value = upload.get(key)
    text = str(value)[:40] if isinstance(value, (int, str)) and not isinstance(value, bool) else ""
    if not re.fullmatch(r"[0-9]{1,10}", text) or not 0 < int(text) <= 1 << 32:
        raise ArenaError(f"not a PlatformIO board JSON: upload.{key} {str(value)[:40]!r} is not a size in bytes",
                         file=path, field=f"upload.{key}", hint="give the size in bytes, like 65536")
    return int(text)


# ---------------------------------------------------------------- Zephyr devicetree


@dataclass
class _Node:
    name: str
    labels: list[str]
    props: dict[str, str]
    children: list[_Node]


# A value's pieces are disjoint ('"', '<', '[' and '&' start only their own piece) and taken possessively:
# with a bare character that could also begin '<...>', N cells without their ';' backtracked 2^N ways.
_TOKEN = re.compile(r'\s*+(?:((?:[\w,.+-]++:\s*+)*+)([\w,.@+#-]++|/)\s*+\{|(\};?)|([\w,.#+-]++)\s*+'
                    r'(?:=\s*+((?:"[^"]*+"|<[^>]*+>|\[[^\]]*+\]|&[\w-]++|[^;{}"<\[&])*+))?;|(/[\w-]++/[^;]*+;))', re.S)
_BLANK = re.compile(r"\s*\Z")


def _parse_dts(text: str, path: str) -> _Node:
    root = _Node("", [], {}, [])
    stack = [root]
    pos = 0
    text = re.sub(r"^\s*#[^\n]*", "", _strip_comments(text), flags=re.M)  # cpp line markers
    while pos < len(text):
        if _BLANK.match(text, pos):
            break
        m = _TOKEN.match(text, pos)
        if not m:
            line = text.count("\n", 0, pos) + 1
            raise ArenaError(f"cannot read the devicetree near line {line}", file=path,
                             hint="give the .dts after the C preprocessor (Zephyr's build/zephyr/zephyr.dts)")
        pos = m.end()
        if m.group(2):
            node = _Node(m.group(2), re.findall(r"([\w,.+-]+):", m.group(1) or ""), {}, [])
            if node.name == "/" and len(stack) == 1:
                node = root  # every "/ { }" adds to the root
            else:
                stack[-1].children.append(node)
            stack.append(node)
        elif m.group(3):
            if len(stack) > 1:
                stack.pop()
        elif m.group(4):
            stack[-1].props[m.group(4)] = (m.group(5) or "").strip()
    return root


def _walk(node: _Node) -> list[_Node]:
    """Every node, depth first in source order (a loop: 5,000 nested nodes overflowed the recursion)."""
    out, todo = [], [node]
    while todo:
        n = todo.pop()
        out.append(n)
        todo.extend(reversed(n.children))
    return out


def _reg(node: _Node, path: str) -> tuple[int, int] | None:
    raw = node.props.get("reg")
    if not raw:
        return None
    cells = re.findall(r"<([^>]*)>", raw)
    if not cells:
        return None
    parts = re.findall(r"\([^()]*(?:\([^()]*\)[^()]*)*\)|[^\s()]+", cells[0])
    if len(parts) < 2:
        return None
    return _number(parts[0], f"{path}: {node.name} reg"), _number(parts[1], f"{path}: {node.name} reg")


def from_dts(path: str, name: str, core: str | None = None, fpu: str | None = None,
             float_abi: str | None = None) -> Imported:
    """A board from a preprocessed devicetree: ``chosen``'s ``zephyr,flash``, ``zephyr,sram``,
    ``zephyr,dtcm`` and ``zephyr,itcm``, every ``memory@`` / ``mmio-sram`` node, the core from
    ``cpus``' ``arm,cortex-mN``."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            root = _parse_dts(f.read(), path)
    except OSError as e:
        raise ArenaError(f"cannot read the devicetree: {e.strerror or e}", file=path) from None
    nodes = _walk(root)
    by_label = {label: n for n in nodes for label in n.labels}
    chosen = next((n for n in nodes if n.name == "chosen"), None)

    def picked(key: str) -> _Node | None:
        ref = (chosen.props.get(key, "") if chosen else "").lstrip("&").strip()
        return by_label.get(ref)

    flash_node = picked("zephyr,flash")
    if flash_node is None or _reg(flash_node, path) is None:
        raise ArenaError("the devicetree's chosen node has no zephyr,flash with a reg", file=path,
                         hint="give the whole preprocessed zephyr.dts")
    f_origin, f_len = _reg(flash_node, path)  # type: ignore[misc]
    ram: list[Region] = []
    seen: set[int] = set()
    order: list[tuple[str, _Node]] = []
    for key, label in (("zephyr,dtcm", "DTCM"), ("zephyr,itcm", "ITCM"), ("zephyr,sram", "SRAM")):
        n = picked(key)
        if n is not None:
            order.append((label, n))
    for n in nodes:
        compat = n.props.get("compatible", "")
        if (n.name.startswith("memory@") or "mmio-sram" in compat) and n is not flash_node:
            order.append((n.labels[0].upper() if n.labels else n.name.replace("@", "_").upper(), n))
    default = None
    for label, n in order:
        reg = _reg(n, path)
        if reg is None or reg[0] in seen or reg[1] == 0:
            continue
        seen.add(reg[0])
        rname = re.sub(r"[^A-Za-z0-9_]", "_", label)
        ram.append(Region(rname, reg[0], reg[1], executable=True))
        if n is picked("zephyr,sram"):
            default = rname
    if not ram:
        raise ArenaError("the devicetree names no RAM (zephyr,sram, memory@ or mmio-sram nodes)", file=path)
    found = core
    if found is None:
        for n in nodes:
            m = re.search(r'"arm,(cortex-m[0-9]+(?:plus)?)\+?"', n.props.get("compatible", ""))
            if m and n.name.startswith("cpu@"):
                found = m.group(1)
                break
    return _board(name, f"Zephyr devicetree {path}", f"{name} (from {path})", found, fpu, float_abi,
                  Region("FLASH", f_origin, f_len, writable=False), ram, default, [])


def render(imp: Imported) -> str:
    """The board file's text: the document, then what to check as comments."""
    import yaml

    head = "# yaml-language-server: $schema=../schemas/board.schema.json\n"
    head += "".join(f"# TODO check: {u}\n" for u in imp.unknown)
    return head + yaml.safe_dump(imp.doc, sort_keys=False, width=100)
