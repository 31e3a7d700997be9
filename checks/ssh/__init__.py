"""Checks ``ssh.<name>``, one module each: ``checks/ssh/<name>.py``."""
