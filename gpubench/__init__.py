"""gpubench: compile, verify, time and sweep CUDA kernels from the command line."""

__version__ = "0.1.0"
