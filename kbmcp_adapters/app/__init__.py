"""Application wiring: the composition root, settings loading, and the facade with its locks."""
