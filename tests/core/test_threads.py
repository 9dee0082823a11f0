"""One wrapper called from many threads at once (issue 28): every call returns its own
outputs, none raises, and the counts add up. Was: ``cached_filter_jit``'s unlocked
pending-results deque raised ``IndexError: pop from an empty deque`` out of ordinary calls
(in about half of the rounds below). Python switches threads every microsecond here
(``sys.setswitchinterval``), so a race has thousands of chances per round. A core test:
jaxperf's public API, jax, equinox, numpy, pytest."""

from __future__ import annotations

import sys
import threading
import time

import jax.numpy as jnp
import numpy as np
import pytest
from dropin_checks import N

from jaxperf import cached_filter_jit, cached_filter_pmap

THREADS = 16


@pytest.fixture
def switch_often():
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def hammer(work, threads=THREADS):
    """Run ``work(i)`` in ``threads`` threads released together; the errors they raised."""
    start, errors = threading.Barrier(threads), []

    def run(i):
        try:
            start.wait()
            work(i)
        except BaseException as err:  # noqa: BLE001 -- every error is the test's finding
            errors.append(err)

    pool = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
    for thread in pool:
        thread.start()
    deadline = time.monotonic() + 120  # all of them: a hang fails in 2 minutes, not 2 per thread
    for thread in pool:
        thread.join(timeout=max(deadline - time.monotonic(), 0.0))
    assert not any(thread.is_alive() for thread in pool), "a thread hung"
    return errors


def test_one_cached_filter_jit_wrapper_from_many_threads(switch_often):
    rounds, calls = 3, 600
    wrapped = cached_filter_jit(lambda x, tag: (x + 1, tag))
    x = jnp.ones(3)
    wrapped(x, 0)  # compiled: the threads race on the hot path

    def work(i):
        for k in range(calls):
            out, tag = wrapped(x, i % 2)
            assert tag == i % 2
            if k % 100 == 0:
                wrapped.wait()
        np.testing.assert_array_equal(out, np.full(3, 2.0))

    for _ in range(rounds):
        errors = hammer(work)
        assert not errors, errors[:3]
    assert wrapped.stats == {"hits": rounds * THREADS * calls - 1, "misses": 2, "fallbacks": 0}
    wrapped.wait()
    assert not wrapped._cached.pending


def test_first_calls_from_many_threads_build_one_path_per_structure(switch_often):
    wrapped = cached_filter_jit(lambda x: {"y": x * 2, "n": x.shape[0]})

    def work(i):
        n = 1 + i % 3
        out = wrapped(jnp.ones(n))
        assert out["n"] == n
        np.testing.assert_array_equal(out["y"], np.full(n, 2.0))

    errors = hammer(work)
    assert not errors, errors[:3]
    assert wrapped.stats == {"hits": THREADS - 3, "misses": 3, "fallbacks": 0}


def test_one_cached_filter_pmap_wrapper_from_many_threads(switch_often):
    calls = 40
    wrapped = cached_filter_pmap(lambda x, tag: (x + 1, tag))
    x = jnp.ones((N, 2))
    wrapped(x, 0)

    def work(i):
        for _ in range(calls):
            out, tag = wrapped(x, i % 2)
            assert tag == i % 2 and out.shape == (N, 2)

    errors = hammer(work, threads=8)
    assert not errors, errors[:3]
    assert wrapped.stats == {"hits": 8 * calls - 1, "misses": 2, "fallbacks": 0}
