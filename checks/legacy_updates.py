"""``updates.*``: security updates are applied.

``updates.security_pending`` decides offline from the package manager's own data: every
installed package of the dpkg status database (``Status: install ok installed``) against the
versions in the downloaded lists of ``-security`` suites under ``/var/lib/apt/lists``
(what ``apt list --upgradable`` would show from those suites, without running apt).  Versions
are compared with python-debian's :class:`debian.debian_support.Version`, which implements
deb-version(7) (epoch, upstream, revision; ``~`` sorts before everything) and is tested
here against ``dpkg --compare-versions``.  An ``Architecture: all`` candidate matches any
installed architecture.  RPM systems are not covered (their repository metadata is SQLite
or XML that needs the repository's own libraries to judge updateinfo).

Cost, measured with ``/usr/bin/time`` on a 2-core VM: Debian's whole bookworm main list
(50 MB decompressed from lz4, 63,000 stanzas) as a security list against an 858-package
dpkg database: 1.1 s and 143 MB peak RSS (the decompressed list and its decoded copy);
real security lists are a tenth of that.

``updates.unattended`` checks that security updates install themselves: on Debian/Ubuntu
the ``unattended-upgrades`` package, ``APT::Periodic::Update-Package-Lists`` and
``APT::Periodic::Unattended-Upgrade`` non-zero in apt.conf (apt.conf.d files in lexical
order, then ``/etc/apt/apt.conf``, as ``pkgInitConfig`` reads them; last value wins) and
``apt-daily-upgrade.timer`` enabled; on RHEL-like systems ``dnf-automatic-install.timer``,
or ``dnf-automatic.timer`` with ``apply_updates = yes`` in ``/etc/dnf/automatic.conf``.
"""

from __future__ import annotations

import time
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
from aiaudit.linux.packages import aptconf, aptlists
from aiaudit.linux.packages.dpkg import version_key
from aiaudit.linux.packages.installed import (
    DPKG_STATUS,
    dpkg_any_installed,
    dpkg_names,
    dpkg_package,
    dpkg_version,
)

LISTS = "/var/lib/apt/lists"
LIST_CAP = 256 * 1024 * 1024
"""Largest (decompressed) list read; Ubuntu's universe lists are ~60 MiB."""
APT_CONF_D = "/etc/apt/apt.conf.d"
APT_CONF = "/etc/apt/apt.conf"
_IGNORED_SUFFIXES = ("~", ".disabled", ".bak", ".save", ".orig", ".distUpgrade")




def _read_list(host: Host, path: str) -> str:
    """A list file, decompressed with at most :data:`LIST_CAP` bytes of output (a
    decompression bomb is a :class:`ParseError`, not a memory spike)."""
    data = host.read_bytes(path, cap=LIST_CAP)
    data = _decompress(path, data)
    if len(data) > LIST_CAP:
        raise ParseError(f"{path}: larger than {LIST_CAP} bytes decompressed")
    if b"\x00" in data:
        raise ParseError(f"{path}: binary content (NUL byte)")
    # the fields compared are ASCII (deb-control(5)); latin-1 decodes without a check pass
    return data.decode("latin-1")


def _decompress(path: str, data: bytes) -> bytes:
    """At most LIST_CAP + 1 bytes of ``data`` decompressed by the list's suffix (the
    codecs are imported only for lists that use them)."""
    limit = LIST_CAP + 1
    if path.endswith(".gz"):
        import zlib

        try:
            data = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(data, limit)
        except zlib.error as exc:
            raise ParseError(f"{path}: {exc}") from None
    elif path.endswith(".xz"):
        import lzma

        try:
            data = lzma.LZMADecompressor().decompress(data, limit)
        except (lzma.LZMAError, EOFError) as exc:
            raise ParseError(f"{path}: {exc}") from None
    elif path.endswith(".bz2"):
        import bz2

        try:
            data = bz2.BZ2Decompressor().decompress(data, limit)
        except (OSError, EOFError) as exc:
            raise ParseError(f"{path}: {exc}") from None
    elif path.endswith(".lz4"):  # Acquire::GzipIndexes with lz4: Debian/Ubuntu images
        try:
            import lz4.frame
        except ImportError:
            raise ParseError(f"{path}: reading lz4 lists needs the lz4 package") from None
        try:
            data = lz4.frame.LZ4FrameDecompressor().decompress(data, max_length=limit)
        except RuntimeError as exc:
            raise ParseError(f"{path}: {exc}") from None
    elif path.endswith(".zst"):
        raise ParseError(f"{path}: zstd-compressed lists cannot be read here")
    return data


def _security_in_sources(host: Host) -> str | None:
    """The apt sources file (one-line ``.list`` or deb822 ``.sources``, sources.list(5))
    that names a security suite, or ``None``."""
    files = ["/etc/apt/sources.list"] + [f"/etc/apt/sources.list.d/{n}" for n in
                                         host.listdir("/etc/apt/sources.list.d")
                                         if n.endswith((".list", ".sources"))]
    for path in files:
        try:
            text = host.try_read_text(path) or ""
        except HostError:
            continue
        for line in text.splitlines():
            line = line.split("#", 1)[0]
            if "-security" in line or "security.debian.org" in line or \
                    "security.ubuntu.com" in line:
                return path.lstrip("/")
    return None


def run_security(ctx: CheckContext) -> Iterator[Result]:
    """FAIL when an installed package has a newer version in a -security list."""
    host, p = ctx.host, ctx.params
    try:
        any_installed = dpkg_any_installed(host)
    except (HostError, ParseError) as exc:
        yield Result(Status.ERROR, "security updates", f"dpkg database unreadable: {exc}")
        return
    if not any_installed:
        yield Result(Status.SKIP, "security updates", "no dpkg database (not a Debian-based "
                     "system, or a minimal image); RPM update metadata is out of scope here")
        return
    names = host.listdir(LISTS)
    lists = [n for n in names if aptlists.suite_of(n)]
    if not lists:
        yield Result(Status.SKIP, "security updates", "no downloaded package lists in "
                     "var/lib/apt/lists (apt-get update never ran here, or the image removed "
                     "them): pending updates cannot be judged offline")
        return
    sec = [n for n in lists if aptlists.is_security_suite(n)]
    if not sec:
        suites = ", ".join(sorted({aptlists.suite_of(n)[0] for n in lists}))
        configured = _security_in_sources(host)
        why = (f"{configured} names a security suite, but its lists were never downloaded "
               "(apt-get update failed, or the lists were pruned): pending security updates "
               "cannot be known" if configured else
               "this host does not even download security updates")
        yield Result(Status.FAIL, "security updates", "the apt lists hold no -security suite "
                     f"(suites: {suites}): {why}",
                     expected="a -security suite in sources.list", actual="none",
                     evidence=(Evidence.file(f"{LISTS}/{lists[0]}"),), remediation=Remediation(
                         "Add the distribution's security suite to the apt sources (Debian: "
                         "`deb https://security.debian.org/debian-security <codename>-security "
                         "main`), then `apt-get update`."))
        return
    # the names the lists are filtered by may include packages that are not installed:
    # only the packages a security list names are parsed, and those not installed skipped
    want = dpkg_names(host)
    pending: dict[str, tuple[str, str, str]] = {}
    problems: list[str] = []
    newest = 0.0
    for n in sorted(sec):
        path = f"{LISTS}/{n}"
        try:
            text = _read_list(host, path)
            newest = max(newest, host.stat(path).st_mtime)
        except (HostError, ParseError, OSError) as exc:
            problems.append(f"{path}: {exc}")
            continue
        for pkg, ver, arch in aptlists.packages(text, want):
            info = dpkg_package(host, pkg, indexed=True)
            if info is None:
                continue
            have = info.get("Version", "")
            iarch = info.get("Architecture", "")
            if arch not in ("all", iarch) and iarch != "all":
                continue
            if ver == have and pkg not in pending:  # the same version string: not newer
                continue
            try:
                newer = version_key(ver) > version_key(have)
            except ValueError:
                problems.append(f"{path}: bad version {ver!r} of {pkg}")
                continue
            if newer and (pkg not in pending or version_key(ver) > version_key(pending[pkg][1])):
                pending[pkg] = (have, ver, n)
    if problems and not pending:
        yield Result(Status.ERROR, "security updates", "; ".join(problems[:3]))
        return
    age_days = (time.time() - newest) / 86400 if newest else None
    stale = (f"; the newest security list is {age_days:.0f} days old, so later fixes are not "
             "known here" if age_days is not None and age_days > p["max_list_age_days"] else "")
    data = {"pending": {k: {"installed": v[0], "candidate": v[1]} for k, v in
                        sorted(pending.items())}, "lists": sorted(sec)}
    if pending:
        shown = ", ".join(f"{k} {v[0]} -> {v[1]}" for k, v in sorted(pending.items())[:10])
        more = f" and {len(pending) - 10} more" if len(pending) > 10 else ""
        yield Result(Status.FAIL, "security updates", f"{len(pending)} installed package(s) "
                     f"have a newer version in a security suite: {shown}{more}{stale}",
                     expected="0 pending", actual=str(len(pending)), data=data,
                     evidence=(Evidence.file(DPKG_STATUS),
                               *(Evidence.file(f"{LISTS}/{n}") for n in sorted(sec)[:4])),
                     remediation=Remediation("Install the pending security updates (and "
                                             "reboot if the kernel or libc is among them).", (
                                                 Snippet.command("apt-get update && apt-get "
                                                                 "upgrade",
                                                                 "install updates"),)))
        return
    if stale:
        yield Result(Status.FAIL, "security updates", "no pending security update in the "
                     f"downloaded lists{stale}", expected="0 pending, lists fresh",
                     actual="lists stale", data=data,
                     remediation=Remediation("Refresh the lists (`apt-get update`) and "
                                             "enable unattended upgrades."))
        return
    yield Result(Status.PASS, "security updates", f"every installed package is at the newest "
                 f"version of the {len(sec)} security list(s)", expected="0 pending",
                 actual="0", data=data)


# ------------------------------------------------------------------ unattended
def apt_config(host: Host) -> tuple[dict[str, tuple[str, int, str]], list[str]]:
    """Effective apt.conf scalars: ``{key: (value, line, file)}`` and problems."""
    out, problems, _ = _apt_config(host)
    return out, problems


def _apt_config(host: Host) -> tuple[dict[str, tuple[str, int, str]], list[str], list[str]]:
    """:func:`apt_config`, and the files the problems are in."""
    out: dict[str, tuple[str, int, str]] = {}
    problems: list[str] = []
    bad: list[str] = []
    files = [f"{APT_CONF_D}/{n}" for n in host.listdir(APT_CONF_D)
             if not n.endswith(_IGNORED_SUFFIXES) and ("." not in n or n.endswith(".conf"))
             and all(c.isalnum() or c in "_-." for c in n)]
    if host.is_file(APT_CONF):
        files.append(APT_CONF)
    merged: dict[str, tuple[str, int]] = {}
    where: dict[str, str] = {}
    for path in files:
        try:
            ops = aptconf.parse_ops(host.read_text(path), path)
        except (HostError, ParseError) as exc:
            problems.append(str(exc))
            bad.append(path)
            continue
        aptconf.apply(ops, merged)
        for k, v, _ in ops:
            if v is not None:
                where[k] = path
    out = {k: (v, ln, where[k]) for k, (v, ln) in merged.items()}
    return out, problems, bad


def _unit_exists(host: Host, name: str) -> bool:
    from aiaudit.linux.systemd.units import load_unit

    try:
        return load_unit(host, name).exists
    except (HostError, ParseError):
        return False


def _periodic_on(value: str) -> bool:
    v = value.strip().lower()
    return v == "always" or (v.isdigit() and int(v) > 0) or (v.endswith(("d", "h")) and \
        v[:-1].isdigit() and int(v[:-1]) > 0)


def run_unattended(ctx: CheckContext) -> Iterator[Result]:
    """Security updates install without a person."""
    from aiaudit.linux.rootkind import boots
    from aiaudit.linux.systemd.units import is_enabled, unit_evidence

    host = ctx.host
    if not boots(host):
        yield Result(Status.SKIP, "unattended upgrades", "no init (/sbin/init, systemd) in this "
                     "root: a container image is rebuilt, not upgraded in place")
        return
    if host.is_dir("/etc/apt") or host.is_file(DPKG_STATUS):
        if not dpkg_version(host, "unattended-upgrades"):
            # the dpkg database that has no installed unattended-upgrades, or where it was
            pev = (Evidence.file(DPKG_STATUS, None, "unattended-upgrades is not installed")
                   if host.is_file(DPKG_STATUS) else
                   Evidence.default(f"dpkg database: {DPKG_STATUS.lstrip('/')}",
                                    "no such file"))
            yield Result(Status.FAIL, "unattended-upgrades", "the unattended-upgrades package "
                         "is not installed: security updates wait for a person",
                         expected="installed and enabled", actual="not installed",
                         aspect=Aspect.PERSISTED, evidence=(pev,), remediation=Remediation(
                             "Install and enable unattended-upgrades.", (
                                 Snippet.command("apt-get install unattended-upgrades",
                                                 "install it"),
                                 Snippet.file("/etc/apt/apt.conf.d/20auto-upgrades",
                                              'APT::Periodic::Update-Package-Lists "1";\n'
                                              'APT::Periodic::Unattended-Upgrade "1";\n',
                                              "run it daily")),
                             manual="install the unattended-upgrades package (a package "
                                    "cannot be installed into an offline root by a file)"))
            return
        cfg, problems, bad = _apt_config(host)
        if problems:
            yield Result(Status.ERROR, "unattended-upgrades", "; ".join(problems[:3]),
                         evidence=tuple(Evidence.file(b) for b in bad[:3]))
            return
        off, ev = [], []
        for key in ("APT::Periodic::Update-Package-Lists", "APT::Periodic::Unattended-Upgrade"):
            got = cfg.get(key.lower())
            if got:
                ev.append(Evidence.file(got[2], got[1], f'{key} "{got[0]}"'))
            if not got or not _periodic_on(got[0]):
                off.append(f"{key} is {got[0] if got else 'not set'}")
            if not got:
                ev.append(Evidence.default(
                    f"{key} in {APT_CONF_D.lstrip('/')}/*, {APT_CONF.lstrip('/')}",
                    "not set: apt's default is 0 (off)"))
        timer = is_enabled(host, "apt-daily-upgrade.timer")
        if not timer.enabled:
            off.append(f"apt-daily-upgrade.timer: {timer.reason}")
            ev.append(unit_evidence(host, "apt-daily-upgrade.timer", timer))
        snippets = [Snippet.file("/etc/apt/apt.conf.d/20auto-upgrades",
                                 'APT::Periodic::Update-Package-Lists "1";\n'
                                 'APT::Periodic::Unattended-Upgrade "1";\n', "run it daily")]
        if not timer.enabled and _unit_exists(host, "apt-daily-upgrade.timer"):
            snippets.append(Snippet.enable("apt-daily-upgrade.timer", "the timer that runs it"))
        elif not timer.enabled:
            snippets.append(Snippet.command("systemctl enable --now apt-daily-upgrade.timer",
                                            "the timer that runs it (shipped by apt)"))
        fix = Remediation("Turn the periodic runs on.", tuple(snippets),
                          manual="" if timer.enabled or _unit_exists(
                              host, "apt-daily-upgrade.timer") else
                          "enable apt-daily-upgrade.timer once apt's units are installed")
        if off:
            yield Result(Status.FAIL, "unattended-upgrades", "; ".join(off),
                         expected="daily", actual="off", aspect=Aspect.PERSISTED,
                         evidence=tuple(ev), remediation=fix)
        else:
            yield Result(Status.PASS, "unattended-upgrades", "unattended-upgrades runs daily "
                         "(lists and upgrades enabled, apt-daily-upgrade.timer enabled)",
                         expected="daily", actual="daily", aspect=Aspect.PERSISTED,
                         evidence=tuple(ev))
        return
    if host.is_dir("/etc/dnf") or host.is_dir("/etc/yum.repos.d"):
        inst = is_enabled(host, "dnf-automatic-install.timer")
        auto = is_enabled(host, "dnf-automatic.timer")
        apply = False
        conf = "/etc/dnf/automatic.conf"
        raw = host.try_read_text(conf)
        text = raw or ""
        aev = (Evidence.file(conf, None, "apply_updates not set (default: no)") if raw is not None
               else Evidence.default(conf.lstrip("/"), "no such file: apply_updates is no"))
        for n, line in enumerate(text.splitlines(), 1):
            k, _, v = line.partition("=")
            if k.strip() == "apply_updates":
                apply = v.strip().lower() in ("yes", "true", "1", "on")
                aev = Evidence.file(conf, n, line.strip())
        if inst.enabled or (auto.enabled and apply):
            yield Result(Status.PASS, "dnf-automatic", "dnf-automatic installs updates "
                         f"({inst.reason if inst.enabled else auto.reason})",
                         expected="enabled", actual="enabled", aspect=Aspect.PERSISTED,
                         evidence=(unit_evidence(host, "dnf-automatic-install.timer", inst),)
                         if inst.enabled else
                         (unit_evidence(host, "dnf-automatic.timer", auto), aev))
        else:
            yield Result(Status.FAIL, "dnf-automatic", "no dnf-automatic timer installs updates "
                         f"({inst.reason}; {auto.reason}; "
                         f"apply_updates={'yes' if apply else 'no'})",
                         expected="enabled", actual="disabled", aspect=Aspect.PERSISTED,
                         evidence=(unit_evidence(host, "dnf-automatic-install.timer", inst),
                                   unit_evidence(host, "dnf-automatic.timer", auto), aev),
                         remediation=Remediation("Install dnf-automatic and enable its "
                                                 "install timer.", (
                                                     Snippet.command("dnf install -y "
                                                                     "dnf-automatic",
                                                                     "install it"),
                                                     Snippet.command(
                                                         "systemctl enable --now "
                                                         "dnf-automatic-install.timer",
                                                         "install updates daily"))))
        return
    yield Result(Status.SKIP, "unattended upgrades", "neither apt nor dnf in this root")


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register the update checks."""
    return [
        CheckSpec(id="updates.security_pending", title="No security update is pending",
                  run=run_security,
                  params_schema={"type": "object", "additionalProperties": False,
                                 "properties": {"max_list_age_days": {
                                     "type": "number", "minimum": 0, "default": 14}}},
                  description="dpkg status against the -security suites' Packages lists in "
                              "/var/lib/apt/lists (plain, .gz, .xz), Debian version order "
                              "(python-debian)."),
        CheckSpec(id="updates.unattended", title="Security updates install unattended",
                  run=run_unattended,
                  params_schema={"type": "object", "additionalProperties": False},
                  description="unattended-upgrades installed, APT::Periodic settings on, "
                              "apt-daily-upgrade.timer enabled; or dnf-automatic's timer."),
    ]
