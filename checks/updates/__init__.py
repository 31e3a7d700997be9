"""Checks ``updates.<name>``, one module each: ``checks/updates/<name>.py``."""
