"""What tests build besides models: a copy of the example project and scons run in it, a
board target and typed plan files for the gate, a vendor linker script, a test board.

Shared here (the model builders are models.py, tflite_models.py, quantized.py and zoo.py)
so no test module imports another.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from arena_tool.core.problem import ModelOptions
from arena_tool.plan import planfile
from arena_tool.target import manifest

ROOT = Path(__file__).resolve().parent.parent
INCLUDE = "  INCLUDE arena_fragment.ld\n"
# shipped boards the example manifest leaves out: the STM32L432's 256K of flash does not hold the
# example's four models (290,698 B of weights); arena-tool fit's tests and bench/fit.py use it
NOT_IN_EXAMPLE = frozenset({"nucleo_l432kc"})
ACTION = re.compile(r"^(Planning|Checking|Generating|Compiling|Linking) ", re.M)


# --- a copy of the example project, and scons run in it ------------------------------------


def copy_example(dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy2(ROOT / "SConstruct", dest / "SConstruct")
    shutil.copytree(ROOT / "site_scons", dest / "site_scons", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "example_firmware", dest / "example_firmware",
                    ignore=shutil.ignore_patterns("__pycache__", "build"))
    return dest


def copy_package(dest: Path) -> Path:
    """A copy of the package (arena_tool with its runtime, schemas, boards) to edit and run from."""
    for name in ("arena_tool", "schemas", "boards"):
        shutil.copytree(ROOT / name, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def scons(cwd: Path, *args: str, seed: str = "0", pkg: Path = ROOT,
          environ: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """SCons in ``cwd``; the timeout only catches a hang (board=all compiles every board's
    firmware: minutes on a loaded two-core machine running two test workers)."""
    env = dict(os.environ, PYTHONPATH=str(pkg), PYTHONHASHSEED=seed, **(environ or {}))
    env.pop("VERBOSE", None)
    return subprocess.run([sys.executable, "-m", "SCons", "-Q", *args], cwd=cwd, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=900)


def outputs_under_hash_seeds(args: list[str], output: str, seeds: tuple[str, ...] = ("0", "12345")) -> list[bytes]:
    """``python -m arena_tool ARGS`` once per PYTHONHASHSEED, each time the bytes of the file it
    wrote (``output``, in which ``{seed}`` is the seed): the same inputs must give the same bytes."""
    out = []
    for seed in seeds:
        path = output.format(seed=seed)
        r = subprocess.run([sys.executable, "-m", "arena_tool", *(path if a == output else a for a in args)],
                           env=dict(os.environ, PYTHONHASHSEED=seed), capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        out.append(Path(path).read_bytes())
    return out


def printed_under_hash_seeds(code: str, *argv: str, seeds: tuple[str, ...] = ("1", "4242")) -> list[str]:
    """What ``python -c CODE ARGV`` prints, once per PYTHONHASHSEED, run from the repository: a
    result must not depend on set or dict order, which one process cannot show (its seed is fixed)."""
    return [subprocess.run([sys.executable, "-c", code, *argv], cwd=ROOT, env=dict(os.environ, PYTHONHASHSEED=seed),
                           capture_output=True, text=True, check=True, timeout=120).stdout for seed in seeds]


def set_budget(proj: Path, board: str, budget: str) -> None:
    path = proj / "example_firmware" / "arena.yaml"
    text = path.read_text()
    if f"  - {board}\n" in text:
        text = text.replace(f"  - {board}\n", f"  - name: {board}\n    budget: {budget}\n")
    else:
        text = re.sub(rf"(  - name: {board}\n(?:    .*\n)*?    budget: )\S+", rf"\g<1>{budget}", text)
    path.write_text(text)


CHAIN_OPTIONS = ModelOptions(alignment=16, bitwidths=(("T2", 4),), scratch="row")  # the `planned` fixture's


# --- a board target and plan files for the gate ---------------------------------------------


def plan_doc(arena: int, lb: int, planner: str = "greedy_size", dtype: str = "float32",
             alignment: int = 16) -> dict[str, Any]:
    return {"planner": planner, "arena_size": arena, "lower_bound": lb, "optimal": None, "status": "heuristic",
            "model": "m.onnx", "model_sha256": "0" * 64, "weights_bytes": 100, "alignment": alignment,
            "buffers": [{"name": "t", "kind": "activation", "dtype": dtype}]}


def target(tmp_path: Path, board_yaml: str, models: str = "a,b", **extra: str) -> manifest.BoardTarget:
    for name in models.split(","):
        (tmp_path / f"{name}.onnx").write_bytes(b"")
    top = "".join(f"{k}: {v}\n" for k, v in extra.items())
    items = ", ".join(f"{{name: {n}, path: {n}.onnx}}" for n in models.split(","))
    (tmp_path / "arena.yaml").write_text(f"{top}models: [{items}]\nboards: [{board_yaml}]\n")
    return manifest.load(str(tmp_path / "arena.yaml")).targets[0]


def typed(doc: dict[str, Any]) -> planfile.PlanFile:
    """plan_doc's few fields completed to a schema-valid plan file (empty schedule, 1-element buffers)."""
    options = {"activation_dtype": None, "bitwidths": {}, "inplace": True, "scratch": "none", "input_shapes": {}}
    buffer = {"shape": [1], "elements": 1, "size": 0, "offset": 0, "first_op": 0, "last_op": 0, "alias_of": None}
    full = {"format_version": 1, "k": 1, "options": options, "best_bound": None, "schedule": [], **doc,
            "buffers": [{**buffer, **b} for b in doc["buffers"]]}
    return planfile.PlanFile.from_json(full, "p.json")


def plans(t: manifest.BoardTarget, *docs: dict[str, Any]) -> list[tuple[str, str, planfile.PlanFile]]:
    return [(s.name, f"build/plans/{s.name}.plan.json", typed(d)) for s, d in zip(t.models, docs)]


# --- a vendor linker script (STM32CubeMX style) and a test board -----------------------------


H743_MEMORY = [("DTCMRAM", "xrw", 0x20000000, "128K"), ("ITCMRAM", "xrw", 0x00000000, "64K"),
               ("RAM_D1", "xrw", 0x24000000, "512K"), ("RAM_D2", "xrw", 0x30000000, "288K"),
               ("RAM_D3", "xrw", 0x38000000, "64K"), ("FLASH", "rx", 0x08000000, "2048K")]


def vendor_script(memory: list[tuple[str, str, int, str]], data: str, include: str = INCLUDE,
                  after_heap: str = "", stack_top: str = "_estack") -> str:
    """An STM32CubeMX-style linker script: ``include`` sits after .bss, ``after_heap`` after the heap/stack;
    ``stack_top`` names the initial stack pointer's symbol (CubeMX's _estack)."""
    regions = "\n".join(f"  {n:<10} ({a}) : ORIGIN = 0x{o:X}, LENGTH = {length}" for n, a, o, length in memory)
    top = f"{stack_top} = ORIGIN({data}) + LENGTH({data});    /* end of RAM */\n"
    return f"""/*
******************************************************************************
**  File        : LinkerScript.ld (STM32CubeMX style, written by tests/builders.py)
**  Abstract    : the vendor's own memory map and sections; arena's are INCLUDEd
******************************************************************************
*/

/* Entry Point */
ENTRY(Reset_Handler)

/* Highest address of the user mode stack */
{top}/* Generate a link error if heap and stack don't fit into RAM */
_Min_Heap_Size = 0x200;      /* required amount of heap  */
_Min_Stack_Size = 0x400; /* required amount of stack */

/* Specify the memory areas */
MEMORY
{{
{regions}
}}

/* Define output sections */
SECTIONS
{{
  /* The startup code goes first into FLASH */
  .isr_vector :
  {{
    . = ALIGN(4);
    KEEP(*(.isr_vector)) /* Startup code */
    . = ALIGN(4);
  }} >FLASH

  .text :
  {{
    . = ALIGN(4);
    *(.text)           /* .text sections (code) */
    *(.text*)          /* .text* sections (code) */
    *(.glue_7)         /* glue arm to thumb code */
    *(.glue_7t)        /* glue thumb to arm code */
    *(.eh_frame)
    KEEP (*(.init))
    KEEP (*(.fini))
    . = ALIGN(4);
    _etext = .;        /* define a global symbols at end of code */
  }} >FLASH

  .rodata :
  {{
    . = ALIGN(4);
    *(.rodata)         /* .rodata sections (constants, strings, etc.) */
    *(.rodata*)        /* .rodata* sections (constants, strings, etc.) */
    . = ALIGN(4);
  }} >FLASH

  .ARM.extab   : {{ *(.ARM.extab* .gnu.linkonce.armextab.*) }} >FLASH
  .ARM : {{
    __exidx_start = .;
    *(.ARM.exidx*)
    __exidx_end = .;
  }} >FLASH

  .preinit_array     :
  {{
    PROVIDE_HIDDEN (__preinit_array_start = .);
    KEEP (*(.preinit_array*))
    PROVIDE_HIDDEN (__preinit_array_end = .);
  }} >FLASH
  .init_array :
  {{
    PROVIDE_HIDDEN (__init_array_start = .);
    KEEP (*(SORT(.init_array.*)))
    KEEP (*(.init_array*))
    PROVIDE_HIDDEN (__init_array_end = .);
  }} >FLASH
  .fini_array :
  {{
    PROVIDE_HIDDEN (__fini_array_start = .);
    KEEP (*(SORT(.fini_array.*)))
    KEEP (*(.fini_array*))
    PROVIDE_HIDDEN (__fini_array_end = .);
  }} >FLASH

  /* used by the startup to initialize data */
  _sidata = LOADADDR(.data);

  /* Initialized data sections goes into RAM, load LMA copy after code */
  .data :
  {{
    . = ALIGN(4);
    _sdata = .;        /* create a global symbol at data start */
    *(.data)           /* .data sections */
    *(.data*)          /* .data* sections */
    *(.RamFunc)        /* .RamFunc sections */
    *(.RamFunc*)       /* .RamFunc* sections */
    . = ALIGN(4);
    _edata = .;        /* define a global symbol at data end */
  }} >{data} AT> FLASH

  /* Uninitialized data section */
  . = ALIGN(4);
  .bss :
  {{
    /* This is used by the startup in order to initialize the .bss secion */
    _sbss = .;         /* define a global symbol at bss start */
    __bss_start__ = _sbss;
    *(.bss)
    *(.bss*)
    *(COMMON)
    . = ALIGN(4);
    _ebss = .;         /* define a global symbol at bss end */
    __bss_end__ = _ebss;
  }} >{data}

  /* arena's activation arena (NOLOAD) and its checks */
{include}
  /* User_heap_stack section, used to check that there is enough RAM left */
  ._user_heap_stack :
  {{
    . = ALIGN(8);
    PROVIDE ( end = . );
    PROVIDE ( _end = . );
    . = . + _Min_Heap_Size;
    . = . + _Min_Stack_Size;
    . = ALIGN(8);
  }} >{data}
{after_heap}
  /* Remove information from the standard libraries */
  /DISCARD/ :
  {{
    libc.a ( * )
    libm.a ( * )
    libgcc.a ( * )
  }}

  .ARM.attributes 0 : {{ *(.ARM.attributes) }}
}}
"""


SPLIT_BOARD = """\
name: split_an500
description: mps2_an500 cut into a 20 KiB fast region, 20 KiB of PSRAM and a data region (a test board)
source: boards/mps2_an500.yaml (QEMU 7.2 -M mps2-an500 memory map)
cpu: {core: cortex-m7, fpu: fpv5-d16, float_abi: hard, clock_hz: 25000000, irqs: 32}
flash: {origin: 0x00000000, length: 4M}
ram:
  - {name: FAST, origin: 0x20000000, length: 20K, zero_wait: true, cacheable: false, dma: true, executable: true, speed: 1}
  - {name: SLOW, origin: 0x60000000, length: 20K, zero_wait: false, cacheable: false, dma: true, executable: true, speed: 2}
  - {name: DATA, origin: 0x20100000, length: 64K, zero_wait: true, cacheable: false, dma: true, executable: true, speed: 3}
default_region: FAST
data_region: DATA
qemu: mps2-an500
"""


# --- the documentation's snippets ------------------------------------------------------------


def documented_blocks(lang: str, containing: str) -> list[tuple[str, str]]:
    """Every ``lang`` code block of README.md and docs/ (Markdown fences, reStructuredText
    ``code-block`` directives) whose text contains ``containing``, as (file, text): a test runs
    what the documentation shows, wherever it moves."""
    paths = [ROOT / "README.md"]
    if (ROOT / "docs").is_dir():
        paths += sorted(p for p in (ROOT / "docs").rglob("*") if p.suffix in (".md", ".rst") and "_build" not in p.parts)
    found = []
    for path in paths:
        text = path.read_text(encoding="utf-8")
        blocks: list[str] = []
        fence: str | None = None  # the open fence's language, or None outside a block
        body: list[str] = []
        for line in text.splitlines(keepends=True):
            if fence is None and line.startswith("```"):
                fence, body = line[3:].strip(), []
            elif fence is not None and line.rstrip() == "```":
                if fence == lang:
                    blocks.append("".join(body))
                fence = None
            elif fence is not None:
                body.append(line)
        for m in re.finditer(rf"^( *)\.\. code-block:: {re.escape(lang)}\n((?:\1 +:.*\n)*)\n((?:\1 +.*\n|\n)+)", text, re.M):
            lines = m.group(3).rstrip("\n").splitlines()
            indent = min(len(x) - len(x.lstrip()) for x in lines if x.strip())
            blocks.append("\n".join(x[indent:] for x in lines) + "\n")
        found += [(str(path.relative_to(ROOT)), b) for b in blocks if containing in b]
    return found
