"""The training user and the scanned root's accounts: passwd, group and whether NSS adds
sources beyond the files (the users pam_limits and sshd would resolve).

Live (the real ``/``), users and groups are looked up as pam_limits, sshd and sudo look them
up: through NSS (:mod:`aiaudit.linux.accounts.nss`), so a directory user (sssd, LDAP,
winbind, extrausers) is judged as its login is.  Offline, only the root's files can be read:
a user that is not in them while ``nsswitch.conf`` names other sources is an error ("could
not look", with the nsswitch line), never a silent skip."""

from __future__ import annotations

from dataclasses import replace

from aiaudit.api import (
    CheckContext,
    Evidence,
    Result,
    Status,
)
from aiaudit.core.errors import HostError, NotFound, ParseError, UsageError
from aiaudit.core.host import Host
from aiaudit.core.startup.records import record
from aiaudit.linux.accounts import nss
from aiaudit.linux.accounts import passwd as pw

NO_USER = ("no training user given: pass --user NAME, run under Slurm (SLURM_JOB_USER) or "
           "sudo (SUDO_USER), or set settings.user in the ruleset")
"""The skip message scanning this machine's ``/``: every source the CLI takes a user from."""
NO_USER_OTHER_ROOT = (
    "no training user given: pass --user NAME (the account the scanned root trains as) or "
    "set settings.user in the ruleset; SUDO_USER is not used for another root (it names a "
    "user of this machine, not of the root)")
"""The skip message scanning another root (an image): the CLI ignores ``$SUDO_USER``."""
NSSWITCH = "/etc/nsswitch.conf"


def no_user_message(host: Host) -> str:
    """Why the training-user rules skip, with the ways to name one that the CLI takes for
    this scan (``$SUDO_USER`` only for the real ``/``: ``cli.scan.resolve_user``)."""
    return NO_USER if host.is_real_root else NO_USER_OTHER_ROOT


# ------------------------------------------------------------------ users and groups
@record
class Accounts:
    """The scanned root's users and groups (files) and whether NSS adds more."""

    db: pw.Database
    remote_passwd: tuple[str, ...]
    remote_group: tuple[str, ...]


def accounts(host: Host) -> Accounts:
    """/etc/passwd, /etc/group and nsswitch.conf of the scanned root (parsed once)."""

    def load() -> Accounts:
        users, c1 = pw.parse_passwd(host.read_text("/etc/passwd"))
        try:
            groups, c2 = pw.parse_group(host.read_text("/etc/group"))
        except NotFound:
            groups, c2 = [], False
        ns = pw.parse_nsswitch(host.try_read_text("/etc/nsswitch.conf") or "")
        rp = pw.remote_sources(ns, "passwd") + (["nis (compat)"] if c1 else [])
        rg = pw.remote_sources(ns, "group") + (["nis (compat)"] if c2 else [])
        return Accounts(pw.Database(tuple(users), tuple(groups), c1 or c2), tuple(rp),
                        tuple(rg))

    return host.memo(("limits-accounts",), load)


PASSWD_MISSING = Evidence.default("accounts: etc/passwd", "no such file")
"""Why users cannot be resolved in a root without /etc/passwd."""


def accounts_error_evidence(exc: HostError | ParseError) -> Evidence:
    """Evidence for :func:`accounts` failing with ``exc`` (a ``default``: the error does
    not always say which of the account files it is about)."""
    return Evidence.default("accounts: etc/passwd, etc/group", f"cannot be read: {exc}")


def lookup_accounts(host: Host) -> Accounts:
    """The accounts as the scanned system's programs resolve them: on the real ``/``
    scanned live, lookups go through this machine's NSS (:mod:`aiaudit.linux.accounts.nss`:
    ``getpwnam``, ``getgrnam``, ``getgrouplist``, as pam_limits, sshd and sudo do), and
    nothing is left unknown; otherwise :func:`accounts` (the files, with the NSS sources
    they cannot show).  Raises what :func:`accounts` raises only offline: live, NSS answers
    even where ``/etc/passwd`` cannot be read."""
    if not nss.live(host):
        return accounts(host)

    def load() -> Accounts:
        try:
            files = accounts(host).db
        except (HostError, ParseError):
            files = pw.Database((), ())
        return Accounts(replace(files, nss=nss.resolver(host)), (), ())

    return host.memo(("accounts-nss",), load)


def nsswitch_evidence(host: Host, database: str) -> Evidence:
    """The nsswitch.conf line that names ``database``'s sources (glibc's default when
    none does)."""
    try:
        got = pw.nsswitch_line(host.try_read_text(NSSWITCH) or "", database)
    except (HostError, ParseError) as exc:
        return Evidence.default(f"nsswitch.conf {database} sources", f"unreadable: {exc}")
    if got is None:
        return Evidence.default(f"nsswitch.conf {database} sources",
                                "no line: glibc's default (files)")
    return Evidence.file(NSSWITCH, got[0], got[1])


def _sources(ev: Evidence) -> str:
    """``passwd: files sss`` (the line, its spacing collapsed) or what stands for it."""
    return " ".join((ev.value or ev.source).split())


def user_evidence(host: Host, acc: Accounts, user: pw.Account) -> Evidence:
    """Where ``user`` comes from: its /etc/passwd line, or the NSS lookup that found it
    (a directory user)."""
    if user.line:
        return Evidence.file("/etc/passwd", user.line, f"{user.name}:x:{user.uid}:{user.gid}")
    entry = next((a for a in acc.db.accounts if a.name == user.name and a.uid == user.uid
                  and a.gid == user.gid), None)
    if entry is not None:  # the files source answered: show its line
        return Evidence.file("/etc/passwd", entry.line, f"{user.name}:x:{user.uid}:{user.gid}")
    return Evidence.command(f"getpwnam({user.name}) through NSS "
                            f"({_sources(nsswitch_evidence(host, 'passwd'))})",
                            f"{user.name}:x:{user.uid}:{user.gid}:{user.home}:{user.shell}")


def group_evidence(host: Host, acc: Accounts, group: pw.Group) -> Evidence:
    """Where ``group`` comes from: its /etc/group line, or the NSS lookup that found it."""
    text = f"{group.name}:x:{group.gid}:{','.join(group.members)}"
    if group.line:
        return Evidence.file("/etc/group", group.line, text)
    entry = next((g for g in acc.db.groups if g.name == group.name and g.gid == group.gid
                  and g.members == group.members), None)
    if entry is not None:
        return Evidence.file("/etc/group", entry.line, text)
    return Evidence.command(f"getgrnam({group.name}) through NSS "
                            f"({_sources(nsswitch_evidence(host, 'group'))})", text)


def training_user(ctx: CheckContext) -> tuple[pw.Account | None, Accounts | None, Result | None]:
    """Resolve ``ctx.user`` as the scanned system would (NSS live, the files offline); a
    result says why not: no user given (skip), no such user or one the scan could not look
    up (error, never a silent skip)."""
    if not ctx.user:
        return None, None, Result(Status.SKIP, "training user", no_user_message(ctx.host))
    try:
        acc = lookup_accounts(ctx.host)
    except NotFound:
        return None, None, Result(Status.ERROR, ctx.user, "etc/passwd is missing: users "
                                  "cannot be resolved", evidence=(PASSWD_MISSING,))
    except (HostError, ParseError) as exc:
        return None, None, Result(Status.ERROR, ctx.user, f"cannot read users: {exc}",
                                  evidence=(accounts_error_evidence(exc),))
    src = f" (from {ctx.user_source})" if ctx.user_source else ""
    try:
        user = acc.db.user(ctx.user)
    except HostError as exc:  # NSS did not answer
        return None, acc, Result(Status.ERROR, ctx.user, f"could not look up training user "
                                 f"{ctx.user}{src}: {exc}",
                                 evidence=(nsswitch_evidence(ctx.host, "passwd"),))
    if user is None:
        return None, acc, unknown_user(ctx.host, acc, ctx.user, src)
    return user, acc, None


def unknown_user(host: Host, acc: Accounts, name: str, src: str = "") -> Result:
    """The error result for a training user the scanned system does not know, or that an
    offline scan cannot look up (NSS sources beyond the image's files would decide)."""
    ns = nsswitch_evidence(host, "passwd")
    if nss.live(host):
        return Result(Status.ERROR, name, (
            f"training user {name}{src} does not exist on this host: NSS "
            f"({_sources(ns)}) knows no such user, so pam_limits refuses its sessions "
            "(PAM_USER_UNKNOWN); check --user / SLURM_JOB_USER / settings.user"),
            evidence=(ns,))
    if acc.remote_passwd:
        ev = [ns] if ns.kind == "file" else []
        if acc.db.compat:
            ev.append(Evidence.file("/etc/passwd", None, "NIS compat (+/-) entries"))
        return Result(Status.ERROR, name, (
            f"could not look: training user {name}{src} is not in the scanned root's "
            f"etc/passwd, and NSS sources beyond the files ({', '.join(acc.remote_passwd)}) "
            "would decide whether it exists and which groups it has; an offline scan cannot "
            "ask them. Scan the running host, or name a user of the root's files"),
            evidence=tuple(ev) or (ns,))
    return Result(Status.ERROR, name, (
        f"training user {name}{src} does not exist in etc/passwd: pam_limits "
        "refuses its sessions (PAM_USER_UNKNOWN); check --user / SLURM_JOB_USER / "
        "settings.user"), evidence=(Evidence.file("/etc/passwd"),))


def require_user(host: Host, name: str | None, source: str | None) -> None:
    """For the CLI, before scanning: on the real ``/`` scanned live, a training user that
    NSS does not know is a usage error (exit 2, one message) instead of an error result in
    every training-user rule.  Offline (the root's programs would ask their own NSS
    sources), with no user, or when NSS does not answer in time (the rules then say so),
    nothing is raised.  The lookup is the one the rules reuse (one per run)."""
    if not name or not nss.live(host):
        return
    try:
        found = nss.resolver(host).passwd(name)
    except HostError:
        return
    if found is None:
        raise UsageError(
            f"training user {name!r}" + (f" (from {source})" if source else "") +
            f" does not exist on this host: getpwnam finds no such user through NSS "
            f"({_sources(nsswitch_evidence(host, 'passwd'))}); name an existing account "
            "with --user NAME")
