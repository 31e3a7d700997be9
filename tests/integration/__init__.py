"""Integration tests: real root file systems and the shipped deployment examples."""
