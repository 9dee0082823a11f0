"""Training steps written the way the Equinox, Flax NNX, optax and JAX docs write them, each a
module whose ``make()`` returns what ``python -m jaxperf diagnose corpus.steps.NAME:make``
takes (run from tests/). ``EXPECT`` in each module is the verdict known by construction,
which tests/test_diagnose.py checks:

- ``"equal"``: every path that applies computes what the step computes (typed keys too);
- ``"no change"``: a device-bound step, where no path is worth recommending;
- ``"retraces"``: the step compiles on every call, and the argument that changes is named;
- ``"differs"``: some path does not compute the same, and is never timed.
"""
