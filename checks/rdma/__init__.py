"""Checks ``rdma.<name>``, one module each: ``checks/rdma/<name>.py``."""
