"""From instruction counts to milliseconds: a GPU time model for jax#20909 (issue 23).

Every number it gives is **predicted** from SASS compiled on a CPU and from
published device facts; none is measured, and nothing in it is fitted to
anybody's measurements. One module per concern:

- :mod:`.devices`: the RTX A6000 and H200 facts, each with its source; the assumed ones with a range;
- :mod:`.classes`: SASS opcodes by execution unit and rate;
- :mod:`.counts`: dynamic instructions per warp by class, read from the machine code;
- :mod:`.model`: the arithmetic: issue time, memory time, ``max`` per kernel, sums across kernels;
- :mod:`.compiled`: the model's inputs from real compiles (the triton extra);
- :mod:`.harness`: the reporter's harness's own work (random normals, the mean), as compiled analogues;
- :mod:`.predict`: predicted ms per call for the seed kernel's variants, alone and in his harness;
- :mod:`.reporter`: the check against the reporter's own table and the issue's goals;
- :mod:`.registry`, :mod:`.h200`: predictions registered before the device run, and the join after it;
- :mod:`.report`, :mod:`.figures`, :mod:`.settings`: the notebook's summary, figure and parameters.
"""

from typing import TYPE_CHECKING

from .._lazy import exports

if TYPE_CHECKING:
    from .registry import MODEL_VERSION

# Loaded on first use: importing this package (or its settings) imports no JAX.
__getattr__, __dir__ = exports(
    __name__,
    {
        "MODEL_VERSION": (".registry", "MODEL_VERSION"),
    },
)

__all__ = ["MODEL_VERSION"]
