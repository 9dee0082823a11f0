"""Two Pallas kernels written the way Pallas' own docs and ops write them, not by this study (a
blocked matmul with a k-loop, a flash-attention forward), each a factory the loop study's engine
runs as a reader's: ``python -m jaxperf loops jaxperf.loops.examples.matmul:make``."""
