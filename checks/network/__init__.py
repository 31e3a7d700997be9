"""Checks ``network.<name>``, one module each: ``checks/network/<name>.py``."""
