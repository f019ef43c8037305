"""What things are: a suite's declarations, steps, metrics, timing policy, results; plain data, no GPU."""
