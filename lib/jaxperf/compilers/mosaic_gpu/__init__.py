"""Mosaic GPU (Pallas on Hopper and newer) without a GPU: compile for sm_90a, read the SASS, count.

:mod:`.toolchain` (the compile environment, the device check), :mod:`.aot` (the worker in that
environment), :mod:`.compile` (runs it from the project's venv), :mod:`.sass` (reads the SASS).
"""
