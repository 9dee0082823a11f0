"""Two Pallas kernels written the way Pallas' own docs and ops write them, not by this study:
a blocked matmul with a k-loop (:mod:`.matmul`) and a flash-attention forward (:mod:`.flash_attention`).

Each writes its loop once with :func:`jaxperf.kernel_loop` and exposes a factory
``make(form, T, *, interpret=False) -> (fn, args)``, so the loop study's engine runs them as
it runs a reader's kernel: ``python -m jaxperf loops jaxperf.loops.examples.matmul:make``.
"""
