"""Kernel modules: modprobe.d options and module versions read from .ko files."""
