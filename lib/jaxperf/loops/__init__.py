"""``loops``: does a Pallas kernel pay for ``fori_loop`` (jax#20909)? Its loop, written once with
``jaxperf.kernel_loop``, is built in every form, checked, compiled per target without the hardware
and timed where a device is (``python -m jaxperf loops package.module:factory``; :mod:`.engine`)."""
