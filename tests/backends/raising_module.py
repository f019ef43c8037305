"""A module that raises on import, as a backend whose packages do not match would."""

raise AttributeError("module 'cuda' has no attribute 'bindings'")
