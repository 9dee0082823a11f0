"""A reader's Pallas kernel as the engine sees it: a *factory* ``make(form, T, *, interpret=False)
-> (fn, args)``, loaded and checked. ``fn(*args)`` is jittable and holds one Pallas kernel whose loop
is written with :func:`jaxperf.kernel_loop` in ``form``; ``T`` sets the loop's length; ``args`` are
arrays or ``jax.ShapeDtypeStruct``\\ s; ``interpret=True`` asks for a size Pallas' interpreter runs
on a CPU. Optional: a ``compiler`` keyword (``"triton"``, ``"mosaic_gpu"``, ``"mosaic_tpu"``), a
``forms`` attribute (else :data:`jaxperf.fixes._kernel_loop.KERNEL_LOOP_FORMS`), and
``make.reference(*args)``, the expected output in plain JAX (else forms are checked against fori)."""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..compilers.lowering import error_text
from ..errors import bad_value, check_ints
from ..fixes._kernel_loop import KERNEL_LOOP_FORMS, recording

FACTORY_HELP = "an importable 'package.module:factory', factory(form, T, *, interpret=False) -> (fn, args)"


class FactoryError(ValueError):
    """The reader's factory raised: one line naming the factory, the form and T (``full``: the text)."""

    def __init__(self, kernel: Kernel, form: str, T: int, err: BaseException) -> None:
        self.full, short = f"{type(err).__name__}: {err}", f"{type(err).__name__}: {error_text(err)}"
        super().__init__(f"kernel={kernel.path!r} raised at form={form!r}, T={T}: {short}")


@dataclass(frozen=True)
class Kernel:
    """A loaded factory: its path, the callable, the forms it takes, whether it builds per compiler."""

    path: str
    make: Callable[..., Any]
    forms: tuple[str, ...]
    per_compiler: bool
    reference: Callable[..., Any] | None = None  # make.reference(*args): the expected output

    @property
    def name(self) -> str:
        module, _, attr = self.path.partition(":")
        return module.rsplit(".", 1)[-1] if attr == "make" else attr

    def build(self, form: str, T: int, *, interpret: bool = False, compiler: Any = None) -> tuple[Any, tuple]:
        """``make(form, T, interpret=...)``, with ``compiler=`` when the factory takes one."""
        options: dict[str, Any] = {"interpret": interpret}
        if compiler is not None and self.per_compiler:
            options["compiler"] = compiler
        built = self.make(form, T, **options)
        if not (isinstance(built, tuple) and len(built) == 2 and callable(built[0])):
            raise bad_value("kernel", self.path, f"{FACTORY_HELP}; it returned {type(built).__name__}")
        fn, args = built
        return fn, tuple(args)


def load(path: Any) -> Kernel:
    """Import ``"package.module:factory"``; ValueError naming ``kernel`` when it does not import,
    has no such attribute, or is not a callable taking ``(form, T, *, interpret=...)``."""
    if not isinstance(path, str) or path.count(":") != 1 or not all(path.split(":")):
        raise bad_value("kernel", path, FACTORY_HELP)
    module_name, attr = path.split(":")
    try:
        module = importlib.import_module(module_name)
    except Exception as err:  # noqa: BLE001 - any import failure is the reader's bad input
        why = f"importing {module_name!r} failed: {type(err).__name__}: {err}"
        raise bad_value("kernel", path, f"{FACTORY_HELP} ({why})") from err
    make = getattr(module, attr, None)
    if not callable(make):
        raise bad_value("kernel", path, f"{FACTORY_HELP} ({module_name!r} has no callable {attr!r})")
    try:
        params: Mapping[str, inspect.Parameter] = inspect.signature(make).parameters
    except (TypeError, ValueError):
        params = {}
    if params and "interpret" not in params and not any(p.kind is p.VAR_KEYWORD for p in params.values()):
        raise bad_value("kernel", path, f"{FACTORY_HELP} ({attr} takes no 'interpret' keyword)")
    per_compiler = "compiler" in params or any(p.kind is p.VAR_KEYWORD for p in params.values())
    forms = tuple(getattr(make, "forms", KERNEL_LOOP_FORMS))
    reference = getattr(make, "reference", None)
    return Kernel(path, make, forms, per_compiler, reference if callable(reference) else None)


def check_forms(kernel: Kernel, forms: Sequence[str]) -> list[str]:
    """Each form's base name must be one the factory takes (ValueError naming ``form``);
    ``"fori"`` must be among them: every form is checked against it."""
    if isinstance(forms, str) or not forms:
        raise bad_value("forms", forms, "a non-empty list of loop forms, e.g. ['python', 'fori', 'fori u=4']")
    for form in forms:
        if str(form).partition(" u=")[0] not in kernel.forms:
            takes = f"a form {kernel.path} takes: one of {list(kernel.forms)}, with an optional ' u=<k>'"
            raise bad_value("form", form, takes)
    if "fori" not in forms and "fori u=1" not in forms:
        need = "a list holding 'fori' (the reference every form is checked against)"
        raise bad_value("forms", list(forms), need)
    return [str(f) for f in forms]


def check_plan(kernel: Kernel, forms: Sequence[str], Ts: Sequence[int]) -> None:
    """Build every (form, T), interpreted and compiled (nothing traced), so the factory's own errors
    surface before any work, prefixed with the kernel and the point."""
    for T in check_ints("T", Ts):
        for form in forms:
            for interpret in (True, False):
                try:
                    kernel.build(form, T, interpret=interpret)
                except ValueError as err:
                    raise ValueError(f"kernel={kernel.path!r}, form={form!r}, T={T}: {err}") from err
                except Exception as err:  # noqa: BLE001 - any exception of the factory's is bad input
                    raise FactoryError(kernel, form, T, err) from err


def traced(fn: Callable[..., Any], args: tuple) -> tuple[int | None, int | None]:
    """(loop steps per program, programs per call) of ``fn(*args)``: the traced loops' trips added up
    (None if one has traced bounds), and the ``pallas_call`` grid's product (None unless one)."""
    import jax

    with recording() as calls:
        jaxpr = jax.make_jaxpr(fn)(*args).jaxpr
    trips = [c.trips for c in calls]
    steps = None if not trips or any(t is None for t in trips) else int(sum(trips))  # type: ignore[arg-type]
    grids = _grids(jaxpr, [])
    programs = int(np.prod(grids[0])) if len(grids) == 1 else None
    return steps, programs


def _grids(jaxpr: Any, out: list[tuple[int, ...]]) -> list[tuple[int, ...]]:
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "pallas_call":
            out.append(tuple(int(g) for g in eqn.params["grid_mapping"].grid))
            continue
        for param in eqn.params.values():
            for sub in param if isinstance(param, (list, tuple)) else [param]:
                inner = getattr(sub, "jaxpr", sub)
                if hasattr(inner, "eqns"):
                    _grids(inner, out)
    return out


def materialize(args: tuple, seed: int = 0) -> tuple:
    """Arrays for ``args``: each ShapeDtypeStruct as standard-normal floats or zeros, made by NumPy
    (``default_rng(seed + i)``; a TPU compiles a random-number program for seconds per shape)."""
    import jax
    import jax.numpy as jnp

    out = []
    for i, a in enumerate(args):
        if isinstance(a, jax.ShapeDtypeStruct) and jnp.issubdtype(a.dtype, jnp.floating):
            a = jnp.asarray(np.random.default_rng(seed + i).standard_normal(a.shape, np.float32), a.dtype)
        elif isinstance(a, jax.ShapeDtypeStruct):
            a = jnp.zeros(a.shape, a.dtype)
        out.append(a)
    return tuple(out)


def tolerance(dtype: Any) -> float:
    """Relative tolerance of "the same result" (a form may sum in another order): 1e-2 for 16 bits."""
    return 1e-2 if np.dtype(dtype).itemsize <= 2 else 1e-4


def difference(out: Any, ref: Any) -> float:
    """Largest |out - ref| over the largest |ref| (inf on a shape mismatch or a non-finite value)."""
    import jax

    worst = 0.0
    for o, r in zip(jax.tree.leaves(out), jax.tree.leaves(ref), strict=True):
        o, r = np.asarray(o, np.float64), np.asarray(r, np.float64)
        if o.shape != r.shape or not np.all(np.isfinite(o)):
            return float("inf")
        scale = max(np.max(np.abs(r), initial=0.0), 1e-30)
        worst = max(worst, float(np.max(np.abs(o - r), initial=0.0) / scale))
    return worst
