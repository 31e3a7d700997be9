"""pam_limits: limits.conf(5) and the PAM stacks that load the module."""
