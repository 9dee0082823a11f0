"""``loops``: does a Pallas kernel pay for ``fori_loop`` (jax#20909)? Its loop, written once with
``jaxperf.kernel_loop``, is built in every form, checked, compiled per target without the
hardware and timed (``python -m jaxperf loops package.module:factory``).

- :mod:`.factory`: a reader's factory loaded and checked; :mod:`.targets`: the compilers read
  without their hardware; :mod:`.engine`: every form checked, lowered, compiled and timed;
  :mod:`.verdict`, :mod:`.report_kernel`: one kernel's answer; :mod:`.cli`: the command;
  :mod:`.examples`: two kernels written the way Pallas' docs write them.
"""
