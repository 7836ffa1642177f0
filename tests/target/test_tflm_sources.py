"""tflm_sources: TFLite Micro's library files and flags for a model's ops and a kernel set, read
from the shared TFLM tree (skipped, saying so, where it is absent)."""

from __future__ import annotations

import pytest

from arena_tool.core.errors import ArenaError
from arena_tool.target import tflm_sources
from conftest import require_shared
from shared_paths import SHARED

TREE = SHARED / "third_party" / "tflite-micro"


def test_library_files_follow_the_ops_and_the_kernels() -> None:
    root = str(require_shared(TREE))
    regs = tflm_sources.registrations(root)
    assert regs["CONV_2D"] == ("AddConv2D", "Register_CONV_2D")
    assert regs["UNIDIRECTIONAL_SEQUENCE_LSTM"][0] == "AddUnidirectionalSequenceLSTM"
    ref = tflm_sources.kernel_sources(root, "reference", ["CONV_2D"])
    nn = tflm_sources.kernel_sources(root, "cmsis_nn", ["CONV_2D"])
    k = "tensorflow/lite/micro/kernels/"
    assert f"{k}conv.cc" in ref and f"{k}conv_common.cc" in ref and f"{k}cmsis_nn/conv.cc" not in ref
    assert f"{k}cmsis_nn/conv.cc" in nn and f"{k}conv_common.cc" in nn and f"{k}conv.cc" not in nn  # one CONV_2D
    assert f"{k}fully_connected.cc" not in ref  # only the model's ops
    lstm = tflm_sources.kernel_sources(root, "reference", ["UNIDIRECTIONAL_SEQUENCE_LSTM"])
    assert f"{k}lstm_eval.cc" in lstm and f"{k}lstm_eval_common.cc" in lstm
    assert all(s.level == "-Os" for s in tflm_sources.library_sources(root, "reference", []) if "/kernels/" not in s.path)
    assert "-DCMSIS_NN" in tflm_sources.cxx_flags("cmsis_nn") and "-DCMSIS_NN" not in tflm_sources.cxx_flags("reference")
    with pytest.raises(ArenaError, match="no builtin kernel for op CUSTOM:SignalWindow"):
        tflm_sources.resolver_methods(root, ["CUSTOM:SignalWindow"])


def test_files_naming_a_macro_are_found_through_their_headers(tmp_path) -> None:
    """naming: a file names CMSIS_NN when it or a header it includes (quoted from its folder or
    an include folder, <> from an include folder) does, or when it includes through a macro a
    file read defines; an undefined one (flatbuffers' FLATBUFFERS_ASSERT_INCLUDE) is not compiled."""
    (tmp_path / "k").mkdir()
    files = {"a.cc": '#include "k/b.h"\n', "k/b.h": '#include "c.h"\n', "k/c.h": "#include <d.h>\n",
             "d.h": "#if defined(CMSIS_NN)\n#endif\n", "e.cc": "#include <vector>\n#include \"k/f.h\"\n",
             "k/f.h": "#ifdef ASSERT_H\n#include ASSERT_H\n#endif\nint CMSIS_NNX;\n",
             "g.cc": '#define ASSERT_H "x.h"\n#include "k/f.h"\n'}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    assert tflm_sources.naming(str(tmp_path), ["a.cc", "e.cc", "g.cc", "k/c.h"], "CMSIS_NN") == {"a.cc", "g.cc", "k/c.h"}
