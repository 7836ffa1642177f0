"""The budget gate, the board report document and the summary."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from arena_tool import boards, manifest, report
from arena_tool.errors import EXIT_CHECK_FAILED, CheckFailed
from arena_tool.schema import check_json


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


def plans(t: manifest.BoardTarget, *docs: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(s.name, f"build/plans/{s.name}.plan.json", d) for s, d in zip(t.models, docs)]


def test_sequential_takes_the_largest(tmp_path: Path) -> None:
    t = target(tmp_path, "{name: nucleo_f746, region: DTCM, budget: 60K}")
    r = report.gate(t, plans(t, plan_doc(30000, 28000), plan_doc(20000, 20000)))
    assert (r.arena_size, r.lower_bound, r.region, r.budget, r.limit) == (30000, 28000, "DTCM", 61440, 61440)
    assert [m.base for m in r.models] == [0, 0]
    assert r.headroom == 31440 and r.status == "ok"


def test_concurrent_slices_are_aligned(tmp_path: Path) -> None:
    t = target(tmp_path, "{name: mps2_an500, sharing: concurrent}")
    r = report.gate(t, plans(t, plan_doc(1000, 990, alignment=16), plan_doc(500, 500, alignment=64)))
    assert [m.base for m in r.models] == [0, 1024]
    assert r.arena_size == 1524 and r.lower_bound == 1024 + 512 and r.alignment == 64


def test_over_budget_message(tmp_path: Path) -> None:
    t = target(tmp_path, "{name: nucleo_f746, region: DTCM, budget: 64K}")
    with pytest.raises(CheckFailed) as info:
        report.gate(t, plans(t, plan_doc(71680, 60000), plan_doc(1000, 1000)))
    err = info.value
    assert err.exit_code == EXIT_CHECK_FAILED
    # A byte budget does not grow with the region, so no region is suggested.
    assert err.msg == ("arena: nucleo_f746: model a needs 71,680 B in DTCM, budget 65,536 B "
                       "(over by 6,144 B, lower bound 60,000 B); try planner optimal, or activation_dtype int8")
    # Above the budget even at the lower bound: a better planner cannot help.
    with pytest.raises(CheckFailed) as info:
        report.gate(t, plans(t, plan_doc(71680, 70144), plan_doc(1000, 1000)))
    assert info.value.msg.endswith("lower bound 70,144 B); try activation_dtype int8")


def test_percent_budget_suggests_a_bigger_region_and_only_what_helps(tmp_path: Path) -> None:
    t = target(tmp_path, "{name: nucleo_f746, region: DTCM, budget: 100%, sharing: concurrent}",
               reserve="{stack: 0}")
    with pytest.raises(CheckFailed) as info:
        report.gate(t, plans(t, plan_doc(40000, 40000, planner="optimal", dtype="int8"),
                             plan_doc(30000, 30000, planner="optimal", dtype="int8")))
    assert info.value.msg == ("arena: nucleo_f746: models a+b need 70,000 B in DTCM, budget 65,536 B "
                              "(over by 4,464 B, lower bound 70,000 B); try region SRAM1")


def test_reserve_in_the_same_region_binds(tmp_path: Path) -> None:
    t = target(tmp_path, "{name: nucleo_g474re, region: SRAM2, budget: 100%}", models="a",
               reserve="{stack: 8K}")
    with pytest.raises(CheckFailed) as info:
        report.gate(t, plans(t, plan_doc(10000, 10000, planner="optimal", dtype="int8")))
    assert "room 8,192 B (16,384 B less the 8,192 B stack+heap reserve)" in info.value.msg
    assert info.value.msg.endswith("try region CCM")  # the smallest region with room


def test_auto_region_uses_the_boards_ranking(tmp_path: Path) -> None:
    t = target(tmp_path, "{name: nucleo_f746, region: auto, budget: 90%}", models="a")
    board = boards.load_board_file(t.board_file)

    def fastest(size: int, reserve: int) -> str:
        return board.fastest_region(size, reserve=reserve).name

    small = report.gate(t, plans(t, plan_doc(30000, 30000)), fastest)
    big = report.gate(t, plans(t, plan_doc(100000, 100000)), fastest)
    assert (small.region, small.region_auto) == ("DTCM", True)
    assert big.region == "SRAM1" and big.budget == int(240 * 1024 * 0.9)
    with pytest.raises(CheckFailed, match="more than any region of the board"):
        report.gate(t, plans(t, plan_doc(10 << 20, 1 << 20)), lambda s, r: None)


def test_warn_above(tmp_path: Path) -> None:
    t = target(tmp_path, "{name: nucleo_f746, region: DTCM, budget: 60K, warn_above: 50}", models="a")
    r = report.gate(t, plans(t, plan_doc(40000, 40000)))
    assert r.status == "warn" and r.warning is not None
    assert "65.1% of the 61,440 B budget in DTCM (warn_above 50%)" in r.warning


def test_document_matches_the_schema_and_summarises(tmp_path: Path) -> None:
    t = target(tmp_path, "{name: nucleo_f746, region: DTCM, budget: 60K}")
    doc = report.to_doc(report.gate(t, plans(t, plan_doc(30000, 28000), plan_doc(20000, 20000))))
    check_json(doc, "report", "arena_report.json")
    path = tmp_path / "r.json"
    report.write(str(path), doc)
    assert report.read(str(path), check=True) == doc
    text = report.summary([doc])
    assert "arena: nucleo_f746: sequential in DTCM, budget 61,440 B (60K)" in text
    assert "DTCM [=====     ] 48.8%" in text


@pytest.mark.parametrize("pct,bar", [(0, "[          ]"), (48.2, "[=====     ]"), (100, "[==========]"),
                                     (130, "[==========>")])
def test_bar(pct: float, bar: str) -> None:
    assert report.bar(pct) == bar
