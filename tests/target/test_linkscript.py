"""linkscript: the user's own linker script (linker: fragment) read without ld: where it INCLUDEs
arena's fragment, which MEMORY regions it defines, and one clear error for each mistake whose ld
message would be obscure."""

from __future__ import annotations

from pathlib import Path

import pytest

from arena_tool.core.errors import ArenaError
from arena_tool.target import boards, linkscript
from builders import H743_MEMORY, vendor_script


def _check(tmp_path: Path, text: str, needed: dict[str, str], name: str = "vendor.ld") -> linkscript.ScriptInfo:
    path = tmp_path / name
    path.write_text(text)
    return linkscript.check_script(str(path), needed, field="linker_script",
                                   origins={r.name: r.origin for r in boards.load_board("nucleo_h743").ram})


def test_check_script_finds_the_include_and_the_memory(tmp_path: Path) -> None:
    info = _check(tmp_path, vendor_script(H743_MEMORY, "RAM_D1"), {"AXI_SRAM": "RAM_D1"})
    assert [line for _, line, inside in info.fragment_at if inside] == [info.fragment_at[0][1]]
    assert sorted(info.memory) == ["DTCMRAM", "FLASH", "ITCMRAM", "RAM_D1", "RAM_D2", "RAM_D3"] and info.complete
    assert info.memory["RAM_D1"][2:] == (0x24000000, 512 * 1024)
    with pytest.raises(ArenaError) as err:
        _check(tmp_path, vendor_script(H743_MEMORY, "RAM_D1", include="  /* INCLUDE arena_fragment.ld */\n"), {})
    assert err.value.file == str(tmp_path / "vendor.ld") and err.value.field == "linker_script"
    assert "never INCLUDEs arena_fragment.ld" in err.value.msg and "inside its SECTIONS" in err.value.hint
    outside = "INCLUDE arena_fragment.ld\n" + vendor_script(H743_MEMORY, "RAM_D1", include="")
    with pytest.raises(ArenaError, match="is outside SECTIONS") as err:
        _check(tmp_path, outside, {})
    assert err.value.line == 1
    with pytest.raises(ArenaError) as err:  # the board's name where the script says RAM_D1: the hint finds it
        _check(tmp_path, vendor_script(H743_MEMORY, "RAM_D1"), {"AXI_SRAM": "AXI_SRAM"})
    assert "MEMORY region AXI_SRAM, which" in err.value.msg and "(its MEMORY regions: DTCMRAM, FLASH" in err.value.msg
    assert err.value.hint.endswith("linker_regions: {AXI_SRAM: RAM_D1}")


def test_check_script_follows_includes_beside_it(tmp_path: Path) -> None:
    """A script that INCLUDEs its sections (and there the fragment) from its own folder is read whole;
    one whose MEMORY may come from elsewhere (an unread INCLUDE, the C preprocessor) is not held to it."""
    text = vendor_script(H743_MEMORY, "RAM_D1")
    head, sections = text.split("SECTIONS\n", 1)
    (tmp_path / "sections.ld").write_text(sections[sections.index("{") + 1:sections.rindex("}")])
    info = _check(tmp_path, head + "SECTIONS\n{\n  INCLUDE sections.ld\n}\n", {"DTCM": "DTCMRAM"})
    assert info.fragment_at[0][0] == str(tmp_path / "sections.ld") and info.fragment_at[0][2]
    info = _check(tmp_path, "INCLUDE memory_elsewhere.ld\n" + text, {"AXI_SRAM": "AXI_SRAM"})
    assert not info.complete
    assert not _check(tmp_path, "#include <mem.h>\n" + text, {"AXI_SRAM": "X"}).complete


def test_memory_lengths_are_the_plain_numbers_of_the_script(tmp_path: Path) -> None:
    path = tmp_path / "vendor.ld"
    path.write_text(vendor_script(H743_MEMORY, "RAM_D1"))
    lengths = linkscript.memory_lengths(str(path))
    assert lengths["RAM_D1"] == 512 * 1024 and lengths["FLASH"] == 2048 * 1024 and len(lengths) == 6
    assert linkscript.memory_lengths(str(tmp_path / "absent.ld")) == {}


def test_needed_names_map_board_regions_to_the_scripts_names() -> None:
    assert linkscript.needed_names(["AXI_SRAM", "DTCM"], {"AXI_SRAM": "RAM_D1"}) == {"AXI_SRAM": "RAM_D1",
                                                                                     "DTCM": "DTCM"}
