"""The kernel's own build: its configuration (CONFIG_*) and the defaults it decides
(transparent hugepages)."""
