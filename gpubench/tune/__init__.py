"""Tuning: a budgeted search for the best configuration of each problem of a sweep, and its
score against a recorded exhaustive sweep (replay).

space: a sweep split into problems and configurations; replay: a recorded sweep (a results
log, a results JSON or a Kernel Tuner cache) that stands in for the GPU; strategies: how the
next configuration is chosen (built-in random and exhaustive, Optuna's samplers when Optuna is
installed); search: the loop that spends a budget and the score over many seeds;
kernel_tuner_cache: Kernel Tuner's cache file format, written and read.

Nothing here touches a GPU, and nothing imports Optuna before a strategy of its is asked for.
"""
