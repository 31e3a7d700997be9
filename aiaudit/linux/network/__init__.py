"""Network state: sockets from /proc/net."""
