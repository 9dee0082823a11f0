"""cached_filter_jit never waits for the computation it launches (eqx.filter_jit waits on
every call since Equinox 0.11.8), and a failed eqx.error_if still raises Equinox's
EquinoxRuntimeError, at a stated point. A core test: jaxperf's public API, jax, equinox,
numpy, pytest."""

import os
import subprocess
import sys
import textwrap
import weakref

import equinox as eqx
import jax
import jax.numpy as jnp
import pytest

from jaxperf import cached_filter_jit

# The behavioural signal, robust on a loaded machine: CALLS chained steps, each well above
# its dispatch cost. The last output can be ready right after the last call returns only if
# every earlier call waited for its own computation (or the host stalled for all of them).
CALLS = 4
SIZE = 400


def long_step(y):
    for _ in range(30):
        y = jnp.tanh(y @ y)
    return y


def readiness(wrapped):
    """(ready right after each call, value) of CALLS chained calls of ``wrapped``."""
    y = jnp.full((SIZE, SIZE), 1e-3)
    wrapped(y).block_until_ready()  # compiled outside the loop
    ready = []
    for _ in range(CALLS):
        y = wrapped(y)
        ready.append(y.is_ready())
    return ready, y


def test_calls_run_ahead_where_filter_jit_waits_for_each():
    eqx_ready, eqx_out = readiness(eqx.filter_jit(long_step))
    our_ready, our_out = readiness(cached_filter_jit(long_step))
    assert all(eqx_ready)  # Equinox blocked in each call
    assert not our_ready[-1]  # four steps' compute cannot be done when the fourth call returns
    assert jnp.array_equal(eqx_out, our_out)


def _unique_check(msg):
    """A fresh function with a failing check (a fresh msg: error_if's own trace is not reused)."""

    def checked(x):
        return eqx.error_if(x, x.sum() > 0, msg) * 2

    return checked


def test_a_failed_error_if_raises_equinox_s_error_at_the_call_on_cpu():
    """XLA:CPU runs a program holding a host callback (every error_if) before its call
    returns, so the failure is known inside the call: the same message as Equinox's."""
    x = jnp.ones(2)
    with pytest.raises(eqx.EquinoxRuntimeError) as theirs:
        eqx.filter_jit(_unique_check("equinox's check"))(x)
    ours_wrapped = cached_filter_jit(_unique_check("our check"))
    with pytest.raises(eqx.EquinoxRuntimeError) as ours:
        ours_wrapped(x)
    assert str(ours.value).replace("our check", "equinox's check") == str(theirs.value)
    assert not any(
        f in str(ours.value) for f in ("cached_jit.py", "_jit_paths.py", "_partition.py")
    )  # none of ours
    assert ours.value.__cause__ is None
    with pytest.raises(eqx.EquinoxRuntimeError, match="our check"):  # a cache hit raises too
        ours_wrapped(x)
    assert jnp.array_equal(ours_wrapped(-x), -2 * x)  # a passing check returns as usual


class _FinishedFailed:
    """An output of a computation that finished with an error_if failure (or ``message``), as
    an asynchronous backend reports one after the call returned (XLA:CPU cannot: it fails
    inside the call). ``pend`` puts it where the wrapper keeps such outputs: a weak reference,
    so the test holds it."""

    def pend(self, wrapped):
        wrapped._cached.pending.append(weakref.ref(self))
        return self

    def __init__(self, message="INTERNAL: CpuCallback error: _EquinoxRuntimeError: late check"):
        self.message = message

    def is_ready(self):
        return True

    def is_deleted(self):
        return False

    def block_until_ready(self):
        raise jax.errors.JaxRuntimeError(self.message)


def test_an_asynchronous_failure_raises_at_the_next_call_or_at_wait():
    checked = cached_filter_jit(_unique_check("late check"))
    with pytest.raises(eqx.EquinoxRuntimeError):
        checked(jnp.ones(2))  # leaves Equinox's record of the failed check (its msg and stack)
    ok = checked(-jnp.ones(2))
    failed = _FinishedFailed().pend(checked)
    with pytest.raises(eqx.EquinoxRuntimeError, match="late check"):
        checked(-jnp.ones(2))
    assert jnp.array_equal(checked(-jnp.ones(2)), ok)  # raised once: the record is cleared
    failed = _FinishedFailed().pend(checked)
    with pytest.raises(eqx.EquinoxRuntimeError, match="late check"):
        checked.wait()
    kept = checked(-jnp.ones(2))
    checked.wait()  # nothing failed: returns once every computation finished
    assert not checked._cached.pending and kept.is_ready()
    failed = _FinishedFailed("INTERNAL: some other failure").pend(checked)
    with pytest.raises(jax.errors.JaxRuntimeError, match="some other failure") as info:
        checked(-jnp.ones(2))  # not Equinox's: raised as it is, saying where it came from
    assert "earlier call of checked" in "".join(getattr(info.value, "__notes__", []))
    _FinishedFailed().pend(checked)  # dropped by the caller (a weak reference now dead): not raised
    assert jnp.array_equal(checked(-jnp.ones(2)), ok)
    del failed


def test_eqx_on_error_off_keeps_equinox_s_wait_and_cached_filter_jit_still_runs_ahead():
    """Issue 21's claim, checked: EQX_ON_ERROR=off removes the checks, not the block."""
    script = textwrap.dedent(
        f"""
        import os
        os.environ["JAX_PLATFORMS"] = "cpu"
        import equinox as eqx, jax.numpy as jnp
        from jaxperf import cached_filter_jit

        def long_step(y):
            for _ in range(30):
                y = jnp.tanh(y @ y)
            return y

        def readiness(wrapped):
            y = jnp.full(({SIZE}, {SIZE}), 1e-3)
            wrapped(y).block_until_ready()
            ready = []
            for _ in range({CALLS}):
                y = wrapped(y)
                ready.append(y.is_ready())
            return ready

        print(all(readiness(eqx.filter_jit(long_step))), readiness(cached_filter_jit(long_step))[-1])
        """
    )
    env = {**os.environ, "EQX_ON_ERROR": "off"}
    proc = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split() == ["True", "False"]


def test_only_a_call_holding_an_error_check_is_watched_for_a_late_failure():
    """On an accelerator, a call whose program holds an eqx.error_if keeps its output weakly to
    raise a late failure at the next call; one without a check has nothing to tell and skips that
    bookkeeping (read off the trace JAX keeps: the function is not traced again)."""
    from jaxperf import private_api

    traces = []

    def plain(x):
        traces.append(1)
        return x * 2

    checked, unchecked = cached_filter_jit(_unique_check("watched")), cached_filter_jit(plain)
    x = -jnp.ones(2)
    checked(x), unchecked(x)
    for wrapped, expected in ((checked, True), (unchecked, False)):
        entry = next(iter(wrapped._cached.entries.values()))
        assert private_api.equinox_error_checks(entry.fn, [x]) is expected
    assert len(traces) == 1
