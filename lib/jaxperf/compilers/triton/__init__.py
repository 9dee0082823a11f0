"""Pallas -> Triton -> SASS on a CPU, for NVIDIA targets: nothing here runs a kernel.

:mod:`.toolchain` (is the ``triton`` extra usable), :mod:`.capture` (the Triton module of a
Pallas kernel), :mod:`.compile` (ttir to cubin, each stage timed), :mod:`.sass` (the machine
code read and counted).
"""
