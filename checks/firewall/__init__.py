"""Checks ``firewall.<name>``, one module each: ``checks/firewall/<name>.py``."""
