"""jaxperf.diagnosis.diagnose on steps written the way Equinox's, Flax's and JAX's docs write them:
every cheaper path is proved to compute what the reader's step computes before it is
timed; what differs is reported, never timed; bad input is a clear error that writes
nothing. No timing is asserted: only what was measured and how it is stated."""

from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys
from pathlib import Path as FilePath

import equinox as eqx
import jax
import jax.numpy as jnp
import pandas as pd
import pytest

from jaxperf.diagnosis import Diagnosis, carry, diagnose, factory
from jaxperf.diagnosis import verdicts as v
from jaxperf.diagnosis.paths import Path
from jaxperf.timing import STOPS
from jaxperf_study.dispatch import examples
from jaxperf_study.dispatch.eqx_patch.path import PATHS as PATCHED

FAST = dict(precision=0.5, max_seconds=20, min_rounds=2, calls_per_round=2, loop_calls=4, loop_seconds=0.02)


@pytest.fixture(scope="module")
def seed():
    made = examples.seed_noop(depth=2)
    # the patched Equinox is the study's path, added as the study's cells add it
    return made, diagnose(made["step"], *made["args"], extra_paths=PATCHED, **FAST)


def test_the_seeds_step_gets_every_equinox_pmap_path_proved_and_timed(seed):
    made, result = seed
    assert result.kind == "eqx.filter_pmap"
    assert result.carry == {0: 1, 2: 2}  # model and optimiser state passed along, the batch not
    assert result.problems == {}
    timed = set(result.timings["variant"])
    assert timed == {
        "eqx.filter_pmap (yours)",
        "jax.pmap on the partitioned state",
        "jaxperf.cached_filter_pmap",
        "jaxperf.packed_pmap",
        "eqx.filter_pmap on flat leaves",  # Equinox's low-overhead recipe (docs/tricks.md)
        "eqx.filter_pmap, patched",  # extra_paths: Equinox with the proposed change (results/equinox_patch)
    }
    # the reader's own arrays are never consumed or changed
    assert all(not x.is_deleted() for x in jax.tree.leaves(eqx.filter(made["args"], eqx.is_array)))


def test_the_markdown_is_paste_ready(seed):
    _, result = seed
    text = result.markdown()
    assert len(text.splitlines()) <= 40
    assert "nan" not in text.lower()
    assert "eqx.filter_pmap step, 20 array leaves in its arguments" in text
    assert "cpu: 8 x cpu" in text and "jax 0.12" in text
    assert text.count("\n| ") >= 4  # a row per timed path
    assert text.count("\n- ") >= 2  # the verdict and the change, as bullets (issue-sized summary)
    summary = json.loads(result.to_json())
    assert summary["array_leaves_per_call"] == 20 and summary["stopped_by"] in (
        "precision",
        "time cap",
        "repeat cap",
    )


def test_the_figure_draws_every_timed_path(seed):
    from jaxperf_study.dispatch.figures import plot_diagnosis

    _, result = seed
    fig, data = plot_diagnosis(result)
    assert list(data["path"])[0] == "eqx.filter_pmap (yours)"
    assert set(data["path"]) == set(result.timings["variant"]) and len(data) == 6
    assert (data["host_ms"] > 0).all()


@pytest.mark.parametrize(
    "name,offered",
    [
        (
            "equinox_train",
            {
                "jax.jit on the partitioned state",
                "eqx.filter_jit on flat leaves",
                "jaxperf.cached_filter_jit",
                "jaxperf.packed_jit",
            },
        ),
        ("jax_train", {"jaxperf.packed_jit"}),
        (
            "nnx_train",
            {"nnx.jit tree mode", "nnx.cached_partial", "nnx.jit_partial", "jax.jit on nnx.split state"},
        ),
    ],
)
def test_steps_from_the_libraries_docs_get_their_paths(name, offered):
    made = getattr(examples, name)(depth=2, width=8, batch=8)
    result = diagnose(
        made["step"], *made["args"], loader=made.get("loader"), carry=made.get("carry", "auto"), **FAST
    )
    assert result.problems == {}
    assert offered <= set(result.timings["variant"])
    assert result.loader and result.batch_at == 2


@pytest.mark.parametrize(
    "factory,name",
    [
        ("equinox_train", "eqx.filter_jit on flat leaves"),
        ("filter_pmap_train", "eqx.filter_pmap on flat leaves"),
    ],
)
def test_equinoxs_recipe_steps_as_the_readers_step_does(factory, name):
    from jaxperf.diagnosis.kinds import identify
    from jaxperf.diagnosis.paths import recipe

    made = getattr(examples, factory)(depth=2, width=8)
    loader = made.get("loader")
    batch_at, state_at = (2, (0, 1)) if loader else (1, (0, 2))  # (model, opt, batch) or (model, x, opt)
    path = recipe(identify(made["step"]), made["args"], dict(zip(state_at, (1, 2))), batch_at)
    assert path.name == name
    assert all(isinstance(path.args[i], list) for i in state_at)  # the state as flat leaves
    mine = list(carry.fresh(made["args"]))
    for _ in range(3):  # the reader's loop: three calls, each one's new state fed to the next
        mine[batch_at] = next(loader) if loader else mine[batch_at]
        out = made["step"](*mine)
        mine[state_at[0]], mine[state_at[1]] = out[1], out[2]
        path.call(mine[batch_at])
    theirs_out, theirs_args = path.reader_view()
    assert carry.first_difference(carry.host(out), carry.host(theirs_out)) is None
    assert carry.first_difference(carry.host(tuple(mine)), carry.host(theirs_args)) is None


def test_equinoxs_recipe_is_offered_for_equinox_steps_with_the_readers_step_rewritten():
    made = examples.filter_pmap_train(depth=1, width=8)
    result = diagnose(made["step"], *made["args"], **FAST)
    assert result.problems == {} and "eqx.filter_pmap on flat leaves" in set(result.timings["variant"])
    text = result.snippets["eqx.filter_pmap on flat leaves"]
    assert "flat_model, treedef_model = jax.tree_util.tree_flatten(model)" in text
    assert (
        "@eqx.filter_pmap(axis_name=...)" in text
        and "def train_step_flat(flat_model, x, flat_opt_state):" in text
    )
    assert "return out0, jax.tree_util.tree_leaves(model), jax.tree_util.tree_leaves(opt_state)" in text
    assert result.methods["eqx.filter_pmap on flat leaves"] == "filter_pmap_recipe"
    jax_step = diagnose(*(lambda m: (m["step"], *m["args"]))(examples.jax_train(depth=1, width=8)), **FAST)
    assert "not jax.jit" in jax_step.skipped["Equinox's recipe"]


def test_a_plain_jax_pmap_step_gets_the_packed_path_with_its_axis():
    from jaxperf.diagnosis.kinds import pmap_axes

    place = jax.pmap(lambda a: a)
    w, x = place(jnp.ones((jax.device_count(), 3))), place(jnp.ones((jax.device_count(), 4)))
    named = jax.pmap(lambda w, x: (w - jax.lax.pmean(x.sum(), "i"), w), axis_name="i")
    assert pmap_axes(named, (w, x)) == ("i", True)
    unnamed = jax.pmap(lambda w, x: (w - x.sum(), w))
    assert pmap_axes(unnamed, (w, x)) == (None, True)
    assert pmap_axes(jax.pmap(lambda w, s: w * s, in_axes=(0, None)), (w, 2.0))[1] is False
    for step in (named, unnamed):
        result = diagnose(step, w, x, carry={0: 0}, **FAST)
        assert result.problems == {} and result.failed == {}
        assert "jaxperf.packed_pmap" in set(result.timings["variant"])
    made = importlib.import_module("corpus.steps.jax_pmap").make()  # JAX's pmap tutorial, donated
    tutorial = diagnose(made["step"], *made["args"], **FAST)
    assert (
        "jaxperf.packed_pmap" in set(tutorial.timings["variant"])
        and "donated" in tutorial.paths["jaxperf.packed_pmap"]
    )


def test_a_path_that_computes_something_else_is_reported_and_not_timed():
    made = examples.equinox_train(depth=1, width=8, batch=8)

    def wrong(step, args, carry_map, batch_at):
        def off_by_one(*a):
            loss, model, opt = step.call(*a)
            return loss + 1, model, opt

        return Path(
            "off by one",
            "adds 1 to the loss",
            off_by_one,
            carry.fresh(args),
            carry_map,
            lambda o, a: (o, a),
            batch_at,
        )

    result = diagnose(
        made["step"], *made["args"], loader=made["loader"], extra_paths={"wrong": wrong}, **FAST
    )
    assert result.problems["off by one"] == "output[0]: largest difference 1"
    assert "off by one" not in set(result.timings["variant"])
    assert "results differ from yours: off by one" in result.markdown()


def test_a_path_that_raises_is_listed_apart_from_unequal_ones():
    made = examples.equinox_train(depth=1, width=8, batch=8)

    def broken(step, args, carry_map, batch_at):
        def fails(*a):
            raise RuntimeError("boom")

        return Path("broken", "raises", fails, carry.fresh(args), carry_map, lambda o, a: (o, a), batch_at)

    result = diagnose(
        made["step"], *made["args"], loader=made["loader"], extra_paths={"broken": broken}, **FAST
    )
    assert result.failed == {"broken": "raised RuntimeError: boom"} and "broken" not in result.problems
    assert "Not timed, raised: broken (raised RuntimeError: boom)." in result.markdown()


def test_a_donating_step_donates_on_every_path_and_spares_the_readers_arrays():
    made = examples.equinox_train(depth=1, width=8, batch=8)
    donating = eqx.filter_jit(made["step"].__wrapped__, donate="all-except-first")
    result = diagnose(donating, *made["args"], loader=made["loader"], **FAST)
    assert result.donate == "all-except-first" and result.problems == {}
    assert all(not x.is_deleted() for x in jax.tree.leaves(eqx.filter(made["args"], eqx.is_array)))


# ------------------------------------------------------------------ the carry and equality


def test_the_carry_is_read_off_one_call():
    model, x, opt = {"w": jnp.ones(3)}, jnp.ones(2), {"m": jnp.zeros(3)}
    assert carry.infer((model, x, opt), (0.0, model, opt)) == {0: 1, 2: 2}
    assert carry.infer((model, x), jnp.float32(0)) == {}  # an in-place step returns a loss
    with pytest.raises(ValueError, match="carry=.*argument 0 vs output 0 differ"):
        carry.check({0: 0}, (model, x), (x, model))
    with pytest.raises(ValueError, match="carry=.*argument indices"):
        carry.check({5: 0}, (model, x), (model,))


def test_the_carry_follows_what_the_step_returns_not_shapes(tmp_path, monkeypatch):
    (tmp_path / "ae_steps.py").write_text(
        "def step(model, opt_state, x):\n"
        "    recon = x * 2\n"
        "    return 0.0, recon, model, opt_state\n"
        "def twins(a, b, x):\n"
        "    return a + x, b + x, a - x\n"
        "def lr_step(params, x, lr):\n"
        "    return params - lr * x, (params * x).mean()\n"
        "def scaled(params, scale, x):\n"
        "    return params * scale, (params * x).sum(), scale * 2.0\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    import ae_steps

    x, m, o = jnp.ones(3), jnp.zeros(3), jnp.zeros(3)
    # the reconstruction has the batch's shape; the source says it is not the batch
    assert carry.infer((m, o, x), ae_steps.step(m, o, x), fn=ae_steps.step) == {0: 2, 1: 3}
    with pytest.raises(ValueError, match=r"carry='auto' is not allowed: expected an unambiguous carry"):
        carry.infer((m, o), ae_steps.twins(m, o, x), fn=ae_steps.twins)
    assert carry.check({"model": 2}, (m, o, x), (0.0, x, m, o), fn=ae_steps.step) == {0: 2}
    assert carry.infer((m, jnp.ones(2)), m + 1) == {0: carry.WHOLE}  # params = step(params, x)
    # a learning rate the loop passes in is not fed the loss, a 0-d output of the same kind
    lr = jnp.float32(0.1)
    assert carry.infer((m, x, lr), ae_steps.lr_step(m, x, lr), fn=ae_steps.lr_step) == {0: 0}
    assert carry.infer((m, lr, x), ae_steps.scaled(m, lr, x), fn=ae_steps.scaled) == {0: 0, 1: 2}


def test_first_difference_compares_typed_keys_none_and_scalars():
    key = jax.random.key(0)
    same = {"key": jax.random.key(0), "none": None, "n": 3, "s": "a"}
    assert carry.first_difference({"key": key, "none": None, "n": 3, "s": "a"}, same) is None
    assert carry.first_difference({"key": key}, {"key": jax.random.key(1)}).startswith("['key']:")
    assert carry.first_difference({"none": None}, {"none": 1}) is not None
    assert carry.first_difference(carry.host({"key": key}), carry.host({"key": key})) is None


def test_first_difference_names_the_leaf_and_the_size():
    a = {"w": jnp.array([1.0, 2.0]), "n": 3}
    assert carry.first_difference(a, {"w": jnp.array([1.0, 2.0]), "n": 3}) is None
    assert carry.first_difference(a, {"w": jnp.array([1.0, 2.5]), "n": 3}) == "['w']: largest difference 0.5"
    assert carry.first_difference(a, {"w": jnp.array([1.0, 2.0]), "n": 4}) == "['n']: 3 vs 4"
    assert "structure differs" in carry.first_difference(a, {"w": jnp.array([1.0, 2.0])})
    assert carry.first_difference(jnp.ones(2, jnp.float16), jnp.ones(2, jnp.float16) * 1.001) is None


@pytest.mark.parametrize(
    "quartiles,precision,verdict",
    [
        ((1.2, 1.3, 1.4), 0.05, v.FASTER),
        ((0.6, 0.7, 0.8), 0.05, v.SLOWER),
        ((0.98, 1.0, 1.02), 0.05, v.TIE),
        ((0.8, 1.0, 1.3), 0.05, v.UNRESOLVED),  # holds 1, +-25%: never called a tie
    ],
)
def test_verdicts(quartiles, precision, verdict):
    assert v.judge(*quartiles, precision) == verdict


# ------------------------------------------------------------------ bad input


def test_a_plain_function_is_not_a_compiled_step():
    with pytest.raises(
        ValueError, match=r"step=.* is not allowed: expected a compiled step, one of: eqx.filter_jit"
    ):
        diagnose(lambda x: x, jnp.ones(2))


def test_a_step_that_raises_is_named():
    with pytest.raises(ValueError, match="step raised TypeError"):
        diagnose(jax.jit(lambda x: x + "a"), jnp.ones(2))


@pytest.mark.parametrize(
    "loader,match",
    [
        (lambda: None, "loader='a loader that returned None'"),
        (iter([]), "ran out after 0 batches"),
        (3, "loader=3"),
    ],
)
def test_a_bad_loader_is_named(loader, match):
    step = jax.jit(lambda w, x: (jnp.sum(x), w + 1))
    with pytest.raises(ValueError, match=match):
        diagnose(step, jnp.ones(2), jnp.ones(3), loader=loader, carry={0: 1}, **FAST)


@pytest.mark.parametrize(
    "spec,match",
    [
        ("no_colon", "step_factory='no_colon' is not allowed"),
        ("no_such_module_xyz:f", "importing 'no_such_module_xyz' raised ModuleNotFoundError"),
        ("jaxperf_study.dispatch.examples:nope", "has no callable 'nope'"),
        ("jaxperf.errors:bad_value", "step_factory arguments"),
    ],
)
def test_a_bad_factory_is_named(spec, match):
    with pytest.raises(ValueError, match=match):
        factory.build(spec)


def test_an_error_inside_the_factory_is_its_own_not_bad_arguments(tmp_path, monkeypatch):
    (tmp_path / "raising_steps.py").write_text(
        "def make():\n    return len(3)\n\ndef broken():\n    raise KeyError('weights')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(factory.FactoryError) as err:
        factory.build("raising_steps:make")
    assert str(err.value).startswith("step_factory='raising_steps:make': make() raised TypeError")
    assert "arguments" not in str(err.value) and "len(3)" in err.value.details
    with pytest.raises(factory.FactoryError, match=r"broken\(\) raised KeyError: 'weights'"):
        factory.build("raising_steps:broken")


def test_a_factory_that_returns_the_wrong_thing_is_named(tmp_path, monkeypatch):
    (tmp_path / "reader_steps.py").write_text("def make():\n    return 42\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ValueError, match=r"step_factory\(\)='int' is not allowed: expected a dict"):
        factory.build("reader_steps:make")


def _cli(tmp_path, *args):
    """(the finished `python -m jaxperf diagnose ...` run in ``tmp_path``, its one-line errors)."""
    run = subprocess.run(
        [sys.executable, "-m", "jaxperf", "diagnose", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    return run, [line for line in run.stderr.splitlines() if line.startswith("jaxperf diagnose:")]


def test_the_cli_exits_2_with_one_line_and_the_traceback_in_json(tmp_path):
    (tmp_path / "raising_steps.py").write_text("def make():\n    raise RuntimeError('no data')\n")
    for spec in ("no_such_module_xyz:make", "raising_steps:make"):
        out, md = tmp_path / "d.json", tmp_path / "d.md"
        run, lines = _cli(tmp_path, spec, "--json", str(out), "--markdown", str(md))
        assert run.returncode == 2 and len(lines) == 1 and spec in lines[0], run.stderr
        assert "Traceback" not in run.stderr and not md.exists()
        written = json.loads(out.read_text())
        assert written["error"] in lines[0] and "Traceback" in written["traceback"]


def test_the_cli_refuses_a_missing_output_folder_before_diagnosing_and_a_cap_of_0(tmp_path):
    (tmp_path / "tiny_steps.py").write_text(
        "import jax, jax.numpy as jnp\n"
        "def make():\n"
        "    return jax.jit(lambda w, x: (w - 0.1 * x, (w * x).sum())), (jnp.ones(3), jnp.ones(3))\n"
    )
    missing = ["--json", str(tmp_path / "no_such_folder" / "d.json"), "--max-seconds", "5"]
    for extra, named in ((missing, "output folder="), (["--max-seconds", "0"], "max_seconds=0.0")):
        run, lines = _cli(tmp_path, "tiny_steps:make", *extra)
        assert run.returncode == 2 and len(lines) == 1 and named in lines[0], run.stderr
        assert run.stdout == ""  # no diagnosis printed, as if it had been written


def test_an_unknown_command_is_named():
    run = subprocess.run(
        [sys.executable, "-m", "jaxperf", "nope"], capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 2 and "command='nope' is not allowed" in run.stderr


def test_a_step_that_consumes_its_batch_needs_a_loader():
    # the batch x is donated, and its buffer reused by the first output (same shape)
    step = jax.jit(lambda w, x: (x * 2, w + 1), donate_argnums=(0, 1))
    with pytest.raises(
        ValueError, match="loader=None is not allowed: expected a loader: the step donates argument 1"
    ):
        diagnose(step, jnp.ones(3), jnp.ones(4), carry={0: 1}, **FAST)


# ------------------------------------------------------------------ the corpus (tests/corpus/steps)

CORPUS = sorted(p.stem for p in (FilePath(__file__).parent / "corpus" / "steps").glob("[!_]*.py"))
QUICK = dict(precision=0.5, max_seconds=30, min_rounds=2, calls_per_round=2, loop_calls=4, loop_seconds=0.02)


@pytest.mark.parametrize("name", CORPUS)
def test_the_corpus_gets_the_verdict_known_by_construction(name):
    module = importlib.import_module(f"corpus.steps.{name}")
    made = module.make()
    quick = dict(QUICK, min_rounds=7, calls_per_round=None) if module.EXPECT == "no change" else QUICK
    result = diagnose(
        made["step"], *made["args"], loader=made.get("loader"), carry=made.get("carry", "auto"), **quick
    )
    timed = set(result.timings["variant"]) if result.timed else set()
    assert not result.timed or result.rounds()["stopped_by"] in STOPS
    assert not set(result.problems) & timed  # a path that differs is never timed
    text = result.markdown()
    assert "nan" not in text.lower()
    if module.EXPECT == "retraces":
        assert result.retrace and result.retrace["name"] == "step_count" and not timed
        assert "compiles again on every call" in result.headline()[0] and "step_count" in text
        return
    assert result.retrace is None
    if module.EXPECT == "differs":
        assert result.problems and timed == {result.reader}
        return
    assert result.problems == {} and result.failed == {}, (result.problems, result.failed)
    checked = {k for k, why in result.skipped.items() if why.startswith("not checked")}
    assert len(timed) >= 2 or not result.paths, (result.skipped, checked)
    if module.EXPECT == "no change":
        assert result.best() is None and "device-bound" in result.headline()[0]


def test_the_corpus_reads_carry_donation_and_output_as_written():
    def run(name):
        made = importlib.import_module(f"corpus.steps.{name}").make()
        return diagnose(
            made["step"], *made["args"], loader=made.get("loader"), carry=made.get("carry", "auto"), **QUICK
        )

    autoencoder = run("eqx_autoencoder")
    assert autoencoder.batch_at == 2 and autoencoder.carry == {0: 2, 1: 3}  # not the reconstruction
    # Equinox's own low-overhead recipe (docs/tricks.md), proved equal and timed
    assert "eqx.filter_jit on flat leaves" in set(autoencoder.timings["variant"])
    nnx_donate = run("nnx_donate")
    assert nnx_donate.donate == "donate_argnums=(0, 1)"
    assert "donate_argnums=(0, 1)" in nnx_donate.snippets["nnx.jit tree mode"]
    jax_names = run("jax_donate_argnames")
    assert jax_names.donate == "donate_argnums=(0, 1)" and "donated" in jax_names.paths["jaxperf.packed_jit"]
    printing = run("eqx_debug_print")
    assert printing.printed["lines"] >= 3 and printing.printed["first"][0].startswith("loss ")
    assert printing.markdown().count("loss ") == 1  # counted, one line quoted, never printed into it


def test_the_cli_names_a_retracing_step(tmp_path):
    out = tmp_path / "d.json"
    run = subprocess.run(
        [sys.executable, "-m", "jaxperf", "diagnose", "corpus.steps.eqx_retrace:make", "--quick"]
        + ["--json", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=FilePath(__file__).parent,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert "compiles again on every call" in run.stdout and "argument 4 (step_count)" in run.stdout
    assert json.loads(out.read_text())["retrace"]["name"] == "step_count"


def test_every_path_has_a_snippet_of_the_readers_step_keeping_its_donation():
    from jaxperf.diagnosis.kinds import Step
    from jaxperf.diagnosis.paths import SNIPPETS, snippet

    def make_step(model, opt_state, batch): ...

    step = Step("jax.jit", make_step, make_step, donate=(0, 1))
    args = (jnp.ones(2), jnp.ones(2), jnp.ones(2))
    for name in SNIPPETS:
        text = snippet(name, step, ["model", "opt_state", "batch"], args, {0: 1, 1: 2}, nodes=2)
        assert "make_step" in text and "{" not in text.replace("{fn}", ""), (name, text)
        # a path that changes the loop says how the loop calls it (a decorator swap does not)
        assert "# loop:" in text or "instead of" in text, (name, text)
    assert "donate_argnums=(0, 1)" in snippet(
        "jax.jit on the partitioned state", step, [], args, {0: 1, 1: 2}
    )
    assert "donate=True" in snippet("jaxperf.packed_jit", step, [], args, {0: 1, 1: 2})


def test_the_packed_snippet_keeps_a_python_flag_static_so_it_runs():
    import jaxperf
    from jaxperf.diagnosis.kinds import identify
    from jaxperf.diagnosis.paths import snippet

    def sgd_step(params, x, use_relu):
        h = jax.nn.relu(x * params) if use_relu else jnp.tanh(x * params)
        return params - 0.1 * h, h.sum()

    args = (jnp.ones(3), jnp.ones(3), True)  # jax.jit(..., static_argnums=2), as the reader wrote it
    text = snippet("jaxperf.packed_jit", identify(jax.jit(sgd_step, static_argnums=2)), [], args, {0: 0})
    assert "jaxperf.packed_jit(sgd_step_packed, donate=False, static_argnums=(2,))" in text, text
    # an argument with nothing in it ({}, optax's EmptyState) stays a pytree: {} is not hashable
    empty = snippet("jaxperf.packed_jit", identify(jax.jit(sgd_step)), [], (args[0], {}, True), {0: 0})
    assert "donate=False, static_argnums=(2,))" in empty, empty

    def sgd_step_packed(tree, x, use_relu):  # the snippet's function, its (...) filled in
        (params,) = tree
        out = sgd_step(params, x, use_relu)
        return out[1:], out[:1]

    packed = jaxperf.packed_jit(sgd_step_packed, donate=False, static_argnums=(2,))
    _, state = packed(jaxperf.PackedState.pack((args[0],)), args[1], True)
    assert jnp.allclose(state.unpack()[0], sgd_step(*args)[0])


@pytest.mark.parametrize(
    "text,carry_value",
    [("auto", "auto"), ("none", {}), ("0=1,2=2", {0: 1, 2: 2}), ("model=1", {"model": 1})],
)
def test_the_cli_names_the_carry(text, carry_value):
    from jaxperf.diagnosis.cli import parser

    assert parser().parse_args(["x:y", "--carry", text]).carry == carry_value


def test_a_batch_that_fills_several_arguments_and_a_scalar_in_the_state_are_read():
    made = importlib.import_module("corpus.steps.jax_grad_accum").make()
    result = diagnose(made["step"], *made["args"], loader=made["loader"], **FAST)
    assert result.batch_at == 2 and result.carry == {0: 0, 1: 1}  # (xs, ys) fill arguments 2 and 3
    made = importlib.import_module("corpus.steps.linen_train_state").make()
    result = diagnose(made["step"], *made["args"], loader=made["loader"], **FAST)
    assert result.carry == {0: 0}  # TrainState.step: the int 0, then an int32 array
    with pytest.raises(ValueError, match=r"batch_at=None is not allowed: .*0 arguments look like its batch"):
        diagnose(
            jax.jit(lambda w, x: (w + x, w)),
            jnp.ones(3),
            jnp.ones(3),
            loader=lambda: (jnp.ones(2),) * 2,
            **FAST,
        )


class _Measured(Diagnosis):
    """A diagnosis whose per-call times and loop ratios are given, as a noisy run measured them."""

    def __init__(self, per_call, ratios):
        super().__init__(
            kind="jax.jit",
            reader="jax.jit (yours)",
            leaves=2,
            paths={"jaxperf.packed_jit": "packed"},
            skipped={},
            problems={},
            carry={},
            batch_at=None,
            donate="none",
            loader=False,
            timings=pd.DataFrame({"variant": ["jax.jit (yours)"]}),
            seconds=1.0,
            precision=0.5,
            environment={"backend": "cpu"},
        )
        self._per_call, self._ratios = pd.DataFrame(per_call), pd.DataFrame(ratios)

    def per_call(self):
        return self._per_call

    def ratios(self, value=None):
        return self._ratios

    verdict = "runs ahead"

    def waiting(self):
        return pd.DataFrame({"variant": ["jax.jit (yours)"], "verdict": [self.verdict]})


# what CI measured on the device-bound corpus step (0.66 ms of host CPU against 17.4 ms of
# device per call): a packed path 1.10x [1.04, ...] faster, which no dispatch change can give
DEVICE_BOUND = {
    "variant": ["jax.jit (yours)", "jaxperf.packed_jit"],
    "host_ms": [0.661, 0.677],
    "wait_ms": [18.4, 17.4],
    "loop_ms": [19.6, 17.9],
}


def _faster(median, q25, q75):
    """packed_jit's loop ratio to the reader's, measured faster on its whole spread."""
    return {
        "variant": ["jaxperf.packed_jit"],
        "median": [median],
        "q25": [q25],
        "q75": [q75],
        "verdict": [v.FASTER],
    }


def test_a_device_bound_loop_gets_no_change_from_a_gain_host_work_cannot_explain():
    d = _Measured(DEVICE_BOUND, _faster(1.0995, 1.043, 1.15))
    # removing all 0.661 ms of host work saves at most 0.661 ms of 18.06: 1.038x, not 19.6/17.4
    assert d.dispatch_limit() == pytest.approx((17.4 + 0.661) / 17.4)
    assert d.best() is None
    assert d.beyond_dispatch() == {"jaxperf.packed_jit": pytest.approx(1.0995)}
    assert any("not a dispatch gain" in line for line in d.headline())


def test_a_gain_within_what_host_work_explains_is_recommended():
    host_bound = dict(DEVICE_BOUND, host_ms=[6.0, 2.0], loop_ms=[24.0, 19.0])
    d = _Measured(host_bound, _faster(1.2, 1.1, 1.3))
    assert d.dispatch_limit() == pytest.approx(23.4 / 17.4)
    assert d.best()["variant"] == "jaxperf.packed_jit" and d.beyond_dispatch() == {}


# what the TPU v5e measured on the equinox_wide example (results/tpu/cli/equinox_wide.json): the
# reader's eqx.filter_jit waits for each call, 1.61 ms of host CPU per call in a 5.65 ms loop; the drop-in
# runs ahead at 3.84 ms per call, the device's time, 1.47x
WAITING = {
    "variant": ["jax.jit (yours)", "jaxperf.packed_jit"],
    "host_ms": [1.614, 0.537],
    "wait_ms": [4.317, 4.666],
    "loop_ms": [5.652, 3.837],
}


def test_a_loop_whose_calls_wait_can_gain_all_of_its_loop_above_the_device():
    d = _Measured(WAITING, _faster(1.473, 1.46, 1.48))
    d.verdict = "waits for each call"
    # its 5.65 ms are 1.61 ms of host CPU, 3.84 of device and 0.2 ms of neither: running ahead removes all
    assert d.dispatch_limit() == pytest.approx(5.652 / 3.837)
    assert d.beyond_dispatch() == {} and d.best()["variant"] == "jaxperf.packed_jit"
    assert not any("not a dispatch gain" in line for line in d.headline())
    d.verdict = "runs ahead"  # the same times from a loop that ran ahead: the 0.2 ms are no dispatch's
    assert d.dispatch_limit() == pytest.approx((3.837 + 1.614) / 3.837) and d.best() is None


def test_the_headline_never_prints_a_device_time_of_zero_or_below():
    from jaxperf.diagnosis.verdicts import bound

    assert bound({"host_ms": 2.0}, -0.003).endswith("against less than 0.01 ms of device time")
    assert "against about 1.5 ms of device time" in bound({"host_ms": 2.0}, 1.5)


def _tpu_like(paths: dict[str, tuple[float, float]], rounds: int = 15) -> pd.DataFrame:
    """:func:`jaxperf.timing.compare`'s rows for ``{path: (host ms, device ms)}`` as a TPU host
    times them: a thread CPU clock of 10 ms steps (so the host's time is the wall time while
    enqueuing), 0.3 ms to collect the outputs; a negative device ms: the path waits for it."""
    import numpy as np

    rng, rows = np.random.default_rng(0), []
    for repeat in range(rounds):
        for name, (host, device) in paths.items():
            waits, device = device < 0, abs(device)
            blocked, enqueue = (host + device + 0.3) * rng.normal(1, 0.03), host + device * waits
            loop = max(host, device) if not waits else host + device
            rows.append(
                dict(variant=name, repeat=repeat, calls=10, stopped_by="precision", rel_iqr=0.03)
                | dict(wall_s_per_call=blocked / 1e3, dispatch_s_per_call=enqueue * rng.normal(1, 0.03) / 1e3)
                | dict(cpu_s_per_call=0.01 * rng.integers(0, 2), enqueue_cpu_s_per_call=0.0, cpu_tick_s=0.01)
                | dict(it_per_s=1e3 / blocked, loop_it_per_s=1e3 / (loop * rng.normal(1, 0.03)))
            )
    return pd.DataFrame(rows)


def _diagnosis(timings: pd.DataFrame, reader: str) -> Diagnosis:
    paths = {name: "" for name in timings["variant"].unique() if name != reader}
    empty: dict = {}
    return Diagnosis(
        kind=reader.split(" (")[0], reader=reader, leaves=57, paths=paths, skipped=empty, problems=empty,
        carry={0: 1}, batch_at=None, donate="none", loader=False, timings=timings, seconds=30.0,
        precision=0.05, environment={"backend": "tpu"},
    )  # fmt: skip


def test_a_device_bound_step_on_a_tpu_judges_run_ahead_and_the_wait_is_not_host_time():
    """equinox_wide's shape on a TPU v5e: eqx.filter_jit waits out 6 ms of device time per call;
    jax.jit does not. The host's time there is the wall time while enqueuing, so the reader's
    includes its wait: moved to the wait, where it belongs, before the loop is called bound."""
    d = _diagnosis(
        _tpu_like(
            {
                "eqx.filter_jit (yours)": (1.0, -6.0),
                "jax.jit on the partitioned state": (0.4, 6.0),
                "jaxperf.cached_filter_jit": (0.5, 6.0),
            }
        ),
        "eqx.filter_jit (yours)",
    )
    got = dict(zip(d.waiting()["variant"], d.waiting()["verdict"]))
    assert got["eqx.filter_jit (yours)"] == "waits for each call"
    assert got["jax.jit on the partitioned state"] == got["jaxperf.cached_filter_jit"] == "runs ahead"
    mine = d.per_call().set_index("variant").loc["eqx.filter_jit (yours)"]
    assert 0.8 < mine["host_ms"] < 1.2 and 5.5 < d.device_ms() < 6.5  # not 7 ms of host, 0.3 of device
    text = "\n".join(d.headline())
    assert "device-bound" in d.headline()[0] and "ms of host time per call" in d.headline()[0]
    assert "Each call waits for its result" in text and "not judged" not in text
    assert "Change: " in text and "your calls wait for their results" in text
    assert "host CPU" not in d.markdown() and "host ms per call" in d.markdown()
    assert "the wall time while enqueuing" in d.markdown()


def test_a_host_bound_step_is_not_judged_and_the_line_names_the_threshold_and_what_was_measured():
    d = _diagnosis(
        _tpu_like({"eqx.filter_jit (yours)": (3.0, -0.3), "jax.jit on the partitioned state": (2.0, 0.3)}),
        "eqx.filter_jit (yours)",
    )
    assert set(d.waiting()["verdict"]) == {"not judged"}
    line = next(line for line in d.headline() if "not judged" in line)
    ref = d.waiting().set_index("variant").loc["jax.jit on the partitioned state"]
    assert "too short to tell" in line and "needs jax.jit on the partitioned state" in line
    assert "to enqueue in under 0.5 of its blocked time in 3 rounds of 4" in line
    assert f"it measured {ref['ratio_q75']:.2f}" in line and ref["ratio_q75"] > 0.5
    assert "host-bound" in d.headline()[0]


def test_without_jax_jit_timed_a_drop_in_that_runs_ahead_is_the_reference_never_the_waiting_reader():
    """The CPU run of equinox_wide: the time cap left jax.jit on the partitioned state unchecked;
    jaxperf's drop-in (which never waits) is then what eqx.filter_jit is told from."""
    rows = {"eqx.filter_jit (yours)": (1.0, -6.0), "jaxperf.cached_filter_jit": (0.5, 6.0)}
    d = _diagnosis(_tpu_like(rows), "eqx.filter_jit (yours)")
    d.paths["jax.jit on the partitioned state"] = ""  # offered, not timed
    assert d.reference() == "jaxperf.cached_filter_jit"
    assert d.waiting().set_index("variant").loc["eqx.filter_jit (yours)", "verdict"] == "waits for each call"
    alone = _diagnosis(_tpu_like({"eqx.filter_jit (yours)": (1.0, -6.0)}), "eqx.filter_jit (yours)")
    assert alone.reference() == "" and set(alone.waiting()["verdict"]) == {"not judged"}
    assert any("no path known to run ahead" in line for line in alone.headline())


def test_a_host_bound_path_beside_a_device_bound_reference_is_not_called_waiting():
    """eqx.filter_pmap with more host than device time: its enqueue is most of its call, yet its
    calls return before the device is done: not judged, and said why."""
    d = _diagnosis(
        _tpu_like({"eqx.filter_pmap (yours)": (4.7, 2.1), "jax.pmap on the partitioned state": (1.1, 2.1)}),
        "eqx.filter_pmap (yours)",
    )
    assert d.waiting().set_index("variant").loc["eqx.filter_pmap (yours)", "verdict"] == "not judged"
    assert any("your path's host time exceeds the device's" in line for line in d.headline())
    assert "host-bound" in d.headline()[0]


# ---------------------------------------------------- on a TPU (issue 49 item 5): caps, retraces


def test_paths_left_unchecked_by_the_cap_are_named_never_called_slower(seed):
    """A path the time cap left unchecked is not timed, and the verdict never says no path is
    faster without naming it and the flag that gives it time."""
    import dataclasses

    from jaxperf.diagnosis import engine
    from jaxperf.diagnosis.kinds import identify

    made, _ = seed
    batches = engine.Batches(None)
    _, mine, paths, *_ = engine.build(identify(made["step"]), made["args"], "auto", batches, None)
    assert list(paths)[:2] == ["jaxperf.cached_filter_pmap", "jaxperf.packed_pmap"]  # the likely fix first
    checked = engine.check(mine, paths, batches, deadline=engine.cap_clock() - 1)  # the cap already spent
    assert checked.unchecked == list(paths) and set(paths) <= checked.excluded
    alone = dataclasses.replace(seed[1], unchecked=list(paths)[1:], timings=seed[1].timings)
    text = " ".join(alone.headline())
    assert "Not checked within the time cap: jaxperf.packed_pmap" in text and "--max-seconds" in text
    assert "No path tried here" not in text


def test_compiles_are_not_counted_against_the_cap(seed):
    _, result = seed
    assert 0 < result.compile_seconds < result.seconds
    assert "compiling, not counted against the cap" in result.markdown()
    assert json.loads(result.to_json())["compile_seconds"] > 0


def _loop_ints(static_argnames: bool, returned: bool, value=2):
    """A jax.jit step with an int it takes as static, as a step counter, and a weight it carries."""
    import functools

    def step(w, x, count):
        out = w - 0.1 * x * count
        return (out, count + 1) if returned else out

    jitted = (
        functools.partial(jax.jit, static_argnames="count")(step) if static_argnames else eqx.filter_jit(step)
    )
    return jitted, (jnp.ones(3), jnp.ones(3), value)


def test_a_static_int_the_loop_changes_is_named_as_retracing():
    """The loop's own counter (not returned by the step): replaying the step's outputs never sees
    it change, so each static Python scalar is called once with another value; an int (a step
    count's form) compiling again is the verdict, and nothing is timed."""
    step, args = _loop_ints(static_argnames=False, returned=False)
    result = diagnose(step, *args, carry={0: 0}, **FAST)
    assert result.retrace and result.retrace["argument"] == 2 and result.retrace["name"] == "count"
    assert result.static is None and not result.timed
    first = result.headline()[0]
    assert "compiles again on every call" in first and "argument 2 (count)" in first
    assert "jnp.asarray(count)" in first and "Start-up" not in first


def test_a_static_float_is_named_before_the_timings():
    """A float (a learning rate: the same value every call, or a schedule) is named, then timed."""
    step, args = _loop_ints(static_argnames=False, returned=False, value=0.5)
    result = diagnose(step, *args, carry={0: 0}, **FAST)
    assert result.retrace is None and result.static["argument"] == 2 and result.timed
    first = result.headline()[0]
    assert "argument 2 (count)" in first and "every call compiles" in first and "jnp.asarray(count)" in first


def test_a_static_argname_the_step_returns_as_an_array_is_named_as_retracing():
    """jax.jit(static_argnames=...) returning the int + 1: the loop would pass an array back as a
    static argument, which JAX refuses; named as the argument that retraces, not JAX's error."""
    step, args = _loop_ints(static_argnames=True, returned=True)
    result = diagnose(step, *args, carry={0: 0, 2: 1}, **FAST)
    assert result.retrace and result.retrace["name"] == "count" and result.retrace["cannot"]
    assert "count" in result.headline()[0] and "static argument" in result.headline()[0]
    assert not result.timed


def test_a_one_time_recompile_is_not_a_retrace_and_the_steady_change_is_named():
    """Carried state that comes back placed (or typed) otherwise recompiles once or twice, then
    never (the TPU's pmap outputs on another mesh than the example's inputs): not a retrace.
    A step that does retrace is named by the argument that changes before every compile."""
    step = jax.jit(lambda a, b: (jnp.asarray(a, jnp.float32), a))  # a: weak, then strong; b one call later
    weak = jnp.asarray(1.0), jnp.asarray(0.0)
    assert all(x.weak_type for x in weak)
    once = diagnose(step, *weak, carry={0: 0, 1: 1}, **FAST)
    assert once.retrace is None

    @eqx.filter_jit
    def counting(w, count):
        return jnp.asarray(w, jnp.float32) + 1.0, count + 1

    # the state comes back strongly typed once, then stays: not the cause of every compile
    again = diagnose(counting, weak[0], 0, carry={0: 0, 1: 1}, **FAST)
    assert again.retrace and again.retrace["argument"] == 1 and again.retrace["name"] == "count"


# ------------------------------------------------------------------ the seed's loop, from the command line


def test_the_cli_times_notebook_01s_case_in_the_seeds_loop_with_the_studys_paths(tmp_path):
    out = tmp_path / "cell.json"
    run, lines = _cli(
        tmp_path,
        "jaxperf_study.dispatch.examples:cell",
        *("--arg", "size=1", "--arg", "family='jit'"),
        *("--min-rounds", "2", "--loop-seconds", "0.05", "--loop-calls", "7", "--precision", "0.5"),
        *("--json", str(out)),
    )
    assert run.returncode == 0 and not lines, run.stderr
    found = json.loads(out.read_text())
    # the factory's own paths (the patched Equinox) are timed beside the tool's
    assert {"filter_jit", "jit_params", "cached_filter_jit", "filter_jit_patched"} <= set(
        found["methods"].values()
    )
    assert found["rounds"] == 2 and found["loop_calls"][0] >= 7  # the seed's loop: at least 7 calls here
    assert "each a loop of" in run.stdout and "blocked once at its end" in run.stdout


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"family": "vmap"}, "family='vmap'"),
        ({"step": "eval"}, "step='eval'"),
        ({"donated": "yes"}, "donated='yes'"),
    ],
)
def test_a_bad_case_is_named(kwargs, named):
    with pytest.raises(ValueError, match=re.escape(named)):
        examples.cell(**kwargs)


def test_a_factorys_paths_must_be_builders(tmp_path, monkeypatch):
    (tmp_path / "pathy_steps.py").write_text(
        "import jax, jax.numpy as jnp\n"
        "def make():\n"
        "    return {'step': jax.jit(lambda x: x), 'args': (jnp.ones(2),), 'paths': {'mine': 3}}\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ValueError, match=r"step_factory\(\)\['paths'\]=\{'mine': 3\} is not allowed"):
        factory.build("pathy_steps:make")
