"""The patched Equinox as one more path of :func:`jaxperf.diagnosis.diagnose` (the study's cells time it
beside the reader's wrapper and the drop-ins: ``extra_paths=PATHS``)."""

from __future__ import annotations

from jaxperf.diagnosis import carry as carry_mod
from jaxperf.diagnosis.kinds import Step
from jaxperf.diagnosis.paths import NotApplicable, Path

from .load import patched_filter_jit, patched_filter_pmap


def patched(step: Step, args: tuple, carry: carry_mod.Carry, batch_at: int | None) -> Path:
    """Equinox's own wrapper with the study's proposed change patched in
    (:mod:`jaxperf_study.dispatch.eqx_patch`, built beside the shipped Equinox in this process)."""
    if step.kind not in ("eqx.filter_jit", "eqx.filter_pmap"):
        raise NotApplicable(f"the Equinox patch changes eqx.filter_jit and eqx.filter_pmap, not {step.kind}")
    try:
        if step.kind == "eqx.filter_jit":
            fn = patched_filter_jit(step.raw, donate=step.donate)
        elif not step.default_axes:
            raise NotApplicable("in_axes/out_axes other than the default")
        else:
            fn = patched_filter_pmap(step.raw, axis_name=step.axis_name, donate=step.donate)
    except ValueError as err:  # the diff does not apply to the installed Equinox
        raise NotApplicable(str(err)) from err
    name = f"{step.kind}, patched"
    what = "Equinox's wrapper with the change proposed to Equinox (results/equinox_patch/)"
    method = f"{step.kind.split('.')[1]}_patched"
    return Path(name, what, fn, carry_mod.fresh(args), dict(carry), lambda out, a: (out, a), batch_at, method)


PATHS = {"patched Equinox": patched}
