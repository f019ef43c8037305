"""gpubench: compile, verify, time and sweep CUDA kernels from the command line."""

__version__ = "0.1.0"

# The name gpubench is installed under. The package index's `gpubench` is another project:
# an install hint that named it would fetch that one (with torch) instead of our extras.
DISTRIBUTION = "gpubench-studies"


def install_hint(extra: str) -> str:
    """The command that installs one of gpubench's optional extras."""
    return f"pip install '{DISTRIBUTION}[{extra}]'"
