"""Embedders: the offline default (fastembed), named models shipped by packages."""
