"""sysctl: systemd-sysctl and procps semantics, the boot-time applier and kernel defaults."""
