"""Checks ``files.<name>``, one module each: ``checks/files/<name>.py``."""
