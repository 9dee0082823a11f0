"""jaxperf: a reproducible study of JAX dispatch and Pallas kernel-loop performance."""

__version__ = "0.1.0"
