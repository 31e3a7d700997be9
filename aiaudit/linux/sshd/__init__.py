"""OpenSSH's sshd: configuration as sshd computes it, compiled-in defaults, deprecated keywords."""
