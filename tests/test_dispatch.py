"""The dispatch study (notebook 01): its settings, its cells (the seed's step wrapped as a
reader wraps it, diagnosed by the same engine), and the notebook's outputs."""

import json

import pytest
from notebook_support import assert_clean_source, run_notebook

from jaxperf_study.dispatch import ModelSpec, count_leaves
from jaxperf_study.dispatch.accounting import measure, per_round
from jaxperf_study.dispatch.cost import Cell, run_cell
from jaxperf_study.dispatch.settings import DispatchSettings

NB = "01_filter_pmap_dispatch"


def test_leaf_counts_grow_with_depth():
    counts = [count_leaves(*ModelSpec("mlp", d).build()) for d in (1, 2, 4)]
    assert counts == [13, 19, 31]  # (depth+1) Linear layers x (w, b) x (param, mu, nu) + count


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"mlp_depths": [4, 0]}, "mlp_depths"),
        ({"mlp_depths": [4, 8]}, "mlp_depths=.*or three or more"),
        ({"loop_seconds": -1.0}, "loop_seconds=-1.0"),
        ({"loop_calls": 0}, "loop_calls=0"),
        ({"precision": 0}, "precision=0"),
        ({"precision": 5}, "precision=5"),
        ({"seconds_per_cell": -1}, "seconds_per_cell=-1"),
        ({"min_rounds": 1}, "min_rounds=1"),
        ({"quick": "yes"}, "quick='yes'"),
        ({"accounting_rounds": 2}, "accounting_rounds=2"),
        ({"train_depths": ["deep"]}, "train_depths"),
    ],
)
def test_bad_parameters_are_clear_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        DispatchSettings.from_parameters(kwargs)


def test_the_cells_cover_the_per_leaf_sweep_both_wrappers_on_every_model_family_and_train_steps():
    """The drop-in's claim is tested where users are: every model family under both wrappers, the
    no-op and the train step (issue 54: the jit drop-in lost on transformers, which no case held)."""
    cells = DispatchSettings().cells
    keys = {(c.step, c.spec.name, c.donated, c.family) for c in cells}
    for model in (
        "mlp_depth1",
        "mlp_depth64",
        "transformer_1layers",
        "transformer_4layers",
        "cnn_4layers",
        "cnn_32layers",
    ):
        assert {("noop", model, False, f) for f in ("pmap", "jit")} <= keys
    for model in ("mlp_depth4_x4", "transformer_1layers_x4", "cnn_4layers_x4"):  # as users train: donated
        assert {("train", model, True, f) for f in ("pmap", "jit")} <= keys
    for kind in ("mlp", "transformer", "cnn"):  # a line per model family: three sizes of each, or more
        assert len({c.spec.size for c in cells if c.spec.kind == kind and c.step == "noop"}) >= 3
    assert ("train", "mlp_depth1_width512", False, "jit") in keys  # does each path wait for its call?
    assert ("noop", "mlp_depth16", False, "jit") not in keys  # the jit line's two ends suffice
    assert len(cells) == len(keys) == 24
    more = {(c.step, c.spec.name, c.donated, c.family) for c in DispatchSettings(donated_depths=(64,)).cells}
    assert ("noop", "mlp_depth64", True, "pmap") in more and ("train", "mlp_depth64", True, "jit") in more


def test_the_tpu_preset_splits_into_parts_that_together_hold_every_case_once():
    """Each part is one device command; together they reach every case, none twice (issue 53)."""
    whole = DispatchSettings.from_parameters({"backend": "tpu"})
    every = [(c.step, c.spec.name, c.donated, c.family) for c in whole.cells]
    parts = {
        p: DispatchSettings.from_parameters({"backend": "tpu", "part": p}) for p in DispatchSettings.PARTS
    }
    key = lambda s: sorted((c.step, c.spec.name, c.donated, c.family) for c in s.cells)  # noqa: E731
    split = [k for p in ("noop", "models", "train") for k in key(parts[p])]
    assert sorted(split) == sorted(every) and len(set(every)) == len(every)
    # part train in two commands: its halves hold its cases, none twice (at 2b842c2's and 822d930's
    # sizes its 6 cells took 433 s of sweep, over the 390 s deadline)
    for part in ("models", "train"):  # each in two commands: its halves hold its cases, none twice
        halves = key(parts[f"{part}_pmap"]) + key(parts[f"{part}_jit"])
        assert sorted(halves) == key(parts[part])
    assert {c.spec.kind for c in parts["train_jit"].cells} == {"mlp", "transformer", "cnn"}
    quick = {"backend": "tpu", "quick": True}  # the dry run of each command: every half holds a case
    assert all(
        DispatchSettings.from_parameters(quick | {"part": f"train_{f}"}).cells for f in ("pmap", "jit")
    )
    # each command's part plans within what tools/device/run.sh leaves a command (495 s), in the
    # seed's loop; the whole part models does not (hence its halves)
    commands = ("noop", "models_pmap", "models_jit", "train_pmap", "train_jit")
    planned = {p: sum(parts[p].planned_seconds("tpu").values()) for p in commands}
    assert max(planned.values()) <= 495, planned
    assert sum(parts["models"].planned_seconds("tpu").values()) > 495
    for kind in ("mlp", "transformer", "cnn"):  # a line per model family: three sizes on the TPU too
        assert len({c.spec.size for c in whole.cells if c.spec.kind == kind and c.step == "noop"}) >= 3
    noop = [(c.step, c.spec.name, c.family) for c in parts["noop"].cells]
    assert noop[:3] == [("noop", f"mlp_depth{d}", "pmap") for d in (64, 1, 132)]
    assert [c.labels["leaves"] for c in parts["noop"].cells[:3]] == [392, 14, 800]
    models = {(c.spec.name, c.family): c.labels["leaves"] for c in parts["models"].cells}
    assert models[("transformer_12layers", "jit")] > 400  # where a reader measured the jit drop-in lose
    assert {k[0].split("_")[0] for k in models} == {"transformer", "cnn"}
    train = {(c.spec.name, c.family) for c in parts["train"].cells}
    assert {
        (f"{m}_x128", f)
        for m in ("mlp_depth16", "transformer_4layers", "cnn_4layers")
        for f in ("pmap", "jit")
    } <= train
    assert (
        parts["noop"].accounting_specs
        and not parts["models"].accounting_specs
        and not parts["train"].accounting_specs
    )
    assert whole.deadline_s > 0 and whole.heavy_width == 0
    with pytest.raises(ValueError, match="part='all'.*'noop'"):
        DispatchSettings.from_parameters({"backend": "tpu", "part": "all"})
    with pytest.raises(ValueError, match="part='train_jit'.*eqx.filter_jit"):
        no_train = dict(train_depths=(), train_layers=(), train_cnn_layers=())
        DispatchSettings.from_parameters({"backend": "tpu", "part": "train_jit", **no_train})
    table = DispatchSettings.presets()
    assert "tpu" in table.columns and set(DispatchSettings.TPU) <= set(table["parameter"])
    assert DispatchSettings.from_parameters({"backend": "cpu"}) == DispatchSettings(backend="cpu")


def test_a_budget_keeps_what_the_later_processes_can_repeat_and_they_run_exactly_that(tmp_path):
    import time

    from jaxperf_study.dispatch.cost import Budget

    cells = DispatchSettings.from_parameters({"backend": "tpu"}).cells[:6]
    budget = Budget(time.time() + 100, time.time(), 3, str(tmp_path / "plan.json"))
    spent: dict[int, tuple[float, float]] = {}
    ran = []
    for i in budget.cells(cells, spent):  # the first process: each cell "costs" 30 s, 25 of it compiling
        ran.append(i)
        spent[i] = (30.0, 25.0)
    assert ran and len(ran) < len(cells)  # a rerun costs 6 s a cell: 2 x 6 s x n + 30 s must fit 100 s
    later = [list(budget.cells(cells, {})) for _ in range(2)]
    assert later[0] == later[1] == ran
    gone = Budget(time.time() - 1, time.time() - 10, 3, str(tmp_path / "none.json"))
    assert list(gone.cells(cells, {})) == []  # past its deadline: nothing starts


def test_an_accumulated_train_step_is_the_single_one_averaged_over_its_slices():
    import equinox as eqx
    import jax
    import numpy as np

    from jaxperf_study.dispatch.steps import make_train_step

    spec = ModelSpec("mlp", 2, microbatches=4)
    model, opt_state = spec.build()
    x = spec.batch(1)
    assert x.shape[0] == 4 * spec.batch_per_device and spec.name == "mlp_depth2_x4"
    loss, new, _ = eqx.filter_jit(make_train_step(None, 4))(model, x, opt_state)
    parts = [eqx.filter_jit(make_train_step(None))(model, xb, opt_state)[0] for xb in np.split(x, 4)]
    assert np.allclose(loss, np.mean(parts), rtol=1e-5)
    one, _, _ = eqx.filter_jit(make_train_step(None))(model, x, opt_state)
    assert np.allclose(loss, one, rtol=1e-5)  # equal slices: the mean of means is the mean
    assert jax.tree.structure(eqx.filter(new, eqx.is_array)) == jax.tree.structure(
        eqx.filter(model, eqx.is_array)
    )


def test_quick_preset_replaces_the_sizes_and_is_visible():
    settings = DispatchSettings.from_parameters({"quick": True, "mlp_depths": [2, 8, 16]})
    assert settings.mlp_depths == DispatchSettings.QUICK["mlp_depths"]
    assert settings.as_dict()["mlp_depths"] == list(DispatchSettings.QUICK["mlp_depths"])  # what ran
    assert set(DispatchSettings.presets()["parameter"]) == set(DispatchSettings.QUICK) | set(
        DispatchSettings.TPU
    ) | set(DispatchSettings.GPU)


@pytest.mark.parametrize(("family", "donated"), [("pmap", False), ("pmap", True), ("jit", True)])
def test_a_cell_is_the_seeds_step_diagnosed_with_every_path_proved(family, donated):
    timings, notes = run_cell(
        Cell("train", ModelSpec("mlp", 1), donated, family),
        precision=0.5,
        max_seconds=2,
        min_rounds=2,
        loop_calls=4,
        loop_seconds=0.02,
    )
    sharded = {"filter_jit_sharded", "jit_sharded", "shard_map_jit"}
    expected = {
        "pmap": {"filter_pmap", "pmap_params", "cached_filter_pmap", "packed_pmap", "filter_pmap_patched"},
        "jit": {"filter_jit", "jit_params", "cached_filter_jit", "packed_jit", "filter_jit_patched"},
    }[family] | {f"filter_{family}_recipe"}  # Equinox's low-overhead recipe, proved like the others
    if family == "pmap" and donated:
        # eqx.filter_pmap(donate="all") donates the batch too: a loop needs a fresh one per call (the
        # cell's loader), and the sharded paths are not offered with a loader (each says so)
        assert set(notes) == {"eqx.filter_jit, sharded", "jax.jit, sharded", "jax.jit of jax.shard_map"}
        assert all("not offered" in why and "loader" in why for why in notes.values())
    else:
        assert notes == {}  # every path offered, and each computed what filter_pmap / filter_jit does
        expected |= sharded if family == "pmap" else set()
    assert set(timings["method"]) == expected
    assert set(timings["leaves"]) == {14} and set(timings["donated"]) == {donated}


def test_the_accounting_adds_its_parts_in_one_clock():
    from jaxperf_study.dispatch import stages
    from jaxperf_study.dispatch.accounting import INNER, PARTS

    rows, profile = measure(ModelSpec("mlp", 1), rounds=3)
    assert not profile.empty and rows["cpu_ms"].notna().all()
    whole = rows[rows["stage"] == "whole call"]
    assert rows.groupby("call")["round"].nunique().to_dict() == {c: 3 for c in stages.CALLS}
    rounds = per_round(rows).set_index("round")
    assert len(rounds) == 3
    # each part is the staged call's own stages, summed from the raw rows in the same round
    staged = rows[rows["call"] == stages.CALLS[0]]
    params = whole[whole["call"] == stages.CALLS[2]].set_index("round")["cpu_ms"]
    for part, (names, _) in PARTS.items():
        raw = staged[staged["stage"].isin(names)].groupby("round")["cpu_ms"].sum()
        if part == INNER:
            raw = raw - params
        assert (raw - rounds[part]).abs().max() < 1e-9, part
    slow = whole[whole["call"] == stages.CALLS[1]].set_index("round")["cpu_ms"]
    assert ((slow - params) - rounds["gap"]).abs().max() < 1e-9
    assert (rounds["gap"] - rounds[list(PARTS)].sum(axis=1) - rounds["unexplained"]).abs().max() < 1e-9


def test_source_notebook_is_clean():
    assert_clean_source(NB)


@pytest.mark.notebook
def test_quick_notebook_run_writes_its_outputs(tmp_path):
    run_notebook(NB, tmp_path, quick=True)
    study_dir = tmp_path / "results" / "cpu" / "dispatch"
    for name in ("timings", "not_timed", "accounting_rounds", "accounting_cprofile"):
        assert (study_dir / f"{name}.csv").is_file()
        sidecar = json.loads((study_dir / f"{name}.json").read_text())
        assert sidecar["provenance"]["device_count"] == 8
        assert sidecar["provenance"]["packages"]["equinox"] == "0.13.8"
    figures = tmp_path / "figures" / "cpu"
    for fig in ("per_leaf", "filter_pmap_ratio", "accounting", "fix_ranges"):
        for ext in ("png", "svg", "csv"):
            assert (figures / f"dispatch_{fig}.{ext}").stat().st_size > 0
    summary = json.loads((study_dir / "summary.json").read_text())
    assert summary["provenance"]["parameters"]["quick"] is True
    assert summary["goals"] == {}  # a smoke run judges nothing
    assert {"filter_pmap", "filter_jit", "cached_filter_pmap"} <= set(summary["per_leaf"])
    assert summary["per_leaf"]["filter_pmap"]["b_us_per_leaf"] > 0
    assert summary["processes"] == "2" and summary["per_leaf"]["filter_pmap"]["processes"] == 2  # quick: 2
    assert {w["method"] for w in summary["waits"]} >= {"filter_jit", "cached_filter_jit"}
    text = (study_dir / "summary.md").read_text()
    assert "equinox#192" in text and "Smoke run" in text and "jaxlib" in text


def test_a_recorded_diagnosis_rebuilds_from_its_records_as_a_redraw_reads_them():
    """Notebook 10 measures through study.measure: a redraw-only run reads the timings and the
    diagnosis's fields back from CSV and must say what the measuring run said."""
    import io

    import pandas as pd

    from jaxperf_study.dispatch import your_step

    timings, fields = your_step.measure("jaxperf_study.dispatch.examples:seed_noop", {"depth": 1}, 0.5, 3.0)
    read = [pd.read_csv(io.StringIO(df.to_csv(index=False))) for df in (timings, fields)]
    assert your_step.rebuild(*read).markdown() == your_step.rebuild(timings, fields).markdown()
