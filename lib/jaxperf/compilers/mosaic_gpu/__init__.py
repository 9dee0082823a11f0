"""Mosaic GPU (Pallas on Hopper and newer) without a GPU: compile for sm_90a in its own environment
(:mod:`.toolchain`, the worker :mod:`.aot` run by :mod:`.compile`), read the SASS (:mod:`.sass`)."""
