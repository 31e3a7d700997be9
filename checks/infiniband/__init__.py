"""InfiniBand and RoCE port checks."""
