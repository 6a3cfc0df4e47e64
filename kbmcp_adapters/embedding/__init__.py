"""The embedder port on fastembed, with the offline default model's files."""
