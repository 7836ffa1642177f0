"""arena-tool explain: the peak op, what is live there (alias groups once), savings, per-op table."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import models
from arena_tool.core import schema
from arena_tool.plan import planfile
from arena_tool.cli import main
from arena_tool.core.errors import ArenaBug
from arena_tool.plan import planners
from arena_tool.report import explain

KB = 1024
KWS = str(Path(__file__).resolve().parents[2] / "example_firmware" / "models" / "kws.onnx")


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def explain_json(capsys, tmp_path, *argv: str, name: str = "explain.json") -> dict:
    path = tmp_path / name
    code, out, err = run(capsys, "explain", *argv, "--json", str(path))
    assert code == 0, err
    report = json.loads(path.read_text())
    schema.check_json(report, "explain", str(path))
    return report


def test_chain_peak_and_live_set(capsys, tmp_path):
    path = models.save(models.chain(), tmp_path / "chain.onnx")
    r = explain_json(capsys, tmp_path, path)
    assert r["peak_op"] == 1 and r["peak_name"] == "mm1" and r["peak_op_type"] == "MatMul"
    assert r["peak_bytes"] == 12 * KB == r["lower_bound"]
    assert [(b["name"], b["size"]) for b in r["live_at_peak"]] == [("T1", 6 * KB), ("T2", 6 * KB)]
    assert [b["share"] for b in r["live_at_peak"]] == [50.0, 50.0]
    assert [b["name"] for b in r["largest"]] == ["T1", "T2", "T0", "T3"]
    assert [o["live_bytes"] for o in r["ops"]] == [10 * KB, 12 * KB, 8 * KB]
    assert [o["output_bytes"] for o in r["ops"]] == [6 * KB, 6 * KB, 2 * KB]
    assert [o["workspace_bytes"] for o in r["ops"]] == [0, 0, 0]
    s = r["savings"]
    assert s["naive"] == 18 * KB and s["no_alias_lower_bound"] == 12 * KB
    reuse, inplace, placement = s["techniques"]
    assert (reuse["technique"], reuse["saved"], reuse["percent"]) == ("reuse", 6 * KB, 33.33)
    assert inplace["saved"] == 0 and placement["technique"] == "placement" and placement["after"] == r["arena_size"]
    [planner] = s["alone"]
    assert planner["technique"] == "planner" and planner["before"] == s["greedy_arena"] == 12 * KB
    w = s["dtype"]["what_if"]  # float32 -> int8: a quarter of the bytes
    assert w["activation_dtype"] == "int8" and w["lower_bound"] == 3 * KB and w["saved"] == 9 * KB
    code, out, err = run(capsys, "explain", path)
    assert code == 0, err
    assert "peak         12,288 B at op 1 mm1 (MatMul)" in out
    assert "what-if" in out and "<- peak" in out


def test_alias_group_counted_once(capsys, tmp_path):
    path = models.save(models.relu_chain(), tmp_path / "relu.onnx")
    plan = planfile.load(str(_plan(capsys, tmp_path, path)))
    assert plan.by_name["T2"].alias_of == "T1"
    r = explain_json(capsys, tmp_path, path)
    # a naive per-tensor sum says 12 KB at the Relu (T1 + T2); T2 shares T1's bytes
    naive_live = [sum(b.size for b in plan.buffers if b.first_op <= i <= b.last_op) for i in range(3)]
    assert max(naive_live) == 12 * KB and naive_live.index(12 * KB) == 1
    assert r["peak_bytes"] == 10 * KB == plan.lower_bound and r["peak_op"] == 0
    assert [(b["name"], b["size"], b["members"]) for b in r["live_at_peak"]] == [("T1", 6 * KB, ["T2"]), ("T0", 4 * KB, [])]
    assert [o["live_bytes"] for o in r["ops"]] == [10 * KB, 6 * KB, 8 * KB]
    assert r["ops"][1]["aliased_output_bytes"] == 6 * KB
    inplace = r["savings"]["techniques"][1]
    assert inplace["technique"] == "inplace_views" and inplace["before"] == 12 * KB and inplace["saved"] == 2 * KB


def _plan(capsys, tmp_path, model: str) -> Path:
    out = tmp_path / "plan.json"
    code, _, err = run(capsys, "plan", model, "-o", str(out))
    assert code == 0, err
    return out


def test_plan_file_explains_like_the_model(capsys, tmp_path):
    path = models.save(models.relu_chain(), tmp_path / "relu.onnx")
    plan = _plan(capsys, tmp_path, path)
    from_model = explain_json(capsys, tmp_path, path, name="a.json")
    from_plan = explain_json(capsys, tmp_path, str(plan), name="b.json")
    assert from_plan == from_model


def test_macs_per_op_and_their_total(capsys, tmp_path):
    """chain: three MatMuls of 64 rows, K 16, 24, 24 into 24, 24, 8 columns."""
    path = models.save(models.chain(), tmp_path / "chain.onnx")
    r = explain_json(capsys, tmp_path, path)
    assert [o["macs"] for o in r["ops"]] == [64 * 24 * 16, 64 * 24 * 24, 64 * 8 * 24]
    assert r["macs"] == sum(o["macs"] for o in r["ops"])
    code, out, _ = run(capsys, "explain", path)
    assert code == 0 and f"MACs         {r['macs']:,} per inference" in out
    assert re.search(r"^ +1 +mm1 +MatMul .* 36,864( +<- peak)?$", out, re.MULTILINE)  # the MACs column


def test_a_plan_file_without_its_model_has_no_macs(capsys, tmp_path):
    path = models.save(models.chain(), tmp_path / "chain.onnx")
    plan = _plan(capsys, tmp_path, path)
    Path(path).unlink()
    r = explain_json(capsys, tmp_path, str(plan))
    assert r["macs"] is None and all(o["macs"] is None for o in r["ops"])
    code, out, _ = run(capsys, "explain", str(plan))
    assert code == 0 and "MACs         n/a (the ONNX model is not at hand)" in out


def test_plan_file_rejects_model_options(capsys, tmp_path):
    plan = _plan(capsys, tmp_path, models.save(models.chain(), tmp_path / "chain.onnx"))
    code, _, err = run(capsys, "explain", str(plan), "--no-inplace")
    assert code == 2 and "--no-inplace does not apply to a plan file" in err


def test_peak_not_the_lower_bound_is_an_arena_bug(capsys, tmp_path):
    """In a plan arena made it is a bug; in a plan file someone edited it is a failed check, exit 1 as
    check's (issues 23 and 35)."""
    plan = _plan(capsys, tmp_path, models.save(models.chain(), tmp_path / "chain.onnx"))
    doc = json.loads(plan.read_text())
    doc["lower_bound"] = 11 * KB
    with pytest.raises(ArenaBug, match="is not the plan's lower bound"):
        explain.explain(planfile.PlanFile.from_json(doc), "greedy_size", planners.Params())
    plan.write_text(json.dumps(doc))
    code, _, err = run(capsys, "explain", str(plan))
    assert code == 1 and "lower_bound" in err and len(err.strip().splitlines()) == 1, err


def test_schema_rejects_a_bad_report(capsys, tmp_path):
    r = explain_json(capsys, tmp_path, models.save(models.chain(), tmp_path / "chain.onnx"))
    del r["peak_op"]
    with pytest.raises(Exception, match="peak_op"):
        schema.check_json(r, "explain", "x.json")


def test_kws_peak_is_the_lower_bound(capsys, tmp_path):
    r = explain_json(capsys, tmp_path, KWS)
    plan = planfile.load(str(_plan(capsys, tmp_path, KWS)))
    assert r["peak_bytes"] == plan.lower_bound == max(o["live_bytes"] for o in r["ops"])
    assert r["ops"][r["peak_op"]]["live_bytes"] == r["peak_bytes"]
    assert sum(b["size"] for b in r["live_at_peak"]) == r["peak_bytes"]
    assert len(r["largest"]) == 10 and len(r["ops"]) == len(plan.schedule)


def test_long_names_are_elided_in_the_middle(capsys, tmp_path):
    """tflite2onnx names run past 200 characters: explain's rows stay bounded, each name keeps its
    start and end; the HTML report's cells show the same, the whole name on hover; the JSON keeps it."""
    from arena_tool.core.problem import NAME_WIDTH, elide
    from arena_tool.report import htmlreport

    tensor, op = "model/" + "x" * 200 + "/BiasAdd;conv_T1", "StatefulPartitionedCall/" + "y" * 200 + "/mm1"
    m = models.model([models.node("MatMul", ["T0", "W0"], [tensor], "mm0"),
                      models.node("MatMul", [tensor, "W1"], ["T2"], op),
                      models.node("MatMul", ["T2", "W2"], ["T3"], "mm2")],
                     [models.vi("T0", [64, 16])], [models.vi("T3", [64, 8])],
                     [models.weight("W0", [16, 24]), models.weight("W1", [24, 24], 1), models.weight("W2", [24, 8], 2)])
    path = models.save(m, tmp_path / "long.onnx")
    r = explain_json(capsys, tmp_path, path)
    assert r["peak_name"] == op and tensor in [b["name"] for b in r["live_at_peak"]]  # the JSON has them whole
    code, out, err = run(capsys, "explain", path)
    assert code == 0, err
    named = [line for line in out.splitlines() if "xxxxx" in line or "yyyyy" in line]
    assert len(named) >= 4 and max(len(line) for line in named) <= 120, max(named, key=len)
    assert elide(tensor) in out and elide(op) in out and tensor not in out
    short = elide(tensor)
    assert len(short) == NAME_WIDTH and short.startswith("model/x") and short.endswith("/BiasAdd;conv_T1")
    assert elide("T1") == "T1"
    row = htmlreport.BufferRow(tensor, 6 * KB, "activation", "float32", 0, 1, (), 50.0)
    cell = htmlreport._buffer_table([row], True, "k.")
    assert f'title="{tensor}"' in cell and f">{short}</td>" in cell


def test_io_choices_count_the_applications_buffers(capsys, tmp_path):
    """io_buffers: caller takes the I/O out of the arena into the application's RAM, and io: int8
    on such a plan shrinks those buffers even where the arena stays: explain says both."""
    kws_int8 = KWS.replace("kws.onnx", "kws_int8.onnx")
    r = explain_json(capsys, tmp_path, kws_int8, "--io-buffers", "caller")
    rows = {row["option"]: row for row in r["savings"]["io"]}
    q = rows["io"]  # float32 input and output (1,968 + 48 B at alignment 16) -> int8 (496 + 16 B)
    assert (q["caller_io_without"], q["caller_io_with"], q["saved"]) == (2016, 512, 0)
    c = rows["io_buffers"]
    assert c["chosen"] and (c["caller_io_without"], c["caller_io_with"]) == (0, 2016)
    _, out, _ = run(capsys, "explain", kws_int8, "--io-buffers", "caller")
    assert ("io: int8             saves nothing in the arena (8,000 B either way) and 1,504 B of the "
            "application's buffers (2,016 B -> 512 B); not this plan") in out
    assert "io_buffers: caller   saves nothing here (arena 8,000 B either way), and the application's buffers " \
           "hold the 2,016 B of inputs and outputs; this plan" in out


def test_cosmetics_rules_match_headers_and_names_elided_apart(capsys, tmp_path):
    """Two names that differ only in the middle read differently once elided (explain and the
    HTML read them the same); the per-op table has one rule per header (the '<- peak' column had a
    rule and no header); the HTML's largest-buffers table has no empty share column."""
    from arena_tool.report import htmlreport

    a, b = ("model/" + "x" * 70 + tag + "x" * 130 + "/Relu" for tag in ("A", "B"))
    m = models.model([models.node("MatMul", ["T0", "W0"], [a], "mm0"), models.node("MatMul", [a, "W1"], [b], "mm1"),
                      models.node("Add", [a, b], ["T3"], "add")],
                     [models.vi("T0", [64, 4])], [models.vi("T3", [64, 16])],
                     [models.weight("W0", [4, 16]), models.weight("W1", [16, 16], 1)])
    path = models.save(m, tmp_path / "apart.onnx")
    code, out, err = run(capsys, "explain", path)
    assert code == 0, err
    peak = out.split("live at the peak")[1].split("largest buffers")[0]
    rows = [line.split()[0] for line in peak.splitlines()[3:] if "/Relu" in line]
    assert len(rows) == 2 and rows[0] != rows[1], peak
    per_op = out.split("per op (")[1].splitlines()[1:3]
    assert len(re.split(r"\s{2,}", per_op[0].strip())) == len(per_op[1].split()) == 7, per_op  # a rule per header
    cells = htmlreport._buffer_table([htmlreport.BufferRow(n, 4096, "activation", "float32", 0, 2, (), None)
                                      for n in (a, b)], False, "k.")
    assert "<th>share</th>" not in cells and cells.count(f'title="{a}"') == 1
    shown = [c.split(">")[1] for c in cells.split("<td") if 'title="' in c]
    assert len(shown) == 2 and shown[0] != shown[1], shown


def test_savings_rows_chain_from_the_naive_sum_to_the_arena(capsys, tmp_path):
    """Each row of the technique table starts where the one above ends (issue 36 defect 12): they
    did not (reuse ended at the no-alias bound, the schedule row started at the graph order's
    bound, the planner row at greedy_size's arena). The choices measured alone, each against this
    plan, are a table of their own, headed as such."""
    path = models.save(models.chain(), tmp_path / "chain.onnx")
    for opts in ((), ("--schedule", "memory")):
        report = tmp_path / "r.json"
        code, out, err = run(capsys, "explain", path, *opts, "--json", str(report))
        assert code == 0, err
        r = json.loads(report.read_text())
        s = r["savings"]
        rows = s["techniques"]
        assert rows[0]["before"] == s["naive"] and rows[-1]["after"] == r["arena_size"]
        assert all(a["after"] == b["before"] for a, b in zip(rows, rows[1:])), rows
        assert sum(t["saved"] for t in rows) == s["naive"] - r["arena_size"]
        table = out[out.index("from the naive sum to the arena"):]
        cells = [re.split(r"\s{2,}", ln.strip()) for ln in table.splitlines()[1:3 + len(rows)]]
        assert cells[0][:3] == ["technique", "from B", "to B"]
        shown = [(int(c[1].replace(",", "")), int(c[2].replace(",", ""))) for c in cells[2:]]  # below the rule
        assert len(shown) == len(rows) and all(to == nxt for (_, to), (nxt, _) in zip(shown, shown[1:])), table
        assert "each choice alone" in out
