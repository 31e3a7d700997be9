"""``updates.unattended``: security updates install themselves.

What it checks, in a root that boots (a container image is rebuilt, not upgraded in place):

- Debian/Ubuntu: the ``unattended-upgrades`` package is installed,
  ``APT::Periodic::Update-Package-Lists`` and ``APT::Periodic::Unattended-Upgrade`` are on
  in apt.conf, and ``apt-daily-upgrade.timer`` is enabled.
- RHEL-like: ``dnf-automatic-install.timer`` is enabled, or ``dnf-automatic.timer`` with
  ``apply_updates = yes`` in ``/etc/dnf/automatic.conf``.

How it decides: apt.conf.d files in lexical order, then ``/etc/apt/apt.conf``, last value
wins (:mod:`aiaudit.linux.packages.aptconf`, as apt-pkg ``pkgInitConfig`` reads them); a
periodic interval is on when it is ``always`` or a positive number (of days, or with an
``h``/``d`` unit); timers enabled by their wants links (:mod:`aiaudit.linux.systemd.units`).

Sources: apt.conf(5); apt's ``apt.systemd.daily``; unattended-upgrades' README;
dnf-automatic(8); systemd.unit(5).
"""

from __future__ import annotations

from typing import Iterator

from aiaudit.api import (
    Aspect,
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
from aiaudit.linux.packages import aptconf, dnf
from aiaudit.linux.packages.aptconf import APT_CONF, APT_CONF_D
from aiaudit.linux.packages.installed import DPKG_STATUS, dpkg_version

TIMER = "apt-daily-upgrade.timer"
PERIODIC = ("APT::Periodic::Update-Package-Lists", "APT::Periodic::Unattended-Upgrade")
AUTO_UPGRADES = Snippet.file("/etc/apt/apt.conf.d/20auto-upgrades",
                             'APT::Periodic::Update-Package-Lists "1";\n'
                             'APT::Periodic::Unattended-Upgrade "1";\n', "run it daily")


def run(ctx: CheckContext) -> Iterator[Result]:
    """Security updates install without a person."""
    from aiaudit.linux.rootkind import boots

    host = ctx.host
    if not boots(host):
        yield Result(Status.SKIP, "unattended upgrades", "no init (/sbin/init, systemd) in this "
                     "root: a container image is rebuilt, not upgraded in place")
    elif host.is_dir("/etc/apt") or host.is_file(DPKG_STATUS):
        yield _apt(host)
    elif host.is_dir("/etc/dnf") or host.is_dir("/etc/yum.repos.d"):
        yield _dnf(host)
    else:
        yield Result(Status.SKIP, "unattended upgrades", "neither apt nor dnf in this root")


def _unit_exists(host: Host, name: str) -> bool:
    """A unit file for ``name`` is installed (and not masked)."""
    from aiaudit.linux.systemd.units import load_unit

    try:
        return load_unit(host, name).exists
    except (HostError, ParseError):
        return False


# ------------------------------------------------------------------ apt
def _apt(host: Host) -> Result:
    """unattended-upgrades installed, its periodic settings on, its timer enabled."""
    from aiaudit.linux.systemd.units import is_enabled, unit_evidence

    if not dpkg_version(host, "unattended-upgrades"):
        return _not_installed(host)
    cfg = aptconf.load(host)
    if cfg.problems:
        return Result(Status.ERROR, "unattended-upgrades", "; ".join(cfg.problems[:3]),
                      evidence=tuple(Evidence.file(b) for b in cfg.bad[:3]))
    off, ev = _periodic(cfg.values)
    timer = is_enabled(host, TIMER)
    if not timer.enabled:
        off.append(f"{TIMER}: {timer.reason}")
        ev.append(unit_evidence(host, TIMER, timer))
    if off:
        return Result(Status.FAIL, "unattended-upgrades", "; ".join(off),
                      expected="daily", actual="off", aspect=Aspect.PERSISTED,
                      evidence=tuple(ev), remediation=_apt_fix(host, timer.enabled))
    return Result(Status.PASS, "unattended-upgrades", "unattended-upgrades runs daily "
                  "(lists and upgrades enabled, apt-daily-upgrade.timer enabled)",
                  expected="daily", actual="daily", aspect=Aspect.PERSISTED,
                  evidence=tuple(ev))


def _not_installed(host: Host) -> Result:
    """FAIL: the package is not installed (evidence: the dpkg database, or where it was
    looked for)."""
    pev = (Evidence.file(DPKG_STATUS, None, "unattended-upgrades is not installed")
           if host.is_file(DPKG_STATUS) else
           Evidence.default(f"dpkg database: {DPKG_STATUS.lstrip('/')}", "no such file"))
    return Result(Status.FAIL, "unattended-upgrades", "the unattended-upgrades package is not "
                  "installed: security updates wait for a person",
                  expected="installed and enabled", actual="not installed",
                  aspect=Aspect.PERSISTED, evidence=(pev,), remediation=Remediation(
                      "Install and enable unattended-upgrades.", (
                          Snippet.command("apt-get install unattended-upgrades", "install it"),
                          AUTO_UPGRADES),
                      manual="install the unattended-upgrades package (a package cannot be "
                             "installed into an offline root by a file)"))


def _periodic(values: dict[str, tuple[str, int, str]]) -> tuple[list[str], list[Evidence]]:
    """Which of the :data:`PERIODIC` settings are off (``KEY is VALUE``) and the evidence
    of each (its line, or apt's default)."""
    off: list[str] = []
    ev: list[Evidence] = []
    for key in PERIODIC:
        got = values.get(key.lower())
        if got:
            ev.append(Evidence.file(got[2], got[1], f'{key} "{got[0]}"'))
        if not got or not aptconf.periodic_on(got[0]):
            off.append(f"{key} is {got[0] if got else 'not set'}")
        if not got:
            ev.append(Evidence.default(
                f"{key} in {APT_CONF_D.lstrip('/')}/*, {APT_CONF.lstrip('/')}",
                "not set: apt's default is 0 (off)"))
    return off, ev


def _apt_fix(host: Host, timer_enabled: bool) -> Remediation:
    """The periodic settings, and the timer: enabled where its unit is installed, else
    the command for once apt's units are."""
    snippets = [AUTO_UPGRADES]
    installed = not timer_enabled and _unit_exists(host, TIMER)
    if installed:
        snippets.append(Snippet.enable(TIMER, "the timer that runs it"))
    elif not timer_enabled:
        snippets.append(Snippet.command(f"systemctl enable --now {TIMER}",
                                        "the timer that runs it (shipped by apt)"))
    return Remediation("Turn the periodic runs on.", tuple(snippets),
                       manual="" if timer_enabled or installed else
                       f"enable {TIMER} once apt's units are installed")


# ------------------------------------------------------------------ dnf
def _dnf(host: Host) -> Result:
    """dnf-automatic-install.timer, or dnf-automatic.timer with apply_updates."""
    from aiaudit.linux.systemd.units import is_enabled, unit_evidence

    inst = is_enabled(host, dnf.INSTALL_TIMER)
    auto = is_enabled(host, dnf.TIMER)
    conf = dnf.AUTOMATIC_CONF
    raw = host.try_read_text(conf)
    apply, line, text = dnf.apply_updates(raw or "")
    aev = (Evidence.file(conf, line, text) if line is not None else
           Evidence.file(conf, None, "apply_updates not set (default: no)") if raw is not None
           else Evidence.default(conf.lstrip("/"), "no such file: apply_updates is no"))
    if inst.enabled or (auto.enabled and apply):
        return Result(Status.PASS, "dnf-automatic", "dnf-automatic installs updates "
                      f"({inst.reason if inst.enabled else auto.reason})",
                      expected="enabled", actual="enabled", aspect=Aspect.PERSISTED,
                      evidence=(unit_evidence(host, dnf.INSTALL_TIMER, inst),)
                      if inst.enabled else (unit_evidence(host, dnf.TIMER, auto), aev))
    return Result(Status.FAIL, "dnf-automatic", "no dnf-automatic timer installs updates "
                  f"({inst.reason}; {auto.reason}; apply_updates={'yes' if apply else 'no'})",
                  expected="enabled", actual="disabled", aspect=Aspect.PERSISTED,
                  evidence=(unit_evidence(host, dnf.INSTALL_TIMER, inst),
                            unit_evidence(host, dnf.TIMER, auto), aev),
                  remediation=Remediation("Install dnf-automatic and enable its install timer.", (
                      Snippet.command("dnf install -y dnf-automatic", "install it"),
                      Snippet.command(f"systemctl enable --now {dnf.INSTALL_TIMER}",
                                      "install updates daily"))))


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``updates.unattended``."""
    return [CheckSpec(
        id="updates.unattended", title="Security updates install unattended",
        run=run, params_schema={"type": "object", "additionalProperties": False},
        description="unattended-upgrades installed, APT::Periodic settings on, "
                    "apt-daily-upgrade.timer enabled; or dnf-automatic's timer.")]
