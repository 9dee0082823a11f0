"""Lower a Pallas kernel for a compiler this machine has no device for: ``platforms=['tpu']`` for
Mosaic TPU, ``['cuda']`` on an abstract H100 for Triton and Mosaic GPU. :func:`error_text` is how
every study records a lowering error (a bare exception names where it was raised)."""

from __future__ import annotations

import re
import traceback

from ..errors import check_choice
from .cuda import TARGETS, TRITON_CUSTOM_CALL, cuda_export, raise_site

COMPILERS = ("triton", "mosaic_gpu", "mosaic_tpu")
ABSTRACT_GPU = TARGETS["sm_90"][1]  # an H100: the device kind the GPU compilers see
ABSTRACT_TPU = "TPU v5 lite"  # a v5e: the device kind Mosaic TPU's lowering rules see
#: the custom call each compiler's kernel is exported as: what says which compiler lowered it
CUSTOM_CALLS = {"triton": TRITON_CUSTOM_CALL, "mosaic_gpu": "mosaic_gpu", "mosaic_tpu": "tpu_custom_call"}


def exported_compiler(module_text: str) -> str | None:
    """The compiler whose kernel an exported module calls (``custom_call @<target>``), or None.
    A plain ``pallas_call`` exported for CUDA is a Triton call, whatever was asked for."""
    found = set(re.findall(r"custom_call @([\w$.]+)", module_text))
    for compiler, target in CUSTOM_CALLS.items():
        if any(t == target or t.startswith(target + "_v") for t in found):
            return compiler
    return None


def export_variant(fn, args: tuple, compiler: str):
    """``jax.export`` ``fn`` for ``compiler``'s platform (no such device needed)."""
    from jax import export

    check_choice("compiler", compiler, COMPILERS)
    if compiler == "mosaic_tpu":
        import jax
        from jax.sharding import AbstractDevice, AbstractMesh

        # a lowering rule may ask for the TPU's kind (integer // does): give it a v5e's
        tpu = AbstractDevice(device_kind=ABSTRACT_TPU, num_cores=1, platform="tpu")
        with jax.sharding.use_abstract_mesh(AbstractMesh((1,), ("x",), abstract_device=tpu)):
            return export.export(fn, platforms=["tpu"])(*args)
    with cuda_export(ABSTRACT_GPU, (TRITON_CUSTOM_CALL, "mosaic_gpu", "mosaic_gpu_v2")) as export_for_cuda:
        return export_for_cuda(fn)(*args)


def error_text(err: BaseException) -> str:
    text = str(err).strip()
    if text:
        return text.splitlines()[0][:400]
    # A bare exception (Triton's unroll, Mosaic GPU's missing rule): name where it was raised.
    frame = raise_site(err)
    if frame is None:
        return "(no message, no traceback)"
    path = frame.filename.split("site-packages/")[-1]
    return f"(no message) raised at {path}:{frame.lineno} in {frame.name}: {frame.line}"


def refused(err: BaseException) -> bool:
    """A NotImplementedError, or any error raised while a pallas_call lowered: the compiler refused it."""
    frames = traceback.extract_tb(err.__traceback__)
    return isinstance(err, NotImplementedError) or any(f.name == "_pallas_call_lowering" for f in frames)
