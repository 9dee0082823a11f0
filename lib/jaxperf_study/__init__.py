"""The study beside the package, never shipped and never imported by it: one subpackage per study
(an issue's question, its notebooks' code), and top-level modules every study shares (the
notebook harness, records, provenance, settings, figures and pages).

A study imports :mod:`jaxperf` and the shared modules, never another study; a driver (the GPU
device run) may import studies, and nothing imports it (tests/test_layers.py)."""
