"""builder.fit: the candidates arena-tool fit weighs, their RAM from the plans, and what the
manifest fixes (no gcc, no QEMU)."""

from __future__ import annotations

from pathlib import Path

import pytest

import models
from arena_tool.builder import fit
from arena_tool.core.problem import align_up, lower_bound
from arena_tool.model import liveness
from arena_tool.target import manifest


def _target(tmp_path: Path, budget: str, model_options: str = "", sharing: str = "sequential") -> manifest.BoardTarget:
    models.save(models.mobile(), tmp_path / "mobile.onnx")
    models.save(models.chain(), tmp_path / "chain.onnx")
    (tmp_path / "arena.yaml").write_text(
        "models:\n"
        f"  - {{name: mobile, path: mobile.onnx, time_limit: 2{model_options}}}\n"
        "boards:\n"
        f"  - {{name: mps2_an386, region: SSRAM23, budget: {budget}, sharing: {sharing}}}\n", encoding="utf-8")
    return manifest.load(str(tmp_path / "arena.yaml")).targets[0]


def test_every_candidate_ram_is_its_plan_and_a_tight_budget_is_met_only_by_patches(tmp_path):
    t = _target(tmp_path, "40000")
    fits, spaces = fit.ram_fits(t)
    (space,) = spaces
    first = space.candidates[0]
    assert first.options == t.models[0].options and first.arena > 40000  # as the manifest says: over
    for c in space.candidates:
        assert c.ram == c.plan.arena_size + c.plan.caller_io and c.arena >= c.lower_bound
    assert fits and all(c.ram == c.arena + t.reserve + sum(p.caller_io for p in c.picks) for c in fits)
    assert all(c.arena <= 40000 and c.region == "SSRAM23" for c in fits)
    assert all(p.options.patches != "off" for c in fits for p in c.picks)


def test_a_pruned_variant_has_a_bound_no_better_than_a_plan_of_the_same_ops(tmp_path):
    t = _target(tmp_path, "40000")
    (space,) = fit.ram_fits(t)[1]
    planned = {(c.options.io, c.options.patches): c.ram for c in space.candidates}
    assert space.pruned
    for p in space.pruned:
        mp = liveness.model_problem(t.models[0].path, p.options)
        io = sum(x.size for x in mp.tensors if x.kind in ("input", "output")) if p.options.io_buffers == "caller" else 0
        assert lower_bound(mp.problem().buffers) + io >= planned[(p.options.io, p.options.patches)]


def test_options_the_manifest_sets_are_never_turned(tmp_path):
    t = _target(tmp_path, "40000", ", patches: 'off', schedule: memory")
    assert set(t.models[0].fixed) >= {"patches", "schedule"}
    fits, spaces = fit.ram_fits(t)
    assert not fits  # only patches could meet it, and the manifest says off
    assert {(c.options.patches, c.options.schedule) for c in spaces[0].candidates} == {("off", "memory")}


@pytest.mark.parametrize("sharing", ["sequential", "concurrent"])
def test_a_board_arena_is_the_largest_or_the_aligned_sum(tmp_path, sharing):
    t = _target(tmp_path, "100%", sharing=sharing)
    (space,) = fit.ram_fits(t)[1]
    a = space.candidates[0]
    combo = fit.combine(t, [a, a])
    assert combo.arena == (a.arena if sharing == "sequential" else align_up(a.arena, a.alignment) + a.arena)
    assert combo.peak == ("mobile", "mobile")  # two equal arenas: both set the peak


def test_the_gate_names_only_the_peak_model_and_lists_configurations_that_fit(tmp_path):
    from arena_tool.builder import gate
    from arena_tool.plan import planners, planning

    models.save(models.mobile(), tmp_path / "mobile.onnx")
    models.save(models.chain(), tmp_path / "chain.onnx")
    (tmp_path / "arena.yaml").write_text(
        "models:\n  - {name: mobile, path: mobile.onnx, time_limit: 2}\n  - {name: small, path: chain.onnx}\n"
        "boards:\n  - {name: mps2_an386, region: SSRAM23, budget: 40000}\n", encoding="utf-8")
    t = manifest.load(str(tmp_path / "arena.yaml")).targets[0]
    plans = [(m.name, f"{m.name}.plan.json", planning.plan_model(m.path, m.options, m.planner,
                                                                 planners.Params(time_limit=2)).plan_file)
             for m in t.models]
    assert plans[0][2].arena_size > 40000 >= plans[1][2].arena_size
    (problem,) = gate.gate(t, plans, remedy=fit.remedy).problems
    assert "model mobile needs" in problem.message and "small" not in problem.message
    assert "configurations that fit for mobile: patches: " in problem.message
    assert "planner optimal" not in problem.message  # the plan is optimal already


@pytest.mark.slow  # quantizes MobileNetV2 and plans its candidates (about a minute), no build
def test_mobilenet_v2_int8_over_64k_is_told_patches(zoo_dir, qcache, capsys):
    import quantized
    from arena_tool import cli

    model = quantized.quantized(zoo_dir / "mobilenet_v2.onnx", "qdq", True, qcache)
    assert cli.main(["plan", str(model), "--budget", "64K"]) == 1
    err = capsys.readouterr().err
    assert "configurations that fit for" in err and "--io int8 --patches" in err
    assert "--planner optimal" not in err  # the plan is optimal already: the hint was that


@pytest.mark.parametrize("command", ["plan", "explain"])
def test_budget_hints_name_what_fits_and_never_what_the_plan_already_does(tmp_path, capsys, command):
    from arena_tool import cli

    path = models.save(models.mobile(), tmp_path / "mobile.onnx")
    assert cli.main([command, path, "--budget", "40000", "--time-limit", "2"]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "configurations that fit for mobile: --patches" in err
    assert "--planner optimal" not in err and "--activation-dtype" not in err
    assert cli.main([command, path, "--budget", "1000", "--time-limit", "2"]) == 1
    err = capsys.readouterr().err
    assert "nothing meets it for mobile" in err and "the smallest arena reached is --patches" in err
