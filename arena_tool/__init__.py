"""arena: decide whether a neural network fits a microcontroller's RAM.

The library is a one-way pipeline: ONNX model -> Problem (buffers with inclusive
live ranges) -> Plan (one offset per buffer) -> generated C tables and linker
scripts. Nothing here imports SCons; ``site_scons/site_tools/arena.py`` is a thin
layer over these modules.
"""

__version__ = "0.1.0"
