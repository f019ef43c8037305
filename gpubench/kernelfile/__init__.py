"""Your own kernel from a YAML file and a .cu file: the declaration, and the Benchmark it becomes."""
