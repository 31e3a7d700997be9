"""Installed packages: dpkg and rpm databases, apt configuration and lists, pending
security updates, dnf-automatic."""
