"""How Linux programs decide, one package per component (sysctl, sshd, pam_limits, systemd,
udev, the boot loader, netfilter, packages, the GPU stack...): parsers and deciders that
read only through the :class:`~aiaudit.core.host.Host`, never format output and never
set severity."""
