"""Embedders: the offline default (fastembed), named models shipped by packages, a stand-in."""
