"""Checks ``containers.<name>``, one module each: ``checks/containers/<name>.py``."""
