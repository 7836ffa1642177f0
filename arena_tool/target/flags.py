"""The one compile and link flag policy of arena's firmware, and its optimisation levels.

Both builds read it: the SCons tool through ``build_graph`` (each board's compile environment,
plus what only a project build adds: the project mapped to ``.``, a link map and arena's
linker script beside the ELF) and ``arena-tool run`` through ``firmware`` (one model's
firmware, on a QEMU board or natively on the host). A flag or a default lives here once.

Levels (the manifest's ``optimize:``, ``arena-tool run --optimize``): ``size`` is -Os, ``speed``
-O2 (TFLite Micro builds its kernels at -O2). ``DEFAULT_OPTIMIZE`` is what a manifest that says
nothing gets: speed, the level that measures best (bench/speed.py on mps2-an500: -O2 runs the
MLPerf Tiny convolutional networks 10-12 % faster than -Os for 1-10 % more flash, still below
TFLM + CMSIS-NN's; size is the choice when flash is the wall). The host build (``--board host``)
defaults to speed too.
"""

from __future__ import annotations

from arena_tool.core.errors import ArenaError, did_you_mean

LEVELS = {"size": "-Os", "speed": "-O2"}  # optimize: name -> gcc's -O flag
DEFAULT_OPTIMIZE = "speed"
HOST_OPTIMIZE = "speed"
# -Werror=overflow: a table value that does not fit its field fails the compile (codegen also asserts it);
# -Werror=trigraphs: so does a trigraph that changes the C (in a string, or splicing a comment line).
STRICT = ("-Werror=overflow", "-Wtrigraphs", "-Werror=trigraphs")
WARNINGS = ("-g", "-std=c99", "-Wall", "-Wextra", *STRICT)
SECTIONS = ("-ffunction-sections", "-fdata-sections")  # one section per function and datum, for --gc-sections
LINKFLAGS = ("-nostartfiles", "--specs=nano.specs", "--specs=nosys.specs", "-Wl,--gc-sections")  # newlib-nano
LIBS = ("m",)


def level(optimize: str | None, default: str = DEFAULT_OPTIMIZE) -> str:
    """The level ``optimize`` names (None: ``default``); ArenaError for an unknown name."""
    name = default if optimize is None else optimize
    if name not in LEVELS:
        raise ArenaError(f"unknown optimize level '{name}'", field="optimize",
                         hint=did_you_mean(name, list(LEVELS)) + "expected one of: " + ", ".join(LEVELS))
    return name


def cflags(optimize: str | None = None) -> tuple[str, ...]:
    """A target's C flags after its core flags: the level's -O, debug info, C99, the warnings
    (those that guard the tables are errors), one section per function and datum."""
    return (LEVELS[level(optimize)], *WARNINGS, *SECTIONS)


def host_cflags(optimize: str | None = None) -> tuple[str, ...]:
    """The host build's C flags (``--board host``: native gcc, default speed)."""
    return (LEVELS[level(optimize, HOST_OPTIMIZE)], *WARNINGS)


def env_suffix(optimize: str | None) -> str:
    """What a level adds to a compile environment's folder under build/common/: nothing at the
    default level (a manifest that says nothing keeps its paths), else ``_O2``/``_Os``."""
    name = level(optimize)
    return "" if LEVELS[name] == LEVELS[DEFAULT_OPTIMIZE] else "_" + LEVELS[name].lstrip("-")
