"""tuned: profiles, includes and the active profile."""
