"""Pallas -> Triton -> SASS on a CPU for NVIDIA targets, nothing run: :mod:`.toolchain`, the module
captured (:mod:`.capture`), compiled to a cubin (:mod:`.compile`), its machine code read (:mod:`.sass`)."""
