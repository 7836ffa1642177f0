"""board_choice: which boards ``board=`` picks from the manifest's, in the manifest's order."""

from __future__ import annotations

import pytest

from arena_tool.core.errors import ArenaError
from arena_tool.target.board_choice import select_names

NAMES = ["nucleo_f746", "mps2_an500", "rpi_pico"]


@pytest.mark.parametrize("spec", [None, "", "all", " all "])
def test_no_choice_or_all_is_every_board_in_order(spec: str | None) -> None:
    assert select_names(NAMES, spec, "arena.yaml") == NAMES


def test_a_list_keeps_the_given_order_once_each() -> None:
    assert select_names(NAMES, "rpi_pico, nucleo_f746,rpi_pico,", "arena.yaml") == ["rpi_pico", "nucleo_f746"]


def test_an_unknown_board_is_one_error_with_a_guess() -> None:
    with pytest.raises(ArenaError) as e:
        select_names(NAMES, "nucleo_f747", "app/arena.yaml")
    assert e.value.msg == "board 'nucleo_f747' is not in the manifest" and e.value.field == "board"
    assert e.value.hint is not None and e.value.hint.startswith("did you mean 'nucleo_f746'? ")
    assert "(or add it to app/arena.yaml)" in e.value.hint


def test_only_commas_choose_nothing() -> None:
    with pytest.raises(ArenaError, match="no board given"):
        select_names(NAMES, " , ,", "arena.yaml")
