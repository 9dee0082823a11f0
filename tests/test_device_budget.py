"""Every study's GPU preset fits a device command (issue 62): its planned seconds, from per-case costs
the study records (``StudySettings.planned_seconds``), against the command limit tools/device/run.sh
keeps. Nothing is timed here; the cost tables are held to the committed records they come from."""

from __future__ import annotations

import json
import re
import sys

import pandas as pd
import pytest

from jaxperf.paths import PROJECT_ROOT
from jaxperf_study.jax20909 import settings as loops
from jaxperf_study.jax20909 import vocab

sys.path.insert(0, str(PROJECT_ROOT / "tools"))

from runall import notebooks  # noqa: E402

#: a GPU pass of notebook 02 and the loops tool on the seed kernel: its share of a 15-minute window
LOOPS_SHARE_S = 300
#: run.sh's set-up before run_all starts on the GPU: the carried wheels (the TPU's, its own index
#: included, took 28-30 s: results/tpu/logs)
SETUP_S = 30


def _run_sh_limit() -> float:
    """The seconds run.sh leaves its notebooks and --exec commands: JAXPERF_DEVICE_TOTAL_S's default,
    less what it keeps for packing, less the set-up."""
    text = (PROJECT_ROOT / "tools/device/run.sh").read_text()
    total = int(re.search(r'total="\$\{JAXPERF_DEVICE_TOTAL_S:-(\d+)\}"', text)[1])
    packing = int(re.search(r"left=\$\(\( total - \(\$\(date \+%s\) - start\) - (\d+) \)\)", text)[1])
    return total - packing - SETUP_S


def _study_classes() -> list[tuple[str, type]]:
    out = []
    for nb in notebooks.discover(PROJECT_ROOT / "notebooks"):
        ns: dict = {}
        for line in nb.settings_imports:
            exec(line, ns)
        out.append((nb.name, eval(nb.settings_class, ns)))
    return out


@pytest.mark.parametrize(("name", "cls"), _study_classes(), ids=[n for n, _ in _study_classes()])
def test_every_studys_gpu_pass_plans_its_seconds_within_the_command_limit(name, cls):
    settings = cls.on_device("gpu")
    planned = settings.planned_seconds("gpu")
    assert "gpu" in cls.DEVICE_PRESETS, f"{name}: no GPU preset (a GPU would run its CPU defaults)"
    assert planned, f"{name}: {cls.__name__}.planned_seconds('gpu') states no seconds"
    assert all(v > 0 for v in planned.values()), planned
    assert sum(planned.values()) <= _run_sh_limit(), (name, planned)


def test_the_limit_is_run_shs():
    assert _run_sh_limit() == 540 - 15 - SETUP_S


def test_notebook_02_and_loops_fit_their_share_and_plan_no_case_past_a_budget():
    settings = loops.LoopSettings.on_device("gpu")
    planned = settings.planned_seconds("gpu")
    assert sum(planned.values()) <= LOOPS_SHARE_S, planned
    quoted, rest = (v for k, v in planned.items() if k.startswith(("quoted", "rest")))
    # each measuring process's planned work fits its budget: no case planned is "not reached"
    assert quoted / settings.processes - loops.START_S <= settings.quoted_budget_s
    assert rest - loops.START_S <= settings.rest_budget_s
    # the docstring's arithmetic is the planner's
    assert f"= {round(sum(planned.values()))} s" in loops.__doc__


def test_his_cases_come_first_in_his_form_at_his_six_T():
    settings = loops.LoopSettings.on_device("gpu")
    plan = settings.gpu_plan()
    first = [(v, T) for part, v, T in plan if part == "harness"]
    assert plan[: len(first)] == [("harness", v, T) for v, T in first]
    assert sorted({T for _, T in first}) == [row[0] for row in vocab.SEED_ROWS]
    assert {v for v, _ in first} == {"python", "fori u=1"}
    assert (settings.carry_dtype, settings.resolved_dtype("gpu"), settings.batch_at(65536)) == (
        "input",
        "float16",
        512,
    )
    swept = {v for part, v, _ in plan if part == "sweep"}
    assert {"hoisted u=1", "scalar_carry u=1", "hand_unrolled u=4", "hand_unrolled u=8"} <= swept
    assert {v for v in swept if loops.triton_refuses(v)} == {"fori u=2", "fori u=4", "fori u=8", "fori u=16"}


def _records(name: str) -> pd.DataFrame:
    frames = [pd.read_csv(PROJECT_ROOT / f"results/cpu/loops/{n}.csv") for n in name.split(",")]
    return pd.concat(frames, ignore_index=True)


@pytest.mark.parametrize("compiler", ["triton", "mosaic_gpu"])
def test_the_compile_costs_bound_every_committed_compile(compiler):
    target = {"triton": "triton sm_90", "mosaic_gpu": "mosaic_gpu sm_90a"}[compiler]
    points = _records("compiles,family_points")
    points = points[(points.kernel == "seed") & (points.target == target) & (points.status == "ok")]
    checked = 0
    for row in points.itertuples():
        if row.T in loops.COMPILE_S[compiler]:
            bound = loops.COMPILE_S[compiler][row.T][0 if row.form == "python" else 1]
            assert row.compile_ms / 1e3 <= bound, (compiler, row.form, row.T, row.compile_ms)
            checked += 1
    assert checked >= 10
    if compiler == "mosaic_gpu":  # XLA's compile around a kernel: the port's whole compile at T=256 bounds it
        assert points[points["T"] == 256].compile_ms.min() / 1e3 <= loops.XLA_S


def test_the_ms_per_call_are_the_reporters():
    assert loops.GPU_MS[65536] == (71.313, 172.925) and set(loops.GPU_MS) == {r[0] for r in vocab.SEED_ROWS}


def test_notebook_10s_gpu_pass_is_its_tpu_run_less_half_its_cap():
    from jaxperf_study.dispatch.your_step_settings import YourStepSettings

    gpu, tpu = YourStepSettings.on_device("gpu"), YourStepSettings.on_device("tpu")
    assert gpu.max_seconds == tpu.max_seconds / 2
    ran = json.loads((PROJECT_ROOT / "results/tpu/your_step/summary.json").read_text())
    planned = gpu.planned_seconds("gpu")
    assert planned["the paths' compiles"] >= ran["compile_seconds"]  # the TPU's, as the GPU's are not known
    assert planned["the diagnosis (max_seconds)"] == gpu.max_seconds


def test_the_loops_command_planned_is_the_one_its_docstring_gives():
    from jaxperf.loops import cli

    assert ",".join(loops.GPU_LOOPS_FORMS) == cli.DEFAULT_FORMS  # the command's own default forms
    T, budget = ",".join(map(str, loops.GPU_LOOPS_TS)), int(loops.GPU_LOOPS_BUDGET_S)
    assert f"factories:seed --T {T} --budget\n{budget}``" in loops.__doc__


#: a GPU window (15 minutes of device time) less the machine's start (1-2 minutes: /work/shared/GPU.md)
WINDOW_LESS_START_S = 15 * 60 - 120


def test_one_gpu_pass_of_the_whole_study_fits_one_window_in_two_commands():
    """Issue 62: a pass is two commands (02 and the loops tool with 11; 01 with 10), each within
    run.sh's limit, together within a window less the machine's start. The aim of 11 minutes is not
    met: with every path in the seed's loop for at least 1 s, notebook 01's three cases alone plan
    about 190 s (their sum is checked against the window, and the shortfall is said in the docs)."""
    plans = {
        name: sum(cls.on_device("gpu").planned_seconds("gpu").values()) for name, cls in _study_classes()
    }
    by_number = {name[:2]: seconds for name, seconds in plans.items()}
    commands = [by_number["02"] + by_number["11"], by_number["01"] + by_number["10"]]
    assert max(commands) <= _run_sh_limit(), commands
    assert sum(commands) + 2 * SETUP_S <= WINDOW_LESS_START_S, (commands, plans)


def test_notebook_01s_compile_costs_bound_every_committed_process():
    """DispatchSettings.COMPILE_S holds, per backend and kind of cell, at least what any committed
    record's process spent compiling it (the GPU's are the CPU's until a GPU has run)."""
    from jaxperf_study.dispatch.settings import DispatchSettings

    checked = 0
    for backend in ("cpu", "tpu"):
        rows = pd.read_csv(PROJECT_ROOT / f"results/{backend}/dispatch/timings.csv")
        cells = rows.drop_duplicates([c for c in ("run", "process", "model", "step", "family") if c in rows])
        for row in cells.itertuples():
            bound = DispatchSettings.COMPILE_S[backend][(row.step, row.family, row.kind)]
            assert row.compile_s <= bound, (backend, row.model, row.step, row.family, row.compile_s)
            checked += 1
    assert checked >= 50


def test_a_full_cpu_run_of_each_study_plans_within_run_alls_cell_timeout():
    """A newcomer's `./run_all.sh` on this 2-core CPU: the longest cell of a study (notebook 01's
    sweep, every path in the seed's loop) must end well inside the per-cell timeout, with room for
    a busy machine (a factor of 2)."""
    from runall.options import parse

    timeout = parse([]).timeout
    for name, cls in _study_classes():
        planned = cls(backend="cpu").planned_seconds("cpu")
        if planned is not None:
            assert 2 * sum(planned.values()) <= timeout, (name, sum(planned.values()), timeout)
