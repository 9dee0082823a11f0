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


def test_hardware_reads_the_device_nodes(tmp_path, monkeypatch):
    monkeypatch.setattr("shutil.which", lambda name: None)
    assert backend.hardware(tmp_path) == {"cpu": "always", "gpu": None, "tpu": None}
    msg = backend.missing("gpu", tmp_path)
    assert msg is not None and "no GPU was found" in msg and "available here: cpu" in msg
    assert "no TPU was found" in (backend.missing("tpu", tmp_path) or "")
    assert backend.missing("cpu", tmp_path) is None and backend.missing("auto", tmp_path) is None
    (tmp_path / "nvidia0").touch()
    assert backend.hardware(tmp_path)["gpu"] == str(tmp_path / "nvidia0")
    assert backend.missing("gpu", tmp_path) is None
    tpu_vm = tmp_path / "tpu_vm"
    tpu_vm.mkdir()
    (tpu_vm / "accel0").touch()
    assert "available here: cpu, tpu" in (backend.missing("gpu", tpu_vm) or "")


def test_a_driver_tool_counts_as_a_gpu(tmp_path, monkeypatch):
    monkeypatch.setattr("shutil.which", lambda name: "/usr/bin/nvidia-smi" if name == "nvidia-smi" else None)
    assert backend.hardware(tmp_path)["gpu"] == "nvidia-smi" and backend.missing("gpu", tmp_path) is None


def test_a_bare_assertion_from_jax_names_the_backend_and_what_is_here(monkeypatch):
    import jax
    import pytest

    def no_backend():
        raise AssertionError

    monkeypatch.setattr(jax, "devices", no_backend)
    monkeypatch.setattr(backend, "_backends_started", lambda: True)
    monkeypatch.setattr(backend, "missing", lambda b: "no GPU was found (...); available here: cpu")
    with pytest.raises(backend.BackendUnavailableError) as err:
        backend.configure("gpu")
    assert str(err.value).startswith("backend='gpu' is not available on this machine: no GPU was found")
    assert "available here: cpu" in str(err.value)
    monkeypatch.setattr(backend, "missing", lambda b: None)
    with pytest.raises(backend.BackendUnavailableError, match="JAX could not start it: AssertionError"):
        backend.configure("gpu")
