"""Shared test helpers.

Tests that need the Arm cross toolchain or QEMU call ``require_tool``: they are
skipped with a reason where the tool is absent, except under
ARENA_REQUIRE_TOOLS=1 (set by .ci/run), where an absent tool is a failure, so
CI can never go green by skipping the firmware tests.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path
from typing import Any, NoReturn

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))


def unavailable(why: str, fix: str) -> NoReturn:
    """Skip: something the test needs is missing; a failure under ARENA_REQUIRE_TOOLS=1 (CI)."""
    if os.environ.get("ARENA_REQUIRE_TOOLS") == "1":
        pytest.fail(f"{why} but ARENA_REQUIRE_TOOLS=1 ({fix})")
    pytest.skip(f"{why} ({fix})")


def require_tool(name: str) -> str:
    path = shutil.which(name)
    if path:
        return path
    unavailable(f"{name} is not on PATH", "install it with .ci/setup")


def has_tool(name: str) -> bool:
    """For a test that checks more where a tool is (a link after the plans): whether ``name`` is on
    PATH; its absence is a failure under ARENA_REQUIRE_TOOLS=1, never a quieter test."""
    if shutil.which(name):
        return True
    if os.environ.get("ARENA_REQUIRE_TOOLS") == "1":
        unavailable(f"{name} is not on PATH", "install it with .ci/setup")
    return False


# The shared folder: ``absent`` and ``require_shared`` fail instead of skipping when CI required it.
from shared_paths import MLPERF, SHARED, SHARED_REQUIRED  # noqa: E402


def absent(path: Path) -> bool:
    """For a skipif: the shared file is missing and nobody required it (else the test runs and fails)."""
    return not path.exists() and not SHARED_REQUIRED


def require_shared(path: Path) -> Path:
    """path, else skip with its name; a failure when ARENA_SHARED names a folder and ARENA_REQUIRE_TOOLS=1."""
    if path.exists():
        return path
    if SHARED_REQUIRED:
        pytest.fail(f"{path} is absent but ARENA_SHARED={os.environ['ARENA_SHARED']} and ARENA_REQUIRE_TOOLS=1")
    pytest.skip(f"{path} is absent (set ARENA_SHARED to the shared folder)")
    raise AssertionError("unreachable")


@pytest.fixture
def cpu_clock(monkeypatch: pytest.MonkeyPatch) -> Any:
    """time.perf_counter made time.process_time for the test: the planners' deadlines
    (planners.clock, exact_cover, dlx read time.perf_counter) count this process's CPU seconds,
    so a test of how closely a planner keeps its time limit measures the planner's own work,
    not the other processes of a loaded machine (two xdist workers, a build beside them).
    Returns the clock the test times with."""
    import time

    monkeypatch.setattr(time, "perf_counter", time.process_time)
    return time.process_time


def write_manifest(tmp: Path, text: str) -> str:
    """``text`` as tmp/arena.yaml beside two empty model files it may name (m.onnx, n.onnx)."""
    (tmp / "m.onnx").write_bytes(b"")
    (tmp / "n.onnx").write_bytes(b"")
    path = tmp / "arena.yaml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def model_option_schemas() -> tuple[dict[str, Any], dict[str, Any]]:
    """The manifest and plan schemas, which list the model options (test_options, test_option_schemas)."""
    from arena_tool.core import schema

    return schema.load_schema("manifest"), schema.load_schema("plan")


def light_models() -> list[Path]:
    """The real models that ship inside the onnx package."""
    import onnx

    folder = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
    return sorted(folder.glob("*.onnx"))


@pytest.fixture
def planned(tmp_path):
    """(path, PlannedModel) of models.chain() planned by greedy_size under builders.CHAIN_OPTIONS
    (16 B alignment, a 4-bit tensor, row scratch): a small plan file with every kind of field."""
    import models
    from arena_tool.plan import planners, planning
    from builders import CHAIN_OPTIONS

    path = models.save(models.chain(), tmp_path / "chain.onnx")
    return path, planning.plan_model(path, CHAIN_OPTIONS, "greedy_size", planners.Params())


def run_dir(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    """A folder for the whole run: under pytest-xdist (-n), one that every worker shares (in the
    run's base temp folder, which holds the workers' own), else a new one. For a cache whose
    entries are written whole (a temporary file, then a rename), so a worker finds what another
    already made instead of making it again."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        folder = tmp_path_factory.getbasetemp().parent / name
        folder.mkdir(exist_ok=True)
        return folder
    return tmp_path_factory.mktemp(name)


@pytest.fixture(scope="session")
def qcache(tmp_path_factory):
    """One folder of int8 twins (tests/quantized.py) for the whole run, shared by the workers:
    each is made once (quantized._publish writes them whole)."""
    return run_dir(tmp_path_factory, "quantized")


@pytest.fixture(scope="session")
def zoo_dir(tmp_path_factory):
    """tests/zoo.py's networks (MobileNet V1/V2/V3, MnasNet, EfficientNet, ShuffleNetV2,
    SqueezeNet, ResNet at 96x96, the DS-TCN) saved once per run, as <name>.onnx."""
    import onnx

    import zoo

    d = tmp_path_factory.mktemp("zoo")
    for name in zoo.NAMES:
        onnx.save(zoo.build(name), str(d / f"{name}.onnx"))
    return d


# --- the `slow` marker: the fast inner loop is `python3 -m pytest -q -m "not slow"` ---------------
#
# A test is slow because it builds firmware or runs it (a compiler, a linker, QEMU, SCons, headless
# chromium, pip/venv in a subprocess), because it quantizes and plans the big light models, or
# because it runs a planner on a big or hard problem to its time limit on purpose; never to hide
# anything: .ci/run runs every test. The marks are given here, centrally, by the rules below (plus
# the few `@pytest.mark.slow` in the test files). The rules are kept honest at run time: a test
# that is not marked slow and starts one of those tools (in its body or in a fixture it sets up)
# fails, naming the tool; tests/test_markers.py checks that guard and the rules.

# Modules whose tests run subprocess builds or QEMU (a test added there is slow too).
SLOW_MODULES = {
    "test_bench_firmware.py",  # the bench firmware under QEMU
    "test_models_run.py",  # whole networks, host sanitizer builds and QEMU
    "test_patches_run.py",  # patched networks: host builds and QEMU
    "test_runtime.py",  # the example firmware: host sanitizer builds and QEMU
    "test_runtime_int8.py",  # the int8 fast paths: one host sanitizer firmware and QEMU
    "test_scons.py",  # scons end to end in a copy of the example
    "test_cmake.py",  # cmake, arm-none-eabi-gcc and QEMU through the CMake module
    "test_scons_tflm.py",  # scons with the TFLM runtime
    "test_tflm_firmware.py",  # TFLM firmwares built from the shared tree, QEMU and scons
    "test_tflite_arena.py",  # .tflite models on arena's runtime: host builds and QEMU against TFLM
    "test_site_tool.py",  # scons from an outside project
    "test_wheel.py",  # pip wheel, a venv and scons from the installed wheel
    "test_docs.py",  # sphinx-build of docs/, and the tutorial's and how-tos' commands (scons, cmake, QEMU)
}
# ...but these, in process and fast, stay in the fast loop.
FAST_TESTS = {
    "test_scons.py::test_builders_are_configured_as_documented",  # SCons's Environment with the tool, nothing built
    "test_docs.py::test_schema_reference_names_every_key",  # the reference generator, in process
    "test_docs.py::test_cli_reference_names_every_command_and_flag",
    "test_docs.py::test_c_api_reference_has_every_function_of_the_header",
    "test_docs.py::test_readme_is_short_and_its_snippets_are_the_docs_tested_ones",  # reads files
}

# Module-local fixtures (module::fixture) that build firmware or run scons: every test using one is slow.
SLOW_FIXTURES = {
    "test_build_integrity.py::generated",  # scons generation of the one-model project
    "test_htmlreport.py::ok",  # scons report of the example
    "test_htmlreport.py::failed",  # scons report of a failing build
    "test_inplace_depthwise.py::small",  # one host sanitizer firmware of the small models
    "test_runreport.py::fw",  # kws_int8 built for and run on QEMU
    "test_runtime_layout.py::op_run",  # one host sanitizer firmware of every layout op model
    "test_runtime_layout.py::whole_run",  # one host sanitizer firmware of the whole float models
    "test_runtime_qlinear.py::fw",  # one host sanitizer firmware of every qlinear model
    "test_split_arena.py::built",  # scons board=split_an500 run (QEMU)
}

# Test functions (module::function, every parametrization) that compile, link, run scons, QEMU
# or chromium in their body.
SLOW_TESTS = {
    "test_bench_speed.py::test_speed_on_ad01_measures_every_runtime",  # TFLM builds, QEMU, arena-tool run
    "test_build_graph.py::test_scons_tool_wires_the_graph",  # scons -n in a subprocess
    "test_codegen.py::test_folded_and_constant_node_values_become_tables",  # gcc: the table dumper
    "test_codegen.py::test_generated_c_compiles_warning_free",  # gcc, arm-none-eabi-gcc
    "test_codegen.py::test_tables_equal_the_plan_and_the_initializers",  # gcc: the table dumper
    "test_codegen_hardening.py::test_33000_tensors_run_and_match_onnxruntime",
    "test_codegen_hardening.py::test_a_300_input_concat_runs_and_matches_onnxruntime",
    "test_codegen_hardening.py::test_a_count_too_large_for_its_field_fails_the_compile",
    "test_codegen_hardening.py::test_hostile_names_compile_inject_nothing_and_run",
    "test_codegen_hardening.py::test_more_than_32767_tensors_in_an_int16_index_fails_the_compile",
    "test_codegen_hardening.py::test_split_with_a_named_unread_output_still_runs",
    "test_codegen_hardening.py::test_tensors_x_X_and__COUNT_give_distinct_c_names",
    "test_execution.py::test_io_aligned_pipelined_model_runs_on_the_host",
    "test_hardening.py::test_scons_uses_model_paths_exactly_as_written",
    "test_htmlreport.py::test_failing_build_writes_views_that_say_so",
    "test_htmlreport.py::test_html_numbers_are_the_reports_and_the_plans",
    "test_htmlreport.py::test_opens_in_chromium_without_console_messages",
    "test_htmlreport.py::test_views_are_the_json_document_rendered_and_rebuilt_only_when_it_changes",
    "test_inplace_depthwise.py::test_mobilenet_v2_runs_in_place_on_qemu",
    "test_inplace_depthwise.py::test_zoo_depthwise_networks_run_in_place_on_the_host",
    "test_kernel_table.py::test_int8_firmware_links_no_float_kernel_and_runs_its_ops",  # qemu
    "test_kernel_table.py::test_op_left_out_of_the_table_fails_at_that_op_and_no_table_runs_all",  # gcc
    "test_linker.py::test_arena_larger_than_planned_fails_the_link",  # test_linker: arm-none-eabi-gcc links
    "test_linker.py::test_arena_may_fill_its_region_exactly",
    "test_linker.py::test_arena_overflowing_its_region_fails_the_link",
    "test_linker.py::test_empty_plan_links_with_a_one_byte_arena",
    "test_linker.py::test_links_with_arena_in_region",
    "test_linker.py::test_stack_reserve_overflow_fails_the_link",
    "test_linker_fragment.py::test_arena_after_the_stack_reserve_fails_the_link",  # arm-none-eabi-gcc links
    "test_linker_fragment.py::test_arena_larger_than_planned_fails_the_link",
    "test_linker_fragment.py::test_arena_too_big_for_the_region_fails_the_link",
    "test_linker_fragment.py::test_fragment_links_into_the_vendor_script",
    "test_linker_fragment.py::test_memory_name_mapped_to_the_wrong_ram_fails_the_link",
    "test_linker_fragment.py::test_scons_links_the_firmware_against_the_vendor_script",
    "test_linker_fragment.py::test_scons_vendor_script_errors",
    "test_linker_fragment.py::test_script_without_a_known_stack_symbol_links",
    "test_linker_fragment.py::test_split_arena_and_copied_weights_link",
    "test_caller_io.py::test_every_int8_model_leaves_its_io_out_of_the_arena",  # quantizes every model
    "test_caller_io.py::test_int8_models_run_with_caller_buffers_on_the_host",  # gcc
    "test_caller_io.py::test_caller_buffers_run_on_qemu",
    "test_caller_io.py::test_arena_run_io_reads_and_writes_the_applications_buffers",  # gcc
    "test_caller_io.py::test_scons_builds_gates_and_reports_caller_buffers",  # scons, QEMU
    "test_int8_io.py::test_every_int8_model_runs_on_the_host_like_onnxruntime",  # gcc, every int8 model
    "test_int8_io.py::test_int8_models_run_on_qemu_like_onnxruntime",
    "test_int8_io.py::test_the_header_helpers_compile_and_quantize_like_onnxruntime",  # gcc
    "test_int8_io.py::test_no_int8_model_is_above_its_model_io_plan",  # quantizes every zoo and MLPerf model
    "test_lowering.py::test_lowered_qdq_runs_on_the_host_runtime_like_onnxruntime",
    "test_firmware.py::test_firmware_that_fails_is_an_arena_bug",  # test_firmware: host builds, QEMU
    "test_firmware.py::test_host_run_of_each_example_matches",
    "test_firmware.py::test_input_npz_round_trip",
    "test_firmware.py::test_run_a_manifest_runs_every_model_on_its_inputs",
    "test_firmware.py::test_json_report_validates_against_its_schema",
    "test_firmware.py::test_mismatch_exits_1",
    "test_firmware.py::test_qemu_mps2_an500_counts_instructions_and_matches",
    "test_firmware.py::test_profile_times_every_op_on_qemu",
    "test_firmware.py::test_same_input_prints_the_same_numbers",
    "test_runreport.py::test_elf_sizes_agree_with_size_A",
    "test_runtime_layout.py::test_kernels_refuse_tables_that_disagree_with_the_tensors",
    "test_runtime_layout.py::test_element_wise_kernels_refuse_an_op_they_have_no_case_for",
    "test_site_sconsign.py::test_the_tool_makes_the_database_arenas_through_sconsignfile",  # python -m SCons -n
    "test_runtime_qlinear.py::test_qemu_prints_what_the_host_build_prints",
    "test_scheduling.py::test_rescheduled_model_runs_on_the_host",
    "test_split_arena.py::test_gate_names_the_region_over",  # scons
    "test_split_arena.py::test_split_firmware_builds_checks_and_matches_onnxruntime",  # scons, QEMU
    "test_split_arena.py::test_split_outputs_are_byte_identical",  # scons
    "test_verify.py::test_corrupted_plan_is_named_by_verify_and_gives_wrong_firmware_output",
    # Big problems run to their time limit on purpose (the rest of these modules stays fast):
    "test_time_limits.py::test_dense_problem_within_the_limit",  # 20,000 buffers, ~5 M overlapping pairs: 9 x 0.6 s
    "test_progress.py::test_status_line_on_a_terminal",  # the CLI in a subprocess, 3 s of search
    "test_progress.py::test_quiet_on_a_pipe_and_under_ci",  # two CLI subprocesses, 1.5 s each
    "test_progress.py::test_forced_on_a_pipe",  # the CLI in a subprocess, 1.5 s
}

# Big models: in these modules, a test whose parameters name one of these light models (the onnx
# package's ImageNet networks of 5 M weights or more; squeezenet and shufflenet stay) quantizes it
# (the first use of each int8 twin makes it) and plans it with every planner. Measured on two cores
# over the module's tests: densenet121 19 s, resnet50 12 s, zfnet512 10 s, bvlc_alexnet 7 s,
# inception_v2 7 s, inception_v1 4 s (vgg19, 26 s, is left to bench/quantized.py).
SLOW_MODELS = {
    "test_quantized_models.py": {"densenet121", "resnet50", "zfnet512", "bvlc_alexnet",
                                 "inception_v1", "inception_v2"},
}


def _param_models(item: pytest.Item) -> set[str]:
    """The model names (file stems without ``light_``) among the item's parameters."""
    names: set[str] = set()
    todo = list(getattr(getattr(item, "callspec", None), "params", {}).values())
    while todo:
        v = todo.pop()
        if isinstance(v, (tuple, list)):
            todo.extend(v)
        elif isinstance(v, Path):
            names.add(v.stem.removeprefix("light_"))
        elif isinstance(v, str):
            names.add(Path(v).stem.removeprefix("light_"))
    return names


def slow_reason(item: pytest.Item) -> str | None:
    """Why the conftest rules mark `item` slow, or None."""
    module = item.path.name
    function = getattr(item, "originalname", item.name)
    if f"{module}::{function}" in FAST_TESTS:
        return None
    if module in SLOW_MODULES:
        return f"module {module}"
    if f"{module}::{function}" in SLOW_TESTS:
        return f"test {module}::{function}"
    fixtures = sorted(f for f in getattr(item, "fixturenames", ()) if f"{module}::{f}" in SLOW_FIXTURES)
    if fixtures:
        return f"fixture {module}::{fixtures[0]}"
    big = sorted(_param_models(item) & SLOW_MODELS.get(module, set()))
    if big:
        return f"big model {big[0]}"
    return None


def pytest_sessionstart(session: pytest.Session) -> None:
    """Build optimal's compiled core (arena_tool/plan/planners/native.py), the validator's sweep
    (validate.c) and the CSV reader (csvio.c) before any test: a first use runs the C compiler, which
    the guard below would charge to whichever fast test planned first. Without a compiler it stays
    unbuilt and the planners run the Python path."""
    from arena_tool.model import csvio
    from arena_tool.plan import validate
    from arena_tool.plan.planners import native
    native.load()
    validate._library()
    csvio._library()


@pytest.hookimpl(tryfirst=True)  # before -m deselects
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("slow") is None and slow_reason(item) is not None:
            item.add_marker(pytest.mark.slow)
    if os.environ.get("PYTEST_XDIST_WORKER"):
        _distribute(items)


# --- pytest-xdist: the README's `pytest -n auto` (pyproject's addopts: --dist loadgroup) -------------
#
# Each worker is a process with its own session: a module-scoped fixture (a firmware built once for
# a module's tests) would be built again by every worker that runs one of its tests. So the tests
# that use one go to one worker together (xdist_group: the module); every other test is sent on
# its own to whichever worker is free. Caches the workers share are written whole or under a lock
# (run_dir, the object cache, tflm_lib's folder lock), and no test depends on another's order.

def group_of(item: pytest.Item) -> str | None:
    """The xdist group of ``item``: its module's path when it uses a module- or class-scoped
    fixture (its own, a conftest's, or an indirect parameter's), else None."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return None
    for name in item.fixturenames:  # type: ignore[attr-defined]
        defs = info.name2fixturedefs.get(name)
        if defs and defs[-1].scope in ("module", "class", "package"):
            return item.path.relative_to(ROOT).as_posix()
    return None


def _distribute(items: list[pytest.Item]) -> None:
    """Mark each test's xdist group, then put the slow tests first (a stable sort, the same in
    every worker): xdist sends the groups first, largest first, then the single tests in this
    order, so the long builds start early and the short tests fill both workers at the end."""
    for item in items:
        group = group_of(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


# The guard: which subprocesses make a test slow. The executable's name, or python -m <module>.
_BUILD_EXE = re.compile(r"(gcc|cc|c\+\+|g\+\+|clang|clang\+\+|ld|arm-none-eabi-[\w+-]+|qemu-system-\w+|qemu-arm"
                        r"|scons|cmake|ninja|chromium|chromium-browser|google-chrome|headless_shell)(\.exe)?")
_BUILD_PY_MODULES = {"SCons", "pip", "venv"}
_PYTHON = re.compile(r"python[\d.]*(\.exe)?")


def build_tool(argv: object) -> str | None:
    """The build tool (compiler, linker, QEMU, SCons, chromium, pip) the command line `argv`
    starts, or None. A shell command is judged by its first word."""
    if isinstance(argv, (str, bytes, os.PathLike)):
        argv = [argv]
    try:
        args = [os.fsdecode(a) for a in argv]  # type: ignore[union-attr]
    except TypeError:
        return None
    if len(args) >= 3 and os.path.basename(args[0]) in ("sh", "bash", "dash") and args[1] == "-c":
        args = args[2].split()
    if len(args) == 1 and " " in args[0]:
        args = args[0].split()
    if not args:
        return None
    exe = os.path.basename(args[0])
    if _BUILD_EXE.fullmatch(exe):
        return exe
    if _PYTHON.fullmatch(exe) and "-m" in args[1:-1]:
        module = args[args.index("-m", 1) + 1]
        if module.split(".")[0] in _BUILD_PY_MODULES:
            return f"python -m {module}"
    return None


_guard: dict[str, Any] = {"item": None, "spawned": []}


def _audit(event: str, args: tuple[Any, ...]) -> None:
    """sys.addaudithook's hook: record the build tools the current test starts."""
    if _guard["item"] is None or event not in ("subprocess.Popen", "os.system", "os.posix_spawn"):
        return
    try:  # an exception here would be raised by the subprocess call itself
        tool = build_tool(args[0] if event == "os.system" else args[1])
    except Exception:
        return
    if tool is not None:
        _guard["spawned"].append(tool)


sys.addaudithook(_audit)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
    _guard["item"], _guard["spawned"] = item, []
    try:
        return (yield)
    finally:
        _guard["item"] = None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> pytest.TestReport:
    report: pytest.TestReport = yield
    spawned, _guard["spawned"] = _guard["spawned"], []
    if spawned and item.get_closest_marker("slow") is None:
        message = (f"{item.nodeid} ran {', '.join(sorted(set(spawned)))} (in its {call.when}) but is not "
                   "marked slow: add it to SLOW_TESTS (or its fixture to SLOW_FIXTURES) in tests/conftest.py")
        if report.passed:
            report.outcome = "failed"
            report.longrepr = message
        else:
            report.sections.append(("slow marker", message))
    return report
