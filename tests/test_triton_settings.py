"""Notebook 04's settings: typed, frozen, validated before any work, with a visible quick preset."""

from __future__ import annotations

import dataclasses

import pytest

from jaxperf.jax20909 import vocab
from jaxperf.triton.settings import REPORTER_SIZES, TritonSettings


def test_defaults_plan_the_reporters_kernel_first_and_every_form():
    settings = TritonSettings()
    plan = settings.plan()
    assert {v.kernel for v in plan} == {"seed"} and settings.sizes["seed"] == REPORTER_SIZES  # his T only
    seed = {(v.loop_form, v.unroll) for v in plan if v.kernel == "seed"}
    assert (
        ("python", 1) in seed and ("hoisted", 4) in seed and ("fori", 4) in seed
    )  # fori u=4: recorded as not lowering
    other = TritonSettings(
        kernels=("seed", "attention"),
        sizes={"seed": (256,), "attention": (256,)},
        unrolls={"seed": (1,), "attention": (1,)},
    )
    assert [v.kernel for v in other.plan()] == sorted(
        [v.kernel for v in other.plan()], key=vocab.KERNELS.index
    )
    assert not any(
        v.loop_form == "hoisted" for v in other.plan() if v.kernel != "seed"
    )  # nothing to hoist there
    # the scalar carry (the XLA:CPU fix) at unroll 1 only, on the one kernel with a sum to carry
    assert [v.name for v in plan if v.loop_form == "scalar_carry"] == ["scalar_carry u=1"]
    assert [v.kernel for v in plan if v.loop_form == "scalar_carry"] == ["seed"]
    assert settings.points() == sum(len(settings.sizes[v.kernel]) for v in plan)
    assert settings.estimate_sizes == REPORTER_SIZES == (256, 2048, 8192, 16384, 32768, 65536)
    assert [v.name for v in settings.estimate_plan()] == [
        "python",
        "fori u=1",
        "hand_unrolled u=4",
        "hoisted u=1",
        "scalar_carry u=1",
    ]
    assert [(v.loop_form, v.unroll) for v in settings.mechanism_plan()] == [
        ("python", 1),
        ("fori", 1),
        ("hand_unrolled", 4),
        ("hoisted", 1),
        ("scalar_carry", 1),
    ]
    assert settings.shape.batch == 512 and settings.shape.seed_carry_dtype == "input"
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.target = "sm_86"  # type: ignore[misc]


def test_quick_preset_is_applied_and_recorded():
    quick = TritonSettings.from_parameters({"quick": True, "sizes": {"seed": [256]}, "kernels": ["seed"]})
    assert quick.sizes == {"seed": (256, 2048)} and quick.repeats == 1 and quick.budget_s == 40.0
    assert quick.as_dict()["repeats"] == 1  # provenance records what ran
    presets = TritonSettings.presets()
    assert set(presets.parameter) == set(TritonSettings.QUICK)
    smoke = TritonSettings.from_parameters({"quick": True})
    assert "scalar_carry u=1" in {v.name for v in smoke.plan()}  # the smoke run compiles the fix too


def test_unroll_one_forms_choose_which_forms_run_at_unroll_one_only():
    every = TritonSettings(kernels=("seed",), sizes={"seed": (256,)}, unroll_one_forms=())
    names = [v.name for v in every.plan()]
    assert [n for n in names if n.startswith("scalar_carry")] == [f"scalar_carry u={u}" for u in (1, 4)]
    hoisted_once = TritonSettings(
        kernels=("seed",), sizes={"seed": (256,)}, unroll_one_forms=("hoisted", "scalar_carry")
    )
    names = [v.name for v in hoisted_once.plan()]
    assert "hoisted u=1" in names and "hoisted u=4" not in names and "hand_unrolled u=4" in names
    assert names.index("hoisted u=1") < names.index("scalar_carry u=1")  # loop_forms' order kept
    assert hoisted_once.points() == len(names)


@pytest.mark.parametrize(
    "name, value",
    [
        ("target", "sm_70"),
        ("kernels", "seed"),
        ("kernels[...]", ["flash"]),
        ("loop_forms[...]", ["while"]),
        ("unroll_one_forms[...]", ["python"]),
        ("unroll_one_forms", "scalar_carry"),
        ("sizes", {"streaming": [256]}),  # no entry for the seed kernel
        ("sizes['seed'][...]", {"seed": [320]}),
        ("sizes['seed']", {"seed": []}),
        ("unrolls['seed'][...]", {"seed": [0]}),
        ("repeats", 0),
        ("repeats", 9),
        ("max_compile_s", 0),
        ("budget_s", True),
        ("repeat_below_s", -1.0),
        ("estimate_targets[...]", ["sm_75"]),
        ("mechanism_sizes", [8192]),
        ("seed_carry_dtype", "bfloat16"),
        ("quick", "yes"),
        ("backend", "cuda"),
    ],
)
def test_a_bad_parameter_is_named(name, value):
    field = name.split("[")[0]
    with pytest.raises(ValueError, match=rf"{_escape(name)}="):
        TritonSettings.from_parameters({field: value})


def _escape(name: str) -> str:
    import re

    return re.escape(name)
