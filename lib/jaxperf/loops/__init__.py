"""``python -m jaxperf loops``: does a Pallas kernel pay for ``fori_loop`` (jax#20909)?

- :mod:`.forms`: :func:`~.forms.kernel_loop`, a kernel's loop written once, built in any form;
- :mod:`.factory`: a reader's factory loaded and checked; :mod:`.targets`: the compilers read
  without their hardware; :mod:`.engine`: every form checked, lowered, compiled and timed;
  :mod:`.verdict`, :mod:`.report_kernel`: one kernel's answer; :mod:`.cli`: the command;
  :mod:`.examples`: two kernels written the way Pallas' docs write them.
- The study's parts (notebook 02): :mod:`.harness` (the reporter's harness), :mod:`.analysis`,
  :mod:`.mechanism`, :mod:`.advice`, :mod:`.answer`; the rest is :mod:`jaxperf_study.jax20909`.
"""
