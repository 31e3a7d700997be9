"""Accounts: passwd, group, nsswitch and sudoers as glibc and sudo read them."""
