"""Storage: fstab, mounts and swaps."""
