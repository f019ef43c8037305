"""Measuring: compile, make inputs, check, time and audit each variant, on one GPU or many; returns data, shows nothing."""
