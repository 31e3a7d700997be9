"""Operating modes around a scan: saved reports, --changes-since/--state, syslog."""
