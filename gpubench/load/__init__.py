"""What to run: a suite found by name (the registry), and a sweep file read into a validated SweepSpec."""
