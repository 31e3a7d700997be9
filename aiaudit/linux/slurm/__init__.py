"""Slurm: slurm.conf and which one slurmd reads."""
