"""arena-tool: plan, compare, check, export, verify and run from the command line.

This module only parses arguments and wires library calls (minimalloc's
main.cc). Errors are rendered once, here: an ArenaError as one line with its
exit status (1 check failed or over budget, 2 usage or input error); an OSError
(disk full, read-only folder) is the machine's, one line and exit status 2; anything
else is an arena bug: traceback plus exit status 3.
"""

from __future__ import annotations

import gc

gc.disable()  # the imports below make numpy's and arena's module objects, none of them garbage: 34
try:  # collections, ~20 ms of a CSV plan's ~0.2 CPU-s (issue 39: its whole process against minimalloc's),
    import argparse
    import os
    import sys
    import traceback
    import time
    from typing import TYPE_CHECKING, Any, Sequence

    from arena_tool.plan import planners
    from arena_tool.target import flags
    from arena_tool.core.errors import (
        EXIT_BUG,
        EXIT_CHECK_FAILED,
        EXIT_OK,
        EXIT_USAGE,
        ArenaError,
        CheckFailed,
        os_error,
    )
    from arena_tool.core.problem import ARENA_KERNELS, ModelOptions, ModelProblem, Option, Plan, Problem, Status, \
        fmt_bytes, lower_bound, option_fields
finally:
    gc.freeze()  # nor later: enabled again, the first collection would walk them all (all young)
    gc.enable()

if TYPE_CHECKING:
    from arena_tool.plan.planfile import PlanFile


_LOADED = time.perf_counter()


def process_age() -> float:
    """Seconds since this process started (Linux's /proc; elsewhere since this module
    loaded): the time limit of ``plan --problem`` counts the interpreter's start-up too."""
    try:
        with open("/proc/self/stat", encoding="ascii") as f:
            start_ticks = int(f.read().rsplit(")", 1)[1].split()[19])  # field 22, starttime
        with open("/proc/uptime", encoding="ascii") as f:
            uptime = float(f.read().split()[0])
        return max(0.0, uptime - start_ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return time.perf_counter() - _LOADED


def _model_options(args: argparse.Namespace) -> ModelOptions:
    """The options the model flags give; every flag is its ModelOptions field's Option."""
    return ModelOptions(**{f.name: _flag_value(o, getattr(args, o.dest), f.default)
                           for f, o in option_fields(ModelOptions)})


def _options_line(k: int, o: ModelOptions) -> str:
    """The options the plan was made under, as it records them: the echo says whether a flag took effect."""
    io_alignment = o.alignment if o.io_alignment is None else o.io_alignment
    return (f"k={k}, alignment {o.alignment}, io_alignment {io_alignment}, in-place {'on' if o.inplace else 'off'}, "
            f"scratch {o.scratch}, schedule {o.schedule}, execution {o.execution}")


def _patches_line(p: Any) -> str:
    """What patch-based inference did (planfile.PlanPatches): the stages, both arenas, the MACs."""
    extra = 100 * (p.macs - p.macs_untiled) / p.macs_untiled if p.macs_untiled else 0.0
    return (f"{p.stages}: untiled arena {fmt_bytes(p.untiled_arena)}, MACs {p.macs:,} ({extra:+.1f} % recomputed "
            f"in the halos), search {p.status} over {p.candidates} candidates")


def _model_flags() -> list[tuple[Any, Option]]:
    """(field, Option) of every model option, in --help order."""
    return sorted(option_fields(ModelOptions), key=lambda fo: fo[1].cli_rank)


def _flag_default(o: Option, default: Any) -> Any:
    """What argparse holds when the flag is not given."""
    return {"switch": False, "input_shape": [], "op_scratch": [], "bitwidths_file": None}.get(o.cli, default)


def _flag_keywords(o: Option, default: Any) -> dict[str, Any]:
    """add_argument's keywords for one option's flag (Option.cli says which)."""
    if o.cli == "switch":
        return {"action": "store_true", "help": o.help}
    kw: dict[str, Any] = {"default": _flag_default(o, default), "metavar": o.metavar, "help": o.help}
    if o.cli in ("input_shape", "op_scratch"):
        return {**kw, "action": "append"}
    return {**kw, "choices": o.choices, "type": _positive if o.cli == "positive" else None}


def _flag_value(o: Option, given: Any, default: Any) -> Any:
    """The field's value from what argparse parsed for its flag."""
    if o.cli == "switch":
        return (not default) if given else default
    if o.cli == "input_shape":
        from arena_tool.model import onnx_graph

        return tuple(sorted(onnx_graph.parse_input_shape(s) for s in given))
    if o.cli == "op_scratch":
        return tuple(sorted(_op_scratch(s) for s in given))
    if o.cli == "bitwidths_file":
        from arena_tool.model import liveness

        return liveness.read_bitwidths(given) if given else ()
    return given  # text, positive: as argparse converted it


def _op_scratch(text: str) -> tuple[str, tuple[int, ...]]:
    """'3=1024,64' -> ('3', (1024, 64)): operator 3's scratch requests in bytes."""
    op, sep, sizes = text.partition("=")
    hint = "write OP=BYTES,... with the operator's index and byte counts >= 1, e.g. 3=1024,64"
    try:
        parsed = tuple(int(b) for b in sizes.split(","))
        index = int(op)
    except ValueError:
        raise ArenaError(f"{text!r} is not OP=BYTES,...", field="--op-scratch", hint=hint) from None
    if not sep or index < 0 or any(b < 1 for b in parsed):
        raise ArenaError(f"{text!r} is not OP=BYTES,...", field="--op-scratch", hint=hint)
    return str(index), parsed


def _params(args: argparse.Namespace) -> planners.Params:
    """Planner options; --progress shows a status line on stderr (auto: a terminal, not CI)."""
    from arena_tool.core import progress

    planners.check_time_limit(args.time_limit, field="--time-limit")
    return planners.Params(k=args.k, time_limit=args.time_limit, seed=args.seed,
                           progress=progress.for_stream(sys.stderr, args.progress))


def _optimal_word(plan: Plan) -> str:
    if plan.optimal is not False and plan.arena_size == plan.lower_bound:
        return "yes (equals the lower bound)"
    if plan.optimal is True:
        return "yes (proven)"
    if plan.optimal is False:
        bound = (f", best bound {fmt_bytes(plan.best_bound)}: at most "
                 f"{100 * (plan.arena_size / plan.best_bound - 1):.2f} % above the optimum") if plan.best_bound else ""
        return f"no ({plan.status.replace('_', ' ')}{bound})"
    if plan.status == Status.TIME_LIMIT:
        return "not claimed (heuristic, stopped at the time limit)"
    return "not claimed (heuristic)"


def _seconds(s: float) -> str:
    return f"{s * 1000:.1f} ms" if s < 1 else f"{s:.2f} s"


def _summary(title: str, problem: Problem, plan: Plan, extra: list[tuple[str, str]]) -> str:
    rows = [("model", title), *extra,
            ("planner", plan.planner),
            ("arena", fmt_bytes(plan.arena_size)),
            ("lower bound", f"{fmt_bytes(plan.lower_bound)}  (gap {100 * plan.gap:.2f} %)"),
            ("no reuse", fmt_bytes(problem.total_size)),
            ("optimal", _optimal_word(plan)),
            ("time", _seconds(plan.seconds))]
    stats = dict(plan.stats)
    if plan.status == Status.SIZE_LIMIT and "rows" in stats:
        rows.append(("search", f"stopped before building: the cover matrix needs {stats['rows']:,} rows "
                               f"and {stats.get('nodes', 0):,} nodes at a {stats.get('unit', 1)}-byte unit; "
                               f"raise --k or use --planner optimal"))
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)


def _integer_line(mp: ModelProblem) -> str:
    fused = f", {mp.qdq_fused} lowered from QDQ" if mp.qdq_fused else ""
    return f"{mp.integer_ops} of {len(mp.schedule)} ops run on integers{fused}"


def cmd_plan(args: argparse.Namespace) -> int:
    params = _params(args)
    _check_plot(args)
    if args.problem:
        from arena_tool.model import csvio

        if args.model:
            raise ArenaError("give either MODEL or --problem, not both", field="plan")
        if args.plot:
            raise ArenaError("--plot draws a model's plan, not a CSV problem's", field="--plot",
                             hint="arena-tool plan MODEL --plot FILE.svg")
        gc.disable()  # 100,000 buffers are 100,000 objects: no collection while they are made,
        problem = csvio.read_problem(args.problem, capacity=args.capacity)
        gc.freeze()  # and none that walks them afterwards (issue 39: the time limit counts reading)
        gc.enable()
        age = process_age()  # a loaded machine: the reserve after the planner takes as much longer
        plan = planners.run_planner(args.planner, problem, params, spent=age,  # not planning's: no onnx
                                    slowness=age / max(time.process_time(), 1e-3))
        print(_summary(args.problem, problem, plan,
                       [("buffers", str(len(problem.buffers))),
                        ("capacity", fmt_bytes(problem.capacity) if problem.capacity else "none")]))
        if args.output:
            csvio.write_solution(problem, plan, args.output)
            print(f"wrote {args.output}")
        if problem.capacity is not None and plan.arena_size > problem.capacity:
            raise CheckFailed(f"arena {fmt_bytes(plan.arena_size)} exceeds the capacity {fmt_bytes(problem.capacity)}",
                              file=args.problem, hint="raise --capacity or try --planner optimal")
        return EXIT_OK
    if not args.model:
        raise ArenaError("no model given", field="plan", hint="arena-tool plan MODEL.onnx, or --problem FILE.csv")
    from arena_tool.plan import planfile, planning

    tflite = _on_tflm(args)
    planned_model = args.output if args.output and args.output.lower().endswith(".tflite") else None
    if (planned_model or args.order) and not tflite and _is_tflite(args.model):  # --kernels arena
        raise ArenaError("-o *.tflite and --order write TFLite Micro's offline plan into the model; this plan is "
                         "for arena's runtime (--kernels arena), which runs arena's tables", file=args.model,
                         field="plan", hint="write the plan as JSON (-o plan.json), or plan the model for TFLM "
                                            "(drop --kernels arena)")
    if (planned_model or args.order) and not tflite:
        raise ArenaError("-o *.tflite and --order need a .tflite model", file=args.model, field="plan",
                         hint="write the plan as JSON (-o plan.json) for an ONNX model")
    if tflite:
        order = _order(args.order) if args.order else None
        pm = planning.plan_tflite(args.model, _model_options(args), args.planner, params, order)
    else:
        pm = planning.plan_model(args.model, _model_options(args), args.planner, params)
    mp = pm.mp
    print(_summary(args.model, pm.problem, pm.plan, [
        ("ops", f"{len(mp.schedule)} scheduled, {len(mp.tensors)} arena tensors "
                f"({sum(1 for t in mp.tensors if t.alias_of)} aliased)"),
        ("integer", _integer_line(mp)),
        ("weights", f"{fmt_bytes(mp.weights_bytes)} (flash)"),
        *([("persistent", f"{len(variables)} variable tensors (TFLM's tail, outside the arena)")]
          if (variables := getattr(mp, "variables", ())) else []),
        *([("scratch", _scratch_line(mp))] if tflite else []),
        ("options", _options_line(args.k, pm.plan_file.options)),
        *([("patches", _patches_line(p))] if (p := pm.plan_file.patches) is not None else []),
    ]))
    if planned_model:
        from arena_tool.core import schema
        from arena_tool.model import tflite_model
        from arena_tool.emit import tflite_write

        plan_json = tflite_model.planned_path_for(planned_model)
        schema.check_json(pm.plan_file.to_json(), "plan", plan_json)
        tflite_write.write_planned(args.model, pm.plan_file, planned_model, plan_json)  # checks the plan first
        planfile.write(plan_json, pm.plan_file)
        print(f"wrote {planned_model} (OfflineMemoryAllocation: {fmt_bytes(pm.plan.arena_size)} head) and {plan_json}")
    elif args.output:
        planfile.write(args.output, pm.plan_file)
        print(f"wrote {args.output}")
    if args.plot:
        _write_plot([(pm.plan.planner, pm.plan_file)], args.plot)
    if args.budget is not None and pm.plan.arena_size > args.budget:
        raise CheckFailed(f"arena {fmt_bytes(pm.plan.arena_size)} exceeds the budget {fmt_bytes(args.budget)} "
                          f"by {fmt_bytes(pm.plan.arena_size - args.budget)}", file=args.model,
                          hint=_budget_hint(args, pm.plan, tflite))
    return EXIT_OK


def _budget_hint(args: argparse.Namespace, plan: Plan | PlanFile, tflite: bool, model: str | None = None,
                 options: ModelOptions | None = None) -> str:
    """What could meet ``--budget`` (plan, explain): a better plan only when this one is not proven
    optimal, and the configurations ``arena-tool fit``'s search finds (an ONNX model), or the
    smallest arena it reaches; the options given on the command line stay as given (model,
    options: a plan file's, whose options are all open to the search)."""
    tries = []
    proven = plan.optimal is True or plan.arena_size == plan.lower_bound
    if not proven and args.budget >= plan.lower_bound:
        tries.append("--planner optimal")
    if not tflite:
        from arena_tool.builder import fit
        from arena_tool.target.manifest_data import ModelSpec

        given = () if options is not None else tuple(
            f.name for f, o in _model_flags() if getattr(args, o.dest) != _flag_default(o, f.default))
        path = model or args.model
        spec = ModelSpec(name=os.path.splitext(os.path.basename(path))[0], path=path, planner=args.planner, k=args.k,
                         time_limit=args.time_limit, options=options or _model_options(args), fixed=given)
        fits, found = fit.remedies(spec, args.budget, seconds=60.0, cli=True)
        if not fits:
            return found + ("; try --planner optimal, or " if tries else "; try ") + "a bigger RAM region"
        tries.append(found)
    tries.append("a bigger RAM region")
    return "try " + "; or ".join(tries)


def _scratch_line(mp: Any) -> str:
    """A .tflite plan's kernel scratch buffers, and the ops whose scratch it cannot size."""
    from arena_tool.model import tflm_scratch

    bufs = [t for t in mp.tensors if t.kind == "scratch"]
    line = (f"{len(bufs)} kernel scratch buffers, {fmt_bytes(sum(t.size for t in bufs))} "
            f"({tflm_scratch.describe(mp.options.kernels)}), where TFLM places them")
    if mp.unknown_scratch:
        line += (f"; NOT sized: {', '.join(mp.unknown_scratch)} (the plan omits their bytes, so it claims no "
                 f"optimality; arena-tool verify measures them, --op-scratch OP=BYTES,... states them)")
    return line


def cmd_compare(args: argparse.Namespace) -> int:
    from arena_tool.model import liveness
    from arena_tool.plan import planning

    names = args.planners.split(",") if args.planners else planning.planner_names()
    for n in names:
        planning.check_planner_name(n, field="--planners")
    _check_plot(args)
    mp = liveness.model_problem(args.model, _model_options(args))
    problem = mp.problem()
    params = _params(args)
    print(f"{args.model}: {len(mp.schedule)} ops, {len(problem.buffers)} buffers, "
          f"no reuse {fmt_bytes(problem.total_size)}")
    header = f"{'planner':<18}{'arena B':>14}{'gap %':>9}{'time s':>9}  optimal"
    print(header)
    print("-" * len(header))
    plans: list[tuple[str, PlanFile]] = []
    for name in names:  # a .tflite plan's scratch where TFLM puts it, as `plan` writes it
        plan = planning.tflm_settled(mp, problem, planning.run_planner(name, problem, params))
        print(f"{name:<18}{plan.arena_size:>14,}{100 * plan.gap:>9.2f}{plan.seconds:>9.3f}  {_optimal_word(plan)}")
        if args.plot:
            from arena_tool.plan import planfile

            plans.append((name, planfile.build(mp, plan, problem, k=params.k)))
    print(f"{'lower bound':<18}{lower_bound(problem.buffers):>14,}")
    if args.plot:
        _write_plot(plans, args.plot)
    return EXIT_OK


def _check_plot(args: argparse.Namespace) -> None:
    """A bad --plot suffix fails before any planner time is spent."""
    if args.plot:
        from arena_tool.report import plot

        plot.check_path(args.plot)


def _write_plot(plans: list[tuple[str, PlanFile]], path: str) -> None:
    from arena_tool.report import plot

    plot.write(plans, path)
    print(f"wrote {path}")


PROBLEMS_SHOWN = 20  # lines check prints: a hand-edited plan of 100,000 extra buffers has a problem per buffer


def cmd_check(args: argparse.Namespace) -> int:
    from arena_tool.model import liveness
    from arena_tool.plan import plancheck, planfile

    plan = planfile.load(args.plan)
    mp = plancheck.derived_problem(args.model, plan)
    problems = plancheck.check(plan, mp, args.plan)
    if plan.kind == "onnx":
        problems += plancheck.patch_problems(plan, plancheck.lowered_model(args.model, plan))
    for p in problems[:PROBLEMS_SHOWN]:
        print(f"{args.plan}: error: {p}", file=sys.stderr)
    if len(problems) > PROBLEMS_SHOWN:
        print(f"{args.plan}: error: and {len(problems) - PROBLEMS_SHOWN:,} more problems", file=sys.stderr)
    if problems:
        return EXIT_CHECK_FAILED
    print(f"{args.plan}: ok: {len(plan.buffers)} buffers in {fmt_bytes(plan.arena_size)}, "
          f"lower bound {fmt_bytes(lower_bound(mp.problem().buffers))}, no overlaps")
    return EXIT_OK


def cmd_export(args: argparse.Namespace) -> int:
    from arena_tool.model import csvio, liveness

    mp = liveness.model_problem(args.model, _model_options(args))
    problem = mp.problem()
    csvio.write_problem(problem, args.output)
    print(f"wrote {args.output}: {len(problem.buffers)} buffers")
    return EXIT_OK


def _is_tflite(path: str) -> bool:
    from arena_tool.model import tflite_model

    return tflite_model.is_tflite(path)


def _on_tflm(args: argparse.Namespace) -> bool:
    """A .tflite model that TFLite Micro runs (any --kernels but arena, which lowers it for arena's runtime)."""
    return _is_tflite(args.model) and _model_options(args).kernels != ARENA_KERNELS


def _order(text: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ArenaError(f"--order {text!r}: expected operator indices like 0,2,1,3", field="--order") from None


def _input_shape_flag() -> tuple[Any, Option]:
    """(field, Option) of --input-shape, the one model option verify takes (the plan holds the rest)."""
    return next((f, o) for f, o in _model_flags() if f.name == "input_shapes")


def _check_input_shapes(args: argparse.Namespace, planned: Any, where: str) -> None:
    """verify's --input-shape, when given, must be what the plan was made with."""
    f, o = _input_shape_flag()
    given = _flag_value(o, getattr(args, o.dest), f.default)
    if given and tuple(given) != tuple(planned):
        def show(shapes: Any) -> str:
            return " ".join(f"{n}={','.join(map(str, d))}" for n, d in shapes) or "the model's own"

        raise ArenaError(f"--input-shape {show(given)} differs from the plan's input shapes ({show(planned)})",
                         file=where, field="--input-shape", hint="drop --input-shape, or re-plan with it")


def cmd_verify(args: argparse.Namespace) -> int:
    if _is_tflite(args.model):  # the real TFLM (and LiteRT) run MODEL and PLANNED
        from arena_tool.run import tflm

        f, o = _input_shape_flag()
        if getattr(args, o.dest):
            raise ArenaError("input shapes of a .tflite model are fixed in the flatbuffer", file=args.model,
                             field="--input-shape", hint="drop --input-shape")

        return tflm.main_verify(args.model, args.plan, runs=args.runs or 5, seed=args.input_seed)
    from arena_tool.model import liveness
    from arena_tool.plan import plancheck, planfile
    from arena_tool.run import verify

    if args.runs is not None:
        raise ArenaError("--runs applies to .tflite models", field="--runs", hint="drop --runs for an ONNX model")
    # The replay trusts the plan's buffers, shapes and arena_size: all but the pairs it replays are checked first.
    plan = planfile.load(args.plan)
    _check_input_shapes(args, plan.options.input_shapes, args.plan)
    problems = plancheck.check(plan, plancheck.derived_problem(args.model, plan), args.plan, pairs=False)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise CheckFailed(f"the plan does not match the model: {problems[0]}{more}", file=args.plan,
                          hint="re-plan with arena-tool plan, or check it with arena-tool check")
    return verify.main_verify(args.model, args.plan)


def cmd_run(args: argparse.Namespace) -> int:
    if args.runtime is not None and not _is_tflite(args.model):
        raise ArenaError("--runtime chooses the runtime of a .tflite model; an ONNX model runs on arena's",
                         field="--runtime", hint="drop --runtime")
    if args.runtime == "arena":  # the .tflite lowered for arena's own runtime
        args.kernels = ARENA_KERNELS
    elif args.runtime == "tflm" and _model_options(args).kernels == ARENA_KERNELS:
        raise ArenaError("--runtime tflm with --kernels arena: arena's kernels are its own runtime's",
                         field="--kernels", hint="drop --kernels arena, or use --runtime arena")
    if _on_tflm(args):  # TFLite Micro from the user's tree, against TFLM's host interpreter
        from arena_tool.run import tflm_firmware

        for flag, value in (("--input", args.input), ("--output", args.output), ("--profile", args.profile)):
            if value:
                raise ArenaError(f"{flag} applies to ONNX models", field=flag,
                                 hint="a .tflite run takes seeded random inputs (--input-seed)")
        return tflm_firmware.run(args.model, args.board, _model_options(args), args.planner, _params(args),
                                 tflm_dir=args.tflm, seed=args.input_seed,
                                 json_path=args.json, build_dir=args.build_dir, timeout=args.timeout,
                                 optimize=args.optimize, jobs=args.jobs)
    from arena_tool.run import firmware

    if args.model.lower().endswith((".yaml", ".yml")):
        return _run_manifest(args)
    return firmware.run(args.model, args.board, _model_options(args), args.planner, _params(args),
                        input_path=args.input, seed=args.input_seed, output=args.output, json_path=args.json,
                        build_dir=args.build_dir, timeout=args.timeout, optimize=args.optimize,
                        profile=args.profile)


def _run_manifest(args: argparse.Namespace) -> int:
    """``arena-tool run MANIFEST --board B``: every model of the manifest, with its own options,
    planner and ``inputs:`` sample (else the seeded random input), one firmware each on B; one
    line per model, then the worst exit status."""
    from arena_tool.run import firmware
    from arena_tool.target import manifest

    given = [o.flag for f, o in _model_flags() if getattr(args, o.dest) != _flag_default(o, f.default)]
    given += [flag for flag, value, default in (("--planner", args.planner, planners.DEFAULT_PLANNER), ("--k", args.k, 1),
                                                ("--time-limit", args.time_limit, 10.0), ("--input", args.input, None),
                                                ("--output", args.output, None), ("--json", args.json, None))
              if value != default]
    if given:
        raise ArenaError(f"{given[0]} does not apply to a manifest: each model's options and inputs are its own",
                         file=args.model, field=given[0],
                         hint="set them in the manifest (inputs: {model: file.npz}), or run one model")
    m = manifest.load(args.model)
    samples = dict(m.samples)
    outcome = []
    for spec in m.models:
        print(f"run {spec.name}: {spec.path}" + (f", input {samples[spec.name]}" if spec.name in samples else
                                                  f", seeded random input (seed {args.input_seed})"))
        sys.stdout.flush()
        code = firmware.run(spec.path, args.board, spec.options, spec.planner,
                            planners.Params(k=spec.k, time_limit=spec.time_limit, seed=args.seed),
                            input_path=samples.get(spec.name), seed=args.input_seed, timeout=args.timeout,
                            build_dir=os.path.join(args.build_dir, spec.name) if args.build_dir else None,
                            optimize=args.optimize, profile=args.profile)
        outcome.append((spec.name, code))
    print(f"run: {len(outcome)} models on {args.board}: " + ", ".join(
        f"{name} {'match' if code == 0 else 'MISMATCH'}" for name, code in outcome))
    return max(code for _, code in outcome)


def _plan_macs(path: str, plan: PlanFile) -> tuple[int, ...] | None:
    """MACs per op of an ONNX plan (``path``: the model, or a plan file naming it); None for a
    .tflite model, or a plan file whose model is gone or changed since it was planned."""
    from arena_tool.model import macs
    from arena_tool.plan import plancheck

    if plan.kind != "onnx":
        return None
    given = path.lower().endswith(".json")
    model = plan.model if given else path
    if given and not os.path.isfile(model):
        return None
    try:
        lowered = plancheck.lowered_model(model, plan)
    except ArenaError:
        if given:
            return None
        raise
    return macs.plan_macs(plan.schedule, lowered) if lowered.sha256 == plan.model_sha256 else None


def cmd_explain(args: argparse.Namespace) -> int:
    from arena_tool.plan import plancheck, planfile, planning
    from arena_tool.report import explain

    params = _params(args)
    planning.check_planner_name(args.planner, field="--planner")
    if args.model.lower().endswith(".json"):
        given = [o.flag for f, o in _model_flags() if getattr(args, o.dest) != _flag_default(o, f.default)]
        if given:
            raise ArenaError(f"{given[0]} does not apply to a plan file: its options are fixed", file=args.model,
                             field=given[0], hint="explain the model instead (arena-tool explain MODEL ...)")
        plan = planfile.load(args.model)
        problems, checked = plancheck.checked_alone(plan, args.model)  # a report would vouch for a plan
        if checked is None:
            print(f"arena-tool: {args.model}: note: its model {plan.model} is not at hand: the plan is checked "
                  f"against itself only", file=sys.stderr)
        if problems:
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            raise CheckFailed(f"{problems[0]}{more}", file=args.model,
                              hint="the plan file was edited; check it with arena-tool check MODEL PLAN, or re-plan")
    elif _on_tflm(args):
        plan = planning.plan_tflite(args.model, _model_options(args), args.planner, params).plan_file
    else:
        plan = planning.plan_model(args.model, _model_options(args), args.planner, params).plan_file
    report = explain.explain(plan, args.planner, params, macs=_plan_macs(args.model, plan))  # checks the peak
    if args.timeline:
        from arena_tool.report import timeline

        print(timeline.render(plan))
    else:
        print(explain.render(report))
    if args.json:
        explain.write(args.json, report)
        print(f"wrote {args.json}")
    if args.budget is not None and plan.arena_size > args.budget:
        given = args.model.lower().endswith(".json")
        raise CheckFailed(f"arena {fmt_bytes(plan.arena_size)} exceeds the budget {fmt_bytes(args.budget)} "
                          f"by {fmt_bytes(plan.arena_size - args.budget)}", file=args.model,
                          hint=_budget_hint(args, plan, plan.kind != "onnx", plan.model if given else None,
                                            plan.options if given else None))
    return EXIT_OK


def cmd_fit(args: argparse.Namespace) -> int:
    from arena_tool.run import fit

    return fit.main(args.manifest, args.board, objective=args.objective, json_path=args.json,
                    prove=not args.no_prove, timeout=args.timeout, write=args.write)


def cmd_schema(args: argparse.Namespace) -> int:
    from arena_tool.core import schema
    from arena_tool.core.errors import did_you_mean

    names = sorted(f.name[:-len(".schema.json")] for f in schema.schema_dir().glob("*.schema.json"))
    if args.name is None:
        print("\n".join(names))
        return EXIT_OK
    if args.name not in names:
        raise ArenaError(f"unknown schema '{args.name}'", field="schema",
                         hint=f"{did_you_mean(args.name, names)}expected one of: {', '.join(names)}")
    path = schema.schema_path(args.name)
    if args.print_text:
        print(path.read_text(encoding="utf-8"), end="")
    else:
        print(path)
    return EXIT_OK


def _fitted(doc: dict[str, Any], out: str) -> dict[str, Any]:
    """The manifest document as its ``fit:`` boards pick it: from the cache (nothing imported), or
    searched (``run.fit``)."""
    from arena_tool.builder import noop_cache

    try:
        return noop_cache.fitted(doc, out)
    except LookupError:
        from arena_tool.run import fit

        return fit.fitted(doc, out)


def cmd_generate(args: argparse.Namespace) -> int:
    """What ``scons link=0`` makes, for any outer build: the steps print their own errors
    (the gate's lines as the SCons build prints them); the summary, then the worst board's
    exit status."""
    from arena_tool import build_steps
    from arena_tool.builder import noop_cache
    from arena_tool.core import files

    try:
        made = build_steps.generate(args.manifest, args.board, args.out, args.board_dir, args.depfile, args.list,
                                    fitted=_fitted)
        if args.list:
            return EXIT_OK
        print(noop_cache.summary(list(made.reports), os.path.join(args.out, ".arena_summary.json")))
        return made.status
    except SystemExit as stop:
        return int(stop.code or 0)
    finally:
        files.release_build_lock(args.out)  # generate holds it while it writes (one process at a time)


def cmd_validate(args: argparse.Namespace) -> int:
    """``arena-tool validate``: the board's validation firmware built from the manifest's build
    graph (its steps print their own errors), then the data set through it over --port."""
    from arena_tool import build_steps
    from arena_tool.core import files
    from arena_tool.target import manifest

    loaded = manifest.load(args.manifest, args.board_dir)
    samples = dict(loaded.samples)
    tolerances = {name: dict(bounds) for name, bounds in loaded.tolerances}
    out = os.path.join(args.out, "profile") if args.profile else args.out  # its own objects, all -DARENA_PROFILE
    try:
        try:
            built = build_steps.validate_firmware(args.manifest, args.board, out, args.board_dir,
                                                  ["-DARENA_PROFILE"] if args.profile else [], fitted=_fitted)
        finally:
            files.release_build_lock(out)
    except SystemExit as stop:
        return int(stop.code or 0)
    return build_steps.run_validate(args.manifest, built.target, built.elf, built.plans, args.port, data=args.data,
                                    samples=samples, count=args.count, seed=args.input_seed, json_path=args.json,
                                    timeout=args.timeout, tolerances=tolerances)


def cmd_board_import(args: argparse.Namespace) -> int:
    """A board file from a vendor's linker script, PlatformIO JSON or devicetree, checked by the
    board loader like a shipped one; what the source could not say is printed for the user."""
    from arena_tool.core.files import write_atomic
    from arena_tool.target import board_import, boards

    path, lower = args.file, args.file.lower()
    kw = {"core": args.core, "fpu": args.fpu, "float_abi": args.float_abi}
    if lower.endswith(".json"):
        imp = board_import.from_platformio(path, args.name, **kw)
    else:
        name = args.name or os.path.splitext(os.path.basename(path))[0].lower().replace("-", "_").replace(".", "_")
        importer = board_import.from_dts if lower.endswith(".dts") else board_import.from_ld
        imp = importer(path, name, **kw)
    out = args.output or f"{imp.doc['name']}.yaml"
    if os.path.splitext(os.path.basename(out))[0] != imp.doc["name"]:
        raise ArenaError(f"the board file must be named {imp.doc['name']}.yaml, not {os.path.basename(out)}",
                         field="output", hint="give -o DIR/" + imp.doc["name"] + ".yaml, or --name")
    write_atomic(out, board_import.render(imp))
    board = boards.load_board_file(out)  # the schema and the cross-checks a shipped board passes
    print(f"wrote {out}: flash {board.flash.length:,} B at 0x{board.flash.origin:08X}, " +
          ", ".join(f"{r.name} {r.length:,} B at 0x{r.origin:08X}" for r in board.ram))
    for line in imp.unknown:
        print(f"arena-tool: board import: check {line}", file=sys.stderr)
    return EXIT_OK


def _model_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("model options")
    for f, o in _model_flags():
        g.add_argument(o.flag, **_flag_keywords(o, f.default))


def _planner_args(p: argparse.ArgumentParser, with_planner: bool = True) -> None:
    g = p.add_argument_group("planner options")
    if with_planner:
        g.add_argument("--planner", default=planners.DEFAULT_PLANNER,
                       help=f"one of: {', '.join(sorted(planners.PLANNERS))} (default {planners.DEFAULT_PLANNER})")
    g.add_argument("--k", type=_positive, default=1, help="exact_cover coarsening unit in bytes (default 1)")
    g.add_argument("--time-limit", type=float, default=10.0, metavar="S",
                   help="time limit of every planner in seconds, > 0 (default 10)")
    g.add_argument("--seed", type=int, default=0, help="seed of randomized planners (default 0)")
    g.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="a status line on stderr during long searches (default: on a terminal, off under CI)")


def _positive(text: str) -> int:
    try:
        value = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got '{text}'") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def _size(text: str) -> int:
    from arena_tool.target.yamlio import parse_size

    try:
        return parse_size(text)
    except ArenaError as e:
        raise argparse.ArgumentTypeError(e.msg) from None


def parser(command: str | None = None) -> argparse.ArgumentParser:
    """Every command's parser; with ``command`` 'plan' only plan's, which parses and helps alike
    (argparse sizes the terminal for each argument it adds: the others' cost a CSV plan 6 ms of
    its ~0.2 CPU-s, issue 39)."""
    from arena_tool import __version__

    top = argparse.ArgumentParser(
        prog="arena-tool",
        description="Plan the activation arena of an ONNX or TensorFlow Lite model for a microcontroller.",
        epilog="exit status: 0 ok, 1 a check failed or a budget is exceeded, 2 usage or input error, 3 arena bug")
    top.add_argument("--version", action="version", version=f"arena-tool {__version__}")
    sub = top.add_subparsers(dest="command", metavar="COMMAND", required=True)
    _plan_parser(sub)
    if command != "plan":
        _other_parsers(sub)
    return top


def _plan_parser(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    p = sub.add_parser("plan", help="plan one model (or a CSV problem) and print a summary",
                       description="Plan one model's arena and print a one-screen summary.")
    p.add_argument("model", nargs="?", help="the model (.onnx, or a .tflite flatbuffer)")
    p.add_argument("-o", "--output", metavar="FILE",
                   help="write the plan (JSON; CSV with --problem); PLANNED.tflite for a .tflite model writes the "
                        "model with arena's plan as TFLM's OfflineMemoryAllocation, and PLANNED.plan.json beside it")
    p.add_argument("--order", metavar="I,J,...",
                   help=".tflite: run the operators in this topological order (operator indices)")
    p.add_argument("--budget", type=_size, metavar="BYTES", help="exit 1 when the arena exceeds this (e.g. 64K)")
    p.add_argument("--plot", metavar="FILE.svg|FILE.png",
                   help="draw the plan: op on x, arena offset on y, a rectangle per buffer (SVG: hover for details)")
    p.add_argument("--problem", metavar="FILE.csv", help="plan a minimalloc CSV problem instead of a model")
    p.add_argument("--capacity", type=_size, metavar="BYTES", help="capacity of a CSV problem (default: from its file name)")
    _model_args(p)
    _planner_args(p)
    p.set_defaults(func=cmd_plan)


def _other_parsers(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    p = sub.add_parser("compare", help="run every planner on one model, side by side",
                       description="Run every planner on one model and print arena, gap and time side by side.")
    p.add_argument("model", help="the model (.onnx or .tflite)")
    p.add_argument("--planners", metavar="A,B,...", help="comma-separated planner names (default: all)")
    p.add_argument("--plot", metavar="FILE.svg|FILE.png", help="draw every planner's plan side by side, one y scale")
    _model_args(p)
    _planner_args(p, with_planner=False)
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser("check", help="check a plan file against its model",
                       description="Recompute live ranges and sizes from MODEL and check every buffer of PLAN.")
    p.add_argument("model", help="the model (.onnx or .tflite)")
    p.add_argument("plan", help="the plan file (JSON)")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("export", help="write a model's planning problem as minimalloc CSV",
                       description="Write the model's buffers as minimalloc CSV (id,lower,upper,size; half-open).")
    p.add_argument("model", help="the model (.onnx or .tflite)")
    p.add_argument("-o", "--output", required=True, metavar="FILE.csv", help="the CSV to write")
    _model_args(p)
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("verify", help="run a plan in one bytearray with onnxruntime's values (ONNX), "
                                      "or a planned .tflite in TFLite Micro",
                       description="ONNX: execute PLAN's schedule in one bytearray with reference values from "
                                   "onnxruntime and name the first clobbered tensor. TFLite: run MODEL.tflite and "
                                   "PLANNED.tflite (or a plan JSON) in TFLite Micro's host interpreter (and LiteRT "
                                   "where installed) on seeded random inputs; outputs must be bit-identical and "
                                   "TFLM's head must be arena's plan.")
    p.add_argument("model", help="the model (.onnx or .tflite)")
    p.add_argument("plan", help="the plan file (JSON), or for a .tflite model the planned .tflite")
    p.add_argument("--runs", type=_positive, metavar="N", help=".tflite: random input sets (default 5)")
    p.add_argument("--input-seed", type=int, default=0, metavar="N", help=".tflite: seed of the inputs (default 0)")
    f, o = _input_shape_flag()
    p.add_argument(o.flag, **{**_flag_keywords(o, f.default),
                              "help": o.help + "; must be the plan's (the plan fixes the shapes it replays)"})
    p.set_defaults(func=cmd_verify)

    p = sub.add_parser("run", help="build and run a one-model firmware, compare it with onnxruntime",
                       description="Build a one-model firmware from the generated tables for BOARD, run it (QEMU "
                                   "for the mps2 boards, natively with gcc for host), and compare every output "
                                   "with onnxruntime on the same input. Exit 0 match, 1 mismatch or an op the "
                                   "runtime cannot execute, 2 usage or input error, 3 arena bug.")
    p.add_argument("model", help="the ONNX model, a .tflite model (run on TFLite Micro: --tflm), or a manifest "
                                 "(.yaml): every model, its options and its inputs: sample")
    p.add_argument("--board", required=True, metavar="BOARD",
                   help="host (native gcc) or a board QEMU emulates (mps2_an385, mps2_an386, mps2_an500, mps2_an505, "
                        "mps3_an547)")
    p.add_argument("--input", metavar="FILE.npz", help="the input arrays by graph input name (default: seeded random)")
    p.add_argument("--input-seed", type=int, default=0, metavar="N", help="seed of the random input (default 0)")
    p.add_argument("--output", metavar="FILE.npz", help="write the firmware's outputs by graph output name")
    p.add_argument("--json", metavar="FILE", help="write a report (schemas/run.schema.json)")
    p.add_argument("--build-dir", metavar="DIR", help="build in DIR and keep it (default: a temporary folder)")
    p.add_argument("--timeout", type=float, default=120.0, metavar="S",
                   help="stop the firmware after S seconds (default 120)")
    p.add_argument("--optimize", choices=sorted(flags.LEVELS), default=None,
                   help=f"compile the runtime and tables for speed (-O2) or size (-Os); default "
                        f"{flags.DEFAULT_OPTIMIZE} as a SCons build, {flags.HOST_OPTIMIZE} for --board host")
    p.add_argument("--profile", action="store_true",
                   help="QEMU boards: also print each op's instructions and MACs (a second build with "
                        "-DARENA_PROFILE times every op with SysTick)")
    p.add_argument("--runtime", choices=("arena", "tflm"), default=None,
                   help=".tflite: run it on arena's own runtime (compared with TFLM's host interpreter bit for "
                        "bit) or on TFLite Micro (the default for a .tflite; --tflm DIR)")
    p.add_argument("--tflm", metavar="DIR", help=".tflite: the TFLite Micro tree to build (default $ARENA_TFLM_DIR)")
    p.add_argument("--jobs", type=_positive, default=1, metavar="N",
                   help=".tflite: parallel compiles of the TFLM library (default 1; cached after the first run)")
    _model_args(p)
    _planner_args(p)
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("explain", help="why the model needs its arena: the peak op, what is live there, savings",
                       description="Plan MODEL (or read PLAN.json) and print the op where the arena peaks, the "
                                   "buffers live there (an alias group once), the largest buffers, what reuse, "
                                   "in-place/views, the planner and int8 activations (a what-if) save, and a "
                                   "per-op table of live, output and workspace bytes.")
    p.add_argument("model", metavar="MODEL|PLAN", help="the model (.onnx or .tflite), or a plan file (.json)")
    p.add_argument("--json", metavar="FILE", help="write the report (schemas/explain.schema.json)")
    p.add_argument("--timeline", action="store_true",
                   help="print a text timeline instead: per op the arena map and live bytes, the peak marked")
    p.add_argument("--budget", type=_size, metavar="BYTES",
                   help="exit 1 when the arena exceeds this (e.g. 64K), naming the configurations that would fit")
    _model_args(p)
    _planner_args(p)
    p.set_defaults(func=cmd_explain)

    p = sub.add_parser("generate", help="plans, C tables, arena_board.{c,h}, linker script and reports of a "
                                        "manifest's board, for builds other than SCons (Make, CMake)",
                       description="Make everything `scons link=0` makes for BOARD, byte for byte, from the same "
                                   "build graph: plans, C tables, arena_board.{c,h}, the linker script (or "
                                   "fragment), the board report and arena_report.{json,html,md}; and a Make/Ninja "
                                   "depfile naming every input read. Exit 0 ok, 1 over budget or a failed check, "
                                   "2 usage or input error, 3 arena bug. Run it from the project folder: outputs "
                                   "name files relative to it.")
    p.add_argument("manifest", help="the manifest (arena.yaml)")
    p.add_argument("--board", required=True, metavar="BOARD", help="a board of the manifest (also a,b or all)")
    p.add_argument("--out", default="build", metavar="DIR", help="the build folder (default build, as SCons's)")
    p.add_argument("--depfile", metavar="FILE", help="where the depfile goes (default DIR/BOARD/arena.d)")
    p.add_argument("--list", action="store_true",
                   help="make nothing: print key=value lines of what to compile and link (the CMake module reads them)")
    p.add_argument("--board-dir", action="append", default=[], metavar="DIR",
                   help="another folder of board files (before the manifest's board_dirs)")
    p.set_defaults(func=cmd_generate)

    p = sub.add_parser("validate", help="a data set through a board's validation firmware over a serial port, "
                                        "compared with onnxruntime, timed on the target",
                       description="Build BOARD's validation firmware (build/BOARD/validate.elf: the manifest's "
                                   "models over a framed protocol on the board file's uart:), send it every "
                                   "model's inputs over PORT, compare each output with onnxruntime (exact "
                                   "matches, max abs error, L2 relative error, cosine, top-1 agreement) and report "
                                   "the time per inference (DWT cycles, or SysTick; under QEMU as instructions). "
                                   "Exit 0 match, 1 an output beyond tolerance, 2 usage or input error or a board "
                                   "that stops answering, 3 arena bug.")
    p.add_argument("manifest", help="the manifest (arena.yaml)")
    p.add_argument("--board", required=True, metavar="BOARD", help="a board of the manifest with uart: in its file")
    p.add_argument("--port", required=True, metavar="PORT",
                   help="a serial device (/dev/ttyACM0), tcp:HOST:PORT, a pyserial URL (socket://HOST:PORT), or "
                        "qemu: start the board's QEMU machine with its UART on a local socket")
    p.add_argument("--data", metavar="FILE.npz",
                   help="the data set: per graph input name an array of [N, *shape] (default: the manifest's "
                        "inputs: sample, else seeded random)")
    p.add_argument("--count", type=_positive, metavar="N", help="inferences per model (default: the data set's, "
                                                                "else 10)")
    p.add_argument("--input-seed", type=int, default=0, metavar="N", help="first seed of the random inputs (default 0)")
    p.add_argument("--json", metavar="FILE", help="write a report (schemas/validate.schema.json)")
    p.add_argument("--profile", action="store_true",
                   help="time every op too (the firmware built with -DARENA_PROFILE; its inference time is the "
                        "sum of its ops')")
    p.add_argument("--timeout", type=float, default=20.0, metavar="S",
                   help="the board has stopped answering after S seconds without a valid reply (default 20)")
    p.add_argument("--out", default="build", metavar="DIR", help="the build folder (default build, as SCons's)")
    p.add_argument("--board-dir", action="append", default=[], metavar="DIR",
                   help="another folder of board files (before the manifest's board_dirs)")
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("fit", help="the fastest configuration of a board's models that fits its RAM and flash, "
                                   "proven on QEMU",
                       description="Search the configurations of BOARD's models (io, io_buffers, schedule, patches "
                                   "and optimize; the options the manifest sets stay fixed): RAM from the plans, "
                                   "flash from the linked ELF, instructions from a per-op cost model calibrated by "
                                   "profiled QEMU runs. Print the Pareto front, pick the fastest that fits and "
                                   "prove it on QEMU (outputs equal onnxruntime's, instructions measured). Exit 0 "
                                   "a configuration fits, 1 none does (the smallest RAM and flash reachable are "
                                   "named), 2 usage or input error, 3 arena bug.")
    p.add_argument("manifest", help="the manifest (arena.yaml)")
    p.add_argument("--board", required=True, metavar="BOARD", help="a board of the manifest (also a,b or all)")
    p.add_argument("--objective", default="speed", choices=("speed", "ram", "flash"),
                   help="what the pick minimizes among the configurations that fit (default speed)")
    p.add_argument("--json", metavar="FILE", help="write the search (schemas/fit.schema.json)")
    p.add_argument("--no-prove", action="store_true", help="skip the QEMU run of the pick")
    p.add_argument("--write", metavar="FILE.yaml",
                   help="write the manifest with each board's pick as its settings (the models' options in the "
                        "board's models: overrides, optimize, a split's region list) to FILE.yaml, to build from; "
                        "YAML comments are not kept")
    p.add_argument("--timeout", type=float, default=300.0, metavar="S",
                   help="stop each firmware run after S seconds (default 300)")
    p.set_defaults(func=cmd_fit)

    p = sub.add_parser("board", help="board files: import one from a linker script, PlatformIO JSON or devicetree",
                       description="Board files (boards/<name>.yaml).")
    bsub = p.add_subparsers(dest="board_command", metavar="SUBCOMMAND", required=True)
    q = bsub.add_parser("import", help="write a board file from a GNU ld script's MEMORY, a PlatformIO board JSON "
                                       "or a preprocessed Zephyr devicetree (.dts)",
                        description="Write boards/NAME.yaml from what a vendor ships: a GNU ld script (its MEMORY "
                                    "block), a PlatformIO board JSON (.json) or a Zephyr devicetree after the C "
                                    "preprocessor (.dts: chosen zephyr,flash/sram/dtcm/itcm, memory@ nodes). "
                                    "It names, on stderr and in the file, what the source could not say (wait "
                                    "states, cache, DMA reach, the core) for you to check; the file passes the "
                                    "board schema.")
    q.add_argument("file", help="the linker script (.ld), PlatformIO board (.json) or devicetree (.dts)")
    q.add_argument("--name", help="the board's name (default: the file's name)")
    q.add_argument("-o", "--output", metavar="FILE.yaml", help="where to write it (default NAME.yaml here)")
    q.add_argument("--core", help="the core (cortex-m7, ...) when the source does not say")
    q.add_argument("--fpu", help="the FPU (fpv5-d16, none, ...)")
    q.add_argument("--float-abi", dest="float_abi", choices=("soft", "softfp", "hard"))
    q.set_defaults(func=cmd_board_import)

    p = sub.add_parser("schema", help="print the path of an installed JSON Schema (for editors), or list them",
                       description="Print the installed path of schemas/NAME.schema.json (point an editor's YAML or "
                                   "JSON support at it), or its text with --print; no NAME lists the schemas.")
    p.add_argument("name", nargs="?", metavar="NAME", help="manifest, board, plan, report, ... (default: list them)")
    p.add_argument("--print", dest="print_text", action="store_true", help="print the schema itself, not its path")
    p.set_defaults(func=cmd_schema)


def main(argv: Sequence[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else list(argv)
    args = parser(words[0] if words else None).parse_args(words)
    try:
        code: int = args.func(args)
        return code
    except ArenaError as e:
        print(f"arena-tool: {e.render()}", file=sys.stderr)
        if os.environ.get("ARENA_BACKTRACE"):
            traceback.print_exc()
        return e.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # the reader (head, less) left: not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except OSError as e:  # the machine's (disk full, read-only, permissions), not an arena bug
        print(f"arena-tool: {os_error(e, 'access the file').render()}", file=sys.stderr)
        if os.environ.get("ARENA_BACKTRACE"):
            traceback.print_exc()
        return EXIT_USAGE
    except Exception:  # noqa: BLE001 - the one place a bug is turned into a report
        traceback.print_exc()
        print("arena-tool: this is an arena bug; please report it with the command and the model", file=sys.stderr)
        return EXIT_BUG


if __name__ == "__main__":
    sys.exit(main())
