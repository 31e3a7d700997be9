"""Checks ``kernel.<name>``, one module each: ``checks/kernel/<name>.py``."""
