"""TensorFlow Lite models end to end: the CLI's commands on a .tflite, and the MLPerf Tiny models
and TFLM's examples planned by every planner and proven in the real TFLite Micro interpreter (they
skip where ../shared/models/mlperf_tiny is absent). The pieces have their own modules:
model/test_tflite_model.py, emit/test_tflite_write.py, run/test_tflm.py.
"""

from __future__ import annotations

import pytest

from arena_tool.model import liveness, tflite_model
from arena_tool.plan import plancheck, planfile, planners, planning
from arena_tool.run import tflm
from arena_tool.core.problem import ModelOptions
from arena_tool.core.schema import check_json
from conftest import require_shared
from shared_paths import TFLM_EXAMPLES
from tflite_models import KWS_HYBRID, MLPERF, chain_model, run, save

MLPERF_MODELS = sorted(p.name for p in MLPERF.glob("*.tflite") if p.name != KWS_HYBRID) if MLPERF.is_dir() else []
# TFLM's own GreedyMemoryPlanner head, as its RecordingMicroAllocator reports it, and the lower bound.
VWW = {"visual_wake_words__vww_96_int8.tflite": (73_728, 55_296),
       "visual_wake_words__vww_96_float.tflite": (294_912, 221_184)}
# TFLM's examples: TFLM's own head (reference kernels; its LSTM kernels request scratch buffers).
EXAMPLE_HEADS = {"trained_lstm_int8.tflite": 1_536, "dtln_noise_suppression.tflite": 1_424,
                 "hello_world_int8.tflite": None, "micro_speech_quantized.tflite": None}
EXAMPLES = sorted(p.name for p in TFLM_EXAMPLES.glob("*.tflite")) if TFLM_EXAMPLES.is_dir() else []
# Every shared .tflite TFLM runs: (folder, name) as a test id "name".
SHARED_TFLITE = [(MLPERF, n) for n in MLPERF_MODELS] + [(TFLM_EXAMPLES, n) for n in EXAMPLES]
# Without the shared folder one case stands for them, and require_shared skips it (fails it in CI).
SHARED_CASES = SHARED_TFLITE or [(MLPERF, "absent")]


# --- the commands on a .tflite ------------------------------------------------------------

def test_compare_check_and_export_take_tflite(tmp_path, capsys):
    path = save(tmp_path, "chain.tflite", chain_model())
    code, out, err = run(capsys, "compare", path, "--planners", "greedy_size,optimal")
    assert code == 0 and "3 ops, 4 buffers" in out, err
    code, out, err = run(capsys, "export", path, "-o", tmp_path / "p.csv")
    assert code == 0 and "4 buffers" in out, err
    assert run(capsys, "plan", path, "-o", tmp_path / "p.json")[0] == 0
    code, out, err = run(capsys, "check", path, tmp_path / "p.json")
    assert code == 0 and "no overlaps" in out, err


# --- MLPerf Tiny in the real TFLM ----------------------------------------------------------

@pytest.fixture(scope="module")
def tflm_heads():
    """TFLM's own head per shared model (its GreedyMemoryPlanner), measured once."""
    heads = {}
    for folder, name in SHARED_TFLITE:
        data = (folder / name).read_bytes()
        ins, _ = tflm.io_specs(tflite_model.parse(data, name))
        heads[name] = tflm.run_tflm(data, name, tflm.random_inputs(ins, 1, 0)).allocation
    return heads


shared_ids = [n for _, n in SHARED_CASES]


@pytest.mark.parametrize("folder,name", SHARED_CASES, ids=shared_ids)
def test_mlperf_every_planner_and_greedy_is_tflm(folder, name, tflm_heads):
    """Every planner, its scratch buffers settled where TFLM puts them, passes check; greedy_size on
    arena's buffers (kernel scratch included) is TFLM's own head exactly; optimal is the lower bound."""
    path = str(require_shared(folder / name))
    mp = liveness.model_problem(path, ModelOptions())
    problem = mp.problem()
    params = planners.Params(time_limit=2.0)
    for planner in planning.planner_names():
        plan = planning.tflm_settled(mp, problem, planning.run_planner(planner, problem, params))
        built = planfile.build(mp, plan, problem)
        check_json(built.to_json(), "plan", "plan.json")
        assert plancheck.check(built, mp, "plan.json") == [], planner
        if planner == "greedy_size":  # TFLM's GreedyMemoryPlanner on arena's ranges: TFLM's own head, exactly
            assert plan.arena_size == tflm_heads[name].head
        if planner == "optimal":
            assert plan.arena_size == plan.lower_bound and plan.optimal
    if name in VWW:
        assert tflm_heads[name].head == VWW[name][0]
    if EXAMPLE_HEADS.get(name):
        assert tflm_heads[name].head == EXAMPLE_HEADS[name]


@pytest.mark.parametrize("folder,name", SHARED_CASES, ids=shared_ids)
def test_mlperf_planned_model_verifies_in_tflm(folder, name, tmp_path, capsys, tflm_heads):
    """The head TFLM uses with arena's plan is the plan (its kernel scratch buffers included), never above
    TFLM's own; the floors: VWW int8 55,296 B, mnist_lstm <= 1,536 B, dtln <= 1,424 B."""
    src = require_shared(folder / name)
    out = tmp_path / "planned.tflite"
    code, text, err = run(capsys, "plan", src, "-o", out)
    assert code == 0, err
    plan = planfile.load(str(tmp_path / "planned.plan.json"))
    assert plan.optimal and plan.arena_size == plan.lower_bound
    report = tflm.verify(str(src), str(out), runs=3)
    assert report.failures == [], report.failures
    assert report.tflm_planned.head == plan.arena_size == report.arena_head
    assert report.tflm_model.head == tflm_heads[name].head
    assert report.tflm_planned.head <= report.tflm_model.head
    if name in VWW:
        assert report.tflm_planned.head <= VWW[name][1]
    if EXAMPLE_HEADS.get(name):
        assert report.tflm_planned.head <= EXAMPLE_HEADS[name]
    if tflm.litert_available() is None:
        assert "planned model = model" in report.litert
