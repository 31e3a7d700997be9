"""Checks ``inventory.<name>``, one module each: ``checks/inventory/<name>.py``."""
