"""Application wiring: the facade, the composition root, configuration, the writer lock."""
