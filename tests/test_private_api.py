"""Pins every private-API hook in jaxperf.private_api: each must still resolve
on the pinned JAX/Equinox. Add a case here with every new hook."""

from __future__ import annotations


# --- multiprocess study (issue 14) --------------------------------------------


def test_equinox_pmap_cache_resolves_and_is_swapped_back():
    from jaxperf import private_api

    original = private_api.equinox_pmap_cache()
    assert callable(original)

    def replacement(*args, **kwargs):
        raise AssertionError("not called here")

    with private_api.equinox_pmap_cache_replaced(replacement):
        assert private_api.equinox_pmap_cache() is replacement
    assert private_api.equinox_pmap_cache() is original
