"""``updates.security_pending``: no security update waits to be installed.

What it checks: every installed package of the dpkg status database against the versions in
the downloaded lists of the ``-security`` suites under ``/var/lib/apt/lists``: what
``apt list --upgradable`` would show from those suites, without running apt.

How it decides (:mod:`aiaudit.linux.packages.security`): Debian version order
(python-debian, deb-version(7)); an ``Architecture: all`` candidate matches any installed
architecture.  Fails when a package has a newer version in a security list, when the newest
security list is older than ``max_list_age_days`` (later fixes are unknown here), or when no
security suite is downloaded at all; skips without a dpkg database (RPM update metadata is
SQLite or XML that needs the repository's own libraries: out of scope) or without lists.

Sources: deb-version(7), deb-packages(5), sources.list(5); apt-pkg ``URItoFileName`` (list
file names).
"""

from __future__ import annotations

import time
from typing import Iterator

from aiaudit.api import (
    CheckContext,
    CheckSpec,
    Evidence,
    Remediation,
    Result,
    Snippet,
    Status,
    hookimpl,
)
from aiaudit.core.errors import HostError, ParseError
from aiaudit.core.host import Host
from aiaudit.linux.packages import aptlists, security
from aiaudit.linux.packages.installed import DPKG_STATUS, dpkg_any_installed
from aiaudit.linux.packages.security import LISTS, Pending

SUBJECT = "security updates"
SHOWN = 10
"""Pending packages named in the message (the rest are counted)."""


def run(ctx: CheckContext) -> Iterator[Result]:
    """FAIL when an installed package has a newer version in a -security list."""
    host, p = ctx.host, ctx.params
    lists, early = _lists(host)
    if early is not None:
        yield early
        return
    sec = [n for n in lists if aptlists.is_security_suite(n)]
    if not sec:
        yield _no_security_suite(host, lists)
        return
    found = security.pending_updates(host, sec)
    if found.problems and not found.updates:
        yield Result(Status.ERROR, SUBJECT, "; ".join(found.problems[:3]))
        return
    yield _verdict(found, sorted(sec), _stale(found.newest, time.time(), p["max_list_age_days"]))


def _lists(host: Host) -> tuple[list[str], Result | None]:
    """The downloaded package lists, or the result that ends the check first: no
    readable dpkg database, no installed package, no list."""
    try:
        any_installed = dpkg_any_installed(host)
    except (HostError, ParseError) as exc:
        return [], Result(Status.ERROR, SUBJECT, f"dpkg database unreadable: {exc}")
    if not any_installed:
        return [], Result(Status.SKIP, SUBJECT, "no dpkg database (not a Debian-based system, "
                          "or a minimal image); RPM update metadata is out of scope here")
    lists = security.package_lists(host)
    if not lists:
        return [], Result(Status.SKIP, SUBJECT, "no downloaded package lists in "
                          "var/lib/apt/lists (apt-get update never ran here, or the image "
                          "removed them): pending updates cannot be judged offline")
    return lists, None


def _no_security_suite(host: Host, lists: list[str]) -> Result:
    """The lists hold no security suite: configured but not downloaded, or not
    configured."""
    suites = ", ".join(sorted({got[0] for n in lists if (got := aptlists.suite_of(n))}))
    configured = security.security_in_sources(host)
    why = (f"{configured} names a security suite, but its lists were never downloaded "
           "(apt-get update failed, or the lists were pruned): pending security updates "
           "cannot be known" if configured else
           "this host does not even download security updates")
    return Result(Status.FAIL, SUBJECT, "the apt lists hold no -security suite "
                  f"(suites: {suites}): {why}",
                  expected="a -security suite in sources.list", actual="none",
                  evidence=(Evidence.file(f"{LISTS}/{lists[0]}"),), remediation=Remediation(
                      "Add the distribution's security suite to the apt sources (Debian: "
                      "`deb https://security.debian.org/debian-security <codename>-security "
                      "main`), then `apt-get update`."))


def _stale(newest: float, now: float, max_days: float) -> str:
    """The message's note when the newest list is older than ``max_days`` (else ``""``)."""
    age_days = (now - newest) / 86400 if newest else None
    if age_days is None or age_days <= max_days:
        return ""
    return (f"; the newest security list is {age_days:.0f} days old, so later fixes are not "
            "known here")


def _verdict(found: Pending, sec: list[str], stale: str) -> Result:
    """FAIL with the pending packages, FAIL for stale lists, else PASS."""
    pending = found.updates
    data = {"pending": {k: {"installed": v[0], "candidate": v[1]} for k, v in
                        sorted(pending.items())}, "lists": sec}
    if pending:
        shown = ", ".join(f"{k} {v[0]} -> {v[1]}" for k, v in sorted(pending.items())[:SHOWN])
        more = f" and {len(pending) - SHOWN} more" if len(pending) > SHOWN else ""
        return Result(Status.FAIL, SUBJECT, f"{len(pending)} installed package(s) have a newer "
                      f"version in a security suite: {shown}{more}{stale}",
                      expected="0 pending", actual=str(len(pending)), data=data,
                      evidence=(Evidence.file(DPKG_STATUS),
                                *(Evidence.file(f"{LISTS}/{n}") for n in sec[:4])),
                      remediation=Remediation(
                          "Install the pending security updates (and reboot if the kernel or "
                          "libc is among them).", (Snippet.command("apt-get update && apt-get "
                                                                   "upgrade", "install updates"),)))
    if stale:
        return Result(Status.FAIL, SUBJECT, "no pending security update in the downloaded "
                      f"lists{stale}", expected="0 pending, lists fresh", actual="lists stale",
                      data=data, remediation=Remediation(
                          "Refresh the lists (`apt-get update`) and enable unattended "
                          "upgrades."))
    return Result(Status.PASS, SUBJECT, "every installed package is at the newest version of "
                  f"the {len(sec)} security list(s)", expected="0 pending", actual="0",
                  data=data)


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``updates.security_pending``."""
    return [CheckSpec(
        id="updates.security_pending", title="No security update is pending",
        run=run,
        params_schema={"type": "object", "additionalProperties": False,
                       "properties": {"max_list_age_days": {
                           "type": "number", "minimum": 0, "default": 14}}},
        description="dpkg status against the -security suites' Packages lists in "
                    "/var/lib/apt/lists (plain, .gz, .xz), Debian version order "
                    "(python-debian).")]
