"""Checks ``pci.<name>``, one module each: ``checks/pci/<name>.py``."""
