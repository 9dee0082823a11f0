"""TPU generations and topologies, compiled for on a CPU-only machine through libtpu
(``get_topology_desc(platform="tpu", ...)`` describes a slice without owning one). libtpu reads
its flags (``LIBTPU_INIT_ARGS``) once, when it starts, so :func:`prepare` must run before anything
starts libtpu (the first :func:`topology`, or ``jax.devices()`` where libtpu is installed)."""

from __future__ import annotations

import dataclasses
import functools
import importlib.metadata
import importlib.util
import os
import re
import tempfile
from pathlib import Path
from typing import Any

from ...errors import bad_value

# Generation -> the topology compiled for (the smallest slice libtpu accepts that
# matches the study: v3:2x2 is the equinox#192 reporter's v3-8).
GENERATIONS: dict[str, str] = {"v3": "v3:2x2", "v4": "v4:2x2x1", "v5e": "v5e:2x2", "v6e": "v6e:2x2"}
# An accelerator type for libtpu's host discovery (any valid one: no TPU host is used).
ACCELERATOR_TYPE = "v5litepod-1"
NOT_INSTALLED = "not measured: libtpu not installed"


@dataclasses.dataclass(frozen=True)
class LibtpuStatus:
    """Whether libtpu can be used here, and why not."""

    available: bool
    version: str | None
    reason: str


# Set to 1 to run the study as on a machine without the tpu extra (the not-installed path).
HIDE_ENV = "JAXPERF_HIDE_LIBTPU"


def status() -> LibtpuStatus:
    """libtpu's presence (the ``tpu`` extra), without starting it."""
    if os.environ.get(HIDE_ENV) == "1":
        return LibtpuStatus(False, None, NOT_INSTALLED + f" ({HIDE_ENV}=1)")
    if importlib.util.find_spec("libtpu") is None:
        return LibtpuStatus(False, None, NOT_INSTALLED + " (pip install -e '.[tpu]')")
    try:
        version = importlib.metadata.version("libtpu")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    return LibtpuStatus(True, version, "")


def resolve(name: str) -> tuple[str, str]:
    """``(generation, topology name)`` for a generation (``"v5e"``) or its topology (``"v5e:2x2"``);
    ValueError listing the accepted names for anything else (``"TPU v3"``, ``"v5litepod-8"``)."""
    if name in GENERATIONS:
        return name, GENERATIONS[name]
    if name in GENERATIONS.values():
        return name.split(":")[0], name
    accepted = (*GENERATIONS, *GENERATIONS.values())
    raise bad_value("generation", name, "one of " + ", ".join(repr(n) for n in accepted))


@dataclasses.dataclass(frozen=True)
class LibtpuConfig:
    """The flags libtpu started with in this process (fixed once it starts)."""

    dump_dir: Path | None


_CONFIG: LibtpuConfig | None = None


def prepare(dump_dir: str | os.PathLike | None) -> LibtpuConfig:
    """Set libtpu's start-up environment: the bundle dump folder. Call before libtpu starts. A
    second call with the same folder is a no-op; with another RuntimeError (libtpu cannot restart).
    A folder already in ``LIBTPU_INIT_ARGS`` (a parent's, set before this process started) is the
    one libtpu dumps to; a TPU this process opened without one dumps nothing (too late)."""
    global _CONFIG
    from ...private_api import jax_backends_initialized

    inherited = re.search(r"--xla_jf_dump_to=(\S+)", os.environ.get("LIBTPU_INIT_ARGS", ""))
    if _CONFIG is None and (inherited or jax_backends_initialized()):
        import jax  # started already (or the dump inherited): asking its backend starts nothing new

        dump_dir = inherited[1] if inherited else None if jax.default_backend() == "tpu" else dump_dir
    config = LibtpuConfig(Path(dump_dir).resolve() if dump_dir else None)
    if _CONFIG is not None:
        if _CONFIG != config:
            raise RuntimeError(f"libtpu already prepared with {_CONFIG}; restart the kernel to use {config}.")
        return config
    flags = []
    if config.dump_dir is not None and not inherited:
        config.dump_dir.mkdir(parents=True, exist_ok=True)
        # Only the final schedule: the full dump is ~300 files per compile.
        flags += [f"--xla_jf_dump_to={config.dump_dir}", "--xla_jf_dump_llo_pass_label_regex=final_bundles"]
    os.environ["LIBTPU_INIT_ARGS"] = " ".join([os.environ.get("LIBTPU_INIT_ARGS", ""), *flags]).strip()
    # No TPU host here: name one so libtpu skips host discovery (and its error log),
    # and let several processes (tests, notebooks) load libtpu at once.
    os.environ.setdefault("TPU_ACCELERATOR_TYPE", ACCELERATOR_TYPE)
    os.environ.setdefault("TPU_WORKER_HOSTNAMES", "localhost")
    os.environ.setdefault("ALLOW_MULTIPLE_LIBTPU_LOAD", "1")
    _CONFIG = config
    return config


def prepare_dump() -> LibtpuConfig:
    """This process's libtpu set-up, prepared with a fresh dump folder if it was not yet."""
    return _CONFIG or prepare(tempfile.mkdtemp(prefix="jaxperf-bundles-"))


def config() -> LibtpuConfig | None:
    """What :func:`prepare` set in this process (None: not prepared)."""
    return _CONFIG


@functools.cache
def topology(name: str) -> Any:
    """The ``TopologyDescription`` of a generation or topology name (see :func:`resolve`);
    ValueError for an unknown name, RuntimeError when libtpu is not installed."""
    _, topology_name = resolve(name)
    if not status().available:
        raise RuntimeError(NOT_INSTALLED)
    if _CONFIG is None:
        prepare(None)
    from jax.experimental import topologies

    return topologies.get_topology_desc(platform="tpu", topology_name=topology_name)


def mesh(name: str) -> Any:
    """A one-device ``Mesh`` (axis ``x``) on the topology's first device."""
    from jax.sharding import Mesh

    return Mesh(list(topology(name).devices)[:1], ("x",))


def placed(args: Any, mesh_: Any) -> Any:
    """``ShapeDtypeStruct`` copies of ``args`` (a pytree) replicated on ``mesh_``."""
    import jax
    from jax.sharding import NamedSharding, PartitionSpec

    sharding = NamedSharding(mesh_, PartitionSpec())
    return jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=sharding), args)
