"""One module per benchmark suite; each defines BENCHMARK (see gpubench.load.registry)."""
