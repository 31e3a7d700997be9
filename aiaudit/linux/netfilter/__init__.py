"""Packet filtering: nftables, iptables, ufw and firewalld into one model, and its evaluator."""
