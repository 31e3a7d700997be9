"""Checks ``irq.<name>``, one module each: ``checks/irq/<name>.py``."""
