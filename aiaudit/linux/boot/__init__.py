"""The kernel command line: the running one and what the bootloader passes next boot."""
