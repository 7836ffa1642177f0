"""The TFLite Micro host interpreter, alone in a child process (``python -m arena_tool.run.tflm_child DIR``).

TFLM trusts its flatbuffer: content arena's checks miss can still crash it (SIGSEGV,
SIGABRT on a double free), and a crash in arena's own process would end the command or
the SCons build without a word. Here it ends only this child; ``tflm.run_tflm`` turns its
exit into one error naming the model. DIR holds ``model.tflite``, ``arena.txt`` (bytes)
and ``in_R_K.npy`` (run R, input K); the child writes ``out_R_K.npy`` and ``result.json``
({"allocations": TFLM's print_allocations text} or {"error": ..., "log": ...}). Arrays are
.npy without pickle both ways.
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np


def main(folder: str) -> int:
    from tflite_micro.python.tflite_micro import runtime

    with open(os.path.join(folder, "model.tflite"), "rb") as f:
        data = f.read()
    with open(os.path.join(folder, "arena.txt"), encoding="ascii") as f:
        arena, runs, n_in, n_out = (int(x) for x in f.read().split())
    result: dict[str, str] = {}
    try:
        interp = runtime.Interpreter.from_bytes(data, arena_size=arena)
        for r in range(runs):
            for k in range(n_in):
                interp.set_input(np.load(os.path.join(folder, f"in_{r}_{k}.npy"), allow_pickle=False), k)
            interp.invoke()
            for k in range(n_out):
                np.save(os.path.join(folder, f"out_{r}_{k}.npy"), np.array(interp.get_output(k), copy=True),
                        allow_pickle=False)
        sys.stderr.flush()
        print("\n--arena-allocations--", file=sys.stderr, flush=True)
        interp.print_allocations()
    except (RuntimeError, ValueError) as e:
        result["error"] = str(e)
    with open(os.path.join(folder, "result.json"), "w", encoding="utf-8") as f:
        json.dump(result, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
