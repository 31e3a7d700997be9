"""Checks ``cpu.<name>``, one module each: ``checks/cpu/<name>.py``."""
