"""Root-bound file access, the walk, and the one exclusion predicate."""
