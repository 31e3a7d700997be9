"""Accounts: passwd, group, nsswitch and sudoers as glibc and sudo read them, and what sudo
decides from its policy (``sudo``)."""
