"""The reporter's harness (jaxperf_study.jax20909.harness) and the roofline (jaxperf_study.jax20909.roofline)."""

from __future__ import annotations

import pytest

from jaxperf_study.jax20909 import harness, roofline
from jaxperf_study.jax20909.variant import KernelVariant


def seed(T=256, batch=2, D=8):
    return KernelVariant("seed", "python", T=T, D=D, batch=batch, dtype="float16")


def test_heavyweight_scans_n_fresh_batches_and_reduces_each():
    import jax.numpy as jnp

    calls = []
    heavy = harness.heavyweight(lambda x: calls.append(x.shape) or x * 2.0, 3, 2, 128, 4, jnp.float16)
    means = heavy()
    assert means.shape == (3,) and calls == [(2, 128, 4)]  # traced once, inside the scan
    assert float(means[0]) == pytest.approx(
        float((harness.prepare_data(2, 128, 4, jnp.float16) * 2.0).mean()), rel=1e-3
    )


def test_his_batches_come_from_his_key_the_same_stream_as_a_typed_key():
    import jax
    import jax.numpy as jnp
    import numpy as np

    his = harness.prepare_data(2, 128, 4, jnp.float16)  # jax.random.PRNGKey(0), as he wrote it
    typed = jax.random.normal(jax.random.key(0), (2, 128, 4), jnp.float16)  # what the harness used before
    assert np.array_equal(np.asarray(his), np.asarray(typed))


def test_measure_reports_the_reporters_numbers_per_variant():
    rows = harness.measure(["python", "fori u=1", "hoisted u=2"], seed(), n=2, repeats=1)
    assert list(rows.variant) == ["python", "fori u=1", "hoisted u=2"] and set(rows["mode"]) == {
        "xla_harness"
    }
    assert (rows.first_minus_second_ms == rows.first_call_ms - rows.second_call_ms).all()
    assert (rows.ms_per_call == rows.second_call_ms / 2).all()
    head = harness.headline(rows).set_index("variant")
    assert head.loc["python", "ms_vs_python"] == 1.0 and head.loc["fori u=1", "compile_vs_fori1"] == 1.0


def test_a_negative_first_minus_second_compile_is_left_out_and_said(monkeypatch):
    # his compile estimate is first call - second call: a second call slower than the first (the
    # committed run's hoisted T=16384: -214 ms) is noise, not a compile time
    clock = iter([0.0, 0.5, 0.5, 2.0, 2.0, 2.1])  # first call 500 ms, second 1500 ms, third 100 ms
    monkeypatch.setattr(harness.time, "perf_counter", lambda: next(clock))
    (row,) = harness.measure(["python"], seed(batch=1), n=2, repeats=1).to_dict(orient="records")
    assert row["first_minus_second_ms"] == pytest.approx(-1000.0)
    assert row["compile_ms"] != row["compile_ms"]  # NaN: not a compile time
    assert "not a compile time" in row["compile_note"]


def test_measure_rejects_bad_parameters():
    with pytest.raises(ValueError, match="mode='gpu' is not allowed"):
        harness.measure(["python"], seed(batch=1), mode="gpu")
    with pytest.raises(ValueError, match="variant='fori' is not allowed"):
        harness.measure(["fori"], seed(batch=1))
    with pytest.raises(ValueError, match="kernel='streaming' is not allowed: expected one of 'seed'"):
        harness.measure(
            ["python"], KernelVariant("streaming", "python", T=256, D=8, batch=1, dtype="float16")
        )


def test_bytes_the_kernel_and_the_harness_must_move():
    # The arithmetic: at T=65536 (B=512, D=64, fp16 in and out) the harness moves ~17 GB per step.
    assert roofline.harness_bytes(T=65536, D=64, batch=512, dtype="float16", out_dtype="float16") == 2**34
    # seed at T=4096, B=8, D=64: fp16 input read once, float32 output written once
    seed_call = KernelVariant("seed", "fori", T=4096, D=64, batch=8, dtype="float16")
    assert roofline.kernel_bytes(seed_call) == 8 * 4096 * 64 * (2 + 4)
    # attention reads q, k, v and writes [B, 128, D]
    attention = KernelVariant("attention", "fori", T=256, D=8, batch=1, dtype="float32")
    assert roofline.kernel_bytes(attention) == 4 * (128 * 8 + 2 * 256 * 8 + 128 * 8)


def test_bandwidth_and_attach():
    import pandas as pd

    bw = roofline.measure_bandwidth(megabytes=8, repeats=2)
    assert bw["gb_per_s"] > 0 and bw["gb_per_s_fresh_output"] > 0
    head = pd.DataFrame(
        [
            dict(mode="xla", kernel="seed", T=256, ms_per_call=1.0),
            dict(mode="xla_harness", kernel="seed", T=256, ms_per_call=2.0),
        ]
    )
    out = roofline.attach(head, 10.0, D=64, batch_of={"xla": 2, "xla_harness": 2}, dtype="float16")
    assert list(out["bytes"]) == [2 * 256 * 64 * 6, 2 * 2 * 256 * 64 * 6]
    assert out["roofline_ms"].iloc[0] == pytest.approx(2 * 256 * 64 * 6 / 1e10 * 1e3)
    assert out["ms_vs_roofline"].iloc[0] == pytest.approx(1.0 / out["roofline_ms"].iloc[0])


def test_batches_per_harness_mode():
    import pandas as pd

    rows = pd.DataFrame([dict(mode="xla_harness", batch=8), dict(mode="xla_harness", batch=8)])
    assert harness.batches(rows) == {"xla_harness": 8}
