"""Checks ``time.<name>``, one module each: ``checks/time/<name>.py``."""
