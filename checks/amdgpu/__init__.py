"""Checks ``amdgpu.<name>``, one module each: ``checks/amdgpu/<name>.py``."""
