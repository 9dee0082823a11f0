"""Mosaic TPU on a CPU through libtpu: compile for a TPU topology, read its final VLIW bundles.

One module per concern: :mod:`.topology` (generations, libtpu set-up),
:mod:`.compile` (timed AOT compiles), :mod:`.bundles` (the final VLIW
schedule and its loops), :mod:`.estimate` (static cycles and clocks). Nothing
here executes on a TPU. The study that uses them (notebook 05) is
:mod:`jaxperf.tpu`; the lowering matrix (notebook 02) exports through
:mod:`jaxperf.compilers.lowering`.
"""
