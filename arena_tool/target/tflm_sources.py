"""What a TFLite Micro firmware compiles, and with which flags: the one definition the SCons
build, ``arena-tool run MODEL.tflite``, the tests and the benchmarks read.

TFLM's Makefile downloads its third-party code and compiles every kernel, so arena compiles the
files directly, from a tree laid out as that Makefile leaves it (``tensorflow/``, ``signal/``,
``third_party/``, the downloads under ``tensorflow/lite/micro/tools/make/downloads/``):

* the framework (``core_sources``): the interpreter, allocators, memory planners, the
  flatbuffer bridge, TFLM's error and log code (on a target ``cortex_m_generic/debug_log.cc``,
  whose callback the firmware sets);
* ``tensorflow/lite/kernels/internal`` and the kernel utilities every kernel needs;
* only the kernels of the models' ops (``kernel_sources``): the file that defines each op's
  ``Register_<OP>()`` (``kernels/cmsis_nn/`` first with CMSIS-NN), found through TFLM's own
  ``micro_mutable_op_resolver.h`` (``registrations``: builtin op -> its ``Add<Op>`` method and
  registration function), plus the helper files of the kernel headers it includes (``conv.h`` ->
  ``conv_common.cc``);
* with CMSIS-NN, its C sources but the float ones (``-std=c17``).

Flags are TFLM's for ``TARGET=cortex_m_generic`` (C++17 without RTTI, exceptions or thread-safe
statics, one section per function and datum, ``TF_LITE_STATIC_MEMORY``, ``-DCMSIS_NN`` with
CMSIS-NN on the files whose sources or headers test it, ``naming``: the others' objects are the
reference library's) and TFLM's levels: ``-Os`` for the framework, ``-O2`` for the kernels. The tree's path
is mapped to ``tflm`` (``-ffile-prefix-map``), so the same sources give the same objects
wherever the tree is.
"""

from __future__ import annotations

import dataclasses
import os
import re
from typing import Sequence

from arena_tool.core.errors import ArenaError
from arena_tool.target.flags import SECTIONS

KERNELS = ("reference", "cmsis_nn")
DOWNLOADS = "tensorflow/lite/micro/tools/make/downloads"
RESOLVER_HEADER = "tensorflow/lite/micro/micro_mutable_op_resolver.h"
CORE_LEVEL = "-Os"  # TFLM's default for the framework
KERNEL_LEVEL = "-O2"  # TFLM's KERNEL_OPTIMIZATION_LEVEL
CXX_STD = ("-std=c++17", "-fno-rtti", "-fno-exceptions", "-fno-threadsafe-statics")
COMMON = ("-fno-unwind-tables", "-fno-asynchronous-unwind-tables", *SECTIONS, "-fmessage-length=0",
          "-fomit-frame-pointer", "-fsigned-char", "-Wno-type-limits")
DEFINES = ("-DTF_LITE_STATIC_MEMORY", "-DTF_LITE_DISABLE_X86_NEON", "-DNDEBUG", "-DTF_LITE_MCU_DEBUG_LOG",
           "-DARM_NN_ENABLE_F16=0", "-DARM_NN_ENABLE_F32=0")
_EXCLUDED = re.compile(r"(_test|test_helpers|test_helper_custom_ops|mock_micro_graph|fake_micro_context|"
                       r"recording_[a-z_]*|system_setup|kernel_runner|conv_test_common)\.cc$")
_REGISTER = re.compile(r"TfLiteStatus\s+(Add\w+)\s*\(\s*(?:const\s+TFLMRegistration\s*&\s*\w+\s*=\s*"
                       r"(?:tflite::)?(Register_\w+)\s*\(\s*\)\s*)?\)\s*\{\s*return\s+AddBuiltin\s*\(\s*"
                       r"BuiltinOperator_(\w+)\s*,", re.S)
_DEFINES_REGISTRATION = re.compile(r"TFLMRegistration\s+Register_\w+\s*\(\s*\)\s*\{")
_INCLUDE = re.compile(r'^\s*#\s*include\s+"(tensorflow/lite/micro/kernels/[\w/]+\.h)"', re.M)
_ANY_INCLUDE = re.compile(r'^\s*#\s*include\s*("[^"]+"|<[^>]+>|\w+)', re.M)
_DEFINE = re.compile(r"^\s*#\s*define\s+(\w+)", re.M)


@dataclasses.dataclass(frozen=True)
class TflmConfig:
    """The manifest's ``tflm:``: a tree to build (``path``, ``kernels``) or a prebuilt ``library``
    with its ``include`` folders. Paths are the manifest folder joined to what it says."""

    path: str = ""
    kernels: str = "reference"
    library: str = ""
    include: tuple[str, ...] = ()

    def to_doc(self) -> dict[str, object]:
        return {"path": self.path, "kernels": self.kernels, "library": self.library, "include": list(self.include)}

    @classmethod
    def from_doc(cls, d: dict[str, object]) -> TflmConfig:
        inc = d.get("include") or []
        assert isinstance(inc, list)
        return cls(str(d.get("path") or ""), str(d.get("kernels") or "reference"), str(d.get("library") or ""),
                   tuple(map(str, inc)))

    def headers(self) -> list[str]:
        """The folders main.cc and the model table compile with (TFLM's headers): a tree's, or the
        library's ``include`` (a TFLM tree's root among them brings its downloads' folders too)."""
        if self.path:
            return include_dirs(self.path)
        out: list[str] = []
        for d in self.include:
            out += include_dirs(d) if os.path.isdir(os.path.join(d, DOWNLOADS)) else [d]
        return list(dict.fromkeys(out))

    def resolver_root(self) -> str:
        """The folder holding ``tensorflow/lite/micro/micro_mutable_op_resolver.h`` (a tree's root, which the
        manifest checked; or the first include folder that holds it)."""
        if self.path:
            return self.path
        for d in self.include:
            if os.path.isfile(os.path.join(d, RESOLVER_HEADER)):
                return d
        raise ArenaError(f"no {RESOLVER_HEADER} in tflm.include ({', '.join(self.include)})", field="tflm.include",
                         hint="list the folder that holds tensorflow/ (the TFLM tree's root) in include:")


@dataclasses.dataclass(frozen=True)
class Source:
    """One file of the library: its path below the tree, ``c++`` or ``c``, its -O level."""

    path: str
    lang: str
    level: str


def check_tree(root: str, field: str = "tflm.path") -> None:
    """ArenaError (exit 2) unless ``root`` is a TFLM tree with its downloads in place."""
    if not os.path.isdir(root):
        raise ArenaError(f"TFLite Micro folder not found: {root}", field=field,
                         hint="give the tflite-micro checkout (the folder holding tensorflow/lite/micro)")
    for rel, what in ((RESOLVER_HEADER, "TFLM's sources"), (f"{DOWNLOADS}/flatbuffers/include", "flatbuffers"),
                      (f"{DOWNLOADS}/gemmlowp", "gemmlowp")):
        if not os.path.exists(os.path.join(root, rel)):
            raise ArenaError(f"{root} is not a TFLite Micro tree with its downloads: {rel} ({what}) is missing",
                             field=field, hint=f"run TFLM's download scripts once, so {DOWNLOADS}/ holds "
                                               "flatbuffers, gemmlowp, ruy, cmsis and cmsis_nn")


def check_kernels(kernels: str, root: str, field: str = "tflm.kernels") -> None:
    if kernels not in KERNELS:
        raise ArenaError(f"unknown TFLM kernels '{kernels}'", field=field, hint="expected one of: " + ", ".join(KERNELS))
    if kernels == "cmsis_nn" and not os.path.isdir(os.path.join(root, DOWNLOADS, "cmsis_nn", "Source")):
        raise ArenaError(f"kernels: cmsis_nn but {root}/{DOWNLOADS}/cmsis_nn/Source is missing", field=field,
                         hint="download CMSIS-NN into TFLM's downloads folder, or use kernels: reference")


def include_dirs(root: str) -> list[str]:
    """The include folders of TFLM and what it includes (its Makefile's, for a Cortex-M)."""
    dl = os.path.join(root, DOWNLOADS)
    return [root, dl, *(os.path.join(dl, d) for d in ("gemmlowp", "flatbuffers/include", "ruy", "cmsis",
                                                       "cmsis_nn", "cmsis_nn/Include", "cmsis/CMSIS/Core/Include"))]


def defines(kernels: str) -> tuple[str, ...]:
    return (*DEFINES, "-DCMSIS_NN") if kernels == "cmsis_nn" else DEFINES


def cxx_flags(kernels: str) -> tuple[str, ...]:
    """TFLM's C++ flags after the core's (no -O level, no include folders)."""
    return (*CXX_STD, *COMMON, *defines(kernels))


def c_flags(kernels: str) -> tuple[str, ...]:
    return ("-std=c17", *COMMON, *defines(kernels))


def naming(root: str, paths: Sequence[str], macro: str) -> set[str]:
    """Those of ``paths`` (below ``root``) that name ``macro``, themselves or in a header they
    include, directly or not (from their own folder or ``include_dirs``). A ``-D`` of a macro
    no file of a compile names gives the same object: the CMSIS-NN library compiles the others
    as the reference library does (``tflm_lib.graph``), and the object cache holds them once.
    ``#include NAME`` counts as naming it when a file read, or TFLM's flags, define NAME (else
    the line is not compiled: flatbuffers' ``FLATBUFFERS_ASSERT_INCLUDE``); a header in no
    include folder is the compiler's own."""
    word = re.compile(rf"\b{re.escape(macro)}\b")
    dirs = include_dirs(root)
    files: dict[str, tuple[bool, set[str], set[str], list[str]]] = {}  # names it, defines, NAMEs, includes

    def read(full: str) -> tuple[bool, set[str], set[str], list[str]]:
        if full not in files:
            with open(full, encoding="utf-8", errors="replace") as f:
                text = f.read()
            through: set[str] = set()
            found: list[str] = []
            for inc in _ANY_INCLUDE.findall(text):
                if inc[0] not in "\"<":
                    through.add(inc)
                    continue
                folders = ([os.path.dirname(full)] if inc[0] == '"' else []) + dirs
                hit = next((c for c in (os.path.join(d, inc[1:-1]) for d in folders) if os.path.isfile(c)), None)
                if hit is not None:
                    found.append(os.path.normpath(hit))
            files[full] = (bool(word.search(text)), set(_DEFINE.findall(text)), through, found)
        return files[full]

    out: set[str] = set()
    for path in paths:
        seen: set[str] = set()
        defined = {d[2:].split("=")[0] for d in DEFINES}
        through: set[str] = set()
        todo = [os.path.normpath(os.path.join(root, path))]
        while todo:
            full = todo.pop()
            if full in seen:
                continue
            seen.add(full)
            names, defines_, includes_through, includes = read(full)
            if names:
                break
            defined |= defines_
            through |= includes_through
            todo += includes
        else:
            if not through & defined:
                continue
        out.add(path)
    return out


def prefix_map(root: str) -> str:
    return f"-ffile-prefix-map={os.path.abspath(root)}=tflm"


def _listing(root: str, folder: str) -> list[str]:
    full = os.path.join(root, folder)
    return sorted(f"{folder}/{n}" for n in os.listdir(full) if n.endswith(".cc") and not _EXCLUDED.search(n))


def core_sources(root: str, target: bool = True) -> list[str]:
    """The framework's files (paths below ``root``). target: the Cortex-M debug log (a callback
    the firmware sets), else the host's (stderr)."""
    micro = "tensorflow/lite/micro"
    out = [p for p in _listing(root, micro) if p != f"{micro}/debug_log.cc"]
    out += [f"{micro}/cortex_m_generic/debug_log.cc" if target else f"{micro}/debug_log.cc"]
    for sub in ("arena_allocator", "memory_planner", "tflite_bridge"):
        out += _listing(root, f"{micro}/{sub}")
    out += ["tensorflow/lite/core/api/flatbuffer_conversions.cc", "tensorflow/lite/core/api/tensor_utils.cc",
            "tensorflow/lite/core/c/common.cc", "tensorflow/compiler/mlir/lite/schema/schema_utils.cc",
            "tensorflow/compiler/mlir/lite/core/api/error_reporter.cc"]
    return sorted(out)


def _read(root: str, rel: str) -> str:
    with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
        return f.read()


def registrations(root: str) -> dict[str, tuple[str, str]]:
    """Builtin op name (``CONV_2D``) -> (the resolver's ``Add`` method, its registration function),
    read from the tree's ``micro_mutable_op_resolver.h``."""
    out: dict[str, tuple[str, str]] = {}
    for method, register, op in _REGISTER.findall(_read(root, RESOLVER_HEADER)):
        out.setdefault(op, (method, register or f"Register_{op}"))
    return out


def resolver_methods(root: str, ops: Sequence[str], where: str = "") -> list[str]:
    """The ``Add`` methods of ``ops`` in their order; ArenaError naming an op TFLM has no method for."""
    regs = registrations(root)
    missing = [op for op in ops if op not in regs]
    if missing:
        raise ArenaError(f"TFLite Micro at {root} has no builtin kernel for op {', '.join(missing)}"
                         + (f" ({where})" if where else ""), field="tflm.path",
                         hint="custom ops (e.g. TFLM's signal ops) are not registered by arena's generated "
                              "resolver; use a model of builtin ops, or runtime: tflm without tflm: and your own main")
    return [regs[op][0] for op in ops]


def _kernel_file(root: str, register: str, kernels: str) -> str | None:
    """The kernel file that defines ``register()`` (CMSIS-NN's version first when asked)."""
    folders = (["tensorflow/lite/micro/kernels/cmsis_nn"] if kernels == "cmsis_nn" else []) + \
              ["tensorflow/lite/micro/kernels"]
    pattern = re.compile(r"TFLMRegistration\s+" + re.escape(register) + r"\s*\(\s*\)\s*\{")
    for folder in folders:
        for rel in _listing(root, folder):
            if pattern.search(_read(root, rel)):
                return rel
    return None


def _helpers(root: str, first: str) -> list[str]:
    """The helper .cc files of ``first``'s kernel headers (transitively): for each included
    ``kernels/X.h``, ``kernels/X.cc`` and ``kernels/X_common.cc`` where they exist."""
    seen: set[str] = set()
    todo = [first]
    out: list[str] = []
    while todo:
        rel = todo.pop()
        if rel in seen or not os.path.isfile(os.path.join(root, rel)):
            continue
        seen.add(rel)
        for header in _INCLUDE.findall(_read(root, rel)):
            todo.append(header)
            stem = header[:-2]
            for cc in (f"{stem}.cc", f"{stem}_common.cc"):
                if (os.path.isfile(os.path.join(root, cc)) and not _EXCLUDED.search(cc) and cc not in out
                        and not _DEFINES_REGISTRATION.search(_read(root, cc))):  # a kernel, not a helper
                    out.append(cc)
                    todo.append(cc)
    return out


def kernel_sources(root: str, kernels: str, ops: Sequence[str]) -> list[str]:
    """The kernel files of ``ops`` and their helpers, and what every kernel needs."""
    regs = registrations(root)
    out = ["tensorflow/lite/kernels/kernel_util.cc", "tensorflow/lite/micro/kernels/kernel_util.cc",
           "tensorflow/lite/micro/kernels/micro_tensor_utils.cc"]
    internal = "tensorflow/lite/kernels/internal"
    out += sorted(f"{internal}/{n}" for n in os.listdir(os.path.join(root, internal)) if n.endswith(".cc"))
    out += sorted(f"{internal}/reference/{n}" for n in os.listdir(os.path.join(root, internal, "reference"))
                  if n.endswith(".cc"))
    for op in sorted(set(ops)):
        if op not in regs:
            resolver_methods(root, [op])  # raises, naming the op
        first = _kernel_file(root, regs[op][1], kernels)
        if first is None:
            raise ArenaError(f"TFLite Micro at {root} declares {regs[op][1]} but no kernel file defines it",
                             field="tflm.path", hint="use a complete TFLM tree")
        out += [first, *_helpers(root, first)]
    return list(dict.fromkeys(out))


def cmsis_nn_sources(root: str) -> list[str]:
    """CMSIS-NN's C files but the float16/float32 ones (TFLM's CMSIS-NN kernels call the integer ones)."""
    base = os.path.join(root, DOWNLOADS, "cmsis_nn", "Source")
    out = []
    for folder, _, names in os.walk(base):
        for n in names:
            if n.endswith(".c") and not re.search(r"(_f16|_f32|arm_nntables_flt)\.c$", n):
                out.append(os.path.relpath(os.path.join(folder, n), root).replace(os.sep, "/"))
    return sorted(out)


def library_sources(root: str, kernels: str, ops: Sequence[str], target: bool = True) -> list[Source]:
    """Every file of the library for ``ops``, with its language and level, in a fixed order."""
    out = [Source(p, "c++", CORE_LEVEL) for p in core_sources(root, target)]
    out += [Source(p, "c++", KERNEL_LEVEL) for p in kernel_sources(root, kernels, ops)]
    if kernels == "cmsis_nn":
        out += [Source(p, "c", KERNEL_LEVEL) for p in cmsis_nn_sources(root)]
    return out
