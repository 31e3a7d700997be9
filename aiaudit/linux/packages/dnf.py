"""dnf-automatic (dnf-automatic(8)): whether its timers install updates.

``dnf-automatic-install.timer`` always installs; ``dnf-automatic.timer`` installs only with
``apply_updates = yes`` in ``/etc/dnf/automatic.conf`` (``[commands]``; default ``no``).
"""

from __future__ import annotations

AUTOMATIC_CONF = "/etc/dnf/automatic.conf"
INSTALL_TIMER = "dnf-automatic-install.timer"
TIMER = "dnf-automatic.timer"
_TRUE = ("yes", "true", "1", "on")


def apply_updates(text: str) -> tuple[bool, int | None, str]:
    """``(apply, line, text of the line)`` of the last ``apply_updates`` assignment of
    automatic.conf (``(False, None, "")`` without one: the default is no)."""
    apply, where, raw = False, None, ""
    for n, line in enumerate(text.splitlines(), 1):
        k, _, v = line.partition("=")
        if k.strip() == "apply_updates":
            apply = v.strip().lower() in _TRUE
            where, raw = n, line.strip()
    return apply, where, raw
