"""Mosaic TPU on a CPU through libtpu (:mod:`.topology`): compile for a TPU topology (:mod:`.compile`),
read its final VLIW bundles (:mod:`.bundles`), count cycles and slots (:mod:`.estimate`); nothing runs."""
