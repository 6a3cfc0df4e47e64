"""What the tests of collections share: the smallest `[[collections]]` config (two
folders, ``alpha`` and ``beta``, beside the config file)."""

TWO_COLLECTIONS = """
[[collections]]
name = "alpha"
path = "alpha"

[[collections]]
name = "beta"
path = "beta"
"""
