"""Checks ``gpu.<name>``, one module each: ``checks/gpu/<name>.py``."""
