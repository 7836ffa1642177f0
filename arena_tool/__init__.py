"""arena: decide whether a neural network fits a microcontroller's RAM.

The library is a one-way pipeline: ONNX model -> Problem (buffers with inclusive
live ranges) -> Plan (one offset per buffer) -> generated C tables and linker
scripts. Nothing here imports SCons; ``site_scons/site_tools/arena.py`` is a thin
layer over these modules.
"""

__version__ = "0.1.0"


def site_tools_dir() -> str:
    """The folder holding the SCons tool ``arena.py``, for any SConstruct's toolpath::

        import arena_tool
        env = Environment(tools=["arena"], toolpath=[arena_tool.site_tools_dir()])

    The source tree's ``site_scons/site_tools`` (checkout or editable install),
    else the copy a wheel installs under ``<prefix>/share/arena/site_tools``.
    """
    import os
    import sys

    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for candidate in (os.path.join(here, "site_scons", "site_tools"),
                      os.path.join(sys.prefix, "share", "arena", "site_tools")):
        if os.path.isfile(os.path.join(candidate, "arena.py")):
            return candidate
    raise FileNotFoundError("arena's SCons tool (site_tools/arena.py) is not installed")


def runtime_dir() -> str:
    """The C runtime (``arena_model.h`` and the kernels) that executes generated tables,
    shipped inside the package: compile its ``*.c`` and put it on the include path."""
    import os

    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "runtime")


def cmake_dir() -> str:
    """The folder of arena's CMake module ``ArenaModels.cmake``, for a CMakeLists.txt::

        list(APPEND CMAKE_MODULE_PATH "<this folder>")
        include(ArenaModels)
        arena_add_models(firmware app/arena.yaml nucleo_f746)
    """
    import os

    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "cmake")
