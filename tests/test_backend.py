"""backend="auto" on a machine without accelerators starts the CPU only, even with libtpu installed."""

from __future__ import annotations

import importlib.metadata
from types import SimpleNamespace

from jaxperf import backend


def _dists(*names):
    return lambda: [SimpleNamespace(metadata={"Name": n}) for n in names]


def test_auto_pins_cpu_without_tpu_nodes_or_gpu_plugin(tmp_path, monkeypatch):
    monkeypatch.setattr(importlib.metadata, "distributions", _dists("jax", "libtpu"))
    assert backend._auto_platforms(tmp_path) == "cpu"


def test_auto_leaves_the_choice_to_jax_on_a_tpu_vm(tmp_path, monkeypatch):
    monkeypatch.setattr(importlib.metadata, "distributions", _dists("jax", "libtpu"))
    (tmp_path / "accel0").touch()
    assert backend._auto_platforms(tmp_path) is None


def test_auto_leaves_the_choice_to_jax_with_a_gpu_plugin(tmp_path, monkeypatch):
    monkeypatch.setattr(importlib.metadata, "distributions", _dists("jax", "jax-cuda13-plugin"))
    assert backend._auto_platforms(tmp_path) is None


def test_gpu_asks_only_for_the_installed_plugin(monkeypatch):
    monkeypatch.setattr(importlib.metadata, "distributions", _dists("jax", "jax-cuda13-plugin"))
    assert backend._platforms_for("gpu") == "cuda"
    monkeypatch.setattr(importlib.metadata, "distributions", _dists("jax", "jax_rocm7_plugin"))
    assert backend._platforms_for("gpu") == "rocm"
    assert backend._platforms_for("cpu") == "cpu"
