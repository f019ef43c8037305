"""Results at rest: where a run's files go, the history store, merged logs, comparisons, the ceilings cache."""
