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


def _two(tmp_path: Path, top: str = "", q: str = "", mobile: str = "", board: str = "",
         region: str = "SSRAM23") -> manifest.BoardTarget:
    """A quantized conv (q: io int8 applies) and the float mobile net (over 40,000 B untiled)."""
    models.save(models.qdq_conv(), tmp_path / "q.onnx")
    models.save(models.mobile(), tmp_path / "mobile.onnx")
    (tmp_path / "arena.yaml").write_text(
        f"{top}models:\n  - {{name: q, path: q.onnx, time_limit: 2{q}}}\n"
        f"  - {{name: mobile, path: mobile.onnx, time_limit: 2{mobile}}}\n"
        f"boards:\n  - {{name: mps2_an386, region: {region}, budget: 40000{board}}}\n", encoding="utf-8")
    return manifest.load(str(tmp_path / "arena.yaml")).targets[0]


def _turned(t: manifest.BoardTarget, option: str) -> set[str]:
    """The values of ``option`` the search weighs for the board's models (planned or pruned)."""
    out = set()
    for m in t.models:
        space = fit.model_space(m, fit.room(t))
        out |= {str(getattr(o, option)) for o in [c.options for c in space.candidates] + [p.options for p in space.pruned]}
    return out


@pytest.mark.parametrize("option, value, where", [
    ("io", "model", "defaults"), ("io_buffers", "arena", "board"), ("schedule", "graph", "model"),
    ("patches", "off", "board")])
def test_an_option_set_to_its_default_is_still_never_turned(tmp_path, option, value, where):
    assert len(_turned(_two(tmp_path), option)) > 1  # unset, the search turns it
    setting = f"{option}: '{value}'"
    t = _two(tmp_path, top=f"defaults: {{{setting}}}\n" if where == "defaults" else "",
             q=f", {setting}" if where == "model" else "", mobile=f", {setting}" if where == "model" else "",
             board=f", models: {{q: {{{setting}}}, mobile: {{{setting}}}}}" if where == "board" else "")
    assert _turned(t, option) == {value}


def test_the_board_settings_set_explicitly_are_never_turned(tmp_path):
    from arena_tool.run import fit as run_fit

    t = _two(tmp_path)  # region SSRAM23 as written: one arena there, never split
    assert run_fit._levels(t) == ["speed", "size"] and fit.split_caps(t) == ()
    assert run_fit._levels(_two(tmp_path, board=", optimize: size")) == ["size"]
    assert fit.split_caps(_two(tmp_path, region="auto"))  # auto: a split may be weighed


def test_fit_on_a_model_searches_that_model_only_and_keeps_the_board_settings(tmp_path):
    from arena_tool.builder import noop_cache
    from arena_tool.run import fit as run_fit
    from arena_tool.target import manifest_data

    t = _two(tmp_path, mobile=", fit: {objective: ram}")
    assert t.fit is None and t.objective == "ram" and [m.fit for m in t.models] == [None, "ram"]
    doc = manifest_data.target_doc(t)
    assert manifest_data.target_from_doc(doc) == t and noop_cache._searched(doc)
    scoped = fit.scoped(t)
    assert set(scoped.models[0].fixed) >= set(fit.SEARCHED) and scoped.models[1] == t.models[1]
    assert _turned(scoped, "io") == {"model"}  # q as the manifest says: no io: int8
    assert len(_turned(scoped, "patches")) > 1  # mobile's patches weighed
    assert run_fit._levels(t, board_wide=False) == ["speed"]  # the board's level (the default), not searched
    board = _two(tmp_path, board=", fit: auto")  # a board's fit: every model turned
    assert fit.scoped(board) == board and board.objective == "speed"
    assert not noop_cache._searched(manifest_data.target_doc(_two(tmp_path)))


def test_a_small_model_beside_the_peak_is_not_told_io_int8(tmp_path):
    """The issue's multi-model board: io: int8 would shrink the small QDQ model (as its own hint
    says when it alone is over), but it cannot move the board's peak, which the float net sets."""
    from arena_tool.builder import gate
    from arena_tool.plan import planners, planning

    models.save(models.mobile(), tmp_path / "mobile.onnx")
    models.save(models.qdq_pool(), tmp_path / "pool.onnx")

    def problem(budget: int, names: tuple[str, ...]) -> str:
        (tmp_path / "arena.yaml").write_text(
            "models:\n" + "".join(f"  - {{name: {n}, path: {n}.onnx, time_limit: 2}}\n" for n in names)
            + f"boards:\n  - {{name: mps2_an386, region: SSRAM23, budget: {budget}}}\n", encoding="utf-8")
        t = manifest.load(str(tmp_path / "arena.yaml")).targets[0]
        plans = [(m.name, f"{m.name}.plan.json", planning.plan_model(
            m.path, m.options, m.planner, planners.Params(time_limit=2)).plan_file) for m in t.models]
        (p,) = gate.gate(t, plans, remedy=fit.remedy).problems
        return p.message

    alone = problem(4000, ("pool",))  # over on its own: io: int8 is its remedy
    assert "configurations that fit for pool: io: int8" in alone
    both = problem(40000, ("mobile", "pool"))
    assert "model mobile needs" in both and "configurations that fit for mobile: patches: " in both
    assert "pool" not in both and "io: int8" not in both


def test_a_tflite_on_arenas_runtime_fits_by_patches_and_caller_io(tmp_path):
    """fit weighs a .tflite on a runtime: arena board as it weighs an ONNX model: caller-owned I/O,
    schedules and patches (a budget below the untiled arena is met by patches alone), never io: int8
    (its inputs and outputs are already the model's int8 tensors). Before, every candidate but the
    manifest's was refused (io_buffers and patches on a .tflite)."""
    from tflite_models import save
    from tflite_ops import patch_stage_model

    save(tmp_path, "stage.tflite", patch_stage_model(0))
    (tmp_path / "arena.yaml").write_text(
        "runtime: arena\nmodels:\n  - {name: stage, path: stage.tflite, time_limit: 2}\n"
        "boards:\n  - {name: mps2_an386, region: SSRAM23, budget: 3000}\n", encoding="utf-8")
    t = manifest.load(str(tmp_path / "arena.yaml")).targets[0]
    assert t.models[0].options.kernels == "arena"
    fits, spaces = fit.ram_fits(t)
    (space,) = spaces
    assert space.candidates[0].arena > 3000  # as the manifest says: 3,968 B
    tried = {(c.options.io, c.options.io_buffers, c.options.patches != "off") for c in space.candidates} | \
        {(p.options.io, p.options.io_buffers, p.options.patches != "off") for p in space.pruned}
    assert {io for io, _, _ in tried} == {"model"} and {b for _, b, _ in tried} == {"arena", "caller"}
    assert fits and all(c.arena <= 3000 for c in fits)
    assert all(p.options.patches != "off" for c in fits for p in c.picks)
