"""Why fori_loop is slower on XLA:CPU, read from the compiler's own output (optimized HLO):
:func:`evidence` counts the programs of :data:`VARIANTS` (:func:`.xla.read_program`), :func:`verdict`
says what the Python loop's and ``fori_loop``'s counts show in the one line summary.md prints."""

from __future__ import annotations

import ast
from collections.abc import Iterable
from typing import Any

from . import kernels
from .variant import KernelVariant
from .xla import read_program

# The variants whose programs are read: the two, an unroll of each kind, and the hand hoist.
VARIANTS = (
    ("python", 1),
    ("fori", 1),
    ("fori", 8),
    ("hand_unrolled", 8),
    ("hoisted", 1),
    ("scalar_carry", 1),
)


def evidence(kernel: KernelVariant, variants: Iterable[tuple[str, int]] = VARIANTS) -> list[dict[str, Any]]:
    """:func:`read_program` of ``kernel`` in each (loop form, unroll), one row each (loops flattened
    to the first), compiled for this process' default backend (named in the ``compiler`` column)."""
    import jax

    rows = []
    for form, unroll in variants:
        variant = kernel.replace(loop_form=form, unroll=unroll)
        fn, args = kernels.build_xla(variant)
        counts = read_program(fn.lower(*args).compile().as_text())  # the optimized HLO, this backend's
        first = counts["loops"][0] if counts["loops"] else {}
        rows.append(
            dict(
                compiler=f"XLA:{jax.default_backend().upper()}",
                kernel=variant.kernel,
                T=variant.T,
                variant=variant.name,
                **{k: v for k, v in counts.items() if k != "loops"},
            )
            | {f"loop_{k}": v for k, v in first.items()}
        )
    return rows


def verdict(rows: list[dict[str, Any]]) -> str:
    """One line for summary.md from :func:`evidence` rows holding ``python`` and ``fori u=1``."""
    by = {r["variant"]: r for r in rows}
    if "python" not in by or "fori u=1" not in by:
        return "XLA: not read (needs the Python loop and fori_loop(unroll=1))."
    py, fori = by["python"], by["fori u=1"]
    fusions = py["full_size_fusions_outside_loops"]
    if isinstance(fusions, str):  # read back from the records' CSV: the list's repr
        fusions = ast.literal_eval(fusions) if fusions.startswith("[") else [fusions]
    inside = "inside" if fori.get("loop_body_reduces") else "not inside"

    def n(value: Any) -> Any:  # a count read back from CSV as a float prints as the count it is
        return int(value) if isinstance(value, float) and value.is_integer() else value

    return (
        f"{fori.get('compiler', 'XLA')}, seed T={fori['T']}: in fori_loop's program the reduction is {inside} the while body "
        f"({n(fori.get('loop_body_reduces', 0))} reduce there, {n(fori['reduces_outside_loops'])} hoisted before it); the body's "
        f"{n(fori.get('loop_body_fusions', 0))} fusion(s) make {n(fori.get('loop_carry_passes_per_iteration', 0))} pass(es) over the "
        f"{fori.get('loop_carry', '?')} carry per iteration x {n(fori.get('loop_trip_count', '?'))} trips = "
        f"{n(fori['carry_passes_per_call'])} passes per call. The Python loop's program has {n(py['while_loops'])} loops, "
        f"{n(py['reduces_outside_loops'])} reduce(s) and {len(fusions)} fusion(s) of the "
        f"{py['output']} output's size ({', '.join(fusions)}): its per-step adds "
        "run on per-block scalars, then one broadcast writes the output." + _scalar_carry_sentence(by, fori)
    )


def _scalar_carry_sentence(by: dict[str, dict[str, Any]], fori: dict[str, Any]) -> str:
    """The scalar-carry fix in the same counts, when it was read."""
    sc = by.get("scalar_carry u=1")
    if sc is None:
        return ""
    return (
        f" Carrying that per-block scalar through fori_loop instead (scalar_carry) shrinks the carry to "
        f"{sc.get('loop_carry', '?')}: {sc['carry_elements_written_per_call']:,} carry elements written per call "
        f"against fori_loop's {fori['carry_elements_written_per_call']:,}."
    )
