"""Checks ``user.<name>``, one module each: ``checks/user/<name>.py``."""
