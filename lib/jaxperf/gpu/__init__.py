"""The study on a lent GPU (issue 15): a prepared device run that fits one call.

``tools/device/run_gpu.sh`` runs each part of :data:`~jaxperf.gpu.settings.PARTS` as its own
process (``python -m jaxperf.gpu.run PART``) under its own time limit, then
:mod:`jaxperf.gpu.report`, then packs ``results/gpu`` and ``figures/gpu`` for the trip back.
"""
