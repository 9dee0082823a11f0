"""Mosaic TPU on a CPU through libtpu: compile for a TPU topology, read its final VLIW bundles.

:mod:`.topology` (generations, libtpu set-up), :mod:`.compile` (timed AOT compiles),
:mod:`.bundles` (the final VLIW schedule and its loops), :mod:`.estimate` (static cycles and
slots). Nothing here executes on a TPU.
"""
