"""Pallas -> Triton -> SASS on a CPU: lower, compile, read the machine code, count loop work.

Nothing here runs a kernel: every number is compile time, code size or a count read from the
compiler's output, for a named NVIDIA target, on this machine's CPU. Import the modules by name:

- :mod:`.toolchain`: is the optional ``triton`` extra usable (targets: :mod:`jaxperf.compilers.cuda`);
- :mod:`.capture`: export a Pallas kernel for CUDA and keep its Triton module;
- :mod:`.compile`: that module through ttir, ttgir, llir, PTX and cubin, each stage timed;
- :mod:`.sass`: read the machine code (instructions, loops and their trip counts, the mix, the
  dynamic instructions per program: a static estimate, not a measurement).
"""
