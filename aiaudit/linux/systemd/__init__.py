"""systemd: unit files, drop-ins, enablement, what enabled services run at boot."""
