"""The study on a lent GPU (issue 15): a prepared device run that fits one call, a driver that runs
parts of both studies.

``tools/device/run_gpu.sh`` runs each part of :data:`~jaxperf_study.gpu.settings.PARTS` as its own
process (``python -m jaxperf_study.gpu.run PART``) under its own time limit, then
:mod:`jaxperf_study.gpu.report`, then packs ``results/gpu`` and ``figures/gpu`` for the trip back.
"""
