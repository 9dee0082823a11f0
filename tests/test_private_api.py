"""Pins every private-API hook in jaxperf.private_api: each must still resolve
on the pinned JAX/Equinox. Add a case here with every new hook."""

from __future__ import annotations
