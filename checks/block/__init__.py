"""Checks ``block.<name>``, one module each: ``checks/block/<name>.py``."""
