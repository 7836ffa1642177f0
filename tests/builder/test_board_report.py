"""board_report: the board report document (schema-checked both ways, byte-identical round
trips, every shape the build writes) and its text (the summary, PlatformIO-style usage lines)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from arena_tool.builder import gate
from arena_tool.core.errors import EXIT_USAGE, ArenaError
from arena_tool.core.schema import check_json
from arena_tool.builder import board_report
from arena_tool.target import manifest
from arena_tool.builder.board_report import OpMacs
from builders import plan_doc, plans, target


def test_document_matches_the_schema_and_summarises(tmp_path: Path) -> None:
    t = target(tmp_path, "{name: nucleo_f746, region: DTCM, budget: 60K}")
    rep = gate.gate(t, plans(t, plan_doc(30000, 28000), plan_doc(20000, 20000)))
    doc = rep.to_json()
    check_json(doc, "report", "arena_report.json")
    path = tmp_path / "r.json"
    board_report.write(str(path), rep)
    assert board_report.read(str(path)) == rep and board_report.read(str(path)).to_json() == doc
    text = board_report.summary([rep])
    assert "arena: nucleo_f746: sequential in DTCM, budget 61,440 B (60K)" in text
    assert "DTCM [=====     ] 48.8%" in text
    assert doc["status"] == "ok" and doc["stage"] == "planned" and doc["problems"] == []
    assert sum(r.length for r in t.board.ram) == 348160  # every RAM region of the board
    assert doc["ram"] == {"used": 30000 + 4096, "total": 348160, "percent": round(100 * 34096 / 348160, 2),
                          "source": "plan"}
    assert doc["flash"]["used"] == doc["flash"]["weights"] == 200 and doc["flash"]["total"] == 1 << 20
    assert "  RAM:   [=         ]   9.8% (used 34,096 bytes from 348,160 bytes) [arena + stack/heap reserve, " \
           "before linking]" in text
    linked = board_report.with_elf(rep, ram_used=40000, flash_used=85123)
    check_json(linked.to_json(), "report", "arena_report.json")
    assert linked.stage == "linked" and linked.status == "ok" and linked.to_json()["flash"]["weights"] == 200
    assert linked.ram == board_report.Usage(40000, 348160, "elf") and linked.to_json()["ram"]["percent"] == 11.49
    assert board_report.usage_lines(linked) == ["RAM:   [=         ]  11.5% (used 40,000 bytes from 348,160 bytes)",
                                          "Flash: [=         ]   8.1% (used 85,123 bytes from 1,048,576 bytes)"]


@pytest.mark.parametrize("pct,bar", [(0, "[          ]"), (48.2, "[=====     ]"), (100, "[==========]"),
                                     (130, "[==========>")])
def test_bar(pct: float, bar: str) -> None:
    assert board_report.bar(pct) == bar


def test_usage_lines_are_platformio_style() -> None:
    assert board_report.usage_line("RAM", 20480, 65536) == "RAM:   [===       ]  31.2% (used 20,480 bytes from 65,536 bytes)"
    assert board_report.usage_line("Flash", 85123, 1048576) == \
        "Flash: [=         ]   8.1% (used 85,123 bytes from 1,048,576 bytes)"
    assert board_report.usage_line("RAM", 70000, 65536).startswith("RAM:   [==========> 106.8% (used 70,000 bytes")


SPLIT_REGIONS = [{"name": n, "capacity": c, "arena_size": a, "lower_bound": a, "accessed_bytes": 10, "buffers": 1,
                  "planner": "greedy_size", "status": "heuristic"} for n, c, a in (("DTCM", 65536, 1000),
                                                                                   ("AXI_SRAM", 500000, 2000))]


def _reports(tmp_path: Path) -> dict[str, board_report.BoardReport]:
    """One report of every shape the build writes: planned (warn), linked, over the flash once linked,
    a failed link, a failed ELF check, an over-budget gate, a split arena, weights copied to RAM, tflm."""
    t = target(tmp_path, "{name: nucleo_f746, region: DTCM, budget: 60K, warn_above: 40}")
    planned = gate.gate(t, plans(t, plan_doc(30000, 28000), plan_doc(20000, 20000)))
    linked = board_report.with_elf(planned, ram_used=40000, flash_used=85123)
    (tmp_path / "split").mkdir()
    split = target(tmp_path / "split", "{name: nucleo_h743, region: [DTCM, AXI_SRAM]}", models="a")
    (tmp_path / "copied").mkdir()
    copied = target(tmp_path / "copied", "{name: nucleo_h743, region: AXI_SRAM}", models="a")
    weights = dict(plan_doc(3000, 3000), options={"activation_dtype": None, "bitwidths": {}, "inplace": True,
                                                  "scratch": "none", "input_shapes": {}, "weights": "DTCM"})
    (tmp_path / "tflm").mkdir()
    (tmp_path / "tflm" / "a.tflite").write_bytes(b"")
    (tmp_path / "tflm" / "arena.yaml").write_text("models: [{name: a, path: a.tflite}]\n"
                                                  "boards: [{name: mps2_an500, runtime: tflm}]\n")
    tflm = manifest.load(str(tmp_path / "tflm" / "arena.yaml")).targets[0]
    return {
        "planned": planned, "linked": linked,
        "flash over when linked": board_report.with_elf(planned, ram_used=40000, flash_used=2 << 20),
        "failed link": gate.link_failure(planned, "ld: region `FLASH' overflowed by 8 bytes\n", "FLASH", {}),
        "failed ELF check": board_report.with_problem(
            linked, board_report.BoardProblem("elf", "arena: nucleo_f746: ELF check failed")),
        "over": gate.gate(t, plans(t, plan_doc(71680, 60000), plan_doc(1000, 1000))),
        "split": gate.gate(split, plans(split, dict(plan_doc(3000, 3000), regions=SPLIT_REGIONS))),
        "weights copied": gate.gate(copied, plans(copied, weights)),
        "tflm": gate.gate(tflm, plans(tflm, plan_doc(3000, 3000)), tflm={"a": {"tail": 1000, "planned_bytes": 5000}}),
        "macs": gate.gate(t, plans(t, plan_doc(30000, 28000), plan_doc(20000, 20000)),
                          macs={"a": [OpMacs(0, "conv", "Conv", 1200), OpMacs(1, "relu", "Relu", 0)], "b": []}),
    }


def test_every_report_round_trips_byte_identical(tmp_path: Path) -> None:
    """write -> the file -> read gives the same value, and to_json the same bytes; the optional keys
    appear exactly where they apply."""
    reps = _reports(tmp_path)
    assert [r.status for r in reps.values()] == ["warn", "warn", "over", "over", "error", "over", "ok", "ok", "ok",
                                                 "warn"]
    for name, rep in reps.items():
        path = tmp_path / f"{name}.json"
        board_report.write(str(path), rep)
        back = board_report.read(str(path))
        assert back == rep, name
        assert board_report.dumps(back.to_json()) == path.read_text(), name
        doc = back.to_json()
        assert ("tflm_note" in doc) == (name == "tflm") and ("regions" in doc) == (name in ("split", "weights copied"))
        assert [("head" in m, "regions" in m, "weights_region" in m, "macs" in m, "ops" in m)
                for m in doc["models"]] == [(name == "tflm", name == "split", name == "weights copied",
                                             name == "macs", name == "macs")] * len(doc["models"])
    a, b = reps["macs"].to_json()["models"]
    assert (a["macs"], b["macs"], b["ops"]) == (1200, 0, [])  # the sum over the ops; a model may have no ops
    assert a["ops"] == [{"index": 0, "name": "conv", "op_type": "Conv", "macs": 1200},
                        {"index": 1, "name": "relu", "op_type": "Relu", "macs": 0}]
    assert reps["linked"].to_json()["stage"] == "linked" and reps["planned"].to_json()["stage"] == "planned"
    assert [r.arena_section for r in reps["split"].regions] == [".arena_DTCM", ".arena_AXI_SRAM"]
    assert [r.weights_section for r in reps["weights copied"].regions] == [None, ".weights_DTCM"]


def test_a_report_file_against_its_schema_is_one_clear_error(tmp_path: Path) -> None:
    linked = _reports(tmp_path)["linked"]
    doc = linked.to_json()
    path = tmp_path / "arena_report.json"
    path.write_text(board_report.dumps(dict(doc, models=[dict(doc["models"][0], arena_size="30000")])))
    with pytest.raises(ArenaError) as err:
        board_report.read(str(path))
    assert err.value.exit_code == EXIT_USAGE and err.value.file == str(path)
    assert err.value.field == "models[0].arena_size" and "report.schema.json" in err.value.msg
    with pytest.raises(ArenaError) as err:  # a report that does not hold to its schema is never written
        board_report.write(str(tmp_path / "bad.json"), dataclasses.replace(linked, stage="built"))
    assert err.value.field == "stage" and not (tmp_path / "bad.json").exists()
