"""Fixes: grouping results by fix, and fix bundles (install.sh, playbook)."""
