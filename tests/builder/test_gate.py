"""gate: one board's plans against its RAM budget, its flash and its runtime, the problems and
suggestions it reports, a split arena's regions (the document itself: builder/test_board_report.py)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from arena_tool.plan import plancheck
from arena_tool.builder import board_report
from arena_tool.target import boards
from arena_tool.emit import linker
from arena_tool.builder import gate, hints
from arena_tool.core.errors import EXIT_CHECK_FAILED, ArenaError, CheckFailed
from arena_tool.core.schema import check_json
from builders import plan_doc, plans, target

ROOT = Path(__file__).resolve().parents[2]


def test_sequential_takes_the_largest(tmp_path: Path) -> None:
    t = target(tmp_path, "{name: nucleo_f746, region: DTCM, budget: 60K}")
    r = gate.gate(t, plans(t, plan_doc(30000, 28000), plan_doc(20000, 20000)))
    assert (r.arena_size, r.lower_bound, r.region, r.budget, r.limit) == (30000, 28000, "DTCM", 61440, 61440)
    assert [m.base for m in r.models] == [0, 0]
    assert r.headroom == 31440 and r.status == "ok"


def test_concurrent_slices_are_aligned(tmp_path: Path) -> None:
    t = target(tmp_path, "{name: mps2_an500, sharing: concurrent}")
    r = gate.gate(t, plans(t, plan_doc(1000, 990, alignment=16), plan_doc(500, 500, alignment=64)))
    assert [m.base for m in r.models] == [0, 1024]
    assert r.arena_size == 1524 and r.lower_bound == 1024 + 512 and r.alignment == 64
    [second] = [ln for ln in board_report.summary([r]).splitlines() if ln.strip().startswith("b ")]
    assert second.endswith("  1,024 B"), second  # the base formatted like the sizes beside it


def test_a_tflite_plans_hint_names_runtime_tflm(planned) -> None:
    path, pm = planned
    with pytest.raises(ArenaError) as e:
        plancheck.lowered_model(str(path), dataclasses.replace(pm.plan_file, model_kind="tflite"))
    assert "runtime: tflm" in (e.value.hint or "") and "runtime: none" not in (e.value.hint or "")


def test_over_budget_message(tmp_path: Path) -> None:
    t = target(tmp_path, "{name: nucleo_f746, region: DTCM, budget: 64K}")
    r = gate.gate(t, plans(t, plan_doc(71680, 60000), plan_doc(1000, 1000)))
    assert (r.status, r.passed, r.headroom) == ("over", False, 65536 - 71680)
    [p] = r.problems
    assert (p.kind, p.region, p.need, p.limit, p.over_by) == ("ram", "DTCM", 71680, 65536, 6144)
    err = board_report.failure(r)
    assert isinstance(err, CheckFailed) and err.exit_code == EXIT_CHECK_FAILED and err.msg == p.message
    # A byte budget does not grow with the region, so no region is suggested; a float model is
    # told how to quantize it (activation_dtype is a what-if that re-sizes the plan, never the advice).
    assert err.msg.startswith("arena: nucleo_f746: model a needs 71,680 B in DTCM, budget 65,536 B "
                              "(over by 6,144 B, lower bound 60,000 B); try planner optimal for a, or quantizing a "
                              "to int8 (int8 activations take a quarter of float32's): python3 -c \"")
    assert "quantize_static(m, 'm.int8.onnx'" in err.msg and "try activation_dtype" not in err.msg
    assert err.msg.endswith("activation_dtype int8 alone only re-sizes the plan, the model still runs float32")
    # Above the budget even at the lower bound: a better planner cannot help.
    r = gate.gate(t, plans(t, plan_doc(71680, 70144), plan_doc(1000, 1000)))
    assert "planner optimal" not in r.problems[0].message and "try quantizing a to int8" in r.problems[0].message


def test_no_planner_hint_for_a_plan_that_is_already_optimal(tmp_path: Path) -> None:
    t = target(tmp_path, "{name: nucleo_f746, region: DTCM, budget: 64K}", models="a")
    proven = dict(plan_doc(71680, 60000, planner="exact_cover", dtype="int8"), optimal=True, status="proven",
                  integer_ops=3)
    msg = gate.gate(t, plans(t, proven)).problems[0].message
    assert msg.endswith("(over by 6,144 B, lower bound 60,000 B)")  # nothing could help but a bigger budget
    at_bound = dict(plan_doc(71680, 71680, dtype="int8"), integer_ops=3)
    assert "try" not in gate.gate(t, plans(t, at_bound)).problems[0].message
    stopped = dict(plan_doc(71680, 60000, planner="optimal", dtype="int8"), status="time_limit", integer_ops=3)
    assert gate.gate(t, plans(t, stopped)).problems[0].message.endswith("; try a time_limit above 10 s for a")
    # An int8 (QDQ) model keeps float graph inputs, but it is quantized already: no quantize hint.
    qdq = dict(plan_doc(71680, 71680), integer_ops=10)
    assert "quantiz" not in gate.gate(t, plans(t, qdq)).problems[0].message


def test_the_fit_searchs_verdict_is_its_own_clause_never_after_try(tmp_path: Path) -> None:
    """A 4K budget on kws_int8 once read "; try nothing meets it for kws: ...": the hints' remedies
    follow "try", the search's verdict (fits or not) follows them as a sentence of its own."""
    t = target(tmp_path, "{name: nucleo_f746, region: DTCM, budget: 64K}", models="a")
    verdict = "nothing meets it for a: the smallest arena reached is io int8 (70,000 B)"
    at_bound = dict(plan_doc(71680, 71680, dtype="int8"), integer_ops=3)  # no hint of the gate's own
    msg = gate.gate(t, plans(t, at_bound), remedy=lambda _t, names, _limit: verdict).problems[0].message
    assert msg.endswith("(over by 6,144 B, lower bound 71,680 B); " + verdict), msg
    # With hints of its own, they follow "try" and the verdict follows them.
    msg = gate.gate(t, plans(t, plan_doc(71680, 60000)), remedy=lambda _t, names, _limit: verdict).problems[0].message
    assert "; try planner optimal for a, or quantizing a" in msg and msg.endswith("; " + verdict), msg


def test_percent_budget_suggests_a_bigger_region_and_only_what_helps(tmp_path: Path) -> None:
    t = target(tmp_path, "{name: nucleo_f746, region: DTCM, budget: 100%, sharing: concurrent}",
               reserve="{stack: 0}")
    r = gate.gate(t, plans(t, plan_doc(40000, 40000, planner="optimal", dtype="int8"),
                             plan_doc(30000, 30000, planner="optimal", dtype="int8")))
    assert board_report.failure(r).msg == ("arena: nucleo_f746: models a+b need 70,000 B in DTCM, budget 65,536 B "
                              "(over by 4,464 B, lower bound 70,000 B); try region SRAM1")


def test_reserve_in_the_same_region_binds(tmp_path: Path) -> None:
    t = target(tmp_path, "{name: nucleo_g474re, region: SRAM2, budget: 100%}", models="a",
               reserve="{stack: 8K}")
    msg = gate.gate(t, plans(t, plan_doc(10000, 10000, planner="optimal", dtype="int8"))).problems[0].message
    assert "room 8,192 B (16,384 B less the 8,192 B stack+heap reserve)" in msg
    assert msg.endswith("try region CCM")  # the smallest region with room


def test_gate_counts_the_reserve_the_linker_script_lays_out(tmp_path: Path) -> None:
    """A stack reserve that is no multiple of 8 takes its rounded size in the linker script, so the
    gate counts that too: with stack 4100 an arena of 12,284 B in 16 KiB SRAM2 passed the gate
    (16,384 - 4,100) and then failed the script "over by 4 B" (it reserves 4,104)."""
    t = target(tmp_path, "{name: nucleo_g474re, region: SRAM2, budget: 100%}", models="a",
               reserve="{stack: 4100}")
    room = 16384 - 4104
    for arena in (room - 4, room, room + 4, room + 8):
        r = gate.gate(t, plans(t, plan_doc(arena, arena, planner="optimal", dtype="int8", alignment=4)))
        try:
            linker.render(t.board, "SRAM2", arena, t.reserve_stack, t.reserve_heap, arena_align=4)
            linked = True
        except ArenaError:
            linked = False
        assert (arena, r.passed) == (arena, linked)
        assert r.passed == (arena <= room)
    assert (t.reserve_stack, t.reserve, t.board.data_region) == (4100, 4104, "SRAM2")
    assert "room 12,280 B (16,384 B less the 4,104 B stack+heap reserve)" in gate.gate(
        t, plans(t, plan_doc(room + 4, room + 4, planner="optimal", dtype="int8", alignment=4))).problems[0].message


def test_auto_region_uses_the_boards_ranking(tmp_path: Path) -> None:
    t = target(tmp_path, "{name: nucleo_f746, region: auto, budget: 90%}", models="a")
    board = t.board

    def fastest(size: int, reserve: int) -> str:
        return board.fastest_region(size, reserve=reserve).name

    small = gate.gate(t, plans(t, plan_doc(30000, 30000)), fastest)
    big = gate.gate(t, plans(t, plan_doc(100000, 100000)), fastest)
    assert (small.region, small.region_auto) == ("DTCM", True)
    assert big.region == "SRAM1" and big.budget == int(240 * 1024 * 0.9)
    huge = gate.gate(t, plans(t, plan_doc(10 << 20, 1 << 20)), lambda s, r: None)
    assert huge.status == "over" and "more than any region of the board" in huge.problems[0].message
    assert huge.region == "SRAM1" and huge.problems[0].region == "SRAM1"  # the largest, as the message says
    check_json(huge.to_json(), "report", "arena_report.json")


def test_warn_above(tmp_path: Path) -> None:
    t = target(tmp_path, "{name: nucleo_f746, region: DTCM, budget: 60K, warn_above: 50}", models="a")
    r = gate.gate(t, plans(t, plan_doc(40000, 40000)))
    assert r.status == "warn" and r.warning is not None
    assert "65.1% of the 61,440 B budget in DTCM (warn_above 50%)" in r.warning


def test_the_flash_counts_tables_and_code_beside_the_weights(tmp_path: Path) -> None:
    """Weights that fit do not make a board that fits: its tables (a patched model's once
    unrolled tile ops) and the runtime code share the flash, and every report states them."""
    (tmp_path / "boards").mkdir()
    text = (ROOT / "boards" / "mps2_an500.yaml").read_text()
    (tmp_path / "boards" / "tiny.yaml").write_text(
        text.replace("name: mps2_an500", "name: tiny").replace("  length: 4M\n  note: ZBT SSRAM1", "  length: 64K\n  note: x"))
    t = target(tmp_path, "tiny", models="a,b", board_dirs="[boards]")
    docs = [dict(plan_doc(100, 100), weights_bytes=w) for w in (30000, 20000)]
    fits = gate.gate(t, plans(t, *docs), tables={"a": 4000, "b": 1000}, code=9000)
    assert fits.status == "ok" and (fits.flash.used, fits.tables, fits.code_bytes) == (64000, 5000, 9000)
    doc = fits.to_json()
    check_json(doc, "report", "arena_report.json")
    assert doc["flash"]["tables"] == 5000 and doc["flash"]["code"] == 9000
    assert [m["table_bytes"] for m in doc["models"]] == [4000, 1000]
    assert board_report.BoardReport.from_json(doc) == fits
    assert "weights 50,000 + tables 5,000 + runtime code 9,000, before linking" in board_report.summary([fits])
    over = gate.gate(t, plans(t, *docs), tables={"a": 6000, "b": 1000}, code=9000)
    [p] = over.problems
    assert (over.status, p.kind, p.model, p.need, p.limit) == ("over", "flash", "a", 66000, 65536)
    assert p.message.startswith("arena: tiny: models a+b need 50,000 B of weights + 7,000 B of tables (a's 6,000 B) "
                                "+ 9,000 B of runtime code = 66,000 B of flash, FLASH has 65,536 B (over by 464 B")


def test_weights_above_the_flash_name_the_model(tmp_path: Path) -> None:
    (tmp_path / "boards").mkdir()
    text = (ROOT / "boards" / "mps2_an500.yaml").read_text()
    (tmp_path / "boards" / "tiny.yaml").write_text(
        text.replace("name: mps2_an500", "name: tiny").replace("  length: 4M\n  note: ZBT SSRAM1", "  length: 64K\n  note: x"))
    t = target(tmp_path, "tiny", models="a,b,c", board_dirs="[boards]")
    heavy = [dict(plan_doc(100, 100), weights_bytes=w) for w in (30000, 30000, 10000)]
    r = gate.gate(t, plans(t, *heavy))
    [p] = r.problems
    assert (r.status, p.kind, p.region, p.model, p.need, p.limit, p.over_by) == (
        "over", "flash", "FLASH", "c", 70000, 65536, 4464)
    assert p.message.startswith("arena: tiny: model c's weights (10,000 B) do not fit beside the others: "
                                "models a+b+c need 70,000 B of weights, FLASH has 65,536 B (over by 4,464 B, "
                                "before any code); try quantizing a (and likewise b+c) to int8 (int8 weights take")
    assert p.message.endswith("or a board with more flash, or an external flash: declare the board's QSPI/OSPI NOR "
                              "under external_flash: in tiny.yaml and set weights: QSPI for model c")
    alone = [dict(plan_doc(100, 100), weights_bytes=w) for w in (70000, 1000, 80000)]
    p = gate.gate(t, plans(t, *alone)).problems[0]
    assert p.model == "c" and p.message.startswith(
        "arena: tiny: model c's weights need 80,000 B of flash (a's 70,000 B do not fit either), FLASH has 65,536 B")
    doc = gate.gate(t, plans(t, *alone)).to_json()
    check_json(doc, "report", "arena_report.json")
    assert doc["problems"][0]["over_by"] == 80000 - 65536


def test_runtime_problems_name_model_op_node_and_why(tmp_path: Path) -> None:
    import onnx
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["r"], name="relu0"),
                               helper.make_node("Cos", ["r"], ["y"], name="cos0")], "g", [x], [y])
    (tmp_path / "m").mkdir()
    path = str(tmp_path / "m" / "trig.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    from fwbuild import plan as real_plan
    from arena_tool.core.problem import ModelOptions

    doc = real_plan(path, "greedy_size")
    lowered = plancheck.lowered_model(path, doc)
    [p] = gate.runtime_problems("mps2_an500", "trig", doc, lowered)
    assert (p.kind, p.model, p.op_index, p.node, p.op_type) == ("unsupported", "trig", 1, "cos0", "Cos")
    assert p.message == ("arena: mps2_an500: model trig: op 1 'cos0' (Cos) cannot run on arena's runtime: "
                         "the runtime has no kernel for this op")
    t = target(tmp_path, "mps2_an500", models="trig")
    r = gate.gate(t, [("trig", "build/plans/trig.plan.json", doc)], runtime_problems=[p])
    assert r.status == "unsupported" and board_report.failure(r).msg == p.message
    check_json(r.to_json(), "report", "arena_report.json")
    # activation_dtype is a what-if: the plan sizes int8 buffers for a model that computes float32.
    whatif = real_plan(path, "greedy_size", ModelOptions(activation_dtype="int8"))
    problems = gate.runtime_problems("mps2_an500", "trig", whatif, lowered)
    assert problems[-1].kind == "unsupported" and "are a what-if that re-sizes the plan" in problems[-1].message
    assert "quantize_static" in problems[-1].message
    ok_doc = real_plan(str(ROOT / "example_firmware" / "models" / "kws_int8.onnx"), "greedy_size")
    assert gate.runtime_problems("b", "kws_int8", ok_doc, plancheck.lowered_model(
        str(ROOT / "example_firmware" / "models" / "kws_int8.onnx"), ok_doc)) == []


def test_a_failed_link_is_in_the_report(tmp_path: Path) -> None:
    t = target(tmp_path, "{name: nucleo_f746, region: DTCM, budget: 60K}")
    rep = gate.gate(t, plans(t, plan_doc(30000, 28000), plan_doc(20000, 20000)))
    ld = ("ld: build/x/firmware.elf section `.rodata' will not fit in region `FLASH'\n"
          "ld: region `FLASH' overflowed by 25360 bytes\ncollect2: error: ld returned 1 exit status\n")
    over = gate.link_failure(rep, ld, "FLASH", {"DTCM": 65536})
    check_json(over.to_json(), "report", "arena_report.json")
    [p] = over.problems
    assert over.status == "over" and (p.kind, p.region, p.over_by) == ("flash", "FLASH", 25360)
    assert p.message == ("arena: nucleo_f746: code, constants and weights overflow FLASH by 25,360 B "
                            "(flash 1,048,576 B, of which the weights take 200 B)")
    ram = gate.link_failure(rep, "ld: region `DTCM' overflowed by 8 bytes\n", "FLASH", {"DTCM": 65536})
    assert ram.status == "over" and ram.problems[0].kind == "ram" and ram.problems[0].need == 65544
    other = gate.link_failure(rep, "main.c:3: undefined reference to `arena_run'\n", "FLASH", {})
    assert other.status == "error" and other.problems[0].kind == "link"
    none = gate.link_failure(dataclasses.replace(rep, runtime="none"), "undefined reference to `arena_run'",
                               "FLASH", {})
    assert "with runtime: none the firmware defines arena_run" in none.problems[0].message
    text = board_report.summary([over])
    assert "  FAILED: over (1 problem; arena_report.json lists them)" in text


def test_the_quantize_hint_is_a_command_that_works(tmp_path: Path) -> None:
    """The command an over-budget float model is told to run writes an int8 model arena runs on integers."""
    import shutil
    import subprocess

    pytest.importorskip("onnxruntime")
    from arena_tool.model import liveness
    from arena_tool.core.problem import ModelOptions

    shutil.copy2(ROOT / "example_firmware" / "models" / "kws.onnx", tmp_path / "kws.onnx")
    cmd = hints.quantize_command("kws.onnx", {"input": [1, 1, 49, 10]})
    p = subprocess.run(cmd.split(" (calibrates")[0], shell=True, cwd=tmp_path, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    mp = liveness.model_problem(str(tmp_path / "kws.int8.onnx"), ModelOptions(input_shapes=(("input", (1, 1, 49, 10)),)))
    assert mp.integer_ops > 0


def _relu_model(path: Path, tensor: str) -> str:
    import onnx
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], [tensor], name="r0"),
                               helper.make_node("Relu", [tensor], ["y"], name="r1")], "g", [x], [y])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    return str(path)


def test_header_ids_are_what_the_generated_header_defines() -> None:
    """codegen.header_ids, compared with the names the real header text defines."""
    import re

    from arena_tool.emit import codegen
    from fwbuild import plan as real_plan

    path = str(ROOT / "example_firmware" / "models" / "kws_int8.onnx")
    plan = real_plan(path, "greedy_size")
    header, _ = codegen.model_sources(plan, plancheck.lowered_model(path, plan), "kws_int8")
    defined = (re.findall(r"^#define (\w+)", header, re.M) + re.findall(r"^    (\w+) =", header, re.M)
               + re.findall(r"^enum (\w+) \{", header, re.M) + re.findall(r"arena_model_t (\w+);", header))
    assert len(defined) > 40 and sorted(codegen.header_ids("kws_int8", plan)) == sorted(defined)


def test_two_models_whose_headers_define_one_name_are_refused(tmp_path: Path) -> None:
    """Model a's tensor T_B and model a_t's tensor B both become A_T_T_B: said by the gate, not by gcc."""
    from fwbuild import plan as real_plan

    t = target(tmp_path, "mps2_an500", models="a,a_t")
    docs = [real_plan(_relu_model(tmp_path / "a.onnx", "T_B"), "greedy_size"),
            real_plan(_relu_model(tmp_path / "a_t.onnx", "B"), "greedy_size")]
    r = gate.gate(t, [(s.name, f"build/plans/{s.name}.plan.json", d) for s, d in zip(t.models, docs)])
    [p] = [p for p in r.problems if p.kind == "names"]
    assert r.status == "error" and p.model == "a_t" and board_report.failure(r) is not None
    assert "models 'a' and 'a_t' would both define A_T_T_B" in p.message and "rename one" in p.message
    check_json(r.to_json(), "report", "arena_report.json")
    # the same names without the clash: a tensor that is not T_B
    docs[0] = real_plan(_relu_model(tmp_path / "a.onnx", "mid"), "greedy_size")
    r = gate.gate(t, [(s.name, f"build/plans/{s.name}.plan.json", d) for s, d in zip(t.models, docs)])
    assert r.status == "ok" and not r.problems


def test_a_bare_budget_below_every_lower_bound_asks_for_the_percentage(tmp_path: Path) -> None:
    """``budget: 90`` is 90 bytes; the user meant 90 %: below every model's lower bound no plan
    could fit it, so the gate asks instead of reporting a 90-byte budget."""
    t = target(tmp_path, "{name: nucleo_f746, region: DTCM, budget: 90}")
    msg = board_report.failure(gate.gate(t, plans(t, plan_doc(30000, 28000), plan_doc(20000, 20000)))).msg
    assert msg == ("arena: nucleo_f746: budget 90 is 90 B (a number without a unit is bytes), less than the smallest "
                   "model's lower bound (b: 20,000 B); did you mean 90% (58,982 B of the region) or 90K?")
    # with a unit, or above a lower bound, it is a budget like any other
    for budget in ("90B", "25000", "4000"):  # a unit, above a lower bound, or above 100: no percentage meant
        t = target(tmp_path, f"{{name: nucleo_f746, region: DTCM, budget: {budget}}}")
        assert "did you mean" not in board_report.failure(gate.gate(t, plans(t, plan_doc(30000, 28000),
                                                                               plan_doc(20000, 20000)))).msg


def test_the_summary_shows_the_limit_a_budget_above_the_region_leaves(tmp_path: Path) -> None:
    """``budget: 1M`` with ``region: auto`` on a board whose chosen region is 64K: the gate's limit
    is the region's room, and the summary says so (it showed 1,048,576 B as the budget the arena
    had to fit); likewise a percentage the stack+heap reserve cuts down."""
    t = target(tmp_path, "{name: nucleo_f746, region: auto, budget: 1M}")
    r = gate.gate(t, plans(t, plan_doc(30000, 28000), plan_doc(20000, 20000)), lambda need, reserve: "DTCM")
    head = board_report.summary([r]).splitlines()[0]
    assert head.endswith("budget 1,048,576 B (1M), limit 65,536 B: DTCM's 65,536 B"), head
    t = target(tmp_path, "{name: nucleo_g474re, region: SRAM2, budget: 90%}", models="a", reserve="{stack: 4K}")
    r = gate.gate(t, plans(t, plan_doc(10000, 10000)))
    head = board_report.summary([r]).splitlines()[0]
    assert head.endswith("budget 14,745 B (90%), limit 12,288 B: SRAM2's 16,384 B less the 4,096 B stack+heap reserve"), head
    t = target(tmp_path, "{name: nucleo_f746, region: DTCM, budget: 60K}")
    head = board_report.summary([gate.gate(t, plans(t, plan_doc(30000, 28000), plan_doc(20000, 20000)))]).splitlines()[0]
    assert head.endswith("budget 61,440 B (60K)")  # a budget the region holds is the limit: shown once
