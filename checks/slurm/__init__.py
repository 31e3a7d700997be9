"""Checks ``slurm.<name>``, one module each: ``checks/slurm/<name>.py``."""
