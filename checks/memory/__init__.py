"""Checks ``memory.<name>``, one module each: ``checks/memory/<name>.py``."""
