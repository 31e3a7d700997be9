"""Checks ``limits.<name>``, one module each: ``checks/limits/<name>.py``."""
