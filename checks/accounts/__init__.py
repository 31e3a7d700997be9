"""Checks ``accounts.<name>``, one module each: ``checks/accounts/<name>.py``."""
