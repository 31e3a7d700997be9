"""tuned: profiles, includes and the active profile; the [disk] plugin."""
