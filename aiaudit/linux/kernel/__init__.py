"""The kernel's own build: its configuration (CONFIG_*)."""
