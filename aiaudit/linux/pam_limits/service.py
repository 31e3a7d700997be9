"""A login service as pam_limits sees it: is it there, and does it run PAM at all.

sshd runs the PAM session stack only with ``UsePAM yes`` (sshd_config(5); the compiled-in
default is ``no``).  The value comes from the full sshd_config model
(:func:`aiaudit.linux.sshd.effective.effective_setting`, what ``sshd -T`` prints) when it
can be imported, else from a simple reading of sshd_config.
"""

from __future__ import annotations

from typing import Any, Callable

from aiaudit.core.errors import HostError, ParseError
from aiaudit.core.host import Host
from aiaudit.core.model import Evidence
from aiaudit.linux.pam_limits.stack import pam_stack

SSHD_CONFIG = "/etc/ssh/sshd_config"
MAX_INCLUDE_DEPTH = 4
"""``Include`` nesting the simple reading follows."""


def sshd_use_pam(host: Host) -> tuple[bool | None, Evidence | None]:
    """Does sshd run PAM?  ``None`` when sshd_config is absent.

    Uses the full sshd_config model (:func:`aiaudit.linux.sshd.effective.effective_setting`,
    what ``sshd -T`` prints) when it can be imported, else a simple reading: first value
    wins, ``Include`` globs followed, lines under ``Match`` ignored (``UsePAM`` is not
    allowed there), compiled-in default ``no``."""
    effective_setting: Callable[[Host, str], Any] | None
    try:
        from aiaudit.linux.sshd.effective import effective_setting
    except ImportError:
        effective_setting = None
    if effective_setting is not None:
        try:
            s = effective_setting(host, "UsePAM")
        except Exception:  # the sshd model's failure must not break the limits checks
            s = None
        if s is not None and s.value is not None:
            d = s.directive
            ev = (Evidence.file(d.file, d.line, d.raw) if d is not None else
                  Evidence.default("sshd compiled-in default UsePAM", s.value))
            return s.value.lower() == "yes", ev
    return simple_use_pam(host)


def simple_use_pam(host: Host) -> tuple[bool | None, Evidence | None]:
    """``UsePAM`` from sshd_config without the full model (see :func:`sshd_use_pam`)."""
    text = host.try_read_text(SSHD_CONFIG)
    if text is None:
        return None, None
    got = _scan(host, SSHD_CONFIG, text, 0)
    if got is None:
        return False, Evidence.default("sshd compiled-in default UsePAM", "no")
    return got


def _scan(host: Host, path: str, text: str, depth: int) -> tuple[bool, Evidence] | None:
    """The first ``UsePAM`` of ``text`` (and the files it includes) before any ``Match``."""
    for n, raw in enumerate(text.splitlines(), 1):
        words = raw.split("#", 1)[0].replace("=", " ").split()
        if not words:
            continue
        key = words[0].lower()
        if key == "match":
            return None  # later lines belong to Match blocks
        if key == "include" and depth < MAX_INCLUDE_DEPTH:
            got = _scan_includes(host, words[1:], depth)
            if got:
                return got
        if key == "usepam" and len(words) > 1:
            return words[1].lower() == "yes", Evidence.file(path, n, raw.strip())
    return None


def _scan_includes(host: Host, patterns: list[str], depth: int
                   ) -> tuple[bool, Evidence] | None:
    for pat in patterns:
        full = pat if pat.startswith("/") else f"/etc/ssh/{pat}"
        for inc in host.glob(full):
            sub = host.try_read_text(inc)
            if sub is not None:
                got = _scan(host, inc, sub, depth + 1)
                if got:
                    return got
    return None


def not_applicable(host: Host, service: str) -> str | None:
    """Why ``service`` has no sessions to judge on this root (``sshd is not installed``, no
    PAM configuration at all), or ``None``.  ``limits.pam_stack`` and ``limits.effective``
    both skip with this reason, so they tell the same story."""
    if service == "sshd":
        if not (host.exists("/usr/sbin/sshd") or host.exists(SSHD_CONFIG)):
            return "sshd is not installed"
        if sshd_use_pam(host)[0] is False:
            return None  # sshd runs, without PAM: both checks report that
    try:
        st = pam_stack(host, service)
    except (HostError, ParseError):
        return None  # reported by the checks themselves
    if st.file is None:
        return f"no PAM configuration for {service} (neither /etc/pam.d/{service} nor 'other')"
    return None
