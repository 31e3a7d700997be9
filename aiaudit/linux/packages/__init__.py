"""Installed packages: dpkg and rpm databases, apt configuration and lists."""
