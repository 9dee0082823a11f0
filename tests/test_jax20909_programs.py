"""The programs the jax#20909 study builds, pinned: every builder's jaxpr (plain jit, the
``pallas_call`` for each compiler, the Mosaic GPU port, the engine's factories), the inputs'
shapes, the float64 reference and its tolerance, and the bytes the roofline counts, for a grid
of variants, hashed and compared with ``tests/fixtures/jax20909_programs.json``.

The fixture was written by the code that made the committed loop results (issue 47, before a
kernel variant became one type): a refactor of how a variant travels that changes none of
these is no change to what the study computes (tools/runall/refactors.json cites this test).
A change that means to change a program rewrites the fixture on purpose::

    .venv/bin/python tests/test_jax20909_programs.py --write
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

FIXTURE = Path(__file__).parent / "fixtures" / "jax20909_programs.json"

KERNELS = ("seed", "data_carry", "streaming", "attention")
FORMS = ("python", "fori", "pl_loop", "hand_unrolled", "hoisted", "scalar_carry")
ROW_BLOCK = ("seed", "data_carry")


def _forms(kernel: str) -> list[tuple[str, int]]:
    """(loop form, unroll) pairs that apply to ``kernel``: u=1 and u=3 (a remainder at 4 steps)."""
    hoisting = ("hoisted", "scalar_carry")
    return [
        (f, u)
        for f in FORMS
        if kernel == "seed" or f not in hoisting
        for u in ((1,) if f == "python" else (1, 3))
    ]


def cases() -> list[dict[str, Any]]:
    """The grid: each case a builder and its arguments, as plain values."""
    out: list[dict[str, Any]] = []
    for kernel in KERNELS:
        carries = ("float32",) if kernel == "attention" else ("float32", "input")
        for form, unroll in _forms(kernel):
            for dtype in ("float16", "float32"):
                for carry in carries:
                    out.append(
                        dict(builder="xla", kernel=kernel, form=form, unroll=unroll, T=256, D=64, batch=2,
                             dtype=dtype, block_rows=64, out_rows=128, carry_dtype=carry)
                    )  # fmt: skip
            for interpret, lowering in ((True, "default"), (False, "triton"), (False, "mosaic_tpu"),
                                        (False, "mosaic_gpu"), (False, "default")):  # fmt: skip
                out.append(
                    dict(builder="pallas", kernel=kernel, form=form, unroll=unroll, T=256, D=64, batch=2,
                         dtype="float16", block_rows=64, out_rows=128, carry_dtype="float32",
                         interpret=interpret, lowering=lowering)
                )  # fmt: skip
            out.append(
                dict(builder="pallas", kernel=kernel, form=form, unroll=unroll, T=192, D=32, batch=1,
                     dtype="bfloat16", block_rows=32, out_rows=64, carry_dtype="float32",
                     interpret=True, lowering="default")
            )  # fmt: skip
            if kernel in ROW_BLOCK:  # a BlockSpec per program, in float32: the kernel a TPU v5e runs
                for interpret, lowering in ((True, "default"), (False, "mosaic_tpu")):
                    out.append(
                        dict(builder="pallas", kernel=kernel, form=form, unroll=unroll, T=256, D=64, batch=2,
                             dtype="float32", block_rows=64, out_rows=128, carry_dtype="float32",
                             tiling="blocks", interpret=interpret, lowering=lowering)
                    )  # fmt: skip
                for interpret in (True, False):
                    out.append(
                        dict(builder="mosaic_gpu", kernel=kernel, form=form, unroll=unroll, T=256, D=64,
                             batch=2, dtype="float16", carry_dtype="float32", interpret=interpret,
                             check_unroll=False)
                    )  # fmt: skip
            name = form if form == "python" else f"{form} u={unroll}"
            for compiler in (None, "triton", "mosaic_gpu", "mosaic_tpu"):
                for interpret in (False, True):
                    out.append(
                        dict(builder="factory", kernel=kernel, form=name, T=256, interpret=interpret,
                             compiler=compiler)
                    )  # fmt: skip
        for dtype in ("float16", "bfloat16", "float32"):
            out.append(dict(builder="reference", kernel=kernel, T=256, D=16, batch=2, dtype=dtype,
                            block_rows=64, out_rows=128))  # fmt: skip
            out.append(dict(builder="bytes", kernel=kernel, T=1024, D=64, batch=8, dtype=dtype, out_rows=128))
    for variant in ("python", "fori u=1", "scalar_carry u=1", "hand_unrolled u=3"):
        for mode in ("xla", "pallas_interpret"):
            out.append(dict(builder="harness", variant=variant, mode=mode, T=256, D=64, batch=2,
                            dtype="float16", block_rows=64, out_rows=128))  # fmt: skip
    return out


def _jaxpr(fn: Any, args: tuple[Any, ...]) -> str:
    import jax

    return jax.make_jaxpr(fn)(*args).pretty_print(source_info=False, name_stack=False)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def program(case: dict[str, Any]) -> str:
    """What ``case`` builds, as text: a jaxpr with its inputs' types, or the numbers it computes.
    The one place that calls the study's builders (the grid above says what, not how)."""
    from jaxperf_study.jax20909 import (
        factories,
        harness,
        inputs,
        kernels,
        mosaic_gpu_kernel,
        reference,
        roofline,
    )
    from jaxperf_study.jax20909.variant import KernelVariant

    c = dict(case)
    builder = c.pop("builder")
    if builder in ("xla", "pallas", "mosaic_gpu"):
        options = {k: c.pop(k) for k in ("interpret", "lowering", "check_unroll") if k in c}
        variant = KernelVariant(c.pop("kernel"), c.pop("form"), c.pop("unroll"), **c)
        build = dict(xla=kernels.build_xla, pallas=kernels.build, mosaic_gpu=mosaic_gpu_kernel.build)[builder]
        fn, args = build(variant, **options)
    elif builder == "factory":
        fn, args = factories.make(
            c["kernel"], c["form"], c["T"], interpret=c["interpret"], compiler=c["compiler"]
        )
    elif builder == "harness":
        loop_form, unroll = c.pop("variant").partition(" u=")[::2]
        mode = c.pop("mode")
        variant = KernelVariant("seed", loop_form, int(unroll or 1), **c)
        fn = harness._build(mode, variant)
        args = inputs.example_args(variant)
    elif builder == "reference":
        variant = KernelVariant(c.pop("kernel"), "fori", **c)
        arrays = tuple(np.asarray(a) for a in inputs.make_inputs(variant, 0))
        want = reference.reference(variant, arrays)
        tol = reference.tolerance(variant, arrays)
        # at float32, the precision kernels are checked at: float64 einsum's last bits differ between CPUs
        want, tol = want.astype(np.float32), tol.astype(np.float32)
        return f"{want.shape} {_digest(want.tobytes().hex())} {tol.shape} {_digest(tol.tobytes().hex())}"
    elif builder == "bytes":
        return str(roofline.kernel_bytes(KernelVariant(c.pop("kernel"), "fori", **c)))
    else:
        raise ValueError(builder)
    return repr([(a.shape, str(a.dtype)) for a in args]) + "\n" + _jaxpr(fn, args)


def key(case: dict[str, Any]) -> str:
    return json.dumps(case, sort_keys=True)


def fingerprints() -> dict[str, str]:
    return {key(c): _digest(program(c)) for c in cases()}


@pytest.fixture(scope="module")
def pinned() -> dict[str, str]:
    return json.loads(FIXTURE.read_text())


def test_the_pinned_grid_is_the_grid(pinned):
    assert sorted(pinned) == sorted(key(c) for c in cases())


@pytest.mark.parametrize(
    "builder", ["xla", "pallas", "mosaic_gpu", "factory", "harness", "reference", "bytes"]
)
def test_every_program_the_study_builds_is_the_pinned_one(pinned, builder):
    changed = [
        k
        for k in pinned
        if json.loads(k)["builder"] == builder and _digest(program(json.loads(k))) != pinned[k]
    ]
    assert not changed, f"{len(changed)} programs differ from the pinned ones, e.g. {changed[:3]}"


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python tests/test_jax20909_programs.py --write")
    from jaxperf import backend

    backend.configure("cpu", 8)
    FIXTURE.write_text(json.dumps(fingerprints(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {FIXTURE}")
