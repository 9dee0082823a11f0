"""The multi-process study's report and figures, grouped per model, from synthetic records:
two models (an MLP and a transformer), 1 and 2 processes, the bug on filter_pmap, and one
method that cannot run the transformer (recorded with its reason, not crashed)."""

from __future__ import annotations

import pandas as pd
import pytest

from jaxperf import markdown
from jaxperf.multiprocess import analysis, figures, report, scaling
from jaxperf.multiprocess.run import StudyRun
from jaxperf.multiprocess.settings import MultiprocessSettings

MODELS = {"mlp_depth4": 32, "transformer_2layers": 80}
METHODS = ("pmap_params", "filter_pmap", "filter_pmap_fixed", "jit_shard_map")
STEPS = ("noop", "train", "train_local", "allreduce")
BUG = "TypeError: unhashable type: 'list'"
CANNOT = "ValueError: blocks in a list cannot be static"
# it/s per (model, method): the ratio over pmap_params is exact, so the tests can read it back
SPEED = {
    ("mlp_depth4", "pmap_params"): 100.0,
    ("mlp_depth4", "filter_pmap_fixed"): 50.0,
    ("mlp_depth4", "jit_shard_map"): 200.0,
    ("transformer_2layers", "pmap_params"): 40.0,
    ("transformer_2layers", "filter_pmap_fixed"): 12.0,
}


def _runs(model: str, processes: int, step: str, method: str) -> str:
    """'' if it runs, else its error: the bug across processes; jit_shard_map never runs the transformer."""
    if method == "filter_pmap" and processes > 1:
        return BUG
    if method == "jit_shard_map" and model == "transformer_2layers":
        return CANNOT
    return ""


def _synthetic_run() -> StudyRun:
    checks, timings, repro = [], [], []
    for processes in (1, 2):  # processes-major, as the launches write them
        for pid in range(processes):
            tag = {"processes": processes, "process_id": pid}
            for case, ok in (("eqx.filter_pmap", processes == 1), ("jax.pmap(out_axes=[0])", processes == 1)):
                repro.append({**tag, "case": case, "ok": ok, "error_type": "", "error": "", "traceback": ""})
            for model, leaves in MODELS.items():
                for step in STEPS:
                    for method in METHODS:
                        if step in ("train_local", "allreduce") and method not in (
                            "pmap_params",
                            "jit_shard_map",
                        ):
                            continue
                        error = _runs(model, processes, step, method)
                        checked = step != "train_local"
                        checks.append(
                            {
                                **tag,
                                "model": model,
                                "step": step,
                                "method": method,
                                "leaves": leaves,
                                "ran": not error,
                                "error": error,
                                "digest": None if error else f"{model}-{step}",
                                "max_abs_diff_vs_one_device": None if error else 0.0,
                                "matches_one_device": None if error or not checked else True,
                            }
                        )
                        if error:
                            continue
                        it_per_s = SPEED.get((model, method), 80.0)
                        for repeat in range(2):
                            timings.append(
                                {
                                    **tag,
                                    "model": model,
                                    "step": step,
                                    "method": method,
                                    "leaves": leaves,
                                    "repeat": repeat,
                                    "it_per_s": it_per_s,
                                    "loop_it_per_s": it_per_s,
                                    "wall_s_per_call": 1 / it_per_s,
                                    "cpu_s_per_call": 0.5 / it_per_s,
                                    "dispatch_s_per_call": 0.25 / it_per_s,
                                }
                            )
    launches = pd.DataFrame(
        [
            {"processes": n, "local_devices": 8 // n, "global_devices": 8, "worker_seconds_max": 1.0}
            for n in (1, 2)
        ]
    )
    return StudyRun(
        checks=pd.DataFrame(checks),
        timings=pd.DataFrame(timings),
        repro=pd.DataFrame(repro),
        launches=launches,
        phases=pd.DataFrame(),
        versions={"jax": "x"},
    )


@pytest.fixture(scope="module")
def built():
    settings = MultiprocessSettings(
        processes=2, scaling_processes=(1, 2), mlp_depth=4, transformer_layers=2, methods=METHODS
    )
    run = _synthetic_run()
    correctness = analysis.correctness(run.checks)
    table = analysis.medians(run.timings)
    ratios = analysis.ratios(run.timings)
    split = analysis.collective_split(table)
    pod = scaling.predict_pod(scaling.fit_host_cost(table, settings.global_devices), settings.pod_hosts)
    summary, text = report.build(run, settings, correctness, table, ratios, split, pod)
    return run, summary, text


def _section(text: str, heading: str) -> str:
    """A folded block's body (``<summary>heading</summary>`` to its ``</details>``), or the text
    from a ``###`` heading to the next one."""
    if heading.startswith("#"):
        start = text.index(heading + "\n")
        rest = text[start + len(heading) :]
        end = rest.find("\n### ")
        return rest if end < 0 else rest[:end]
    start = text.index(f"<summary>{heading}</summary>")
    return text[start : text.index("</details>", start)]


def test_every_frame_is_grouped_per_model_mlp_first(built):
    _, summary, _ = built
    for key in ("correctness", "timings", "ratios_over_pmap_params", "collective_split", "pod_model"):
        models = [row["model"] for row in summary[key]]
        assert models == sorted(models, key=list(MODELS).index), key  # one block per model, MLP first
        assert set(models) == set(MODELS), key


def test_summary_json_by_model_has_each_models_verdicts_and_headline_ratios(built):
    _, summary, _ = built
    assert summary["models"] == list(MODELS)
    mlp, tf = summary["by_model"]["mlp_depth4"], summary["by_model"]["transformer_2layers"]
    assert (mlp["kind"], mlp["size"], mlp["leaves"]) == ("mlp", 4, 32)
    assert (tf["kind"], tf["size"], tf["leaves"]) == ("transformer", 2, 80)
    assert tf["ratios_over_pmap_params_at_headline"]["noop"]["filter_pmap_fixed"] == pytest.approx(0.3)
    assert mlp["ratios_over_pmap_params_at_headline"]["train"]["filter_pmap_fixed"] == pytest.approx(0.5)
    assert "jit_shard_map" not in tf["ratios_over_pmap_params_at_headline"]["noop"]
    assert mlp["all_but_the_broken_method_correct"] and mlp["could_not_run"] == []
    assert not tf["all_but_the_broken_method_correct"]
    assert {(c["method"], c["processes"], c["step"]) for c in tf["could_not_run"]} == {
        ("jit_shard_map", n, s) for n in (1, 2) for s in STEPS
    }
    assert all(c["error"] == CANNOT for c in tf["could_not_run"])
    # the bug is not a "could not run": it has its own verdict
    assert summary["filter_pmap_fails_across_processes"] and tf["filter_pmap_fails_across_processes"]
    assert not summary["all_but_the_broken_method_correct"]


def test_summary_md_has_a_subsection_per_model_with_its_own_numbers(built):
    _, _, text = built
    speed = _section(text, "Speed, 2 processes (median over every process and repeat)")
    mlp = _section(speed, "### MLP, depth 4 (`mlp_depth4`, 32 array leaves per call; 5 repeats)")
    tf = _section(
        speed, "### transformer, 2 layers (`transformer_2layers`, 80 array leaves per call; 2 repeats)"
    )
    assert "0.30" in tf and "0.30" not in mlp  # filter_pmap_fixed over pmap_params on each model
    assert "0.50" in mlp and "0.50" not in tf
    assert "jax.jit(jax.shard\\_map)" in mlp and "jax.jit(jax.shard\\_map)" not in tf
    correct = _section(text, "Correctness, 2 processes")
    assert correct.count("### ") == 2
    tf_correct = _section(
        correct, "### transformer, 2 layers (`transformer_2layers`, 80 array leaves per call; 2 repeats)"
    )
    assert "blocks in a list cannot be static" in tf_correct
    glance = _section(
        text, "At a glance: it/s over pmap_params, 2 processes (median over every process and repeat)"
    )
    header = next(line for line in glance.splitlines() if line.startswith("| method"))
    assert "transformer\\_2layers noop" in header and "mlp\\_depth4 train" in header
    shard_map_row = next(line for line in glance.splitlines() if line.startswith("| jax.jit(jax.shard"))
    assert shard_map_row.split(" | ")[1:] == ["2.00", "2.00", "fails", "fails |"]


def test_summary_md_says_which_method_could_not_run_which_model_and_why(built):
    _, _, text = built
    bullet = next(line for line in text.splitlines() if "Could not run a model" in line)
    assert bullet.startswith("- **Correct across processes:**") and "other than the bug: **8**" in bullet
    answer = text[: text.index("<details>")]
    assert answer.count("\n- ") <= 5 and markdown.visible_lines(text) <= markdown.MAX_VISIBLE_LINES
    assert (
        "patched `filter_pmap`: mlp_depth4 0.50× [0.50, 0.50], slower" in answer
    )  # each model, read as a verdict
    assert "`jit_shard_map` on `transformer_2layers` (train step, 2 processes): " + CANNOT in text
    assert "`filter_pmap` on" not in text  # the bug is reported as the bug


def test_scaling_figures_have_a_row_of_panels_per_model_and_a_column_per_step():
    run = _synthetic_run()
    fig, data = figures.plot_scaling(run.timings)
    titles = [ax.get_title(loc="left") for ax in fig.axes if ax.axison]
    assert titles == [f"{m}, {s} step" for m in MODELS for s in ("noop", "train")]
    assert set(data["model"]) == set(MODELS) and set(data["measure"]) == {"it_per_s"}
    fig, data = figures.plot_scaling(run.timings, "cpu_ms_per_call")
    assert set(data["measure"]) == {"cpu_ms_per_call"}
    fig, data = figures.plot_scaling_more(run.timings)
    assert len([ax for ax in fig.axes if ax.axison]) == 2 * len(MODELS) * 2  # (model, measure) x step
    split = analysis.collective_split(analysis.medians(run.timings))
    fig, long = figures.plot_split(split)
    assert [ax.get_title(loc="left").replace("\n", " ") for ax in fig.axes if ax.axison] == [
        "mlp_depth4: jax.pmap on params",
        "mlp_depth4: jax.jit(jax.shard_map) (global Mesh)",
        "transformer_2layers: jax.pmap on params",
    ]
    assert set(long["model"]) == set(MODELS)
