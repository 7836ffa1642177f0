"""The runtime code table (arena_tool/runtime/code_size.json, emit/code_size.py) is the runtime
a firmware links: every function it counts for a model's kernels is in the linked ELF, with the
same size (a runtime edited without ``python3 -m arena_tool.run.code_size`` fails here)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from conftest import require_tool

from arena_tool import cli
from arena_tool.emit import code_size, codegen, tileloop
from arena_tool.plan import planfile
from arena_tool.run import firmware
from arena_tool.target import boards

sys.path.insert(0, str(Path(__file__).parent.parent / "model"))
from test_patches import _mobile  # noqa: E402  (the small depthwise network of the unit tests)


def _linked_functions(elf: Path) -> set[str]:
    from elftools.elf.elffile import ELFFile
    from elftools.elf.sections import SymbolTableSection

    with open(elf, "rb") as f:
        return {f"{s.name}:{s['st_size']}" for sec in ELFFile(f).iter_sections() if isinstance(sec, SymbolTableSection)
                for s in sec.iter_symbols() if s["st_info"]["type"] == "STT_FUNC" and s["st_size"]}


@pytest.mark.slow
def test_the_code_table_counts_the_functions_the_firmware_links(tmp_path):
    require_tool("arm-none-eabi-gcc")
    model = _mobile(tmp_path)
    out = tmp_path / "mobile.plan.json"
    assert cli.main(["plan", model, "--planner", "greedy_size", "--patches", "pw:3x2", "-o", str(out)]) == 0
    plan = planfile.load(str(out))
    assert tileloop.loops(plan)
    gen = firmware.generate(tmp_path, [("m", model, plan)], "mps2_an386", name="{sym}_model")
    elf = firmware.build_elf(tmp_path, gen, "mps2_an386", plan.arena_size)  # the build's own flags
    board = boards.load_board("mps2_an386")
    counted = code_size.functions(board.cpu.gcc_flags(), "speed", codegen.runtime_ops([plan]), True)
    assert counted and sum(counted.values()) > 1000
    missing = sorted(set(counted) - _linked_functions(elf))
    assert not missing, f"code_size.json is stale (python3 -m arena_tool.run.code_size): {missing[:8]}"
